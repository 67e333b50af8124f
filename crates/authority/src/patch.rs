//! A new version of a zone from the previous one and a difference:
//! [`Zone::patch`], in time proportional to the difference.
//!
//! A dynamic update changes a few names of a zone that may hold millions;
//! building the next version whole ([`crate::ZoneBuilder`]) costs the zone
//! (docs/benchmarks.md: 1.16 s at 100,000 records). A patch instead
//! clones the previous version's tables (their chunks are shared: a
//! pointer each) and changes only what the difference touches, copying
//! the chunks it writes to (docs/decisions/0019):
//!
//! 1. each changed owner's node is found, or created with its missing
//!    ancestors (appended: a parent's id stays below its children's), or
//!    brought back if an earlier patch removed it (a removed node keeps its
//!    id and index slot, marked dead, so that names that come and go, as
//!    ACME challenges do, leave nothing behind);
//! 2. the node's RRsets are written anew, exactly as the builder writes
//!    them (the same function: sorted, duplicates dropped, the first TTL,
//!    RRSIGs attached), RDATA and RRsets appended;
//! 3. a node left without records and without names below it is removed,
//!    and so is each ancestor that was an empty non-terminal only for it;
//! 4. flags: a new node takes its parent's; a delegation made or removed
//!    at a name with names below it changes their flags too: they are
//!    flagged again (and hashed again in an NSEC3 chain) when the patch
//!    touches every live name below it, as a signed window does; else the
//!    zone is left to a whole build ([`PatchError::Rebuild`]);
//! 5. the node checks of the builder, and the SOA facts when the apex
//!    changed;
//! 6. glue: the changed nodes' RRsets resolve their targets; when a
//!    change can alter what other RRsets resolve to (addresses appearing
//!    or going, a wildcard or a name under a wildcard's parent appearing
//!    or going, a cut moving), the RRsets naming the names it can alter
//!    resolve again, found in the zone's index of target names
//!    (`crate::targets`: the name itself, or for a wildcard the range
//!    of names below its parent), and only those whose glue changed are
//!    rewritten;
//! 7. the NSEC order list, when an NSEC owner came or went: the owner
//!    added or removed in its part of the list (`crate::parts`), the other
//!    parts shared with the previous version; in a signed zone, the same
//!    for the order of every name ([`Zone::names_below`], `crate::order`):
//!    each name that came or went.
//!
//! The new version lists the names it changed ([`Zone::changed_since`]),
//! so that the cores' answer caches drop only the answers those names can
//! be in (docs/decisions/0015, "Cached answers beside updates"), the
//! owners of RRsets whose glue changed among them: up to
//! [`MAX_CHANGED_NAMES`]; else none, and the caches drop the zone's
//! answers.
//!
//! 8. in a zone with an NSEC3 chain, the links the change names (NSEC3
//!    owners, apart from the tree) are written, added or removed in the
//!    chain's shared parts, and the nodes changed are hashed again
//!    (`patch::nsec3`).
//!
//! NSEC3 records outside a chain (no NSEC3PARAM) and a changed NSEC3PARAM
//! are left to a whole build. The unused space patches
//! leave in the tables is counted ([`Zone::garbage_bytes`]); the caller
//! rebuilds the zone when it grows past a share of them (tern-zones: a
//! quarter, `MAX_GARBAGE_SHARE`, signed or not).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tern_wire::name::{Name, NameBuf, MAX_LABELS};
use tern_wire::types::RType;

use crate::arena::Work;
use crate::builder::{
    additional_types, check_apex, check_node, check_record, glue_of, is_glue_source, node_rrsets,
    offset, own_flags, BuildError,
};
use crate::zone::{
    node_name_bytes, CanonicalName, Node, NodeExtra, RRset, Zone, FLAG_APEX, FLAG_DEAD, FLAG_DELEG,
    FLAG_NONAUTH, FLAG_WILDCARD_CHILD, NO_PARENT,
};
pub(crate) use lineage::Lineage;
use lineage::{ChangeSet, ChangedNames, MAX_CHANGED_NAMES};

//----------- ZoneChanges ----------------------------------------------------

/// One record of a change: type, TTL, RDATA.
type ChangedRecord = (RType, u32, Box<[u8]>);

/// The owners a new version changes, each with all its records in the new
/// version.
#[derive(Clone, Debug, Default)]
pub struct ZoneChanges {
    /// By lowercased owner: the records, in the order a builder would
    /// have been given them (the first of an RRset gives its TTL).
    owners: BTreeMap<Vec<u8>, Vec<ChangedRecord>>,
}

