//! TCP (RFC 7766): framing, pipelining, and each limit closing the
//! connection: the per-core connection limit, the initial, idle and
//! per-message timeouts, and the in-flight limit with the write timeout;
//! and abuse (issue 6): hundreds of stalled clients, a client that never
//! reads.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use tern_server::{Driver, Handle, TcpConfig};

use crate::*;

/// How many stalled clients the slow-client test opens at once (issue 6).
const SLOW_CLIENTS: usize = 500;

/// File descriptors left free beyond what the slow-client test holds, for
/// the tests that run alongside it.
const OTHER_DESCRIPTORS: usize = 200;

/// How much later than a limit's nominal time a test accepts it firing:
/// generous, for a loaded two-core machine, yet well below every longer
/// timeout that could fire instead.
const MARGIN: Duration = Duration::from_secs(2);

/// Short limits, so that the tests see them fire.
fn short_limits(config: &mut tern_server::ServerConfig) {
    config.cores = vec![0];
    config.tcp.initial_timeout = Duration::from_millis(300);
    config.tcp.idle_timeout = Duration::from_millis(300);
    config.tcp.message_timeout = Duration::from_millis(300);
    config.tcp.write_timeout = Duration::from_millis(300);
    config.tcp.max_connections = 2;
    config.tcp.max_in_flight = 4;
}

#[test]
fn tcp_pipelined_queries_all_answered() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let mut stream = tcp_connect(server);
        // All frames in one write, then one at a time.
        let mut burst = Vec::new();
        for id in 0..50u16 {
            let q = query(id, "www.example.com.", 1, Some(1232));
            burst.extend_from_slice(&(q.len() as u16).to_be_bytes());
            burst.extend_from_slice(&q);
        }
        stream.write_all(&burst).unwrap();
        for id in 50..70u16 {
            tcp_send(&mut stream, &query(id, "www.example.com.", 1, Some(1232)));
        }
        for id in 0..70u16 {
            let answer = tcp_receive(&mut stream).unwrap();
            assert_eq!(summary(&answer), (id, 0, false, 1), "{driver:?}");
        }
    }
}

#[test]
fn tcp_frame_split_across_writes_is_answered() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let mut stream = tcp_connect(server);
        let q = query(9, "www.example.com.", 1, None);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        for chunk in framed.chunks(5) {
            stream.write_all(chunk).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (9, 0, false, 1), "{driver:?}");
    }
}

/// A length prefix of 0, or below a header's 12 octets, closes the
/// connection at once, without waiting for the octets it announces.
#[test]
fn tcp_short_length_prefix_closes_connection() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        for length in [0u8, 1, 5, 11] {
            let mut stream = tcp_connect(server);
            stream.write_all(&[0, length, 1, 2, 3, 4, 5]).unwrap();
            let sent = Instant::now();
            assert!(closed_by_server(&mut stream), "{driver:?}: length {length}");
            assert!(
                sent.elapsed() < TcpConfig::default().message_timeout,
                "{driver:?}: length {length} closed by a timeout, not the check"
            );
        }
    }
}

#[test]
fn refused_outside_our_zones_over_tcp() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &query(9, "www.example.org.", 1, None));
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (9, 5, false, 0), "{driver:?}");
    }
}

#[test]
fn tcp_connections_past_the_limit_are_closed() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let handle = server.handle();
        let mut open = Vec::new();
        for id in 0..2 {
            let mut stream = tcp_connect(addr);
            tcp_send(&mut stream, &query(id, "www.example.com.", 1, None));
            assert!(tcp_receive(&mut stream).is_some(), "{driver:?}");
            open.push(stream);
        }
        let mut third = tcp_connect(addr);
        assert!(
            closed_by_server(&mut third),
            "{driver:?}: the third is closed"
        );
        let stats = handle.stats();
        assert_eq!(
            (
                stats[0].tcp_accepted,
                stats[0].tcp_open,
                stats[0].tcp_refused
            ),
            (2, 2, 1),
            "{driver:?}: {}",
            stats[0]
        );
        // Once one closes, a new connection is served again.
        drop(open.pop());
        std::thread::sleep(Duration::from_millis(100));
        let mut fourth = tcp_connect(addr);
        tcp_send(&mut fourth, &query(4, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut fourth).is_some(), "{driver:?}");
        handle.shutdown();
        server.join().unwrap();
    }
}

