//! tern as primary and as secondary of another tern, over loopback: the
//! first transfer, a change on the primary announced by NOTIFY (the SOA's
//! REFRESH is an hour, so only the NOTIFY can bring it in time), the
//! received zone saved and served again at restart with the primary gone,
//! and `tern zone-status`, `tern refresh` and `tern retransfer`.

use std::net::SocketAddr;
use std::path::Path;

use crate::util::{
    ask, client, first_a, free_address, rcode, run, temp_dir, tern, wait_for, write_atomically,
    Served, SIGNAL_TIMEOUT,
};

const KEY: &str = "keys:\n  - {name: transfer-key, algorithm: hmac-sha256, secret: \"dGhlIHRyYW5zZmVyIHNlY3JldA==\"}\n";

/// The primary's zone, serial `serial`, www at 192.0.2.`www`; REFRESH one
/// hour, RETRY one hour: nothing but a NOTIFY or a command refreshes it.
fn zone(serial: u32, www: u8) -> String {
    format!(
        "$TTL 300\n@ SOA ns hostmaster {serial} 3600 3600 604800 300\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 192.0.2.{www}\n"
    )
}

fn www(address: SocketAddr) -> Option<[u8; 4]> {
    ask(&client(), address, 9, "www.example.net").and_then(|answer| first_a(&answer))
}

fn control(dir: &Path, args: &[&str]) -> (bool, String) {
    let socket = dir.join("tern.sock");
    run(tern().args(args).arg("--socket").arg(socket))
}

fn start_primary(dir: &Path, address: SocketAddr, secondary: SocketAddr) -> Served {
    let config = dir.join("tern.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: ['{address}']\nzones:\n  directory: zones\ncontrol-socket: tern.sock\n\
             state-directory: state\n{KEY}\
             transfer:\n  allow: ['127.0.0.0/8']\n  key: transfer-key\n\
             notify:\n  targets: ['{secondary}']\n  key: transfer-key\n"
        ),
    )
    .unwrap();
    Served::start(dir, &["--config", config.to_str().unwrap()])
}

fn start_secondary(dir: &Path, address: SocketAddr, primary: SocketAddr) -> Served {
    let config = dir.join("tern.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: ['{address}']\ncontrol-socket: tern.sock\nstate-directory: state\n{KEY}\
             zones:\n  secondary:\n    - {{origin: example.net., primaries: ['{primary}'], key: transfer-key}}\n"
        ),
    )
    .unwrap();
    Served::start(dir, &["--config", config.to_str().unwrap()])
}

