//! Compiles tern's XDP program (`xdp/tern_xdp.c`) with clang's BPF target
//! into `OUT_DIR/tern_xdp.o`, which `src/xdp/program.rs` embeds.
//!
//! Without clang the rest of tern builds as before and `tern serve --xdp`
//! refuses to start, saying so: `make run` needs nothing but Rust, and
//! `make test` installs clang (scripts/install-test-deps.sh) before it
//! builds. With clang, a program that fails to compile fails the build.
//! `TERN_CLANG` names another clang.
//!
//! Cargo runs this again only when something it was told to watch changed,
//! and for a path it compares modification times with the last run's: a
//! missing path always counts as changed (every build would compile this
//! crate and the binary again), and a file a package manager installs keeps
//! the package's time (Debian's `/usr/bin/clang` is dated 2023), older than
//! any build, so it never does (issue 22: `make run` without clang, then
//! `make test`, kept the binary without its program). What does change when
//! clang is installed is the directory it goes into: adding an entry gives
//! the directory the current time. So without clang this watches every
//! directory of `PATH` (cargo also looks at their entries, by their own and
//! their targets' times) and `PATH` itself; with clang, clang itself (an
//! upgrade, a removal).

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
        // Where clang would be found once installed (see the crate docs).
        println!("cargo::rerun-if-env-changed=PATH");
        for directory in path_directories() {
            println!("cargo::rerun-if-changed={}", directory.display());
        }
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

/// The directories of `PATH` to watch: absolute ones that exist (a
/// missing one would count as changed at every build; a relative one
/// would be read against this crate's directory), each once.
fn path_directories() -> Vec<PathBuf> {
    let Some(path) = env::var_os("PATH") else {
        return Vec::new();
    };
    let mut directories: Vec<PathBuf> = Vec::new();
    for directory in env::split_paths(&path) {
        if directory.is_absolute() && directory.is_dir() && !directories.contains(&directory) {
            directories.push(directory);
        }
    }
    directories
}

/// `name` in one of the directories of `PATH`.
fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| Path::new(candidate).is_file())
}
