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
//!
//! Not handled in this slice: names below a DNAME are signed like any
//! other (RFC 6672 occlusion is not modelled), and the zone is assumed to
//! have passed `tern_zone::check` (one class, no CNAME beside other data).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;

use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_zone::ttl::RrsetTtls;
use tern_zone::{Location, Record, RecordList};

use crate::key::{KeyError, SigningKey};
use crate::nsec::nsec_rdata;
use crate::nsec3::{
    hashed_owner, nsec3_hash, nsec3_rdata, nsec3param_rdata, Hash, Nsec3Params, HASH_LEN,
    MAX_ITERATIONS, MAX_SALT_LEN,
};
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

/// One key of a [`KeySet`]: its DNSKEY is published; it signs what its
/// flags say (whatever its role: a CSK being rolled signs only the
/// DNSKEY RRset for a while).
#[derive(Clone, Copy, Debug)]
pub struct ZoneKey<'k> {
    /// The key.
    pub key: &'k SigningKey,
    /// Whether it signs the apex's DNSKEY, CDS and CDNSKEY RRsets.
    pub signs_keys: bool,
    /// Whether it signs the other authoritative RRsets.
    pub signs_zone: bool,
}

/// The keys of one signing, as a rollover has them at that time.
#[derive(Clone, Debug, Default)]
pub struct KeySet<'k> {
    /// Every key whose DNSKEY is published, with what each signs.
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

