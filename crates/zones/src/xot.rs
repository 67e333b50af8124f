//! Zone transfers in over TLS (XoT, RFC 9103): the TLS client the refresh
//! thread uses for a secondary zone configured with `tls:`.
//!
//! The SOA query and the AXFR/IXFR then go over one TLS connection (TLS
//! 1.3 or 1.2, ALPN "dot", rustls with ring's primitives), after the
//! primary is authenticated strictly (RFC 9103 section 9.3):
//!
//! - `pin`: the SHA-256 of the certificate's SubjectPublicKeyInfo, written
//!   `sha256/BASE64` as Knot's `cert-key` and kdig's `+tls-pin` take it.
//!   The key is what is trusted, so the certificate's issuer, dates and
//!   names are not checked (DANE-EE, RFC 7671 section 5.1); the handshake's
//!   signature is, with that key.
//! - `ca`: the certificate chains to one of the PEM file's trust anchors,
//!   is valid now, and names `name` (or, without `name`, the primary's
//!   address) as RFC 6125 and rustls's WebPKI verifier check it.
//!
//! Any failure (no connection, a server that does not speak TLS, a
//! certificate not accepted, a handshake that does not finish within
//! [`HANDSHAKE_TIMEOUT`]) fails the attempt; plain TCP is used only when
//! `fallback: plain` says so. Each attempt is counted in [`XOT_IN`].
//!
//! Bounds: a connection's reads and writes have the refresh thread's I/O
//! timeout, its handshake [`HANDSHAKE_TIMEOUT`] in all; rustls bounds the
//! handshake's messages.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme, StreamOwned,
};
use sha2::Digest as _;

/// How long the TLS handshake may take in all, however the server
/// trickles it.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most trust anchors a `ca` file may hold.
pub const MAX_CA_CERTIFICATES: usize = 256;

/// The largest `ca` file read.
pub const MAX_CA_FILE: u64 = 1 << 20;

/// The ALPN protocol of DNS over TLS, which XoT uses (RFC 9103 section 7.1).
pub const ALPN_DOT: &[u8] = b"dot";

/// The prefix of a pin's text.
const PIN_PREFIX: &str = "sha256/";

//----------- Configuration --------------------------------------------------

/// How a primary is reached over TLS (`tls:` of a `zones.secondary` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XotConfig {
    /// The primary's name: sent as SNI, and checked against the
    /// certificate with [`XotAuth::Ca`].
    pub name: Option<String>,
    /// How the primary's certificate is accepted.
    pub auth: XotAuth,
    /// With `fallback: plain`: the port asked over plain DNS (UDP and TCP),
    /// on the same address, when the TLS attempt fails. `None`: never.
    pub fallback_port: Option<u16>,
}

/// How the primary's certificate is accepted.
#[derive(Clone, PartialEq, Eq)]
pub enum XotAuth {
    /// The SHA-256 of its SubjectPublicKeyInfo.
    Pin([u8; 32]),
    /// It chains to one of these trust anchors (DER), read from `path`.
    Ca {
        /// The PEM file they were read from (for the log).
        path: PathBuf,
        /// The certificates, DER.
        anchors: Vec<Vec<u8>>,
    },
}

impl fmt::Debug for XotAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XotAuth::Pin(pin) => write!(f, "Pin({})", pin_text(pin)),
            XotAuth::Ca { path, anchors } => {
                write!(f, "Ca({}, {} anchors)", path.display(), anchors.len())
            }
        }
    }
}

/// Reads a pin written `sha256/BASE64` (44 characters of padded base64).
pub fn parse_pin(text: &str) -> Result<[u8; 32], String> {
    let Some(encoded) = text.strip_prefix(PIN_PREFIX) else {
        return Err(format!(
            "a pin is written {PIN_PREFIX}BASE64 (the SHA-256 of the certificate's \
             SubjectPublicKeyInfo), not {text:?}"
        ));
    };
    let decoded = data_encoding::BASE64
        .decode(encoded.as_bytes())
        .map_err(|e| format!("the pin's base64: {e}"))?;
    <[u8; 32]>::try_from(decoded.as_slice())
        .map_err(|_| format!("a SHA-256 pin has 32 octets, not {}", decoded.len()))
}

/// A pin's text: `sha256/BASE64`.
pub fn pin_text(pin: &[u8; 32]) -> String {
    format!("{PIN_PREFIX}{}", data_encoding::BASE64.encode(pin))
}

