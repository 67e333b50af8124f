//! A zone's records as the update engine keeps them: one node per owner
//! name in canonical order, so that an update costs the names it touches.
//!
//! [`ZoneRecords`] is either built from the records tern-zone gives
//! ([`ZoneRecords::from_records`], any `RecordList`), holding them all, or
//! laid over a [`Base`] ([`ZoneRecords::over`]): a version the server
//! serves, read name by name, with only the names updates changed held
//! here, until the server serves a version with them and lays the records
//! over that one ([`ZoneRecords::over`] again). Over a base, the memory
//! held is the changed names', not the zone's. Either is changed in
//! place by updates. Its map is keyed by [`Key`], the owner's labels from
//! the root, lowercased, each escaped and ended by a zero octet, so that
//! octet order is canonical DNS order (RFC 4034 section 6.1) and a name's
//! key is a prefix of the keys of every name below it: "is there any name
//! below X" (a DNAME's subtree) is one range step. Finding a name is a
//! B-tree search, O(log n) key comparisons and no allocation; changing one
//! copies that node alone.
//!
//! Owners are kept lowercased (as Knot keeps them, and as the journal
//! writes them); RDATA and TTLs as given, one TTL per record, so that
//! RRSIGs keep the TTL of the RRset each covers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use tern_wire::name::{LowerNameBuf, Name, NameBuf, MAX_LABELS, MAX_NAME_LEN};
use tern_wire::types::{RClass, RType};
use tern_zone::ttl::RrsetTtls;
use tern_zone::{Location, Record, RecordList};

use crate::rdata::{rdata_equal, soa_serial};

//----------- Key ------------------------------------------------------------

/// A name's place in canonical order: its labels from the root, each
/// lowercased, with octets 0 and 1 escaped as `1 1` and `1 2`, and ended by
/// a 0. Octet order of keys is canonical order of names; a name's key is a
/// prefix of its descendants' keys and of no other's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key(Box<[u8]>);

impl Key {
    /// The key of `name` (any case). Bound: one pass over the name.
    pub fn of(name: Name<'_>) -> Key {
        let mut labels: [&[u8]; MAX_LABELS] = [&[]; MAX_LABELS];
        let mut count = 0;
        for label in name.labels() {
            // A valid name has at most MAX_LABELS labels.
            if let Some(slot) = labels.get_mut(count) {
                *slot = label;
                count += 1;
            }
        }
        let mut key = Vec::with_capacity(name.len() + 8);
        for label in labels[..count].iter().rev() {
            for &octet in *label {
                match octet.to_ascii_lowercase() {
                    low @ (0 | 1) => key.extend_from_slice(&[1, low + 1]),
                    other => key.push(other),
                }
            }
            key.push(0);
        }
        Key(key.into_boxed_slice())
    }

    /// The name this is the key of, lowercased.
    pub fn name(&self) -> NameBuf {
        // Labels from the root: decode them, then write them leftmost first.
        let mut labels: Vec<Vec<u8>> = Vec::new();
        let mut label = Vec::new();
        let mut escaped = false;
        for &octet in self.0.iter() {
            match (escaped, octet) {
                (true, _) => {
                    label.push(octet - 1);
                    escaped = false;
                }
                (false, 0) => labels.push(std::mem::take(&mut label)),
                (false, 1) => escaped = true,
                (false, _) => label.push(octet),
            }
        }
        let mut wire = Vec::with_capacity(MAX_NAME_LEN);
        for label in labels.iter().rev() {
            wire.push(label.len() as u8);
            wire.extend_from_slice(label);
        }
        wire.push(0);
        Name::from_wire(&wire)
            .expect("a key is made from a valid name")
            .to_buf()
    }

    /// Whether this key's name is `ancestor`'s or below it.
    pub fn is_at_or_below(&self, ancestor: &Key) -> bool {
        self.0.starts_with(&ancestor.0)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        #[cfg(test)]
        comparisons::note();
        self.0.cmp(&other.0)
    }
}

/// Counts key comparisons on this thread, for the test that an update's
/// cost does not grow with the zone beyond the B-tree's logarithm.
#[cfg(test)]
pub(crate) mod comparisons {
    use std::cell::Cell;

    std::thread_local! {
        static COUNT: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn note() {
        COUNT.set(COUNT.get() + 1);
    }

    /// Comparisons made on this thread so far.
    pub(crate) fn count() -> u64 {
        COUNT.get()
    }
}

//----------- Rdata, Rrset, Node ---------------------------------------------

/// One record's TTL and RDATA (uncompressed wire form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rdata {
    /// The TTL.
    pub ttl: u32,
    /// The RDATA.
    pub data: Box<[u8]>,
}

