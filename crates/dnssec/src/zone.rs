//! A whole zone signed with NSEC (RFC 4035 section 2) or NSEC3 (RFC
//! 5155 section 7.1).
//!
//! [`sign_zone`] takes the zone's records (any `tern_zone::RecordList`,
//! as the scanner makes them), the keys and the validity, and returns the
//! records to serve:
//!
//! - the input's own DNSSEC records are dropped: every RRSIG, NSEC and
//!   NSEC3, and the apex's DNSKEY and NSEC3PARAM; the DNSKEY RRset of the
//!   keys given takes their place (TTL: the caller's, else the SOA's, as
//!   Knot's `dnskey-ttl` default);
//! - each record keeps the TTL tern serves it with
//!   (`tern_zone::ttl::RrsetTtls`), which is the original TTL signed;
//! - duplicates (equal in canonical form) are written once;
//! - every authoritative RRset gets one RRSIG per key of its role: the
//!   apex's DNSKEY, CDS and CDNSKEY RRsets by the KSKs (or CSK), all the
//!   others by the ZSKs (or CSK);
//! - at a delegation (NS below the apex) only the DS RRset is signed; the
//!   names below it (glue) are neither signed nor in the NSEC chain, nor
//!   are the delegation's other types in its bitmap (RFC 4035 section
//!   2.3);
//! - each name that owns authoritative records, or is a delegation, gets
//!   an NSEC naming the next such name in canonical order (the last names
//!   the apex) and its types with RRSIG and NSEC; empty non-terminals own
//!   nothing and get none; the NSEC TTL is the lower of the SOA's MINIMUM
//!   and the SOA's TTL (RFC 9077 section 3.3); next names are written
//!   lowercased;
//! - with NSEC3 ([`Denial::Nsec3`]) instead: the NSEC3PARAM at the apex
//!   (flags 0, TTL 0 as Knot and BIND write it), signed like any apex
//!   RRset; an NSEC3 for each name that has authoritative data, each
//!   delegation (unless opt-out leaves out those without DS) and each
//!   empty non-terminal above them (so none above only left-out
//!   delegations, RFC 5155 section 7.1), never for glue; its bitmap
//!   names the types at the original owner, RRSIG when one of them is
//!   signed (an insecure delegation's holds NS alone), nothing for an
//!   empty non-terminal; the next hashed owner is the next in hash order,
//!   the last naming the first; the NSEC's TTL; the opt-out flag on every
//!   NSEC3 when opted out; each NSEC3 RRset signed by the ZSKs. Two names
//!   with one hash are refused ([`SignError::Nsec3Collision`]).
//!
//! [`sign_zone_with`] takes a [`KeySet`] instead, for a zone in a key
//! rollover (RFC 7583): each key says whether it signs the apex's
//! DNSKEY, CDS and CDNSKEY RRsets, the other RRsets, both or neither (a
//! key published ahead of its use, or kept after it), and the set names
//! the keys whose CDS and CDNSKEY records (RFC 7344) the apex publishes.
//! [`sign_zone_into`] signs the same on several threads, handing the
//! signed records on in canonical order as they are made.
//!
//! Names below a DNAME are occluded as names below a delegation are
//! (RFC 6672 section 2.3): neither signed nor chained. The zone is assumed
//! to have passed `tern_zone::check` (one class, no CNAME beside other
//! data, no records below a DNAME).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_zone::ttl::RrsetTtls;
use tern_zone::{Location, Record, RecordList, RecordRef, Records, Sink};

use crate::key::{KeyError, SigningKey};
use crate::nsec::nsec_rdata;
use crate::nsec3::{
    hashed_owner, nsec3_hash, nsec3_rdata, nsec3param_rdata, Hash, Nsec3Params, HASH_LEN,
    MAX_ITERATIONS, MAX_SALT_LEN,
};
use crate::parallel::run_batches;
use crate::rrsig::{sign_rrset, Rrset, Validity};

/// The most keys a zone is signed with at once (a CSK or a KSK and a ZSK,
/// each doubled during a rollover, leaves room to spare).
pub const MAX_KEYS: usize = 8;

//----------- SignOptions ----------------------------------------------------

/// What the signer needs besides the records and the keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignOptions {
    /// Inception and expiration of every signature made.
    pub validity: Validity,
    /// The DNSKEY RRset's TTL; `None` gives it the SOA's TTL.
    pub dnskey_ttl: Option<u32>,
    /// How names that do not exist are denied.
    pub denial: Denial,
    /// The serial served before, if any: the signed zone's SOA serial is
    /// then made higher than it (RFC 1982), the input's when that is
    /// higher, else this one plus one (Knot's `serial-policy: increment`),
    /// so that secondaries see every signed version as new. `None`: the
    /// input's serial.
    pub serial_above: Option<u32>,
}

//----------- Denial ---------------------------------------------------------

/// The chain that denies existence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Denial {
    /// NSEC records (RFC 4034 section 4).
    #[default]
    Nsec,
    /// NSEC3 records with these parameters (RFC 5155;
    /// `Nsec3Params::default()` is RFC 9276's choice).
    Nsec3(Nsec3Params),
}

//----------- KeySet ---------------------------------------------------------

/// One key of a [`KeySet`]: its DNSKEY is published when its flag says;
/// it signs what its flags say (whatever its role: a CSK being rolled
/// signs only the DNSKEY RRset for a while; in an algorithm rollover, RFC
/// 6781 section 4.1.4, the new algorithm's keys sign before their DNSKEYs
/// are published and the old one's after theirs are withdrawn).
#[derive(Clone, Copy, Debug)]
pub struct ZoneKey<'k> {
    /// The key.
    pub key: &'k SigningKey,
    /// Whether its DNSKEY is in the apex's DNSKEY RRset.
    pub published: bool,
    /// Whether it signs the apex's DNSKEY, CDS and CDNSKEY RRsets.
    pub signs_keys: bool,
    /// Whether it signs the other authoritative RRsets.
    pub signs_zone: bool,
}

impl ZoneKey<'_> {
    /// Whether it signs an RRset that is (`true`) or is not the apex's
    /// DNSKEY, CDS or CDNSKEY RRset.
    pub fn signs(&self, key_rrset: bool) -> bool {
        if key_rrset {
            self.signs_keys
        } else {
            self.signs_zone
        }
    }
}

/// The keys of one signing, as a rollover has them at that time.
#[derive(Clone, Debug, Default)]
pub struct KeySet<'k> {
    /// Every key whose DNSKEY is published or that signs, with what each
    /// does.
    pub keys: Vec<ZoneKey<'k>>,
    /// The keys whose CDS (SHA-256) and CDNSKEY records the apex
    /// publishes (RFC 7344, RFC 8078), with the DNSKEY RRset's TTL,
    /// replacing any the input has there; `None`: the input's are kept.
    pub cds: Option<Vec<&'k SigningKey>>,
}

impl<'k> KeySet<'k> {
    /// Every key published and signing as its role says, no CDS made.
    pub fn by_role(keys: &'k [SigningKey]) -> KeySet<'k> {
        KeySet {
            keys: keys
                .iter()
                .map(|key| ZoneKey {
                    key,
                    published: true,
                    signs_keys: key.role().signs_keys(),
                    signs_zone: key.role().signs_zone(),
                })
                .collect(),
            cds: None,
        }
    }
}

//----------- SignedZone -----------------------------------------------------

/// A signed zone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignedZone {
    /// The records to serve, in canonical order: the input's (less the
    /// DNSSEC records replaced, and duplicates), the DNSKEY RRset, the
    /// NSEC records and the RRSIGs. Records made here have the default
    /// [`Location`].
    pub records: Vec<Record>,
    /// The RRSIG records made.
    pub signatures: usize,
    /// The input's DNSSEC records dropped (RRSIG, NSEC, NSEC3 anywhere;
    /// DNSKEY and NSEC3PARAM at the apex).
    pub replaced: usize,
}

//----------- SignError ------------------------------------------------------

