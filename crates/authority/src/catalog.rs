//! The set of zones a server answers for.
//!
//! [`Catalog::find`] returns the deepest zone that contains a name: it tries
//! the name itself, then each parent, against a hash index of the origins,
//! so a child zone loaded under its parent's delegation answers for its own
//! names. Each step hashes a borrowed suffix of the one query-name buffer;
//! nothing is built per label (hickory's `base_name()` per label is the
//! pattern avoided, see `docs/style.md`). Only suffixes with as many labels
//! as some origin has are looked up: a server of second-level zones hashes
//! one suffix of `www.example.com.`, not three.

use std::sync::Arc;

use tern_wire::name::Name;
use tern_wire::types::RType;

use crate::index::NameIndex;
use crate::zone::Zone;

//----------- CatalogChange --------------------------------------------------

/// One change to a [`Catalog`]: what a reload, a transfer or an update
/// hands the cores, so that a new version of one zone costs that zone, not
/// a new catalog of every zone.
#[derive(Clone, Debug)]
pub enum CatalogChange {
    /// Serve this zone: a new version of an origin served now takes its
    /// slot; a new origin takes a free slot.
    Serve(Arc<Zone>),
    /// Stop serving the zone of this origin (lowercased wire form).
    Remove(Box<[u8]>),
}

/// What [`Catalog::apply`] did, and to which slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A zone of a new origin now serves from this slot.
    Added(u32),
    /// A new version of a served zone replaced the old one in its slot.
    Replaced(u32),
    /// The zone in this slot stopped serving; the slot is free.
    Removed(u32),
    /// Nothing: a removal of an origin not served.
    Nothing,
}

//----------- Catalog --------------------------------------------------------

/// All loaded zones, immutable while shared and changed only by
/// [`Catalog::apply`] (each core applies the same changes to its own copy,
/// in the same order, so the slots agree). Zones are reference-counted so
/// that versions can be shared by every core and by the previous catalog.
///
/// Each zone has a slot, stable for as long as its origin is served: a new
/// version takes the old one's slot, so whatever a core keeps per zone
/// (counters, the tag of cached answers) stays with the zone. A removed
/// zone's slot is reused by the next new origin.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    slots: Vec<Option<Arc<Zone>>>,
    /// Each slot's origin's last octets as a word ([`OriginTail`]), for
    /// [`Catalog::locate`] in a catalog of a few slots.
    tails: Vec<OriginTail>,
    index: NameIndex,
    /// Free slots, the most recently freed last.
    free: Vec<u32>,
    len: usize,
    /// By label count (root excluded): how many origins have it.
    by_labels: Vec<u32>,
    /// Bit `n` set when some origin has `n` labels.
    depths: u128,
}

/// The most labels a name has, root excluded (255 octets, at least two a
/// label): [`Catalog`]'s depths fit a `u128`.
const MAX_LABELS: usize = 127;

/// Up to this many slots, [`Catalog::position`] compares the origins in
/// turn instead of hashing: four comparisons of a length and of a few
/// octets cost less than one hash and probe (about 130 instructions).
const SMALL_CATALOG_SLOTS: usize = 4;

impl Catalog {
    /// A catalog over `zones`, in slots from 0 in their order. If two zones
    /// have the same origin, the first one is kept.
    pub fn new<Z: Into<Arc<Zone>>>(zones: impl IntoIterator<Item = Z>) -> Catalog {
        let zones = zones.into_iter();
        let mut catalog = Catalog {
            slots: Vec::with_capacity(zones.size_hint().0),
            tails: Vec::with_capacity(zones.size_hint().0),
            index: NameIndex::with_capacity(zones.size_hint().0),
            free: Vec::new(),
            len: 0,
            by_labels: Vec::new(),
            depths: 0,
        };
        for zone in zones {
            let zone: Arc<Zone> = zone.into();
            if catalog.position(zone.origin()).is_none() {
                catalog.apply(CatalogChange::Serve(zone));
            }
        }
        catalog
    }

