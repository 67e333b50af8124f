//! Compiles tern's XDP program (`xdp/tern_xdp.c`) with clang's BPF target
//! into `OUT_DIR/tern_xdp.o`, which `src/xdp/program.rs` embeds.
//!
//! Without clang the rest of tern builds as before and `tern serve --xdp`
//! refuses to start, saying so: `make run` needs nothing but Rust, and
//! `make test` installs clang (scripts/install-test-deps.sh) before it
//! builds. With clang, a program that fails to compile fails the build.
//! `TERN_CLANG` names another clang.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = "xdp/tern_xdp.c";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tern_xdp_program)");
    println!("cargo::rerun-if-changed={SOURCE}");
    println!("cargo::rerun-if-env-changed=TERN_CLANG");
    let clang = env::var_os("TERN_CLANG")
        .map(PathBuf::from)
        .or_else(|| find_in_path("clang"));
    let Some(clang) = clang else {
        // Watching the usual place makes cargo build again once clang is
        // installed there (a missing file is always out of date).
        println!("cargo::rerun-if-changed=/usr/bin/clang");
        println!(
            "cargo::warning=clang not found: tern is built without its XDP program \
             (`tern serve --xdp` will refuse to start); install clang to build it"
        );
        return;
    };
    println!("cargo::rerun-if-changed={}", clang.display());
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("tern_xdp.o");
    let status = Command::new(&clang)
        .args([
            "-O2", "-g", "-target", "bpf", "-Wall", "-Werror", "-c", SOURCE, "-o",
        ])
        .arg(&out)
        .status();
    match status {
        Ok(status) if status.success() => println!("cargo::rustc-cfg=tern_xdp_program"),
        Ok(status) => panic!("{} failed to compile {SOURCE}: {status}", clang.display()),
        Err(err) => panic!("cannot run {}: {err}", clang.display()),
    }
}

/// `name` in one of the directories of `PATH`.
fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| Path::new(candidate).is_file())
}