/// Why a zone could not be signed.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SignError {
    /// No key was given.
    NoKeys,
    /// More than [`MAX_KEYS`] keys were given.
    TooManyKeys,
    /// No key signs the DNSKEY RRset (a KSK or CSK).
    NoKeySigningKey,
    /// No key signs the other RRsets (a ZSK or CSK).
    NoZoneSigningKey,
    /// The apex has no SOA record, or its RDATA is not an SOA's.
    NoSoa,
    /// The apex has more than one SOA record.
    SeveralSoa,
    /// The owner of the input's record at this index (in the record
    /// list, so the caller can locate it) is not at or below the apex.
    OutOfZone(usize),
    /// More NSEC3 iterations than [`MAX_ITERATIONS`].
    Nsec3Iterations(u16),
    /// An NSEC3 salt longer than [`MAX_SALT_LEN`] octets.
    Nsec3SaltTooLong,
    /// The apex is too long for a hashed owner below it (more than 222
    /// octets).
    Nsec3OwnerTooLong,
    /// Two names of the zone have the same NSEC3 hash (RFC 5155 section
    /// 7.1: another salt is needed); the first of them is given.
    Nsec3Collision(Box<NameBuf>),
    /// A key failed to sign.
    Key(KeyError),
    /// The signed records could not be stored (the sink's reason, such as
    /// a zone too large for it).
    Sink(&'static str),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::NoKeys => f.write_str("no signing key"),
            SignError::TooManyKeys => write!(f, "more than {MAX_KEYS} signing keys"),
            SignError::NoKeySigningKey => f.write_str("no KSK or CSK to sign the DNSKEY RRset"),
            SignError::NoZoneSigningKey => f.write_str("no ZSK or CSK to sign the zone"),
            SignError::NoSoa => f.write_str("no SOA record at the apex"),
            SignError::SeveralSoa => f.write_str("more than one SOA record at the apex"),
            SignError::OutOfZone(index) => write!(f, "record {index} is out of zone"),
            SignError::Nsec3Iterations(iterations) => write!(
                f,
                "{iterations} NSEC3 iterations: more than {MAX_ITERATIONS}"
            ),
            SignError::Nsec3SaltTooLong => {
                write!(f, "NSEC3 salt longer than {MAX_SALT_LEN} octets")
            }
            SignError::Nsec3OwnerTooLong => f.write_str("apex too long for NSEC3 owners"),
            SignError::Nsec3Collision(name) => {
                write!(f, "NSEC3 hash collision: {name} and another name")
            }
            SignError::Key(error) => write!(f, "{error}"),
            SignError::Sink(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for SignError {}

impl From<KeyError> for SignError {
    fn from(error: KeyError) -> Self {
        SignError::Key(error)
    }
}

//----------- sign_zone ------------------------------------------------------

/// What a name is to the signer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// The apex: everything signed.
    Apex,
    /// A name with authoritative data: everything signed.
    Authoritative,
    /// A delegation point: only its DS signed; NS and DS in its bitmap.
    Delegation,
    /// Below a delegation: nothing signed, no NSEC.
    Glue,
}

/// The records of one owner name: a range of the sorted records.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) kind: NodeKind,
}

/// Names signed in one batch: a batch is signed by one thread and handed
/// on whole, in canonical order ([`crate::parallel`]); about 250 KiB of
/// records for a zone of A records.
pub const BATCH_NAMES: usize = 1024;

//----------- SignStats ------------------------------------------------------

/// What [`sign_zone_into`] made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignStats {
    /// The records handed to the sink.
    pub records: usize,
    /// The RRSIG records made.
    pub signatures: usize,
    /// The input's DNSSEC records dropped (RRSIG, NSEC, NSEC3 anywhere;
    /// DNSKEY and NSEC3PARAM at the apex).
    pub replaced: usize,
}

/// Signs the zone at `origin` made of `records` (in file order) with
/// `keys`, each signing as its role says; see the module documentation
/// for what is made. Bound: a sort of the records, then one pass; one
/// signature per key and authoritative RRset. On one thread;
/// [`sign_zone_into`] signs on several and keeps only what is being
/// signed in memory.
pub fn sign_zone<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    keys: &[SigningKey],
    options: &SignOptions,
) -> Result<SignedZone, SignError> {
    sign_zone_with(origin, records, &KeySet::by_role(keys), options)
}

/// [`sign_zone`] with the keys as a rollover uses them: each key of
/// `keys` published, signing what it says, and the CDS and CDNSKEY
/// records of `keys.cds` at the apex (see the module documentation).
pub fn sign_zone_with<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    keys: &KeySet<'_>,
    options: &SignOptions,
) -> Result<SignedZone, SignError> {
    let mut out: Vec<Record> = Vec::new();
    let stats = sign_zone_into(origin, records, keys, options, 1, &mut out)?;
    Ok(SignedZone {
        records: out,
        signatures: stats.signatures,
        replaced: stats.replaced,
    })
}

/// [`sign_zone_with`], handing each record of the signed zone to `sink`
/// in the same (canonical) order instead of collecting them, with the
/// RRsets signed on `threads` threads (1: on the caller's; at most
/// [`crate::parallel::MAX_THREADS`]). The output is the same for any
/// number of threads (ECDSA signatures differ from run to run anyway:
/// their nonces are random).
///
/// Memory: besides `records` and what `sink` keeps, a copy of the records
/// in canonical order (flat arenas, no allocation per record: about 32
/// octets a record plus its owner and RDATA), 24 octets per name, and the
/// batches being signed ([`BATCH_NAMES`] names each, at most
/// [`crate::parallel::WINDOW_PER_THREAD`] per thread). With NSEC3, the
/// chain's records are made and held before the others are handed on.
pub fn sign_zone_into<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    keys: &KeySet<'_>,
    options: &SignOptions,
    threads: usize,
    sink: &mut dyn Sink,
) -> Result<SignStats, SignError> {
    sign_in_batches(origin, records, keys, options, threads, BATCH_NAMES, sink)
}

/// [`sign_zone_into`] with batches of `batch` names (tests make them
/// small, so that every boundary is crossed).
fn sign_in_batches<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    keys: &KeySet<'_>,
    options: &SignOptions,
    threads: usize,
    batch: usize,
    sink: &mut dyn Sink,
) -> Result<SignStats, SignError> {
    let (zone, replaced) = prepare(origin, records, keys, options)?;
    let signer = origin.to_lower();
    let fresh = Fresh {
        signer: signer.as_name(),
        keys: &keys.keys,
        options,
    };
    let pass = Pass {
        zone: &zone,
        origin,
    };
    let batch = batch.max(1);
    let mut stats = SignStats {
        replaced,
        ..SignStats::default()
    };
    // The NSEC3 chain is made first, whole: its records go between the
    // others in canonical order of owners.
    let mut chain = Records::new();
    if let Some(made) = pass.chain() {
        let names = made.hash_names(pass.hashed_names())?;
        let batches = names.len().div_ceil(batch);
        run_batches::<_, SignError>(
            threads,
            batches,
            &|index| {
                let range = index * batch..names.len().min((index + 1) * batch);
                let mut part = Records::new();
                let signed = made.sign_range(&names, range, &mut { fresh }, &mut part)?;
                Ok((part, signed))
            },
            &mut |(part, signed)| {
                stats.signatures += signed;
                for record in part.iter() {
                    Sink::record(&mut chain, record).map_err(SignError::Sink)?;
                }
                Ok(())
            },
        )?;
    }
    let mut chained = 0;
    let batches = zone.nodes.len().div_ceil(batch);
    run_batches::<_, SignError>(
        threads,
        batches,
        &|index| {
            let range = index * batch..zone.nodes.len().min((index + 1) * batch);
            let mut part = Records::new();
            let signed = pass.sign_nodes(range, &mut { fresh }, &mut part)?;
            Ok((part, signed))
        },
        &mut |(part, signed)| {
            stats.signatures += signed;
            stats.records += hand_over(&part, &chain, &mut chained, sink, false)?;
            Ok(())
        },
    )?;
    stats.records += hand_over(&Records::new(), &chain, &mut chained, sink, true)?;
    Ok(stats)
}