#[test]
fn tcp_idle_connection_is_closed_after_the_idle_timeout() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let mut stream = tcp_connect(addr);
        tcp_send(&mut stream, &query(1, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut stream).is_some());
        let idle = Instant::now();
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let elapsed = idle.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(2),
            "{driver:?}: closed after {elapsed:?}"
        );
        server.handle().shutdown();
        server.join().unwrap();
    }
}

#[test]
fn tcp_slow_message_is_closed_after_the_message_timeout() {
    for driver in DRIVERS {
        // Idle and initial timeouts far longer than the test: only the
        // message timeout can close the connection in time.
        let (server, addr) = start_with(driver, |config| {
            short_limits(config);
            config.tcp.initial_timeout = Duration::from_secs(30);
            config.tcp.idle_timeout = Duration::from_secs(30);
        });
        let mut stream = tcp_connect(addr);
        let q = query(1, "www.example.com.", 1, None);
        // The length and half the message; the rest never comes. Keep
        // trickling one octet well within the idle timeout each time: only
        // the per-message clock can close the connection.
        stream.write_all(&(q.len() as u16).to_be_bytes()).unwrap();
        stream.write_all(&q[..q.len() / 2]).unwrap();
        let started = Instant::now();
        let mut closed = false;
        for &octet in &q[q.len() / 2..q.len() - 1] {
            std::thread::sleep(Duration::from_millis(100));
            if stream.write_all(&[octet]).is_err() {
                closed = true;
                break;
            }
        }
        let closed = closed || closed_by_server(&mut stream);
        assert!(closed, "{driver:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "{driver:?}");
        server.handle().shutdown();
        server.join().unwrap();
    }
}

/// A client that pipelines queries for a large answer and never reads
/// them: the server stops reading at the in-flight limit (so the answers
/// it queues, and its memory, stay bounded however many queries wait),
/// its write times out, and the write timeout closes the connection (the
/// idle timeout is far longer); the core keeps serving others.
#[test]
fn tcp_client_that_never_reads_is_closed_by_the_write_timeout() {
    /// Queries sent at once, each for a 60 KiB answer: 300 MB of answers
    /// if the server read and queued them all.
    const QUERIES: u16 = 5000;
    let max_in_flight = 4;
    let write_timeout = Duration::from_millis(300);
    // The idle timeout far longer still, so that a close well before it
    // can only be the write timeout's, however slowly a loaded machine
    // runs the core (the close came 4 s after the burst once, in make
    // test-repeat with the load average at 20).
    let idle_timeout = Duration::from_secs(60);
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| {
            config.cores = vec![0];
            config.tcp.write_timeout = write_timeout;
            config.tcp.idle_timeout = idle_timeout;
            config.tcp.max_in_flight = max_in_flight;
        });
        let handle = server.handle();
        let mut probe = tcp_connect(addr);
        tcp_send(&mut probe, &query(0, "huge.example.com.", 16, None));
        let answer_size = tcp_receive(&mut probe).expect("an answer").len();
        drop(probe);
        assert!(answer_size > 60_000, "{driver:?}: {answer_size}");
        // The probe's connection was counted when accepted (it was
        // answered); wait for its close so that `tcp_open == 0` below can
        // only mean the never-reading client's connection was closed.
        assert!(
            wait_for(&handle, MARGIN, |stats| stats.tcp_open == 0),
            "{driver:?}: the probe's connection stays open"
        );
        // What the server may answer before it stops: the answers its
        // socket's send buffer takes (the kernel grows it up to about
        // tcp_wmem's maximum while the client does not read; twice that,
        // for the kernel's accounting and the client's receive buffer),
        // the in-flight ones, one waiting for room, and some to spare.
        let kernel = 2 * kernel_send_buffer_max() / answer_size;
        let most_read = (kernel + max_in_flight + 1 + 16) as u64;
        assert!(
            most_read < u64::from(QUERIES) / 2,
            "tcp_wmem too large: {most_read}"
        );
        let before = handle.stats()[0].queries;
        let (closed_after, answers) = never_reading_client(addr, QUERIES, &handle);
        let stats = &handle.stats()[0];
        let read = stats.queries - before;
        assert!(
            closed_after < idle_timeout / 3,
            "{driver:?}: open after {closed_after:?}: {stats}"
        );
        assert!(
            (1..=most_read).contains(&read),
            "{driver:?}: {read} of {QUERIES} queries read, at most {most_read} expected"
        );
        assert!(answers <= read, "{driver:?}: {answers} answers");
        let mut other = tcp_connect(addr);
        tcp_send(&mut other, &query(1, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut other).is_some(), "{driver:?}");
        handle.shutdown();
        server.join().unwrap();
    }
}