    /// Applies one change. Bound: one hash look-up, and an insertion or
    /// removal; no walk over the other zones.
    pub fn apply(&mut self, change: CatalogChange) -> Applied {
        self.swap(change).0
    }

    /// [`Catalog::apply`], handing back the zone that stopped serving (the
    /// version replaced, or the zone removed) rather than dropping it, so
    /// that the caller chooses where its last reference goes: a core hands
    /// it back to the thread that made the new version, so that freeing a
    /// whole version is not the core's cost. Bound: as `apply`.
    pub fn swap(&mut self, change: CatalogChange) -> (Applied, Option<Arc<Zone>>) {
        match change {
            CatalogChange::Serve(zone) => {
                if let Some(slot) = self.position(zone.origin()) {
                    let old = self.slots[slot as usize].replace(zone);
                    return (Applied::Replaced(slot), old);
                }
                let slot = match self.free.pop() {
                    Some(slot) => slot,
                    None => {
                        self.slots.push(None);
                        self.tails.push(OriginTail::FREE);
                        u32::try_from(self.slots.len() - 1)
                            .expect("fewer than 2^32 zones: each takes memory")
                    }
                };
                let slots = &self.slots;
                let origin = zone.origin();
                self.index
                    .insert(origin.as_bytes(), slot, |i| origin_of(slots, i));
                self.count_depth(origin.label_count(), true);
                self.tails[slot as usize] = OriginTail::of(origin.as_bytes());
                self.slots[slot as usize] = Some(zone);
                self.len += 1;
                (Applied::Added(slot), None)
            }
            CatalogChange::Remove(origin) => {
                let slots = &self.slots;
                let Some(slot) = self.index.remove(&origin, |i| origin_of(slots, i)) else {
                    return (Applied::Nothing, None);
                };
                let old = self.slots[slot as usize].take();
                self.tails[slot as usize] = OriginTail::FREE;
                if let Some(zone) = &old {
                    self.count_depth(zone.origin().label_count(), false);
                }
                self.free.push(slot);
                self.len -= 1;
                (Applied::Removed(slot), old)
            }
        }
    }

    /// Counts an origin of `labels` labels in or out of the depths.
    fn count_depth(&mut self, labels: usize, added: bool) {
        let labels = labels.min(MAX_LABELS);
        if self.by_labels.len() <= labels {
            self.by_labels.resize(labels + 1, 0);
        }
        let count = &mut self.by_labels[labels];
        *count = if added {
            count.saturating_add(1)
        } else {
            count.saturating_sub(1)
        };
        if *count == 0 {
            self.depths &= !(1u128 << labels);
        } else {
            self.depths |= 1u128 << labels;
        }
    }