/// Signs the zone at `origin` made of `records` (in file order) with
/// `keys`; see the module documentation for what is made. Bound: a sort
/// of the records, then one pass; one signature per key and
/// authoritative RRset.
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
    check_keys(&keys.keys)?;
    let cds = keys.cds.as_deref();
    let keys = &keys.keys[..];
    let nsec3 = match &options.denial {
        Denial::Nsec => None,
        Denial::Nsec3(params) => Some(check_nsec3(origin, params)?),
    };
    let (kept, replaced) = keep_records(origin, records, cds.is_some())?;
    let mut sorted = sort_records(kept);
    let soa = apex_soa(origin, &sorted)?;
    if let Some(above) = options.serial_above {
        raise_serial(origin, &mut sorted, above);
    }
    let dnskey_ttl = options.dnskey_ttl.unwrap_or(soa.ttl);
    let nsec_ttl = soa.ttl.min(soa.minimum);
    // The DNSKEY RRset goes right after the apex's other records, where
    // the apex node (the first, as the apex sorts first) ends.
    let apex_end = sorted
        .iter()
        .position(|record| !record.owner.as_name().eq_ignore_case(origin))
        .unwrap_or(sorted.len());
    let mut dnskeys: Vec<&[u8]> = keys.iter().map(|key| key.key.dnskey_rdata()).collect();
    dnskeys.sort_unstable();
    dnskeys.dedup();
    let dnskey_records = dnskeys.iter().map(|rdata| Record {
        owner: sorted[0].owner,
        class: soa.class,
        ttl: dnskey_ttl,
        rtype: RType::DNSKEY,
        rdata: rdata.to_vec(),
        location: Location::default(),
    });
    let mut dnskey_records: Vec<Record> = dnskey_records.collect();
    for (rtype, rdata) in cds_records(sorted[0].owner.as_name(), cds.unwrap_or_default()) {
        dnskey_records.push(Record {
            owner: sorted[0].owner,
            class: soa.class,
            ttl: dnskey_ttl,
            rtype,
            rdata,
            location: Location::default(),
        });
    }
    if let Some(params) = nsec3 {
        dnskey_records.push(Record {
            owner: sorted[0].owner,
            class: soa.class,
            ttl: NSEC3PARAM_TTL,
            rtype: RType::NSEC3PARAM,
            rdata: nsec3param_rdata(params),
            location: Location::default(),
        });
    }
    sorted.splice(apex_end..apex_end, dnskey_records);

    let nodes = nodes(origin, &sorted);
    let signer = origin.to_lower();
    let mut out = Vec::with_capacity(sorted.len() * 3);
    let mut signatures = 0;
    let chain: Vec<&Node> = nodes
        .iter()
        .filter(|node| node.kind != NodeKind::Glue)
        .collect();
    let mut next_of = chain.iter().skip(1).map(|node| node.start);
    let mut rdata: Vec<&[u8]> = Vec::new();
    let mut hashed: Vec<Hashed> = Vec::new();
    for node in &nodes {
        let owner = sorted[node.start].owner;
        let mut types = Vec::new();
        let mut any_signed = false;
        let mut start = node.start;
        while start < node.end {
            let first = &sorted[start];
            let mut end = start + 1;
            while end < node.end
                && sorted[end].rtype == first.rtype
                && sorted[end].class == first.class
            {
                end += 1;
            }
            let signed = match node.kind {
                NodeKind::Apex | NodeKind::Authoritative => true,
                NodeKind::Delegation => first.rtype == RType::DS,
                NodeKind::Glue => false,
            };
            let in_bitmap = match node.kind {
                NodeKind::Delegation => matches!(first.rtype, RType::NS | RType::DS),
                _ => signed,
            };
            if in_bitmap {
                types.push(first.rtype);
            }
            if signed {
                any_signed = true;
                rdata.clear();
                rdata.extend(sorted[start..end].iter().map(|record| &record.rdata[..]));
                let rrset = Rrset {
                    owner: owner.as_name(),
                    class: first.class,
                    rtype: first.rtype,
                    ttl: first.ttl,
                    rdata: &rdata,
                };
                let by_key_signing_keys = node.kind == NodeKind::Apex
                    && matches!(first.rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
                signatures += sign_with(
                    &rrset,
                    signer.as_name(),
                    keys,
                    by_key_signing_keys,
                    options,
                    &mut out,
                )?;
            }
            for record in &sorted[start..end] {
                // One TTL per RRset: the one signed.
                out.push(Record {
                    ttl: first.ttl,
                    ..record.clone()
                });
            }
            start = end;
        }
        if node.kind == NodeKind::Glue {
            continue;
        }
        if nsec3.is_some() {
            if any_signed {
                types.push(RType::RRSIG);
            }
            hashed.push(Hashed {
                name: owner.as_name().to_lower(),
                types,
                insecure_delegation: node.kind == NodeKind::Delegation && !any_signed,
                hash: [0; HASH_LEN],
            });
            continue;
        }
        types.extend([RType::RRSIG, RType::NSEC]);
        let next = match next_of.next() {
            Some(index) => sorted[index].owner.as_name().to_lower(),
            None => origin.to_lower(),
        };
        let nsec = [&nsec_rdata(next.as_name(), &types)[..]];
        let rrset = Rrset {
            owner: owner.as_name(),
            class: soa.class,
            rtype: RType::NSEC,
            ttl: nsec_ttl,
            rdata: &nsec,
        };
        signatures += sign_with(&rrset, signer.as_name(), keys, false, options, &mut out)?;
        out.push(Record {
            owner,
            class: soa.class,
            ttl: nsec_ttl,
            rtype: RType::NSEC,
            rdata: nsec[0].to_vec(),
            location: Location::default(),
        });
    }
    if let Some(params) = nsec3 {
        let chain = Chain {
            origin,
            class: soa.class,
            ttl: nsec_ttl,
            params,
        };
        let (records, made) = chain.sign(hashed, signer.as_name(), keys, options)?;
        signatures += made;
        out = merge(out, records);
    }
    Ok(SignedZone {
        records: out,
        signatures,
        replaced,
    })
}

/// The NSEC3PARAM's TTL: 0, as Knot and BIND write it (RFC 5155 names
/// none; the record is for the zone's servers, not for caches).
pub(crate) const NSEC3PARAM_TTL: u32 = 0;