/// Sends `queries` queries for the huge answer at once without reading,
/// and waits for the server to close the connection; how long that took
/// (at most the write timeout plus [`MARGIN`] and a little more: longer
/// is a failure), and how many answers could be read afterwards.
fn never_reading_client(addr: SocketAddr, queries: u16, handle: &Handle) -> (Duration, u64) {
    let accepted_before = handle.stats()[0].tcp_accepted;
    // A small receive window, so that the client's kernel holds few
    // answers.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut burst = Vec::new();
    for id in 0..queries {
        let q = query(id, "huge.example.com.", 16, None);
        burst.extend_from_slice(&(q.len() as u16).to_be_bytes());
        burst.extend_from_slice(&q);
    }
    let sent = Instant::now();
    // The server may stop reading before all of it is taken: then the
    // write times out (or is reset once the server closes).
    let _ = stream.write_all(&burst);
    // `tcp_open == 0` holds before the server has accepted this
    // connection too: see the accept first, then the close.
    assert!(
        wait_for(handle, MARGIN + MARGIN, |stats| stats.tcp_accepted
            > accepted_before),
        "the connection was never accepted"
    );
    // Bounded by a third of the test's idle timeout (60 s): a close by the
    // idle timeout would come later.
    assert!(
        wait_for(handle, Duration::from_secs(20), |stats| stats.tcp_open == 0),
        "the connection was never closed"
    );
    let closed_after = sent.elapsed();
    // Only now read: what was sent before the close, or a reset.
    let mut answers = 0;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    while tcp_receive(&mut stream).is_some() {
        answers += 1;
    }
    (closed_after, answers)
}

/// The most the kernel lets a TCP socket's send buffer grow to
/// (`net.ipv4.tcp_wmem`'s maximum); Linux's default where unreadable.
fn kernel_send_buffer_max() -> usize {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|text| text.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(4 << 20)
}

/// The defaults issue 6 asks for: a stalled message is closed in under a
/// second, and a new connection waits less for its first message than an
/// established one between messages.
#[test]
fn tcp_default_timeouts() {
    let limits = TcpConfig::default();
    assert!(limits.message_timeout < Duration::from_secs(1));
    assert!(limits.initial_timeout < limits.idle_timeout);
    assert!(limits.message_timeout < limits.initial_timeout);
}

/// A client that connects and sends nothing is closed after the initial
/// timeout, not the (much longer) idle timeout.
#[test]
fn tcp_silent_connection_is_closed_after_the_initial_timeout() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| {
            config.cores = vec![0];
            config.tcp.initial_timeout = Duration::from_millis(300);
            config.tcp.idle_timeout = Duration::from_secs(30);
        });
        let mut stream = tcp_connect(addr);
        let connected = Instant::now();
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let elapsed = connected.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(300) + MARGIN,
            "{driver:?}: closed after {elapsed:?}"
        );
        server.handle().shutdown();
        server.join().unwrap();
    }
}

/// After its first message a connection waits the idle timeout, not the
/// initial one, for the next.
#[test]
fn tcp_idle_timeout_is_separate_from_the_initial_timeout() {
    let idle = Duration::from_millis(1500);
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| {
            config.cores = vec![0];
            config.tcp.initial_timeout = Duration::from_millis(200);
            config.tcp.idle_timeout = idle;
        });
        let mut stream = tcp_connect(addr);
        tcp_send(&mut stream, &query(1, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut stream).is_some(), "{driver:?}");
        // Three initial timeouts later, still open.
        std::thread::sleep(Duration::from_millis(600));
        tcp_send(&mut stream, &query(2, "www.example.com.", 1, None));
        let answer = tcp_receive(&mut stream).expect("open past the initial timeout");
        assert_eq!(summary(&answer).0, 2, "{driver:?}");
        let quiet = Instant::now();
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let elapsed = quiet.elapsed();
        assert!(
            elapsed >= idle - Duration::from_millis(100) && elapsed < idle + MARGIN,
            "{driver:?}: closed after {elapsed:?}"
        );
        server.handle().shutdown();
        server.join().unwrap();
    }
}

