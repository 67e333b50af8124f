//! Helpers: temporary directories, a `tern serve` child process with its
//! log, signals, and a minimal DNS client over UDP.

use std::ffi::OsStr;
use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start (zones load, sockets bind) on a
/// loaded two-core machine: a bound on the wait for its "serving" line,
/// which costs nothing when it comes sooner. The test build loads the
/// 200,000 records of `stop::sigterm_does_not_wait_for_a_reload` in a few
/// seconds alone, and took over 20 s once with every core kept busy
/// (`make test-repeat`, run 6 of 10), and over 90 s twice with the
/// machine's load average at 20 besides (six builds beside the repeat).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a test waits for a condition after a signal.
pub(crate) const SIGNAL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the client waits for one answer on loopback.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// A small zone: www.example.com. A 192.0.2.2.
pub(crate) const GOOD: &str =
    "$TTL 300\n@ SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\n";

/// The A record type.
pub(crate) const A: u16 = 1;

pub(crate) fn tern() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tern"))
}

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a command to completion: success and stdout + stderr.
pub(crate) fn run(command: &mut Command) -> (bool, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().unwrap();
    let text = String::from_utf8_lossy(&stdout).into_owned() + &String::from_utf8_lossy(&stderr);
    (status.success(), text)
}

/// A fresh temporary directory for one test.
pub(crate) fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("tern-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A test's directory: removed when the test passes, kept (with the
/// server's log) when it fails.
pub(crate) struct TempDir(PathBuf);

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A loopback address whose UDP and TCP ports were free a moment ago.
pub(crate) fn free_address() -> SocketAddr {
    for _ in 0..100 {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = udp.local_addr().unwrap();
        if std::net::TcpListener::bind(addr).is_ok() {
            return addr;
        }
    }
    panic!("no free loopback port");
}

/// Writes a file atomically (write, then rename), as an operator's editor
/// or deployment tool would, so that a reload never reads half a file.
pub(crate) fn write_atomically(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).unwrap();
    std::fs::rename(&temporary, path).unwrap();
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
pub(crate) fn wait_for(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

//----------- Served ---------------------------------------------------------

/// A `tern serve` child whose stderr goes to a log file; killed on drop.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) log: PathBuf,
}

impl Served {
    /// Starts `tern serve` with `args` and waits until it logs that it
    /// serves (its sockets are bound then).
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Served {
        Served::start_under(dir, &[], args)
    }

    /// [`Served::start`] with `tern` run by `wrapper` (a command and its
    /// arguments, such as `taskset -c 1`) that execs it.
    pub(crate) fn start_under(dir: &Path, wrapper: &[&str], args: &[&str]) -> Served {
        let log = dir.join("tern.log");
        let mut command = match wrapper.split_first() {
            Some((program, wrapper_args)) => {
                let mut command = Command::new(program);
                command.args(wrapper_args).arg(tern().get_program());
                command
            }
            None => tern(),
        };
        // The working directory is the test's, so that a dhat-heap build
        // writes its profile there.
        let child = command
            .current_dir(dir)
            .arg("serve")
            .args(args)
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let served = Served { child, log };
        let started = wait_for(START_TIMEOUT, || {
            served.log_text().contains(" info: serving ")
        });
        assert!(started, "tern serve did not start:\n{}", served.log_text());
        served
    }

    /// What the server logged so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a signal (`HUP`, `TERM`, ...) with kill(1).
    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for `text` to appear in the log `count` times in all.
    pub(crate) fn wait_for_log(&self, text: &str, count: usize) -> bool {
        wait_for(SIGNAL_TIMEOUT, || {
            self.log_text().matches(text).count() >= count
        })
    }

    /// Waits up to `timeout` for the process to exit.
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//----------- DNS client -----------------------------------------------------

/// A query without RD or EDNS for `name` (dotted, no final dot), class IN.
pub(crate) fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut message = Vec::new();
    message.extend_from_slice(&id.to_be_bytes());
    message.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        message.push(label.len() as u8);
        message.extend_from_slice(label.as_bytes());
    }
    message.push(0);
    message.extend_from_slice(&qtype.to_be_bytes());
    message.extend_from_slice(&1u16.to_be_bytes());
    message
}

/// A UDP client socket with the answer timeout set.
pub(crate) fn client() -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    socket
}

/// Asks `server` once; the answer, or None after [`ANSWER_TIMEOUT`].
pub(crate) fn ask(socket: &UdpSocket, server: SocketAddr, id: u16, name: &str) -> Option<Vec<u8>> {
    socket.send_to(&query(id, name, A), server).unwrap();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    while Instant::now() < deadline {
        match socket.recv_from(&mut buf) {
            Ok((len, _)) if len >= 2 && buf[..2] == id.to_be_bytes() => {
                return Some(buf[..len].to_vec())
            }
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
    None
}

/// The address of the first A record in an answer's answer section.
pub(crate) fn first_a(answer: &[u8]) -> Option<[u8; 4]> {
    let count = |at: usize| Some(u16::from_be_bytes([*answer.get(at)?, *answer.get(at + 1)?]));
    if count(6)? == 0 {
        return None;
    }
    let mut at = skip_name(answer, 12)? + 4; // question: name, type, class
    for _ in 0..count(6)? {
        at = skip_name(answer, at)?;
        let rtype = count(at)?;
        let rdlength = usize::from(count(at + 8)?);
        let rdata = answer.get(at + 10..at + 10 + rdlength)?;
        if rtype == A && rdlength == 4 {
            return Some([rdata[0], rdata[1], rdata[2], rdata[3]]);
        }
        at += 10 + rdlength;
    }
    None
}

/// The offset after a (possibly compressed) name.
fn skip_name(message: &[u8], mut at: usize) -> Option<usize> {
    // A name has at most 127 labels.
    for _ in 0..128 {
        let len = *message.get(at)?;
        if len == 0 {
            return Some(at + 1);
        }
        if len & 0xc0 == 0xc0 {
            return Some(at + 2);
        }
        at += 1 + usize::from(len);
    }
    None
}

/// The answer's rcode (header bits only).
pub(crate) fn rcode(answer: &[u8]) -> u8 {
    answer[3] & 0x0f
}
