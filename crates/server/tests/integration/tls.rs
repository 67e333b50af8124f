//! DNS over TLS on `tls.listen` (crates/server/src/tls.rs), with a rustls
//! client trusting the server's self-signed certificate: pipelined answers
//! equal TCP's, padded answers to padded queries over TLS only, a
//! handshake never finished closed by the initial timeout and counted,
//! ALPN "dot" agreed while a client without ALPN is served too, and zone
//! transfers over TLS with `tls-only` and mutual TLS.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tern_server::tls::config::{self, Certificates, Identity};
use tern_server::{Driver, ServerConfig, TcpConfig, TlsConfig};

use crate::{closed_by_server, free_addr, query, start_with, tcp_connect, Running};

/// A server with a TLS listener (returned) beside its plain one, a
/// 300 ms initial timeout, and a client configuration that trusts its
/// certificate.
fn start(driver: Driver) -> (Running, SocketAddr, Arc<rustls::ClientConfig>) {
    let identity = Identity::self_signed(None, "dot.example").unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(identity.key.cert[0].clone()).unwrap();
    let clients = config::ClientRoots::new(None).unwrap();
    let server = config::server_config(
        Certificates::new(identity),
        &[config::ALPN_DOT],
        Arc::clone(&clients),
    )
    .unwrap();
    let tls_addr = free_addr("127.0.0.1").expect("a free loopback port");
    let (running, addr) = start_with(driver, |config: &mut ServerConfig| {
        config.tls = Some(TlsConfig {
            listen: vec![tls_addr],
            server: Arc::clone(&server),
            clients: Arc::clone(&clients),
        });
        config.tcp = TcpConfig {
            initial_timeout: Duration::from_millis(300),
            ..TcpConfig::default()
        };
    });
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let running = Running {
        server: Some(running),
        addr,
    };
    (running, tls_addr, Arc::new(client))
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect(addr: SocketAddr, client: &Arc<rustls::ClientConfig>, alpn: bool) -> TlsStream {
    let mut client = (**client).clone();
    if alpn {
        client.alpn_protocols = vec![b"dot".to_vec()];
    }
    let name = ServerName::try_from("dot.example").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
    rustls::StreamOwned::new(connection, tcp_connect(addr))
}

/// Sends every message framed at once, then reads as many answers.
fn pipelined(stream: &mut impl ReadWrite, messages: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for message in messages {
        out.extend_from_slice(&(message.len() as u16).to_be_bytes());
        out.extend_from_slice(message);
    }
    stream.write_all(&out).unwrap();
    stream.flush().unwrap();
    let mut answers = Vec::new();
    for _ in messages {
        let mut length = [0; 2];
        stream.read_exact(&mut length).unwrap();
        let mut answer = vec![0; usize::from(u16::from_be_bytes(length))];
        stream.read_exact(&mut answer).unwrap();
        answers.push(answer);
    }
    answers.sort();
    answers
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A query with an EDNS Padding option of 8 octets.
fn padded_query(id: u16) -> Vec<u8> {
    let mut message = query(id, "www.example.com.", 1, Some(1232));
    let rdlen_at = message.len() - 2;
    message[rdlen_at..].copy_from_slice(&12u16.to_be_bytes());
    message.extend_from_slice(&[0, 12, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
    message
}

fn has_padding(answer: &[u8]) -> bool {
    let view = tern_wire::parse::MessageView::parse(answer).unwrap();
    let edns = view.edns().unwrap().expect("an OPT");
    edns.options().any(|option| option.unwrap().0 == 12)
}

#[test]
fn tls_answers_equal_tcp_and_pad_padded_queries() {
    for driver in crate::DRIVERS {
        let (running, tls_addr, client) = start(driver);
        let messages: Vec<Vec<u8>> = (0..40u16)
            .map(|id| {
                let name = [
                    "www.example.com.",
                    "example.com.",
                    "nowhere.example.com.",
                    "org.",
                ][usize::from(id % 4)];
                query(
                    id,
                    name,
                    [1, 6, 28][usize::from(id % 3)],
                    (id % 2 == 0).then_some(1232),
                )
            })
            .collect();
        let mut tcp = tcp_connect(running.addr);
        let over_tcp = pipelined(&mut tcp, &messages);
        let mut tls = connect(tls_addr, &client, true);
        let over_tls = pipelined(&mut tls, &messages);
        assert_eq!(over_tls, over_tcp, "{driver:?}");
        assert_eq!(tls.conn.alpn_protocol(), Some(&b"dot"[..]));

        let padded = pipelined(&mut tls, &[padded_query(77)]).remove(0);
        assert_eq!(
            padded.len() % tern_server::tls::padding::PADDING_BLOCK,
            0,
            "{driver:?}"
        );
        assert!(has_padding(&padded));
        let plain = pipelined(&mut tcp, &[padded_query(77)]).remove(0);
        assert!(!has_padding(&plain), "never over TCP");

        // No ALPN: served all the same.
        let mut bare = connect(tls_addr, &client, false);
        assert_eq!(
            pipelined(&mut bare, &messages[..4]),
            pipelined(&mut tcp, &messages[..4])
        );
        assert_eq!(bare.conn.alpn_protocol(), None);
        let stats = running.stats();
        assert_eq!(stats.tls.accepted, 2, "{driver:?}: {:?}", stats.tls);
        assert_eq!(stats.tls.handshakes[0][0], 2, "two TLS 1.3 handshakes");
        assert_eq!(stats.queries_by_transport[6], 45, "TLS over IPv4");
    }
}

#[test]
fn a_handshake_never_finished_is_closed_and_counted() {
    for driver in crate::DRIVERS {
        let (running, tls_addr, client) = start(driver);
        let mut silent = tcp_connect(tls_addr);
        let mut partial = tcp_connect(tls_addr);
        partial.write_all(&[0x16, 3, 1, 2, 0, 1]).unwrap();
        assert!(closed_by_server(&mut silent), "{driver:?}");
        assert!(closed_by_server(&mut partial), "{driver:?}");
        // Counted before the close, which the reads above saw.
        let stats = running.stats();
        assert_eq!(
            stats.tls.handshakes[2].iter().sum::<u64>(),
            2,
            "{:?}",
            stats.tls
        );
        // And the listener still serves.
        let mut tls = connect(tls_addr, &client, true);
        let answer = pipelined(&mut tls, &[query(1, "www.example.com.", 1, None)]);
        assert_eq!(answer.len(), 1);
    }
}

/// A CA and a client certificate it signed, as rustls takes them.
fn client_ca() -> (
    rustls::RootCertStore,
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client = rcgen::CertificateParams::new(vec!["secondary.example".into()]).unwrap();
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = client.signed_by(&client_key, &ca, &ca_key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(client_key.serialize_der()).unwrap();
    (roots, vec![client.der().clone()], key)
}

/// Reads one framed message.
fn read_frame(stream: &mut impl Read) -> Vec<u8> {
    let mut length = [0; 2];
    stream.read_exact(&mut length).unwrap();
    let mut message = vec![0; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut message).unwrap();
    message
}

/// Sends an AXFR of example.com. and reads the answer: the rcode of the
/// first message, and the number of SOA records up to the second (2 for
/// a whole zone).
fn axfr(stream: &mut impl ReadWrite, id: u16) -> (u8, usize) {
    let mut request = query(id, "example.com.", 252, None);
    request[2] &= !0x01;
    let mut framed = (request.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&request);
    stream.write_all(&framed).unwrap();
    stream.flush().unwrap();
    let mut soas = 0;
    // The test zone's transfer takes a few dozen messages.
    for _ in 0..200 {
        let message = read_frame(stream);
        let view = tern_wire::parse::MessageView::parse(&message).unwrap();
        let rcode = view.header().rcode_bits();
        if rcode != 0 {
            return (rcode, soas);
        }
        for record in view.section(tern_wire::parse::Section::Answer) {
            soas += usize::from(record.unwrap().rtype.0 == 6);
        }
        if soas == 2 {
            return (0, soas);
        }
    }
    panic!("no end of the transfer");
}

/// XoT out (RFC 9103): with `tls-only` and a client CA, an AXFR over TLS
/// is served to a client with a certificate from that CA, REFUSED to one
/// without (whose queries are still answered) and over plain TCP; a client
/// certificate from another CA fails the handshake; each counted by
/// transport and reason. Removing the CA (a reload) lets the client
/// without a certificate transfer.
#[test]
fn transfers_over_tls_need_tls_only_and_the_client_ca() {
    const REFUSED: u8 = 5;
    let identity = Identity::self_signed(None, "dot.example").unwrap();
    let mut server_roots = rustls::RootCertStore::empty();
    server_roots.add(identity.key.cert[0].clone()).unwrap();
    let server_roots_copy = server_roots.clone();
    let (roots, chain, key) = client_ca();
    let clients = config::ClientRoots::new(Some(roots)).unwrap();
    let server = config::server_config(
        Certificates::new(identity),
        &[config::ALPN_DOT],
        Arc::clone(&clients),
    )
    .unwrap();
    let tls_addr = free_addr("127.0.0.1").expect("a free loopback port");
    let (server_running, addr) = start_with(Driver::Legacy, |config: &mut ServerConfig| {
        config.tls = Some(TlsConfig {
            listen: vec![tls_addr],
            server: Arc::clone(&server),
            clients: Arc::clone(&clients),
        });
        config.transfer = tern_server::TransferConfig {
            allow: vec![tern_server::Cidr::parse("127.0.0.0/8").unwrap()],
            tls_only: true,
            ..Default::default()
        };
    });
    let running = Running {
        server: Some(server_running),
        addr,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(server_roots);
    let anonymous = Arc::new(builder.clone().with_no_client_auth());
    let certified = Arc::new(builder.with_client_auth_cert(chain, key).unwrap());

    // Over plain TCP: REFUSED (tls-only).
    let mut tcp = tcp_connect(running.addr);
    assert_eq!(axfr(&mut tcp, 1), (REFUSED, 0));
    // Over TLS without a certificate: the query answered, the AXFR not.
    let mut bare = connect(tls_addr, &anonymous, true);
    let answer = pipelined(&mut bare, &[query(2, "example.com.", 6, None)]).remove(0);
    assert_eq!(answer[3] & 0x0f, 0, "NOERROR");
    assert_eq!(axfr(&mut bare, 3), (REFUSED, 0));
    // With one from the CA: the whole zone.
    let mut with_cert = connect(tls_addr, &certified, true);
    assert_eq!(axfr(&mut with_cert, 4), (0, 2));
    // A certificate from another CA: the handshake fails (seen by the
    // client at its first read, TLS 1.3 sending the certificate last).
    let (_, stranger_chain, stranger_key) = client_ca();
    let stranger = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(server_roots_copy)
        .with_client_auth_cert(stranger_chain, stranger_key)
        .unwrap(),
    );
    let mut refused = connect(tls_addr, &stranger, true);
    let request = query(6, "example.com.", 6, None);
    let mut framed = (request.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&request);
    let _ = refused.write_all(&framed).and_then(|()| refused.flush());
    let mut octet = [0; 1];
    assert!(
        !matches!(refused.read(&mut octet), Ok(1)),
        "a certificate from another CA was taken"
    );
    let stats = running.stats();
    let out = &stats.transfers_out;
    let (tcp_slot, tls_slot) = (1, 2);
    let (started, completed, refused) = (0, 1, 3);
    assert_eq!(out.outcomes[tcp_slot][refused], 1, "{out:?}");
    assert_eq!(out.outcomes[tls_slot][refused], 1, "{out:?}");
    assert_eq!(out.outcomes[tls_slot][started], 1, "{out:?}");
    assert_eq!(out.outcomes[tls_slot][completed], 1, "{out:?}");
    assert_eq!(out.refusals[0], 1, "tls-only: {out:?}");
    assert_eq!(out.refusals[1], 1, "client-certificate: {out:?}");
    let failed: u64 = stats.tls.handshakes[1].iter().sum();
    assert_eq!(failed, 1, "the stranger's handshake: {:?}", stats.tls);

    // The CA removed (as a reload does): a new connection without a
    // certificate transfers.
    clients.replace(None).unwrap();
    let mut after = connect(tls_addr, &anonymous, true);
    assert_eq!(axfr(&mut after, 5), (0, 2));
}

/// A TLS 1.3 KeyUpdate flood after the handshake: rustls refuses it past
/// its limit, the connection is closed and counted as a protocol error,
/// and UDP is answered meanwhile and after.
#[test]
fn a_key_update_flood_is_closed_and_counted() {
    let (running, tls_addr, client) = start(Driver::Legacy);
    let mut tls = connect(tls_addr, &client, true);
    let answer = pipelined(&mut tls, &[query(1, "example.com.", 6, None)]).remove(0);
    assert_eq!(answer[3] & 0x0f, 0);
    // Each refresh queues one KeyUpdate (update requested); rustls allows
    // 32 in a row without application data between them.
    for _ in 0..100 {
        if tls.conn.refresh_traffic_keys().is_err() {
            break;
        }
        if tls.conn.write_tls(&mut tls.sock).is_err() {
            break;
        }
    }
    let udp = crate::udp_exchange(running.addr, &query(2, "example.com.", 6, None));
    assert!(udp.is_some(), "UDP answered during the flood");
    // The server's KeyUpdates and its alert, then the end of the stream.
    let mut drained = 0;
    let mut buf = [0u8; 4096];
    let closed = loop {
        match tls.sock.read(&mut buf) {
            Ok(0) => break true,
            Ok(read) if drained < 1 << 20 => drained += read,
            Ok(_) => break false,
            Err(err) => {
                break !matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    };
    assert!(closed, "the flooding connection closed");
    let stats = running.stats();
    assert_eq!(stats.tls.protocol_errors, 1, "{:?}", stats.tls);
    let udp = crate::udp_exchange(running.addr, &query(3, "example.com.", 6, None));
    assert!(udp.is_some(), "UDP answered after the flood");
}

/// Over TLS too, a query whose record is in the socket when the server
/// has answered what one read gave is answered into the same write: one
/// record, one segment, for both answers (issue 26). The first query's
/// record is longer than two of the server's ciphertext reads (tls.rs
/// `CIPHER_READ`, 2 KiB), so a read ends where it ends, whatever the
/// reader's state.
#[test]
fn tls_a_query_already_sent_is_answered_in_the_same_record() {
    use crate::tcp::{data_segments_in, framed, query_of_size};
    for driver in crate::DRIVERS {
        let (_running, tls_addr, client) = start(driver);
        let mut tls = connect(tls_addr, &client, true);
        // The handshake, the session tickets and a first answer.
        pipelined(&mut tls, &[query(0, "www.example.com.", 1, None)]);
        let before = data_segments_in(&tls.sock);
        // Two records in one write.
        let first = framed(&[&query_of_size(1, 5000)]);
        let second = framed(&[&query(2, "www.example.com.", 1, None)]);
        for record in [&first, &second] {
            tls.conn.writer().write_all(record).unwrap();
        }
        let mut ciphertext = Vec::new();
        while tls.conn.wants_write() {
            tls.conn.write_tls(&mut ciphertext).unwrap();
        }
        assert!(ciphertext.len() > 5000 + 50, "two records");
        tls.sock.write_all(&ciphertext).unwrap();
        for id in [1, 2] {
            let answer = read_frame(&mut tls);
            assert_eq!(crate::summary(&answer), (id, 0, false, 1), "{driver:?}");
        }
        assert_eq!(
            data_segments_in(&tls.sock) - before,
            1,
            "{driver:?}: both answers in one segment"
        );
    }
}
