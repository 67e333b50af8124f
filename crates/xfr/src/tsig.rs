//! TSIG: secret-key transaction signatures (RFC 8945).
//!
//! A [`Session`] signs or checks the messages of one exchange with one
//! [`Key`]: a request and its response, or a request and the many messages
//! of a zone transfer. It remembers the last MAC, since each MAC covers the
//! previous one, and whether the next message starts a new direction (all
//! TSIG variables are digested) or continues a stream (only the timers).
//!
//! ```text
//!  first message of a direction:   [prior MAC] message  key-name class ttl
//!                                                        algorithm time fudge
//!                                                        error other-data
//!  later messages of a stream:      prior MAC  message  time fudge
//! ```
//!
//! The message is digested as it was before the TSIG record was added: the
//! original ID in the header and ARCOUNT one less. A stream may carry up to
//! [`MAX_UNSIGNED_RUN`] unsigned messages between signed ones (RFC 8945
//! section 5.3.1); they are digested into the next signed message's MAC.
//!
//! The HMAC and the hashes come from RustCrypto (`hmac`, `md-5`, `sha1`, `sha2`);
//! MACs are compared in constant time by `hmac`'s `verify_truncated_left`.
//! Nothing here reads a clock: callers pass the time in seconds since the
//! epoch, so that tests and fuzzing are deterministic.

use core::fmt;

use hmac::{Hmac, Mac};
use tern_wire::name::{LowerNameBuf, Name, NameBuf, MAX_NAME_LEN};
use tern_wire::parse::{Header, MessageView, Section};
use tern_wire::types::{RClass, RType};
use tern_wire::TruncationError;

use crate::reader::Reader;

/// The fudge tern puts in the TSIG records it writes: the seconds a
/// signature stays valid either side of its time (the RFC's suggestion,
/// and what Knot, NSD and BIND send).
pub const DEFAULT_FUDGE: u16 = 300;

/// At most this many unsigned messages may follow each other in a signed
/// stream (RFC 8945 section 5.3.1); one more and the stream is refused.
pub const MAX_UNSIGNED_RUN: u32 = 99;

/// The longest MAC of the supported algorithms (HMAC-SHA512).
pub const MAX_MAC_LEN: usize = 64;

/// TSIG error code BADSIG (RFC 8945 section 5.2.2).
pub const BADSIG: u16 = 16;
/// TSIG error code BADKEY (RFC 8945 section 5.2.1).
pub const BADKEY: u16 = 17;
/// TSIG error code BADTIME (RFC 8945 section 5.2.3).
pub const BADTIME: u16 = 18;

//----------- Algorithm ------------------------------------------------------

/// A TSIG algorithm. HMAC-MD5 is offered because the dynamic-update
/// clients of ACME (certbot-dns-rfc2136, cert-manager) default to it and
/// Knot and BIND accept it (HMAC's security does not rest on MD5's
/// collision resistance, RFC 6151 section 2.3); the truncated variants are
/// not offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// `hmac-md5` (wire name `HMAC-MD5.SIG-ALG.REG.INT.`), for the ACME
    /// clients that default to it.
    HmacMd5,
    /// `hmac-sha1`, for legacy peers.
    HmacSha1,
    /// `hmac-sha256`, the usual choice.
    HmacSha256,
    /// `hmac-sha384`.
    HmacSha384,
    /// `hmac-sha512`.
    HmacSha512,
}