impl ZoneChanges {
    /// No change.
    pub fn new() -> ZoneChanges {
        ZoneChanges::default()
    }

    /// In the new version, `owner` has exactly `records` (type, TTL,
    /// RDATA; none: no records at all), replacing what an earlier call
    /// said of the same owner.
    pub fn set<'r>(
        &mut self,
        owner: Name<'_>,
        records: impl IntoIterator<Item = (RType, u32, &'r [u8])>,
    ) {
        let owner = NameBuf::from_name(owner.to_lower().as_name());
        self.owners.insert(
            owner.as_bytes().to_vec(),
            records
                .into_iter()
                .map(|(rtype, ttl, rdata)| (rtype, ttl, rdata.into()))
                .collect(),
        );
    }

    /// The number of owners changed.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }
}

impl Zone {
    /// The names whose answers can differ between `previous` and this
    /// version, when this version was patched from exactly `previous`
    /// (the same object, as its number tells): the names it changed and
    /// the owners of RRsets whose glue it changed; `None` otherwise (a
    /// version built whole, patched from another version, or a change of
    /// more than [`MAX_CHANGED_NAMES`] names): then any answer of the
    /// zone may differ.
    ///
    /// Every other answer is the same in both versions, except the
    /// negative ones (they carry the SOA, whose serial changed), the
    /// answers for the SOA, RRSIG and ANY (the apex is not listed when
    /// its SOA, with the SOA's RRSIGs, is all that changed there: every
    /// update changes it) and those that hold records of more than the
    /// question's name (a CNAME chain, additional records, an authority
    /// section): the caller drops those whatever the names, or, for a
    /// negative answer whose SOA changed only in its serial
    /// ([`Zone::serial_step_since`]), may give it with the new serial.
    pub fn changed_since(&self, previous: &Zone) -> Option<ChangedNames<'_>> {
        let set = self.lineage.0.as_ref()?;
        let base = previous.lineage.0.as_ref()?.version;
        if set.base != base || base == 0 {
            return None;
        }
        set.names.as_deref().map(|names| ChangedNames { names })
    }

    /// This version's SOA serial when its SOA differs from `previous`'s in
    /// the serial alone (the same TTL and every other field, the zone's
    /// RRSIGs of the SOA apart): then a negative answer of `previous`
    /// whose names did not change ([`Zone::changed_since`]) is this
    /// version's with the serial in its SOA replaced. `None` otherwise.
    /// Bound: for a version patched from exactly `previous`, none (found
    /// when patching); otherwise the two SOA records.
    pub fn serial_step_since(&self, previous: &Zone) -> Option<u32> {
        if let (Some(set), Some(base)) = (&self.lineage.0, &previous.lineage.0) {
            if set.base == base.version && set.base != 0 {
                // Found when patching: a version is never changed after
                // it (no `&mut` method), so the SOAs still say the same.
                debug_assert_eq!(set.serial_step, self.serial_step_of(previous));
                return set.serial_step;
            }
        }
        self.serial_step_of(previous)
    }

    /// [`Zone::serial_step_since`], from the SOA records.
    fn serial_step_of(&self, previous: &Zone) -> Option<u32> {
        let (new, old) = (self.soa_record(), previous.soa_record());
        let at = new.rdata.len().checked_sub(20)?;
        let same = new.ttl == old.ttl
            && new.rdata.len() == old.rdata.len()
            && new.rdata[..at] == old.rdata[..at]
            && new.rdata[at + 4..] == old.rdata[at + 4..]
            && new.owner.as_bytes() == old.owner.as_bytes();
        same.then(|| self.serial())
    }
}

/// Whether the apex `node`'s RRsets in `zone` are those of `base` but for
/// the SOA and the RRSIGs (the SOA's changed; the others' are compared
/// with the RRsets they cover).
fn only_soa_changed(base: &Zone, zone: &Zone, node: u32) -> bool {
    let kept = |set: &&RRset| set.rtype != RType::SOA && set.rtype != RType::RRSIG;
    let mut old = base.rrsets(node).iter().filter(kept);
    let mut new = zone.rrsets(node).iter().filter(kept);
    // Bound: the apex's RRsets (at most one per type).
    loop {
        match (old.next(), new.next()) {
            (None, None) => return true,
            (Some(a), Some(b))
                if a.rtype == b.rtype
                    && a.ttl == b.ttl
                    && base.rdata_iter(a).eq(zone.rdata_iter(b))
                    && base.sigs(a).eq(zone.sigs(b)) => {}
            _ => return false,
        }
    }
}