    /// The zones served, in slot order.
    pub fn zones(&self) -> impl Iterator<Item = &Arc<Zone>> + '_ {
        self.slots.iter().flatten()
    }

    /// How many zones are served.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no zone is served.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// One more than the highest slot ever used: every slot is below it.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The zone in `slot`, if one serves from it.
    pub fn zone_at(&self, slot: u32) -> Option<&Arc<Zone>> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The zone whose origin is exactly `origin_lower` (lowercased), as a
    /// zone transfer asks for it.
    pub fn get(&self, origin_lower: Name<'_>) -> Option<&Arc<Zone>> {
        let slot = self.position(origin_lower)?;
        self.zone_at(slot)
    }

    /// The slot of the zone whose origin is exactly `origin_lower`
    /// (lowercased).
    pub fn position(&self, origin_lower: Name<'_>) -> Option<u32> {
        let wanted = origin_lower.as_bytes();
        // A few slots (a server of one zone, or of a handful): compared in
        // turn, a length and a `memcmp` each, cheaper than the hash.
        if self.slots.len() <= SMALL_CATALOG_SLOTS {
            return (0..self.slots.len() as u32)
                .find(|&slot| origin_of(&self.slots, slot) == wanted);
        }
        self.index.find(wanted, |i| origin_of(&self.slots, i))
    }

    /// [`Catalog::position`], trying slot `guess` first: a walk over the
    /// zones in the order they were added (a reload in name order, after a
    /// start that loaded them so) finds each where it guessed, reading the
    /// slots in order instead of probing the index. Bound: one comparison
    /// more than `position` at worst.
    pub fn position_from(&self, origin_lower: Name<'_>, guess: u32) -> Option<u32> {
        if origin_of(&self.slots, guess) == origin_lower.as_bytes() {
            return Some(guess);
        }
        self.position(origin_lower)
    }

    /// The slot of [`Catalog::find`]'s zone: [`Catalog::locate`]'s slot.
    pub fn find_position(&self, qname_lower: Name<'_>) -> Option<u32> {
        self.locate(qname_lower).map(|(slot, _)| slot)
    }

    /// The slot of [`Catalog::find`]'s zone and where its origin starts in
    /// `qname_lower`: the origin is `qname_lower`'s octets from there, which
    /// begin a label (the walk of the zone's names then neither compares
    /// the origin again nor checks the boundary).
    ///
    /// A catalog of a few slots (at most four) compares each
    /// origin's last octets as one masked word (bound: one word and at
    /// most one comparison of the rest per slot, one label walk); a
    /// larger one looks up its index of origins.
    #[inline]
    pub fn locate(&self, qname_lower: Name<'_>) -> Option<(u32, usize)> {
        if self.slots.len() <= SMALL_CATALOG_SLOTS {
            return self.locate_small(qname_lower);
        }
        self.locate_indexed(qname_lower)
    }

    /// [`Catalog::locate`] in a catalog of more than a few slots: by the
    /// index of origins. A call of its own, so that the few slots' search,
    /// inlined, saves no registers for it.
    ///
    /// Only the suffixes with as many labels as some origin has are looked
    /// up, deepest first. Bound: one hash look-up per such suffix, one
    /// step per label.
    #[inline(never)]
    fn locate_indexed(&self, qname_lower: Name<'_>) -> Option<(u32, usize)> {
        let mut at = qname_lower.label_count().min(MAX_LABELS);
        let mut depths = self.depths & (u128::MAX >> (MAX_LABELS - at));
        let mut name = qname_lower;
        while depths != 0 {
            let depth = (u128::BITS - 1 - depths.leading_zeros()) as usize;
            while at > depth {
                name = name.parent()?;
                at -= 1;
            }
            if let Some(id) = self.position(name) {
                return Some((id, qname_lower.len() - name.len()));
            }
            depths &= !(1u128 << depth);
        }
        None
    }

    /// [`Catalog::locate`] for a catalog of a few slots (a server of one
    /// zone, or of a handful): each origin's last octets (up to eight,
    /// kept as a word: [`OriginTail`]) compared with the name's last eight
    /// as one masked word, the octets before them (an origin of more than
    /// eight) as a slice, and a match kept only if a label of the name
    /// starts there; the longest match is the deepest zone. No zone is
    /// read and no `memcmp` called for an origin of up to eight octets
    /// (`bench.`, `example.`), where a `memcmp` and the zone's origin read
    /// for each slot cost about 60 instructions a query more.
    #[inline]
    fn locate_small(&self, qname_lower: Name<'_>) -> Option<(u32, usize)> {
        let name = qname_lower.as_bytes();
        let word = last_word(name);
        let mut best: Option<(u32, usize)> = None;
        for (slot, tail) in self.tails.iter().enumerate() {
            let len = tail.len;
            // A free slot's length is 0: never a match (no origin is empty).
            if len == 0 || word & tail.mask != tail.word {
                continue;
            }
            // The best so far starts at or before where this origin would:
            // its origin is as long or longer.
            if best.is_some_and(|(_, best_start)| best_start + len <= name.len()) {
                continue;
            }
            let Some(start) = name.len().checked_sub(len) else {
                continue;
            };
            if len > TAIL_OCTETS && !self.head_matches(slot, name, start) {
                continue;
            }
            if starts_label(name, start) {
                best = Some((slot as u32, start));
            }
        }
        best
    }

    /// Whether the octets of slot `slot`'s origin before its
    /// [`OriginTail`]'s (an origin of more than eight) are `name`'s from
    /// `start`. A call of its own: most origins have no such octets, and
    /// [`Catalog::locate_small`] then saves no registers for it.
    #[inline(never)]
    fn head_matches(&self, slot: usize, name: &[u8], start: usize) -> bool {
        let Some(zone) = self.slots.get(slot).and_then(Option::as_ref) else {
            return false;
        };
        let origin = zone.origin().as_bytes();
        let head = origin.len().saturating_sub(TAIL_OCTETS);
        name.get(start..start + head) == origin.get(..head)
    }

    /// The deepest zone whose origin is `qname_lower` or one of its
    /// ancestors. The name must already be lowercased. Bound: one hash
    /// look-up per label; no allocation.
    pub fn find(&self, qname_lower: Name<'_>) -> Option<&Zone> {
        let slot = self.find_position(qname_lower)?;
        self.zone_at(slot).map(|zone| &**zone)
    }

    /// The zone that answers a query: DS records live on the parent side
    /// of a cut, so for DS the search starts one label up (as Knot's
    /// `answer_zone_find` does), falling back to the name itself for the
    /// root or when no parent zone is loaded.
    pub(crate) fn find_for_query(&self, qname_lower: Name<'_>, qtype: RType) -> Option<&Zone> {
        if qtype == RType::DS {
            if let Some(zone) = qname_lower.parent().and_then(|parent| self.find(parent)) {
                return Some(zone);
            }
        }
        self.find(qname_lower)
    }
}

