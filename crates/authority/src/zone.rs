//! The immutable zone database: nodes, RRsets and RDATA in flat arenas.
//!
//! A [`Zone`] is built once by [`crate::ZoneBuilder::finish`] and then only
//! read, from any number of threads. Everything a lookup needs was computed
//! at load time (Knot's `zone/adjust.c`, NSD's `namedb.h`):
//!
//! - every owner name and every ancestor up to the apex (empty non-terminals
//!   included) is a [`Node`] with a dense id; a parent's id is always smaller
//!   than its children's, so one forward pass can propagate flags downwards;
//! - each node carries flags: apex, delegation point, non-authoritative
//!   (below a cut), has a `*` child;
//! - each RRset is a range of length-prefixed RDATA in one byte arena, and
//!   RRsets of NS, MX, SRV, SVCB and HTTPS carry a range of [`Glue`]: the ids
//!   of the in-zone nodes whose addresses go into the additional section;
//! - names live lowercased in one byte arena, indexed by a hash table of
//!   node ids, so finding a name hashes a borrowed slice and allocates
//!   nothing.
//!
//! Memory per record is its RDATA plus two length octets; per RRset 20
//! bytes; per node 16 bytes, its name and an index slot.

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::RType;

use crate::index::NameIndex;

/// The parent id of the apex.
pub(crate) const NO_PARENT: u32 = u32::MAX;

//----------- Flags ----------------------------------------------------------

/// The zone apex.
pub(crate) const FLAG_APEX: u8 = 0x01;
/// A delegation point: NS below the apex, not itself below a cut.
pub(crate) const FLAG_DELEG: u8 = 0x02;
/// Below a delegation point: glue or occluded data, never answered.
pub(crate) const FLAG_NONAUTH: u8 = 0x04;
/// The node has a `*` child (RFC 4592 source of synthesis).
pub(crate) const FLAG_WILDCARD_CHILD: u8 = 0x08;

//----------- Node -----------------------------------------------------------

/// One name of the zone. `rrset_count` is zero for empty non-terminals.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) name_start: u32,
    pub(crate) name_len: u8,
    pub(crate) flags: u8,
    pub(crate) rrset_count: u16,
    pub(crate) rrsets_start: u32,
    pub(crate) parent: u32,
}

//----------- RRset ----------------------------------------------------------

/// One RRset: its RDATA is `count` records at `rdata_start` in the arena,
/// each a big-endian `u16` length followed by that many octets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RRset {
    pub(crate) rtype: RType,
    pub(crate) count: u16,
    pub(crate) ttl: u32,
    pub(crate) rdata_start: u32,
    pub(crate) glue_start: u32,
    pub(crate) glue_count: u16,
}

//----------- Glue -----------------------------------------------------------

/// An additional-section target of one record: the node that holds its
/// addresses (possibly a wildcard) and where the target name sits in the
/// RDATA arena (it becomes the owner of the additional records). An
/// RRset's glue lists required glue (in-bailiwick NS targets below a cut,
/// RFC 9471) first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Glue {
    pub(crate) node: u32,
    pub(crate) target: u32,
}

//----------- Zone -----------------------------------------------------------

/// An immutable, loaded zone. Cheap to share (`Send + Sync`, no interior
/// mutability); look-ups allocate nothing.
#[derive(Clone)]
pub struct Zone {
    pub(crate) origin: NameBuf,
    pub(crate) names: Vec<u8>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) rrsets: Vec<RRset>,
    pub(crate) rdata: Vec<u8>,
    pub(crate) glue: Vec<Glue>,
    pub(crate) index: NameIndex,
    /// The apex SOA RRset.
    pub(crate) soa: u32,
    /// min(SOA TTL, SOA MINIMUM): the TTL of the SOA in negative answers
    /// (RFC 2308 section 3).
    pub(crate) negative_ttl: u32,
    pub(crate) record_count: usize,
}

