//! Where the writer writes: a file, or a Unix socket with a Frame Streams
//! reader (the bidirectional handshake, reconnected with backoff), every
//! read and write on it bounded in time.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::frames::{
    control_frame, read_control, Control, CONTROL_ACCEPT, CONTROL_FINISH, CONTROL_READY,
    CONTROL_START, CONTROL_STOP,
};
use crate::DnstapOutput;

/// The first wait before reconnecting to the socket; it doubles up to
/// [`RECONNECT_MAX`] while attempts fail, and starts again after a
/// success.
const RECONNECT_MIN: Duration = Duration::from_millis(250);

/// See [`RECONNECT_MIN`] (fstrm's own reopen interval is 5 s).
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// How long the handshake may take, and one read or write on the socket
/// may block, before the connection is given up (then reopened): a reader
/// that stops reading costs records, never the writer's progress or the
/// shutdown.
const SOCKET_TIMEOUT: Duration = Duration::from_millis(500);

/// How long writing STOP and waiting for FINISH may take at the end.
const FINISH_TIMEOUT: Duration = Duration::from_millis(200);

/// Once the cores have stopped, how long all further socket writes (the
/// records they left) may take together; a reader too slow for that loses
/// them. With [`FINISH_TIMEOUT`], the most the writer adds to a stop: the
/// cores take at most 0.8 s, so everything ends within the binary's 1.5 s
/// shutdown deadline.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Where the writer writes (unbuffered: the writer collects frames in its
/// own buffer, to count each one written only when it is).
pub(crate) enum Output {
    /// An open file.
    File(File),
    Socket(SocketOutput),
    /// A file whose write failed, or closed: every record is dropped.
    Failed,
}

/// A Unix socket with a Frame Streams reader, connected when there is
/// one.
pub(crate) struct SocketOutput {
    path: PathBuf,
    /// Set when the server stops (see [`Bounded`]).
    stop: Arc<AtomicBool>,
    stream: Option<Bounded>,
    next_attempt: Instant,
    backoff: Duration,
    /// Whether the current run of failures was logged (once per run).
    logged_failure: bool,
}

impl Output {
    /// The output `output` names. A file is created (or truncated) here,
    /// not through a symbolic link, and starts with START; a socket is
    /// connected later, by [`Output::reconnect_if_due`]. `stop`: set when
    /// the server stops (see [`Bounded`]).
    pub(crate) fn open(output: &DnstapOutput, stop: &Arc<AtomicBool>) -> io::Result<Output> {
        Ok(match output {
            DnstapOutput::File(path) => {
                // Not through a symbolic link: the file may be in a
                // directory the configured `user` can write, and this runs
                // before tern drops root.
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(path)
                    .map_err(|err| {
                        io::Error::new(err.kind(), format!("dnstap.file {}: {err}", path.display()))
                    })?;
                let mut out = file;
                out.write_all(&control_frame(CONTROL_START, true))?;
                Output::File(out)
            }
            DnstapOutput::Socket(path) => Output::Socket(SocketOutput {
                path: path.clone(),
                stop: Arc::clone(stop),
                stream: None,
                next_attempt: Instant::now(),
                backoff: RECONNECT_MIN,
                logged_failure: false,
            }),
        })
    }

    /// Whether a frame written now can reach a reader.
    pub(crate) fn connected(&self) -> bool {
        match self {
            Output::File(_) => true,
            Output::Socket(socket) => socket.stream.is_some(),
            Output::Failed => false,
        }
    }

    /// Connects to the socket when disconnected and the backoff has run
    /// out.
    pub(crate) fn reconnect_if_due(&mut self) {
        let Output::Socket(socket) = self else {
            return;
        };
        // Once the server stops, no new connection: what is left is
        // dropped rather than the stop delayed by a handshake.
        if socket.stream.is_some()
            || Instant::now() < socket.next_attempt
            || socket.stop.load(Ordering::Relaxed)
        {
            return;
        }
        match connect(&socket.path, &socket.stop) {
            Ok(stream) => {
                log::info!("dnstap: connected to {}", socket.path.display());
                socket.stream = Some(stream);
                socket.backoff = RECONNECT_MIN;
                socket.logged_failure = false;
            }
            Err(err) => {
                if !socket.logged_failure {
                    log::warn!(
                        "dnstap: cannot connect to {} ({err}); retrying, messages are dropped until then",
                        socket.path.display()
                    );
                    socket.logged_failure = true;
                }
                socket.next_attempt = Instant::now() + socket.backoff;
                socket.backoff = (socket.backoff * 2).min(RECONNECT_MAX);
            }
        }
    }

