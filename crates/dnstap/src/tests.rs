//! The core's tap and the writer together: what a file or a reader
//! receives, and how every message is counted.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use prost::Message as _;

use crate::frames::{
    control_frame, read_control, Control, CONTROL_ACCEPT, CONTROL_FINISH, CONTROL_READY,
    CONTROL_START, CONTROL_STOP,
};
use crate::proto::{
    DnstapFrame, DNSTAP_MESSAGE, FAMILY_INET, FAMILY_INET6, PROTOCOL_TCP, PROTOCOL_UDP,
};
use crate::{now, DnstapConfig, DnstapOutput, DnstapWriter, Kind, Tap, TapParts};

/// The writer, given its go at once (as after the server's start).
pub(crate) fn start_now(
    config: &DnstapConfig,
    cores: usize,
) -> io::Result<(DnstapWriter, Vec<TapParts>)> {
    let (mut writer, parts) = DnstapWriter::start(config, cores)?;
    writer.go();
    Ok((writer, parts))
}

fn parts(buffer: usize) -> (DnstapWriter, Tap, PathBuf, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let path = dir.path().join("tap.fstrm");
    let mut config = DnstapConfig::new(DnstapOutput::File(path.clone()));
    config.identity = b"ns1".to_vec();
    config.version = b"tern test".to_vec();
    config.buffer = buffer;
    let (writer, mut parts) = start_now(&config, 1).unwrap();
    let tap = Tap::new(parts.remove(0), Vec::new());
    (writer, tap, path, dir)
}

/// Splits a Frame Streams file into its START payload, its data frames
/// and its STOP payload.
fn frames(bytes: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, Vec<u8>) {
    fn word(bytes: &[u8], at: &mut usize) -> usize {
        let value = u32::from_be_bytes(bytes[*at..*at + 4].try_into().unwrap()) as usize;
        *at += 4;
        value
    }
    let mut at = 0;
    assert_eq!(word(bytes, &mut at), 0, "escape");
    let len = word(bytes, &mut at);
    let start = bytes[at..at + len].to_vec();
    at += len;
    let mut data = Vec::new();
    loop {
        let len = word(bytes, &mut at);
        if len == 0 {
            let len = word(bytes, &mut at);
            let stop = bytes[at..at + len].to_vec();
            assert_eq!(at + len, bytes.len(), "nothing after STOP");
            return (start, data, stop);
        }
        data.push(bytes[at..at + len].to_vec());
        at += len;
    }
}

