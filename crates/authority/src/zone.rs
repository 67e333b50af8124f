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
//!   (below a cut), has a `*` child, owns a DNAME;
//! - each RRset is a range of length-prefixed RDATA in one byte arena, and
//!   RRsets of NS, MX, SRV, SVCB and HTTPS carry a range of [`Glue`]: the ids
//!   of the in-zone nodes whose addresses go into the additional section;
//! - names live lowercased in one byte arena, indexed by a hash table of
//!   node ids, so finding a name hashes a borrowed slice and allocates
//!   nothing.
//!
//! Memory per record is its RDATA plus two length octets; per RRset 24
//! bytes (its RRSIGs are a range of the node's RRSIG RRset); per node 24
//! bytes, its name and an index slot; in an NSEC3 zone 8 more bytes per
//! node (its matching link and its wildcard's) and 28 per NSEC3 record;
//! in a signed zone about 4.4 more per name of the tree (not per NSEC3
//! owner), the order of its names ([`Zone::names_below`]).
//!
//! The tables are [`Arena`]s of shared chunks and the name index is
//! sharded, so that [`Zone::patch`] makes the next version of an updated
//! zone by copying only the chunks its change touches (docs/decisions/0019).

use core::cmp::Ordering;
use std::sync::Arc;

use tern_wire::build::Precompressed;
use tern_wire::name::{Name, MAX_LABELS, MAX_NAME_LEN};
use tern_wire::types::RType;

use crate::arena::Arena;
use crate::index::ShardedIndex;
use crate::nsec3::Chain;
use crate::parts::Parts;

/// The zone's tables (see [`Arena`]): names and RDATA in chunks of 64 KiB,
/// the fixed-size entries in chunks of 48 to 128 KiB.
pub(crate) type Names = Arena<u8, 16>;
pub(crate) type Nodes = Arena<Node, 12>;
pub(crate) type RRsets = Arena<RRset, 12>;
pub(crate) type Rdata = Arena<u8, 16>;
pub(crate) type GlueTable = Arena<Glue, 14>;
pub(crate) type Extras = Arena<NodeExtra, 13>;

/// The parent id of the apex.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// The most names a zone may have and still be searched without an index
/// (see [`Zone::find_node`]): comparing eight short names costs about what
/// hashing one does, and the index would cost a small zone 112 bytes, a
/// seventh of what a hosting provider's typical zone takes.
pub(crate) const SMALL_ZONE_NODES: usize = 8;

//----------- Flags ----------------------------------------------------------

/// The zone apex.
pub(crate) const FLAG_APEX: u8 = 0x01;
/// A delegation point: NS below the apex, not itself below a cut.
pub(crate) const FLAG_DELEG: u8 = 0x02;
/// Below a delegation point: glue or occluded data, never answered.
pub(crate) const FLAG_NONAUTH: u8 = 0x04;
/// The node has a `*` child (RFC 4592 source of synthesis).
pub(crate) const FLAG_WILDCARD_CHILD: u8 = 0x08;
/// The node owns an NSEC3 record: it sits outside the name tree (not in
/// the index, so look-ups never find it), as Knot keeps NSEC3 records in a
/// separate tree.
pub(crate) const FLAG_NSEC3_OWNER: u8 = 0x10;
/// A name a patch removed (no records, no names below): it stays in the
/// index so that a later patch can bring it back under its id, and
/// look-ups pass over it.
pub(crate) const FLAG_DEAD: u8 = 0x20;
/// The node owns a DNAME RRset: a name below it that does not exist is
/// answered by substitution (RFC 6672), which a name under a node without
/// the flag never is, so the NXDOMAIN path reads the flag instead of
/// searching the node's RRsets (about 50 instructions a query). Set with
/// the other own flags ([`crate::builder::own_flags`]), by the builder and
/// by [`Zone::patch`] for every node whose records it writes.
pub(crate) const FLAG_DNAME: u8 = 0x40;

//----------- Node -----------------------------------------------------------