/// The pin of a certificate (DER): the SHA-256 of its
/// SubjectPublicKeyInfo. Fails if the certificate does not parse.
pub fn certificate_pin(certificate: &[u8]) -> Result<[u8; 32], String> {
    let der = CertificateDer::from(certificate);
    let parsed = webpki::EndEntityCert::try_from(&der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    let spki = parsed.subject_public_key_info();
    Ok(sha2::Sha256::digest(spki.as_ref()).into())
}

/// Reads the trust anchors of a `ca` file: at least one certificate, at
/// most [`MAX_CA_CERTIFICATES`], each one rustls accepts as an anchor.
pub fn load_ca(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let context = |e: &dyn fmt::Display| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| context(&e))?;
    let mut text = Vec::new();
    file.take(MAX_CA_FILE + 1)
        .read_to_end(&mut text)
        .map_err(|e| context(&e))?;
    if text.len() as u64 > MAX_CA_FILE {
        return Err(context(&format!("larger than {MAX_CA_FILE} octets")));
    }
    let mut anchors = Vec::new();
    for certificate in CertificateDer::pem_slice_iter(&text) {
        let certificate = certificate.map_err(|e| context(&e))?;
        if anchors.len() == MAX_CA_CERTIFICATES {
            return Err(context(&format!(
                "more than {MAX_CA_CERTIFICATES} certificates"
            )));
        }
        anchors.push(certificate.to_vec());
    }
    if anchors.is_empty() {
        return Err(context(&"no PEM certificate in it"));
    }
    // Each one must make a trust anchor now, not at the first transfer.
    roots(&anchors).map_err(|e| context(&e))?;
    Ok(anchors)
}

/// The root store of `anchors`.
fn roots(anchors: &[Vec<u8>]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for anchor in anchors {
        roots
            .add(CertificateDer::from(anchor.as_slice()))
            .map_err(|e| format!("not a usable trust anchor: {e}"))?;
    }
    Ok(roots)
}

//----------- Counters -------------------------------------------------------

/// How a transfer attempt over TLS ended (the `outcome` label of
/// `tern_xot_transfers_total{direction="in"}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XotOutcome {
    /// A new version received.
    Received,
    /// The primary's serial is not newer: nothing to transfer.
    Current,
    /// No TCP connection to the primary.
    Connect,
    /// The TLS handshake failed (a server that does not speak TLS, no
    /// common version or cipher suite, a timeout), the certificate aside.
    Handshake,
    /// The primary's certificate was not accepted (pin, chain, dates,
    /// name).
    Authentication,
    /// The DNS exchange inside TLS failed (refused, malformed, TSIG).
    Transfer,
    /// After a failed TLS attempt, the zone was asked over plain DNS
    /// (`fallback: plain`).
    Fallback,
}

impl XotOutcome {
    /// Every outcome, in the order of the counters.
    pub const ALL: [XotOutcome; 7] = [
        XotOutcome::Received,
        XotOutcome::Current,
        XotOutcome::Connect,
        XotOutcome::Handshake,
        XotOutcome::Authentication,
        XotOutcome::Transfer,
        XotOutcome::Fallback,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            XotOutcome::Received => "received",
            XotOutcome::Current => "current",
            XotOutcome::Connect => "connect_failed",
            XotOutcome::Handshake => "handshake_failed",
            XotOutcome::Authentication => "authentication_failed",
            XotOutcome::Transfer => "transfer_failed",
            XotOutcome::Fallback => "fallback_plain",
        }
    }
}

/// Transfer attempts in over TLS, by outcome, since the process started.
pub struct XotCounters {
    counts: [AtomicU64; XotOutcome::ALL.len()],
}

impl XotCounters {
    /// Counts one attempt.
    pub fn count(&self, outcome: XotOutcome) {
        self.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Each outcome with its count.
    pub fn snapshot(&self) -> [(XotOutcome, u64); XotOutcome::ALL.len()] {
        XotOutcome::ALL.map(|outcome| {
            (
                outcome,
                self.counts[outcome as usize].load(Ordering::Relaxed),
            )
        })
    }
}

/// The process's counts of transfers in over TLS (one refresh thread).
pub static XOT_IN: XotCounters = XotCounters {
    counts: [const { AtomicU64::new(0) }; XotOutcome::ALL.len()],
};

//----------- Connecting -----------------------------------------------------

/// Why a TLS connection was not made: the outcome to count and the reason
/// to log.
#[derive(Debug)]
pub struct ConnectError {
    /// Connect, Handshake or Authentication.
    pub outcome: XotOutcome,
    /// What happened, for the log.
    pub reason: String,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// An established TLS connection to a primary.
pub type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// The crypto provider: ring's (see docs/decisions/0018).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration for `config`: TLS 1.3 and 1.2, ALPN "dot",
/// the verifier its authentication asks for, no client certificate.
pub fn client_config(config: &XotConfig) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match &config.auth {
        XotAuth::Pin(pin) => Arc::new(PinVerifier {
            pin: *pin,
            provider: Arc::clone(&provider),
        }),
        XotAuth::Ca { anchors, .. } => WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots(anchors)?),
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| format!("the trust anchors: {e}"))?,
    };
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    client.alpn_protocols = vec![ALPN_DOT.to_vec()];
    // Each transfer is a connection of its own; nothing to resume.
    client.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(client))
}

