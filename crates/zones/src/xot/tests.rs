//! The pin's form, and each way of authenticating a primary against a
//! rustls server on loopback with rcgen's certificates.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::*;

const TIMEOUT: Duration = Duration::from_secs(5);

#[test]
fn pins_parse_in_knots_form() {
    let pin = [7u8; 32];
    let text = pin_text(&pin);
    assert!(text.starts_with("sha256/"));
    assert_eq!(text.len(), 7 + 44);
    assert_eq!(parse_pin(&text), Ok(pin));
    // Not the form: no prefix, another hash, bad base64, the wrong length.
    let bare = text.trim_start_matches("sha256/");
    assert!(parse_pin(bare).unwrap_err().contains("sha256/"));
    assert!(parse_pin(&format!("sha1/{bare}")).is_err());
    assert!(parse_pin("sha256/not*base64")
        .unwrap_err()
        .contains("base64"));
    let short = format!("sha256/{}", data_encoding::BASE64.encode(&[1u8; 20]));
    assert!(parse_pin(&short).unwrap_err().contains("32 octets"));
    assert!(parse_pin("sha256/").is_err());
}

/// A certificate's pin is the SHA-256 of its key's SubjectPublicKeyInfo,
/// as `openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256`
/// computes it.
#[test]
fn a_certificates_pin_is_its_spki_hash() {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["primary.test".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let expected: [u8; 32] = sha2::Sha256::digest(key.public_key_der()).into();
    assert_eq!(certificate_pin(cert.der()), Ok(expected));
    assert!(certificate_pin(b"not a certificate").is_err());
}

//----------- A TLS server on loopback ----------------------------------------

/// A certificate authority and certificates it signs.
struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl Ca {
    fn new() -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca { key, cert }
    }

    fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for `names`, valid for years from now or, if
    /// `expired`, for a day in 2020.
    fn issue(
        &self,
        names: &[&str],
        expired: bool,
    ) -> (CertificateDer<'static>, PrivateKeyDer<'static>, [u8; 32]) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 1, 2);
        }
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let pin = sha2::Sha256::digest(key.public_key_der()).into();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), key, pin)
    }
}

/// Serves one TLS connection on loopback with `cert`: reads a line of up
/// to 16 octets and echoes it. Its join handle says whether its side of
/// the handshake succeeded.
fn tls_server(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> (SocketAddr, JoinHandle<Result<(), String>>) {
    let config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
    let mut config = config;
    config.alpn_protocols = vec![b"dot".to_vec()];
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        let (tcp, _) = listener.accept().map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
        let connection = ServerConnection::new(Arc::new(config)).map_err(|e| e.to_string())?;
        let mut stream = StreamOwned::new(connection, tcp);
        let mut buf = [0u8; 16];
        let len = stream.read(&mut buf).map_err(|e| e.to_string())?;
        assert_eq!(stream.conn.alpn_protocol(), Some(&b"dot"[..]));
        stream.write_all(&buf[..len]).map_err(|e| e.to_string())?;
        stream.flush().map_err(|e| e.to_string())?;
        Ok(())
    });
    (address, thread)
}

fn pinned(pin: [u8; 32]) -> XotConfig {
    XotConfig {
        name: None,
        auth: XotAuth::Pin(pin),
        fallback_port: None,
    }
}