/// The records of one owner and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rrset {
    /// The type.
    pub rtype: RType,
    /// The records, in the order they were added; never empty in a node.
    pub records: Vec<Rdata>,
}

impl Rrset {
    /// The position of the record equal to `data` (RFC 2136 section
    /// 1.1.1), if any.
    pub fn find(&self, data: &[u8]) -> Option<usize> {
        self.records
            .iter()
            .position(|record| rdata_equal(self.rtype, &record.data, data))
    }

    /// Whether this RRset and `other` hold equal RDATA, as sets (TTLs
    /// aside). Bound: quadratic in the records of the two RRsets, which
    /// only a value-dependent prerequisite compares.
    pub fn same_rdata(&self, other: &[Box<[u8]>]) -> bool {
        let mine = |data: &[u8]| self.find(data).is_some();
        let theirs = |data: &[u8]| other.iter().any(|o| rdata_equal(self.rtype, o, data));
        other.iter().all(|data| mine(data)) && self.records.iter().all(|r| theirs(&r.data))
    }
}

/// The records of one owner name, one [`Rrset`] per type, sorted by type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    rrsets: Vec<Rrset>,
}

impl Node {
    /// The RRsets, by type.
    pub fn rrsets(&self) -> &[Rrset] {
        &self.rrsets
    }

    /// Whether the name owns no record.
    pub fn is_empty(&self) -> bool {
        self.rrsets.is_empty()
    }

    /// The records held.
    pub fn len(&self) -> usize {
        self.rrsets.iter().map(|rrset| rrset.records.len()).sum()
    }

    /// The RRset of `rtype`.
    pub fn rrset(&self, rtype: RType) -> Option<&Rrset> {
        self.rrsets
            .binary_search_by_key(&rtype, |rrset| rrset.rtype)
            .ok()
            .map(|at| &self.rrsets[at])
    }

    /// Whether the name owns an RRset of `rtype`.
    pub fn has(&self, rtype: RType) -> bool {
        self.rrset(rtype).is_some()
    }

    /// Whether the name owns data that cannot stand beside a CNAME: any
    /// type but CNAME itself and the DNSSEC records RFC 4035 section 2.5
    /// lets stand beside it (RRSIG, NSEC).
    pub fn has_other_than_cname(&self) -> bool {
        self.rrsets
            .iter()
            .any(|rrset| !matches!(rrset.rtype, RType::CNAME | RType::RRSIG | RType::NSEC))
    }

    /// Adds a record; returns false (and changes nothing) if an equal one
    /// is there with the same TTL. An equal one with another TTL takes the
    /// new TTL.
    pub fn add(&mut self, rtype: RType, ttl: u32, data: &[u8]) -> bool {
        let at = match self
            .rrsets
            .binary_search_by_key(&rtype, |rrset| rrset.rtype)
        {
            Ok(at) => at,
            Err(at) => {
                self.rrsets.insert(
                    at,
                    Rrset {
                        rtype,
                        records: Vec::new(),
                    },
                );
                at
            }
        };
        let rrset = &mut self.rrsets[at];
        match rrset.find(data) {
            Some(found) if rrset.records[found].ttl == ttl => false,
            Some(found) => {
                rrset.records[found].ttl = ttl;
                true
            }
            None => {
                rrset.records.push(Rdata {
                    ttl,
                    data: data.into(),
                });
                true
            }
        }
    }

    /// Gives every record of the RRset of `rtype` the TTL `ttl`.
    pub fn set_ttl(&mut self, rtype: RType, ttl: u32) {
        if let Ok(at) = self
            .rrsets
            .binary_search_by_key(&rtype, |rrset| rrset.rtype)
        {
            for record in &mut self.rrsets[at].records {
                record.ttl = ttl;
            }
        }
    }

    /// Removes the RRset of `rtype`; returns how many records it held.
    pub fn remove_rrset(&mut self, rtype: RType) -> usize {
        match self
            .rrsets
            .binary_search_by_key(&rtype, |rrset| rrset.rtype)
        {
            Ok(at) => self.rrsets.remove(at).records.len(),
            Err(_) => 0,
        }
    }

    /// Removes the record of `rtype` equal to `data`; whether there was one.
    pub fn remove_rdata(&mut self, rtype: RType, data: &[u8]) -> bool {
        let Ok(at) = self
            .rrsets
            .binary_search_by_key(&rtype, |rrset| rrset.rtype)
        else {
            return false;
        };
        let Some(found) = self.rrsets[at].find(data) else {
            return false;
        };
        self.rrsets[at].records.remove(found);
        if self.rrsets[at].records.is_empty() {
            self.rrsets.remove(at);
        }
        true
    }
}

