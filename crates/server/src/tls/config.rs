//! The server side of TLS, apart from any listener so that DNS over TLS
//! (`crate::tls`) and zone transfers over TLS share it: the certificate
//! and key (PEM files, or a self-signed pair made once and kept in the
//! state directory, as Knot 3.4 does), their SPKI pin, and the
//! [`rustls::ServerConfig`] built around them (TLS 1.3 and 1.2 with the
//! `ring` provider, session tickets from a rotating [`Ticketer`], a
//! server-side session cache).
//!
//! The certificate is swapped in place ([`Certificates::replace`], on
//! `tern reload`): the `ServerConfig` resolves it at each handshake, so
//! new handshakes get the new one, open connections keep theirs, and the
//! session cache and ticket keys are kept. So are the trust anchors of
//! client certificates ([`ClientRoots::replace`], `tls.client-ca`):
//! with them, every handshake asks for a client certificate without
//! requiring one, verifies one that is given (a certificate that does not
//! chain fails the handshake), and zone transfers over the connection are
//! refused unless one was (RFC 9103 section 9.3.3); queries are answered
//! either way (docs/decisions/0018).
//!
//! [`Ticketer`]: rustls::crypto::ring::Ticketer

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::UnixTime;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{
    ClientHello, ProducesTickets, ResolvesServerCert, ServerSessionMemoryCache,
    StoresServerSessions,
};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The ALPN protocol of DNS over TLS (RFC 7858 section 3.2; IANA "dot").
pub const ALPN_DOT: &[u8] = b"dot";

/// Sessions kept by the server-side cache (for clients that resume by
/// session id, TLS 1.2 without tickets): a few hundred octets each.
pub const SESSION_CACHE: usize = 4096;

/// The longest PEM file read (a certificate chain or a key): far above
/// any real chain, so a wrong path (a log file, a device) fails fast.
pub const MAX_PEM_FILE: u64 = 1 << 20;

/// The self-signed pair's files, in `tls/` under the state directory.
pub const SELF_SIGNED_KEY: &str = "tls/self-signed.key.pem";
/// See [`SELF_SIGNED_KEY`].
pub const SELF_SIGNED_CERT: &str = "tls/self-signed.cert.pem";

//----------- Identity -------------------------------------------------------

/// A certificate chain and its key, ready to serve, with where it came
/// from and its pin.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The chain and signing key, as rustls takes them.
    pub key: Arc<CertifiedKey>,
    /// The SPKI pin: base64 of SHA-256 over the end certificate's
    /// SubjectPublicKeyInfo (RFC 7858 section 4.2, the form
    /// `kdig +tls-pin=` takes).
    pub pin: String,
    /// Where it was read from, or made.
    pub source: Source,
}

/// Where an [`Identity`] came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The configured PEM files.
    Files {
        /// The certificate chain.
        certificate: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// A self-signed pair in the state directory (made now or read back).
    SelfSigned(PathBuf),
    /// A self-signed pair made for this run only (no state directory).
    Ephemeral,
}

impl Identity {
    /// Reads a PEM certificate chain (end certificate first) and its PEM
    /// private key (PKCS#8, PKCS#1 or SEC1), checking that they match.
    pub fn from_files(certificate: &Path, key: &Path) -> io::Result<Identity> {
        let chain_pem = read_limited(certificate)?;
        let key_pem = read_limited(key)?;
        let mut identity = Identity::from_pem(&chain_pem, &key_pem).map_err(|err| {
            io::Error::new(err.kind(), format!("{}: {err}", certificate.display()))
        })?;
        identity.source = Source::Files {
            certificate: certificate.to_path_buf(),
            key: key.to_path_buf(),
        };
        Ok(identity)
    }