fn trusting(ca: &Ca, name: Option<&str>) -> XotConfig {
    let dir = std::env::temp_dir().join(format!(
        "tern-xot-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ca.pem");
    std::fs::write(&path, ca.pem()).unwrap();
    let anchors = load_ca(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    XotConfig {
        name: name.map(str::to_string),
        auth: XotAuth::Ca { path, anchors },
        fallback_port: None,
    }
}

/// Connects with `config`; on success, a message goes through.
fn attempt(config: &XotConfig, address: SocketAddr) -> Result<(), ConnectError> {
    let mut stream = connect(config, address, TIMEOUT)?;
    stream.write_all(b"hello").unwrap();
    let mut buf = [0u8; 5];
    stream.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    close(stream);
    Ok(())
}

#[test]
fn the_pinned_key_is_accepted() {
    let ca = Ca::new();
    let (cert, key, pin) = ca.issue(&["primary.test"], false);
    let (address, server) = tls_server(cert, key);
    attempt(&pinned(pin), address).unwrap();
    server.join().unwrap().unwrap();
}

/// The pin trusts the key, not the certificate: an expired one with the
/// pinned key and no name of ours is accepted (DANE-EE).
#[test]
fn a_pin_ignores_the_certificates_dates_and_names() {
    let ca = Ca::new();
    let (cert, key, pin) = ca.issue(&["elsewhere.test"], true);
    let (address, server) = tls_server(cert, key);
    let mut config = pinned(pin);
    config.name = Some("primary.test".into());
    attempt(&config, address).unwrap();
    server.join().unwrap().unwrap();
}

#[test]
fn another_key_than_the_pinned_one_fails() {
    let ca = Ca::new();
    let (cert, key, pin) = ca.issue(&["primary.test"], false);
    let (address, server) = tls_server(cert, key);
    let mut wrong = pin;
    wrong[0] ^= 1;
    let err = attempt(&pinned(wrong), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Authentication, "{err}");
    assert!(err.reason.contains(&pin_text(&pin)), "{err}");
    assert!(server.join().unwrap().is_err());
}

#[test]
fn a_certificate_from_the_ca_for_the_name_is_accepted() {
    let ca = Ca::new();
    let (cert, key, _) = ca.issue(&["primary.test"], false);
    let (address, server) = tls_server(cert, key);
    attempt(&trusting(&ca, Some("primary.test")), address).unwrap();
    server.join().unwrap().unwrap();
}

#[test]
fn without_a_name_the_address_is_checked() {
    let ca = Ca::new();
    let (cert, key, _) = ca.issue(&["127.0.0.1"], false);
    let (address, server) = tls_server(cert, key);
    attempt(&trusting(&ca, None), address).unwrap();
    server.join().unwrap().unwrap();
    let (cert, key, _) = ca.issue(&["primary.test"], false);
    let (address, server) = tls_server(cert, key);
    let err = attempt(&trusting(&ca, None), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Authentication, "{err}");
    assert!(server.join().unwrap().is_err());
}

#[test]
fn another_name_fails() {
    let ca = Ca::new();
    let (cert, key, _) = ca.issue(&["other.test"], false);
    let (address, server) = tls_server(cert, key);
    let err = attempt(&trusting(&ca, Some("primary.test")), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Authentication, "{err}");
    assert!(err.reason.contains("not valid for name"), "{err}");
    assert!(server.join().unwrap().is_err());
}

#[test]
fn an_expired_certificate_fails() {
    let ca = Ca::new();
    let (cert, key, _) = ca.issue(&["primary.test"], true);
    let (address, server) = tls_server(cert, key);
    let err = attempt(&trusting(&ca, Some("primary.test")), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Authentication, "{err}");
    assert!(err.reason.contains("expired"), "{err}");
    assert!(server.join().unwrap().is_err());
}

#[test]
fn another_cas_certificate_fails() {
    let (ours, theirs) = (Ca::new(), Ca::new());
    let (cert, key, _) = theirs.issue(&["primary.test"], false);
    let (address, server) = tls_server(cert, key);
    let err = attempt(&trusting(&ours, Some("primary.test")), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Authentication, "{err}");
    assert!(server.join().unwrap().is_err());
}

/// A server that does not speak TLS (plain DNS over TCP closes on a
/// ClientHello it takes for a message of 5635 octets, or waits for it)
/// fails the handshake, not the authentication.
#[test]
fn a_server_without_tls_fails_the_handshake() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        let mut prefix = [0u8; 2];
        tcp.read_exact(&mut prefix).unwrap();
        // A DNS answer of sorts, then the connection is closed.
        tcp.write_all(&[0, 2, 0xab, 0xcd]).unwrap();
    });
    let err = attempt(&pinned([0; 32]), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Handshake, "{err}");
    server.join().unwrap();
    // Nobody listening at all.
    drop(TcpListener::bind(address).unwrap());
    let err = attempt(&pinned([0; 32]), address).unwrap_err();
    assert_eq!(err.outcome, XotOutcome::Connect, "{err}");
}

#[test]
fn ca_files_are_checked_when_read() {
    let dir = std::env::temp_dir().join(format!("tern-xot-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "no certificates here\n").unwrap();
    assert!(load_ca(&empty).unwrap_err().contains("no PEM certificate"));
    assert!(load_ca(&dir.join("missing.pem")).is_err());
    let two = dir.join("two.pem");
    std::fs::write(&two, Ca::new().pem() + &Ca::new().pem()).unwrap();
    assert_eq!(load_ca(&two).unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn outcomes_are_counted_apart() {
    let counters = XotCounters {
        counts: [const { AtomicU64::new(0) }; XotOutcome::ALL.len()],
    };
    counters.count(XotOutcome::Authentication);
    counters.count(XotOutcome::Authentication);
    counters.count(XotOutcome::Received);
    let snapshot = counters.snapshot();
    for (outcome, count) in snapshot {
        let expected = match outcome {
            XotOutcome::Authentication => 2,
            XotOutcome::Received => 1,
            _ => 0,
        };
        assert_eq!(count, expected, "{}", outcome.label());
    }
}