/// This version's lineage: patched from `base`, the names in `before`
/// (and their state now in `zone`) changed, and the glue of the RRsets
/// of `glue_changed` (their answers' additional sections).
fn lineage(base: &Zone, zone: &Zone, before: &[Before], glue_changed: &[u32]) -> Lineage {
    let mut names: BTreeMap<&[u8], bool> = BTreeMap::new();
    for &node in glue_changed {
        let name = zone.node_name(node);
        names.entry(name.as_bytes()).or_default();
        // A wildcard's glue is in the answers it makes for the names
        // below its parent.
        if name.is_wildcard() {
            if let Some(parent) = name.parent() {
                names.insert(parent.as_bytes(), true);
            }
        }
    }
    for b in before {
        let after = facts(zone, b.node);
        let name = zone.node_name(b.node);
        if b.flags & FLAG_APEX != 0 && only_soa_changed(base, zone, b.node) {
            continue;
        }
        // A name come or gone, a DNAME, a cut made or removed: what
        // names below it are answered from changes.
        let below = b.live != after.live
            || b.dname
            || after.dname
            || (b.flags ^ after.flags) & FLAG_DELEG != 0;
        *names.entry(name.as_bytes()).or_default() |= below;
        if name.is_wildcard() {
            if let Some(parent) = name.parent() {
                names.insert(parent.as_bytes(), true);
            }
        }
    }
    let names = (names.len() <= MAX_CHANGED_NAMES).then(|| {
        names
            .into_iter()
            .map(|(name, below)| (Box::from(name), below))
            .collect()
    });
    Lineage(Some(Arc::new(ChangeSet {
        version: lineage::next_version(),
        base: base.lineage.0.as_ref().map_or(0, |set| set.version),
        names,
        serial_step: zone.serial_step_of(base),
    })))
}

//----------- Patched, PatchError --------------------------------------------

/// A patched zone and what making it copied.
#[derive(Debug)]
pub struct Patched {
    /// The new version.
    pub zone: Zone,
    /// What was copied, created and resolved again.
    pub work: Work,
    /// What the NSEC3 chain's own tables (its links, the hashes of the
    /// nodes' names) copied: also counted in `work`.
    pub chain_work: Work,
    /// What the order of the names of a signed zone
    /// ([`Zone::names_below`]) copied: its entries in `nsec_moved` (apart
    /// from `work`, which counts the zone's tables and its other lists;
    /// the whole list when the patch signs the zone). The update path
    /// reports both summed.
    pub order_work: Work,
}

/// Why a zone was not patched.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatchError {
    /// The new version does not make a zone (the builder would refuse the
    /// same records).
    Build(BuildError),
    /// A change a patch does not make: build the new version whole.
    Rebuild(&'static str),
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchError::Build(err) => err.fmt(f),
            PatchError::Rebuild(why) => write!(f, "the zone must be built whole: {why}"),
        }
    }
}

impl std::error::Error for PatchError {}

impl From<BuildError> for PatchError {
    fn from(err: BuildError) -> Self {
        PatchError::Build(err)
    }
}

//----------- Zone::patch ----------------------------------------------------

/// A node's facts before a patch changed it, for what follows from the
/// change.
#[derive(Clone, Copy)]
struct Before {
    node: u32,
    live: bool,
    flags: u8,
    /// What the node holds that a target resolves to: [`ADDRESSES`],
    /// [`SVCB`], [`HTTPS`] (`glue_of` takes a target whose node holds
    /// one of the types of the RRset naming it, `additional_types`).
    addresses: u8,
    nsec: bool,
    source: bool,
    parent_wildcard: bool,
    /// Owns a DNAME: names below it are answered from it.
    dname: bool,
}

