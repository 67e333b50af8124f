//! The NSEC3 side of [`Zone::patch`] (issue 25 with issue 24's signer):
//! the links of the chain a change names (the NSEC3 owners, which live
//! outside the tree, [`Zone::has_nsec3`]) written, added or removed, and
//! each node's matching and wildcard links (`crate::nsec3::Chain`)
//! following them; and what the update thread reads of a served chain,
//! one link at a time ([`Zone::nsec3_link_records`],
//! [`Zone::nsec3_links_around`]).
//!
//! Cost: the links changed are written as any owner's records are; the
//! chain's tables are copied once (they are shared between versions) and
//! passed over once, moving each node's link numbers past the links added
//! or removed (integers only); the nodes changed, their ancestors without
//! a matching link (with opt-out, one may gain it), and those whose
//! wildcard's covering link gained a neighbour or lost it, are hashed
//! again (two NSEC3 hashes each). No RRset but the changed ones is read.

use std::sync::Arc;

use tern_wire::name::Name;
use tern_wire::types::RType;

use super::{write_rrsets, Before, ChangedRecord, PatchError};
use crate::arena::Work;
use crate::builder::{is_nsec3_data, offset, BuildError};
use crate::nsec3::{decode_label, Chain, Link, NONE};
use crate::zone::{
    Node, NodeExtra, RRset, Zone, ZoneRecord, FLAG_DEAD, FLAG_NONAUTH, FLAG_NSEC3_OWNER, NO_PARENT,
};

/// The most labels a name has: a bound on the walk up from a node.
const MAX_LABELS: usize = 128;

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
        let Ok(at) = chain.links.binary_search_by(|link| link.hash.cmp(hash)) else {
            return Vec::new();
        };
        let node = chain.links[at].node;
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
    /// `hash` itself is in the chain. Bound: a binary search.
    pub fn nsec3_links_around(&self, hash: &[u8; 20]) -> Option<([u8; 20], [u8; 20])> {
        let links = &self.nsec3.as_deref()?.links;
        let below = links.partition_point(|link| link.hash < *hash);
        let above = links.partition_point(|link| link.hash <= *hash);
        let others = links.len() - (above - below);
        if others == 0 {
            return None;
        }
        let before = below.checked_sub(1).unwrap_or(links.len() - 1);
        let after = if above == links.len() { 0 } else { above };
        Some((links[before].hash, links[after].hash))
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
    let linked = hash.is_some_and(|hash| {
        chain
            .links
            .binary_search_by(|link| link.hash.cmp(&hash))
            .is_ok()
    });
    match (linked, in_tree) {
        (true, true) => Err(PatchError::Rebuild("an NSEC3 owner named as a node")),
        (true, false) => Ok(Some(owner.as_bytes())),
        (false, _) => Ok(None),
    }
}