/// Hands `part` (a batch of signed records in canonical order) to `sink`,
/// preceded by the records of the NSEC3 `chain` from `*chained` on whose
/// owners sort before each (at one owner, the zone's own records first);
/// after the `last` batch, the rest of the chain. How many records were
/// handed over. Bound: `part` and the chain's records handed.
pub(crate) fn hand_over(
    part: &Records,
    chain: &Records,
    chained: &mut usize,
    sink: &mut dyn Sink,
    last: bool,
) -> Result<usize, SignError> {
    let mut handed = 0;
    for record in part.iter() {
        while *chained < chain.len() {
            let link = chain.record(*chained);
            if link.owner.canonical_cmp(record.owner) != Ordering::Less {
                break;
            }
            sink.record(link).map_err(SignError::Sink)?;
            *chained += 1;
            handed += 1;
        }
        sink.record(record).map_err(SignError::Sink)?;
        handed += 1;
    }
    if last {
        for link in (*chained..chain.len()).map(|index| chain.record(index)) {
            sink.record(link).map_err(SignError::Sink)?;
            handed += 1;
        }
        *chained = chain.len();
    }
    Ok(handed)
}

/// The zone ready to sign: its records in canonical order, each once,
/// with the TTL served and the new DNSKEY (CDS, CDNSKEY, NSEC3PARAM)
/// RRsets at the apex, and its names; the same for a whole signing and
/// one from the previous version ([`crate::incremental`]).
pub(crate) struct Prepared<'o> {
    pub(crate) records: Records,
    pub(crate) nodes: Vec<Node>,
    pub(crate) soa: Soa,
    pub(crate) nsec_ttl: u32,
    /// The NSEC3 parameters, checked; `None` with NSEC.
    pub(crate) nsec3: Option<&'o Nsec3Params>,
}

/// The records of the zone made ready to sign with `keys` (see
/// [`Prepared`]), and how many DNSSEC records of the input were dropped;
/// the keys and NSEC3 parameters checked first. Bound: a sort of the
/// records, then one pass.
pub(crate) fn prepare<'o, R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    keys: &KeySet<'_>,
    options: &'o SignOptions,
) -> Result<(Prepared<'o>, usize), SignError> {
    check_keys(&keys.keys)?;
    let nsec3 = match &options.denial {
        Denial::Nsec => None,
        Denial::Nsec3(params) => Some(check_nsec3(origin, params)?),
    };
    let cds = keys.cds.as_deref();
    let (order, replaced) = canonical_order(origin, records, cds.is_some())?;
    let apex_end = order
        .iter()
        .position(|&index| !records.record(index as usize).owner.eq_ignore_case(origin))
        .unwrap_or(order.len());
    let ttls = RrsetTtls::of(records);
    let served = |index: u32| {
        let mut record = records.record(index as usize);
        record.ttl = ttls.served(index as usize, record.ttl);
        record
    };
    let soa = soa_of(order[..apex_end].iter().map(|&index| served(index)))?;
    let dnskey_ttl = options.dnskey_ttl.unwrap_or(soa.ttl);
    let nsec_ttl = soa.ttl.min(soa.minimum);
    let mut dnskeys: Vec<&[u8]> = keys
        .keys
        .iter()
        .filter(|key| key.published)
        .map(|key| key.key.dnskey_rdata())
        .collect();
    dnskeys.sort_unstable();
    dnskeys.dedup();
    let owner = records
        .record(*order.first().ok_or(SignError::NoSoa)? as usize)
        .owner;
    let cds = cds_records(owner, cds.unwrap_or_default());
    let nsec3param = nsec3.map(nsec3param_rdata);
    let mut sorted = Records::new();
    sorted.reserve(order.len() + dnskeys.len() + cds.len() + 1);
    let mut raised = Vec::new();
    for (at, &index) in order.iter().enumerate() {
        let mut record = served(index);
        if at < apex_end && record.rtype == RType::SOA {
            if let Some(above) = options.serial_above {
                raised.clear();
                raised.extend_from_slice(record.rdata);
                raise_serial_rdata(&mut raised, above);
                record.rdata = &raised;
            }
        }
        Sink::record(&mut sorted, record).map_err(SignError::Sink)?;
        if at + 1 == apex_end {
            // The DNSKEY RRset (then CDS, CDNSKEY, NSEC3PARAM) goes right
            // after the apex's other records, with the spelling of the
            // apex's first.
            let made = |rtype, ttl, rdata| RecordRef {
                owner,
                class: soa.class,
                ttl,
                rtype,
                rdata,
                location: Location::default(),
            };
            for rdata in &dnskeys {
                let record = made(RType::DNSKEY, dnskey_ttl, rdata);
                Sink::record(&mut sorted, record).map_err(SignError::Sink)?;
            }
            for (rtype, rdata) in &cds {
                let record = made(*rtype, dnskey_ttl, rdata);
                Sink::record(&mut sorted, record).map_err(SignError::Sink)?;
            }
            if let Some(rdata) = &nsec3param {
                let record = made(RType::NSEC3PARAM, NSEC3PARAM_TTL, rdata);
                Sink::record(&mut sorted, record).map_err(SignError::Sink)?;
            }
        }
    }
    drop(order);
    let nodes = nodes(origin, &sorted);
    Ok((
        Prepared {
            records: sorted,
            nodes,
            soa,
            nsec_ttl,
            nsec3,
        },
        replaced,
    ))
}

/// The input's records to sign, as indexes in canonical order (owner,
/// then type, class and canonical RDATA), each once (of records equal in
/// canonical form, the first in file order), and the number of DNSSEC
/// records dropped to be made anew. Bound: one canonical key per owner
/// (consecutive records spelled alike share one), a sort of 16-octet
/// items comparing keys as octets.
fn canonical_order<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    own_cds: bool,
) -> Result<(Vec<u32>, usize), SignError> {
    const TOO_LARGE: &str = "zone too large: more than 2^32 records or 4 GiB of names";
    /// One record to sort: its owner's key in `keys`, type, class, index.
    #[derive(Clone, Copy)]
    struct Item {
        key_start: u32,
        key_len: u16,
        rtype: u16,
        class: u16,
        index: u32,
    }
    let mut keys: Vec<u8> = Vec::new();
    let mut items: Vec<Item> = Vec::with_capacity(records.len());
    let mut replaced = 0;
    let mut previous: Option<(Name<'_>, u32, u16)> = None;
    for index in 0..records.len() {
        let record = records.record(index);
        if !record.owner.ends_with(origin) {
            return Err(SignError::OutOfZone(index));
        }
        let at_apex = record.owner.eq_ignore_case(origin);
        let made_here = matches!(record.rtype, RType::RRSIG | RType::NSEC | RType::NSEC3)
            || (at_apex && matches!(record.rtype, RType::DNSKEY | RType::NSEC3PARAM))
            || (at_apex && own_cds && matches!(record.rtype, RType::CDS | RType::CDNSKEY));
        if made_here {
            replaced += 1;
            continue;
        }
        let (key_start, key_len) = match previous {
            Some((owner, start, len)) if owner.as_bytes() == record.owner.as_bytes() => {
                (start, len)
            }
            _ => {
                let start = u32::try_from(keys.len()).map_err(|_| SignError::Sink(TOO_LARGE))?;
                push_canonical_key(record.owner, &mut keys);
                // At most 2 x 255 octets.
                let len = (keys.len() - start as usize) as u16;
                (start, len)
            }
        };
        previous = Some((record.owner, key_start, key_len));
        items.push(Item {
            key_start,
            key_len,
            rtype: record.rtype.0,
            class: record.class.0,
            index: u32::try_from(index).map_err(|_| SignError::Sink(TOO_LARGE))?,
        });
    }
    let key = |item: &Item| {
        let start = item.key_start as usize;
        &keys[start..start + usize::from(item.key_len)]
    };
    let canonical = |item: &Item| {
        let rdata = records.record(item.index as usize).rdata;
        tern_zone::print::canonical_rdata(RType(item.rtype), rdata)
    };
    let rrset_order =
        |a: &Item, b: &Item| (key(a), a.rtype, a.class).cmp(&(key(b), b.rtype, b.class));
    items.sort_unstable_by(|a, b| {
        rrset_order(a, b)
            .then_with(|| canonical(a).cmp(&canonical(b)))
            .then(a.index.cmp(&b.index))
    });
    let mut order = Vec::with_capacity(items.len());
    for (at, item) in items.iter().enumerate() {
        let duplicate = at > 0 && {
            let before = &items[at - 1];
            rrset_order(before, item) == Ordering::Equal && canonical(before) == canonical(item)
        };
        if !duplicate {
            order.push(item.index);
        }
    }
    Ok((order, replaced))
}

/// Appends a key of `name` that sorts, as octets, in the canonical order
/// of names (RFC 4034 section 6.1): its labels from the root, each
/// lowercased and ended by a 0 octet, where octets 0 and 1 of a label are
/// written as 1 1 and 1 2 (so every octet of a label sorts above the
/// end, and a label sorts before those it is a prefix of).
fn push_canonical_key(name: Name<'_>, out: &mut Vec<u8>) {
    let bytes = name.as_bytes();
    let mut starts = [0u8; tern_wire::name::MAX_LABELS];
    let mut count = 0;
    let mut at = 0;
    while at < bytes.len() && bytes[at] != 0 && count < starts.len() {
        // A name is at most 255 octets.
        starts[count] = at as u8;
        count += 1;
        at += 1 + usize::from(bytes[at]);
    }
    for &start in starts[..count].iter().rev() {
        let start = usize::from(start);
        let len = usize::from(bytes[start]);
        for &octet in &bytes[start + 1..start + 1 + len] {
            match octet.to_ascii_lowercase() {
                0 => out.extend_from_slice(&[1, 1]),
                1 => out.extend_from_slice(&[1, 2]),
                other => out.push(other),
            }
        }
        out.push(0);
    }
}

/// One signing pass over a prepared zone: what each batch needs (the
/// RRSIGs come from a [`SignRrset`] of the caller's).
pub(crate) struct Pass<'a> {
    pub(crate) zone: &'a Prepared<'a>,
    pub(crate) origin: Name<'a>,
}