/// The name the certificate is checked against (and sent as SNI when a
/// DNS name): `name`, or the primary's address.
pub fn server_name(config: &XotConfig, primary: SocketAddr) -> Result<ServerName<'static>, String> {
    match &config.name {
        Some(name) => ServerName::try_from(name.clone())
            .map_err(|_| format!("{name:?} is not a DNS name or address")),
        None => Ok(ServerName::IpAddress(primary.ip().into())),
    }
}

/// Checks that `name` is a DNS name (or address) a certificate can be
/// checked against.
pub fn check_name(name: &str) -> Result<(), String> {
    ServerName::try_from(name)
        .map(|_| ())
        .map_err(|_| format!("{name:?} is not a DNS name or address"))
}

/// Connects to `primary` and completes the TLS handshake, the primary
/// authenticated; `io_timeout` bounds each read and write.
pub fn connect(
    config: &XotConfig,
    primary: SocketAddr,
    io_timeout: Duration,
) -> Result<TlsStream, ConnectError> {
    let failed = |outcome, reason: String| ConnectError { outcome, reason };
    let client = client_config(config).map_err(|e| failed(XotOutcome::Handshake, e))?;
    let name = server_name(config, primary).map_err(|e| failed(XotOutcome::Handshake, e))?;
    let tcp = TcpStream::connect_timeout(&primary, io_timeout)
        .and_then(|stream| {
            stream.set_read_timeout(Some(io_timeout))?;
            stream.set_write_timeout(Some(io_timeout))?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
        .map_err(|e| failed(XotOutcome::Connect, e.to_string()))?;
    let connection = ClientConnection::new(client, name)
        .map_err(|e| failed(XotOutcome::Handshake, e.to_string()))?;
    let mut stream = StreamOwned::new(connection, tcp);
    handshake(&mut stream, HANDSHAKE_TIMEOUT)?;
    Ok(stream)
}

/// Drives the handshake of `stream` to its end, within `limit`.
fn handshake(stream: &mut TlsStream, limit: Duration) -> Result<(), ConnectError> {
    let deadline = Instant::now() + limit;
    // Each pass reads or writes at least once (or fails); the deadline
    // ends a server that trickles.
    while stream.conn.is_handshaking() {
        if Instant::now() >= deadline {
            return Err(ConnectError {
                outcome: XotOutcome::Handshake,
                reason: "the TLS handshake took too long".to_string(),
            });
        }
        if let Err(err) = stream.conn.complete_io(&mut stream.sock) {
            return Err(classify(&err));
        }
    }
    Ok(())
}

/// The outcome and reason of a failed handshake.
fn classify(err: &io::Error) -> ConnectError {
    let tls = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(error @ rustls::Error::InvalidCertificate(_)) => ConnectError {
            outcome: XotOutcome::Authentication,
            reason: format!("the primary's certificate is not accepted: {error}"),
        },
        Some(error) => ConnectError {
            outcome: XotOutcome::Handshake,
            reason: format!("TLS handshake failed: {error}"),
        },
        None if err.kind() == io::ErrorKind::UnexpectedEof => ConnectError {
            outcome: XotOutcome::Handshake,
            reason: "TLS handshake failed: the primary closed the connection (does it \
                     speak TLS on this port?)"
                .to_string(),
        },
        None => ConnectError {
            outcome: XotOutcome::Handshake,
            reason: format!(
                "TLS handshake failed: {err} (does the primary speak TLS on this port?)"
            ),
        },
    }
}

/// Closes `stream` politely: close_notify, then the socket.
pub fn close(mut stream: TlsStream) {
    stream.conn.send_close_notify();
    let _ = stream.flush();
}

//----------- PinVerifier ----------------------------------------------------

/// Accepts the certificate whose SubjectPublicKeyInfo has the pinned
/// SHA-256, whatever its issuer, dates and names; the handshake's
/// signatures are checked with its key.
#[derive(Debug)]
struct PinVerifier {
    pin: [u8; 32],
    provider: Arc<CryptoProvider>,
}

/// A certificate whose key is not the pinned one. rustls logs it with
/// `Debug`, which is the text of `Display`.
struct PinMismatch {
    seen: Option<[u8; 32]>,
}

impl fmt::Debug for PinMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.seen {
            Some(seen) => write!(
                f,
                "its key's pin is {}, not the one configured",
                pin_text(seen)
            ),
            None => f.write_str("it does not parse"),
        }
    }
}

impl std::error::Error for PinMismatch {}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match certificate_pin(end_entity) {
            Ok(seen) if seen == self.pin => Ok(ServerCertVerified::assertion()),
            seen => Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                rustls::OtherError(Arc::new(PinMismatch { seen: seen.ok() })),
            ))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