/// The NSEC3 parameters, if they can be signed with.
pub(crate) fn check_nsec3<'p>(
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
struct Hashed {
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
struct Chain<'a> {
    origin: Name<'a>,
    class: RClass,
    ttl: u32,
    params: &'a Nsec3Params,
}

impl Chain<'_> {
    /// The NSEC3 records of `names` (each name of the zone that is not
    /// glue, in canonical order) and of the empty non-terminals above
    /// them, with their RRSIGs, in canonical order of their owners; and
    /// how many RRSIGs. Bound: one hash per name and empty non-terminal
    /// (each name's ancestors are walked until one already seen), a sort,
    /// one signature per NSEC3 and zone-signing key.
    fn sign(
        &self,
        mut names: Vec<Hashed>,
        signer: Name<'_>,
        keys: &[ZoneKey<'_>],
        options: &SignOptions,
    ) -> Result<(Vec<Record>, usize), SignError> {
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
        let mut out = Vec::with_capacity(names.len() * 2);
        let mut signatures = 0;
        for (index, name) in names.iter().enumerate() {
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
            signatures += sign_with(&rrset, signer, keys, false, options, &mut out)?;
            out.push(Record {
                owner,
                class: self.class,
                ttl: self.ttl,
                rtype: RType::NSEC3,
                rdata: rdata[0].to_vec(),
                location: Location::default(),
            });
        }
        Ok((out, signatures))
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
    if !keys.iter().any(|key| key.signs_keys) {
        return Err(SignError::NoKeySigningKey);
    }
    if !keys.iter().any(|key| key.signs_zone) {
        return Err(SignError::NoZoneSigningKey);
    }
    Ok(())
}

/// The records to sign, each with the TTL tern serves it with, and the
/// number of DNSSEC records dropped to be made anew (with `own_cds`, the
/// apex's CDS and CDNSKEY records too).
pub(crate) fn keep_records<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    own_cds: bool,
) -> Result<(Vec<Record>, usize), SignError> {
    let ttls = RrsetTtls::of(records);
    let mut kept = Vec::with_capacity(records.len());
    let mut replaced = 0;
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
        let mut owned = record.to_record();
        owned.ttl = ttls.served(index, record.ttl);
        kept.push(owned);
    }
    Ok((kept, replaced))
}

/// The records in canonical order (owner, then type, class and canonical
/// RDATA), each once: of records equal in canonical form, the first in
/// file order stays.
pub(crate) fn sort_records(records: Vec<Record>) -> Vec<Record> {
    let mut order: Vec<usize> = (0..records.len()).collect();
    let keep = {
        let canonical: Vec<Cow<'_, [u8]>> = records
            .iter()
            .map(|record| tern_zone::print::canonical_rdata(record.rtype, &record.rdata))
            .collect();
        let rrset_order = |a: &Record, b: &Record| {
            a.owner
                .as_name()
                .canonical_cmp(b.owner.as_name())
                .then(a.rtype.0.cmp(&b.rtype.0))
                .then(a.class.0.cmp(&b.class.0))
        };
        order.sort_by(|&a, &b| {
            rrset_order(&records[a], &records[b])
                .then_with(|| canonical[a].cmp(&canonical[b]))
                .then(a.cmp(&b))
        });
        let mut keep = vec![true; order.len()];
        for pair in 1..order.len() {
            let (a, b) = (order[pair - 1], order[pair]);
            if rrset_order(&records[a], &records[b]) == Ordering::Equal
                && canonical[a] == canonical[b]
            {
                keep[pair] = false;
            }
        }
        keep
    };
    let mut slots: Vec<Option<Record>> = records.into_iter().map(Some).collect();
    order
        .iter()
        .zip(keep)
        .filter(|(_, keep)| *keep)
        .filter_map(|(&index, _)| slots[index].take())
        .collect()
}

/// What the signer needs of the SOA.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soa {
    pub(crate) class: RClass,
    pub(crate) ttl: u32,
    pub(crate) minimum: u32,
}