/// The most octets of an origin an [`OriginTail`] holds: one word.
const TAIL_OCTETS: usize = 8;

/// A served origin's last octets (up to [`TAIL_OCTETS`]) as a
/// little-endian word, and the mask of the word's octets they fill: the
/// word's high octets, as [`last_word`] reads a name's last octets. A
/// name ends with the origin's last octets when its last word, masked,
/// equals `word`.
#[derive(Clone, Copy, Debug)]
struct OriginTail {
    /// The origin's length in octets; 0 for a free slot.
    len: usize,
    word: u64,
    mask: u64,
}

impl OriginTail {
    /// A free slot's: matches no name.
    const FREE: OriginTail = OriginTail {
        len: 0,
        word: 0,
        mask: 0,
    };

    /// The tail of `origin` (lowercased wire octets, at least one).
    fn of(origin: &[u8]) -> OriginTail {
        let octets = origin.len().min(TAIL_OCTETS);
        let mask = if octets == 0 {
            0
        } else {
            u64::MAX << (8 * (TAIL_OCTETS - octets))
        };
        OriginTail {
            len: origin.len(),
            word: last_word(origin) & mask,
            mask,
        }
    }
}

/// The last eight octets of `name` as a little-endian word; a name
/// shorter than eight is read as if zeros preceded it (its octets in the
/// word's high octets, as an [`OriginTail`] keeps an origin's).
#[inline]
fn last_word(name: &[u8]) -> u64 {
    match name.len().checked_sub(TAIL_OCTETS) {
        Some(at) => {
            let mut octets = [0u8; TAIL_OCTETS];
            octets.copy_from_slice(&name[at..]);
            u64::from_le_bytes(octets)
        }
        None => {
            let mut octets = [0u8; TAIL_OCTETS];
            octets[TAIL_OCTETS - name.len()..].copy_from_slice(name);
            u64::from_le_bytes(octets)
        }
    }
}

/// Whether a label of the wire name `name` starts at octet `at`: the
/// octets after it may equal an origin's without being its labels (a
/// label `x\x05bench` ends in the octets of `bench.`). Bound: one step a
/// label, each advancing at least one octet.
fn starts_label(name: &[u8], at: usize) -> bool {
    let mut offset = 0;
    while offset < at {
        let Some(&len) = name.get(offset) else {
            return false;
        };
        offset += 1 + usize::from(len);
    }
    offset == at
}

