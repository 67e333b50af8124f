//! Keys imported into a zone's key directory (`tern keys import`; issue
//! 24, docs/decisions/0014): from BIND's `K<zone>+<alg>+<tag>.key`,
//! `.private` and `.state` files, and from a PKCS#8 PEM file (Knot's
//! `keys/*.pem`, OpenSSL's `genpkey`), so that a signed zone moves to tern
//! with the same DNSKEY RRset: no rollover.
//!
//! An imported key keeps its DNSKEY, so its key tag: the private key is
//! read, its public key worked out by ring and compared with the `.key`
//! file's DNSKEY (flags, protocol, algorithm and key); the role is the
//! one those flags allow (257: KSK or CSK; 256: ZSK). It is written as
//! [`crate::keys`] writes a generated key, a `.pem` and a `.meta`, with
//! BIND's timing fields as RFC 7583's times.
//!
//! Every file is hostile input: files, lines and fields are bounded,
//! nothing here panics on what it reads, and each error names the file
//! and the field.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use tern_dnssec::key::{
    dnskey_rdata, ed25519_pkcs8, p256_pkcs8, p256_pkcs8_repaired, p256_scalar, rsa_pkcs8, RsaParts,
    DNSKEY_PROTOCOL, FLAG_SEP, FLAG_ZONE, P256_PUBLIC_KEY_LEN,
};
use tern_dnssec::{Algorithm, KeyRole, SigningKey, MAX_KEYS};
use tern_wire::name::{Name, NameBuf};

use crate::keys::{self, KeyMeta};

/// The largest file read (a 4096-bit RSA `.private` is about 3,300
/// octets, a `.state` file about 1,000).
pub const MAX_IMPORT_FILE: u64 = 16 * 1024;

/// The most files one import takes (each key has at most three).
pub const MAX_IMPORT_FILES: usize = 3 * MAX_KEYS;

/// The longest value of one field (a 4096-bit RSA modulus is 684 base64
/// characters).
const MAX_FIELD: usize = 1024;

/// The DNSKEY flag of a revoked key (RFC 5011 section 7).
const FLAG_REVOKE: u16 = 0x0080;

//----------- ImportedKey ----------------------------------------------------

/// A key read from BIND's files or a PEM file, checked, not yet written.
pub struct ImportedKey {
    /// The key, ready to sign, with its DNSKEY and tag.
    pub key: SigningKey,
    /// Its PKCS#8 document, what the key directory keeps.
    pub pkcs8: Vec<u8>,
    /// Its metadata (role, algorithm, tag, RFC 7583 times).
    pub meta: KeyMeta,
    /// The file it was read from (the `.private` or the `.pem`).
    pub source: PathBuf,
}

/// What the command line says of the keys imported.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportOptions {
    /// The role of every key (`--role`); otherwise the `.state` file's, or
    /// the DNSKEY flags': 256 a ZSK, 257 a KSK when a ZSK is imported with
    /// it or already in the zone, else a CSK.
    pub role: Option<KeyRole>,
    /// The algorithm of PEM keys (`--algorithm`); BIND's files name theirs.
    pub algorithm: Option<Algorithm>,
}

//----------- import ---------------------------------------------------------

