//! Zones signed as they are loaded (issue 24; docs/decisions/0014): the
//! policies of `dnssec.policies`, which zones name one, and the signing
//! of a zone's records with its keys ([`crate::keys`]) before the zone is
//! built.
//!
//! This slice signs a zone whole each time its file is loaded, on the
//! thread that loads it (start, or the reload thread), never on a core,
//! and again, whole, `rrsig-refresh` before its signatures expire
//! ([`crate::resign`]). Incremental signing, re-signing spread over time
//! and rollovers are later slices.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng as _;
use tern_dnssec::{
    sign_zone, sign_zone_into, Algorithm, Denial, Nsec3Params, SignOptions, SignStats, SignedZone,
    SigningKey, Validity,
};
use tern_wire::name::Name;
use tern_zone::{RecordList, Sink};

use crate::keys::{self, KeyScheme};

/// How long before "now" signatures start to be valid (BIND's choice;
/// docs/decisions/0014): clocks of validators running a little behind
/// still accept them.
pub const INCEPTION_BACKDATE: u64 = 3600;

//----------- Policy ---------------------------------------------------------

/// When CDS and CDNSKEY records are published (not acted on yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CdsCdnskey {
    /// Never.
    None,
    /// While a KSK or CSK rollover waits for the parent.
    #[default]
    Rollover,
    /// Always, for the active KSKs.
    Always,
}

/// NSEC3 in a policy: the salt is drawn anew at each signing (its
/// rotation is a later slice).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Policy {
    /// Further iterations (RFC 9276: 0).
    pub iterations: u16,
    /// Octets of random salt (RFC 9276: 0).
    pub salt_length: u8,
    /// Whether insecure delegations are left out of the chain.
    pub opt_out: bool,
}

/// How the parent learns of a new KSK (not acted on yet).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParentCheck {
    /// The parent's servers queried for the DS set.
    pub servers: Vec<SocketAddr>,
    /// How often they are queried, in seconds.
    pub check_interval: u64,
}

/// One policy of `dnssec.policies`; times are in seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Its name, which zones give as `dnssec-policy`.
    pub name: String,
    /// The keys' algorithm.
    pub algorithm: Algorithm,
    /// CSK, or KSK and ZSK.
    pub keys: KeyScheme,
    /// The ZSK's lifetime (not acted on yet); 0: never rolled.
    pub zsk_lifetime: u64,
    /// The KSK's lifetime (not acted on yet); 0: never rolled.
    pub ksk_lifetime: u64,
    /// How long a signature is valid from its signing.
    pub rrsig_lifetime: u64,
    /// How long before expiry the zone is signed anew.
    pub rrsig_refresh: u64,
    /// NSEC3, or NSEC when `None`.
    pub nsec3: Option<Nsec3Policy>,
    /// The DNSKEY RRset's TTL; `None`: the SOA's.
    pub dnskey_ttl: Option<u32>,
    /// CDS and CDNSKEY publication (not acted on yet).
    pub cds_cdnskey: CdsCdnskey,
    /// The parent's DS check (not acted on yet).
    pub parent: Option<ParentCheck>,
}

impl Policy {
    /// The defaults (as docs/config.md lists them) under `name`.
    pub fn new(name: String) -> Policy {
        Policy {
            name,
            algorithm: Algorithm::EcdsaP256Sha256,
            keys: KeyScheme::Csk,
            zsk_lifetime: 30 * 86_400,
            ksk_lifetime: 0,
            rrsig_lifetime: 14 * 86_400,
            rrsig_refresh: 7 * 86_400,
            nsec3: None,
            dnskey_ttl: None,
            cds_cdnskey: CdsCdnskey::default(),
            parent: None,
        }
    }
}

//----------- Signing --------------------------------------------------------