/// One name of the zone. `rrset_count` is zero for empty non-terminals.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Node {
    pub(crate) name_start: u32,
    pub(crate) name_len: u8,
    pub(crate) flags: u8,
    pub(crate) rrset_count: u16,
    pub(crate) rrsets_start: u32,
    pub(crate) parent: u32,
}

/// What only [`Zone::patch`] reads about a node: how many names are
/// directly below it (live), and how many records it holds (the RRSIG
/// RRset's records beyond the lowest type covered included, which no
/// RRset counts).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NodeExtra {
    pub(crate) children: u32,
    pub(crate) records: u32,
}

//----------- RRset ----------------------------------------------------------

/// One RRset: its RDATA is `count` records at `rdata_start` in the arena,
/// each a big-endian `u16` length followed by that many octets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RRset {
    pub(crate) rtype: RType,
    pub(crate) count: u16,
    pub(crate) ttl: u32,
    pub(crate) rdata_start: u32,
    pub(crate) glue_start: u32,
    pub(crate) glue_count: u16,
    /// The RRSIG records covering this RRset at the same owner: `sig_count`
    /// records from arena offset `sig_start` (a sub-range of the node's
    /// RRSIG RRset). They are written with this RRset's TTL, as Knot does.
    pub(crate) sig_start: u32,
    pub(crate) sig_count: u16,
}

//----------- Glue -----------------------------------------------------------

/// An additional-section target of one record: the node that holds its
/// addresses (possibly a wildcard) and where the target name sits in the
/// RDATA arena (it becomes the owner of the additional records). An
/// RRset's glue lists required glue (in-bailiwick NS targets below a cut,
/// RFC 9471) first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Glue {
    pub(crate) node: u32,
    pub(crate) target: u32,
}

//----------- Zone -----------------------------------------------------------

/// An immutable, loaded zone. Cheap to share (`Send + Sync`, no interior
/// mutability); look-ups allocate nothing.
#[derive(Clone)]
pub struct Zone {
    /// Every node's name, lowercased; the apex (node 0, the origin) first.
    pub(crate) names: Names,
    pub(crate) nodes: Nodes,
    pub(crate) rrsets: RRsets,
    pub(crate) rdata: Rdata,
    pub(crate) glue: GlueTable,
    /// Per node, what patches need.
    pub(crate) extra: Extras,
    /// Names to node ids. Empty in a zone of at most
    /// [`SMALL_ZONE_NODES`] names, which are compared in turn instead.
    pub(crate) index: ShardedIndex,
    /// The apex SOA RRset.
    pub(crate) soa: u32,
    /// min(SOA TTL, SOA MINIMUM): the TTL of the SOA in negative answers
    /// (RFC 2308 section 3).
    pub(crate) negative_ttl: u32,
    /// The apex SOA's names compressed once (NSD's pre-encoded SOA), for
    /// the SOA of negative answers; `None` for the root zone.
    pub(crate) soa_plan: Option<Precompressed>,
    pub(crate) record_count: usize,
    /// The zone is signed: its apex SOA has an RRSIG (Knot's
    /// `zone_contents_is_signed`). Only signed zones get DS in referrals
    /// and NSEC/NSEC3 proofs.
    pub(crate) signed: bool,
    /// A secondary zone past its SOA's EXPIRE: every query for a name in it
    /// is answered SERVFAIL, as Knot does, rather than with data that may
    /// be stale or by another zone.
    pub(crate) expired: bool,
    /// The nodes that own an NSEC RRset, in canonical order (RFC 4034
    /// section 6.1), for the covering NSEC of a name; in parts shared
    /// between versions, so that a patch copies the parts it changes (one
    /// shared slice while it holds at most `Parts::MAX_PART`, none
    /// allocated when empty, as in an unsigned zone).
    pub(crate) nsec: Parts<u32>,
    /// The NSEC3 chain, if the apex has an NSEC3PARAM record (boxed: most
    /// zones have none, and each zone's own size counts when there are a
    /// million of them).
    pub(crate) nsec3: Option<Arc<Chain>>,
    /// The names inside the zone that RRsets with additional-section
    /// targets (NS, MX, SRV, SVCB, HTTPS) name, each with the node owning
    /// the RRset, in canonical order: the RRsets a patch that changes a
    /// name's addresses, a wildcard or a cut resolves again
    /// (`crate::targets`). In shared parts, as `nsec`; none allocated
    /// when no target is inside the zone (it replaces the list of the
    /// owners of such RRsets, which a patch resolved again whole).
    pub(crate) targets: crate::targets::Targets,
    /// In a signed zone, every live name of the tree (empty
    /// non-terminals included) in canonical order, for
    /// [`Zone::names_below`] (`crate::order`); in shared parts, as
    /// `nsec`. None allocated in an unsigned zone.
    pub(crate) order: Parts<u32>,
    /// Nodes owning NSEC3 records (outside the tree).
    pub(crate) hashed_nodes: u32,
    /// Nodes marked [`FLAG_DEAD`].
    pub(crate) dead_nodes: u32,
    /// Octets of the tables that patches left unused (RDATA, RRsets and
    /// glue replaced): a zone rebuilt whole has none.
    pub(crate) garbage: usize,
    /// The names a patch changed, relative to the version it was patched
    /// from (`crate::patch`); a clone has none.
    pub(crate) lineage: crate::patch::lineage::Lineage,
}