#[test]
fn a_file_holds_start_the_messages_and_stop() {
    let (writer, tap, path, _dir) = parts(16);
    let client: SocketAddr = "192.0.2.7:5300".parse().unwrap();
    let server: SocketAddr = "127.0.0.1:53".parse().unwrap();
    let time = Duration::new(1_700_000_000, 123_456_789);
    tap.log(Kind::AuthQuery, false, client, server, time, b"query");
    tap.log(Kind::AuthResponse, true, client, server, time, b"answer");
    let upstream: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
    tap.log(Kind::ForwarderQuery, false, client, upstream, time, b"up");
    writer.finish();
    assert_eq!((tap.written(), tap.dropped()), (3, [0; 3]));

    let bytes = std::fs::read(&path).unwrap();
    let (start, data, stop) = frames(&bytes);
    let mut expected_start = CONTROL_START.to_be_bytes().to_vec();
    expected_start.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 22]);
    expected_start.extend_from_slice(b"protobuf:dnstap.Dnstap");
    assert_eq!(start, expected_start);
    assert_eq!(stop, CONTROL_STOP.to_be_bytes());
    assert_eq!(data.len(), 3);

    let query = DnstapFrame::decode(data[0].as_slice()).unwrap();
    assert_eq!(query.identity.as_deref(), Some(&b"ns1"[..]));
    assert_eq!(query.version.as_deref(), Some(&b"tern test"[..]));
    assert_eq!(query.r#type, DNSTAP_MESSAGE);
    let message = query.message.unwrap();
    assert_eq!(message.r#type, Kind::AuthQuery as i32);
    assert_eq!(message.socket_family, Some(FAMILY_INET));
    assert_eq!(message.socket_protocol, Some(PROTOCOL_UDP));
    assert_eq!(message.query_address.as_deref(), Some(&[192, 0, 2, 7][..]));
    assert_eq!(
        message.response_address.as_deref(),
        Some(&[127, 0, 0, 1][..])
    );
    assert_eq!(
        (message.query_port, message.response_port),
        (Some(5300), Some(53))
    );
    assert_eq!(message.query_time_sec, Some(1_700_000_000));
    assert_eq!(message.query_time_nsec, Some(123_456_789));
    assert_eq!(message.query_message.as_deref(), Some(&b"query"[..]));
    assert_eq!(message.response_message, None);
    assert_eq!(message.response_time_sec, None);

    let answer = DnstapFrame::decode(data[1].as_slice())
        .unwrap()
        .message
        .unwrap();
    assert_eq!(answer.r#type, Kind::AuthResponse as i32);
    assert_eq!(answer.socket_protocol, Some(PROTOCOL_TCP));
    assert_eq!(answer.response_message.as_deref(), Some(&b"answer"[..]));
    assert_eq!(answer.query_message, None);
    assert_eq!(answer.response_time_sec, Some(1_700_000_000));
    assert_eq!(answer.query_time_sec, Some(1_700_000_000));

    // A mixed pair is written in IPv6 form, the IPv4 side mapped.
    let up = DnstapFrame::decode(data[2].as_slice())
        .unwrap()
        .message
        .unwrap();
    assert_eq!(up.r#type, Kind::ForwarderQuery as i32);
    assert_eq!(up.socket_family, Some(FAMILY_INET6));
    let mapped = "::ffff:192.0.2.7".parse::<std::net::Ipv6Addr>().unwrap();
    assert_eq!(up.query_address.as_deref(), Some(&mapped.octets()[..]));
    let v6 = "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap();
    assert_eq!(up.response_address.as_deref(), Some(&v6.octets()[..]));
}

#[test]
fn a_full_buffer_drops_and_counts_without_blocking() {
    // A socket nobody listens on: what the writer drains it drops,
    // and what it has not drained yet fills the core's two records,
    // so the core drops the rest itself. Every message is counted
    // dropped, none is waited for.
    let dir = tempdir::Dir::new();
    let mut config = DnstapConfig::new(DnstapOutput::Socket(dir.path().join("none")));
    config.buffer = 2;
    let (writer, mut parts) = start_now(&config, 1).unwrap();
    let tap = Tap::new(parts.remove(0), Vec::new());
    let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let started = Instant::now();
    for _ in 0..1000 {
        tap.log(Kind::AuthQuery, false, any, any, now(), b"query");
    }
    assert!(started.elapsed() < Duration::from_secs(1));
    writer.finish();
    assert_eq!(tap.written(), 0);
    let [buffer, no_reader, lost] = tap.dropped();
    assert_eq!((buffer + no_reader, lost), (1000, 0));
    // The writer gave both records back, and there are no others.
    assert_eq!(tap.take_free(), 2);
}

/// Issue 22: a message counts as written when its frame was, not when
/// it entered the writer's buffer. A reader that makes the handshake
/// and then stops reading: the socket's buffer fills, a write times
/// out, and what the writer still held is lost. Once the writer has
/// finished, the reader reads everything the connection brought:
/// exactly as many whole data frames as were counted written; every
/// message is counted once, and those the failed write held are lost.
#[test]
fn written_counts_what_the_reader_receives_and_lost_what_it_never_can() {
    const MESSAGES: usize = 4000;
    let dir = tempdir::Dir::new();
    let path = dir.path().join("tap.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let mut config = DnstapConfig::new(DnstapOutput::Socket(path));
    config.buffer = MESSAGES;
    let (writer, mut parts) = start_now(&config, 1).unwrap();
    let tap = Tap::new(parts.remove(0), Vec::new());
    let (handshake_done, handshake) = mpsc::channel();
    let (writer_done, finished) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let (mut reader, _) = listener.accept().unwrap();
        reader
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(read_control(&mut reader).unwrap().kind, CONTROL_READY);
        reader
            .write_all(&control_frame(CONTROL_ACCEPT, true))
            .unwrap();
        assert_eq!(read_control(&mut reader).unwrap().kind, CONTROL_START);
        handshake_done.send(()).unwrap();
        // Stalled until the writer has finished; then everything.
        finished.recv().unwrap();
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).unwrap();
        // Whole data frames (a control frame, length 0, ends them; a
        // frame cut short by the failed write is not whole).
        let mut whole = 0;
        let mut at = 0;
        while at + 4 <= bytes.len() {
            let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            if len == 0 || at + 4 + len > bytes.len() {
                break;
            }
            at += 4 + len;
            whole += 1;
        }
        whole
    });
    handshake.recv().unwrap();
    let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let message = [0x5a; 1000];
    for _ in 0..MESSAGES {
        tap.log(Kind::AuthQuery, false, any, any, now(), &message);
    }
    writer.finish();
    writer_done.send(()).unwrap();
    let received = reader.join().unwrap();
    let [buffer, no_reader, lost] = tap.dropped();
    assert_eq!(
        tap.written(),
        received as u64,
        "dropped {:?}",
        tap.dropped()
    );
    assert_eq!(tap.written() + buffer + no_reader + lost, MESSAGES as u64);
    assert!(lost > 0, "dropped {:?}", tap.dropped());
}

#[test]
fn queries_or_responses_alone() {
    let dir = tempdir::Dir::new();
    let path = dir.path().join("tap");
    let mut config = DnstapConfig::new(DnstapOutput::File(path.clone()));
    config.log_queries = false;
    let (writer, mut parts) = start_now(&config, 1).unwrap();
    let tap = Tap::new(parts.remove(0), Vec::new());
    let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
    tap.log(Kind::AuthQuery, false, any, any, now(), b"q");
    tap.log(Kind::ClientQuery, false, any, any, now(), b"q");
    tap.log(Kind::ClientResponse, false, any, any, now(), b"r");
    writer.finish();
    let (_, data, _) = frames(&std::fs::read(&path).unwrap());
    assert_eq!(data.len(), 1);
    let message = DnstapFrame::decode(data[0].as_slice())
        .unwrap()
        .message
        .unwrap();
    assert_eq!(message.r#type, Kind::ClientResponse as i32);
    // No identity configured: none written.
    assert_eq!(
        DnstapFrame::decode(data[0].as_slice()).unwrap().identity,
        None
    );
}

#[test]
fn the_socket_handshake_then_data_then_stop_and_finish() {
    let dir = tempdir::Dir::new();
    let path = dir.path().join("tap.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let config = DnstapConfig::new(DnstapOutput::Socket(path));
    let (writer, mut parts) = start_now(&config, 1).unwrap();
    let tap = Tap::new(parts.remove(0), Vec::new());
    let (mut reader, _) = listener.accept().unwrap();
    reader
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let ready = read_control(&mut reader).unwrap();
    assert_eq!(
        ready,
        Control {
            kind: CONTROL_READY,
            dnstap: true
        }
    );
    reader
        .write_all(&control_frame(CONTROL_ACCEPT, true))
        .unwrap();
    let start = read_control(&mut reader).unwrap();
    assert_eq!(
        start,
        Control {
            kind: CONTROL_START,
            dnstap: true
        }
    );
    let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
    tap.log(Kind::AuthQuery, false, any, any, now(), b"query");
    let mut len = [0u8; 4];
    reader.read_exact(&mut len).unwrap();
    let mut data = vec![0; u32::from_be_bytes(len) as usize];
    reader.read_exact(&mut data).unwrap();
    let message = DnstapFrame::decode(data.as_slice())
        .unwrap()
        .message
        .unwrap();
    assert_eq!(message.query_message.as_deref(), Some(&b"query"[..]));
    let finishing = std::thread::spawn(move || writer.finish());
    let stop = read_control(&mut reader).unwrap();
    assert_eq!(
        stop,
        Control {
            kind: CONTROL_STOP,
            dnstap: true
        }
    );
    reader
        .write_all(&control_frame(CONTROL_FINISH, false))
        .unwrap();
    finishing.join().unwrap();
    assert_eq!((tap.written(), tap.dropped()), (1, [0; 3]));
}

/// A temporary directory removed on drop (std only).
pub(crate) mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub(crate) struct Dir(PathBuf);

    impl Dir {
        pub(crate) fn new() -> Dir {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "tern-dnstap-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
