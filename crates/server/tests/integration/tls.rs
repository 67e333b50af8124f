//! DNS over TLS on `tls.listen` (crates/server/src/tls.rs), with a rustls
//! client trusting the server's self-signed certificate: pipelined answers
//! equal TCP's, padded answers to padded queries over TLS only, a
//! handshake never finished closed by the initial timeout and counted, and
//! ALPN "dot" agreed while a client without ALPN is served too.

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
    let server =
        config::server_config(Certificates::new(identity), &[config::ALPN_DOT], None).unwrap();
    let tls_addr = free_addr("127.0.0.1").expect("a free loopback port");
    let (running, addr) = start_with(driver, |config: &mut ServerConfig| {
        config.tls = Some(TlsConfig {
            listen: vec![tls_addr],
            server: Arc::clone(&server),
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