impl Zone {
    /// The zone's origin, lowercased: the apex node's name.
    pub fn origin(&self) -> Name<'_> {
        self.node_name(0)
    }

    /// The number of names, empty non-terminals included.
    pub fn node_count(&self) -> usize {
        (self.nodes.end() - self.dead_nodes) as usize
    }

    /// The number of records (after duplicates were removed).
    pub fn record_count(&self) -> usize {
        self.record_count
    }

    /// Whether this is the stand-in of an expired zone.
    pub fn is_expired(&self) -> bool {
        self.expired
    }

    /// The SOA serial, for logs.
    pub fn serial(&self) -> u32 {
        let soa = self.rrsets.get(self.soa);
        let rdata = self.rdata_iter(soa).next().unwrap_or(&[]);
        rdata
            .len()
            .checked_sub(20)
            .and_then(|at| rdata.get(at..at + 4))
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The apex SOA record.
    pub fn soa_record(&self) -> ZoneRecord<'_> {
        let set = self.rrsets.get(self.soa);
        ZoneRecord {
            owner: self.origin(),
            rtype: RType::SOA,
            ttl: set.ttl,
            rdata: self.rdata_iter(set).next().unwrap_or(&[]),
        }
    }

    /// The next record of the zone after `cursor`, which it advances:
    /// every record once, node by node, each RRset followed by the RRSIGs
    /// covering it (with the RRset's TTL, as answers give them), NSEC3
    /// records included. A zone transfer walks the zone with it, one
    /// message at a time, holding only the cursor between messages.
    /// Owner names come out lowercased, RDATA as loaded.
    ///
    /// RRSIGs whose covered type has no RRset at their owner are given
    /// only for the lowest such type (the zone keeps those alone).
    /// Bound: each call moves the cursor forward by at least one record or
    /// RRset; the walk ends after the last node.
    pub fn next_record(&self, cursor: &mut RecordCursor) -> Option<ZoneRecord<'_>> {
        loop {
            if cursor.node >= self.nodes.end() {
                return None;
            }
            let node = self.nodes.get(cursor.node);
            if cursor.set >= u32::from(node.rrset_count) {
                *cursor = RecordCursor {
                    node: cursor.node + 1,
                    ..RecordCursor::default()
                };
                continue;
            }
            let set = self.rrsets.get(node.rrsets_start + cursor.set);
            if !cursor.started {
                cursor.started = true;
                cursor.sigs = false;
                cursor.pos = set.rdata_start;
                cursor.left = set.count;
                if set.rtype == RType::RRSIG && self.sigs_attached(cursor.node, set) {
                    cursor.left = 0;
                }
            }
            if cursor.left > 0 {
                cursor.left -= 1;
                let bytes = self.rdata.tail(cursor.pos);
                let len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
                let rdata = &bytes[2..2 + len];
                cursor.pos += 2 + len as u32;
                let rtype = if cursor.sigs { RType::RRSIG } else { set.rtype };
                return Some(ZoneRecord {
                    owner: self.node_name(cursor.node),
                    rtype,
                    ttl: set.ttl,
                    rdata,
                });
            }
            if !cursor.sigs && set.rtype != RType::RRSIG {
                cursor.sigs = true;
                cursor.pos = set.sig_start;
                cursor.left = set.sig_count;
                continue;
            }
            cursor.set += 1;
            cursor.started = false;
        }
    }

    /// Whether the records of a node's RRSIG RRset (the signatures of the
    /// lowest type covered) are also attached to that type's RRset.
    fn sigs_attached(&self, node: u32, rrsig: &RRset) -> bool {
        let covered = self
            .rdata_iter(rrsig)
            .next()
            .and_then(|rdata| rdata.get(..2))
            .map_or(RType(0), |b| RType(u16::from_be_bytes([b[0], b[1]])));
        covered != RType::RRSIG && self.rrset_index(node, covered).is_some()
    }

    //--- Names and nodes

    /// The node's lowercased name.
    pub(crate) fn node_name(&self, node: u32) -> Name<'_> {
        // Validated when the zone was built; the arena never changes.
        Name::from_validated(self.node_name_bytes(node))
    }

    #[inline]
    pub(crate) fn node(&self, node: u32) -> &Node {
        self.nodes.get(node)
    }

    /// The node named exactly `lower` (lowercased wire bytes). Bound: one
    /// hash look-up, or in a small zone at most [`SMALL_ZONE_NODES`]
    /// comparisons.
    pub(crate) fn find_node(&self, lower: &[u8]) -> Option<u32> {
        if self.index.is_empty() {
            return self
                .find_any_node(lower)
                .filter(|&id| self.node(id).flags & FLAG_DEAD == 0);
        }
        self.index
            .find_where(lower, |id| self.live_named(id, lower))
    }

    /// Whether node `id` is alive and named `lower`: the dead flag read
    /// with the name's place, from the one node read (a dead node's name
    /// never matches).
    #[inline]
    fn live_named(&self, id: u32, lower: &[u8]) -> bool {
        let node = self.nodes.get(id);
        node.flags & FLAG_DEAD == 0
            && self
                .names
                .slice_is(node.name_start, usize::from(node.name_len), lower)
    }

    /// [`Zone::find_node`] of `lower` with its hash made already:
    /// `hash` must be `NameHasher::process().hash(lower)` (the zone
    /// index's; the server's answer cache makes it for the query's name,
    /// `tern_wire::hash::HashedName`). Checked in debug builds.
    pub(crate) fn find_node_hashed(&self, lower: &[u8], hash: u64) -> Option<u32> {
        if self.index.is_empty() {
            return self.find_node(lower);
        }
        debug_assert_eq!(hash, self.index.hash(lower));
        self.index
            .find_where_hashed(hash, |id| self.live_named(id, lower))
    }

    /// [`Zone::find_node`], but finding a dead node too.
    pub(crate) fn find_any_node(&self, lower: &[u8]) -> Option<u32> {
        if self.index.is_empty() {
            // Names of NSEC3 records are not in the tree (as not indexed).
            return (0..self.nodes.end()).find(|&id| {
                self.node(id).flags & FLAG_NSEC3_OWNER == 0 && self.node_name_bytes(id) == lower
            });
        }
        self.index.find(lower, |id| self.node_name_bytes(id))
    }

    /// The node's lowercased name, as wire bytes.
    #[inline]
    pub(crate) fn node_name_bytes(&self, node: u32) -> &[u8] {
        node_name_bytes(&self.names, &self.nodes, node)
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
            if suffix.len() <= self.origin().len() {
                // The apex always exists; only a name outside could get here.
                return None;
            }
            suffix = suffix.parent()?;
            exact = false;
        }
    }

    /// The `*` child of a node, if it has one.
    pub(crate) fn wildcard_child(&self, node: u32) -> Option<u32> {
        if self.node(node).flags & FLAG_WILDCARD_CHILD == 0 {
            return None;
        }
        // The node made right after its parent is most often its `*`
        // child (a zone file names `*.name` before other names below
        // `name`, or names nothing else there): checked by its parent and
        // its first label, without hashing. Anything else (another child,
        // a dead or NSEC3 owner's node) is looked up as below.
        if let Some(next) = node.checked_add(1).filter(|&next| next < self.nodes.end()) {
            let candidate = self.node(next);
            if candidate.parent == node
                && candidate.flags & (FLAG_DEAD | FLAG_NSEC3_OWNER) == 0
                && self.node_name_bytes(next).starts_with(b"\x01*")
            {
                return Some(next);
            }
        }
        // `*.name` written to the stack: the node's name is valid and
        // lowercased, so the result needs no validation, only the length
        // check (a name of 254 or 255 octets has no `*` child).
        let name = self.node_name_bytes(node);
        let len = name.len() + 2;
        let mut buf = [0u8; MAX_NAME_LEN];
        let wildcard = buf.get_mut(..len)?;
        wildcard[..2].copy_from_slice(b"\x01*");
        wildcard[2..].copy_from_slice(name);
        self.find_node(wildcard)
    }

    /// The highest delegation point at or above a node that is a cut or
    /// below one.
    pub(crate) fn delegation_above(&self, mut node: u32) -> Option<u32> {
        // Parent ids strictly decrease, so this walk ends.
        loop {
            let flags = self.node(node).flags;
            if flags & FLAG_DELEG != 0 {
                return Some(node);
            }
            if flags & FLAG_NONAUTH == 0 {
                return None;
            }
            node = self.node(node).parent;
            if node == NO_PARENT {
                return None;
            }
        }
    }

    //--- RRsets

    /// The RRsets of a node, sorted by type.
    #[inline]
    pub(crate) fn rrsets(&self, node: u32) -> &[RRset] {
        let node = self.node(node);
        self.rrsets
            .slice(node.rrsets_start, usize::from(node.rrset_count))
    }

    /// The index (into `rrsets`) of a node's RRset of a type.
    pub(crate) fn rrset_index(&self, node: u32, rtype: RType) -> Option<u32> {
        let start = self.node(node).rrsets_start;
        self.rrsets(node)
            .binary_search_by(|set| set.rtype.cmp(&rtype))
            .ok()
            .map(|i| start + i as u32)
    }

    #[inline]
    pub(crate) fn rrset(&self, index: u32) -> &RRset {
        self.rrsets.get(index)
    }

    /// The RDATA of each record of an RRset.
    #[inline]
    pub(crate) fn rdata_iter<'z>(&'z self, set: &RRset) -> RdataIter<'z> {
        self.records_at(set.rdata_start, set.count)
    }

    /// `count` records from arena offset `start`.
    pub(crate) fn records_at(&self, start: u32, count: u16) -> RdataIter<'_> {
        if count == 0 {
            return RdataIter {
                arena: &[],
                base: start,
                pos: 0,
                left: 0,
            };
        }
        RdataIter {
            arena: self.rdata.tail(start),
            base: start,
            pos: 0,
            left: count,
        }
    }

    /// The arena from an offset of a record's RDATA (for glue targets).
    /// Inlined: a negative answer reads its SOA's RDATA with it, where a
    /// call cost more than the read.
    #[inline]
    pub(crate) fn rdata_at(&self, offset: u32) -> &[u8] {
        self.rdata.tail(offset)
    }

    /// The RRSIG records covering an RRset.
    pub(crate) fn sigs<'z>(&'z self, set: &RRset) -> RdataIter<'z> {
        self.records_at(set.sig_start, set.sig_count)
    }

    //--- Denial of existence

    /// The node owning the NSEC record that matches or covers `lower`: the
    /// last NSEC owner at or before it in canonical order (wrapping to the
    /// last one, which covers everything past the end of the chain).
    /// `None` if the zone has no NSEC records. Bound: two binary searches
    /// (the parts', then the part's), each step comparing two names label
    /// by label.
    pub(crate) fn nsec_covering(&self, lower: Name<'_>) -> Option<u32> {
        let sought = CanonicalName::of(lower);
        self.nsec
            .covering(|&node| sought.order_of(self.node_name(node)))
            .copied()
    }

    /// The glue of an RRset.
    pub(crate) fn glue(&self, set: &RRset) -> &[Glue] {
        if set.glue_count == 0 {
            return &[];
        }
        self.glue.slice(set.glue_start, usize::from(set.glue_count))
    }

    /// The octets of the zone's tables (not counting the name index), for
    /// telling when a patched zone carries too much garbage.
    pub fn table_bytes(&self) -> usize {
        self.names.size_bytes()
            + self.nodes.size_bytes()
            + self.rrsets.size_bytes()
            + self.rdata.size_bytes()
            + self.glue.size_bytes()
            + self.extra.size_bytes()
            + self.nsec3.as_ref().map_or(0, |chain| chain.table_bytes())
    }

    //--- Reading one name, for the update thread (docs/decisions/0019)

    /// The records the name `lower` (lowercased) owns, in
    /// [`Zone::next_record`]'s order and form (each RRset followed by the
    /// RRSIGs covering it, with its TTL); none for a name not in the tree
    /// (the owners of NSEC3 records are not in it: see [`Zone::has_nsec3`]).
    /// Bound: one look-up, then the name's records.
    pub fn owner_records(&self, lower: Name<'_>) -> Vec<ZoneRecord<'_>> {
        let Some(id) = self.find_node(lower.as_bytes()) else {
            return Vec::new();
        };
        let owner = self.node_name(id);
        let mut out = Vec::new();
        let mut push = |rtype, ttl, rdata| {
            out.push(ZoneRecord {
                owner,
                rtype,
                ttl,
                rdata,
            })
        };
        for set in self.rrsets(id) {
            if set.rtype == RType::RRSIG {
                if !self.sigs_attached(id, set) {
                    self.rdata_iter(set)
                        .for_each(|rdata| push(RType::RRSIG, set.ttl, rdata));
                }
                continue;
            }
            self.rdata_iter(set)
                .for_each(|rdata| push(set.rtype, set.ttl, rdata));
            self.sigs(set)
                .for_each(|rdata| push(RType::RRSIG, set.ttl, rdata));
        }
        out
    }

    /// The owners of the NSEC records nearest `lower` (lowercased) in
    /// canonical order: the last strictly before it and the first strictly
    /// after it (no wrapping), for the update thread's signing of a window
    /// of an NSEC zone. Bound: two binary searches.
    pub fn nsec_owners_around(&self, lower: Name<'_>) -> (Option<Name<'_>>, Option<Name<'_>>) {
        let sought = CanonicalName::of(lower);
        let (before, after) = self
            .nsec
            .neighbours(|&node| sought.order_of(self.node_name(node)));
        let name = |node: Option<&u32>| node.map(|&node| self.node_name(node));
        (name(before), name(after))
    }

    /// Whether a name strictly below `lower` (lowercased) owns records.
    /// Bound: one look-up (an empty non-terminal stays only while a name
    /// below it owns records).
    pub fn has_names_below(&self, lower: Name<'_>) -> bool {
        self.find_node(lower.as_bytes())
            .is_some_and(|id| self.extra.get(id).children > 0)
    }

    /// How many names lie directly below `lower` (lowercased), each
    /// owning records or with names below it (an empty non-terminal);
    /// `None` when `lower` is not in the zone's tree (it owns no records
    /// and no name below it does). [`Zone::patch`] keeps the count
    /// current. What tells whether an empty non-terminal vanishes when
    /// names below it are removed, without a pass over the names below.
    /// Bound: one look-up.
    pub fn child_count(&self, lower: Name<'_>) -> Option<u32> {
        self.find_node(lower.as_bytes())
            .map(|id| self.extra.get(id).children)
    }

    /// Calls `visit` with each name strictly below `lower` (lowercased)
    /// that owns records, until it returns true; whether it did. A signed
    /// zone gives them from its list of names ([`Zone::names_below`]: in
    /// canonical order, the owners of NSEC3 records, outside the tree, not
    /// among them); an unsigned one in the tables' order. Bound: in a
    /// signed zone, two binary searches and a step per name below `lower`
    /// visited; else a pass over every node (the update thread's rare
    /// exact check, [`Zone::has_names_below`] being the quick one).
    pub fn any_name_below(&self, lower: Name<'_>, mut visit: impl FnMut(Name<'_>) -> bool) -> bool {
        if let Some(mut below) = self.names_below(lower) {
            return below.any(|(name, owns_records)| owns_records && visit(name));
        }
        (0..self.nodes.end()).any(|id| {
            let node = self.node(id);
            if node.flags & FLAG_DEAD != 0 || node.rrset_count == 0 {
                return false;
            }
            let name = self.node_name(id);
            name.len() > lower.len() && name.ends_with(lower) && visit(name)
        })
    }

    /// Whether the zone holds NSEC3 records (kept outside the name tree:
    /// [`Zone::owner_records`] does not see their owners).
    pub fn has_nsec3(&self) -> bool {
        self.hashed_nodes > 0 || self.nsec3.is_some()
    }

    /// Octets of the tables that patches left unused; a zone built whole
    /// has none. [`Zone::patch`]'s caller rebuilds the zone when this
    /// grows past a share of [`Zone::table_bytes`] (tern-zones: a quarter,
    /// `MAX_GARBAGE_SHARE`).
    pub fn garbage_bytes(&self) -> usize {
        self.garbage
    }
}