impl Zone {
    /// The zone with `changes` applied: equal, in every answer and record,
    /// to a [`crate::ZoneBuilder`] build of the same records, and made in
    /// time proportional to the change (plus one pointer per chunk of the
    /// zone's tables, a key and a pointer per part of the sorted lists it
    /// changes, and, when the change can alter other names' glue, a
    /// search of the index of target names and a resolution per RRset
    /// naming one it alters: those naming the names changed, and for a
    /// wildcard changed or a name come or gone beside one, those naming
    /// a name it can answer for). Errors:
    /// the builder's for the same records, or [`PatchError::Rebuild`] for
    /// what only a whole build makes.
    pub fn patch(&self, changes: &ZoneChanges) -> Result<Patched, PatchError> {
        if self.expired {
            return Err(PatchError::Rebuild("an expired zone's stand-in"));
        }
        if self.hashed_nodes > 0 && self.nsec3.is_none() {
            return Err(PatchError::Rebuild("NSEC3 records outside a chain"));
        }
        let origin = self.origin().to_buf();
        // The owners of the NSEC3 chain's links apart from the tree's
        // (`nsec3::split`).
        let mut hashed: Vec<(Vec<u8>, &[ChangedRecord])> = Vec::new();
        for (owner, records) in &changes.owners {
            let owner = Name::from_wire(owner).map_err(|_| BuildError::InvalidRdata {
                owner: String::new(),
                rtype: RType(0),
            })?;
            for (rtype, _, rdata) in records {
                check_record(origin.as_name(), owner, *rtype, rdata)?;
            }
            if let Some(link) = nsec3::split(self, owner, records)? {
                hashed.push((link.to_vec(), records));
            }
        }

        let mut zone = self.clone();
        let mut work = Work::default();
        let mut before: Vec<Before> = Vec::new();
        // The nodes in `before`.
        let mut seen: BTreeSet<u32> = BTreeSet::new();
        let mut scratch = Vec::new();
        let mut sets: Vec<RRset> = Vec::new();

        // 1 and 2: nodes and their RRsets.
        for (owner, records) in &changes.owners {
            if hashed.iter().any(|(name, _)| name == owner) {
                continue;
            }
            let owner = Name::from_validated(owner);
            let node = if records.is_empty() {
                match zone.find_node(owner.as_bytes()) {
                    Some(node) => node,
                    None => continue,
                }
            } else {
                ensure_node(&mut zone, owner, &mut work, &mut before, &mut seen)?
            };
            if seen.insert(node) {
                before.push(facts(&zone, node));
            }
            write_rrsets(&mut zone, node, records, &mut work, &mut scratch, &mut sets)?;
        }
        work.nodes_touched = before.len();

        // 3: names left empty go, with the empty non-terminals above them.
        for index in 0..before.len() {
            let mut node = before[index].node;
            // Each step moves to a parent: at most MAX_LABELS steps.
            while node != 0 && is_empty_leaf(&zone, node) {
                let parent = zone.node(node).parent;
                if seen.insert(node) {
                    before.push(facts(&zone, node));
                }
                zone.nodes.get_mut(node, &mut work).flags = FLAG_DEAD;
                zone.dead_nodes += 1;
                zone.extra.get_mut(parent, &mut work).children -= 1;
                if zone.node_name(node).is_wildcard() {
                    zone.nodes.get_mut(parent, &mut work).flags &= !FLAG_WILDCARD_CHILD;
                }
                node = parent;
            }
        }
        work.nodes_touched = before.len();

        // 4: flags, parents first.
        before.sort_by_key(|b| b.node);
        // The names below a cut made or removed flagged again.
        let mut reflagged: BTreeSet<u32> = BTreeSet::new();
        for b in &before {
            let node = *zone.node(b.node);
            if node.flags & FLAG_DEAD != 0 {
                continue;
            }
            // The DNAME flag is the node's own records' (written in
            // `own`); the cut flags decide what else must change.
            let own = own_flags(&zone, b.node);
            let cut = own & (FLAG_APEX | FLAG_DELEG | FLAG_NONAUTH);
            let old = if b.live {
                b.flags & (FLAG_APEX | FLAG_DELEG | FLAG_NONAUTH)
            } else {
                cut
            };
            let slot = zone.nodes.get_mut(b.node, &mut work);
            slot.flags = (slot.flags & FLAG_WILDCARD_CHILD) | own;
            if cut != old
                && zone.extra.get(b.node).children > 0
                && !reflagged.contains(&b.node)
                && !reflag_below(&mut zone, b.node, &seen, &mut work, &mut reflagged)
            {
                return Err(PatchError::Rebuild(
                    "a delegation made or removed above other names",
                ));
            }
            if !b.live && node.parent != NO_PARENT && zone.node_name(b.node).is_wildcard() {
                zone.nodes.get_mut(node.parent, &mut work).flags |= FLAG_WILDCARD_CHILD;
            }
        }

        // 5: the builder's checks of what changed.
        for b in &before {
            if b.node == 0 {
                check_apex(&mut zone)?;
            }
            check_node(&zone, b.node)?;
        }

        // 6: glue. The targets' index first: the touched nodes' entries
        // replaced where they changed.
        let mut targets = core::mem::take(&mut zone.targets);
        let mut copied = Work::default();
        let (mut was, mut now) = (Vec::new(), Vec::new());
        for b in &before {
            crate::targets::replace(
                self,
                &zone,
                b.node,
                &mut targets,
                &mut copied,
                &mut was,
                &mut now,
            );
        }
        work.bytes_copied += copied.bytes_copied;
        zone.targets = targets;
        // The RRsets resolved again: the touched nodes' own, and those
        // naming a name whose glue can have changed (`glue_again`).
        let mut again: BTreeSet<u32> = BTreeSet::new();
        for b in &before {
            let after = facts(&zone, b.node);
            if after.source {
                again.insert(b.node);
            }
            glue_again(&zone, b, &after, &mut again);
        }
        let mut glue = Vec::new();
        // The glue owners whose glue was written again, then those whose
        // glue resolves to other nodes: their answers' additional
        // sections changed.
        let mut glue_changed: Vec<u32> = Vec::new();
        for &node in &again {
            let first = zone.node(node).rrsets_start;
            for index in first..first + u32::from(zone.node(node).rrset_count) {
                let set = *zone.rrset(index);
                if additional_types(set.rtype).is_empty() {
                    continue;
                }
                work.glue_resolved += 1;
                glue_of(&zone, node, index, &mut glue)?;
                if zone.glue(&set) == &glue[..] {
                    continue;
                }
                if glue_changed.last() != Some(&node) {
                    glue_changed.push(node);
                }
                zone.garbage += core::mem::size_of_val(zone.glue(&set));
                let start = if glue.is_empty() {
                    0
                } else {
                    zone.glue
                        .push_run(&glue, &mut work)
                        .ok_or(BuildError::TooLarge { what: "glue" })?
                };
                let slot = zone.rrsets.get_mut(index, &mut work);
                slot.glue_start = start;
                slot.glue_count = glue.len() as u16;
            }
        }

        // A touched node's RRsets were written anew, their glue with
        // them: what it resolves to now may equal what was written and
        // differ from the version patched (the apex, changed in its SOA
        // alone and so not listed as a name changed, whose NS target lost
        // its address).
        glue_changed.extend(
            before
                .iter()
                .map(|b| b.node)
                .filter(|node| again.contains(node)),
        );
        glue_changed.sort_unstable();
        glue_changed.dedup();
        glue_changed.retain(|&node| glue_moved(self, &zone, node));

        // 7: the NSEC order list: each node that gained or lost its NSEC
        // added or removed in its part (a node's name never changes).
        let nsec_changed = before.iter().any(|b| b.nsec != facts(&zone, b.node).nsec);
        if nsec_changed {
            let mut list = core::mem::take(&mut zone.nsec);
            let changes = before
                .iter()
                .map(|b| (b.node, b.nsec, facts(&zone, b.node).nsec));
            let names = &zone;
            let order = |&node: &u32| {
                let name = CanonicalName::of(names.node_name(node));
                move |&other: &u32| name.order_of(names.node_name(other))
            };
            list.apply(changes, order, &mut work);
            zone.nsec = list;
        }

        // 7b: in a signed zone, the order of every name: each node that
        // came or went added or removed in its part (`crate::order`).
        let mut order_work = Work::default();
        let list = core::mem::take(&mut zone.order);
        let changes = before
            .iter()
            .map(|b| (b.node, b.live, zone.node(b.node).flags & FLAG_DEAD == 0));
        let list = crate::order::patch(&zone, list, self.signed, changes, &mut order_work);
        zone.order = list;

        // 8: the NSEC3 chain's links, and the hashes of the nodes changed.
        let mut chain_work = Work::default();
        if zone.nsec3.is_some() {
            chain_work = nsec3::patch_chain(
                &mut zone,
                &hashed,
                &before,
                &reflagged,
                &mut work,
                &mut scratch,
                &mut sets,
            )?;
        }

        // A small zone that outgrew its linear search gets its index.
        if zone.index.is_empty() && zone.nodes.end() as usize > crate::zone::SMALL_ZONE_NODES {
            zone.index = crate::builder::index_of(&zone);
        }
        zone.lineage = lineage(self, &zone, &before, &glue_changed);
        Ok(Patched {
            zone,
            work,
            chain_work,
            order_work,
        })
    }
}

