//! A signed zone's keys under the state directory (issue 24;
//! docs/decisions/0014): `STATE/keys/ORIGIN/ROLE-ALG-TAG.pem`, the private
//! key as PKCS#8 in PEM, and beside it `ROLE-ALG-TAG.meta`, its algorithm,
//! role, key tag and RFC 7583 times. Both are written whole (a temporary
//! file in the same directory, fsync, rename, fsync of the directory) and
//! readable by tern's user only (mode 0600 from creation; the directories
//! 0700).
//!
//! A zone's keys are generated once, when it is first signed and has none;
//! after that only a rollover ([`crate::rollover`]) or `tern keys
//! generate` adds one, and a rollover deletes its old key once it is
//! removed from the zone. A file that does not read or parse is an error
//! for the zone, never a reason to make new keys. Whoever reads and then
//! writes a zone's keys holds [`lock`] meanwhile (the loader, the
//! `tern-resign` thread, the control socket).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tern_dnssec::{Algorithm, KeyRole, SigningKey, MAX_KEYS};
use tern_wire::name::{LowerNameBuf, Name};

/// The largest key or metadata file read (a P-256 or Ed25519 PKCS#8 PEM
/// is about 250 octets, a 4096-bit RSA one about 3,300).
pub const MAX_KEY_FILE: u64 = 16 * 1024;

/// The most entries of a zone's key directory looked at.
pub const MAX_DIR_ENTRIES: usize = 256;

/// How often a key is generated again when its tag equals another key's
/// of the zone (RFC 6781 section 3.4: tags should differ).
const TAG_TRIES: usize = 16;

/// The private key file's suffix.
const KEY_SUFFIX: &str = ".pem";

/// The metadata file's suffix.
const META_SUFFIX: &str = ".meta";

const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

//----------- KeyScheme ------------------------------------------------------

/// Which keys a policy signs with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyScheme {
    /// One combined signing key.
    #[default]
    Csk,
    /// A key-signing key and a zone-signing key.
    KskZsk,
}

impl KeyScheme {
    /// The roles of the keys generated for a zone that has none.
    pub fn roles(self) -> &'static [KeyRole] {
        match self {
            KeyScheme::Csk => &[KeyRole::Csk],
            KeyScheme::KskZsk => &[KeyRole::Ksk, KeyRole::Zsk],
        }
    }
}

//----------- names ----------------------------------------------------------

/// The configuration's and the metadata's name of an algorithm.
pub fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::RsaSha256 => "rsasha256",
        Algorithm::EcdsaP256Sha256 => "ecdsap256sha256",
        Algorithm::Ed25519 => "ed25519",
    }
}

/// The algorithm of a name [`algorithm_name`] gives.
pub fn algorithm_by_name(name: &str) -> Option<Algorithm> {
    match name {
        "rsasha256" => Some(Algorithm::RsaSha256),
        "ecdsap256sha256" => Some(Algorithm::EcdsaP256Sha256),
        "ed25519" => Some(Algorithm::Ed25519),
        _ => None,
    }
}

fn role_name(role: KeyRole) -> &'static str {
    match role {
        KeyRole::Csk => "csk",
        KeyRole::Ksk => "ksk",
        KeyRole::Zsk => "zsk",
    }
}

fn role_by_name(name: &str) -> Option<KeyRole> {
    match name {
        "csk" => Some(KeyRole::Csk),
        "ksk" => Some(KeyRole::Ksk),
        "zsk" => Some(KeyRole::Zsk),
        _ => None,
    }
}

/// The configuration's and the metadata's name of a role.
pub fn role_text(role: KeyRole) -> &'static str {
    role_name(role)
}

/// The role of a name [`role_text`] gives.
pub fn role_by_text(name: &str) -> Option<KeyRole> {
    role_by_name(name)
}

//----------- lock -----------------------------------------------------------

/// Serialises every read-then-write of key files in the process.
static KEYS: Mutex<()> = Mutex::new(());

/// Held while a zone's keys are read and their files changed, so that a
/// rollover asked for on the control socket and the loader's step of the
/// same zone do not interleave. Held for file operations only, never for
/// a signing.
pub fn lock() -> MutexGuard<'static, ()> {
    // Every change under it is a whole-file rename: go on after a panic.
    KEYS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

//----------- KeyMeta --------------------------------------------------------