/// The apex's one SOA record.
pub(crate) fn apex_soa(origin: Name<'_>, sorted: &[Record]) -> Result<Soa, SignError> {
    let mut soas = sorted
        .iter()
        .take_while(|record| record.owner.as_name().eq_ignore_case(origin))
        .filter(|record| record.rtype == RType::SOA);
    let soa = soas.next().ok_or(SignError::NoSoa)?;
    if soas.next().is_some() {
        return Err(SignError::SeveralSoa);
    }
    let minimum = tern_wire::rdata::soa_minimum(&soa.rdata).ok_or(SignError::NoSoa)?;
    Ok(Soa {
        class: soa.class,
        ttl: soa.ttl,
        minimum,
    })
}

/// Makes the apex SOA's serial higher than `above` in RFC 1982 terms: the
/// input's if it is, else `above + 1` (a serial exactly 2^31 away counts
/// as not higher). The SOA was checked by [`apex_soa`].
pub(crate) fn raise_serial(origin: Name<'_>, sorted: &mut [Record], above: u32) {
    let soa = sorted
        .iter_mut()
        .take_while(|record| record.owner.as_name().eq_ignore_case(origin))
        .find(|record| record.rtype == RType::SOA);
    let Some(soa) = soa else {
        return;
    };
    // The serial is the first of the 20 octets of timers that end the
    // RDATA (checked by `soa_minimum` in `apex_soa`).
    let Some(at) = soa.rdata.len().checked_sub(20) else {
        return;
    };
    let Some(field) = soa.rdata.get_mut(at..at + 4) else {
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
/// time is remembered.
pub(crate) fn nodes(origin: Name<'_>, sorted: &[Record]) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut cut: Option<NameBuf> = None;
    let mut start = 0;
    while start < sorted.len() {
        let owner = sorted[start].owner.as_name();
        let mut end = start + 1;
        while end < sorted.len() && sorted[end].owner.as_name().eq_ignore_case(owner) {
            end += 1;
        }
        let below_cut = cut
            .as_ref()
            .is_some_and(|cut| owner.ends_with(cut.as_name()));
        let kind = if below_cut {
            NodeKind::Glue
        } else if owner.eq_ignore_case(origin) {
            cut = None;
            NodeKind::Apex
        } else if sorted[start..end]
            .iter()
            .any(|record| record.rtype == RType::NS)
        {
            cut = Some(owner.to_buf());
            NodeKind::Delegation
        } else {
            cut = None;
            NodeKind::Authoritative
        };
        nodes.push(Node { start, end, kind });
        start = end;
    }
    nodes
}

/// Signs `rrset` with each key of its role, pushing the RRSIG records to
/// `out`; returns how many.
fn sign_with(
    rrset: &Rrset<'_>,
    signer: Name<'_>,
    keys: &[ZoneKey<'_>],
    by_key_signing_keys: bool,
    options: &SignOptions,
    out: &mut Vec<Record>,
) -> Result<usize, SignError> {
    let mut made = 0;
    for key in keys {
        let chosen = if by_key_signing_keys {
            key.signs_keys
        } else {
            key.signs_zone
        };
        if !chosen {
            continue;
        }
        let rdata = sign_rrset(rrset, signer, key.key, options.validity)?;
        out.push(Record {
            owner: rrset.owner.to_buf(),
            class: rrset.class,
            ttl: rrset.ttl,
            rtype: RType::RRSIG,
            rdata,
            location: Location::default(),
        });
        made += 1;
    }
    Ok(made)
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
                    signs_keys: true,
                    signs_zone: false,
                },
                ZoneKey {
                    key: &new,
                    signs_keys: true,
                    signs_zone: true,
                },
                ZoneKey {
                    key: &zsk,
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
        let error = chain
            .sign(
                twice,
                origin.as_name(),
                &KeySet::by_role(&csk).keys,
                &options(),
            )
            .unwrap_err();
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