#[test]
fn a_secondary_transfers_follows_notify_and_keeps_its_copy() {
    let primary_dir = temp_dir("primary");
    let secondary_dir = temp_dir("secondary");
    let zones = primary_dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    let zone_file = zones.join("example.net.zone");
    write_atomically(&zone_file, &zone(1, 80));
    let primary_address = free_address();
    let secondary_address = free_address();
    let primary = start_primary(&primary_dir, primary_address, secondary_address);
    let mut secondary = start_secondary(&secondary_dir, secondary_address, primary_address);

    // The first transfer, at start.
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(secondary_address)
            == Some([192, 0, 2, 80])),
        "the secondary never served the zone:\n{}",
        secondary.log_text()
    );
    let (ok, status) = control(&secondary_dir, &["zone-status", "example.net"]);
    assert!(ok, "{status}");
    // The zone served came by AXFR (nothing else gives a secondary data);
    // its last outcome says so, unless the primary's NOTIFY at its start
    // was taken after that AXFR and its refresh found serial 1 current
    // (seen once in make test-repeat on a machine at load 20).
    assert!(
        status.starts_with("example.net. role secondary serial 1 ")
            && (status.contains("by AXFR from") || status.contains("outcome \"refresh: current\"")),
        "{status}"
    );

    // A change on the primary: reloaded, announced by NOTIFY, transferred.
    write_atomically(&zone_file, &zone(2, 81));
    primary.signal("HUP");
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(secondary_address)
            == Some([192, 0, 2, 81])),
        "the NOTIFY did not bring serial 2:\nprimary:\n{}\nsecondary:\n{}",
        primary.log_text(),
        secondary.log_text()
    );
    assert!(primary.wait_for_log("NOTIFY for example.net. serial 2 to", 1));
    // By IXFR: the primary recorded the difference 1 -> 2 and saved it.
    assert!(
        secondary.wait_for_log("serial 2 received from", 1)
            && secondary
                .log_text()
                .contains(&format!("serial 2 received from {primary_address} by IXFR")),
        "{}",
        secondary.log_text()
    );
    let journal = primary_dir.join("state/journal/example.net.ixfr");
    assert!(
        std::fs::metadata(&journal).is_ok_and(|meta| meta.len() > 0),
        "{}",
        journal.display()
    );
    let (_, status) = control(&primary_dir, &["zone-status"]);
    assert_eq!(status, "example.net. role primary serial 2\n");

    // Commands: for secondary zones only.
    let (ok, reply) = control(&secondary_dir, &["retransfer", "example.net."]);
    assert!(ok && reply.contains("retransfer started"), "{reply}");
    assert!(
        secondary.wait_for_log("serial 2 received from", 2),
        "{}",
        secondary.log_text()
    );
    let (ok, reply) = control(&primary_dir, &["refresh", "example.net"]);
    assert!(!ok && reply.contains("not a secondary zone"), "{reply}");
    // `tern notify`: queued to the targets, and the secondary answers it
    // (the primary logs the answer a second time).
    let (ok, reply) = control(&primary_dir, &["notify", "example.net"]);
    assert!(
        ok && reply.contains("NOTIFY for serial 2 queued"),
        "{reply}"
    );
    assert!(primary.wait_for_log("NOTIFY for example.net. serial 2 to", 2));
    let (ok, reply) = control(&secondary_dir, &["notify", "example.net"]);
    assert!(!ok && reply.contains("no notify.targets"), "{reply}");

    // The copy was saved: with the primary gone, a restarted secondary
    // serves serial 2 at once, and says where it came from.
    drop(primary);
    secondary.signal("TERM");
    assert!(secondary.wait_exit(SIGNAL_TIMEOUT).is_some());
    let saved = secondary_dir.join("state/secondary/example.net.zone");
    assert!(std::fs::read_to_string(&saved)
        .unwrap()
        .contains("192.0.2.81"));
    let restarted = start_secondary(&secondary_dir, secondary_address, primary_address);
    assert_eq!(www(secondary_address), Some([192, 0, 2, 81]));
    let (_, status) = control(&secondary_dir, &["zone-status"]);
    assert!(
        status.starts_with("example.net. role secondary serial 2 ")
            && status.contains("loaded from the state directory"),
        "{status}"
    );
    drop(restarted);
}

#[test]
fn notify_from_anyone_else_is_refused_and_other_zones_are_notauth() {
    let dir = temp_dir("notify-refused");
    let address = free_address();
    // The primary named here is not the test's address.
    let _secondary = start_secondary(&dir, address, "127.0.0.2:53".parse().unwrap());
    let notify = |name: &str| {
        let mut message = crate::util::query(0x4e4e, name, 6);
        message[2] = 0x24; // opcode NOTIFY, AA
        let socket = client();
        socket.send_to(&message, address).unwrap();
        let mut buf = [0u8; 512];
        let (len, _) = socket.recv_from(&mut buf).expect("an answer to the NOTIFY");
        buf[..len].to_vec()
    };
    // From 127.0.0.1, not the zone's primary (127.0.0.2): REFUSED.
    assert_eq!(rcode(&notify("example.net")), 5);
    // A zone that is not ours: NOTAUTH.
    assert_eq!(rcode(&notify("example.org")), 9);
}