impl Pass<'_> {
    /// The zone's NSEC3 chain, if it has one.
    pub(crate) fn chain(&self) -> Option<Chain<'_>> {
        Some(Chain {
            origin: self.origin,
            class: self.zone.soa.class,
            ttl: self.zone.nsec_ttl,
            params: self.zone.nsec3?,
        })
    }

    /// The types of the RRsets at `node` that its NSEC or NSEC3 bitmap
    /// names (without RRSIG and NSEC), into `types`; whether any is
    /// signed.
    fn node_types(&self, node: &Node, types: &mut Vec<RType>) -> bool {
        let records = &self.zone.records;
        let mut any_signed = false;
        let mut start = node.start;
        while start < node.end {
            let end = self.rrset_end(node, start);
            let rtype = records.rtype(start);
            let signed = rrset_signed(node.kind, rtype);
            any_signed |= signed;
            if in_bitmap(node.kind, rtype, signed) {
                types.push(rtype);
            }
            start = end;
        }
        any_signed
    }

    /// Where the RRset starting at `start` in `node` ends.
    fn rrset_end(&self, node: &Node, start: usize) -> usize {
        let records = &self.zone.records;
        let (rtype, class) = {
            let first = records.record(start);
            (first.rtype, first.class)
        };
        let mut end = start + 1;
        while end < node.end && records.rtype(end) == rtype && records.record(end).class == class {
            end += 1;
        }
        end
    }

    /// What the NSEC3 chain is made from: each name that is not glue, in
    /// canonical order, with its types.
    pub(crate) fn hashed_names(&self) -> Vec<Hashed> {
        let mut hashed = Vec::new();
        for node in &self.zone.nodes {
            if node.kind == NodeKind::Glue {
                continue;
            }
            let mut types = Vec::new();
            let any_signed = self.node_types(node, &mut types);
            if any_signed {
                types.push(RType::RRSIG);
            }
            hashed.push(Hashed {
                name: self.zone.records.record(node.start).owner.to_lower(),
                types,
                insecure_delegation: node.kind == NodeKind::Delegation && !any_signed,
                hash: [0; HASH_LEN],
            });
        }
        hashed
    }

    /// The records of the names `range` (indexes of nodes), each RRset
    /// with its RRSIGs from `signer`, with their NSEC records (NSEC3 are
    /// made apart), into `out` in canonical order; how many RRSIGs were
    /// made.
    pub(crate) fn sign_nodes(
        &self,
        range: Range<usize>,
        signer: &mut dyn SignRrset,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError> {
        let zone = self.zone;
        let records = &zone.records;
        let mut signatures = 0;
        let mut rdata: Vec<&[u8]> = Vec::new();
        let mut types = Vec::new();
        for at in range {
            let node = &zone.nodes[at];
            let owner = records.record(node.start).owner;
            let mut start = node.start;
            while start < node.end {
                let end = self.rrset_end(node, start);
                let first = records.record(start);
                if rrset_signed(node.kind, first.rtype) {
                    rdata.clear();
                    rdata.extend((start..end).map(|index| records.record(index).rdata));
                    let rrset = Rrset {
                        owner,
                        class: first.class,
                        rtype: first.rtype,
                        ttl: first.ttl,
                        rdata: &rdata,
                    };
                    let by_key_signing_keys = node.kind == NodeKind::Apex
                        && matches!(first.rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
                    signatures += signer.sign(&rrset, by_key_signing_keys, out)?;
                }
                for index in start..end {
                    // One TTL per RRset: the one signed.
                    let record = RecordRef {
                        ttl: first.ttl,
                        ..records.record(index)
                    };
                    out.record(record).map_err(SignError::Sink)?;
                }
                start = end;
            }
            if node.kind == NodeKind::Glue || zone.nsec3.is_some() {
                continue;
            }
            types.clear();
            self.node_types(node, &mut types);
            types.extend([RType::RRSIG, RType::NSEC]);
            let next = zone.nodes[at + 1..]
                .iter()
                .find(|node| node.kind != NodeKind::Glue)
                .map_or_else(
                    || self.origin.to_lower(),
                    |node| records.record(node.start).owner.to_lower(),
                );
            let nsec = [&nsec_rdata(next.as_name(), &types)[..]];
            let rrset = Rrset {
                owner,
                class: zone.soa.class,
                rtype: RType::NSEC,
                ttl: zone.nsec_ttl,
                rdata: &nsec,
            };
            signatures += signer.sign(&rrset, false, out)?;
            out.record(RecordRef {
                owner,
                class: zone.soa.class,
                ttl: zone.nsec_ttl,
                rtype: RType::NSEC,
                rdata: nsec[0],
                location: Location::default(),
            })
            .map_err(SignError::Sink)?;
        }
        Ok(signatures)
    }
}

/// Whether an RRset of `rtype` at a name of `kind` is signed.
fn rrset_signed(kind: NodeKind, rtype: RType) -> bool {
    match kind {
        NodeKind::Apex | NodeKind::Authoritative => true,
        NodeKind::Delegation => rtype == RType::DS,
        NodeKind::Glue => false,
    }
}

/// Whether an RRset of `rtype` at a name of `kind` is in its NSEC or
/// NSEC3 bitmap (RRSIG and NSEC aside).
fn in_bitmap(kind: NodeKind, rtype: RType, signed: bool) -> bool {
    match kind {
        NodeKind::Delegation => matches!(rtype, RType::NS | RType::DS),
        _ => signed,
    }
}

/// The NSEC3PARAM's TTL: 0, as Knot and BIND write it (RFC 5155 names
/// none; the record is for the zone's servers, not for caches).
pub(crate) const NSEC3PARAM_TTL: u32 = 0;

/// The NSEC3 parameters, if they can be signed with.
fn check_nsec3<'p>(
    origin: Name<'_>,
    params: &'p Nsec3Params,
) -> Result<&'p Nsec3Params, SignError> {
    if params.iterations > MAX_ITERATIONS {
        return Err(SignError::Nsec3Iterations(params.iterations));
    }
    if params.salt.len() > MAX_SALT_LEN {
        return Err(SignError::Nsec3SaltTooLong);
    }
    if hashed_owner(&[0; HASH_LEN], origin).is_none() {
        return Err(SignError::Nsec3OwnerTooLong);
    }
    Ok(params)
}