/// The lowercased name of `node` in a names arena (a free function, so
/// that the name index can read names while the zone changes).
#[inline]
pub(crate) fn node_name_bytes<'n>(names: &'n Names, nodes: &Nodes, node: u32) -> &'n [u8] {
    let node = nodes.get(node);
    names.slice(node.name_start, usize::from(node.name_len))
}

impl core::fmt::Debug for Zone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("origin", &self.origin())
            .field("nodes", &self.node_count())
            .field("records", &self.record_count)
            .finish()
    }
}

//----------- ZoneRecord -----------------------------------------------------

/// One record of a zone, borrowed from it.
#[derive(Clone, Copy, Debug)]
pub struct ZoneRecord<'z> {
    /// The owner, lowercased.
    pub owner: Name<'z>,
    /// The type.
    pub rtype: RType,
    /// The TTL.
    pub ttl: u32,
    /// The RDATA, uncompressed.
    pub rdata: &'z [u8],
}

/// A position in a zone's records, for [`Zone::next_record`]; the default
/// is the start. Plain numbers: it outlives no borrow, so a transfer can
/// keep it across the waits between its messages.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordCursor {
    node: u32,
    /// The RRset within the node.
    set: u32,
    started: bool,
    /// Walking the RRset's RRSIGs rather than its records.
    sigs: bool,
    /// Arena offset and records left of the current range.
    pos: u32,
    left: u16,
}