    /// An identity from PEM text (source: [`Source::Ephemeral`] until the
    /// caller says otherwise).
    pub fn from_pem(chain_pem: &[u8], key_pem: &[u8]) -> io::Result<Identity> {
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let chain = CertificateDer::pem_slice_iter(chain_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| invalid(format!("the certificate chain: {err}")))?;
        if chain.is_empty() {
            return Err(invalid("no CERTIFICATE in the certificate file".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|err| invalid(format!("the private key: {err}")))?;
        let provider = rustls::crypto::ring::default_provider();
        let key = CertifiedKey::from_der(chain, key, &provider)
            .map_err(|err| invalid(format!("certificate and key: {err}")))?;
        let pin = spki_pin(&key).ok_or_else(|| invalid("the key has no public key".into()))?;
        Ok(Identity {
            key: Arc::new(key),
            pin,
            source: Source::Ephemeral,
        })
    }

    /// The self-signed pair kept in `state_directory` (made there, 0600,
    /// the first time), or, without a state directory, one made for this
    /// run. `name` is the certificate's subject alternative name (the host
    /// name).
    pub fn self_signed(state_directory: Option<&Path>, name: &str) -> io::Result<Identity> {
        let Some(directory) = state_directory else {
            let (cert, key) = make_self_signed(name)?;
            return Identity::from_pem(cert.as_bytes(), key.as_bytes());
        };
        let key_path = directory.join(SELF_SIGNED_KEY);
        let cert_path = directory.join(SELF_SIGNED_CERT);
        if !key_path.exists() || !cert_path.exists() {
            let (cert, key) = make_self_signed(name)?;
            let parent = key_path.parent().unwrap_or(directory);
            fs::create_dir_all(parent)?;
            // The key first: a certificate file never names a key that
            // is not there.
            write_private(&key_path, key.as_bytes())?;
            write_private(&cert_path, cert.as_bytes())?;
        }
        let mut identity = Identity::from_files(&cert_path, &key_path)?;
        identity.source = Source::SelfSigned(cert_path);
        Ok(identity)
    }
}

/// The pin of `key`'s end certificate: base64 (standard, padded) of
/// SHA-256 over its SubjectPublicKeyInfo, which [`CertifiedKey::from_der`]
/// has checked matches the private key's.
pub fn spki_pin(key: &CertifiedKey) -> Option<String> {
    let spki = key.key.public_key()?;
    let digest = ring::digest::digest(&ring::digest::SHA256, spki.as_ref());
    Some(data_encoding::BASE64.encode(digest.as_ref()))
}

/// A new ECDSA P-256 key and a certificate for `name` signed by it: PEM
/// certificate, PEM PKCS#8 key.
fn make_self_signed(name: &str) -> io::Result<(String, String)> {
    let failed = |err: rcgen::Error| io::Error::other(format!("making a self-signed key: {err}"));
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).map_err(failed)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes `contents` to `path` readable by its owner only, through a
/// temporary file renamed over it.
fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let temporary = path.with_extension("tmp");
    let _ = fs::remove_file(&temporary);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(contents)?;
    file.sync_all()?;
    fs::rename(&temporary, path)
}

/// A file's contents, at most [`MAX_PEM_FILE`] octets.
fn read_limited(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs::File::open(path)
        .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", path.display())))?;
    let mut contents = Vec::new();
    file.take(MAX_PEM_FILE + 1).read_to_end(&mut contents)?;
    if contents.len() as u64 > MAX_PEM_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: longer than {MAX_PEM_FILE} octets", path.display()),
        ));
    }
    Ok(contents)
}

/// Reads the trust anchors of `client-ca` (PEM certificates), for
/// verifying client certificates (mutual TLS on zone transfers).
pub fn client_roots(path: &Path) -> io::Result<rustls::RootCertStore> {
    let pem = read_limited(path)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|err| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {err}", path.display()),
            )
        })?;
        roots.add(cert).map_err(|err| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {err}", path.display()),
            )
        })?;
    }
    if roots.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: no CERTIFICATE in it", path.display()),
        ));
    }
    Ok(roots)
}

//----------- Certificates ---------------------------------------------------

/// The identity served, replaceable while the server runs: rustls asks it
/// at each handshake. Shared by every core (an `RwLock` read per
/// handshake, written on reload only).
#[derive(Debug)]
pub struct Certificates {
    current: RwLock<Identity>,
}

impl Certificates {
    /// Serves `identity` until replaced.
    pub fn new(identity: Identity) -> Arc<Certificates> {
        Arc::new(Certificates {
            current: RwLock::new(identity),
        })
    }

