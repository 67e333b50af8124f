//! The NSEC3 side of [`Zone::patch`] (issue 25 with issue 24's signer):
//! the links of the chain a change names (the NSEC3 owners, which live
//! outside the tree, [`Zone::has_nsec3`]) written, added or removed, and
//! the hashes of the nodes changed (`crate::nsec3::Chain`) made again;
//! and what the update thread reads of a served chain, one link at a time
//! ([`Zone::nsec3_link_records`], [`Zone::nsec3_links_around`]).
//!
//! Cost: the links changed are written as any owner's records are; the
//! chain's links are shared between versions in parts of at most
//! `Links::MAX_PART` (256) links, and its per-node hashes in chunks of
//! 512 nodes: a link added, removed or rewritten copies its part, a node
//! changed or added its chunk (and each version copies the two lists of
//! parts and chunks, a pointer and a hash per part, a pointer per chunk).
//! A node's links are not stored but found from its hashes when a query
//! needs them, so no node's entry follows the links added or removed and
//! no pass over the nodes is made; the nodes changed are hashed again
//! (two NSEC3 hashes each). No RRset but the changed ones is read.
//! `patch::tests::an_nsec3_patch_costs_its_change_not_the_chain` counts
//! it at 5,000 and 50,000 names.

use std::collections::BTreeSet;
use std::sync::Arc;

use tern_wire::name::Name;
use tern_wire::types::RType;

use super::{write_rrsets, Before, ChangedRecord, PatchError};
use crate::arena::Work;
use crate::builder::{is_nsec3_data, offset, BuildError};
use crate::nsec3::{decode_label, Chain, Link, NodeHash};
use crate::zone::{
    Node, NodeExtra, RRset, Zone, ZoneRecord, FLAG_DEAD, FLAG_NONAUTH, FLAG_NSEC3_OWNER,
};

impl Zone {
    /// The iterations and salt of the zone's NSEC3 chain, if it has one.
    pub fn nsec3_chain_params(&self) -> Option<(u16, &[u8])> {
        let chain = self.nsec3.as_deref()?;
        Some((chain.params.iterations, &chain.params.salt))
    }

    /// The records of the NSEC3 chain's link whose hash is `hash` (its
    /// NSEC3 and the RRSIGs over it, in [`Zone::next_record`]'s form);
    /// none when no link has that hash. Bound: a binary search, the
    /// link's records.
    pub fn nsec3_link_records(&self, hash: &[u8; 20]) -> Vec<ZoneRecord<'_>> {
        let Some(chain) = self.nsec3.as_deref() else {
            return Vec::new();
        };
        let Some(link) = chain.links.get(hash) else {
            return Vec::new();
        };
        let node = link.node;
        let owner = self.node_name(node);
        let mut out = Vec::new();
        for set in self.rrsets(node) {
            if set.rtype == RType::RRSIG {
                // Signatures of a type the node holds are read with it.
                let covered = self
                    .rdata_iter(set)
                    .next()
                    .and_then(|rdata| rdata.get(..2))
                    .map_or(RType(0), |b| RType(u16::from_be_bytes([b[0], b[1]])));
                if covered == RType::RRSIG || self.rrset_index(node, covered).is_none() {
                    for rdata in self.rdata_iter(set) {
                        out.push(ZoneRecord {
                            owner,
                            rtype: RType::RRSIG,
                            ttl: set.ttl,
                            rdata,
                        });
                    }
                }
                continue;
            }
            for rdata in self.rdata_iter(set) {
                out.push(ZoneRecord {
                    owner,
                    rtype: set.rtype,
                    ttl: set.ttl,
                    rdata,
                });
            }
            for rdata in self.sigs(set) {
                out.push(ZoneRecord {
                    owner,
                    rtype: RType::RRSIG,
                    ttl: set.ttl,
                    rdata,
                });
            }
        }
        out
    }

    /// The hashes of the chain's links nearest `hash`: the greatest below
    /// it and the least above it, each wrapping around the chain's ends
    /// (RFC 5155's circular order); `None` when no link but one with
    /// `hash` itself is in the chain. Bound: binary searches.
    pub fn nsec3_links_around(&self, hash: &[u8; 20]) -> Option<([u8; 20], [u8; 20])> {
        let (below, above) = self.nsec3.as_deref()?.links.around(hash)?;
        Some((below.hash, above.hash))
    }
}