/// The names below `node` (whose cut flags a patch changed: a delegation
/// made or removed there) flagged again from their parents', parents
/// first, when every live name below it is one the patch touched
/// (`seen`) or a name between one and it (an empty non-terminal, when a
/// signed window of tern-zones made every name below such a cut an owner
/// of the change): each is flagged again from its parent's. Each name
/// flagged again goes into `reflagged`. `false` when a name below it was
/// not touched (the zone is then built whole). Bound: `MAX_LABELS`
/// parent steps per touched node, and a map's look-up per name below
/// `node`, for each cut the patch changes (a product of the change's
/// cuts and names, not of the zone).
fn reflag_below(
    zone: &mut Zone,
    node: u32,
    seen: &BTreeSet<u32>,
    work: &mut Work,
    reflagged: &mut BTreeSet<u32>,
) -> bool {
    // The touched names below `node` and the names between each and it,
    // with their depth below it.
    let mut below: BTreeMap<u32, usize> = BTreeMap::new();
    let mut chain: Vec<u32> = Vec::with_capacity(MAX_LABELS);
    for &id in seen {
        if id == node || zone.node(id).flags & FLAG_DEAD != 0 {
            continue;
        }
        chain.clear();
        let mut at = id;
        let mut under = false;
        for _ in 0..MAX_LABELS {
            chain.push(at);
            let parent = zone.node(at).parent;
            if parent == node {
                under = true;
                break;
            }
            if parent == NO_PARENT {
                break;
            }
            at = parent;
        }
        if under {
            for (depth, &id) in chain.iter().rev().enumerate() {
                below.insert(id, depth);
            }
        }
    }
    // Every live name directly below each is among them.
    let mut counted: BTreeMap<u32, u32> = BTreeMap::new();
    for &id in below.keys() {
        *counted.entry(zone.node(id).parent).or_default() += 1;
    }
    let covered = std::iter::once(node)
        .chain(below.keys().copied())
        .all(|id| zone.extra.get(id).children == counted.get(&id).copied().unwrap_or(0));
    if !covered {
        return false;
    }
    let mut order: Vec<(usize, u32)> = below.iter().map(|(&id, &depth)| (depth, id)).collect();
    order.sort_unstable();
    for (_, id) in order {
        let own = own_flags(zone, id);
        let slot = zone.nodes.get_mut(id, work);
        slot.flags = (slot.flags & FLAG_WILDCARD_CHILD) | own;
        reflagged.insert(id);
    }
    true
}