#[test]
fn a_zone_past_its_expire_is_servfail_until_its_primary_is_back() {
    let primary_dir = temp_dir("expire-primary");
    let secondary_dir = temp_dir("expire-secondary");
    let zones = primary_dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    // REFRESH and RETRY 2 s, EXPIRE 4 s (the shortest tern honours is 2).
    write_atomically(
        &zones.join("example.net.zone"),
        "$TTL 300\n@ SOA ns hostmaster 1 2 2 4 300\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.80\n",
    );
    let primary_address = free_address();
    let secondary_address = free_address();
    let primary = start_primary(&primary_dir, primary_address, secondary_address);
    let secondary = start_secondary(&secondary_dir, secondary_address, primary_address);
    assert!(wait_for(SIGNAL_TIMEOUT, || www(secondary_address)
        == Some([192, 0, 2, 80])));

    // The primary goes away: after EXPIRE, SERVFAIL (not the old data, not
    // REFUSED).
    drop(primary);
    let servfail =
        || ask(&client(), secondary_address, 11, "www.example.net").is_some_and(|a| rcode(&a) == 2);
    assert!(
        wait_for(SIGNAL_TIMEOUT, servfail),
        "{}",
        secondary.log_text()
    );
    let (_, status) = control(&secondary_dir, &["zone-status"]);
    assert!(
        status.starts_with("example.net. role secondary serial none ")
            && status.contains("expired"),
        "{status}"
    );

    // Back: the next retry brings the zone again.
    let _primary = start_primary(&primary_dir, primary_address, secondary_address);
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(secondary_address)
            == Some([192, 0, 2, 80])),
        "{}",
        secondary.log_text()
    );
}

/// A secondary of a secondary: the middle tern transfers from the primary
/// and serves the zone on (transfer allowed, NOTIFY to the last), so a
/// change on the primary reaches the end of the chain by NOTIFY and IXFR
/// at each link, though every REFRESH is an hour.
#[test]
fn a_chain_of_secondaries_follows_the_primary() {
    let primary_dir = temp_dir("chain-primary");
    let middle_dir = temp_dir("chain-middle");
    let last_dir = temp_dir("chain-last");
    let zones = primary_dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    let zone_file = zones.join("example.net.zone");
    write_atomically(&zone_file, &zone(1, 80));
    let primary_address = free_address();
    let middle_address = free_address();
    let last_address = free_address();
    let primary = start_primary(&primary_dir, primary_address, middle_address);
    let middle_config = middle_dir.join("tern.yaml");
    std::fs::write(
        &middle_config,
        format!(
            "listen: ['{middle_address}']\ncontrol-socket: tern.sock\nstate-directory: state\n{KEY}\
             zones:\n  secondary:\n    - {{origin: example.net., primaries: ['{primary_address}'], key: transfer-key,\n       \
             transfer: {{allow: ['127.0.0.0/8'], key: transfer-key}},\n       \
             notify: {{targets: ['{last_address}'], key: transfer-key}}}}\n"
        ),
    )
    .unwrap();
    let middle = Served::start(&middle_dir, &["--config", middle_config.to_str().unwrap()]);
    let last = start_secondary(&last_dir, last_address, middle_address);
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(last_address)
            == Some([192, 0, 2, 80])),
        "the end of the chain never served the zone:\n{}\n{}",
        middle.log_text(),
        last.log_text()
    );

    write_atomically(&zone_file, &zone(2, 81));
    primary.signal("HUP");
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(last_address)
            == Some([192, 0, 2, 81])),
        "the change did not reach the end of the chain:\nmiddle:\n{}\nlast:\n{}",
        middle.log_text(),
        last.log_text()
    );
    // Incremental at both links.
    assert!(middle
        .log_text()
        .contains(&format!("serial 2 received from {primary_address} by IXFR")));
    assert!(
        last.wait_for_log(
            &format!("serial 2 received from {middle_address} by IXFR"),
            1
        ),
        "{}",
        last.log_text()
    );
}

//----------- A primary whose SOA answers are of no use ----------------------