/// What the metadata file says of a key. Times are Unix seconds, named as
/// in RFC 7583 section 3.1 (`created` is its "Generate"); a time may lie
/// ahead (a step planned). Files written before rollovers lack the
/// `ds-*` and `successor` fields, which read as absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMeta {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// What the key signs.
    pub role: KeyRole,
    /// The key tag of its DNSKEY.
    pub key_tag: u16,
    /// When it was generated.
    pub created: u64,
    /// When its DNSKEY was first published.
    pub published: Option<u64>,
    /// When it started signing.
    pub active: Option<u64>,
    /// When it stopped being used: a ZSK or CSK stops signing the zone's
    /// RRsets, a KSK's DS is no longer needed (its successor's was seen
    /// at the parent).
    pub retired: Option<u64>,
    /// When its DNSKEY was withdrawn (its files are deleted then).
    pub removed: Option<u64>,
    /// KSK, CSK: when its DS was submitted (CDS and CDNSKEY published,
    /// `tern keys ds` shows it as awaited): RFC 7583's Tsbm.
    pub ds_published: Option<u64>,
    /// KSK, CSK: when the parent's DS set was seen to include it.
    pub ds_seen: Option<u64>,
    /// The TTL of the parent's DS RRset when it was seen by a query (a
    /// DS seen by hand has none: the policy's `parent-ds-ttl`).
    pub ds_ttl: Option<u32>,
    /// The key tag of the key that replaces this one: a rollover is in
    /// progress until this key is removed.
    pub successor: Option<u16>,
    /// An algorithm (or key-set) rollover's old key: when its DNSKEY was
    /// withdrawn; it keeps signing until `removed` (RFC 6781 section
    /// 4.1.4: the old signatures go last).
    pub withdrawn: Option<u64>,
    /// Which side of an algorithm (or key-set) rollover this key is on,
    /// while one is in progress.
    pub key_set_rollover: Option<RolloverSide>,
}

/// A key's side in an algorithm (or key-set) rollover: the whole key set
/// is replaced (crate::rollover).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloverSide {
    /// The key set replaced: signs until removed, DNSKEY withdrawn first.
    Old,
    /// The key set replacing it: signs from `active`, before its DNSKEY
    /// is published.
    New,
}

impl RolloverSide {
    fn name(self) -> &'static str {
        match self {
            RolloverSide::Old => "old",
            RolloverSide::New => "new",
        }
    }

    fn by_name(name: &str) -> Option<RolloverSide> {
        match name {
            "old" => Some(RolloverSide::Old),
            "new" => Some(RolloverSide::New),
            _ => None,
        }
    }
}

