//! The writer thread: it takes the records every core logged, encodes
//! each (prost) into a Frame Streams data frame, writes the frames out to
//! the file or socket ([`crate::output`]), counts each message written or
//! lost, and gives every record back to its core.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::output::Output;
use crate::proto::{DnstapFrame, DnstapMessage, DNSTAP_MESSAGE};
use crate::record::{encode, RECORD_CAPACITY};
use crate::tap::{channel, CoreEnd, TapParts};
use crate::{DnstapConfig, MAX_BUFFER};

/// Records the writer takes from one core before it looks at the next.
const DRAIN_BURST: usize = 256;

/// The writer's longest sleep while every core's buffer is empty; it
/// starts at [`IDLE_SLEEP_MIN`] and doubles while nothing comes.
const IDLE_SLEEP_MAX: Duration = Duration::from_millis(20);

/// See [`IDLE_SLEEP_MAX`].
const IDLE_SLEEP_MIN: Duration = Duration::from_millis(1);

/// The output buffer of the writer: frames are written out when the next
/// would not fit, whenever the cores have nothing more, and at the end.
const OUTPUT_BUFFER: usize = 64 * 1024;

/// The writer thread, and its order with the server's (the binary keeps
/// it):
///
/// 1. [`DnstapWriter::start`] before the cores start, while tern may still
///    be root: the file is opened then, and each core's [`TapParts`] go
///    to the server's configuration;
/// 2. [`DnstapWriter::go`] once every core is serving (root dropped): only
///    then may the writer connect to its socket;
/// 3. [`DnstapWriter::finish`] once every core has stopped: the writer
///    writes what they left, then STOP (and FINISH from a socket's
///    reader), and ends.
///
/// A start that fails never gives the go: finishing (or dropping) the
/// writer then closes its gate, and it ends without having connected.
pub struct DnstapWriter {
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    /// The writer's go, until it is given: dropped unsent, the writer
    /// ends (STOP on a file) without connecting anything.
    gate: Option<mpsc::Sender<()>>,
}

impl DnstapWriter {
    /// Starts the writer for `cores` cores and returns each core's end, in
    /// order. A file is created (or truncated) here, so that an error
    /// reaches the caller (before tern drops root: the file may be where
    /// only root writes); a socket is connected by the writer, again and
    /// again, and not before [`DnstapWriter::go`]: the first connection is
    /// made as the user tern serves as, like every later one.
    pub fn start(config: &DnstapConfig, cores: usize) -> io::Result<(DnstapWriter, Vec<TapParts>)> {
        let (gate, go) = mpsc::channel();
        let limit = config.buffer.clamp(1, MAX_BUFFER);
        let capacity = RECORD_CAPACITY;
        let stop = Arc::new(AtomicBool::new(false));
        let output = Output::open(&config.output, &stop)?;
        let (ends, parts): (Vec<CoreEnd>, Vec<TapParts>) =
            (0..cores).map(|_| channel(limit, config)).unzip();
        let mut frame = DnstapFrame {
            identity: (!config.identity.is_empty()).then(|| config.identity.clone()),
            version: (!config.version.is_empty()).then(|| config.version.clone()),
            extra: None,
            message: Some(DnstapMessage::default()),
            r#type: DNSTAP_MESSAGE,
        };
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("tern-dnstap".to_string())
            .spawn(move || {
                let mut writer = Writer {
                    output,
                    ends,
                    buffer: Vec::with_capacity(capacity * 2),
                    capacity,
                    pending: Pending {
                        octets: Vec::with_capacity(OUTPUT_BUFFER),
                        frames: Vec::new(),
                    },
                    totals: [0; 3],
                };
                if go.recv().is_err() {
                    writer.output.close();
                    return;
                }
                writer.run(&mut frame, &stopping);
            })?;
        Ok((
            DnstapWriter {
                thread: Some(thread),
                stop,
                gate: Some(gate),
            },
            parts,
        ))
    }

    /// Once every core serves (after tern dropped root): the writer starts
    /// taking the cores' records and may connect to its socket. Given
    /// once; later calls do nothing.
    pub fn go(&mut self) {
        if let Some(gate) = self.gate.take() {
            // A writer gone already has nothing to be told.
            let _ = gate.send(());
        }
    }