impl Algorithm {
    /// Every supported algorithm.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::HmacMd5,
        Algorithm::HmacSha1,
        Algorithm::HmacSha256,
        Algorithm::HmacSha384,
        Algorithm::HmacSha512,
    ];

    /// The name used in configuration files (as in Knot's and BIND's).
    pub const fn config_name(self) -> &'static str {
        match self {
            Algorithm::HmacMd5 => "hmac-md5",
            Algorithm::HmacSha1 => "hmac-sha1",
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::HmacSha384 => "hmac-sha384",
            Algorithm::HmacSha512 => "hmac-sha512",
        }
    }

    /// Parses a configuration name, ignoring case.
    pub fn from_config_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|algorithm| algorithm.config_name().eq_ignore_ascii_case(name))
    }

    /// The algorithm's domain name in wire form (the configuration name as
    /// one label, RFC 8945 section 6).
    pub const fn wire_name(self) -> &'static [u8] {
        match self {
            Algorithm::HmacMd5 => b"\x08HMAC-MD5\x07SIG-ALG\x03REG\x03INT\x00",
            Algorithm::HmacSha1 => b"\x09hmac-sha1\x00",
            Algorithm::HmacSha256 => b"\x0bhmac-sha256\x00",
            Algorithm::HmacSha384 => b"\x0bhmac-sha384\x00",
            Algorithm::HmacSha512 => b"\x0bhmac-sha512\x00",
        }
    }

    /// The algorithm a wire name stands for, ignoring case.
    pub fn from_wire_name(name: Name<'_>) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|algorithm| algorithm.wire_name().eq_ignore_ascii_case(name.as_bytes()))
    }

    /// The length of the full MAC in octets.
    pub const fn mac_len(self) -> usize {
        match self {
            Algorithm::HmacMd5 => 16,
            Algorithm::HmacSha1 => 20,
            Algorithm::HmacSha256 => 32,
            Algorithm::HmacSha384 => 48,
            Algorithm::HmacSha512 => 64,
        }
    }

    /// The shortest truncated MAC RFC 8945 section 5.2.2.1 lets a receiver
    /// accept: half the hash, and never under 10 octets.
    pub const fn min_mac_len(self) -> usize {
        let half = self.mac_len() / 2;
        if half > 10 {
            half
        } else {
            10
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.config_name())
    }
}

//----------- Key ------------------------------------------------------------

/// A shared secret, its name and its algorithm.
#[derive(Clone)]
pub struct Key {
    /// The name as configured, written in the records we sign.
    name: NameBuf,
    /// The name lowercased: what MACs cover and lookups compare.
    lower: LowerNameBuf,
    algorithm: Algorithm,
    secret: Box<[u8]>,
}

impl Key {
    /// A key. Its name is written as given and compared ignoring case.
    pub fn new(name: Name<'_>, algorithm: Algorithm, secret: &[u8]) -> Self {
        Key {
            name: NameBuf::from_name(name),
            lower: LowerNameBuf::from_name(name),
            algorithm,
            secret: secret.into(),
        }
    }

    /// The key's name as configured.
    pub fn name(&self) -> Name<'_> {
        self.name.as_name()
    }

    /// The key's name, lowercased.
    pub fn lower_name(&self) -> Name<'_> {
        self.lower.as_name()
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// A fresh HMAC keyed with the secret.
    fn hmac(&self) -> AnyHmac {
        match self.algorithm {
            Algorithm::HmacMd5 => AnyHmac::Md5(keyed(&self.secret)),
            Algorithm::HmacSha1 => AnyHmac::Sha1(keyed(&self.secret)),
            Algorithm::HmacSha256 => AnyHmac::Sha256(keyed(&self.secret)),
            Algorithm::HmacSha384 => AnyHmac::Sha384(keyed(&self.secret)),
            Algorithm::HmacSha512 => AnyHmac::Sha512(keyed(&self.secret)),
        }
    }
}

/// Equality compares name (as written), algorithm and secret: for
/// configurations compared on reload. No MAC is ever checked this way.
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.name.as_bytes() == other.name.as_bytes()
            && self.algorithm == other.algorithm
            && self.secret == other.secret
    }
}

impl Eq for Key {}

impl fmt::Debug for Key {
    // The secret is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("name", &self.name.as_name().to_string())
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

fn keyed<M: Mac + hmac::digest::KeyInit>(secret: &[u8]) -> M {
    // HMAC takes a key of any length (longer ones are hashed first).
    <M as hmac::digest::KeyInit>::new_from_slice(secret).expect("HMAC accepts any key length")
}

/// One running HMAC of any supported algorithm.
#[derive(Clone)]
enum AnyHmac {
    Md5(Hmac<md5::Md5>),
    Sha1(Hmac<sha1::Sha1>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
    Sha512(Hmac<sha2::Sha512>),
}

impl AnyHmac {
    fn update(&mut self, data: &[u8]) {
        match self {
            AnyHmac::Md5(mac) => mac.update(data),
            AnyHmac::Sha1(mac) => mac.update(data),
            AnyHmac::Sha256(mac) => mac.update(data),
            AnyHmac::Sha384(mac) => mac.update(data),
            AnyHmac::Sha512(mac) => mac.update(data),
        }
    }