//----------- StoreError -----------------------------------------------------

/// Why a record list does not make a zone the update engine can keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// No SOA record at the origin, or one that does not parse.
    NoSoa,
    /// More than one SOA record at the origin.
    SeveralSoa,
    /// A record outside the zone.
    OutOfZone,
    /// A record of a class other than IN.
    NotIn,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreError::NoSoa => "no SOA record at the zone's origin",
            StoreError::SeveralSoa => "more than one SOA record at the zone's origin",
            StoreError::OutOfZone => "a record outside the zone",
            StoreError::NotIn => "a record of a class other than IN",
        })
    }
}

impl std::error::Error for StoreError {}

//----------- Base -----------------------------------------------------------

/// What [`Base::for_each_record`] calls with each record: owner, type,
/// TTL, RDATA.
pub type RecordVisitor<'v> = dyn FnMut(Name<'_>, RType, u32, &[u8]) + 'v;

/// A version of a zone the records are laid over ([`ZoneRecords::over`]):
/// the server's served version, read one name at a time. Owners are given
/// and returned lowercased.
pub trait Base: Send + Sync {
    /// The records `owner` holds (each RRSIG with its own TTL), or `None`
    /// if it holds none.
    fn node(&self, owner: Name<'_>) -> Option<Node>;

    /// Whether a name strictly below `owner` holds records: the quick
    /// check, one look-up.
    fn has_names_below(&self, owner: Name<'_>) -> bool;

    /// Calls `visit` with names strictly below `owner` that hold records,
    /// until it returns true; whether it did. May cost a pass over the
    /// zone: called only when the quick check says yes and names below
    /// `owner` were emptied by updates not yet in the base.
    fn any_name_below(&self, owner: Name<'_>, visit: &mut dyn FnMut(Name<'_>) -> bool) -> bool;

    /// How many records the version holds.
    fn record_count(&self) -> usize;

    /// Calls `visit` with every record of the version, in any order: for
    /// building a whole version.
    fn for_each_record(&self, visit: &mut RecordVisitor<'_>);
}

//----------- ZoneRecords ----------------------------------------------------

/// The records of one zone, by owner in canonical order: all of them
/// ([`ZoneRecords::from_records`]), or those changed since a [`Base`]
/// ([`ZoneRecords::over`]).
#[derive(Clone)]
pub struct ZoneRecords {
    origin: LowerNameBuf,
    origin_key: Key,
    /// The version read for every name not in `nodes`.
    base: Option<Arc<dyn Base>>,
    /// Without a base: every name's records (no empty node). Over a base:
    /// the names changed since it, an empty node for a name emptied.
    nodes: BTreeMap<Key, Node>,
    records: usize,
}

impl std::fmt::Debug for ZoneRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZoneRecords")
            .field("origin", &self.origin.as_name().to_string())
            .field("over_base", &self.base.is_some())
            .field("nodes", &self.nodes)
            .field("records", &self.records)
            .finish()
    }
}

impl ZoneRecords {
    /// The zone at `origin` made of `records` (in file order, as tern-zone
    /// gives them). Each record takes the TTL tern serves it with
    /// ([`RrsetTtls`]); duplicates are kept once. Errors: a record outside
    /// the zone or of another class, no SOA at the origin, or several.
    /// Bound: one pass, one B-tree insertion per record.
    pub fn from_records<R: RecordList + ?Sized>(
        origin: Name<'_>,
        records: &R,
    ) -> Result<ZoneRecords, StoreError> {
        let ttls = RrsetTtls::of(records);
        let mut zone = ZoneRecords {
            origin: origin.to_lower(),
            origin_key: Key::of(origin),
            base: None,
            nodes: BTreeMap::new(),
            records: 0,
        };
        for index in 0..records.len() {
            let record = records.record(index);
            if record.class != RClass::IN {
                return Err(StoreError::NotIn);
            }
            if !record.owner.ends_with(origin) {
                return Err(StoreError::OutOfZone);
            }
            let ttl = ttls.served(index, record.ttl);
            let node = zone.nodes.entry(Key::of(record.owner)).or_default();
            let before = node.len();
            node.add(record.rtype, ttl, record.rdata);
            zone.records += node.len() - before;
        }
        zone.check_soa().map(|()| zone)
    }