/// Adds to `again` the glue owners whose glue a node's change (its facts
/// `was`, then `now`) can alter, by what `glue_of` resolves a target to:
/// the name itself when it exists, else the `*` child of its closest
/// encloser, if that node holds one of the types the RRset naming it adds
/// (A or AAAA, and SVCB or HTTPS for an RRset of that type: compared as
/// [`Before::addresses`] masks); the glue is required, so first, when the
/// RRset is an NS RRset, the target is at or below its owner and the
/// node is flagged a cut or below one. So:
///
/// - a name that came or went, or whose addresses (any of the three
///   kinds) or cut flags changed: the owners naming it;
/// - a wildcard that did: the owners naming a name below its parent (the
///   names it can answer for, those with a name of their own apart);
/// - a name that came or went beside a wildcard (its parent has a `*`
///   child before or after): the owners naming it or a name below it,
///   whose closest encloser it became or ceased to be (a name that came
///   or went elsewhere changes no glue but its own and its wildcard's: a
///   closest encloser without a `*` child answers no target, and a `*`
///   child it gains comes with the change).
///
/// The names flagged again below a cut made or removed are all touched
/// (`reflag_below`), so among the nodes given, but the empty
/// non-terminals between them and the cut, which no target resolves to
/// (they have no addresses).
///
/// Bound: two binary searches of the targets' index a case, then the
/// owners found (for a wildcard, the targets below its parent).
fn glue_again(zone: &Zone, was: &Before, now: &Before, again: &mut BTreeSet<u32>) {
    use crate::targets::{sources_naming, Reach};
    let name = zone.node_name(now.node);
    let index = &zone.targets;
    let changed = was.live != now.live
        || was.addresses != now.addresses
        || (was.flags ^ now.flags) & (FLAG_DELEG | FLAG_NONAUTH) != 0;
    if changed {
        sources_naming(zone, index, name, Reach::Exact, again);
        if name.is_wildcard() {
            if let Some(parent) = name.parent() {
                sources_naming(zone, index, parent, Reach::Below, again);
            }
        }
    }
    if was.live != now.live && (was.parent_wildcard || now.parent_wildcard) {
        sources_naming(zone, index, name, Reach::AtOrBelow, again);
    }
}