    /// Writes `octets` (whole frames) and returns how many were written:
    /// all of them, or those before a failure (a file then fails for good;
    /// a socket is closed and reopened later, since a frame cut short
    /// leaves the stream unreadable past it).
    pub(crate) fn write(&mut self, octets: &[u8]) -> usize {
        let (done, failure) = match self {
            Output::File(out) => write_counted(out, octets),
            Output::Socket(socket) => match socket.stream.as_mut() {
                Some(stream) => write_counted(stream, octets),
                None => return 0,
            },
            Output::Failed => return 0,
        };
        if let Some(err) = failure {
            match self {
                Output::File(_) => {
                    log::error!("dnstap: writing the file failed ({err}); messages are dropped");
                    *self = Output::Failed;
                }
                Output::Socket(socket) => socket.disconnect(&err),
                Output::Failed => {}
            }
        }
        done
    }

    /// Writes STOP and closes (on a socket, after FINISH or a bounded
    /// wait for it).
    pub(crate) fn close(&mut self) {
        let stop = control_frame(CONTROL_STOP, false);
        match std::mem::replace(self, Output::Failed) {
            Output::File(mut out) => {
                if let Err(err) = out.write_all(&stop) {
                    log::error!("dnstap: closing the file failed: {err}");
                }
            }
            Output::Socket(SocketOutput {
                stream: Some(mut stream),
                ..
            }) => {
                // STOP and FINISH together within FINISH_TIMEOUT: a reader
                // that stalls now delays the shutdown no further.
                stream.deadline = Some(Instant::now() + FINISH_TIMEOUT);
                if stream.write_all(&stop).is_ok() {
                    // Whatever the reader answers, the stream ends here.
                    let finish = read_control(&mut stream);
                    if !matches!(
                        finish,
                        Ok(Control {
                            kind: CONTROL_FINISH,
                            ..
                        })
                    ) {
                        log::debug!("dnstap: the reader did not answer STOP with FINISH");
                    }
                }
            }
            Output::Socket(_) | Output::Failed => {}
        }
    }
}

impl SocketOutput {
    fn disconnect(&mut self, err: &io::Error) {
        log::warn!(
            "dnstap: the reader on {} went away ({err}); reconnecting",
            self.path.display()
        );
        self.stream = None;
        self.logged_failure = true;
        self.next_attempt = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(RECONNECT_MAX);
    }
}

/// Writes `octets` to `out` until done or a failure: how many octets were
/// written, and the failure. A write of nothing is one
/// (`WriteZero`), and an interrupted one is made again.
fn write_counted(out: &mut impl Write, octets: &[u8]) -> (usize, Option<io::Error>) {
    let mut done = 0;
    while done < octets.len() {
        match out.write(&octets[done..]) {
            Ok(0) => {
                return (
                    done,
                    Some(io::Error::new(io::ErrorKind::WriteZero, "nothing written")),
                )
            }
            Ok(written) => done += written,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return (done, Some(err)),
        }
    }
    (done, None)
}

/// The socket to the reader, every read and write bounded in time: each
/// call by [`SOCKET_TIMEOUT`]; all of them by `deadline` when it is set
/// (the handshake, the close), and from the moment the server stops by
/// [`STOP_GRACE`]. A reader that trickles octets cannot hold the writer,
/// nor the shutdown, for longer.
struct Bounded {
    stream: UnixStream,
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Bounded {
    /// The timeout of the next call, or `TimedOut` past the deadline.
    fn timeout(&mut self) -> io::Result<Duration> {
        if self.stop.load(Ordering::Acquire) {
            let grace = Instant::now() + STOP_GRACE;
            self.deadline = Some(self.deadline.map_or(grace, |deadline| deadline.min(grace)));
        }
        let Some(deadline) = self.deadline else {
            return Ok(SOCKET_TIMEOUT);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the reader is too slow",
            ));
        }
        Ok(left.min(SOCKET_TIMEOUT))
    }
}