    /// The zone at `origin` as `base` holds it, nothing changed yet.
    /// Errors: no SOA at the origin, or several. Bound: one look-up.
    pub fn over(origin: Name<'_>, base: Arc<dyn Base>) -> Result<ZoneRecords, StoreError> {
        let zone = ZoneRecords {
            origin: origin.to_lower(),
            origin_key: Key::of(origin),
            records: base.record_count(),
            base: Some(base),
            nodes: BTreeMap::new(),
        };
        zone.check_soa().map(|()| zone)
    }

    fn check_soa(&self) -> Result<(), StoreError> {
        let apex = self.node(&self.origin_key).ok_or(StoreError::NoSoa)?;
        match apex.rrset(RType::SOA) {
            Some(soa) if soa.records.len() > 1 => Err(StoreError::SeveralSoa),
            Some(soa) if soa_serial(&soa.records[0].data).is_some() => Ok(()),
            _ => Err(StoreError::NoSoa),
        }
    }

    /// The origin, lowercased.
    pub fn origin(&self) -> Name<'_> {
        self.origin.as_name()
    }

    /// The origin's key.
    pub fn origin_key(&self) -> &Key {
        &self.origin_key
    }

    /// How many records the zone holds.
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether the zone holds no record (never true: it has its SOA).
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Whether the records are laid over a [`Base`].
    pub fn has_base(&self) -> bool {
        self.base.is_some()
    }

    /// How many names this holds itself (every name's without a base; the
    /// changed names' over one), and their records and RDATA octets: the
    /// memory it holds beyond a base.
    pub fn held(&self) -> (usize, usize, usize) {
        let records = self.nodes.values().map(Node::len).sum();
        let octets = self
            .nodes
            .values()
            .flat_map(|node| node.rrsets.iter())
            .flat_map(|rrset| rrset.records.iter())
            .map(|record| record.data.len())
            .sum();
        (self.nodes.len(), records, octets)
    }

    /// The apex SOA's TTL and RDATA.
    pub fn soa(&self) -> (u32, Box<[u8]>) {
        let apex = self.node(&self.origin_key);
        let soa = apex
            .as_deref()
            .and_then(|apex| apex.rrset(RType::SOA))
            .and_then(|soa| soa.records.first())
            .expect("a zone keeps its SOA: it is checked at build and never deleted");
        (soa.ttl, soa.data.clone())
    }

    /// The apex SOA's serial.
    pub fn serial(&self) -> u32 {
        soa_serial(&self.soa().1).expect("the SOA's RDATA is checked when it is stored")
    }

    /// The node of the name whose key is `key`: held here, else read from
    /// the base (then owned).
    pub fn node(&self, key: &Key) -> Option<Cow<'_, Node>> {
        match (self.nodes.get(key), &self.base) {
            (Some(node), _) => (!node.is_empty()).then_some(Cow::Borrowed(node)),
            (None, Some(base)) => base.node(key.name().as_name()).map(Cow::Owned),
            (None, None) => None,
        }
    }

    /// The names this holds and their nodes, in canonical order: every
    /// name's without a base, the changed names' over one (a name emptied
    /// with an empty node).
    pub fn nodes(&self) -> impl Iterator<Item = (&Key, &Node)> + '_ {
        self.nodes.iter()
    }

    /// Whether any name strictly below `key`'s owns records. Without a
    /// base, one range step: the first key after `key` is below it if any
    /// is. Over a base, the changed names below `key` first, then the
    /// base's quick check, and a pass over the base only when it says yes
    /// and updates emptied names below `key`.
    pub fn has_names_below(&self, key: &Key) -> bool {
        let below = || {
            self.nodes
                .range((Bound::Excluded(key), Bound::Unbounded))
                .take_while(|(next, _)| next.is_at_or_below(key))
        };
        let Some(base) = &self.base else {
            return below().next().is_some();
        };
        if below().any(|(_, node)| !node.is_empty()) {
            return true;
        }
        let owner = key.name();
        if !base.has_names_below(owner.as_name()) {
            return false;
        }
        if below().next().is_none() {
            return true;
        }
        base.any_name_below(owner.as_name(), &mut |name| {
            !self.nodes.contains_key(&Key::of(name))
        })
    }

    /// Takes the node of `key` out (to change it), or an empty one.
    pub(crate) fn take(&mut self, key: &Key) -> Node {
        let node = match (self.nodes.remove(key), &self.base) {
            (Some(node), _) => node,
            (None, Some(base)) => base.node(key.name().as_name()).unwrap_or_default(),
            (None, None) => Node::default(),
        };
        self.records -= node.len();
        node
    }

    /// Puts a node back. Without a base an empty one is not kept; over
    /// one it is (the name is emptied).
    pub(crate) fn put(&mut self, key: Key, node: Node) {
        if !node.is_empty() || self.base.is_some() {
            self.records += node.len();
            self.nodes.insert(key, node);
        }
    }

    /// Every record this holds itself, in canonical order of owners and by
    /// type within one: `(owner, type, TTL, RDATA)`. Without a base that is
    /// the zone; over one, the changed names' only
    /// ([`ZoneRecords::for_each_record`] gives the zone).
    pub fn iter(&self) -> impl Iterator<Item = (NameBuf, RType, u32, &[u8])> + '_ {
        self.nodes.iter().flat_map(|(key, node)| {
            let owner = key.name();
            node.rrsets.iter().flat_map(move |rrset| {
                rrset
                    .records
                    .iter()
                    .map(move |record| (owner, rrset.rtype, record.ttl, &record.data[..]))
            })
        })
    }

    /// Calls `visit` with every record of the zone: without a base in
    /// canonical order; over one, the base's records of the names not
    /// changed (in its order), then the changed names' in canonical
    /// order. Bound: the zone's records, and a binary search among the
    /// changed names per record of the base.
    pub fn for_each_record(&self, mut visit: impl FnMut(Name<'_>, RType, u32, &[u8])) {
        if let Some(base) = &self.base {
            let mut changed: Vec<Box<[u8]>> = self
                .nodes
                .keys()
                .map(|key| key.name().as_bytes().into())
                .collect();
            changed.sort_unstable();
            base.for_each_record(&mut |owner, rtype, ttl, rdata| {
                let lower = owner.to_lower();
                if changed
                    .binary_search_by(|held| (**held).cmp(lower.as_bytes()))
                    .is_err()
                {
                    visit(owner, rtype, ttl, rdata);
                }
            });
        }
        for (owner, rtype, ttl, rdata) in self.iter() {
            visit(owner.as_name(), rtype, ttl, rdata);
        }
    }

    /// Every record as an owned [`Record`] (class IN, no location), in the
    /// order of [`ZoneRecords::for_each_record`]: for building a whole
    /// zone version.
    pub fn to_records(&self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.records);
        self.for_each_record(|owner, rtype, ttl, rdata| {
            out.push(Record {
                owner: owner.to_buf(),
                class: RClass::IN,
                ttl,
                rtype,
                rdata: rdata.to_vec(),
                location: Location::default(),
            })
        });
        out
    }
}