impl KeyMeta {
    /// The metadata file's text.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "# tern DNSSEC key (docs/operations.md); times in seconds since 1970 (RFC 7583)\n\
             algorithm: {}\nrole: {}\nkey-tag: {}\ncreated: {}\n",
            algorithm_name(self.algorithm),
            role_name(self.role),
            self.key_tag,
            self.created
        );
        for (name, time) in [
            ("published", self.published),
            ("active", self.active),
            ("retired", self.retired),
            ("removed", self.removed),
            ("ds-published", self.ds_published),
            ("ds-seen", self.ds_seen),
            ("ds-ttl", self.ds_ttl.map(u64::from)),
            ("successor", self.successor.map(u64::from)),
            ("withdrawn", self.withdrawn),
        ] {
            if let Some(time) = time {
                text.push_str(&format!("{name}: {time}\n"));
            }
        }
        if let Some(side) = self.key_set_rollover {
            text.push_str(&format!("key-set-rollover: {}\n", side.name()));
        }
        text
    }

    /// Reads a metadata file's text. Unknown keys are ignored (a later
    /// version may add some); the algorithm, role, key tag and creation
    /// time must be there.
    pub fn parse(text: &str) -> Result<KeyMeta, String> {
        let (mut algorithm, mut role, mut key_tag, mut created) = (None, None, None, None);
        let mut times = [None; 7];
        let (mut ds_ttl, mut successor, mut side) = (None, None, None);
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || format!("line {}: bad line {line:?}", number + 1);
            let (key, value) = line.split_once(':').ok_or_else(bad)?;
            let value = value.trim();
            let time = || value.parse::<u64>().map_err(|_| bad());
            match key.trim() {
                "algorithm" => algorithm = Some(algorithm_by_name(value).ok_or_else(bad)?),
                "role" => role = Some(role_by_name(value).ok_or_else(bad)?),
                "key-tag" => key_tag = Some(value.parse::<u16>().map_err(|_| bad())?),
                "created" => created = Some(time()?),
                "published" => times[0] = Some(time()?),
                "active" => times[1] = Some(time()?),
                "retired" => times[2] = Some(time()?),
                "removed" => times[3] = Some(time()?),
                "ds-published" => times[4] = Some(time()?),
                "ds-seen" => times[5] = Some(time()?),
                "ds-ttl" => ds_ttl = Some(value.parse::<u32>().map_err(|_| bad())?),
                "successor" => successor = Some(value.parse::<u16>().map_err(|_| bad())?),
                "withdrawn" => times[6] = Some(time()?),
                "key-set-rollover" => side = Some(RolloverSide::by_name(value).ok_or_else(bad)?),
                _ => {}
            }
        }
        let missing = |what| format!("no {what}");
        Ok(KeyMeta {
            algorithm: algorithm.ok_or_else(|| missing("algorithm"))?,
            role: role.ok_or_else(|| missing("role"))?,
            key_tag: key_tag.ok_or_else(|| missing("key-tag"))?,
            created: created.ok_or_else(|| missing("created"))?,
            published: times[0],
            active: times[1],
            retired: times[2],
            removed: times[3],
            ds_published: times[4],
            ds_seen: times[5],
            ds_ttl,
            successor,
            withdrawn: times[6],
            key_set_rollover: side,
        })
    }

    /// A key just generated at `now` of `role`: nothing published yet.
    pub fn new(algorithm: Algorithm, role: KeyRole, key_tag: u16, now: u64) -> KeyMeta {
        KeyMeta {
            algorithm,
            role,
            key_tag,
            created: now,
            published: None,
            active: None,
            retired: None,
            removed: None,
            ds_published: None,
            ds_seen: None,
            ds_ttl: None,
            successor: None,
            withdrawn: None,
            key_set_rollover: None,
        }
    }

    /// The file name both files share, without suffix: `ROLE-ALG-TAG`.
    pub fn stem(&self) -> String {
        format!(
            "{}-{:03}-{:05}",
            role_name(self.role),
            self.algorithm.number(),
            self.key_tag
        )
    }
}

//----------- PEM ------------------------------------------------------------

/// A PKCS#8 document as PEM (RFC 7468 section 10), lines of 64 characters.
pub fn to_pem(pkcs8: &[u8]) -> String {
    let encoded = data_encoding::BASE64.encode(pkcs8);
    let mut pem = String::with_capacity(encoded.len() + 80);
    pem.push_str(PEM_BEGIN);
    pem.push('\n');
    for chunk in encoded.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str(PEM_END);
    pem.push('\n');
    pem
}

/// The PKCS#8 document of a PEM `PRIVATE KEY`.
pub fn from_pem(text: &str) -> Result<Vec<u8>, String> {
    let start = text
        .find(PEM_BEGIN)
        .ok_or("no -----BEGIN PRIVATE KEY----- line")?
        + PEM_BEGIN.len();
    let end = text[start..]
        .find(PEM_END)
        .ok_or("no -----END PRIVATE KEY----- line")?
        + start;
    let base64: String = text[start..end]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    data_encoding::BASE64
        .decode(base64.as_bytes())
        .map_err(|err| format!("bad base64: {err}"))
}

//----------- the key directory ----------------------------------------------

/// `STATE/keys/ORIGIN`: a zone's key directory.
pub fn key_dir(state_directory: &Path, origin: Name<'_>) -> PathBuf {
    state_directory
        .join("keys")
        .join(crate::file_stem(LowerNameBuf::from_name(origin)))
}

/// A key read from, or written to, the key directory.
pub struct StoredKey {
    /// The key, ready to sign.
    pub key: SigningKey,
    /// Its metadata.
    pub meta: KeyMeta,
    /// Its private key file.
    pub path: PathBuf,
}