    /// The identity new handshakes get.
    pub fn current(&self) -> Identity {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `identity` to new handshakes from now on; open connections
    /// keep the one they have.
    pub fn replace(&self, identity: Identity) {
        match self.current.write() {
            Ok(mut current) => *current = identity,
            Err(poisoned) => *poisoned.into_inner() = identity,
        }
    }

    /// The pin of the identity served now.
    pub fn pin(&self) -> String {
        self.current().pin
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.current.read() {
            Ok(current) => Some(Arc::clone(&current.key)),
            Err(poisoned) => Some(Arc::clone(&poisoned.into_inner().key)),
        }
    }
}

//----------- ClientRoots ----------------------------------------------------

/// The trust anchors of client certificates (`tls.client-ca`), or none,
/// replaceable while the server runs: rustls asks at each handshake
/// whether to request a certificate, and has one verified here. Never
/// mandatory at the handshake: DNS over TLS clients have none, and zone
/// transfers check `rustls::ServerConnection::peer_certificates`
/// instead (set only for a certificate that verified).
///
/// No hints of acceptable issuers are sent (an empty
/// `certificate_authorities` list, which TLS allows): the list would have
/// to outlive a reload. Clients with one certificate send it anyway.
///
/// Each replacement starts a new *generation*: sessions (tickets and the
/// session cache) are tagged with the generation they were made in and
/// resume only in it (`GenerationTickets`, `GenerationSessions`), so
/// that a session made before `client-ca` was set (no certificate asked)
/// or under anchors since removed cannot carry its client's old standing
/// past a reload: the client makes a full handshake and is asked again.
#[derive(Debug)]
pub struct ClientRoots {
    current: RwLock<Option<Arc<dyn ClientCertVerifier>>>,
    algorithms: WebPkiSupportedAlgorithms,
    generation: AtomicU64,
}

impl ClientRoots {
    /// Verifies client certificates against `roots`; `None`: asks for none.
    pub fn new(roots: Option<rustls::RootCertStore>) -> io::Result<Arc<ClientRoots>> {
        let provider = rustls::crypto::ring::default_provider();
        let clients = ClientRoots {
            current: RwLock::new(None),
            algorithms: provider.signature_verification_algorithms,
            generation: AtomicU64::new(0),
        };
        clients.replace(roots)?;
        Ok(Arc::new(clients))
    }