/// A zone's records can be the base of others (the tests and the fuzz
/// target lay records over records, to compare with the same records
/// held whole).
impl Base for ZoneRecords {
    fn node(&self, owner: Name<'_>) -> Option<Node> {
        ZoneRecords::node(self, &Key::of(owner)).map(Cow::into_owned)
    }

    fn has_names_below(&self, owner: Name<'_>) -> bool {
        ZoneRecords::has_names_below(self, &Key::of(owner))
    }

    fn any_name_below(&self, owner: Name<'_>, visit: &mut dyn FnMut(Name<'_>) -> bool) -> bool {
        let key = Key::of(owner);
        let mut found = false;
        self.for_each_record(|name, _, _, _| {
            if !found && name.len() > owner.len() && Key::of(name).is_at_or_below(&key) {
                found = visit(name);
            }
        });
        found
    }

    fn record_count(&self) -> usize {
        self.len()
    }

    fn for_each_record(&self, visit: &mut RecordVisitor<'_>) {
        ZoneRecords::for_each_record(self, visit);
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    #[test]
    fn keys_sort_canonically_and_nest() {
        // RFC 4034 section 6.1's example, in order.
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let keys: Vec<Key> = names.iter().map(|n| Key::of(name(n).as_name())).collect();
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1], "{pair:?}");
        }
        for (text, key) in names.iter().zip(&keys) {
            assert!(key.name().as_name().eq_ignore_case(name(text).as_name()));
        }
        // Labels holding octets 0 and 1 decode back.
        let odd = name("\\000\\001a.\\001.example.");
        assert_eq!(Key::of(odd.as_name()).name(), odd);
        assert!(keys[2].is_at_or_below(&keys[1]));
        assert!(keys[1].is_at_or_below(&keys[1]));
        assert!(!keys[5].is_at_or_below(&keys[1]));
        // "ab.example." is not below "a.example.": the label ends at 0.
        assert!(!Key::of(name("ab.example.").as_name()).is_at_or_below(&keys[1]));
        assert_eq!(Key::of(Name::ROOT).name(), NameBuf::root());
    }
}