    /// Once the cores have stopped: writes what they left, then STOP (and
    /// waits a bounded time for FINISH on a socket), and closes. Without
    /// its go (a start that failed), it closes having connected nothing.
    pub fn finish(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        // The go never given: closed, so the thread ends without it.
        drop(self.gate.take());
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for DnstapWriter {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The writer thread's state.
struct Writer {
    output: Output,
    ends: Vec<CoreEnd>,
    /// One encoded data frame (length and protobuf).
    buffer: Vec<u8>,
    /// The records' message capacity: one that grew past it is replaced.
    capacity: usize,
    /// Frames encoded but not yet written out.
    pending: Pending,
    /// Messages written, without a reader, and lost, over all cores: for
    /// the log line at the end.
    totals: [u64; 3],
}

/// The writer's output buffer: frames not yet written out, and whose each
/// one is, so that each is counted written only once it was.
struct Pending {
    /// The frames back to back (about [`OUTPUT_BUFFER`] octets at most:
    /// more only to hold one longer frame).
    octets: Vec<u8>,
    /// Where each frame ends in `octets`, and the index of its core.
    frames: Vec<(usize, usize)>,
}

impl Writer {
    /// Drains the cores until told to stop (then once more), sleeping a
    /// little longer each time they have nothing.
    fn run(&mut self, frame: &mut DnstapFrame, stop: &AtomicBool) {
        let mut idle = IDLE_SLEEP_MIN;
        loop {
            // Read before draining: what the cores wrote before they
            // stopped is drained after the flag is seen.
            let stopping = stop.load(Ordering::Acquire);
            self.output.reconnect_if_due();
            let drained = self.drain(frame);
            if drained == 0 {
                self.pending
                    .write_out(&mut self.output, &self.ends, &mut self.totals);
                if stopping {
                    break;
                }
                std::thread::park_timeout(idle);
                idle = (idle * 2).min(IDLE_SLEEP_MAX);
            } else {
                idle = IDLE_SLEEP_MIN;
            }
        }
        // Nothing is pending here: the last pass wrote it out or lost it.
        self.output.close();
        let [written, no_reader, lost] = self.totals;
        log::info!(
            "dnstap: closed: {written} messages written, {no_reader} not written (no reader), \
             {lost} lost with the connection or at the stop"
        );
    }

    /// Writes (or drops) what every core has waiting, at most
    /// [`DRAIN_BURST`] records each; returns how many were taken.
    fn drain(&mut self, frame: &mut DnstapFrame) -> usize {
        let mut taken = 0;
        for (core, end) in self.ends.iter().enumerate() {
            for _ in 0..DRAIN_BURST {
                let mut record = match end.records.try_recv() {
                    Ok(record) => record,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                };
                taken += 1;
                let mut queued = false;
                if self.output.connected() {
                    encode(frame, &mut record, &mut self.buffer);
                    if self.pending.octets.len() + self.buffer.len() > OUTPUT_BUFFER {
                        self.pending
                            .write_out(&mut self.output, &self.ends, &mut self.totals);
                    }
                    // The write above may have lost the connection.
                    if self.output.connected() {
                        self.pending.octets.extend_from_slice(&self.buffer);
                        let frame_end = self.pending.octets.len();
                        self.pending.frames.push((frame_end, core));
                        queued = true;
                    }
                }
                if !queued {
                    end.counters.no_reader.fetch_add(1, Ordering::Relaxed);
                    self.totals[1] += 1;
                }
                if record.message.capacity() > self.capacity {
                    record.message = Vec::with_capacity(self.capacity);
                }
                // The return channel holds every record there is: never
                // full. A core gone: the record is freed here.
                let _ = end.free.try_send(record);
            }
        }
        taken
    }
}

impl Pending {
    /// Writes the frames out and counts each, for its core and in
    /// `totals`: written if its last octet was, lost otherwise (the
    /// connection failed first).
    fn write_out(&mut self, output: &mut Output, ends: &[CoreEnd], totals: &mut [u64; 3]) {
        if self.octets.is_empty() {
            return;
        }
        let done = output.write(&self.octets);
        for &(frame_end, core) in &self.frames {
            let (counter, total) = if frame_end <= done {
                (&ends[core].counters.written, &mut totals[0])
            } else {
                (&ends[core].counters.lost, &mut totals[2])
            };
            counter.fetch_add(1, Ordering::Relaxed);
            *total += 1;
        }
        self.octets.clear();
        self.frames.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::os::unix::net::UnixListener;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::tests::tempdir;
    use crate::DnstapOutput;

    /// Issue 22: the writer connects to its socket only once the server
    /// gives it the go (after tern dropped root), so that the first
    /// connection is made as the user every later one is made as. A
    /// server that never served (its go dropped) connects nothing.
    #[test]
    fn a_socket_is_not_connected_before_the_go() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let config = DnstapConfig::new(DnstapOutput::Socket(path));
        let (mut writer, _parts) = DnstapWriter::start(&config, 1).unwrap();
        drop(writer.gate.take());
        // Without its go the writer ends by itself (it is not told to
        // stop): then whatever it connected is queued.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !writer.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            assert!(Instant::now() < deadline, "the writer runs without its go");
            std::thread::sleep(Duration::from_millis(1));
        }
        writer.finish();
        listener.set_nonblocking(true).unwrap();
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(err) if err.kind() == io::ErrorKind::WouldBlock),
            "the writer connected before its go: {accepted:?}"
        );
    }
}