/// What [`Front`] does with a SOA query over UDP.
#[derive(Clone, Copy, Debug)]
enum SoaAnswer {
    /// REFUSED, unsigned: what Knot answers for a catalog it generates.
    Refused,
    /// NOERROR with the zone's SOA at this serial (ours: "current"), unsigned.
    Unsigned(u32),
    /// The same, signed with the right key name but another secret.
    BadlySigned(u32),
    /// Nothing.
    Silent,
}

/// Stands where the secondary's primary is, as Knot does for a catalog it
/// generates: a UDP query gets the current [`SoaAnswer`] (never a usable
/// one), and each TCP connection (a transfer) is relayed to the real
/// primary octet for octet, so the transfer's TSIG holds.
struct Front {
    answer: std::sync::Arc<std::sync::Mutex<SoaAnswer>>,
    /// Signed SOA queries received.
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    address: SocketAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Front {
    fn start(address: SocketAddr, primary: SocketAddr) -> Front {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex};

        let answer = Arc::new(Mutex::new(SoaAnswer::Refused));
        let asked = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let udp = std::net::UdpSocket::bind(address).unwrap();
        // The read timeout only bounds how late the thread sees `stop`.
        udp.set_read_timeout(Some(std::time::Duration::from_millis(100)))
            .unwrap();
        let tcp = std::net::TcpListener::bind(address).unwrap();
        let udp_thread = {
            let (answer, asked, stop) = (answer.clone(), asked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::SeqCst) {
                    let Ok((len, peer)) = udp.recv_from(&mut buf) else {
                        continue;
                    };
                    let query = &buf[..len];
                    let signed = tern_xfr::tsig::TsigRecord::find(query).is_ok_and(|r| r.is_some());
                    let Some(end) = question_end(query) else {
                        continue;
                    };
                    if !signed || query[end - 4..end - 2] != [0, 6] {
                        continue;
                    }
                    asked.fetch_add(1, Ordering::SeqCst);
                    let mode = *answer.lock().unwrap();
                    if let Some(reply) = soa_answer(&query[..end], mode) {
                        let _ = udp.send_to(&reply, peer);
                    }
                }
            })
        };
        let tcp_thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for client in tcp.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(client) = client {
                        std::thread::spawn(move || relay(client, primary));
                    }
                }
            })
        };
        Front {
            answer,
            asked,
            stop,
            address,
            threads: vec![udp_thread, tcp_thread],
        }
    }

    fn set(&self, answer: SoaAnswer) {
        *self.answer.lock().unwrap() = answer;
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop.
        let _ = std::net::TcpStream::connect(self.address);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The offset after the question of a query with one.
fn question_end(query: &[u8]) -> Option<usize> {
    if query.len() < 12 || query[4..6] != [0, 1] {
        return None;
    }
    let mut at = 12;
    // A name has at most 127 labels.
    for _ in 0..128 {
        let len = usize::from(*query.get(at)?);
        if len == 0 {
            return Some(at + 5).filter(|&end| end <= query.len());
        }
        if len > 63 {
            return None;
        }
        at += 1 + len;
    }
    None
}

/// The answer to a SOA query (its header and question) in `mode`.
fn soa_answer(question: &[u8], mode: SoaAnswer) -> Option<Vec<u8>> {
    let mut reply = question.to_vec();
    reply[2] = 0x80 | (question[2] & 0x01); // QR, RD as asked
    reply[3] = 0;
    reply[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 0]);
    let serial = match mode {
        SoaAnswer::Silent => return None,
        SoaAnswer::Refused => {
            reply[3] = 5;
            return Some(reply);
        }
        SoaAnswer::Unsigned(serial) | SoaAnswer::BadlySigned(serial) => serial,
    };
    reply[2] |= 0x04; // AA
    reply[7] = 1;
    // The apex (a pointer to the question's name), SOA IN, TTL 300, RDATA:
    // root MNAME and RNAME, then serial and the zone's timers.
    reply.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 1, 44, 0, 22, 0, 0]);
    for field in [serial, 3600, 3600, 604_800, 300] {
        reply.extend_from_slice(&field.to_be_bytes());
    }
    if let SoaAnswer::BadlySigned(_) = mode {
        let name = tern_wire::name::Name::from_wire(b"\x0ctransfer-key\x00").unwrap();
        let key = tern_xfr::tsig::Key::new(
            name,
            tern_xfr::tsig::Algorithm::HmacSha256,
            b"not the transfer secret",
        );
        let mut session = tern_xfr::tsig::Session::new(&key);
        let len = reply.len();
        reply.resize(len + session.record_len(), 0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let signed = session.sign(&mut reply, len, now).unwrap();
        reply.truncate(signed);
    }
    Some(reply)
}