/// Imports the keys of `files` into the zone `origin`'s key directory
/// under `state_directory` (`now`: Unix time, for times BIND's files do
/// not give). `files` are BIND's `.key`, `.private` and `.state` files
/// (any of a key's files names it; its `.key` and `.private` must both be
/// there, its `.state` is read when there) and PKCS#8 `.pem` files. With
/// `policy_algorithm`, a key of another algorithm is refused. Every key is
/// read and checked before any is written; a key whose tag is already in
/// the zone (imported or generated) is refused, so nothing is overwritten.
/// Returns the keys written, with their paths.
pub fn import(
    state_directory: &Path,
    origin: Name<'_>,
    files: &[PathBuf],
    options: ImportOptions,
    policy_algorithm: Option<Algorithm>,
    now: u64,
) -> Result<Vec<(KeyMeta, PathBuf)>, String> {
    if files.is_empty() {
        return Err("no key file given".to_string());
    }
    if files.len() > MAX_IMPORT_FILES {
        return Err(format!("more than {MAX_IMPORT_FILES} files"));
    }
    let dir = keys::key_dir(state_directory, origin);
    let existing = keys::read_keys(&dir)?;
    let mut sources = Vec::new();
    for file in files {
        let source = Source::of(file)?;
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    let mut read = Vec::with_capacity(sources.len());
    for source in &sources {
        read.push(source.read(origin, options, now)?);
    }
    // Roles left open by BIND's files: a KSK beside a ZSK, else a CSK.
    let zsk_present = read
        .iter()
        .any(|(_, flags, _)| flags & FLAG_SEP == 0 && flags & FLAG_ZONE != 0)
        || existing
            .iter()
            .any(|stored| stored.meta.role == KeyRole::Zsk);
    let mut imported = Vec::with_capacity(read.len());
    for (pending, _, role) in read {
        let role = role.unwrap_or(if zsk_present {
            KeyRole::Ksk
        } else {
            KeyRole::Csk
        });
        imported.push(pending.finish(role)?);
    }
    for (index, key) in imported.iter().enumerate() {
        let tag = key.meta.key_tag;
        if let Some(algorithm) = policy_algorithm {
            if key.meta.algorithm != algorithm {
                return Err(format!(
                    "{}: a key of algorithm {} ({}), the zone's policy signs with {} ({})",
                    key.source.display(),
                    key.meta.algorithm.number(),
                    keys::algorithm_name(key.meta.algorithm),
                    algorithm.number(),
                    keys::algorithm_name(algorithm)
                ));
            }
        }
        if let Some(stored) = existing.iter().find(|stored| stored.meta.key_tag == tag) {
            return Err(format!(
                "{}: key tag {tag} is already the zone's: {} (nothing imported)",
                key.source.display(),
                stored.path.display()
            ));
        }
        if let Some(other) = imported[..index]
            .iter()
            .find(|other| other.meta.key_tag == tag)
        {
            return Err(format!(
                "{} and {}: both have key tag {tag} (nothing imported)",
                other.source.display(),
                key.source.display()
            ));
        }
    }
    if existing.len() + imported.len() > MAX_KEYS {
        return Err(format!(
            "{}: the zone would have more than {MAX_KEYS} keys (nothing imported)",
            dir.display()
        ));
    }
    let mut written = Vec::with_capacity(imported.len());
    for key in imported {
        let path = keys::store_key(&dir, &key.meta, &key.pkcs8)?;
        written.push((key.meta, path));
    }
    Ok(written)
}

//----------- sources --------------------------------------------------------

/// One key's files.
#[derive(Debug, PartialEq, Eq)]
enum Source {
    /// BIND's: the path without its suffix (`.../Kexample.+013+12345`).
    Bind(PathBuf),
    /// A PKCS#8 PEM file.
    Pem(PathBuf),
}

/// A key read, its role still open when the files leave it so: the key
/// parts, the DNSKEY flags and the role if known.
type Read = (Pending, u16, Option<KeyRole>);

impl Source {
    fn of(path: &Path) -> Result<Source, String> {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| format!("{}: not a file name", path.display()))?;
        for suffix in [".key", ".private", ".state"] {
            if let Some(stem) = name.strip_suffix(suffix) {
                return Ok(Source::Bind(path.with_file_name(stem)));
            }
        }
        if name.ends_with(".pem") {
            return Ok(Source::Pem(path.to_path_buf()));
        }
        Err(format!(
            "{}: not a BIND key file (.key, .private, .state) nor a PEM file (.pem)",
            path.display()
        ))
    }

    fn read(&self, origin: Name<'_>, options: ImportOptions, now: u64) -> Result<Read, String> {
        match self {
            Source::Bind(stem) => {
                let with = |suffix: &str| {
                    let mut path = stem.clone().into_os_string();
                    path.push(suffix);
                    PathBuf::from(path)
                };
                let (key_path, private_path, state_path) =
                    (with(".key"), with(".private"), with(".state"));
                let key_text = read_text(&key_path)?;
                let private_text = read_text(&private_path)?;
                let state_text = if state_path.exists() {
                    Some(read_text(&state_path)?)
                } else {
                    None
                };
                let bind =
                    BindKey::parse(origin, &key_text, &private_text, state_text.as_deref(), now)
                        .map_err(|err| format!("{}: {err}", stem.display()))?;
                if let Some((algorithm, tag)) = tag_in_name(stem) {
                    if algorithm != bind.algorithm.number() || tag != key_tag_of(&bind.dnskey) {
                        return Err(format!(
                            "{}: the file name says algorithm {algorithm} and key tag {tag}; \
                             the key is algorithm {} with key tag {}",
                            key_path.display(),
                            bind.algorithm.number(),
                            key_tag_of(&bind.dnskey)
                        ));
                    }
                }
                let flags = bind.flags;
                let role = match options.role.or(bind.state_role) {
                    Some(role) => Some(role),
                    None if flags & FLAG_SEP == 0 => Some(KeyRole::Zsk),
                    None => None,
                };
                Ok((
                    Pending {
                        algorithm: bind.algorithm,
                        pkcs8: bind.pkcs8,
                        dnskey: Some(bind.dnskey),
                        times: bind.times,
                        source: private_path,
                    },
                    flags,
                    role,
                ))
            }
            Source::Pem(path) => {
                let (Some(algorithm), Some(role)) = (options.algorithm, options.role) else {
                    return Err(format!(
                        "{}: a PEM key needs its --algorithm and --role",
                        path.display()
                    ));
                };
                let text = read_text(path)?;
                let pkcs8 = keys::from_pem(&text).map_err(|err| {
                    format!(
                        "{}: {err} (a PKCS#8 key is wanted: `openssl pkcs8 -topk8 -nocrypt` \
                         converts others)",
                        path.display()
                    )
                })?;
                // Knot's (GnuTLS's) P-256 keys need their scalar's leading
                // zero taken out before ring reads them.
                let pkcs8 = if algorithm == Algorithm::EcdsaP256Sha256
                    && SigningKey::from_pkcs8(algorithm, role, &pkcs8).is_err()
                {
                    p256_pkcs8_repaired(&pkcs8).unwrap_or(pkcs8)
                } else {
                    pkcs8
                };
                // No timing metadata: published and active from now.
                let times = Times {
                    now,
                    created: Some(now),
                    published: Some(now),
                    active: Some(now),
                    retired: None,
                    removed: None,
                };
                Ok((
                    Pending {
                        algorithm,
                        pkcs8,
                        dnskey: None,
                        times,
                        source: path.clone(),
                    },
                    role.flags(),
                    Some(role),
                ))
            }
        }
    }
}

/// The algorithm and key tag in a file name `K<zone>+<alg>+<tag>`, if it
/// is one.
fn tag_in_name(stem: &Path) -> Option<(u8, u16)> {
    let name = stem.file_name()?.to_str()?;
    let mut fields = name.rsplitn(3, '+');
    let tag = fields.next()?;
    let algorithm = fields.next()?;
    let rest = fields.next()?;
    if !rest.starts_with('K') || tag.len() != 5 || algorithm.len() != 3 {
        return None;
    }
    Some((algorithm.parse().ok()?, tag.parse().ok()?))
}