    fn finalize(self) -> MacBuf {
        let mut buf = MacBuf::default();
        match self {
            AnyHmac::Md5(mac) => buf.fill(&mac.finalize().into_bytes()),
            AnyHmac::Sha1(mac) => buf.fill(&mac.finalize().into_bytes()),
            AnyHmac::Sha256(mac) => buf.fill(&mac.finalize().into_bytes()),
            AnyHmac::Sha384(mac) => buf.fill(&mac.finalize().into_bytes()),
            AnyHmac::Sha512(mac) => buf.fill(&mac.finalize().into_bytes()),
        }
        buf
    }

    /// Compares in constant time with a MAC that may be truncated (its
    /// length was checked against the algorithm before).
    fn verify(self, mac: &[u8]) -> bool {
        match self {
            AnyHmac::Md5(hmac) => hmac.verify_truncated_left(mac).is_ok(),
            AnyHmac::Sha1(hmac) => hmac.verify_truncated_left(mac).is_ok(),
            AnyHmac::Sha256(hmac) => hmac.verify_truncated_left(mac).is_ok(),
            AnyHmac::Sha384(hmac) => hmac.verify_truncated_left(mac).is_ok(),
            AnyHmac::Sha512(hmac) => hmac.verify_truncated_left(mac).is_ok(),
        }
    }
}

/// A MAC on the stack.
#[derive(Clone, Copy)]
struct MacBuf {
    len: usize,
    bytes: [u8; MAX_MAC_LEN],
}

impl Default for MacBuf {
    fn default() -> Self {
        MacBuf {
            len: 0,
            bytes: [0; MAX_MAC_LEN],
        }
    }
}

impl MacBuf {
    fn fill(&mut self, mac: &[u8]) {
        let len = mac.len().min(MAX_MAC_LEN);
        self.bytes[..len].copy_from_slice(&mac[..len]);
        self.len = len;
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

//----------- Errors ---------------------------------------------------------

/// Why a message's signature was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsigError {
    /// The message or its TSIG record is malformed (answered FORMERR).
    Malformed(&'static str),
    /// The message has no TSIG record where one is required.
    Unsigned,
    /// More than [`MAX_UNSIGNED_RUN`] unsigned messages in a stream.
    TooManyUnsigned,
    /// The key name or algorithm is not the one expected (BADKEY).
    BadKey,
    /// The MAC does not verify (BADSIG).
    BadSig,
    /// The time signed is further from now than the fudge (BADTIME).
    BadTime,
    /// The peer answered with this TSIG error code.
    Peer(u16),
}

impl TsigError {
    /// The TSIG error code to answer a request with, if the RFC asks for
    /// one (FORMERR and a missing signature have none).
    pub fn code(self) -> Option<u16> {
        match self {
            TsigError::BadKey => Some(BADKEY),
            TsigError::BadSig => Some(BADSIG),
            TsigError::BadTime => Some(BADTIME),
            _ => None,
        }
    }
}

impl fmt::Display for TsigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TsigError::Malformed(what) => write!(f, "malformed TSIG: {what}"),
            TsigError::Unsigned => f.write_str("message not signed"),
            TsigError::TooManyUnsigned => f.write_str("too many unsigned messages in a row"),
            TsigError::BadKey => f.write_str("BADKEY: unknown key or algorithm"),
            TsigError::BadSig => f.write_str("BADSIG: MAC does not verify"),
            TsigError::BadTime => f.write_str("BADTIME: signed outside the time window"),
            TsigError::Peer(code) => write!(f, "peer answered TSIG error {code}"),
        }
    }
}

//----------- TsigRecord -----------------------------------------------------

/// A TSIG record found at the end of a message.
#[derive(Clone, Copy, Debug)]
pub struct TsigRecord<'a> {
    /// Where the record starts in the message: what comes before is what
    /// was signed.
    pub start: usize,
    /// The key's name, lowercased.
    pub key_name: LowerNameBuf,
    /// The algorithm's name as sent.
    pub algorithm: Name<'a>,
    /// Seconds since the epoch (48 bits).
    pub time_signed: u64,
    /// Seconds of tolerance either side of `time_signed`.
    pub fudge: u16,
    /// The MAC (empty in BADKEY and BADSIG answers).
    pub mac: &'a [u8],
    /// The message ID the signer saw.
    pub original_id: u16,
    /// The TSIG error code.
    pub error: u16,
    /// Other data (the server's time in a BADTIME answer).
    pub other: &'a [u8],
}