/// Whether the glue of `node`'s RRsets resolves to other nodes (or in
/// another order) in `zone` than in `base`, the version it was patched
/// from: what changes their answers' additional sections. The targets'
/// places in the RDATA are left aside: they are new whenever the node's
/// RRsets are written again, and the node is then among the names changed
/// if its records changed. Bound: the node's RRsets with targets.
fn glue_moved(base: &Zone, zone: &Zone, node: u32) -> bool {
    let glue = |version: &Zone| -> Vec<(RType, Vec<u32>)> {
        let live = node < version.nodes.end() && version.node(node).flags & FLAG_DEAD == 0;
        let sets = if live { version.rrsets(node) } else { &[] };
        sets.iter()
            .filter(|set| !additional_types(set.rtype).is_empty())
            .map(|set| {
                let nodes = version.glue(set).iter().map(|glue| glue.node).collect();
                (set.rtype, nodes)
            })
            .collect()
    };
    glue(base) != glue(zone)
}

/// [`Before::addresses`]: an A or AAAA RRset (what every RRset with
/// targets adds).
const ADDRESSES: u8 = 1;
/// [`Before::addresses`]: an SVCB RRset (what an SVCB RRset's targets add
/// besides addresses).
const SVCB: u8 = 2;
/// [`Before::addresses`]: an HTTPS RRset (what an HTTPS RRset's targets
/// add besides addresses).
const HTTPS: u8 = 4;

/// A node's facts now.
fn facts(zone: &Zone, node: u32) -> Before {
    let slot = zone.node(node);
    let has = |rtype| zone.rrset_index(node, rtype).is_some();
    let live = slot.flags & FLAG_DEAD == 0;
    Before {
        node,
        live,
        flags: slot.flags,
        addresses: if live {
            [
                (has(RType::A) || has(RType::AAAA), ADDRESSES),
                (has(RType::SVCB), SVCB),
                (has(RType::HTTPS), HTTPS),
            ]
            .into_iter()
            .filter(|&(held, _)| held)
            .fold(0, |mask, (_, bit)| mask | bit)
        } else {
            0
        },
        nsec: live && has(RType::NSEC),
        dname: live && has(RType::DNAME),
        source: live && is_glue_source(zone, node),
        parent_wildcard: slot.parent != NO_PARENT
            && zone.node(slot.parent).flags & FLAG_WILDCARD_CHILD != 0,
    }
}

/// A node with no records and no live names below it (not the apex).
fn is_empty_leaf(zone: &Zone, node: u32) -> bool {
    let slot = zone.node(node);
    slot.flags & FLAG_DEAD == 0 && slot.rrset_count == 0 && zone.extra.get(node).children == 0
}

/// The octets a node's RRsets take (their RRset entries and RDATA, the
/// RRSIGs beyond the lowest type covered left out): what rewriting them
/// leaves unused.
fn node_bytes(zone: &Zone, node: u32) -> usize {
    let sets = zone.rrsets(node);
    let mut bytes = core::mem::size_of_val(sets);
    for set in sets {
        bytes += zone.rdata_iter(set).map(|r| 2 + r.len()).sum::<usize>();
        if set.rtype != RType::RRSIG {
            bytes += zone.sigs(set).map(|r| 2 + r.len()).sum::<usize>();
        }
        bytes += core::mem::size_of_val(zone.glue(set));
    }
    bytes
}