//----------- canonical_cmp --------------------------------------------------

/// Canonical order (RFC 4034 section 6.1) of two lowercased names: labels
/// compared from the right as octet strings. Unlike `Name::canonical_cmp`
/// it lowercases nothing and keeps only label offsets on the stack.
pub(crate) fn canonical_cmp(a: Name<'_>, b: Name<'_>) -> Ordering {
    CanonicalName::of(a).cmp(&CanonicalName::of(b))
}

/// A lowercased name split into its labels, for [`canonical_cmp`]; a
/// search that compares one name with many (the NSEC order list's) splits
/// it once ([`CanonicalName::order_of`]).
pub(crate) struct CanonicalName<'n> {
    bytes: &'n [u8],
    starts: [u8; MAX_LABELS],
    count: usize,
}

impl<'n> CanonicalName<'n> {
    /// `name` split.
    #[inline]
    pub(crate) fn of(name: Name<'n>) -> Self {
        let mut starts = [0u8; MAX_LABELS];
        let count = label_starts(name.as_bytes(), &mut starts);
        CanonicalName {
            bytes: name.as_bytes(),
            starts,
            count,
        }
    }

    /// The canonical order of `other` against this name.
    #[inline]
    pub(crate) fn order_of(&self, other: Name<'_>) -> Ordering {
        CanonicalName::of(other).cmp(self)
    }