/// The origin of the zone in slot `slot`, for the index (which holds only
/// slots that serve a zone).
fn origin_of(slots: &[Option<Arc<Zone>>], slot: u32) -> &[u8] {
    slots
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or(&[], |zone| zone.origin().as_bytes())
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use super::*;
    use crate::ZoneBuilder;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    fn zone(origin: &str) -> Zone {
        let origin = name(origin);
        let mut soa = b"\x00\x00".to_vec();
        soa.extend_from_slice(&[0; 20]);
        let mut b = ZoneBuilder::new(origin.as_name());
        b.insert(origin.as_name(), RType::SOA, RClass::IN, 1, &soa)
            .unwrap();
        b.finish().unwrap()
    }

    #[test]
    fn get_finds_only_an_exact_origin() {
        let catalog = Catalog::new(vec![zone("example.com."), zone("sub.example.com.")]);
        let got = |text: &str| {
            catalog
                .get(name(text).as_name())
                .map(|z| z.origin().to_string())
        };
        assert_eq!(got("example.com.").as_deref(), Some("example.com."));
        assert_eq!(got("sub.example.com.").as_deref(), Some("sub.example.com."));
        assert_eq!(got("www.example.com."), None);
        assert_eq!(got("com."), None);
    }

    #[test]
    fn position_from_finds_the_slot_whatever_the_guess() {
        let catalog = Catalog::new(vec![zone("a."), zone("b."), zone("c.")]);
        let b = name("b.");
        let slot = catalog.position(b.as_name()).unwrap();
        for guess in [0, 1, 2, 3, u32::MAX] {
            assert_eq!(catalog.position_from(b.as_name(), guess), Some(slot));
        }
        assert_eq!(catalog.position_from(name("d.").as_name(), slot), None);
    }

    #[test]
    fn deepest_zone_wins() {
        let catalog = Catalog::new(vec![
            zone("example.com."),
            zone("sub.example.com."),
            zone("com."),
        ]);
        let origin = |q: &str| {
            catalog
                .find(name(q).as_name())
                .map(|z| z.origin().to_string())
        };
        assert_eq!(
            origin("www.sub.example.com.").as_deref(),
            Some("sub.example.com.")
        );
        assert_eq!(
            origin("sub.example.com.").as_deref(),
            Some("sub.example.com.")
        );
        assert_eq!(origin("www.example.com.").as_deref(), Some("example.com."));
        assert_eq!(origin("xexample.com.").as_deref(), Some("com."));
        assert_eq!(origin("example.org."), None);
        assert_eq!(origin("."), None);
        let ds = catalog.find_for_query(name("sub.example.com.").as_name(), RType::DS);
        assert_eq!(ds.unwrap().origin().to_string(), "example.com.");
        let ds = catalog.find_for_query(name("com.").as_name(), RType::DS);
        assert_eq!(ds.unwrap().origin().to_string(), "com.");
    }

    /// A catalog of a few slots (compared in turn) and one of more (the
    /// depths and the index) find the same zone, also for a name whose
    /// last octets spell an origin inside a longer label.
    #[test]
    fn small_and_large_catalogs_find_the_same_zone() {
        let origins = ["example.com.", "sub.example.com.", "com.", "."];
        let small = Catalog::new(origins.map(zone));
        let large = Catalog::new(
            origins
                .into_iter()
                .chain(["a.", "b.", "c.", "example.org."])
                .map(zone),
        );
        assert!(small.slot_count() <= SMALL_CATALOG_SLOTS);
        assert!(large.slot_count() > SMALL_CATALOG_SLOTS);
        let found = |catalog: &Catalog, q: &[u8]| {
            let q = Name::parse_prefix(q).unwrap().0;
            // Where `locate` says the origin starts: its octets, there.
            let located = catalog.locate(q).map(|(slot, at)| {
                let origin = catalog.zone_at(slot).unwrap().origin();
                assert_eq!(&q.as_bytes()[at..], origin.as_bytes(), "{q}");
                at
            });
            assert_eq!(located.is_some(), catalog.find(q).is_some());
            catalog.find(q).map(|z| z.origin().to_string())
        };
        let names: [&[u8]; 11] = [
            b"\x03www\x03sub\x07example\x03com\x00",
            b"\x03sub\x07example\x03com\x00",
            b"\x07example\x03com\x00",
            b"\x08xexample\x03com\x00",
            b"\x03com\x00",
            b"\x03org\x00",
            b"\x00",
            // A label `x\x03com` ending in the octets of `com.`, and one
            // `x\x07example\x03com` in those of `example.com.`.
            b"\x05x\x03com\x00",
            b"\x0dx\x07example\x03com\x00",
            // The last eight octets of `example.com.` (and of
            // `sub.example.com.`), not the octets before them.
            b"\x07exbmple\x03com\x00",
            b"\x03www\x03sue\x07example\x03com\x00",
        ];
        for q in names {
            assert_eq!(found(&small, q), found(&large, q), "{q:?}");
        }
        assert_eq!(found(&small, names[0]).as_deref(), Some("sub.example.com."));
        assert_eq!(found(&small, names[3]).as_deref(), Some("com."));
        assert_eq!(found(&small, names[5]).as_deref(), Some("."));
        assert_eq!(found(&small, names[7]).as_deref(), Some("."));
        assert_eq!(found(&small, names[8]).as_deref(), Some("."));
        assert_eq!(found(&small, names[9]).as_deref(), Some("com."));
        assert_eq!(found(&small, names[10]).as_deref(), Some("example.com."));
    }

    /// Only the depths some origin has are looked up, and they follow the
    /// changes: a removed origin's depth is skipped once no other origin
    /// has it, and a new one is looked up at once.
    #[test]
    fn depths_follow_the_origins() {
        let mut catalog = Catalog::new(vec![zone("a.b.example.com."), zone("com.")]);
        let origin = |catalog: &Catalog, q: &str| {
            catalog
                .find(name(q).as_name())
                .map(|z| z.origin().to_string())
        };
        assert_eq!(catalog.depths, 0b10010);
        assert_eq!(
            origin(&catalog, "x.a.b.example.com.").as_deref(),
            Some("a.b.example.com.")
        );
        assert_eq!(
            origin(&catalog, "a.b.example.com.").as_deref(),
            Some("a.b.example.com.")
        );
        assert_eq!(
            origin(&catalog, "x.b.example.com.").as_deref(),
            Some("com.")
        );
        assert_eq!(origin(&catalog, "com.").as_deref(), Some("com."));
        assert_eq!(origin(&catalog, "b.example.com.").as_deref(), Some("com."));
        catalog.apply(CatalogChange::Remove(
            name("a.b.example.com.").as_bytes().into(),
        ));
        assert_eq!(catalog.depths, 0b10);
        assert_eq!(
            origin(&catalog, "x.a.b.example.com.").as_deref(),
            Some("com.")
        );
        catalog.apply(CatalogChange::Serve(Arc::new(zone("."))));
        assert_eq!(catalog.depths, 0b11);
        assert_eq!(origin(&catalog, "org.").as_deref(), Some("."));
        assert_eq!(origin(&catalog, ".").as_deref(), Some("."));
        // A name of the most labels there are: 127 of one octet.
        let deepest = "x.".repeat(127);
        assert_eq!(origin(&catalog, &deepest).as_deref(), Some("."));
        catalog.apply(CatalogChange::Serve(Arc::new(zone(&deepest))));
        assert_eq!(origin(&catalog, &deepest), Some(deepest.clone()));
        assert_eq!(catalog.depths, 0b11 | 1 << 127);
    }

    #[test]
    fn position_is_the_same_with_few_slots_and_many() {
        // Up to SMALL_CATALOG_SLOTS slots the origins are compared in turn,
        // past it hashed: both find every origin, and nothing else, also
        // after a removal leaves a free slot.
        let origins = ["a.", "b.a.", "c.", "d.", "e.", "f.", "g.", "h."];
        for count in 1..=origins.len() {
            let mut catalog = Catalog::new(origins[..count].iter().map(|origin| zone(origin)));
            for (slot, origin) in origins[..count].iter().enumerate() {
                assert_eq!(catalog.position(name(origin).as_name()), Some(slot as u32));
            }
            for absent in ["b.", "x.a.", "."] {
                assert_eq!(catalog.position(name(absent).as_name()), None, "{absent}");
            }
            assert_eq!(
                catalog.find_position(name("x.b.a.").as_name()),
                Some(if count > 1 { 1 } else { 0 })
            );
            catalog.apply(CatalogChange::Remove(name("a.").as_bytes().into()));
            assert_eq!(catalog.position(name("a.").as_name()), None);
            assert_eq!(catalog.find_position(name("x.a.").as_name()), None);
        }
    }

    #[test]
    fn duplicate_origins_keep_the_first() {
        let catalog = Catalog::new(vec![zone("example."), zone("EXAMPLE.")]);
        assert_eq!(catalog.len(), 1);
        assert_eq!(catalog.zones().count(), 1);
    }

    #[test]
    fn changes_keep_slots_and_reuse_free_ones() {
        let mut catalog = Catalog::new(vec![zone("a."), zone("b."), zone("c.")]);
        let b = catalog.position(name("b.").as_name());
        assert_eq!(b, Some(1));
        // A new version keeps its slot.
        let newer = Arc::new(zone("b."));
        assert_eq!(
            catalog.apply(CatalogChange::Serve(Arc::clone(&newer))),
            Applied::Replaced(1)
        );
        assert!(Arc::ptr_eq(
            catalog.get(name("b.").as_name()).unwrap(),
            &newer
        ));
        assert_eq!(catalog.len(), 3);
        // A removal frees the slot, and only that zone goes.
        assert_eq!(
            catalog.apply(CatalogChange::Remove(name("a.").as_bytes().into())),
            Applied::Removed(0)
        );
        assert_eq!(
            catalog.apply(CatalogChange::Remove(name("a.").as_bytes().into())),
            Applied::Nothing
        );
        assert!(catalog.get(name("a.").as_name()).is_none());
        assert!(catalog.find(name("www.a.").as_name()).is_none());
        assert_eq!(catalog.len(), 2);
        assert_eq!(catalog.slot_count(), 3);
        // The next new origin takes the free slot.
        assert_eq!(
            catalog.apply(CatalogChange::Serve(Arc::new(zone("d.")))),
            Applied::Added(0)
        );
        assert_eq!(
            catalog.apply(CatalogChange::Serve(Arc::new(zone("e.")))),
            Applied::Added(3)
        );
        let origins: Vec<String> = catalog.zones().map(|z| z.origin().to_string()).collect();
        assert_eq!(origins, ["d.", "b.", "c.", "e."]);
        assert_eq!(
            catalog
                .find(name("x.c.").as_name())
                .map(|z| z.origin().to_string()),
            Some("c.".to_string())
        );
        // A copy given the same changes agrees slot for slot.
        let mut copy = Catalog::new(vec![zone("a."), zone("b."), zone("c.")]);
        copy.apply(CatalogChange::Serve(newer));
        copy.apply(CatalogChange::Remove(name("a.").as_bytes().into()));
        copy.apply(CatalogChange::Serve(Arc::new(zone("d."))));
        copy.apply(CatalogChange::Serve(Arc::new(zone("e."))));
        for slot in 0..4 {
            assert_eq!(
                copy.zone_at(slot).map(|z| z.origin().to_string()),
                catalog.zone_at(slot).map(|z| z.origin().to_string())
            );
        }
    }
}