impl<'a> TsigRecord<'a> {
    /// Finds the TSIG record of `message`. It must be the last record of
    /// the additional section (RFC 8945 section 5.1); one anywhere else,
    /// two of them, a class other than ANY, a TTL other than 0 or RDATA
    /// that does not parse exactly are malformed.
    pub fn find(message: &'a [u8]) -> Result<Option<Self>, TsigError> {
        let view = MessageView::parse(message).map_err(|e| TsigError::Malformed(e.what))?;
        Self::find_in(&view)
    }

    /// [`TsigRecord::find`] in a message already parsed.
    pub fn find_in(view: &MessageView<'a>) -> Result<Option<Self>, TsigError> {
        let counts = view.header().counts();
        let total = usize::from(counts[1]) + usize::from(counts[2]) + usize::from(counts[3]);
        let mut end = 12 + view.question().map_or(0, |q| q.bytes.len());
        // Bounded by the counts and by the message: each record consumes
        // at least 11 octets or the iterator stops with an error.
        for (index, record) in view.records().enumerate() {
            let record = record.map_err(|e| TsigError::Malformed(e.what))?;
            let start = end;
            end = record.rdata_offset + record.rdata.len();
            if record.rtype != RType::TSIG {
                continue;
            }
            if index + 1 != total || record.section != Section::Additional {
                return Err(TsigError::Malformed("TSIG is not the last record"));
            }
            if record.class != RClass::ANY.0 || record.ttl != 0 {
                return Err(TsigError::Malformed(
                    "TSIG class is not ANY or TTL is not 0",
                ));
            }
            let key_name = LowerNameBuf::from_name(record.owner.to_buf().as_name());
            return Self::from_rdata(start, key_name, record.rdata).map(Some);
        }
        Ok(None)
    }

    fn from_rdata(
        start: usize,
        key_name: LowerNameBuf,
        rdata: &'a [u8],
    ) -> Result<Self, TsigError> {
        let bad = TsigError::Malformed("TSIG RDATA does not parse");
        let (algorithm, used) = Name::parse_prefix(rdata).map_err(|_| bad)?;
        let mut reader = Reader {
            bytes: rdata,
            pos: used,
        };
        let time_high = u64::from(reader.u16().ok_or(bad)?);
        let time_low = u64::from(reader.u32().ok_or(bad)?);
        let fudge = reader.u16().ok_or(bad)?;
        let mac_len = reader.u16().ok_or(bad)?;
        let mac = reader.take(usize::from(mac_len)).ok_or(bad)?;
        let original_id = reader.u16().ok_or(bad)?;
        let error = reader.u16().ok_or(bad)?;
        let other_len = reader.u16().ok_or(bad)?;
        let other = reader.take(usize::from(other_len)).ok_or(bad)?;
        if reader.pos != rdata.len() {
            return Err(bad);
        }
        Ok(TsigRecord {
            start,
            key_name,
            algorithm,
            time_signed: time_high << 32 | time_low,
            fudge,
            mac,
            original_id,
            error,
            other,
        })
    }
}

//----------- Session --------------------------------------------------------

/// What the session did last: a change of direction starts a new
/// exchange, whose first message digests every TSIG variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Signed,
    Verified,
}

/// The TSIG state of one exchange with one key (a copy of it: a session
/// lives as long as its transfer, across waits, whatever the
/// configuration does meanwhile).
#[derive(Clone)]
pub struct Session {
    key: Key,
    prior: Option<MacBuf>,
    last: Option<Step>,
    /// The HMAC over the unsigned messages received since the last signed
    /// one of a stream, and how many they are.
    pending: Option<AnyHmac>,
    unsigned: u32,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("last", &self.last)
            .field("unsigned", &self.unsigned)
            .finish_non_exhaustive()
    }
}