/// A name in the NSEC3 chain, with what its NSEC3 says.
pub(crate) struct Hashed {
    /// The original owner, lowercased.
    name: LowerNameBuf,
    /// The types at the original owner (RRSIG included when signed).
    types: Vec<RType>,
    /// A delegation without DS: left out of the chain with opt-out.
    insecure_delegation: bool,
    /// Its hash, once made.
    hash: Hash,
}

/// The NSEC3 chain of one zone.
pub(crate) struct Chain<'a> {
    origin: Name<'a>,
    class: RClass,
    ttl: u32,
    params: &'a Nsec3Params,
}

impl Chain<'_> {
    /// The names of the chain: `names` (each name of the zone that is not
    /// glue, in canonical order; less the insecure delegations with
    /// opt-out) and the empty non-terminals above them, with their
    /// hashes, in hash order (the canonical order of their hashed
    /// owners). Bound: one hash per name and empty non-terminal (each
    /// name's ancestors are walked until one already seen), a sort.
    pub(crate) fn hash_names(&self, mut names: Vec<Hashed>) -> Result<Vec<Hashed>, SignError> {
        if self.params.opt_out {
            names.retain(|name| !name.insecure_delegation);
        }
        let mut seen: HashSet<LowerNameBuf> = names.iter().map(|name| name.name).collect();
        let mut empty = Vec::new();
        let depth = self.origin.label_count();
        for hashed in &names {
            let mut name = hashed.name.as_name();
            while let Some(parent) = name.parent() {
                if parent.label_count() <= depth || !seen.insert(parent.to_lower()) {
                    break;
                }
                empty.push(Hashed {
                    name: parent.to_lower(),
                    types: Vec::new(),
                    insecure_delegation: false,
                    hash: [0; HASH_LEN],
                });
                name = parent;
            }
        }
        names.append(&mut empty);
        for name in &mut names {
            name.hash = nsec3_hash(
                name.name.as_name(),
                self.params.iterations,
                &self.params.salt,
            );
        }
        names.sort_unstable_by_key(|name| name.hash);
        if let Some(pair) = names.windows(2).find(|pair| pair[0].hash == pair[1].hash) {
            return Err(SignError::Nsec3Collision(Box::new(
                pair[0].name.as_name().to_buf(),
            )));
        }
        Ok(names)
    }

    /// The NSEC3 records of `names[range]` (from [`Chain::hash_names`]),
    /// each after its RRSIGs from `signer`, into `out`; how many RRSIGs
    /// were made.
    pub(crate) fn sign_range(
        &self,
        names: &[Hashed],
        range: Range<usize>,
        signer: &mut dyn SignRrset,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError> {
        let mut signatures = 0;
        for index in range {
            let name = &names[index];
            let next = &names[(index + 1) % names.len()].hash;
            let owner =
                hashed_owner(&name.hash, self.origin).ok_or(SignError::Nsec3OwnerTooLong)?;
            let rdata = [&nsec3_rdata(self.params, next, &name.types)[..]];
            let rrset = Rrset {
                owner: owner.as_name(),
                class: self.class,
                rtype: RType::NSEC3,
                ttl: self.ttl,
                rdata: &rdata,
            };
            signatures += signer.sign(&rrset, false, out)?;
            out.record(RecordRef {
                owner: owner.as_name(),
                class: self.class,
                ttl: self.ttl,
                rtype: RType::NSEC3,
                rdata: rdata[0],
                location: Location::default(),
            })
            .map_err(SignError::Sink)?;
        }
        Ok(signatures)
    }
}

/// The records of `a` and `b`, each in canonical order of owners, merged
/// into one in that order (an owner's records stay together, `a`'s
/// first).
pub(crate) fn merge(a: Vec<Record>, b: Vec<Record>) -> Vec<Record> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => {
                x.owner.as_name().canonical_cmp(y.owner.as_name()) != Ordering::Greater
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_a { a.next() } else { b.next() };
        out.extend(next);
    }
    out
}

/// The CDS and CDNSKEY RDATA of `keys` at `owner`, each type in
/// canonical RDATA order and once (the CDS RRset first, as its type is
/// lower).
pub(crate) fn cds_records(owner: Name<'_>, keys: &[&SigningKey]) -> Vec<(RType, Vec<u8>)> {
    let mut cds: Vec<Vec<u8>> = keys.iter().map(|key| key.ds_rdata(owner)).collect();
    let mut cdnskey: Vec<Vec<u8>> = keys.iter().map(|key| key.dnskey_rdata().to_vec()).collect();
    for set in [&mut cds, &mut cdnskey] {
        set.sort_unstable();
        set.dedup();
    }
    let cds = cds.into_iter().map(|rdata| (RType::CDS, rdata));
    cds.chain(cdnskey.into_iter().map(|rdata| (RType::CDNSKEY, rdata)))
        .collect()
}

/// At least one key for each use, at most [`MAX_KEYS`].
pub(crate) fn check_keys(keys: &[ZoneKey<'_>]) -> Result<(), SignError> {
    if keys.is_empty() {
        return Err(SignError::NoKeys);
    }
    if keys.len() > MAX_KEYS {
        return Err(SignError::TooManyKeys);
    }
    if !keys.iter().any(|key| key.signs_keys && key.published) {
        return Err(SignError::NoKeySigningKey);
    }
    if !keys.iter().any(|key| key.signs_zone && key.published) {
        return Err(SignError::NoZoneSigningKey);
    }
    Ok(())
}

/// What the signer needs of the SOA.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soa {
    pub(crate) class: RClass,
    pub(crate) ttl: u32,
    pub(crate) minimum: u32,
}

/// The one SOA record among `apex` (the apex's records).
pub(crate) fn soa_of<'a>(apex: impl Iterator<Item = RecordRef<'a>>) -> Result<Soa, SignError> {
    let mut soas = apex.filter(|record| record.rtype == RType::SOA);
    let soa = soas.next().ok_or(SignError::NoSoa)?;
    if soas.next().is_some() {
        return Err(SignError::SeveralSoa);
    }
    let minimum = tern_wire::rdata::soa_minimum(soa.rdata).ok_or(SignError::NoSoa)?;
    Ok(Soa {
        class: soa.class,
        ttl: soa.ttl,
        minimum,
    })
}

/// Makes the serial in the SOA RDATA `rdata` higher than `above` in
/// RFC 1982 terms: the input's if it is, else `above + 1` (a serial
/// exactly 2^31 away counts as not higher).
pub(crate) fn raise_serial_rdata(rdata: &mut [u8], above: u32) {
    // The serial is the first of the 20 octets of timers that end the
    // RDATA (checked by `soa_minimum` in `soa_of`).
    let Some(at) = rdata.len().checked_sub(20) else {
        return;
    };
    let Some(field) = rdata.get_mut(at..at + 4) else {
        return;
    };
    let serial = u32::from_be_bytes([field[0], field[1], field[2], field[3]]);
    if !serial_higher(serial, above) {
        field.copy_from_slice(&above.wrapping_add(1).to_be_bytes());
    }
}