/// A socket timeout reads as EAGAIN (`WouldBlock`) on Linux: say what it
/// is.
fn timed_out(err: io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "the reader is too slow")
    } else {
        err
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = self.timeout()?;
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.read(buf).map_err(timed_out)
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let timeout = self.timeout()?;
        self.stream.set_write_timeout(Some(timeout))?;
        self.stream.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Connects to a Frame Streams reader and makes the bidirectional
/// handshake, all within [`SOCKET_TIMEOUT`]: READY with our content type,
/// ACCEPT that lists it (or none), then START.
fn connect(path: &Path, stop: &Arc<AtomicBool>) -> io::Result<Bounded> {
    // A reader that listens but never accepts fills its backlog, and a
    // plain connect then blocks for ever: bounded by the send timeout,
    // which Linux applies to a Unix stream connect.
    let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
    socket.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    socket.connect(&socket2::SockAddr::unix(path)?)?;
    let mut stream = Bounded {
        stream: UnixStream::from(std::os::fd::OwnedFd::from(socket)),
        stop: Arc::clone(stop),
        deadline: Some(Instant::now() + SOCKET_TIMEOUT),
    };
    stream.write_all(&control_frame(CONTROL_READY, true))?;
    let accept = read_control(&mut stream)?;
    if accept.kind != CONTROL_ACCEPT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the reader did not answer READY with ACCEPT",
        ));
    }
    if !accept.dnstap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the reader does not accept protobuf:dnstap.Dnstap",
        ));
    }
    stream.write_all(&control_frame(CONTROL_START, true))?;
    // From here on, each call is bounded (and all, once the server stops).
    stream.deadline = None;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;
    use crate::frames::CONTROL_ACCEPT;
    use crate::tests::{start_now, tempdir};
    use crate::DnstapConfig;

    /// A reader that listens but never accepts: its backlog fills, and
    /// each connect must still end within the socket timeout, not block.
    #[test]
    fn a_reader_that_never_accepts_does_not_block_the_writer() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("never-accepts");
        let listener =
            socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
        listener
            .bind(&socket2::SockAddr::unix(&path).unwrap())
            .unwrap();
        listener.listen(0).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        for attempt in 0..4 {
            let started = Instant::now();
            assert!(connect(&path, &stop).is_err(), "attempt {attempt}");
            let took = started.elapsed();
            assert!(took < SOCKET_TIMEOUT * 4, "attempt {attempt} took {took:?}");
        }
        // A file where the path should be is not written through a link.
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let config = DnstapConfig::new(DnstapOutput::File(link));
        assert!(start_now(&config, 1).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn a_reader_that_refuses_dnstap_gets_nothing() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut reader, _) = listener.accept().unwrap();
            read_control(&mut reader).unwrap();
            let mut accept = CONTROL_ACCEPT.to_be_bytes().to_vec();
            accept.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
            accept.extend_from_slice(b"json");
            reader.write_all(&[0, 0, 0, 0]).unwrap();
            reader
                .write_all(&(accept.len() as u32).to_be_bytes())
                .unwrap();
            reader.write_all(&accept).unwrap();
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            rest
        });
        let stop = Arc::new(AtomicBool::new(false));
        assert!(connect(&dir.path().join("tap.sock"), &stop).is_err());
        // The writer closed without START.
        assert_eq!(reader.join().unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn a_reader_that_trickles_cannot_hold_the_handshake() {
        // It answers READY with a valid ACCEPT, one octet every 100 ms:
        // the handshake gives up after SOCKET_TIMEOUT, not 42 octets (4.2 s)
        // later.
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut reader, _) = listener.accept().unwrap();
            read_control(&mut reader).unwrap();
            for octet in control_frame(CONTROL_ACCEPT, true) {
                if reader.write_all(&[octet]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let err = connect(&path, &stop).err().expect("the handshake fails");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        let took = started.elapsed();
        assert!(took < SOCKET_TIMEOUT + Duration::from_secs(2), "{took:?}");
        reader.join().unwrap();
    }
}