/// What [`check_request`] found.
// The variants carry a session (a running HMAC state, some hundred octets)
// by value: it is made once per signed request, on the transfer and NOTIFY
// path, and boxing it would only add an allocation there.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum RequestCheck<'a> {
    /// No TSIG record.
    Unsigned,
    /// A valid signature: sign the answers with this session.
    Signed(Session),
    /// A TSIG record that failed: answer NOTAUTH with
    /// [`RequestCheck::write_error`] (or FORMERR when the error has no
    /// code).
    Failed {
        /// What failed.
        error: TsigError,
        /// The request's TSIG record, if it could be read.
        record: Option<TsigRecord<'a>>,
        /// For BADTIME only: the session whose key did verify, which signs
        /// the error answer.
        session: Option<Session>,
    },
}

/// Checks a request's signature against the configured keys
/// (RFC 8945 section 5.2: key, then MAC, then time).
pub fn check_request<'a>(keys: &[Key], message: &'a [u8], now: u64) -> RequestCheck<'a> {
    match MessageView::parse(message) {
        Ok(view) => check_parsed_request(keys, &view, now),
        Err(error) => RequestCheck::Failed {
            error: TsigError::Malformed(error.what),
            record: None,
            session: None,
        },
    }
}

/// [`check_request`] of a request already parsed (a server parses each
/// query once and hands the view to every stage).
pub fn check_parsed_request<'a>(
    keys: &[Key],
    view: &MessageView<'a>,
    now: u64,
) -> RequestCheck<'a> {
    let message = view.bytes();
    let record = match TsigRecord::find_in(view) {
        Ok(None) => return RequestCheck::Unsigned,
        Ok(Some(record)) => record,
        Err(error) => {
            return RequestCheck::Failed {
                error,
                record: None,
                session: None,
            }
        }
    };
    let algorithm = Algorithm::from_wire_name(record.algorithm);
    let Some(key) = keys.iter().find(|key| {
        key.lower.as_bytes() == record.key_name.as_bytes() && Some(key.algorithm) == algorithm
    }) else {
        return RequestCheck::Failed {
            error: TsigError::BadKey,
            record: Some(record),
            session: None,
        };
    };
    let mut session = Session::new(key);
    match session.check(message, &record, now) {
        Ok(()) => RequestCheck::Signed(session),
        Err(error) => RequestCheck::Failed {
            error,
            record: Some(record),
            session: (error == TsigError::BadTime).then_some(session),
        },
    }
}

impl RequestCheck<'_> {
    /// Appends to an error answer (in `buf[..len]`, with the request's ID
    /// and question, rcode NOTAUTH) the TSIG record RFC 8945 section 5.3.2
    /// asks for: unsigned with the error code for BADKEY and BADSIG; signed,
    /// with the request's time and the server's time as other data, for
    /// BADTIME. Returns the new length; `None` when this check calls for no
    /// TSIG in the answer (a valid or unsigned request, or FORMERR).
    pub fn write_error(
        self,
        buf: &mut [u8],
        len: usize,
        now: u64,
    ) -> Option<Result<usize, TruncationError>> {
        let RequestCheck::Failed {
            error,
            record: Some(record),
            session,
        } = self
        else {
            return None;
        };
        let code = error.code()?;
        if let Some(mut session) = session {
            let now_bytes = time_bytes(now);
            return Some(session.sign_with(buf, len, record.time_signed, code, &now_bytes));
        }
        let fields = Fields {
            key_name: record.key_name.as_name(),
            algorithm: record.algorithm.as_bytes(),
            time_signed: now,
            fudge: DEFAULT_FUDGE,
            original_id: record.original_id,
            error: code,
            other: &[],
        };
        Some(append(buf, len, &fields, &[]))
    }
}

/// The TSIG fields other than the MAC.
struct Fields<'a> {
    key_name: Name<'a>,
    algorithm: &'a [u8],
    time_signed: u64,
    fudge: u16,
    original_id: u16,
    error: u16,
    other: &'a [u8],
}