/// Reads a file of at most [`MAX_IMPORT_FILE`] octets as UTF-8 text.
fn read_text(path: &Path) -> Result<String, String> {
    let failed = |err: std::io::Error| format!("{}: cannot read: {err}", path.display());
    let file = File::open(path).map_err(failed)?;
    let mut bytes = Vec::new();
    file.take(MAX_IMPORT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_IMPORT_FILE {
        return Err(format!(
            "{}: longer than {MAX_IMPORT_FILE} octets",
            path.display()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

//----------- Pending --------------------------------------------------------

/// A key's PKCS#8, before ring has read it with its role.
struct Pending {
    algorithm: Algorithm,
    pkcs8: Vec<u8>,
    /// The DNSKEY RDATA the key must have (BIND's `.key`).
    dnskey: Option<Vec<u8>>,
    times: Times,
    source: PathBuf,
}

impl Pending {
    /// Reads the key as `role` (whose flags must be the DNSKEY's) and
    /// checks that its DNSKEY is the one expected.
    fn finish(self, role: KeyRole) -> Result<ImportedKey, String> {
        let source = self.source.display();
        if let Some(dnskey) = &self.dnskey {
            let flags = match dnskey.get(..2) {
                Some(&[high, low]) => u16::from_be_bytes([high, low]),
                _ => return Err(format!("{source}: a DNSKEY of {} octets", dnskey.len())),
            };
            if role.flags() != flags {
                return Err(format!(
                    "{source}: a key with flags {flags} cannot be a {} (flags {})",
                    role_text(role),
                    role.flags()
                ));
            }
        }
        let key = SigningKey::from_pkcs8(self.algorithm, role, &self.pkcs8)
            .map_err(|err| format!("{source}: {err}"))?;
        if let Some(dnskey) = &self.dnskey {
            if key.dnskey_rdata() != dnskey.as_slice() {
                return Err(format!(
                    "{source}: the private key's public key is not the .key file's DNSKEY"
                ));
            }
        }
        let meta = KeyMeta {
            algorithm: self.algorithm,
            role,
            key_tag: key.key_tag(),
            created: self.times.created.unwrap_or(self.times.now),
            published: self.times.published,
            active: self.times.active,
            retired: self.times.retired,
            removed: self.times.removed,
            // No DS times: a key moved from another signer counts as having
            // its DS at the parent already (no CDS, no wait for it).
            ..KeyMeta::new(self.algorithm, role, key.key_tag(), self.times.now)
        };
        Ok(ImportedKey {
            key,
            pkcs8: self.pkcs8,
            meta,
            source: self.source,
        })
    }
}

fn role_text(role: KeyRole) -> &'static str {
    match role {
        KeyRole::Csk => "CSK",
        KeyRole::Ksk => "KSK",
        KeyRole::Zsk => "ZSK",
    }
}

fn key_tag_of(dnskey: &[u8]) -> u16 {
    tern_dnssec::key::key_tag(dnskey)
}

//----------- Times ----------------------------------------------------------

/// RFC 7583's times of a key, Unix seconds, as BIND's files give them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Times {
    /// The import's time, for what the files leave out.
    now: u64,
    created: Option<u64>,
    published: Option<u64>,
    active: Option<u64>,
    retired: Option<u64>,
    removed: Option<u64>,
}

//----------- BindKey --------------------------------------------------------

/// A key as BIND's three files give it.
#[derive(Debug)]
pub struct BindKey {
    /// The algorithm (the `.key`'s, equal to the `.private`'s).
    pub algorithm: Algorithm,
    /// The DNSKEY flags.
    pub flags: u16,
    /// The DNSKEY RDATA of the `.key` file.
    pub dnskey: Vec<u8>,
    /// The private key as PKCS#8 (made from the `.private`'s fields).
    pub pkcs8: Vec<u8>,
    /// The role the `.state` file gives (`KSK:` and `ZSK:`), if any.
    pub state_role: Option<KeyRole>,
    times: Times,
}

impl BindKey {
    /// Reads a key from the texts of its `.key` and `.private` files and
    /// of its `.state` file if there is one, for the zone `origin`, at
    /// Unix time `now`. The `.state` file's times (BIND 9.16 and later,
    /// `dnssec-policy`) win over the `.private`'s. A key without any
    /// publication or activation time is taken as published and active
    /// since `now`, as `dnssec-signzone` takes a key without timing
    /// metadata; one already deleted (`Delete` in the past) is refused.
    pub fn parse(
        origin: Name<'_>,
        key_text: &str,
        private_text: &str,
        state_text: Option<&str>,
        now: u64,
    ) -> Result<BindKey, String> {
        let (flags, algorithm_number, public) =
            parse_dnskey_file(origin, key_text).map_err(|err| format!(".key: {err}"))?;
        let algorithm = Algorithm::from_number(algorithm_number).ok_or_else(|| {
            format!(
                ".key: algorithm {algorithm_number} is not one tern signs with \
                 (8 RSASHA256, 13 ECDSAP256SHA256, 15 ED25519)"
            )
        })?;
        if flags & FLAG_REVOKE != 0 {
            return Err(format!(".key: a revoked key (flags {flags})"));
        }
        if flags != FLAG_ZONE && flags != FLAG_ZONE | FLAG_SEP {
            return Err(format!(
                ".key: flags {flags}; a zone key has 256 (ZSK) or 257 (KSK, CSK)"
            ));
        }
        let dnskey = dnskey_rdata(flags, algorithm_number, &public);
        let private = Fields::parse(".private", private_text, PRIVATE_FIELDS)?;
        let format = private.required("Private-key-format")?;
        let minor = format
            .strip_prefix("v1.")
            .and_then(|minor| minor.parse::<u8>().ok());
        if minor.is_none() {
            return Err(format!(
                ".private: Private-key-format {format:?}; v1.2 and v1.3 are read"
            ));
        }
        let private_algorithm = first_number(private.required("Algorithm")?)
            .ok_or_else(|| ".private: Algorithm is not a number".to_string())?;
        if private_algorithm != algorithm_number {
            return Err(format!(
                ".private: algorithm {private_algorithm}, the .key's is {algorithm_number}"
            ));
        }
        let pkcs8 = private_pkcs8(algorithm, &private, &public)?;
        // The private key must be the .key's: ring reads it (checking its
        // parts), and the DNSKEY it gives must be the file's.
        let role = if flags & FLAG_SEP != 0 {
            KeyRole::Ksk
        } else {
            KeyRole::Zsk
        };
        let key = SigningKey::from_pkcs8(algorithm, role, &pkcs8)
            .map_err(|err| format!(".private: {err}"))?;
        if key.dnskey_rdata() != dnskey.as_slice() {
            return Err(".private: its public key is not the .key file's DNSKEY".to_string());
        }
        let mut times = Times {
            now,
            created: private.time("Created")?,
            published: private.time("Publish")?,
            active: private.time("Activate")?,
            retired: private.time("Inactive")?,
            removed: private.time("Delete")?,
        };
        let mut state_role = None;
        if let Some(text) = state_text {
            let state = Fields::parse(".state", text, STATE_FIELDS)?;
            if let Some(number) = state.get("Algorithm") {
                if first_number(number) != Some(algorithm_number) {
                    return Err(format!(
                        ".state: Algorithm {number:?}, the .key's is {algorithm_number}"
                    ));
                }
            }
            let yes = |field| -> Result<Option<bool>, String> {
                match state.get(field) {
                    None => Ok(None),
                    Some("yes") => Ok(Some(true)),
                    Some("no") => Ok(Some(false)),
                    Some(other) => Err(format!(".state: {field}: {other:?} is not yes or no")),
                }
            };
            state_role = match (yes("KSK")?, yes("ZSK")?) {
                (Some(true), Some(true)) => Some(KeyRole::Csk),
                (Some(true), _) => Some(KeyRole::Ksk),
                (_, Some(true)) => Some(KeyRole::Zsk),
                (None, None) => None,
                _ => return Err(".state: KSK: no and ZSK: no".to_string()),
            };
            for (field, time) in [
                ("Generated", &mut times.created),
                ("Published", &mut times.published),
                ("Active", &mut times.active),
                ("Retired", &mut times.retired),
                ("Removed", &mut times.removed),
            ] {
                if let Some(value) = state.time(field)? {
                    *time = Some(value);
                }
            }
        }
        if times.published.is_none() && times.active.is_none() {
            times.published = Some(now);
            times.active = Some(now);
        }
        if let Some(removed) = times.removed.filter(|&removed| removed <= now) {
            return Err(format!(
                "the key was removed from the zone at {} (Delete or Removed): nothing to import",
                removed
            ));
        }
        Ok(BindKey {
            algorithm,
            flags,
            dnskey,
            pkcs8,
            state_role,
            times,
        })
    }
}

/// The `.private` fields read; any other is ignored (BIND writes more:
/// `Revoke`, `SyncPublish`, ...).
const PRIVATE_FIELDS: &[&str] = &[
    "Private-key-format",
    "Algorithm",
    "PrivateKey",
    "Modulus",
    "PublicExponent",
    "PrivateExponent",
    "Prime1",
    "Prime2",
    "Exponent1",
    "Exponent2",
    "Coefficient",
    "Created",
    "Publish",
    "Activate",
    "Inactive",
    "Delete",
];

/// The `.state` fields read.
const STATE_FIELDS: &[&str] = &[
    "Algorithm",
    "KSK",
    "ZSK",
    "Generated",
    "Published",
    "Active",
    "Retired",
    "Removed",
];

/// The PKCS#8 of the `.private` fields of `algorithm`; `public` is the
/// `.key`'s public key (ring wants a P-256 key's public point beside its
/// scalar).
fn private_pkcs8(
    algorithm: Algorithm,
    fields: &Fields<'_>,
    public: &[u8],
) -> Result<Vec<u8>, String> {
    match algorithm {
        Algorithm::EcdsaP256Sha256 | Algorithm::Ed25519 => {
            let private = fields.base64("PrivateKey")?;
            let document = if algorithm == Algorithm::Ed25519 {
                ed25519_pkcs8(&private)
            } else {
                if public.len() != P256_PUBLIC_KEY_LEN {
                    return Err(format!(
                        ".key: a public key of {} octets, not P-256's {P256_PUBLIC_KEY_LEN}",
                        public.len()
                    ));
                }
                // BIND writes the scalar without its leading zero octets.
                p256_scalar(&private).and_then(|scalar| p256_pkcs8(&scalar, public))
            };
            document.map_err(|err| format!(".private: PrivateKey: {err}"))
        }
        Algorithm::RsaSha256 => {
            let modulus = fields.base64("Modulus")?;
            let public_exponent = fields.base64("PublicExponent")?;
            let private_exponent = fields.base64("PrivateExponent")?;
            let prime1 = fields.base64("Prime1")?;
            let prime2 = fields.base64("Prime2")?;
            let exponent1 = fields.base64("Exponent1")?;
            let exponent2 = fields.base64("Exponent2")?;
            let coefficient = fields.base64("Coefficient")?;
            // ring refuses the key later anyway; the size is the reason
            // an operator needs.
            let bits = significant_bits(&modulus);
            if !(tern_dnssec::key::RSA_MIN_BITS - 1..=tern_dnssec::key::RSA_MAX_BITS)
                .contains(&bits)
            {
                return Err(format!(
                    ".private: {}",
                    tern_dnssec::KeyError::RsaSize(bits)
                ));
            }
            rsa_pkcs8(&RsaParts {
                modulus: &modulus,
                public_exponent: &public_exponent,
                private_exponent: &private_exponent,
                prime1: &prime1,
                prime2: &prime2,
                exponent1: &exponent1,
                exponent2: &exponent2,
                coefficient: &coefficient,
            })
            .map_err(|err| format!(".private: {err}"))
        }
    }
}

/// The bit length of a big-endian unsigned integer.
fn significant_bits(bytes: &[u8]) -> usize {
    match bytes.iter().position(|&byte| byte != 0) {
        None => 0,
        Some(start) => (bytes.len() - start) * 8 - bytes[start].leading_zeros() as usize,
    }
}

/// The leading decimal number of `13 (ECDSAP256SHA256)`.
fn first_number(text: &str) -> Option<u8> {
    text.split_whitespace().next()?.parse().ok()
}

//----------- the .key file --------------------------------------------------

/// The DNSKEY of a `.key` file: `OWNER [TTL] [IN] DNSKEY FLAGS 3 ALG KEY`
/// on one line (the key's base64 may be split by spaces), after comment
/// lines (`;`). Returns the flags, the algorithm number and the public
/// key.
fn parse_dnskey_file(origin: Name<'_>, text: &str) -> Result<(u16, u8, Vec<u8>), String> {
    let mut records = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with(';') && !line.starts_with('#'));
    let line = records.next().ok_or("no DNSKEY record")?;
    if records.next().is_some() {
        return Err("more than one record".to_string());
    }
    // A comment after the record.
    let line = line.split(';').next().unwrap_or(line);
    let mut tokens = line.split_ascii_whitespace();
    let owner = tokens.next().ok_or("no owner")?;
    let owner = NameBuf::from_text(owner.as_bytes(), Some(origin))
        .map_err(|err| format!("owner {owner:?}: {err}"))?;
    if !owner.as_name().eq_ignore_case(origin) {
        return Err(format!(
            "the key of {}, not of the zone {origin}",
            owner.as_name()
        ));
    }
    // TTL and class, in either order, then the type.
    let mut fields_before = 0;
    loop {
        let token = tokens.next().ok_or("no DNSKEY")?;
        if token.eq_ignore_ascii_case("DNSKEY") {
            break;
        }
        fields_before += 1;
        let ttl = token.bytes().all(|byte| byte.is_ascii_digit());
        if fields_before > 2 || !(ttl || token.eq_ignore_ascii_case("IN")) {
            return Err(format!("{token:?} where DNSKEY was expected"));
        }
    }
    let number = |what: &str, token: Option<&str>| -> Result<u64, String> {
        let token = token.ok_or_else(|| format!("no {what}"))?;
        token
            .parse::<u64>()
            .map_err(|_| format!("{what} {token:?} is not a number"))
    };
    let flags = number("flags", tokens.next())?;
    let protocol = number("protocol", tokens.next())?;
    let algorithm = number("algorithm", tokens.next())?;
    let flags = u16::try_from(flags).map_err(|_| format!("flags {flags} above 65535"))?;
    if protocol != u64::from(DNSKEY_PROTOCOL) {
        return Err(format!("protocol {protocol}, not 3"));
    }
    let algorithm =
        u8::try_from(algorithm).map_err(|_| format!("algorithm {algorithm} above 255"))?;
    let mut base64 = String::new();
    for token in tokens {
        if base64.len() + token.len() > MAX_FIELD {
            return Err(format!("a public key longer than {MAX_FIELD} characters"));
        }
        base64.push_str(token);
    }
    if base64.is_empty() {
        return Err("no public key".to_string());
    }
    let public = data_encoding::BASE64
        .decode(base64.as_bytes())
        .map_err(|err| format!("public key: bad base64: {err}"))?;
    Ok((flags, algorithm, public))
}

//----------- Fields ---------------------------------------------------------

/// The `Name: value` lines of a `.private` or `.state` file, the names in
/// `wanted` only (each at most once); comments (`;`) and others skipped.
struct Fields<'a> {
    /// The file's suffix, which every error starts with.
    file: &'static str,
    fields: Vec<(&'static str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn parse(
        file: &'static str,
        text: &'a str,
        wanted: &[&'static str],
    ) -> Result<Fields<'a>, String> {
        let mut fields: Vec<(&'static str, &'a str)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with(';') {
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("{file}: line {}: no \"Name: value\"", number + 1));
            };
            let Some(&name) = wanted.iter().find(|&&wanted| wanted == name.trim()) else {
                continue;
            };
            let value = value.trim();
            if value.len() > MAX_FIELD {
                return Err(format!(
                    "{file}: line {}: {name} longer than {MAX_FIELD} characters",
                    number + 1
                ));
            }
            if fields.iter().any(|&(known, _)| known == name) {
                return Err(format!("{file}: line {}: {name} given twice", number + 1));
            }
            fields.push((name, value));
        }
        Ok(Fields { file, fields })
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.fields
            .iter()
            .find(|&&(known, _)| known == name)
            .map(|&(_, value)| value)
    }

    fn required(&self, name: &str) -> Result<&'a str, String> {
        self.get(name)
            .ok_or_else(|| format!("{}: no {name}", self.file))
    }

    fn base64(&self, name: &str) -> Result<Vec<u8>, String> {
        data_encoding::BASE64
            .decode(self.required(name)?.as_bytes())
            .map_err(|err| format!("{}: {name}: bad base64: {err}", self.file))
    }

    /// A time field (`20261127150552`, maybe followed by its text form in
    /// parentheses as `.state` files write it), as Unix seconds; 0 (BIND's
    /// "never") is no time.
    fn time(&self, name: &str) -> Result<Option<u64>, String> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let digits = value.split_whitespace().next().unwrap_or("");
        if digits == "0" {
            return Ok(None);
        }
        bind_time(digits).map(Some).ok_or_else(|| {
            format!(
                "{}: {name}: {value:?} is not a time YYYYMMDDHHMMSS",
                self.file
            )
        })
    }
}