    /// The canonical order of this name against `other`.
    #[inline]
    fn cmp(&self, other: &CanonicalName<'_>) -> Ordering {
        let label = |bytes: &[u8], start: u8| -> std::ops::Range<usize> {
            let start = usize::from(start);
            start + 1..start + 1 + usize::from(bytes[start])
        };
        for (&x, &y) in self.starts[..self.count]
            .iter()
            .rev()
            .zip(other.starts[..other.count].iter().rev())
        {
            let ordering =
                self.bytes[label(self.bytes, x)].cmp(&other.bytes[label(other.bytes, y)]);
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        self.count.cmp(&other.count)
    }
}

/// The offsets of the non-root labels of a valid wire name.
fn label_starts(bytes: &[u8], out: &mut [u8; MAX_LABELS]) -> usize {
    let mut count = 0;
    let mut pos = 0;
    // A valid name is at most 255 octets with at most 127 non-root labels.
    while pos < bytes.len() && bytes[pos] != 0 && count < MAX_LABELS {
        out[count] = pos as u8;
        count += 1;
        pos += 1 + usize::from(bytes[pos]);
    }
    count
}

//----------- RdataIter ------------------------------------------------------

/// Iterator over the RDATA of one RRset: `arena` is the RDATA arena from
/// the RRset's first record (at offset `base`) to its chunk's end.
pub(crate) struct RdataIter<'z> {
    arena: &'z [u8],
    base: u32,
    pos: usize,
    left: u16,
}

