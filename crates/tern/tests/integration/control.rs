//! The control socket as an operator meets it: `tern reload [ZONE]`
//! rebuilds only what changed (or only the named zone), `tern status`
//! describes the server, and a control-socket path that is not tern's own
//! keeps the server from starting.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::util::{
    ask, client, first_a, free_address, temp_dir, tern, wait_for, write_atomically, Served, GOOD,
    SIGNAL_TIMEOUT,
};

/// A server over `dir/zones` with its control socket at `dir/tern.sock`.
fn serve(dir: &Path, address: SocketAddr) -> Served {
    Served::start(
        dir,
        &[
            "--zones",
            dir.join("zones").to_str().unwrap(),
            "--listen",
            &address.to_string(),
            "--socket",
            dir.join("tern.sock").to_str().unwrap(),
        ],
    )
}

/// Runs `tern ARGS --socket dir/tern.sock`; its standard output, or its
/// standard error if it failed.
fn control(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = tern()
        .args(args)
        .arg("--socket")
        .arg(dir.join("tern.sock"))
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn resolve(address: SocketAddr, name: &str) -> Option<[u8; 4]> {
    ask(&client(), address, 7, name).and_then(|answer| first_a(&answer))
}

/// Whether `name` comes to resolve to `expected`: the reply to `reload`
/// comes when the new catalog is posted to the cores, which switch within
/// about a millisecond.
fn eventually(address: SocketAddr, name: &str, expected: [u8; 4]) -> bool {
    wait_for(SIGNAL_TIMEOUT, || resolve(address, name) == Some(expected))
}

/// Three zones; one changes, one is touched (same bytes, new mtime), one is
/// left alone.
fn three_zones(dir: &Path) {
    let zones = dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    for origin in ["example.com", "example.net", "example.org"] {
        std::fs::write(zones.join(format!("{origin}.zone")), GOOD).unwrap();
    }
}

#[test]
fn reload_rebuilds_only_the_zones_whose_files_changed() {
    let dir = temp_dir("control-reload");
    three_zones(&dir);
    let address = free_address();
    let server = serve(&dir, address);
    let zones = dir.join("zones");

    // Nothing changed: nothing is rebuilt.
    let reply = control(&dir, &["reload"]).unwrap();
    assert!(
        reply.contains("3 zone(s) serving, 0 rebuilt, 3 unchanged"),
        "{reply}"
    );

    // example.com changes, example.net is rewritten with the same text (a
    // new modification time), example.org is left alone.
    write_atomically(
        &zones.join("example.com.zone"),
        &GOOD.replace("192.0.2.2", "192.0.2.99"),
    );
    write_atomically(&zones.join("example.net.zone"), GOOD);
    let reply = control(&dir, &["reload"]).unwrap();
    assert!(
        reply.contains("3 zone(s) serving, 2 rebuilt, 1 unchanged"),
        "{reply}\n{}",
        server.log_text()
    );
    assert!(eventually(address, "www.example.com", [192, 0, 2, 99]));
    assert_eq!(resolve(address, "www.example.org"), Some([192, 0, 2, 2]));

    // A zone that fails its checks keeps serving its previous version.
    write_atomically(
        &zones.join("example.org.zone"),
        &format!(
            "{}mail AAA 192.0.2.3\n",
            GOOD.replace("192.0.2.2", "192.0.2.7")
        ),
    );
    let reply = control(&dir, &["reload"]).unwrap();
    assert!(
        reply.contains("1 failed to load, 1 of them kept their previous version"),
        "{reply}"
    );
    assert_eq!(resolve(address, "www.example.org"), Some([192, 0, 2, 2]));
    // SIGHUP does the same as `tern reload`: the broken zone is tried
    // again (its file is still newer than what serves), the rest are not.
    server.signal("HUP");
    assert!(
        server.wait_for_log("3 zone(s) serving, 0 rebuilt, 2 unchanged; 1 failed", 1),
        "{}",
        server.log_text()
    );
}

#[test]
fn reload_of_one_zone_leaves_the_others_as_they_are() {
    let dir = temp_dir("control-reload-one");
    three_zones(&dir);
    let address = free_address();
    let _server = serve(&dir, address);
    let zones = dir.join("zones");
    for origin in ["example.com", "example.net"] {
        write_atomically(
            &zones.join(format!("{origin}.zone")),
            &GOOD.replace("192.0.2.2", "192.0.2.50"),
        );
    }
    let reply = control(&dir, &["reload", "example.net"]).unwrap();
    assert!(
        reply.contains("3 zone(s) serving, 1 rebuilt, 2 unchanged"),
        "{reply}"
    );
    assert!(eventually(address, "www.example.net", [192, 0, 2, 50]));
    assert_eq!(resolve(address, "www.example.com"), Some([192, 0, 2, 2]));
    // The named zone is rebuilt even when its files did not change.
    let reply = control(&dir, &["reload", "example.org."]).unwrap();
    assert!(reply.contains("1 rebuilt, 2 unchanged"), "{reply}");
    // The zone left out is rebuilt by the next full reload, alone.
    let reply = control(&dir, &["reload"]).unwrap();
    assert!(reply.contains("1 rebuilt, 2 unchanged"), "{reply}");
    assert!(eventually(address, "www.example.com", [192, 0, 2, 50]));
    // A zone the configuration does not load is an error, and no reload.
    let err = control(&dir, &["reload", "example.edu"]).unwrap_err();
    assert!(
        err.contains("example.edu. is not a zone loaded from a file"),
        "{err}"
    );
}

#[test]
fn status_names_the_version_the_cores_and_the_zones() {
    let dir = temp_dir("control-status");
    three_zones(&dir);
    let _server = serve(&dir, free_address());
    let reply = control(&dir, &["status"]).unwrap();
    let version = format!("version {}\n", env!("CARGO_PKG_VERSION"));
    assert!(reply.starts_with(&version), "{reply}");
    assert!(reply.contains("\nuptime "), "{reply}");
    assert!(reply.contains("\ncores 1\n"), "{reply}");
    assert!(
        reply.contains("\nzones 3 (3 primary, 0 secondary)\n"),
        "{reply}"
    );
}

/// `tern serve` with its control socket at `socket`: fails to start, and
/// what it printed.
fn refused_start(dir: &Path, socket: &Path) -> String {
    let out = tern()
        .current_dir(dir)
        .args(["serve", "--zones", "zones", "--listen"])
        .arg(free_address().to_string())
        .arg("--socket")
        .arg(socket)
        .output()
        .unwrap();
    assert!(!out.status.success(), "it started: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_control_socket_path_that_is_not_a_socket_stops_the_start() {
    let dir = temp_dir("control-not-socket");
    three_zones(&dir);
    let path = dir.join("tern.sock");
    std::fs::write(&path, "not a socket").unwrap();
    let err = refused_start(&dir, &path);
    assert!(err.contains("exists and is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
}

#[test]
fn a_control_socket_of_another_user_stops_the_start() {
    let dir = temp_dir("control-other-user");
    three_zones(&dir);
    let path = dir.join("tern.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Another user's socket: only root can make one here, as CI runs.
    let status = std::process::Command::new("chown")
        .arg("65534")
        .arg(&path)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "chown to another user failed: run as root (CI does)"
    );
    let err = refused_start(&dir, &path);
    assert!(err.contains("belongs to user 65534"), "{err}");
    assert!(path.exists(), "the other user's socket was removed");
    drop(listener);
}

#[test]
fn the_control_socket_is_for_its_owner_only() {
    let dir = temp_dir("control-mode");
    three_zones(&dir);
    // The socket's directory does not exist yet: tern makes it, 0700.
    let socket = dir.join("run").join("tern.sock");
    let _server = Served::start(
        &dir,
        &[
            "--zones",
            "zones",
            "--listen",
            &free_address().to_string(),
            "--socket",
            socket.to_str().unwrap(),
        ],
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&dir.join("run")), 0o700);
}