    /// Verifies against `roots` (`None`: asks for no certificate) from
    /// the next handshake on; open connections keep what theirs proved.
    pub fn replace(&self, roots: Option<rustls::RootCertStore>) -> io::Result<()> {
        let verifier = match roots {
            Some(roots) => Some(
                rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    Arc::new(rustls::crypto::ring::default_provider()),
                )
                .allow_unauthenticated()
                .build()
                .map_err(io::Error::other)?,
            ),
            None => None,
        };
        match self.current.write() {
            Ok(mut current) => *current = verifier,
            Err(poisoned) => *poisoned.into_inner() = verifier,
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The generation sessions are made in now (see the type's docs).
    fn generation(&self) -> [u8; 8] {
        self.generation.load(Ordering::Relaxed).to_be_bytes()
    }

    /// Whether handshakes ask for a client certificate now (and zone
    /// transfers need one).
    pub fn required(&self) -> bool {
        self.verifier().is_some()
    }

    fn verifier(&self) -> Option<Arc<dyn ClientCertVerifier>> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl ClientCertVerifier for ClientRoots {
    fn offer_client_auth(&self) -> bool {
        self.required()
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // None: the anchors were removed by a reload since this handshake
        // asked; nothing to verify against.
        let Some(verifier) = self.verifier() else {
            return Err(rustls::Error::General("no tls.client-ca".into()));
        };
        verifier.verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

//----------- GenerationTickets, GenerationSessions -------------------------

/// Session tickets that resume only in the [`ClientRoots`] generation
/// they were made in: the generation is sealed inside the ticket.
#[derive(Debug)]
struct GenerationTickets {
    inner: Arc<dyn ProducesTickets>,
    clients: Arc<ClientRoots>,
}

impl ProducesTickets for GenerationTickets {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    fn lifetime(&self) -> u32 {
        self.inner.lifetime()
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let mut tagged = Vec::with_capacity(8 + plain.len());
        tagged.extend_from_slice(&self.clients.generation());
        tagged.extend_from_slice(plain);
        self.inner.encrypt(&tagged)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let plain = self.inner.decrypt(cipher)?;
        let (generation, rest) = plain.split_at_checked(8)?;
        (generation == self.clients.generation()).then(|| rest.to_vec())
    }
}

/// The server-side session cache, keyed by the [`ClientRoots`]
/// generation as well as the session id.
#[derive(Debug)]
struct GenerationSessions {
    inner: Arc<dyn StoresServerSessions>,
    clients: Arc<ClientRoots>,
}

impl GenerationSessions {
    fn key(&self, key: &[u8]) -> Vec<u8> {
        let mut tagged = Vec::with_capacity(8 + key.len());
        tagged.extend_from_slice(&self.clients.generation());
        tagged.extend_from_slice(key);
        tagged
    }
}

impl StoresServerSessions for GenerationSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(self.key(&key), value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(&self.key(key))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.take(&self.key(key))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

//----------- server_config --------------------------------------------------

/// A rustls server configuration serving `certificates`: TLS 1.3 and 1.2
/// (ring's cipher suites), `alpn` offered (a client that names none is
/// served too, as NSD and Knot do; one that names only others is refused
/// by rustls with `no_application_protocol`), resumption by tickets
/// (ring's [`Ticketer`](rustls::crypto::ring::Ticketer): its key rotates
/// every six hours, the previous one still accepted) and by the
/// server-side cache. Client certificates are asked for, verified and
/// never required as `clients` says at each handshake (mutual TLS for
/// zone transfers, [`ClientRoots`]); sessions resume only within the
/// `clients` generation they were made in.
pub fn server_config(
    certificates: Arc<Certificates>,
    alpn: &[&[u8]],
    clients: Arc<ClientRoots>,
) -> io::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(io::Error::other)?;
    let mut config = builder
        .with_client_cert_verifier(Arc::clone(&clients) as Arc<dyn ClientCertVerifier>)
        .with_cert_resolver(certificates);
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    config.session_storage = Arc::new(GenerationSessions {
        inner: ServerSessionMemoryCache::new(SESSION_CACHE),
        clients: Arc::clone(&clients),
    });
    config.ticketer = Arc::new(GenerationTickets {
        inner: rustls::crypto::ring::Ticketer::new().map_err(io::Error::other)?,
        clients,
    });
    // Answers are written as they are ready, never held for more.
    config.send_half_rtt_data = false;
    Ok(Arc::new(config))
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn directory(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tern-tls-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The self-signed pair is made once, kept 0600, read back with the
    /// same pin at the next start; the pin is the SPKI's SHA-256.
    #[test]
    fn self_signed_is_kept_and_pinned() {
        use std::os::unix::fs::PermissionsExt;
        let dir = directory("self-signed");
        let first = Identity::self_signed(Some(&dir), "ns.example").unwrap();
        let mode = fs::metadata(dir.join(SELF_SIGNED_KEY))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let second = Identity::self_signed(Some(&dir), "ns.example").unwrap();
        assert_eq!(first.pin, second.pin, "read back, not made again");
        assert_eq!(first.pin.len(), 44, "base64 of 32 octets");
        let spki = first.key.key.public_key().unwrap();
        let digest = ring::digest::digest(&ring::digest::SHA256, spki.as_ref());
        assert_eq!(
            data_encoding::BASE64.decode(first.pin.as_bytes()).unwrap(),
            digest.as_ref()
        );
        let other = Identity::self_signed(None, "ns.example").unwrap();
        assert_ne!(other.pin, first.pin);
        fs::remove_dir_all(dir).unwrap();
    }

    /// A key that is not the certificate's, and files that hold no PEM,
    /// are refused.
    #[test]
    fn mismatched_or_empty_files_are_refused() {
        let (cert, _) = make_self_signed("a.example").unwrap();
        let (_, other_key) = make_self_signed("b.example").unwrap();
        assert!(Identity::from_pem(cert.as_bytes(), other_key.as_bytes()).is_err());
        assert!(Identity::from_pem(b"", other_key.as_bytes()).is_err());
        assert!(Identity::from_pem(cert.as_bytes(), b"junk").is_err());
    }

    /// A replaced certificate is what the resolver hands out next.
    #[test]
    fn replace_changes_what_new_handshakes_get() {
        let first = Identity::self_signed(None, "a.example").unwrap();
        let second = Identity::self_signed(None, "a.example").unwrap();
        let certificates = Certificates::new(first.clone());
        assert_eq!(certificates.pin(), first.pin);
        certificates.replace(second.clone());
        assert_eq!(certificates.pin(), second.pin);
        let clients = ClientRoots::new(None).unwrap();
        assert!(server_config(certificates, &[ALPN_DOT], clients).is_ok());
    }
}