/// The keys of the zone `origin`: those in its key directory, or, when it
/// holds none (or does not exist), new ones of `algorithm` for each of
/// `scheme`'s roles, written there first (`now`: their times). An error
/// names the file and the cause; nothing is generated when any key file
/// is there, whether it reads or not.
pub fn load_or_generate(
    state_directory: &Path,
    origin: Name<'_>,
    algorithm: Algorithm,
    rsa_bits: usize,
    scheme: KeyScheme,
    now: u64,
) -> Result<Vec<StoredKey>, String> {
    let dir = key_dir(state_directory, origin);
    let keys = read_keys(&dir)?;
    if !keys.is_empty() {
        return Ok(keys);
    }
    generate(&dir, algorithm, rsa_bits, scheme, now)
}

/// The keys in `dir` (none if it does not exist), in file-name order.
pub fn read_keys(dir: &Path) -> Result<Vec<StoredKey>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(format!("{}: cannot read: {err}", dir.display())),
    };
    let mut stems = Vec::new();
    for (count, entry) in entries.enumerate() {
        if count == MAX_DIR_ENTRIES {
            return Err(format!(
                "{}: more than {MAX_DIR_ENTRIES} entries",
                dir.display()
            ));
        }
        let entry = entry.map_err(|err| format!("{}: cannot read: {err}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // A key is there as soon as either of its files is: a missing one
        // is an error, not a key to make anew.
        let stem = name
            .strip_suffix(KEY_SUFFIX)
            .or_else(|| name.strip_suffix(META_SUFFIX));
        if let Some(stem) = stem.filter(|stem| !stem.starts_with('.')) {
            stems.push(stem.to_string());
        }
    }
    stems.sort_unstable();
    stems.dedup();
    if stems.len() > MAX_KEYS {
        return Err(format!("{}: more than {MAX_KEYS} keys", dir.display()));
    }
    stems
        .iter()
        .map(|stem| {
            read_key(
                &dir.join(format!("{stem}{KEY_SUFFIX}")),
                &dir.join(format!("{stem}{META_SUFFIX}")),
            )
        })
        .collect()
}

/// Reads a file of at most [`MAX_KEY_FILE`] octets as text.
fn read_small(path: &Path) -> Result<String, String> {
    let failed = |err: io::Error| format!("{}: cannot read: {err}", path.display());
    let file = File::open(path).map_err(failed)?;
    let mut text = String::new();
    file.take(MAX_KEY_FILE + 1)
        .read_to_string(&mut text)
        .map_err(failed)?;
    if text.len() as u64 > MAX_KEY_FILE {
        return Err(format!(
            "{}: longer than {MAX_KEY_FILE} octets",
            path.display()
        ));
    }
    Ok(text)
}

/// One key from its private key file and its metadata file.
fn read_key(key_path: &Path, meta_path: &Path) -> Result<StoredKey, String> {
    let meta = KeyMeta::parse(&read_small(meta_path)?)
        .map_err(|err| format!("{}: {err}", meta_path.display()))?;
    let pkcs8 =
        from_pem(&read_small(key_path)?).map_err(|err| format!("{}: {err}", key_path.display()))?;
    let key = SigningKey::from_pkcs8(meta.algorithm, meta.role, &pkcs8)
        .map_err(|err| format!("{}: {err}", key_path.display()))?;
    if key.key_tag() != meta.key_tag {
        return Err(format!(
            "{}: key tag {} differs from {}'s {}",
            key_path.display(),
            key.key_tag(),
            meta_path.display(),
            meta.key_tag
        ));
    }
    Ok(StoredKey {
        key,
        meta,
        path: key_path.to_path_buf(),
    })
}

/// Generates a key per role of `scheme` and writes each into `dir`
/// (metadata first, then the private key): published and active from
/// `now`, and a KSK's or CSK's DS submitted then (RFC 7583: Knot submits
/// the first KSK too; `tern keys ds` gives it, `tern keys ds-seen` or the
/// parent check confirms it).
fn generate(
    dir: &Path,
    algorithm: Algorithm,
    rsa_bits: usize,
    scheme: KeyScheme,
    now: u64,
) -> Result<Vec<StoredKey>, String> {
    let mut stored: Vec<StoredKey> = Vec::new();
    for &role in scheme.roles() {
        let tags: Vec<u16> = stored.iter().map(|key| key.meta.key_tag).collect();
        let (key, pkcs8) = new_key(algorithm, rsa_bits, role, &tags)?;
        let mut meta = KeyMeta::new(algorithm, role, key.key_tag(), now);
        meta.published = Some(now);
        meta.active = Some(now);
        if role.signs_keys() {
            meta.ds_published = Some(now);
        }
        stored.push(write_new(dir, key, &pkcs8, meta)?);
    }
    Ok(stored)
}

/// A new key of `role` whose tag is none of `taken` (tried
/// [`TAG_TRIES`] times), and its PKCS#8 document.
fn new_key(
    algorithm: Algorithm,
    rsa_bits: usize,
    role: KeyRole,
    taken: &[u16],
) -> Result<(SigningKey, Vec<u8>), String> {
    let mut tries = 0;
    loop {
        let (key, pkcs8) = SigningKey::generate_sized(algorithm, role, rsa_bits)
            .map_err(|err| format!("generating a key: {err}"))?;
        tries += 1;
        if tries == TAG_TRIES || !taken.contains(&key.key_tag()) {
            return Ok((key, pkcs8));
        }
    }
}

/// Generates one key of `role` into `dir` beside `existing` (its tag
/// differs from theirs), with `meta`'s times left as [`KeyMeta::new`]
/// makes them: a standby key, published by a rollover.
pub fn generate_one(
    dir: &Path,
    algorithm: Algorithm,
    rsa_bits: usize,
    role: KeyRole,
    existing: &[StoredKey],
    now: u64,
) -> Result<StoredKey, String> {
    if existing.len() >= MAX_KEYS {
        return Err(format!(
            "{}: {MAX_KEYS} keys already; no more is made",
            dir.display()
        ));
    }
    let tags: Vec<u16> = existing.iter().map(|key| key.meta.key_tag).collect();
    let (key, pkcs8) = new_key(algorithm, rsa_bits, role, &tags)?;
    let meta = KeyMeta::new(algorithm, role, key.key_tag(), now);
    write_new(dir, key, &pkcs8, meta)
}

/// Writes a new key's metadata, then its private key, into `dir` (made
/// with mode 0700 if missing).
fn write_new(
    dir: &Path,
    key: SigningKey,
    pkcs8: &[u8],
    meta: KeyMeta,
) -> Result<StoredKey, String> {
    let path = write_files(dir, &meta, pkcs8, false)?;
    Ok(StoredKey { key, meta, path })
}

/// Writes a key's metadata, then its private key, into `dir` (made with
/// mode 0700 if missing); with `refuse_existing`, refuses when either file
/// is there. Returns the private key's path.
fn write_files(
    dir: &Path,
    meta: &KeyMeta,
    pkcs8: &[u8],
    refuse_existing: bool,
) -> Result<PathBuf, String> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| format!("{}: cannot create: {err}", dir.display()))?;
    let stem = meta.stem();
    let meta_path = dir.join(format!("{stem}{META_SUFFIX}"));
    let key_path = dir.join(format!("{stem}{KEY_SUFFIX}"));
    if refuse_existing {
        for path in [&meta_path, &key_path] {
            if path.exists() {
                return Err(format!("{}: already there", path.display()));
            }
        }
    }
    write_private(&meta_path, meta.to_text().as_bytes())
        .map_err(|err| format!("{}: cannot write: {err}", meta_path.display()))?;
    write_private(&key_path, to_pem(pkcs8).as_bytes())
        .map_err(|err| format!("{}: cannot write: {err}", key_path.display()))?;
    Ok(key_path)
}