/// Whether the change of `owner` to `records` is one of the NSEC3 chain's
/// links: its owner (lowercased wire form) when so. A link's change holds
/// only NSEC3 records with the chain's parameters and the RRSIGs over them
/// (none: the link is gone), at a hashed owner right below the apex that
/// names no node of the tree. [`PatchError::Rebuild`] for what a patch
/// does not make: NSEC3 records without a chain or beside other records,
/// or a changed NSEC3PARAM RRset.
pub(super) fn split<'o>(
    zone: &Zone,
    owner: Name<'o>,
    records: &[ChangedRecord],
) -> Result<Option<&'o [u8]>, PatchError> {
    let origin = zone.origin();
    if owner.eq_ignore_case(origin) {
        let mut before: Vec<&[u8]> = zone
            .rrset_index(0, RType::NSEC3PARAM)
            .map(|set| zone.rdata_iter(zone.rrset(set)).collect())
            .unwrap_or_default();
        let mut after: Vec<&[u8]> = records
            .iter()
            .filter(|(rtype, _, _)| *rtype == RType::NSEC3PARAM)
            .map(|(_, _, rdata)| &rdata[..])
            .collect();
        before.sort_unstable();
        after.sort_unstable();
        after.dedup();
        if before != after {
            return Err(PatchError::Rebuild("a changed NSEC3PARAM"));
        }
    }
    let nsec3_data = records
        .iter()
        .filter(|(rtype, _, rdata)| is_nsec3_data(*rtype, rdata))
        .count();
    let Some(chain) = zone.nsec3.as_deref() else {
        if nsec3_data > 0 {
            return Err(PatchError::Rebuild("NSEC3 records outside a chain"));
        }
        return Ok(None);
    };
    if nsec3_data > 0 && nsec3_data != records.len() {
        return Err(PatchError::Rebuild("NSEC3 records beside others"));
    }
    let hash = owner
        .parent()
        .filter(|parent| parent.eq_ignore_case(origin))
        .and_then(|_| decode_label(owner.first_label()));
    let in_tree = zone.find_node(owner.as_bytes()).is_some();
    if nsec3_data > 0 {
        let parameters_match = records
            .iter()
            .filter(|(rtype, _, _)| *rtype == RType::NSEC3)
            .all(|(_, _, rdata)| chain.params.matches(rdata));
        if hash.is_none() || in_tree || !parameters_match {
            return Err(PatchError::Rebuild("NSEC3 records off the chain"));
        }
        return Ok(Some(owner.as_bytes()));
    }
    if !records.is_empty() {
        return Ok(None);
    }
    let linked = hash.is_some_and(|hash| chain.links.get(&hash).is_some());
    match (linked, in_tree) {
        (true, true) => Err(PatchError::Rebuild("an NSEC3 owner named as a node")),
        (true, false) => Ok(Some(owner.as_bytes())),
        (false, _) => Ok(None),
    }
}