impl<'z> RdataIter<'z> {
    /// The arena offset of the next record's RDATA.
    pub(crate) fn next_offset(&self) -> usize {
        self.base as usize + self.pos + 2
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

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use crate::ZoneBuilder;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// A zone of `example.` with an A record at each of `owners`, in
    /// that order.
    fn zone(owners: &[&str]) -> Zone {
        let origin = name("example.");
        let mut soa = b"\x00\x00".to_vec();
        soa.extend_from_slice(&[0; 20]);
        let mut b = ZoneBuilder::new(origin.as_name());
        b.insert(origin.as_name(), RType::SOA, RClass::IN, 1, &soa)
            .unwrap();
        for owner in owners {
            b.insert(
                name(owner).as_name(),
                RType::A,
                RClass::IN,
                1,
                &[192, 0, 2, 1],
            )
            .unwrap();
        }
        b.finish().unwrap()
    }

    #[test]
    fn wildcard_child_is_found_wherever_the_zone_put_it() {
        // `*` children made right after their parent, after a sibling,
        // long after, after another `*` child, and no `*` child at all.
        let zone = zone(&[
            "*.a.example.",
            "x.b.example.",
            "*.b.example.",
            "c.example.",
            "y.c.example.",
            "z.c.example.",
            "*.c.example.",
            "*.example.",
            "d.example.",
            "e.d.example.",
            // `*.h` right after `g`: not `g`'s.
            "h.example.",
            "g.example.",
            "*.h.example.",
            "*.g.example.",
        ]);
        let mut found = 0;
        for node in 0..zone.nodes.end() {
            let mut wildcard = b"\x01*".to_vec();
            wildcard.extend_from_slice(zone.node_name_bytes(node));
            let expected = zone.find_node(&wildcard);
            assert_eq!(
                zone.wildcard_child(node),
                expected,
                "{}",
                zone.node_name(node)
            );
            found += usize::from(expected.is_some());
        }
        assert_eq!(found, 6);
    }
}