/// Whether serial `a` is higher than `b` (RFC 1982 section 3.2; the
/// undefined case, 2^31 apart, is not higher).
pub fn serial_higher(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

/// The names of the sorted records, with what each is. A delegation's
/// names below it follow it directly in canonical order, so one cut at a
/// time is remembered. Names below a DNAME (at the apex too) are occluded
/// as those below a delegation are (RFC 6672 section 2.3): kept as
/// [`NodeKind::Glue`], neither signed nor chained.
pub(crate) fn nodes<L: RecordList + ?Sized>(origin: Name<'_>, sorted: &L) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut cut: Option<NameBuf> = None;
    let mut start = 0;
    while start < sorted.len() {
        let owner = sorted.record(start).owner;
        let mut end = start + 1;
        while end < sorted.len() && sorted.record(end).owner.eq_ignore_case(owner) {
            end += 1;
        }
        let below_cut = cut
            .as_ref()
            .is_some_and(|cut| owner.ends_with(cut.as_name()));
        let kind = if below_cut {
            NodeKind::Glue
        } else if owner.eq_ignore_case(origin) {
            cut = dname_cut(sorted, start..end, owner);
            NodeKind::Apex
        } else if (start..end).any(|index| sorted.rtype(index) == RType::NS) {
            cut = Some(owner.to_buf());
            NodeKind::Delegation
        } else {
            cut = dname_cut(sorted, start..end, owner);
            NodeKind::Authoritative
        };
        nodes.push(Node { start, end, kind });
        start = end;
    }
    nodes
}

/// `owner`, when the records `range` (its own) hold a DNAME: the names
/// below it are occluded.
fn dname_cut<L: RecordList + ?Sized>(
    sorted: &L,
    range: Range<usize>,
    owner: Name<'_>,
) -> Option<NameBuf> {
    range
        .into_iter()
        .any(|index| sorted.rtype(index) == RType::DNAME)
        .then(|| owner.to_buf())
}

//----------- SignRrset ------------------------------------------------------

/// How an RRset gets its RRSIGs: signed anew ([`Fresh`]), or kept from the
/// previous signed version where they can be ([`crate::incremental`]).
pub(crate) trait SignRrset {
    /// Pushes to `out` an RRSIG over `rrset` by each key that signs it
    /// (the apex's DNSKEY, CDS and CDNSKEY RRsets, `by_key_signing_keys`,
    /// by the keys that sign keys; the others by those that sign the
    /// zone); returns how many were made anew.
    fn sign(
        &mut self,
        rrset: &Rrset<'_>,
        by_key_signing_keys: bool,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError>;
}

/// Every RRSIG made anew, by the keys chosen for the RRset.
#[derive(Clone, Copy)]
struct Fresh<'a> {
    /// The zone's apex, lowercased.
    signer: Name<'a>,
    keys: &'a [ZoneKey<'a>],
    options: &'a SignOptions,
}

impl SignRrset for Fresh<'_> {
    fn sign(
        &mut self,
        rrset: &Rrset<'_>,
        by_key_signing_keys: bool,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError> {
        let mut made = 0;
        for key in self
            .keys
            .iter()
            .filter(|key| key.signs(by_key_signing_keys))
        {
            made += 1;
            let rdata = sign_rrset(rrset, self.signer, key.key, self.options.validity)?;
            push_rrsig(rrset, &rdata, out)?;
        }
        Ok(made)
    }
}