/// 500 clients connect at once, each sends one octet and stalls; the core
/// has the default limits (256 connections, an 800 ms message timeout).
/// UDP is answered throughout; those past the connection limit are closed
/// at once; the rest are closed by the message timeout, which frees their
/// slots, so a good TCP client is answered within the message timeout
/// (plus a margin) of the flood. Every slow client ends up closed.
///
/// File descriptors: 500 client sockets and up to 256 server sockets live
/// in this one process, next to the servers other tests leave running
/// (some 350 descriptors): past the common soft limit of 1024. The test
/// first raises its soft limit to the hard one if it must
/// ([`ensure_open_files`]).
#[test]
fn tcp_slow_clients_do_not_stop_other_answers() {
    let limits = TcpConfig::default();
    ensure_open_files(SLOW_CLIENTS + limits.max_connections + OTHER_DESCRIPTORS);
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0]);
        let handle = server.handle();
        let mut slow = Vec::with_capacity(SLOW_CLIENTS);
        for i in 0..SLOW_CLIENTS {
            let mut stream = TcpStream::connect(addr).unwrap();
            // The first octet of a length prefix. One past the limit may
            // already be closed by the server: then this may fail.
            let _ = stream.write_all(&[0]);
            slow.push(stream);
            if i % 100 == 99 {
                let q = query(i as u16, "www.example.com.", 1, None);
                let answer = udp_exchange_within(addr, &q, MARGIN);
                assert!(
                    answer.is_some(),
                    "{driver:?}: UDP unanswered after {i} slow clients"
                );
            }
        }
        // The core accepts behind the kernel's queue: wait until it has
        // seen every slow client.
        let seen = wait_for(&handle, MARGIN, |stats| {
            stats.tcp_accepted + stats.tcp_refused >= SLOW_CLIENTS as u64
        });
        let flooded = Instant::now();
        let stats = &handle.stats()[0];
        assert!(seen, "{driver:?}: not all slow clients accepted: {stats}");
        assert!(
            stats.tcp_refused > 0,
            "{driver:?}: the flood did not reach the connection limit: {stats}"
        );
        let answer = udp_exchange_within(addr, &query(1, "www.example.com.", 1, None), MARGIN);
        assert_eq!(
            answer.map(|a| summary(&a)),
            Some((1, 0, false, 1)),
            "{driver:?}"
        );
        let bound = limits.message_timeout + MARGIN;
        let (good, attempts) = tcp_answer_before(addr, flooded + bound);
        let served_after = flooded.elapsed();
        assert_eq!(
            good.map(|a| summary(&a)),
            Some((7, 0, false, 1)),
            "{driver:?}: no TCP answer within {bound:?} ({attempts} attempts): {}",
            handle.stats()[0]
        );
        for (i, stream) in slow.iter_mut().enumerate() {
            stream.set_read_timeout(Some(MARGIN)).unwrap();
            assert!(closed_by_server(stream), "{driver:?}: slow client {i} open");
        }
        let closed = wait_for(&handle, MARGIN, |stats| stats.tcp_open == 0);
        let stats = &handle.stats()[0];
        assert!(closed, "{driver:?}: {stats}");
        assert_eq!(
            stats.tcp_accepted + stats.tcp_refused,
            SLOW_CLIENTS as u64 + attempts,
            "{driver:?}: {stats}"
        );
        eprintln!("{driver:?}: TCP answered {served_after:?} after the flood: {stats}");
        handle.shutdown();
        server.join().unwrap();
    }
}