/// The signing configuration as the loader takes it: where keys live and
/// which zone (of those loaded from files) is signed with which policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signing {
    /// The state directory, where keys live (`STATE/keys`).
    pub state_directory: PathBuf,
    /// Threads that sign one zone (`dnssec.signing-threads`), started by
    /// the thread that loads it, not pinned to a serving core.
    pub threads: usize,
    /// The policy of each signed zone, by lowercased wire origin.
    pub zones: hashbrown::HashMap<Box<[u8]>, Arc<Policy>>,
}

impl Signing {
    /// Keys under `state_directory`, signing on `threads` threads, and
    /// each zone (lowercased wire origin) with its policy.
    pub fn new(
        state_directory: PathBuf,
        threads: usize,
        zones: Vec<(Box<[u8]>, Arc<Policy>)>,
    ) -> Signing {
        Signing {
            state_directory,
            threads,
            zones: zones.into_iter().collect(),
        }
    }

    /// The policy of the zone `origin` (lowercased wire form), if signed.
    pub fn policy(&self, origin: &[u8]) -> Option<&Policy> {
        self.zones.get(origin).map(|policy| &**policy)
    }
}

/// When a zone signed under `policy` at Unix time `now` must be signed
/// again: its signatures' expiration (they all expire together in this
/// slice) less `rrsig-refresh`.
pub fn resign_due(policy: &Policy, now: u64) -> u64 {
    now.saturating_add(policy.rrsig_lifetime)
        .saturating_sub(policy.rrsig_refresh)
}

/// Signs the zone `origin` made of `records` (each RRset's TTL settled)
/// under `policy` at Unix time `now`, with its keys from `state_directory`
/// (generated on its first signing). With `serial_above` (the serial
/// served now), the signed serial is higher than it (the file's if that
/// is higher, else one more: `tern_dnssec::SignOptions::serial_above`).
/// Errors name the zone's key file or the signer's reason.
pub fn sign<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<SignedZone, String> {
    let (keys, options) = keys_and_options(origin, policy, state_directory, now, serial_above)?;
    sign_zone(origin, records, &keys, &options).map_err(|err| format!("signing: {err}"))
}

/// [`sign`], on `threads` threads, handing the signed zone's records to
/// `sink` in canonical order as they are made rather than collecting
/// them (`tern_dnssec::sign_zone_into`): how the loader builds a signed
/// zone, and `tern sign` writes one, with only the batches being signed
/// held besides the input and the output.
#[allow(clippy::too_many_arguments)]
pub fn sign_into<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    threads: usize,
    sink: &mut dyn Sink,
) -> Result<SignStats, String> {
    let (keys, options) = keys_and_options(origin, policy, state_directory, now, serial_above)?;
    sign_zone_into(origin, records, &keys, &options, threads, sink)
        .map_err(|err| format!("signing: {err}"))
}

/// The zone's keys (generated on its first signing) and the signer's
/// options under `policy` at `now`.
fn keys_and_options(
    origin: Name<'_>,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<(Vec<SigningKey>, SignOptions), String> {
    let stored =
        keys::load_or_generate(state_directory, origin, policy.algorithm, policy.keys, now)?;
    let keys: Vec<_> = stored.into_iter().map(|stored| stored.key).collect();
    let validity = Validity::new(
        now.saturating_sub(INCEPTION_BACKDATE),
        now.saturating_add(policy.rrsig_lifetime),
    )
    .ok_or_else(|| {
        format!(
            "signatures from {now} for {} s do not fit the RRSIG time fields",
            policy.rrsig_lifetime
        )
    })?;
    let denial = match &policy.nsec3 {
        None => Denial::Nsec,
        Some(nsec3) => {
            let mut salt = vec![0; usize::from(nsec3.salt_length)];
            rand::rng().fill(&mut salt[..]);
            Denial::Nsec3(Nsec3Params {
                iterations: nsec3.iterations,
                salt,
                opt_out: nsec3.opt_out,
            })
        }
    };
    let options = SignOptions {
        validity,
        dnskey_ttl: policy.dnskey_ttl,
        denial,
        serial_above,
    };
    Ok((keys, options))
}