/// BIND's `YYYYMMDDHHMMSS` (UTC) as Unix seconds: years 1970 to 9999.
fn bind_time(text: &str) -> Option<u64> {
    if text.len() != 14 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| text.get(range)?.parse::<u64>().ok();
    let (year, month, day) = (field(0..4)?, field(4..6)?, field(6..8)?);
    let (hour, minute, second) = (field(8..10)?, field(10..12)?, field(12..14)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if year < 1970 || day == 0 || day > month_days || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Days since 1970-01-01 of the civil date (H. Hinnant's
    // days_from_civil, with March as the first month of the year).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// Real `dnssec-keygen` output (BIND 9.18) kept under testdata/bind.
    fn fixture(file: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/bind")
            .join(file);
        std::fs::read_to_string(&path).unwrap()
    }

    fn bind(stem: &str, state: bool, now: u64) -> Result<BindKey, String> {
        let zone = stem
            .trim_start_matches('K')
            .split('+')
            .next()
            .unwrap()
            .to_string();
        BindKey::parse(
            name(&zone).as_name(),
            &fixture(&format!("{stem}.key")),
            &fixture(&format!("{stem}.private")),
            state.then(|| fixture(&format!("{stem}.state"))).as_deref(),
            now,
        )
    }

    /// 2026-11-27 15:05:52 UTC, the fixtures' creation time.
    const CREATED: u64 = 1_795_791_952;
    const NOW: u64 = CREATED + 600;

    #[test]
    fn bind_times_are_utc_unix_seconds() {
        assert_eq!(bind_time("19700101000000"), Some(0));
        assert_eq!(bind_time("20261127150552"), Some(CREATED));
        assert_eq!(bind_time("20000229235959"), Some(951_868_799));
        assert_eq!(bind_time("99991231235959"), Some(253_402_300_799));
        for bad in [
            "2026112715055",
            "202611271505521",
            "20261127150560",
            "20260229000000",
            "21000229000000",
            "20261301000000",
            "20261100000000",
            "19691231235959",
            "2026112715055x",
            "+0261127150552",
            "２０２６１１２７１５０５",
        ] {
            assert_eq!(bind_time(bad), None, "{bad}");
        }
    }

    /// Each algorithm's real BIND key reads back with the `.key`'s DNSKEY,
    /// so its key tag, and the `.private`'s times.
    #[test]
    fn real_bind_keys_keep_their_dnskey_and_tag() {
        for (stem, algorithm, flags, tag) in [
            ("Kexample.com.+008+15850", Algorithm::RsaSha256, 257, 15850),
            ("Kexample.com.+015+24044", Algorithm::Ed25519, 257, 24044),
            (
                "Kexample.net.+013+31704",
                Algorithm::EcdsaP256Sha256,
                257,
                31704,
            ),
            (
                "Kexample.net.+013+29006",
                Algorithm::EcdsaP256Sha256,
                256,
                29006,
            ),
        ] {
            let bind = bind(stem, false, NOW).unwrap();
            assert_eq!((bind.algorithm, bind.flags), (algorithm, flags), "{stem}");
            assert_eq!(key_tag_of(&bind.dnskey), tag, "{stem}");
            let role = if flags == 257 {
                KeyRole::Ksk
            } else {
                KeyRole::Zsk
            };
            let key = SigningKey::from_pkcs8(algorithm, role, &bind.pkcs8).unwrap();
            assert_eq!(key.dnskey_rdata(), bind.dnskey.as_slice(), "{stem}");
            assert_eq!(key.key_tag(), tag);
            assert!(!key.sign(b"data").unwrap().is_empty());
            assert!(bind.times.created.unwrap() >= CREATED, "{stem}");
            assert_eq!(bind.times.published, bind.times.created, "{stem}");
            assert_eq!(bind.times.active, bind.times.created, "{stem}");
            assert_eq!((bind.times.retired, bind.times.removed), (None, None));
            assert_eq!(bind.state_role, None);
        }
    }

    /// A P-256 key whose scalar begins with a zero octet (one in 256):
    /// BIND writes its `PrivateKey` as 31 octets. Made by openssl (its
    /// scalar 00e33bba...), written as BIND writes it.
    #[test]
    fn a_bind_p256_scalar_of_31_octets_is_read() {
        let key = "example.net. 3600 IN DNSKEY 256 3 13 \
            t9HDqEv+0Ibjd47YTLGfk0YV+9+pJyprg5Et+rSlUehDHu8kh9c6fviinZExl+2O1bUCw8hpcWUJhmAkXMEvZw==\n";
        let private = "Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\n\
            PrivateKey: 4zu6hb5kJeQy1CwGJyhrLfujRD5D7nOpE+KKeF/SPg==\n\
            Created: 20261127150558\nPublish: 20261127150558\nActivate: 20261127150558\n";
        let bind = BindKey::parse(name("example.net.").as_name(), key, private, None, NOW).unwrap();
        let key =
            SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Zsk, &bind.pkcs8).unwrap();
        assert_eq!(key.dnskey_rdata(), bind.dnskey.as_slice());
        assert!(!key.sign(b"data").unwrap().is_empty());
    }

    /// The `.state` file (dnssec-policy) gives the role and its times win;
    /// the `.private`'s Inactive and Delete (`dnssec-settime`) are read.
    #[test]
    fn state_files_give_roles_and_times() {
        let ksk = bind("Kexample.net.+013+31704", true, NOW).unwrap();
        assert_eq!(ksk.state_role, Some(KeyRole::Ksk));
        let zsk = bind("Kexample.net.+013+29006", true, NOW).unwrap();
        assert_eq!(zsk.state_role, Some(KeyRole::Zsk));
        let csk = bind("Kexample.org.+008+25915", true, NOW).unwrap();
        assert_eq!(csk.state_role, Some(KeyRole::Csk));
        assert_eq!(csk.flags, 257);
        assert_eq!(key_tag_of(&csk.dnskey), 25915);
        assert_eq!(csk.times.retired, bind_time("20270101000000"));
        assert_eq!(csk.times.removed, bind_time("20270201000000"));
        // Once its Delete time has passed, it is not imported.
        let later = bind_time("20270201000000").unwrap();
        let err = bind("Kexample.org.+008+25915", true, later).unwrap_err();
        assert!(err.contains("removed from the zone"), "{err}");
    }

    /// Damaged files fail with the file and the field named, never a panic.
    #[test]
    fn hostile_bind_files_are_refused() {
        let origin = name("example.net.");
        let key = fixture("Kexample.net.+013+29006.key");
        let private = fixture("Kexample.net.+013+29006.private");
        let other_private = fixture("Kexample.net.+013+31704.private");
        let rsa_key = fixture("Kexample.com.+008+15850.key");
        let rsa_private = fixture("Kexample.com.+008+15850.private");
        let parse = |key: &str, private: &str, state: Option<&str>| {
            BindKey::parse(origin.as_name(), key, private, state, NOW).map(|_| ())
        };
        let cases: Vec<(String, String, Option<String>, &str)> = vec![
            (
                String::new(),
                private.clone(),
                None,
                ".key: no DNSKEY record",
            ),
            (
                key.replace("example.net.", "example.org."),
                private.clone(),
                None,
                "not of the zone",
            ),
            (
                key.replace("DNSKEY 256", "DS 256"),
                private.clone(),
                None,
                "where DNSKEY",
            ),
            (
                key.replace(" 256 3 13", " 256 2 13"),
                private.clone(),
                None,
                "protocol 2",
            ),
            (
                key.replace(" 256 3 13", " 385 3 13"),
                private.clone(),
                None,
                "revoked",
            ),
            (
                key.replace(" 256 3 13", " 0 3 13"),
                private.clone(),
                None,
                "flags 0",
            ),
            (
                key.replace(" 256 3 13", " 70000 3 13"),
                private.clone(),
                None,
                "above 65535",
            ),
            (
                key.replace(" 256 3 13", " 256 3 14"),
                private.clone(),
                None,
                "algorithm 14",
            ),
            (
                key.replace(" 256 3 13", " 256 3 1300"),
                private.clone(),
                None,
                "above 255",
            ),
            (key.replace("==", "=!"), private.clone(), None, "bad base64"),
            (
                format!("{key}{key}"),
                private.clone(),
                None,
                "more than one record",
            ),
            (
                key.clone(),
                other_private.clone(),
                None,
                "InconsistentComponents",
            ),
            (
                key.clone(),
                private.replace("v1.3", "v2.0"),
                None,
                "Private-key-format",
            ),
            (
                key.clone(),
                private.replace("Algorithm: 13", "Algorithm: 15"),
                None,
                "algorithm 15",
            ),
            (
                key.clone(),
                // Three octets more (1, 2, 3): past 32 (leading zeros
                // would be dropped, as BIND and GnuTLS write them).
                private.replace("PrivateKey: ", "PrivateKey: AQID"),
                None,
                "PrivateKey",
            ),
            (
                key.clone(),
                private.replace("PrivateKey", "Private"),
                None,
                "no PrivateKey",
            ),
            (
                key.clone(),
                format!("{private}Created: 20261127150553\n"),
                None,
                "twice",
            ),
            (
                key.clone(),
                private.replace("Created: 2026", "Created: 1926"),
                None,
                "Created",
            ),
            (key.clone(), format!("{private}garbage\n"), None, "line 7"),
            (
                key.clone(),
                format!("{private}PrivateExponent: {}\n", "A".repeat(MAX_FIELD + 1)),
                None,
                "longer than",
            ),
            (
                key.clone(),
                private.clone(),
                Some("KSK: maybe\n".into()),
                "not yes or no",
            ),
            (
                key.clone(),
                private.clone(),
                Some("KSK: no\nZSK: no\n".into()),
                "KSK: no",
            ),
            (
                key.clone(),
                private.clone(),
                Some("Algorithm: 8\n".into()),
                ".state: Algorithm",
            ),
            (
                key.clone(),
                private.clone(),
                Some("Active: soon\n".into()),
                ".state: Active",
            ),
            (
                rsa_key.clone(),
                rsa_private.clone(),
                None,
                "not of the zone",
            ),
        ];
        for (key, private, state, expected) in cases {
            let err = parse(&key, &private, state.as_deref())
                .err()
                .unwrap_or_else(|| panic!("{expected}: accepted"));
            assert!(err.contains(expected), "{expected}: {err}");
        }
        // RSA: a part cut short, a modulus below 2048 bits (RFC 5702's
        // 512-bit example key) or inconsistent parts.
        let origin = name("example.com.");
        let parse = |key: &str, private: &str| {
            BindKey::parse(origin.as_name(), key, private, None, NOW).map(|_| ())
        };
        let prime1 = rsa_private
            .lines()
            .find(|line| line.starts_with("Prime1: "))
            .unwrap();
        for (private, expected) in [
            (
                rsa_private.replace(prime1, "Prime1: AQAB"),
                "PKCS#8 key rejected",
            ),
            (
                rsa_private.replace("Coefficient: ", "Coefficient: AQAB"),
                "PKCS#8 key rejected",
            ),
            (rsa_private.replace("Modulus", "Modulo"), "no Modulus"),
        ] {
            let err = parse(&rsa_key, &private)
                .err()
                .unwrap_or_else(|| panic!("{expected}: accepted"));
            assert!(err.contains(expected), "{expected}: {err}");
        }
        // An Ed25519 seed (no public key in it) that is not the .key's.
        let ed_key = fixture("Kexample.com.+015+24044.key");
        let ed_private = fixture("Kexample.com.+015+24044.private");
        let seed = ed_private
            .lines()
            .find(|line| line.starts_with("PrivateKey: "))
            .unwrap();
        let other = format!("PrivateKey: {}", data_encoding::BASE64.encode(&[7; 32]));
        let err = parse(&ed_key, &ed_private.replace(seed, &other)).unwrap_err();
        assert!(err.contains("not the .key file's DNSKEY"), "{err}");
        let small = "example.com. IN DNSKEY 256 3 8 AwEAAcFcGsaxxdgiuuGmCkVImy4h99CqT7jwY3pexPGcnUFtR2Fh36BponcwtkZ4cAgtvd4Qs8PkxUdp6p/DlUmObdk=\n";
        let small_private = "Private-key-format: v1.2\nAlgorithm: 8 (RSASHA256)\n\
            Modulus: wVwaxrHF2CK64aYKRUibLiH30KpPuPBjel7E8ZydQW1HYWHfoGmidzC2RnhwCC293hCzw+TFR2nqn8OVSY5t2Q==\n\
            PublicExponent: AQAB\n\
            PrivateExponent: UR44xX6zB3eaeyvTRzmskHADrPCmPWnr8dxsNwiDGHzrMKLN+i/HAam+97HxIKVWNDH2ba9Mf1SA8xu9dcHZAQ==\n\
            Prime1: 4c8IvFu1AVXGWeFLLFh5vs7fbdzdC6U82fduE6KkSWk=\n\
            Prime2: 2zZpBE8ZXVnL74QjG4zINlDfH+EOEtjJJ3RtaYDugvE=\n\
            Exponent1: G2xAPFfK0KGxGANDVNxd1K1c9wOmmJ51mGbzKFFNMFk=\n\
            Exponent2: GYxP1Pa7CAwtHm8SAGX594qZVofOMhgd6YFCNyeVpKE=\n\
            Coefficient: icQdNRjlZGPmuJm2TIadubcO8X7V4y07aVhX464tx8Q=\n";
        let err = parse(small, small_private).unwrap_err();
        assert!(err.contains("an RSA key of 512 bits"), "{err}");
    }

    /// Every prefix of a real `.private` and `.key` fails cleanly or reads;
    /// none panics.
    #[test]
    fn truncated_files_never_panic() {
        for stem in ["Kexample.com.+008+15850", "Kexample.net.+013+29006"] {
            let zone = if stem.contains("com") {
                "example.com."
            } else {
                "example.net."
            };
            let origin = name(zone);
            let key = fixture(&format!("{stem}.key"));
            let private = fixture(&format!("{stem}.private"));
            for cut in (0..private.len()).step_by(7) {
                let _ = BindKey::parse(origin.as_name(), &key, &private[..cut], None, NOW);
            }
            for cut in 0..key.len() {
                if key.is_char_boundary(cut) {
                    let _ = BindKey::parse(origin.as_name(), &key[..cut], &private, None, NOW);
                }
            }
        }
    }

    #[test]
    fn key_file_names() {
        assert_eq!(
            tag_in_name(Path::new("/x/Kexample.com.+008+15850")),
            Some((8, 15850))
        );
        assert_eq!(tag_in_name(Path::new("Ka+b.+013+00042")), Some((13, 42)));
        assert_eq!(tag_in_name(Path::new("example+013+00042")), None);
        assert_eq!(tag_in_name(Path::new("Kexample.+13+42")), None);
        assert!(Source::of(Path::new("a/Kx.+013+00001.state")).is_ok());
        assert!(Source::of(Path::new("a/key.txt")).is_err());
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tern-import-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn copy_fixtures(dir: &Path, stem: &str, suffixes: &[&str]) -> PathBuf {
        for suffix in suffixes {
            let file = format!("{stem}{suffix}");
            std::fs::write(dir.join(&file), fixture(&file)).unwrap();
        }
        dir.join(format!("{stem}.key"))
    }

    /// A KSK and a ZSK imported together (files named as a shell glob
    /// gives them) are written as keys.rs writes keys, read back with
    /// their tags, and a second import of either is refused.
    #[test]
    fn import_writes_keys_and_refuses_their_tags_again() {
        let dir = temp_dir("pair");
        let state = dir.join("state");
        let origin = name("example.net.");
        let mut files = Vec::new();
        for stem in ["Kexample.net.+013+31704", "Kexample.net.+013+29006"] {
            copy_fixtures(&dir, stem, &[".key", ".private"]);
            files.push(dir.join(format!("{stem}.key")));
            files.push(dir.join(format!("{stem}.private")));
        }
        let written = import(
            &state,
            origin.as_name(),
            &files,
            ImportOptions::default(),
            Some(Algorithm::EcdsaP256Sha256),
            NOW,
        )
        .unwrap();
        let roles: Vec<_> = written
            .iter()
            .map(|(meta, _)| (meta.role, meta.key_tag))
            .collect();
        assert_eq!(roles, [(KeyRole::Ksk, 31704), (KeyRole::Zsk, 29006)]);
        let stored = keys::read_keys(&keys::key_dir(&state, origin.as_name())).unwrap();
        let mut tags: Vec<_> = stored.iter().map(|key| key.key.key_tag()).collect();
        tags.sort_unstable();
        assert_eq!(tags, [29006, 31704]);
        assert!(stored.iter().all(|key| key.meta.created >= CREATED));
        // Again: refused, nothing written.
        let err = import(
            &state,
            origin.as_name(),
            &files[2..],
            ImportOptions::default(),
            None,
            NOW,
        )
        .unwrap_err();
        assert!(err.contains("key tag 29006 is already the zone's"), "{err}");
        // A policy of another algorithm refuses the key.
        let err = import(
            &dir.join("other"),
            origin.as_name(),
            &files[..1],
            ImportOptions::default(),
            Some(Algorithm::Ed25519),
            NOW,
        )
        .unwrap_err();
        assert!(err.contains("the zone's policy signs with 15"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A lone KSK-flagged key is a CSK; `--role ksk` makes it a KSK, and a
    /// role its flags forbid is refused.
    #[test]
    fn roles_from_flags_and_the_command_line() {
        let dir = temp_dir("roles");
        let origin = name("example.com.");
        let file = copy_fixtures(&dir, "Kexample.com.+015+24044", &[".key", ".private"]);
        let run = |state: &str, role: Option<KeyRole>| {
            import(
                &dir.join(state),
                origin.as_name(),
                std::slice::from_ref(&file),
                ImportOptions {
                    role,
                    algorithm: None,
                },
                None,
                NOW,
            )
        };
        assert_eq!(run("a", None).unwrap()[0].0.role, KeyRole::Csk);
        assert_eq!(
            run("b", Some(KeyRole::Ksk)).unwrap()[0].0.role,
            KeyRole::Ksk
        );
        let err = run("c", Some(KeyRole::Zsk)).err().unwrap();
        assert!(err.contains("flags 257 cannot be a ZSK"), "{err}");
        // A .key without its .private.
        std::fs::remove_file(dir.join("Kexample.com.+015+24044.private")).unwrap();
        let err = run("d", None).err().unwrap();
        assert!(err.contains(".private: cannot read"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A PKCS#8 PEM key (here one tern generates, as Knot and OpenSSL
    /// write them) with its role and algorithm from the command line.
    #[test]
    fn pem_keys_need_role_and_algorithm() {
        let dir = temp_dir("pem");
        let origin = name("example.org.");
        let (key, pkcs8) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Zsk).unwrap();
        let file = dir.join("key.pem");
        std::fs::write(&file, keys::to_pem(&pkcs8)).unwrap();
        let run = |options| {
            import(
                &dir.join("state"),
                origin.as_name(),
                std::slice::from_ref(&file),
                options,
                None,
                NOW,
            )
        };
        let err = run(ImportOptions::default()).err().unwrap();
        assert!(err.contains("needs its --algorithm and --role"), "{err}");
        let written = run(ImportOptions {
            role: Some(KeyRole::Zsk),
            algorithm: Some(Algorithm::EcdsaP256Sha256),
        })
        .unwrap();
        assert_eq!(written[0].0.key_tag, key.key_tag());
        assert_eq!(written[0].0.created, NOW);
        assert_eq!(written[0].0.active, Some(NOW));
        // Knot's PEM (keymgr 3.2, GnuTLS: a 33-octet scalar), with the
        // key tag `keymgr list` printed.
        std::fs::write(
            &file,
            "-----BEGIN PRIVATE KEY-----\n\
             MIGUAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHoweAIBAQQhAM//CuSCK2peRVtq\n\
             q5fL0OVZl1IU6nYJj+fqRf0aoiZqoAoGCCqGSM49AwEHoUQDQgAETaEg2pTNbdAf\n\
             X7fiSNONOkRJYhO9iyc2JO1Tpog3J+uaGToXFNgnnm1gqZWLYcro6dvIwGiTQVNF\n\
             yMTq6dviEw==\n\
             -----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let written = run(ImportOptions {
            role: Some(KeyRole::Csk),
            algorithm: Some(Algorithm::EcdsaP256Sha256),
        })
        .unwrap();
        assert_eq!(written[0].0.key_tag, 34649);
        std::fs::write(&file, "-----BEGIN EC PRIVATE KEY-----\nAAAA\n").unwrap();
        let err = run(ImportOptions {
            role: Some(KeyRole::Zsk),
            algorithm: Some(Algorithm::Ed25519),
        })
        .err()
        .unwrap();
        assert!(err.contains("a PKCS#8 key is wanted"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