/// Writes `records` as the RRsets of `node`, exactly as the builder
/// writes them (sorted, duplicates dropped, the first TTL, RRSIGs
/// attached), its previous RRsets left as garbage. Bound: the records.
pub(crate) fn write_rrsets(
    zone: &mut Zone,
    node: u32,
    records: &[ChangedRecord],
    work: &mut Work,
    scratch: &mut Vec<u8>,
    sets: &mut Vec<RRset>,
) -> Result<(), BuildError> {
    zone.garbage += node_bytes(zone, node);
    let record_of = |index: u32| {
        let (rtype, ttl, rdata) = &records[index as usize];
        (*rtype, *ttl, &rdata[..])
    };
    let mut order: Vec<u32> = (0..records.len() as u32).collect();
    let rdata = &mut zone.rdata;
    let count = node_rrsets(&mut order, &record_of, scratch, sets, &mut |bytes| {
        rdata.push_run(bytes, work).ok_or(BuildError::TooLarge {
            what: "octets in one RRset",
        })
    })?;
    let start = if sets.is_empty() {
        0
    } else {
        zone.rrsets
            .push_run(sets, work)
            .ok_or(BuildError::TooLarge {
                what: "types at one name",
            })?
    };
    let slot = zone.nodes.get_mut(node, work);
    slot.rrsets_start = start;
    slot.rrset_count = sets.len() as u16;
    let extra = zone.extra.get_mut(node, work);
    let old = extra.records;
    extra.records = count;
    zone.record_count = zone.record_count - old as usize + count as usize;
    Ok(())
}

/// The live node named `name` (lowercase, inside the zone): found, brought
/// back, or created with its missing ancestors (each new or brought back
/// node's facts go into `before`, as not live). Bound: at most
/// [`MAX_LABELS`] ancestors.
fn ensure_node(
    zone: &mut Zone,
    name: Name<'_>,
    work: &mut Work,
    before: &mut Vec<Before>,
    seen: &mut BTreeSet<u32>,
) -> Result<u32, BuildError> {
    // The missing or dead suffixes, deepest first.
    let mut missing: [(Name<'_>, Option<u32>); MAX_LABELS] = [(name, None); MAX_LABELS];
    let mut count = 0;
    let mut parent = NO_PARENT;
    let mut suffix = Some(name);
    while let Some(current) = suffix {
        match zone.find_any_node(current.as_bytes()) {
            Some(found) if zone.node(found).flags & FLAG_DEAD == 0 => {
                parent = found;
                break;
            }
            found => {
                if count == MAX_LABELS {
                    break;
                }
                missing[count] = (current, found);
                count += 1;
            }
        }
        suffix = current.parent();
    }
    for &(current, dead) in missing[..count].iter().rev() {
        let id = match dead {
            Some(id) => {
                seen.insert(id);
                before.push(facts(zone, id));
                let slot = zone.nodes.get_mut(id, work);
                slot.flags = 0;
                slot.rrset_count = 0;
                zone.dead_nodes -= 1;
                id
            }
            None => {
                let name_start = zone
                    .names
                    .push_run(current.as_bytes(), work)
                    .ok_or(BuildError::TooLarge { what: "names" })?;
                let node = Node {
                    name_start,
                    name_len: current.len() as u8,
                    flags: 0,
                    rrset_count: 0,
                    rrsets_start: 0,
                    parent,
                };
                let id = zone
                    .nodes
                    .push_run(&[node], work)
                    .ok_or(BuildError::TooLarge { what: "nodes" })?;
                offset(id as usize, "nodes")?;
                zone.extra
                    .push_run(&[NodeExtra::default()], work)
                    .ok_or(BuildError::TooLarge { what: "nodes" })?;
                if !zone.index.is_empty() {
                    let Zone {
                        index,
                        names,
                        nodes,
                        ..
                    } = zone;
                    index.insert(
                        current.as_bytes(),
                        id,
                        |other| node_name_bytes(names, nodes, other),
                        work,
                    );
                }
                seen.insert(id);
                let mut b = facts(zone, id);
                b.live = false;
                b.flags = 0;
                before.push(b);
                id
            }
        };
        zone.extra.get_mut(parent, work).children += 1;
        parent = id;
    }
    Ok(parent)
}

/// The zone, as the index of target names reads it.
impl crate::targets::TargetZone for Zone {
    fn rdata_from(&self, at: u32) -> &[u8] {
        self.rdata_at(at)
    }

    fn origin_name(&self) -> Name<'_> {
        self.origin()
    }

    fn target_records(&self, node: u32, visit: &mut dyn FnMut(RType, usize, &[u8])) {
        if node >= self.nodes.end() || self.node(node).flags & FLAG_DEAD != 0 {
            return;
        }
        for set in self.rrsets(node) {
            if additional_types(set.rtype).is_empty() {
                continue;
            }
            let mut records = self.rdata_iter(set);
            loop {
                let at = records.next_offset();
                let Some(rdata) = records.next() else { break };
                visit(set.rtype, at, rdata);
            }
        }
    }
}

//=========== Tests ==========================================================

pub(crate) mod lineage;
mod nsec3;

#[cfg(test)]
mod tests;