/// Step 8 of [`Zone::patch`]: the links `hashed` (owner, its records in
/// the new version; none: gone) written into `zone` (whose tree changes,
/// `before`, are made), and the chain's links and each node's matching
/// and wildcard links made again from the previous ones (see the module
/// documentation). Bound: the links changed, one pass over the links and
/// one over the nodes, two hashes per node changed and per node whose
/// wildcard's covering link changed.
pub(super) fn patch_chain(
    zone: &mut Zone,
    hashed: &[(Vec<u8>, &[ChangedRecord])],
    before: &[Before],
    work: &mut Work,
    scratch: &mut Vec<u8>,
    sets: &mut Vec<RRset>,
) -> Result<(), PatchError> {
    let Some(shared) = zone.nsec3.take() else {
        return Ok(());
    };
    let mut chain: Chain = Arc::unwrap_or_clone(shared);
    let old = std::mem::take(&mut chain.links);
    if old.is_empty() {
        return Err(PatchError::Rebuild("an empty NSEC3 chain"));
    }
    let mut removed: Vec<u32> = Vec::new();
    let mut rewritten: Vec<(u32, u32)> = Vec::new();
    let mut added: Vec<Link> = Vec::new();
    for (owner, records) in hashed {
        let name = Name::from_validated(owner);
        let hash = decode_label(name.first_label())
            .ok_or(PatchError::Rebuild("NSEC3 records off the chain"))?;
        let found = old.binary_search_by(|link| link.hash.cmp(&hash)).ok();
        match (found, records.is_empty()) {
            (Some(at), true) => {
                let node = old[at].node;
                write_rrsets(zone, node, records, work, scratch, sets)?;
                zone.nodes.get_mut(node, work).flags = FLAG_NSEC3_OWNER | FLAG_DEAD;
                zone.dead_nodes += 1;
                zone.hashed_nodes -= 1;
                removed.push(at as u32);
            }
            (Some(at), false) => {
                let node = old[at].node;
                write_rrsets(zone, node, records, work, scratch, sets)?;
                let set = zone
                    .rrset_index(node, RType::NSEC3)
                    .ok_or(PatchError::Rebuild("an NSEC3 link without NSEC3"))?;
                rewritten.push((at as u32, set));
            }
            (None, true) => {}
            (None, false) => {
                let node = hashed_node(zone, name, work)?;
                write_rrsets(zone, node, records, work, scratch, sets)?;
                let set = zone
                    .rrset_index(node, RType::NSEC3)
                    .ok_or(PatchError::Rebuild("an NSEC3 link without NSEC3"))?;
                added.push(Link { hash, node, set });
            }
        }
    }
    removed.sort_unstable();
    added.sort_by_key(|link| link.hash);
    // The new links, each old link's new number (NONE: removed), and
    // whether the hashes an old link covered changed hands (it went, or
    // a link came between it and its successor).
    let mut remap = vec![NONE; old.len()];
    let mut dirty = vec![false; old.len()];
    for &at in &removed {
        dirty[at as usize] = true;
    }
    for link in &added {
        let below = old.partition_point(|other| other.hash < link.hash);
        let covering = below.checked_sub(1).unwrap_or(old.len() - 1);
        dirty[covering] = true;
    }
    let mut links = Vec::with_capacity(old.len() + added.len());
    let mut new_links = added.into_iter().peekable();
    let mut gone = removed.iter().peekable();
    for (at, link) in old.iter().enumerate() {
        while let Some(next) = new_links.next_if(|next| next.hash < link.hash) {
            links.push(next);
        }
        if gone.next_if(|&&index| index as usize == at).is_some() {
            continue;
        }
        remap[at] = offset(links.len(), "NSEC3 links")?;
        links.push(*link);
    }
    links.extend(new_links);
    for (at, set) in rewritten {
        if let Some(&index) = remap.get(at as usize).filter(|&&index| index != NONE) {
            links[index as usize].set = set;
        }
    }
    links.dedup_by(|a, b| a.hash == b.hash);
    if links.is_empty() {
        return Err(PatchError::Rebuild("an empty NSEC3 chain"));
    }
    work.nsec_moved += links.len();
    chain.links = links;
    // Each node's links: moved, or found again.
    let end = zone.nodes.end() as usize;
    chain.matching.resize(end, NONE);
    chain.wildcard.resize(end, NONE);
    let mut again: Vec<u32> = before.iter().map(|b| b.node).collect();
    for node in 0..end {
        let matching = chain.matching[node];
        if matching != NONE {
            chain.matching[node] = remap.get(matching as usize).copied().unwrap_or(NONE);
        }
        let wildcard = chain.wildcard[node];
        if wildcard != NONE {
            if dirty.get(wildcard as usize).copied().unwrap_or(true) {
                again.push(node as u32);
            } else {
                chain.wildcard[node] = remap[wildcard as usize];
            }
        }
    }
    // The ancestors of the nodes changed without a matching link: with
    // opt-out, an empty non-terminal (or a name) the change did not touch
    // gains a link when a name below it enters the chain (a name added, a
    // delegation made secure), which no previous link number tells.
    // Bound: the changed nodes' depth.
    for b in before {
        let mut node = b.node;
        let mut depth = 0;
        while node != NO_PARENT && depth < MAX_LABELS {
            let parent = zone.node(node).parent;
            if parent == NO_PARENT || parent == node {
                break;
            }
            if chain.matching.get(parent as usize).copied() == Some(NONE) {
                again.push(parent);
            }
            node = parent;
            depth += 1;
        }
    }
    again.sort_unstable();
    again.dedup();
    for node in again {
        let flags = zone.node(node).flags;
        let (matching, wildcard) = if flags & (FLAG_NSEC3_OWNER | FLAG_NONAUTH | FLAG_DEAD) != 0 {
            (NONE, NONE)
        } else {
            links_of(&chain, zone.node_name(node))
        };
        chain.matching[node as usize] = matching;
        chain.wildcard[node as usize] = wildcard;
    }
    zone.nsec3 = Some(Arc::new(chain));
    Ok(())
}

/// The link matching `name` and the one matching or covering `*.name`,
/// as the builder finds them.
fn links_of(chain: &Chain, name: Name<'_>) -> (u32, u32) {
    let matching = match chain.find(&chain.params.hash(name)) {
        Some((link, true)) => link,
        _ => NONE,
    };
    let wildcard = tern_wire::name::NameBuf::concat(b"\x01*", name)
        .ok()
        .and_then(|wildcard| chain.find(&chain.params.hash(wildcard.as_name())))
        .map_or(NONE, |(link, _)| link);
    (matching, wildcard)
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