impl Session {
    /// A session for an exchange we start (a request we sign).
    pub fn new(key: &Key) -> Self {
        Session {
            key: key.clone(),
            prior: None,
            last: None,
            pending: None,
            unsigned: 0,
        }
    }

    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The octets [`Session::sign`] appends to a message.
    pub fn record_len(&self) -> usize {
        self.key.name().len()
            + 10
            + self.key.algorithm.wire_name().len()
            + 16
            + self.key.algorithm.mac_len()
    }

    /// Signs the message in `buf[..len]`: appends the TSIG record after it
    /// and counts it in ARCOUNT. Returns the new length, or an error (and
    /// `buf[..len]` unchanged) if `buf` has no room.
    pub fn sign(&mut self, buf: &mut [u8], len: usize, now: u64) -> Result<usize, TruncationError> {
        self.sign_with(buf, len, now, 0, &[])
    }

    fn sign_with(
        &mut self,
        buf: &mut [u8],
        len: usize,
        time_signed: u64,
        error: u16,
        other: &[u8],
    ) -> Result<usize, TruncationError> {
        let id = buf.get(..2).ok_or(TruncationError)?;
        let fields = Fields {
            key_name: self.key.name(),
            algorithm: self.key.algorithm.wire_name(),
            time_signed,
            fudge: DEFAULT_FUDGE,
            original_id: u16::from_be_bytes([id[0], id[1]]),
            error,
            other,
        };
        let full = self.last != Some(Step::Signed);
        let message = buf.get(..len).ok_or(TruncationError)?;
        let mut hmac = self.start_digest();
        hmac.update(message);
        digest_fields(&mut hmac, &fields, full);
        let mac = hmac.finalize();
        let new_len = append(buf, len, &fields, mac.as_slice())?;
        self.prior = Some(mac);
        self.last = Some(Step::Signed);
        Ok(new_len)
    }

    /// Checks one received message of this exchange: the response to a
    /// request we signed, or any message of the transfer stream that
    /// follows. An unsigned message is accepted only inside a stream whose
    /// first message was signed, at most [`MAX_UNSIGNED_RUN`] in a row.
    /// Returns whether the message carried a signature.
    pub fn verify(&mut self, message: &[u8], now: u64) -> Result<bool, TsigError> {
        let Some(record) = TsigRecord::find(message)? else {
            if self.last != Some(Step::Verified) {
                return Err(TsigError::Unsigned);
            }
            if self.unsigned == MAX_UNSIGNED_RUN {
                return Err(TsigError::TooManyUnsigned);
            }
            let mut hmac = match self.pending.take() {
                Some(hmac) => hmac,
                None => self.start_digest(),
            };
            hmac.update(message);
            self.pending = Some(hmac);
            self.unsigned += 1;
            return Ok(false);
        };
        if record.key_name.as_bytes() != self.key.lower.as_bytes()
            || Algorithm::from_wire_name(record.algorithm) != Some(self.key.algorithm)
        {
            return Err(TsigError::BadKey);
        }
        if record.error != 0 {
            return Err(TsigError::Peer(record.error));
        }
        self.check(message, &record, now)?;
        Ok(true)
    }

    /// Checks the MAC, then the time, of a record whose key is this
    /// session's; on success the MAC becomes the prior one.
    fn check(
        &mut self,
        message: &[u8],
        record: &TsigRecord<'_>,
        now: u64,
    ) -> Result<(), TsigError> {
        let algorithm = self.key.algorithm;
        if record.mac.len() > algorithm.mac_len() || record.mac.len() < algorithm.min_mac_len() {
            return Err(TsigError::Malformed("MAC length out of range"));
        }
        let full = self.last != Some(Step::Verified);
        let mut hmac = match self.pending.take() {
            Some(hmac) => hmac,
            None => self.start_digest(),
        };
        // What was signed: the message before the TSIG record was added,
        // with the original ID and ARCOUNT one less.
        let malformed = TsigError::Malformed("TSIG record outside the message");
        let arcount = Header::from_message(message)
            .map_err(|e| TsigError::Malformed(e.what))?
            .counts()[3]
            .checked_sub(1)
            .ok_or(malformed)?;
        let flags_and_counts = message.get(2..10).ok_or(malformed)?;
        let body = message.get(12..record.start).ok_or(malformed)?;
        hmac.update(&record.original_id.to_be_bytes());
        hmac.update(flags_and_counts);
        hmac.update(&arcount.to_be_bytes());
        hmac.update(body);
        let fields = Fields {
            key_name: record.key_name.as_name(),
            algorithm: algorithm.wire_name(),
            time_signed: record.time_signed,
            fudge: record.fudge,
            original_id: record.original_id,
            error: record.error,
            other: record.other,
        };
        digest_fields(&mut hmac, &fields, full);
        let mut received = MacBuf::default();
        received.fill(record.mac);
        if !hmac.verify(record.mac) {
            return Err(TsigError::BadSig);
        }
        self.prior = Some(received);
        self.last = Some(Step::Verified);
        self.unsigned = 0;
        if now.abs_diff(record.time_signed) > u64::from(record.fudge) {
            return Err(TsigError::BadTime);
        }
        Ok(())
    }