/// Step 8 of [`Zone::patch`]: the links `hashed` (owner, its records in
/// the new version; none: gone) written into `zone` (whose tree changes,
/// `before`, are made) and into the chain's links, and the hashes of the
/// nodes changed made again (see the module documentation). Bound: the
/// links changed (a part of links copied per link), the nodes changed
/// and the nodes flagged again below a cut made or removed, `reflagged`
/// (two hashes each), and the nodes added. Returns what the chain's own
/// tables copied (added to `work` too).
pub(super) fn patch_chain(
    zone: &mut Zone,
    hashed: &[(Vec<u8>, &[ChangedRecord])],
    before: &[Before],
    reflagged: &BTreeSet<u32>,
    work: &mut Work,
    scratch: &mut Vec<u8>,
    sets: &mut Vec<RRset>,
) -> Result<Work, PatchError> {
    let Some(shared) = zone.nsec3.take() else {
        return Ok(Work::default());
    };
    let mut copied = Work::default();
    // The tables are shared in parts: this copies the lists of parts.
    let mut chain: Chain = Arc::unwrap_or_clone(shared);
    if chain.links.is_empty() {
        return Err(PatchError::Rebuild("an empty NSEC3 chain"));
    }
    for (owner, records) in hashed {
        let name = Name::from_validated(owner);
        let hash = decode_label(name.first_label())
            .ok_or(PatchError::Rebuild("NSEC3 records off the chain"))?;
        let found = chain.links.get(&hash).map(|link| link.node);
        match (found, records.is_empty()) {
            (Some(node), true) => {
                write_rrsets(zone, node, records, work, scratch, sets)?;
                zone.nodes.get_mut(node, work).flags = FLAG_NSEC3_OWNER | FLAG_DEAD;
                zone.dead_nodes += 1;
                zone.hashed_nodes -= 1;
                chain.links.remove(&hash, &mut copied);
            }
            (Some(node), false) => {
                write_rrsets(zone, node, records, work, scratch, sets)?;
                let set = zone
                    .rrset_index(node, RType::NSEC3)
                    .ok_or(PatchError::Rebuild("an NSEC3 link without NSEC3"))?;
                if let Some(link) = chain.links.get_mut(&hash, &mut copied) {
                    link.set = set;
                }
            }
            (None, true) => {}
            (None, false) => {
                let node = hashed_node(zone, name, work)?;
                write_rrsets(zone, node, records, work, scratch, sets)?;
                let set = zone
                    .rrset_index(node, RType::NSEC3)
                    .ok_or(PatchError::Rebuild("an NSEC3 link without NSEC3"))?;
                chain.links.insert(Link { hash, node, set }, &mut copied);
            }
        }
    }
    if chain.links.is_empty() {
        return Err(PatchError::Rebuild("an empty NSEC3 chain"));
    }
    // The nodes added (NSEC3 owners among them) have no hashes yet; the
    // nodes changed are hashed again below.
    let end = zone.nodes.end();
    while chain.hashes.end() < end {
        chain
            .hashes
            .push_run(&[NodeHash::default()], &mut copied)
            .ok_or(BuildError::TooLarge { what: "nodes" })?;
    }
    // The names below a cut made or removed that the patch did not touch
    // (empty non-terminals between a touched name and the cut) changed
    // flags too: hashed again with the rest.
    let mut again: Vec<u32> = before
        .iter()
        .map(|b| b.node)
        .chain(reflagged.iter().copied())
        .collect();
    again.sort_unstable();
    again.dedup();
    for node in again {
        let flags = zone.node(node).flags;
        let hashes = if flags & (FLAG_NSEC3_OWNER | FLAG_NONAUTH | FLAG_DEAD) != 0 {
            NodeHash::default()
        } else {
            NodeHash::of(&chain.params, zone.node_name(node))
        };
        *chain.hashes.get_mut(node, &mut copied) = hashes;
    }
    zone.nsec3 = Some(Arc::new(chain));
    work.chunks_copied += copied.chunks_copied;
    work.bytes_copied += copied.bytes_copied;
    work.nsec_moved += copied.nsec_moved;
    Ok(copied)
}

/// A new node for the NSEC3 owner `name` (lowercase), outside the tree
/// as the builder makes it (not indexed, no parent's child).
fn hashed_node(zone: &mut Zone, name: Name<'_>, work: &mut Work) -> Result<u32, BuildError> {
    let name_start = zone
        .names
        .push_run(name.as_bytes(), work)
        .ok_or(BuildError::TooLarge { what: "names" })?;
    let node = Node {
        name_start,
        name_len: name.len() as u8,
        flags: FLAG_NSEC3_OWNER,
        rrset_count: 0,
        rrsets_start: 0,
        parent: 0,
    };
    let id = zone
        .nodes
        .push_run(&[node], work)
        .ok_or(BuildError::TooLarge { what: "nodes" })?;
    offset(id as usize, "nodes")?;
    zone.extra
        .push_run(&[NodeExtra::default()], work)
        .ok_or(BuildError::TooLarge { what: "nodes" })?;
    zone.hashed_nodes += 1;
    Ok(id)
}