impl StoredKey {
    /// Writes this key's metadata file again (after its times changed).
    pub fn write_meta(&self) -> Result<(), String> {
        let path = self.path.with_extension("meta");
        write_private(&path, self.meta.to_text().as_bytes())
            .map_err(|err| format!("{}: cannot write: {err}", path.display()))
    }

    /// Deletes this key's files: its private key first, then its
    /// metadata (a key with a metadata file and no private key fails its
    /// zone, so the metadata goes last: an interrupted delete is seen).
    pub fn delete(&self) -> Result<(), String> {
        let meta = self.path.with_extension("meta");
        for path in [&self.path, &meta] {
            match std::fs::remove_file(path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => {
                    return Err(format!("{}: cannot delete: {err}", path.display()))
                }
                _ => {}
            }
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|err| format!("{}: cannot sync: {err}", dir.display()))
    }
}

/// Writes a key made elsewhere (`tern keys import`) into the key
/// directory `dir` (made, mode 0700, if missing) as [`load_or_generate`]
/// writes the keys it generates: the metadata, then the private key.
/// Refuses to replace a file of the same name. Returns the private key's
/// path.
pub fn store_key(dir: &Path, meta: &KeyMeta, pkcs8: &[u8]) -> Result<PathBuf, String> {
    write_files(dir, meta, pkcs8, true)
}