    /// A new HMAC primed with the prior MAC, if any.
    fn start_digest(&self) -> AnyHmac {
        let mut hmac = self.key.hmac();
        if let Some(prior) = &self.prior {
            let len = prior.len as u16;
            hmac.update(&len.to_be_bytes());
            hmac.update(prior.as_slice());
        }
        hmac
    }
}

/// Digests the TSIG variables (RFC 8945 section 4.3.3), or only the
/// timers for the later messages of a stream (section 4.3.1).
fn digest_fields(hmac: &mut AnyHmac, fields: &Fields<'_>, full: bool) {
    if full {
        update_lowercased(hmac, fields.key_name.as_bytes());
        hmac.update(&RClass::ANY.0.to_be_bytes());
        hmac.update(&0u32.to_be_bytes());
        update_lowercased(hmac, fields.algorithm);
    }
    hmac.update(&time_bytes(fields.time_signed));
    hmac.update(&fields.fudge.to_be_bytes());
    if full {
        hmac.update(&fields.error.to_be_bytes());
        hmac.update(&(fields.other.len() as u16).to_be_bytes());
        hmac.update(fields.other);
    }
}

/// Digests a name in canonical form (RFC 4034 section 6.2: lowercased).
fn update_lowercased(hmac: &mut AnyHmac, name: &[u8]) {
    let mut lower = [0u8; MAX_NAME_LEN];
    let len = name.len().min(MAX_NAME_LEN);
    for (to, from) in lower.iter_mut().zip(&name[..len]) {
        *to = from.to_ascii_lowercase();
    }
    hmac.update(&lower[..len]);
}

fn time_bytes(time: u64) -> [u8; 6] {
    let bytes = time.to_be_bytes();
    [bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]
}

/// Appends a TSIG record after `buf[..len]` and counts it in ARCOUNT.
fn append(
    buf: &mut [u8],
    len: usize,
    fields: &Fields<'_>,
    mac: &[u8],
) -> Result<usize, TruncationError> {
    if len < 12 || buf.len() < len {
        return Err(TruncationError);
    }
    let rdlen = fields.algorithm.len() + 16 + mac.len() + fields.other.len();
    let total = fields.key_name.len() + 10 + rdlen;
    let arcount = u16::from_be_bytes([buf[10], buf[11]])
        .checked_add(1)
        .ok_or(TruncationError)?;
    let out = buf.get_mut(len..len + total).ok_or(TruncationError)?;
    let mut pos = 0;
    let mut put = |bytes: &[u8]| {
        out[pos..pos + bytes.len()].copy_from_slice(bytes);
        pos += bytes.len();
    };
    put(fields.key_name.as_bytes());
    put(&RType::TSIG.0.to_be_bytes());
    put(&RClass::ANY.0.to_be_bytes());
    put(&0u32.to_be_bytes());
    put(&(rdlen as u16).to_be_bytes());
    put(fields.algorithm);
    put(&time_bytes(fields.time_signed));
    put(&fields.fudge.to_be_bytes());
    put(&(mac.len() as u16).to_be_bytes());
    put(mac);
    put(&fields.original_id.to_be_bytes());
    put(&fields.error.to_be_bytes());
    put(&(fields.other.len() as u16).to_be_bytes());
    put(fields.other);
    buf[10..12].copy_from_slice(&arcount.to_be_bytes());
    Ok(len + total)
}

#[cfg(test)]
mod tests;