/// Copies a TCP connection both ways between `client` and `primary` until
/// either side closes it.
fn relay(client: std::net::TcpStream, primary: SocketAddr) {
    use std::net::{Shutdown, TcpStream};

    let Ok(server) = TcpStream::connect(primary) else {
        return;
    };
    // No transfer of this test idles this long.
    for stream in [&client, &server] {
        let _ = stream.set_read_timeout(Some(SIGNAL_TIMEOUT));
    }
    let (Ok(mut client_in), Ok(mut server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_in, &mut server_out);
        let _ = server_out.shutdown(Shutdown::Write);
    });
    let (mut server_in, mut client_out) = (server, client);
    let _ = std::io::copy(&mut server_in, &mut client_out);
    let _ = client_out.shutdown(Shutdown::Write);
    let _ = upstream.join();
}

/// Knot answers no query for a catalog it generates (REFUSED, unsigned),
/// and a SOA answer can be lost, unsigned or forged: none of them may stop
/// a secondary with a key from following its primary, nor tell it the zone
/// is current. Each change here is announced by NOTIFY; each SOA query
/// gets one kind of useless answer, and the secondary must go on to the
/// (signed) IXFR and serve the new version.
#[test]
fn a_secondary_follows_a_primary_whose_soa_answers_are_of_no_use() {
    let primary_dir = temp_dir("soa-primary");
    let secondary_dir = temp_dir("soa-secondary");
    let zones = primary_dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    let zone_file = zones.join("example.net.zone");
    write_atomically(&zone_file, &zone(1, 80));
    let primary_address = free_address();
    let front_address = free_address();
    let secondary_address = free_address();
    let primary = start_primary(&primary_dir, primary_address, secondary_address);
    let front = Front::start(front_address, primary_address);
    let secondary = start_secondary(&secondary_dir, secondary_address, front_address);
    assert!(
        wait_for(SIGNAL_TIMEOUT, || www(secondary_address)
            == Some([192, 0, 2, 80])),
        "the secondary never served the zone:\n{}",
        secondary.log_text()
    );

    let cases = [
        (2, SoaAnswer::Refused, "rcode 5"),
        (3, SoaAnswer::Unsigned(2), "message not signed"),
        (4, SoaAnswer::BadlySigned(3), "BADSIG"),
        (5, SoaAnswer::Silent, "no answer"),
    ];
    for (serial, answer, reason) in cases {
        front.set(answer);
        let asked = front.asked();
        let skipped = secondary.log_text().matches("asking by IXFR").count();
        write_atomically(&zone_file, &zone(serial, 80 + serial as u8));
        primary.signal("HUP");
        // A silent primary costs the SOA query its whole timeout (10 s).
        let wait = SIGNAL_TIMEOUT * 3;
        assert!(
            wait_for(wait, || www(secondary_address)
                == Some([192, 0, 2, 80 + serial as u8])),
            "{answer:?}: serial {serial} never served:\nprimary:\n{}\nsecondary:\n{}",
            primary.log_text(),
            secondary.log_text()
        );
        assert!(front.asked() > asked, "{answer:?}: no SOA query was asked");
        let log = secondary.log_text();
        assert!(
            log.contains(&format!(
                "serial {serial} received from {front_address} by IXFR"
            )) && log.matches("asking by IXFR").count() > skipped
                && log.contains(reason),
            "{answer:?}:\n{log}"
        );
    }
}