impl Zone {
    /// The zone's origin, lowercased.
    pub fn origin(&self) -> Name<'_> {
        self.origin.as_name()
    }

    /// The number of names, empty non-terminals included.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The number of RRsets.
    pub fn rrset_count(&self) -> usize {
        self.rrsets.len()
    }

    /// The number of records (after duplicates were removed).
    pub fn record_count(&self) -> usize {
        self.record_count
    }

    /// The SOA serial, for logs.
    pub fn serial(&self) -> u32 {
        let soa = &self.rrsets[self.soa as usize];
        let rdata = self.rdata_iter(soa).next().unwrap_or(&[]);
        rdata
            .len()
            .checked_sub(20)
            .and_then(|at| rdata.get(at..at + 4))
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    //--- Names and nodes

    /// The node's lowercased name.
    pub(crate) fn node_name(&self, node: u32) -> Name<'_> {
        let node = &self.nodes[node as usize];
        let start = node.name_start as usize;
        Name::from_wire(&self.names[start..start + usize::from(node.name_len)])
            .expect("node names are validated when the zone is built")
    }

    pub(crate) fn node(&self, node: u32) -> &Node {
        &self.nodes[node as usize]
    }

    /// The node named exactly `lower` (lowercased wire bytes).
    pub(crate) fn find_node(&self, lower: &[u8]) -> Option<u32> {
        self.index.find(lower, |id| self.node_name_bytes(id))
    }

    fn node_name_bytes(&self, node: u32) -> &[u8] {
        let node = &self.nodes[node as usize];
        let start = node.name_start as usize;
        &self.names[start..start + usize::from(node.name_len)]
    }

    /// The deepest existing node that equals or contains `lower`, and
    /// whether it is an exact match. `None` if `lower` is not in the zone.
    /// Bound: one hash look-up per label of `lower` below the origin; no
    /// allocation.
    pub(crate) fn closest_encloser(&self, lower: Name<'_>) -> Option<(u32, bool)> {
        if !lower.ends_with(self.origin()) {
            return None;
        }
        let mut suffix = lower;
        let mut exact = true;
        loop {
            if let Some(node) = self.find_node(suffix.as_bytes()) {
                return Some((node, exact));
            }
            if suffix.len() <= self.origin.as_bytes().len() {
                // The apex always exists; only a name outside could get here.
                return None;
            }
            suffix = suffix.parent()?;
            exact = false;
        }
    }

    /// The `*` child of a node, if it has one.
    pub(crate) fn wildcard_child(&self, node: u32) -> Option<u32> {
        if self.nodes[node as usize].flags & FLAG_WILDCARD_CHILD == 0 {
            return None;
        }
        let wildcard = NameBuf::concat(b"\x01*", self.node_name(node)).ok()?;
        self.find_node(wildcard.as_bytes())
    }

    /// The highest delegation point at or above a node that is a cut or
    /// below one.
    pub(crate) fn delegation_above(&self, mut node: u32) -> Option<u32> {
        // Parent ids strictly decrease, so this walk ends.
        loop {
            let flags = self.nodes[node as usize].flags;
            if flags & FLAG_DELEG != 0 {
                return Some(node);
            }
            if flags & FLAG_NONAUTH == 0 {
                return None;
            }
            node = self.nodes[node as usize].parent;
            if node == NO_PARENT {
                return None;
            }
        }
    }

    //--- RRsets

    /// The RRsets of a node, sorted by type.
    pub(crate) fn rrsets(&self, node: u32) -> &[RRset] {
        let node = &self.nodes[node as usize];
        let start = node.rrsets_start as usize;
        &self.rrsets[start..start + usize::from(node.rrset_count)]
    }

    /// The index (into `rrsets`) of a node's RRset of a type.
    pub(crate) fn rrset_index(&self, node: u32, rtype: RType) -> Option<u32> {
        let start = self.nodes[node as usize].rrsets_start;
        self.rrsets(node)
            .binary_search_by(|set| set.rtype.cmp(&rtype))
            .ok()
            .map(|i| start + i as u32)
    }

    pub(crate) fn rrset(&self, index: u32) -> &RRset {
        &self.rrsets[index as usize]
    }

    /// The RDATA of each record of an RRset.
    pub(crate) fn rdata_iter<'z>(&'z self, set: &RRset) -> RdataIter<'z> {
        RdataIter {
            arena: &self.rdata,
            pos: set.rdata_start as usize,
            left: set.count,
        }
    }

    /// The arena offset of each record's RDATA (for glue targets).
    pub(crate) fn rdata_at(&self, offset: u32) -> &[u8] {
        &self.rdata[offset as usize..]
    }

    /// The glue of an RRset.
    pub(crate) fn glue(&self, set: &RRset) -> &[Glue] {
        let start = set.glue_start as usize;
        &self.glue[start..start + usize::from(set.glue_count)]
    }
}

impl core::fmt::Debug for Zone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("origin", &self.origin)
            .field("nodes", &self.nodes.len())
            .field("rrsets", &self.rrsets.len())
            .field("records", &self.record_count)
            .finish()
    }
}

//----------- RdataIter ------------------------------------------------------

/// Iterator over the RDATA of one RRset.
pub(crate) struct RdataIter<'z> {
    arena: &'z [u8],
    pos: usize,
    left: u16,
}

impl<'z> RdataIter<'z> {
    /// The arena offset of the next record's RDATA.
    pub(crate) fn next_offset(&self) -> usize {
        self.pos + 2
    }
}

impl<'z> Iterator for RdataIter<'z> {
    type Item = &'z [u8];

    fn next(&mut self) -> Option<&'z [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let len = usize::from(u16::from_be_bytes([
            self.arena[self.pos],
            self.arena[self.pos + 1],
        ]));
        let rdata = &self.arena[self.pos + 2..self.pos + 2 + len];
        self.pos += 2 + len;
        Some(rdata)
    }
}