/// Pushes to `out` the RRSIG record of `rdata` over `rrset`.
pub(crate) fn push_rrsig(
    rrset: &Rrset<'_>,
    rdata: &[u8],
    out: &mut dyn Sink,
) -> Result<(), SignError> {
    out.record(RecordRef {
        owner: rrset.owner,
        class: rrset.class,
        ttl: rrset.ttl,
        rtype: RType::RRSIG,
        rdata,
        location: Location::default(),
    })
    .map_err(SignError::Sink)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tern_zone::{parse_bytes, NoInclude, Options};

    use super::*;
    use crate::key::{Algorithm, KeyRole};

    fn zone(text: &str) -> (NameBuf, Vec<Record>) {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let records = parse_bytes(
            text.as_bytes(),
            Path::new("test"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        )
        .unwrap()
        .records;
        (origin, records)
    }

    fn options() -> SignOptions {
        SignOptions {
            validity: Validity::new(1_000_000, 2_000_000).unwrap(),
            dnskey_ttl: Some(60),
            denial: Denial::Nsec,
            serial_above: None,
        }
    }

    fn key(role: KeyRole) -> SigningKey {
        SigningKey::generate(Algorithm::Ed25519, role).unwrap().0
    }

    const SOA: &str = "@ 600 SOA ns hostmaster 1 2 3 4 5\n";

    /// With a serial served before, the signed SOA's serial is the
    /// input's when higher (RFC 1982), else the one served plus one; the
    /// SOA's signature covers the serial it gets.
    #[test]
    fn serial_above_the_one_served() {
        let (origin, records) = zone("@ 600 SOA ns hostmaster 10 2 3 4 5\n");
        let csk = [key(KeyRole::Csk)];
        let serial_of = |above: Option<u32>| {
            let options = SignOptions {
                serial_above: above,
                ..options()
            };
            let signed = sign_zone(origin.as_name(), &records, &csk, &options).unwrap();
            let soa = signed
                .records
                .iter()
                .find(|record| record.rtype == RType::SOA)
                .unwrap();
            let at = soa.rdata.len() - 20;
            u32::from_be_bytes(soa.rdata[at..at + 4].try_into().unwrap())
        };
        assert_eq!(serial_of(None), 10);
        assert_eq!(serial_of(Some(9)), 10, "the file's is higher");
        assert_eq!(serial_of(Some(10)), 11, "the same: one more");
        assert_eq!(serial_of(Some(500)), 501, "the file's is lower");
        assert_eq!(serial_of(Some(u32::MAX)), 10, "10 is after 2^32 - 1");
        assert_eq!(serial_of(Some(10 + (1 << 31))), 11 + (1 << 31));
        assert!(serial_higher(0, u32::MAX) && !serial_higher(u32::MAX, 0));
        assert!(!serial_higher(0, 1 << 31) && !serial_higher(1 << 31, 0));
    }

    /// A zone with every kind of name the signer tells apart: the apex,
    /// names with data in mixed case and with octets 0, 1 and 2 in their
    /// labels, duplicates, secure and insecure delegations with glue,
    /// empty non-terminals, a wildcard; then `names` generated names of
    /// each kind (seeded, so every run signs the same zone).
    fn varied_zone(names: usize) -> (NameBuf, Vec<Record>) {
        let mut text = format!(
            "{SOA}@ NS ns\n@ NS NS\nns A 192.0.2.1\nWWW A 192.0.2.9\nwww A 192.0.2.9\n\
             www A 192.0.2.1\nwww 300 TXT hi\na.b.c TXT x\n*.wild A 192.0.2.7\n\
             sub NS ns.sub\nsub DS 1 13 2 00\nns.sub A 192.0.2.2\n\
             x.unsigned NS ns.example.net.\nmx MX 10 MAIL.Example.\nMAIL A 192.0.2.3\n\
             z\\000 A 192.0.2.4\nz\\001 A 192.0.2.4\nz\\002 A 192.0.2.4\nz- A 192.0.2.4\n"
        );
        let mut seed: u64 = 24;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        let octets = ["a", "B", "c", "\\000", "\\001", "\\255", "-", "Z"];
        for _ in 0..names {
            let mut name = String::new();
            for _ in 0..1 + next() % 3 {
                for _ in 0..1 + next() % 3 {
                    name.push_str(octets[next() % octets.len()]);
                }
                name.push('.');
            }
            name.push_str("example.");
            let line = match next() % 6 {
                0 => format!("{name} NS ns.{name}\nns.{name} A 192.0.2.{}\n", next() % 3),
                1 => format!("{name} MX 10 {}\n", name.to_uppercase()),
                _ => format!("{name} {} A 192.0.2.{}\n", 100 + next() % 3, next() % 4),
            };
            text.push_str(&line);
        }
        zone(&text)
    }

    /// `dnssec.signing-threads`: the zone signed on 2 or 3 threads, in
    /// batches of 1, 2 or 5 names (every boundary crossed), is the zone
    /// signed on one, record for record (Ed25519 signatures are
    /// deterministic), with NSEC, NSEC3 and NSEC3 with opt-out.
    #[test]
    fn threads_and_batches_change_nothing() {
        let (origin, records) = varied_zone(150);
        let keys = [key(KeyRole::Ksk), key(KeyRole::Zsk)];
        let denials = [
            Denial::Nsec,
            Denial::Nsec3(Nsec3Params::default()),
            Denial::Nsec3(Nsec3Params {
                iterations: 2,
                salt: vec![0xab, 0xcd],
                opt_out: true,
            }),
        ];
        for denial in denials {
            let options = SignOptions {
                denial,
                ..options()
            };
            let one = sign_zone(origin.as_name(), &records, &keys, &options).unwrap();
            assert!(one.records.len() > 3 * 150, "{}", one.records.len());
            for (threads, batch) in [(2, 1), (2, 5), (3, 2), (3, 1000)] {
                let mut out: Vec<Record> = Vec::new();
                let stats = sign_in_batches(
                    origin.as_name(),
                    &records,
                    &KeySet::by_role(&keys),
                    &options,
                    threads,
                    batch,
                    &mut out,
                )
                .unwrap();
                assert_eq!(
                    (stats.records, stats.signatures, stats.replaced),
                    (out.len(), one.signatures, one.replaced)
                );
                assert!(
                    out == one.records,
                    "{:?}: {threads} threads, batches of {batch}",
                    options.denial
                );
            }
        }
    }

    /// With ECDSA (random nonces) two threads make the same records but
    /// the signatures' 64 octets, and each signature verifies.
    #[test]
    fn ecdsa_on_two_threads() {
        let (origin, records) = varied_zone(40);
        let (csk, _) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk).unwrap();
        let keys = [csk];
        let one = sign_zone(origin.as_name(), &records, &keys, &options()).unwrap();
        let mut two: Vec<Record> = Vec::new();
        sign_in_batches(
            origin.as_name(),
            &records,
            &KeySet::by_role(&keys),
            &options(),
            2,
            3,
            &mut two,
        )
        .unwrap();
        assert_eq!(one.records.len(), two.len());
        let without_signature = |record: &Record| {
            let mut record = record.clone();
            if record.rtype == RType::RRSIG {
                record.rdata.truncate(record.rdata.len() - 64);
            }
            record
        };
        for (a, b) in one.records.iter().zip(&two) {
            assert_eq!(without_signature(a), without_signature(b));
        }
        assert!(two.iter().any(|record| record.rtype == RType::RRSIG));
    }

    /// The sort keys order names as `canonical_cmp` does (RFC 4034
    /// section 6.1), case, octets 0 to 2 and label boundaries included.
    #[test]
    fn canonical_keys_sort_as_names() {
        let (_, records) = varied_zone(300);
        let mut names: Vec<NameBuf> = records.iter().map(|record| record.owner).collect();
        for text in [
            "a\\000.example.",
            "a.example.",
            "a\\001\\001.example.",
            "\\001.a.example.",
        ] {
            names.push(NameBuf::from_text(text.as_bytes(), None).unwrap());
        }
        let keys: Vec<Vec<u8>> = names
            .iter()
            .map(|name| {
                let mut key = Vec::new();
                push_canonical_key(name.as_name(), &mut key);
                key
            })
            .collect();
        for (a, key_a) in names.iter().zip(&keys) {
            for (b, key_b) in names.iter().zip(&keys) {
                assert_eq!(
                    key_a.cmp(key_b),
                    a.as_name().canonical_cmp(b.as_name()),
                    "{a} and {b}"
                );
            }
        }
    }

    /// A rollover's key set: a key published ahead (signing nothing) is
    /// in the DNSKEY RRset and signs nothing; a CSK that signs only the
    /// keys signs the DNSKEY RRset alone; the CDS and CDNSKEY of the keys
    /// named replace the input's and are signed by the key-signing keys.
    #[test]
    fn a_rollovers_key_set() {
        let text = format!("{SOA}@ CDS 1 13 2 0000\nwww A 192.0.2.1\n");
        let (origin, records) = zone(&text);
        let (old, new, zsk) = (key(KeyRole::Csk), key(KeyRole::Csk), key(KeyRole::Zsk));
        let keys = KeySet {
            keys: vec![
                ZoneKey {
                    key: &old,
                    published: true,
                    signs_keys: true,
                    signs_zone: false,
                },
                ZoneKey {
                    key: &new,
                    published: true,
                    signs_keys: true,
                    signs_zone: true,
                },
                ZoneKey {
                    key: &zsk,
                    published: true,
                    signs_keys: false,
                    signs_zone: false,
                },
            ],
            cds: Some(vec![&new]),
        };
        let signed = sign_zone_with(origin.as_name(), &records, &keys, &options()).unwrap();
        let of = |rtype: RType| -> Vec<&Record> {
            signed
                .records
                .iter()
                .filter(|record| record.rtype == rtype)
                .collect()
        };
        assert_eq!(of(RType::DNSKEY).len(), 3);
        let cds = of(RType::CDS);
        assert_eq!(cds.len(), 1, "the input's CDS replaced");
        assert_eq!(cds[0].rdata, new.ds_rdata(origin.as_name()));
        assert_eq!(cds[0].ttl, 60, "the DNSKEY TTL");
        let cdnskey = of(RType::CDNSKEY);
        assert_eq!(cdnskey.len(), 1);
        assert_eq!(cdnskey[0].rdata, new.dnskey_rdata());
        // Signers by type covered: the key tag is at octets 16-17 of the
        // RRSIG RDATA, the type covered at 0-1.
        let signers = |covered: RType| -> Vec<u16> {
            let mut tags: Vec<u16> = of(RType::RRSIG)
                .iter()
                .filter(|sig| u16::from_be_bytes([sig.rdata[0], sig.rdata[1]]) == covered.0)
                .map(|sig| u16::from_be_bytes([sig.rdata[16], sig.rdata[17]]))
                .collect();
            tags.sort_unstable();
            tags.dedup();
            tags
        };
        let mut both = vec![old.key_tag(), new.key_tag()];
        both.sort_unstable();
        for covered in [RType::DNSKEY, RType::CDS, RType::CDNSKEY] {
            assert_eq!(signers(covered), both, "{covered:?}");
        }
        for covered in [RType::SOA, RType::A, RType::NSEC] {
            assert_eq!(signers(covered), [new.key_tag()], "{covered:?}");
        }
        // Without CDS asked for, the input's stay.
        let keys = KeySet { cds: None, ..keys };
        let signed = sign_zone_with(origin.as_name(), &records, &keys, &options()).unwrap();
        let cds: Vec<&Record> = signed
            .records
            .iter()
            .filter(|r| r.rtype == RType::CDS)
            .collect();
        assert_eq!(cds.len(), 1);
        assert_eq!(cds[0].rdata, [0, 1, 13, 2, 0, 0]);
    }

    /// An algorithm rollover's key sets (RFC 6781 section 4.1.4): a CSK
    /// of the new algorithm that signs before its DNSKEY is published
    /// adds a second RRSIG to every RRset, of its algorithm, and no
    /// DNSKEY; an old CSK whose DNSKEY is withdrawn keeps signing the
    /// same way. A set whose only signer of keys is not published is
    /// refused: the DNSKEY RRset would have no signature by its keys.
    #[test]
    fn signers_not_published_sign_with_their_algorithm() {
        let text = format!("{SOA}www A 192.0.2.1\n");
        let (origin, records) = zone(&text);
        let old = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk)
            .unwrap()
            .0;
        let new = key(KeyRole::Csk);
        let set = |old_published: bool, new_published: bool| KeySet {
            keys: vec![
                ZoneKey {
                    key: &old,
                    published: old_published,
                    signs_keys: true,
                    signs_zone: true,
                },
                ZoneKey {
                    key: &new,
                    published: new_published,
                    signs_keys: true,
                    signs_zone: true,
                },
            ],
            cds: None,
        };
        for (old_published, new_published) in [(true, false), (true, true), (false, true)] {
            let keys = set(old_published, new_published);
            let signed = sign_zone_with(origin.as_name(), &records, &keys, &options()).unwrap();
            let dnskeys: Vec<&[u8]> = signed
                .records
                .iter()
                .filter(|record| record.rtype == RType::DNSKEY)
                .map(|record| record.rdata.as_slice())
                .collect();
            let mut expected: Vec<&[u8]> = Vec::new();
            if old_published {
                expected.push(old.dnskey_rdata());
            }
            if new_published {
                expected.push(new.dnskey_rdata());
            }
            expected.sort_unstable();
            assert_eq!(dnskeys, expected, "{old_published} {new_published}");
            // Every RRset (SOA, DNSKEY, A, the NSECs) has one RRSIG
            // of each algorithm, by the key of that algorithm: octet 2 of
            // the RDATA is the algorithm, 16-17 the key tag.
            let mut by_rrset: Vec<(Vec<u8>, u16, u8, u16)> = signed
                .records
                .iter()
                .filter(|record| record.rtype == RType::RRSIG)
                .map(|sig| {
                    let covered = u16::from_be_bytes([sig.rdata[0], sig.rdata[1]]);
                    let tag = u16::from_be_bytes([sig.rdata[16], sig.rdata[17]]);
                    (sig.owner.as_bytes().to_vec(), covered, sig.rdata[2], tag)
                })
                .collect();
            by_rrset.sort_unstable();
            assert_eq!(by_rrset.len(), 2 * 5, "{by_rrset:?}");
            for pair in by_rrset.chunks(2) {
                assert_eq!(
                    (pair[0].0.clone(), pair[0].1),
                    (pair[1].0.clone(), pair[1].1)
                );
                assert_eq!(
                    [(pair[0].2, pair[0].3), (pair[1].2, pair[1].3)],
                    [
                        (Algorithm::EcdsaP256Sha256.number(), old.key_tag()),
                        (Algorithm::Ed25519.number(), new.key_tag())
                    ]
                );
            }
        }
        let neither = set(false, false);
        assert!(matches!(
            sign_zone_with(origin.as_name(), &records, &neither, &options()),
            Err(SignError::NoKeySigningKey)
        ));
    }

    /// Each way a zone or key set cannot be signed is its own error.
    #[test]
    fn refusals() {
        let (origin, records) = zone(SOA);
        let sign = |records: &[Record], keys: &[SigningKey]| {
            sign_zone(origin.as_name(), records, keys, &options()).unwrap_err()
        };
        assert!(matches!(sign(&records, &[]), SignError::NoKeys));
        assert!(matches!(
            sign(&records, &[key(KeyRole::Zsk)]),
            SignError::NoKeySigningKey
        ));
        assert!(matches!(
            sign(&records, &[key(KeyRole::Ksk)]),
            SignError::NoZoneSigningKey
        ));
        let many: Vec<SigningKey> = (0..=MAX_KEYS).map(|_| key(KeyRole::Csk)).collect();
        assert!(matches!(sign(&records, &many), SignError::TooManyKeys));
        let csk = [key(KeyRole::Csk)];
        assert!(matches!(
            sign(&zone("www A 192.0.2.1\n").1, &csk),
            SignError::NoSoa
        ));
        let soa_below = zone("www 600 SOA ns hostmaster 1 2 3 4 5\n").1;
        assert!(matches!(sign(&soa_below, &csk), SignError::NoSoa));
        let two = zone(&format!("{SOA}@ SOA ns hostmaster 2 2 3 4 5\n")).1;
        assert!(matches!(sign(&two, &csk), SignError::SeveralSoa));
        let outside = zone(&format!("{SOA}www A 192.0.2.1\nexample.net. A 192.0.2.1\n")).1;
        assert!(matches!(sign(&outside, &csk), SignError::OutOfZone(2)));
    }

    /// NSEC3 parameters beyond the bounds are refused before anything is
    /// signed; a collision of hashes is refused (shown with one name
    /// given twice: two names with one SHA-1 hash are not at hand).
    #[test]
    fn nsec3_refusals() {
        let (origin, records) = zone(SOA);
        let csk = [key(KeyRole::Csk)];
        let sign = |params: Nsec3Params| {
            let options = SignOptions {
                denial: Denial::Nsec3(params),
                ..options()
            };
            sign_zone(origin.as_name(), &records, &csk, &options)
        };
        let iterations = |iterations| Nsec3Params {
            iterations,
            ..Nsec3Params::default()
        };
        assert!(sign(iterations(MAX_ITERATIONS)).is_ok());
        assert!(matches!(
            sign(iterations(MAX_ITERATIONS + 1)),
            Err(SignError::Nsec3Iterations(151))
        ));
        let salt = |len| Nsec3Params {
            salt: vec![0xab; len],
            ..Nsec3Params::default()
        };
        assert!(sign(salt(MAX_SALT_LEN)).is_ok());
        assert!(matches!(
            sign(salt(MAX_SALT_LEN + 1)),
            Err(SignError::Nsec3SaltTooLong)
        ));

        let params = Nsec3Params::default();
        let chain = Chain {
            origin: origin.as_name(),
            class: RClass::IN,
            ttl: 5,
            params: &params,
        };
        let www = NameBuf::from_text(b"www.example.", None).unwrap();
        let twice = (0..2)
            .map(|_| Hashed {
                name: www.as_name().to_lower(),
                types: vec![RType::A],
                insecure_delegation: false,
                hash: [0; HASH_LEN],
            })
            .collect();
        let error = chain.hash_names(twice).err().unwrap();
        assert!(
            matches!(error, SignError::Nsec3Collision(name) if name.as_name() == www.as_name())
        );
    }

    /// With NSEC3: the chain holds the apex, the names with data, the
    /// delegations and the empty non-terminals above them, not the glue;
    /// with opt-out the insecure delegation and the empty non-terminal
    /// only it makes are left out and every NSEC3 has the flag.
    #[test]
    fn nsec3_chain_members() {
        let (origin, records) = zone(&format!(
            "{SOA}@ NS ns\nns A 192.0.2.1\na.b.c TXT x\n\
             sub NS ns.sub\nsub DS 1 13 2 00\nns.sub A 192.0.2.2\n\
             x.unsigned NS ns.example.net.\n"
        ));
        let csk = [key(KeyRole::Csk)];
        let hashes = |opt_out| {
            let params = Nsec3Params {
                opt_out,
                ..Nsec3Params::default()
            };
            let options = SignOptions {
                denial: Denial::Nsec3(params),
                ..options()
            };
            let signed = sign_zone(origin.as_name(), &records, &csk, &options).unwrap();
            assert!(!signed
                .records
                .iter()
                .any(|record| record.rtype == RType::NSEC));
            let nsec3: Vec<&Record> = signed
                .records
                .iter()
                .filter(|record| record.rtype == RType::NSEC3)
                .collect();
            assert!(nsec3
                .iter()
                .all(|record| record.rdata[1] == u8::from(opt_out)));
            let mut owners: Vec<String> = nsec3
                .iter()
                .map(|record| record.owner.to_string())
                .collect();
            owners.sort();
            owners
        };
        let expect = |names: &[&str]| {
            let mut owners: Vec<String> = names
                .iter()
                .map(|name| {
                    let name = NameBuf::from_text(name.as_bytes(), None).unwrap();
                    let hash = nsec3_hash(name.as_name(), 0, &[]);
                    hashed_owner(&hash, origin.as_name()).unwrap().to_string()
                })
                .collect();
            owners.sort();
            owners
        };
        let secure = [
            "example.",
            "ns.example.",
            "a.b.c.example.",
            "b.c.example.",
            "c.example.",
            "sub.example.",
        ];
        let mut all = secure.to_vec();
        all.extend(["x.unsigned.example.", "unsigned.example."]);
        assert_eq!(hashes(false), expect(&all));
        assert_eq!(hashes(true), expect(&secure));
    }

    /// The caller's DNSKEY TTL is used; an apex DNSKEY or NSEC3PARAM and
    /// every RRSIG, NSEC and NSEC3 of the input are replaced, but a
    /// DNSKEY below the apex is data like any other.
    #[test]
    fn replaced_records() {
        let (origin, records) = zone(&format!(
            "{SOA}@ DNSKEY 256 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=\n\
             @ NSEC3PARAM 1 0 0 -\n\
             @ NSEC example. SOA\n\
             x NSEC3 1 0 0 - 0123456789ABCDEFGHIJKLMNOPQRSTUV A\n\
             host DNSKEY 256 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=\n"
        ));
        let csk = key(KeyRole::Csk);
        let dnskey = csk.dnskey_rdata().to_vec();
        let signed = sign_zone(origin.as_name(), &records, &[csk], &options()).unwrap();
        assert_eq!(signed.replaced, 4);
        let dnskeys: Vec<&Record> = signed
            .records
            .iter()
            .filter(|record| record.rtype == RType::DNSKEY)
            .collect();
        assert_eq!(dnskeys.len(), 2);
        assert_eq!(
            (dnskeys[0].rdata.as_slice(), dnskeys[0].ttl),
            (&dnskey[..], 60)
        );
        assert_eq!(dnskeys[1].owner.to_string(), "host.example.");
        assert!(!signed
            .records
            .iter()
            .any(|record| matches!(record.rtype, RType::NSEC3 | RType::NSEC3PARAM)));
    }
}