/// Writes `bytes` to `path` whole and readable by its owner only: into
/// `.NAME.tmp` beside it (mode 0600 from its creation), fsync, rename over
/// `path`, fsync of the directory.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(".tmp");
    let temporary = dir.join(temporary_name);
    // A leftover of an interrupted write (with whatever mode it had).
    match std::fs::remove_file(&temporary) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    File::open(dir)?.sync_all()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tern-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn origin() -> tern_wire::name::NameBuf {
        tern_wire::name::NameBuf::from_text(b"Example.COM.", None).unwrap()
    }

    #[test]
    fn keys_are_generated_once_then_read_back() {
        let state = temp_dir("once");
        let origin = origin();
        let made = load_or_generate(
            &state,
            origin.as_name(),
            Algorithm::Ed25519,
            0,
            KeyScheme::KskZsk,
            1_800_000_000,
        )
        .unwrap();
        assert_eq!(made.len(), 2);
        let dir = key_dir(&state, origin.as_name());
        assert!(dir.ends_with("keys/example.com."), "{}", dir.display());
        for key in &made {
            let mode = std::fs::metadata(&key.path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", key.path.display());
        }
        // Read back, not generated again: the same DNSKEYs.
        let again = load_or_generate(
            &state,
            origin.as_name(),
            Algorithm::EcdsaP256Sha256,
            0,
            KeyScheme::Csk,
            1_900_000_000,
        )
        .unwrap();
        let dnskeys = |keys: &[StoredKey]| {
            let mut keys: Vec<Vec<u8>> =
                keys.iter().map(|k| k.key.dnskey_rdata().to_vec()).collect();
            keys.sort();
            keys
        };
        assert_eq!(dnskeys(&made), dnskeys(&again));
        assert_eq!(again[0].meta.created, 1_800_000_000);
        // A corrupt private key is an error, and nothing is generated.
        std::fs::write(
            &again[0].path,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let err = load_or_generate(
            &state,
            origin.as_name(),
            Algorithm::Ed25519,
            0,
            KeyScheme::Csk,
            0,
        )
        .err()
        .unwrap();
        assert!(err.contains(&again[0].path.display().to_string()), "{err}");
        // So is a missing one (its metadata left).
        std::fs::remove_file(&again[0].path).unwrap();
        let err = load_or_generate(
            &state,
            origin.as_name(),
            Algorithm::Ed25519,
            0,
            KeyScheme::Csk,
            0,
        )
        .err()
        .unwrap();
        assert!(err.contains("cannot read"), "{err}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
        std::fs::remove_dir_all(&state).unwrap();
    }

    #[test]
    fn metadata_round_trips_and_rejects_what_it_lacks() {
        let meta = KeyMeta {
            algorithm: Algorithm::EcdsaP256Sha256,
            role: KeyRole::Csk,
            key_tag: 12345,
            created: 1,
            published: Some(2),
            active: Some(3),
            retired: None,
            removed: None,
            ds_published: Some(4),
            ds_seen: None,
            ds_ttl: Some(3600),
            successor: Some(54321),
            withdrawn: Some(5),
            key_set_rollover: Some(RolloverSide::Old),
        };
        assert_eq!(KeyMeta::parse(&meta.to_text()).unwrap(), meta);
        // A file of the slice before rollovers reads, without their fields.
        let old = "algorithm: ed25519\nrole: ksk\nkey-tag: 7\ncreated: 1\npublished: 1\n\
                   active: 1\n";
        let read = KeyMeta::parse(old).unwrap();
        assert_eq!(
            (read.active, read.ds_published, read.successor),
            (Some(1), None, None)
        );
        assert!(KeyMeta::parse("role: csk\nkey-tag: 1\ncreated: 1\n").is_err());
        assert!(KeyMeta::parse("algorithm: rsasha1\nrole: csk\nkey-tag: 1\ncreated: 1\n").is_err());
        let pkcs8 = tern_dnssec::key::generate_pkcs8(Algorithm::Ed25519).unwrap();
        assert_eq!(from_pem(&to_pem(&pkcs8)).unwrap(), pkcs8);
    }
}