/// Connects, asks and reads again and again (a refused connection is
/// closed at once) until answered or `deadline`; the answer and the number
/// of connections made.
fn tcp_answer_before(addr: SocketAddr, deadline: Instant) -> (Option<Vec<u8>>, u64) {
    let mut attempts = 0;
    while Instant::now() < deadline {
        attempts += 1;
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let q = query(7, "www.example.com.", 1, None);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        if stream.write_all(&framed).is_ok() {
            if let Some(answer) = tcp_receive(&mut stream) {
                return (Some(answer), attempts);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (None, attempts)
}

/// Polls the first core's statistics until `done` holds or `wait` passes;
/// whether it held.
fn wait_for(
    handle: &Handle,
    wait: Duration,
    done: impl Fn(&tern_server::CoreStats) -> bool,
) -> bool {
    let until = Instant::now() + wait;
    loop {
        if done(&handle.stats()[0]) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes sure this process may open `more` file descriptors beyond those
/// open now. If the soft limit is too low, raises it to the hard limit
/// with `prlimit` (util-linux, an essential Debian package): the tests use
/// no `unsafe`, so `setrlimit` is out of their reach. Panics, naming the
/// cause, if that is still not enough.
fn ensure_open_files(more: usize) {
    let open = std::fs::read_dir("/proc/self/fd")
        .map(Iterator::count)
        .unwrap_or(0);
    let needed = open + more;
    let (soft, hard) = open_files_limits();
    if soft >= needed {
        return;
    }
    let raised = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(std::process::id().to_string())
        .arg(format!("--nofile={hard}:"))
        .status();
    let (soft, hard) = open_files_limits();
    assert!(
        soft >= needed,
        "this test needs {needed} file descriptors; the soft limit is {soft}, the hard \
         limit {hard} (raising it: {raised:?}); run it with a higher ulimit -n"
    );
}

/// This process's soft limit on open files ("unlimited" as the largest
/// number), and its hard limit as written, from /proc/self/limits.
fn open_files_limits() -> (usize, String) {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open files line");
    let mut values = line["Max open files".len()..].split_whitespace();
    let soft = values.next().expect("a soft limit");
    let hard = values.next().expect("a hard limit");
    (soft.parse().unwrap_or(usize::MAX), hard.to_string())
}

#[test]
fn tcp_queries_bypass_the_cache() {
    let (server, addr) = start_with(Driver::Legacy, |config| config.cores = vec![0]);
    let handle = server.handle();
    let mut stream = tcp_connect(addr);
    for id in 0..3 {
        tcp_send(&mut stream, &query(id, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut stream).is_some());
    }
    let stats = handle.stats();
    assert_eq!((stats[0].cache_hits, stats[0].cache_misses), (0, 0));
    assert_eq!(stats[0].queries, 3);
    handle.shutdown();
    server.join().unwrap();
}

/// The server's first read of a connection (tcp.rs `READ_SIZE`).
const FIRST_READ: usize = 1024;

/// A query for www.example.com. A padded (an EDNS Padding option, RFC
/// 7830) to `len` octets.
pub(crate) fn query_of_size(id: u16, len: usize) -> Vec<u8> {
    let mut message = query(id, "www.example.com.", 1, Some(1232));
    let padding = len - message.len() - 4;
    let rdlen_at = message.len() - 2;
    message[rdlen_at..].copy_from_slice(&(padding as u16 + 4).to_be_bytes());
    message.extend_from_slice(&[0, 12]);
    message.extend_from_slice(&(padding as u16).to_be_bytes());
    message.resize(len, 0);
    message
}

/// The messages, each framed, one after the other.
pub(crate) fn framed(messages: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for message in messages {
        out.extend_from_slice(&(message.len() as u16).to_be_bytes());
        out.extend_from_slice(message);
    }
    out
}

/// The segments carrying data that the client's socket `stream` has
/// received, as the kernel counts them (`data_segs_in` of TCP_INFO, read
/// with `ss`: the tests use no `unsafe`).
pub(crate) fn data_segments_in(stream: &TcpStream) -> u64 {
    let (local, peer) = (stream.local_addr().unwrap(), stream.peer_addr().unwrap());
    let output = std::process::Command::new("ss")
        .args(["-tinH", "src", &local.to_string(), "dst", &peer.to_string()])
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("ESTAB"), "the connection in ss: {text}");
    // Absent while none has arrived.
    text.split_whitespace()
        .find_map(|field| field.strip_prefix("data_segs_in:"))
        .map_or(0, |count| count.parse().expect("a count"))
}

/// A query that is in the socket when the server has answered what one
/// read gave is answered into the same write (issue 26: a pipelining
/// client's next query, already sent, costs no segment of its own). The
/// server's first read takes 1 KiB: all of the first query and the start
/// of the second; both answers arrive in one segment, and a query alone
/// is answered at once (the server never waits for one that is not
/// there: the read would time out).
#[test]
fn tcp_a_query_already_sent_is_answered_in_the_same_write() {
    for driver in DRIVERS {
        let running = start(driver);
        let mut stream = tcp_connect(running.addr);
        let first = query_of_size(1, 1000);
        let second = query(2, "www.example.com.", 1, None);
        let burst = framed(&[&first, &second]);
        assert!(2 + first.len() < FIRST_READ && burst.len() > FIRST_READ);
        stream.write_all(&burst).unwrap();
        for id in [1, 2] {
            let answer = tcp_receive(&mut stream).expect("an answer");
            assert_eq!(summary(&answer), (id, 0, false, 1), "{driver:?}");
        }
        assert_eq!(
            data_segments_in(&stream),
            1,
            "{driver:?}: both answers in one segment"
        );
        tcp_send(&mut stream, &query(3, "www.example.com.", 1, None));
        let answer = tcp_receive(&mut stream).expect("an answer");
        assert_eq!(summary(&answer), (3, 0, false, 1), "{driver:?}");
        assert_eq!(data_segments_in(&stream), 2, "{driver:?}");
    }
}
