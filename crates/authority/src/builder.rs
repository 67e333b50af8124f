//! Building a [`Zone`] from records: insert, then the adjust pass.
//!
//! [`ZoneBuilder::insert`] checks each record on its own (class, type,
//! owner inside the zone, RDATA shape of the types answering depends on)
//! and appends it to flat arenas. [`ZoneBuilder::finish`] then does what
//! Knot's `zone/adjust.c` does, once, so that answering only follows ids:
//!
//! 1. (on insert) create a node for every owner and every ancestor up to
//!    the apex, with dense ids in creation order (a parent before its
//!    children); NSEC3 records and the RRSIGs covering them get nodes of
//!    their own outside the name index (their owners are hashes, which
//!    ordinary look-ups must not find: Knot keeps them in a separate tree);
//! 2. group the records by node, and a node's records by type and RDATA;
//!    drop exact duplicates; an RRset whose records disagree on the TTL
//!    takes the TTL of the record inserted last (Knot 3.2's loader: "TTL
//!    mismatch ... TTL set to");
//! 3. attach to every RRset the RRSIG records covering it (same owner,
//!    type covered = its type): RRSIGs sort by RDATA, whose first two
//!    octets are the type covered, so each RRset's signatures are one
//!    contiguous range of the node's RRSIG RRset;
//! 4. set flags in one forward pass: apex, delegation (NS below the apex),
//!    non-authoritative (below a delegation), wildcard child;
//! 5. reject what cannot be served: no SOA at the apex or more than one,
//!    CNAME beside other data, more than one CNAME or DNAME at a name;
//! 6. resolve the additional-section targets of NS, MX, SRV, SVCB and HTTPS
//!    records to node ids (a wildcard node when only a wildcard matches),
//!    required glue first (in-bailiwick NS targets below a cut, RFC 9471);
//! 7. index denial of existence: the NSEC owners in canonical order; and,
//!    when the apex has an NSEC3PARAM, the NSEC3 chain with those
//!    parameters sorted by hash, the hash of every name and the link that
//!    matches or covers `*.<name>` for every name (so a query hashes only
//!    names that do not exist).

use core::fmt;
use std::sync::Arc;

use tern_wire::name::{Name, NameBuf, MAX_LABELS, MAX_NAME_LEN};
use tern_wire::rdata::soa_minimum;
use tern_wire::types::{RClass, RType};

use crate::arena::{push_aligned, Arena, ArenaWriter, Work};
use crate::index::{NameIndex, ShardedIndex};
use crate::nsec3::{self, Chain, Link, Links, NodeHash, NodeHashes, Params};
use crate::zone::{
    canonical_cmp, node_name_bytes, Glue, GlueTable, Names, Node, NodeExtra, RRset, RRsets, Rdata,
    Zone, FLAG_APEX, FLAG_DEAD, FLAG_DELEG, FLAG_DNAME, FLAG_NONAUTH, FLAG_NSEC3_OWNER,
    FLAG_WILDCARD_CHILD, NO_PARENT, SMALL_ZONE_NODES,
};

/// The most records one RRset may hold: the RR count is a `u16` in the
/// database (a message could not carry more anyway).
const MAX_RRSET_RECORDS: usize = u16::MAX as usize;

/// The builder keeps its RDATA in blocks of `1 << 20` octets (1 MiB,
/// more than the longest RDATA), and its pending records in blocks of
/// `1 << 16` (1 MiB too): [`ZoneBuilder::finish`] frees each block as
/// soon as the nodes whose records it holds are written into the zone,
/// so that the records do not exist twice in full.
const RDATA_BLOCK_SHIFT: u32 = 20;
const PENDING_BLOCK_SHIFT: u32 = 16;

//----------- BuildError -----------------------------------------------------

/// Why a record or a zone was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The owner is not at or below the origin.
    OutOfZone {
        /// The owner, in presentation format.
        owner: String,
        /// The zone's origin.
        origin: String,
    },
    /// A class other than IN.
    Class {
        /// The record's class.
        class: RClass,
    },
    /// A meta or query-only type (OPT, ANY, AXFR...) cannot be stored.
    MetaType {
        /// The record's type.
        rtype: RType,
    },
    /// The RDATA does not have the shape its type requires.
    InvalidRdata {
        /// The owner.
        owner: String,
        /// The type.
        rtype: RType,
    },
    /// An SOA record whose owner is not the origin.
    SoaNotAtApex {
        /// The owner.
        owner: String,
    },
    /// The zone has no SOA record at its apex.
    MissingSoa {
        /// The zone's origin.
        origin: String,
    },
    /// More than one SOA record at the apex.
    MultipleSoa {
        /// The zone's origin.
        origin: String,
    },
    /// A CNAME beside other data (RFC 1034 section 3.6.2).
    CnameAndOtherData {
        /// The owner.
        owner: String,
    },
    /// More than one record in a CNAME or DNAME RRset (RFC 2181 section
    /// 10.1, RFC 6672 section 2.4).
    MultipleAliases {
        /// The owner.
        owner: String,
        /// CNAME or DNAME.
        rtype: RType,
    },
    /// An RRset with more records than a message can carry, or a zone
    /// larger than the database's 32-bit offsets.
    TooLarge {
        /// What overflowed.
        what: &'static str,
    },
    /// The apex NSEC3PARAM asks for more hash iterations than served.
    Nsec3Iterations {
        /// The iterations asked for.
        iterations: u16,
        /// The most accepted.
        max: u16,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::OutOfZone { owner, origin } => {
                write!(f, "record owner {owner} is outside the zone {origin}")
            }
            BuildError::Class { class } => {
                write!(
                    f,
                    "class {class} records cannot be served; only class IN is"
                )
            }
            BuildError::MetaType { rtype } => {
                write!(f, "type {rtype} is a meta type and cannot appear in a zone")
            }
            BuildError::InvalidRdata { owner, rtype } => {
                write!(f, "malformed {rtype} RDATA at {owner}")
            }
            BuildError::SoaNotAtApex { owner } => {
                write!(f, "SOA record at {owner}, which is not the zone apex")
            }
            BuildError::MissingSoa { origin } => {
                write!(f, "zone {origin} has no SOA record at its apex")
            }
            BuildError::MultipleSoa { origin } => {
                write!(f, "zone {origin} has more than one SOA record at its apex")
            }
            BuildError::CnameAndOtherData { owner } => {
                write!(
                    f,
                    "{owner} has a CNAME and other data (RFC 1034 section 3.6.2)"
                )
            }
            BuildError::MultipleAliases { owner, rtype } => {
                write!(f, "{owner} has more than one {rtype} record")
            }
            BuildError::TooLarge { what } => write!(f, "zone too large: {what}"),
            BuildError::Nsec3Iterations { iterations, max } => write!(
                f,
                "NSEC3PARAM asks for {iterations} hash iterations; at most {max} are served \
                 (RFC 9276 recommends 0)"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

//----------- Pending --------------------------------------------------------

/// A record waiting for `finish`: its node and a range of the builder's
/// RDATA arena. Its index in the pending list is its insertion order, for
/// "the last TTL wins". 16 octets.
#[derive(Clone, Copy)]
struct Pending {
    node: u32,
    rdata_start: u32,
    ttl: u32,
    rtype: RType,
    rdata_len: u16,
}

//----------- Blocks ---------------------------------------------------------

/// A table in insertion order, in blocks of `1 << SHIFT` entries; a run
/// appended never straddles two blocks. Only the last block grows (to a
/// whole block at most), so the table is never copied to grow, and each
/// block can be freed on its own.
struct Blocks<T, const SHIFT: u32> {
    blocks: Vec<Vec<T>>,
}

impl<T: Copy, const SHIFT: u32> Blocks<T, SHIFT> {
    const BLOCK: usize = 1 << SHIFT;

    fn new() -> Self {
        Blocks { blocks: Vec::new() }
    }

    /// The index the next entry would get if it fits in the last block;
    /// also the number of entries when no block was padded.
    fn end(&self) -> usize {
        match self.blocks.last() {
            Some(last) => ((self.blocks.len() - 1) << SHIFT) + last.len(),
            None => 0,
        }
    }

    /// Makes room for `additional` entries in the last block (within the
    /// block's size): a hint, as `Vec::reserve`.
    fn reserve(&mut self, additional: usize) {
        if self.blocks.is_empty() {
            self.blocks.push(Vec::new());
        }
        let last = self.blocks.last_mut().expect("a block was pushed");
        let want = (last.len() + additional).min(Self::BLOCK);
        last.reserve_exact(want.saturating_sub(last.len()));
    }

    /// Appends `run` (at most a block) within one block; its index.
    fn push_run(&mut self, run: &[T]) -> usize {
        debug_assert!(run.len() <= Self::BLOCK);
        match self.blocks.last() {
            Some(last) if last.len() + run.len() <= Self::BLOCK => {}
            // The first block grows with the table (a small zone's is
            // small), the next ones are whole from the start.
            Some(_) => self.blocks.push(Vec::with_capacity(Self::BLOCK)),
            None => self.blocks.push(Vec::new()),
        }
        let block = self.blocks.len() - 1;
        let last = &mut self.blocks[block];
        let needed = last.len() + run.len();
        if needed > last.capacity() {
            // Doubling up to a whole block, and no further.
            let want = (last.capacity() * 2).max(needed).min(Self::BLOCK);
            last.reserve_exact(want - last.len());
        }
        let start = (block << SHIFT) + last.len();
        last.extend_from_slice(run);
        start
    }

    /// The block holding index `index`.
    fn block_of(index: usize) -> usize {
        index >> SHIFT
    }

    /// `len` entries from `start` (one block's).
    fn slice(&self, start: usize, len: usize) -> &[T] {
        let at = start & (Self::BLOCK - 1);
        &self.blocks[start >> SHIFT][at..at + len]
    }

    /// Every entry with its index, in order.
    fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.blocks.iter().enumerate().flat_map(|(block, entries)| {
            entries
                .iter()
                .enumerate()
                .map(move |(at, entry)| ((block << SHIFT) + at, entry))
        })
    }

    /// Frees block `block`: its entries are never read again.
    fn free(&mut self, block: usize) {
        self.blocks[block] = Vec::new();
    }
}

//----------- ZoneBuilder ----------------------------------------------------

/// The names and nodes of a zone being built, and its name index (a flat
/// table: [`ZoneBuilder::finish`] makes the zone's sharded one).
struct Tables {
    names: Vec<u8>,
    nodes: Vec<Node>,
    /// Empty while the zone has at most [`SMALL_ZONE_NODES`] nodes.
    index: NameIndex,
}

/// The lowercased name of `node` in flat tables.
fn flat_name<'n>(names: &'n [u8], nodes: &[Node], node: u32) -> &'n [u8] {
    let node = &nodes[node as usize];
    let start = node.name_start as usize;
    &names[start..start + usize::from(node.name_len)]
}

impl Tables {
    fn name_bytes(&self, node: u32) -> &[u8] {
        flat_name(&self.names, &self.nodes, node)
    }

    /// The node named exactly `lower`, NSEC3 owners aside.
    fn find(&self, lower: &[u8]) -> Option<u32> {
        if self.index.is_empty() {
            return (0..self.nodes.len() as u32).find(|&id| {
                self.nodes[id as usize].flags & FLAG_NSEC3_OWNER == 0
                    && self.name_bytes(id) == lower
            });
        }
        self.index.find(lower, |id| self.name_bytes(id))
    }

    /// Appends a name to the names table, in one chunk; its offset.
    fn push_name(&mut self, name: Name<'_>) -> Result<u32, BuildError> {
        let start = push_aligned(&mut self.names, name.as_bytes(), Names::CHUNK)
            .ok_or(BuildError::TooLarge { what: "names" })?;
        offset(start, "names")
    }
}

/// Collects the records of one zone, then builds the immutable [`Zone`].
///
/// The zone's nodes are created as records arrive: a new owner costs one
/// hash look-up (and a node with its missing ancestors the first time),
/// a record of the same owner as the previous one (the usual order of a
/// zone file) only a comparison. Each record then takes 16 octets plus
/// its RDATA until [`ZoneBuilder::finish`] groups the records by node with
/// a counting sort, which keeps insertion order within a node, and sorts
/// each node's few records by type and RDATA: no sort over the whole zone.
/// The records are kept in blocks, each freed as soon as the zone's tables
/// hold its records: with records inserted owner by owner, the builder
/// holds little more than the zone at any time.
pub struct ZoneBuilder {
    /// The zone's origin, lowercased.
    origin: NameBuf,
    /// The names, nodes and name index, grown with the owners inserted.
    tables: Tables,
    /// The records, in insertion order (their index in it is the
    /// insertion order).
    pending: Blocks<Pending, PENDING_BLOCK_SHIFT>,
    rdata: Blocks<u8, RDATA_BLOCK_SHIFT>,
    /// The nodes of NSEC3 owners by name; they stay out of the index.
    hashed: NameIndex,
    /// The node of the last record inserted, and whether it was a hashed
    /// (NSEC3) one.
    last: Option<(u32, bool)>,
    /// The zone's RRsets being written owner by owner, when the records
    /// come so ([`ZoneBuilder::stream_owners`]).
    stream: Option<Box<Stream>>,
}

//----------- Stream ---------------------------------------------------------

/// The zone's RDATA and RRsets written as the records come, one owner at
/// a time ([`ZoneBuilder::stream_owners`]): the records of the owner being
/// inserted are collected apart, and written into the zone's tables (as
/// `finish` writes a node) as soon as a record of another owner comes.
/// An owner whose RRsets were written and that gets a record again has
/// them read back into the builder's blocks, with the records that follow,
/// and is written by `finish` like any node of a builder that does not
/// stream; the octets it first took stay unused in the tables (counted as
/// the zone's garbage).
struct Stream {
    rdata: ArenaWriter<u8, { Rdata::SHIFT }>,
    rrsets: ArenaWriter<RRset, { RRsets::SHIFT }>,
    /// Per node, the records written (0: none, or none yet).
    extra: Vec<NodeExtra>,
    /// The node whose records are being collected.
    open: Option<u32>,
    /// Its records (their `rdata_start` in `open_rdata`), in insertion
    /// order.
    open_records: Vec<Pending>,
    open_rdata: Vec<u8>,
    /// Nodes written, then given records again: theirs wait in the blocks.
    returned: hashbrown::HashSet<u32>,
    /// The TTL of a written node's RRSIG records where it is not the one
    /// its RRSIG RRset was given (that of the type its first signatures
    /// cover): what a read back gives them.
    rrsig_ttls: hashbrown::HashMap<u32, u32>,
    /// Octets of the tables written, then read back.
    garbage: usize,
    /// The first error writing a node: `finish` returns it.
    error: Option<BuildError>,
    scratch: Vec<u8>,
    sets: Vec<RRset>,
    order: Vec<u32>,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            rdata: ArenaWriter::new(),
            rrsets: ArenaWriter::new(),
            extra: Vec::new(),
            open: None,
            open_records: Vec::new(),
            open_rdata: Vec::new(),
            returned: hashbrown::HashSet::new(),
            rrsig_ttls: hashbrown::HashMap::new(),
            garbage: 0,
            error: None,
            scratch: Vec::new(),
            sets: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Writes the open node's records into the tables (its entry in
    /// `nodes`), and closes it. An error is kept for `finish`.
    fn close(&mut self, nodes: &mut Vec<Node>) {
        let Some(node) = self.open.take() else {
            return;
        };
        if let Err(err) = self.write(node, nodes) {
            self.error.get_or_insert(err);
        }
        self.open_records.clear();
        self.open_rdata.clear();
    }

    fn write(&mut self, node: u32, nodes: &mut Vec<Node>) -> Result<(), BuildError> {
        let Stream {
            rdata,
            rrsets,
            extra,
            open_records,
            open_rdata,
            rrsig_ttls,
            scratch,
            sets,
            order,
            ..
        } = self;
        order.clear();
        order.extend(0..open_records.len() as u32);
        let record_of = |index: u32| {
            let record = &open_records[index as usize];
            let start = record.rdata_start as usize;
            (
                record.rtype,
                record.ttl,
                &open_rdata[start..start + usize::from(record.rdata_len)],
            )
        };
        let count = node_rrsets(order, &record_of, scratch, sets, &mut |bytes| {
            let at = rdata.push_run(bytes).ok_or(BuildError::TooLarge {
                what: "octets in one RRset",
            })?;
            offset(at, "RDATA")
        })?;
        let rrsets_start = rrsets
            .push_run(sets)
            .ok_or(BuildError::TooLarge {
                what: "types at one name",
            })
            .and_then(|at| offset(at, "RRsets"))?;
        // The RRSIG records' own TTL (the first inserted's), where the
        // RRSIG RRset now has another.
        let rrsig_ttl = open_records
            .iter()
            .find(|record| record.rtype == RType::RRSIG)
            .map(|record| record.ttl);
        if let (Some(ttl), Some(set)) =
            (rrsig_ttl, sets.iter().find(|set| set.rtype == RType::RRSIG))
        {
            if set.ttl != ttl {
                rrsig_ttls.insert(node, ttl);
            }
        }
        if extra.len() <= node as usize {
            // As many as the nodes have room for (what the loader
            // reserved), not twice what is needed.
            let want = nodes.capacity().max(node as usize + 1);
            extra.reserve_exact(want - extra.len());
            extra.resize(node as usize + 1, NodeExtra::default());
        }
        extra[node as usize].records = count;
        let slot = &mut nodes[node as usize];
        slot.rrsets_start = rrsets_start;
        slot.rrset_count = sets.len() as u16;
        Ok(())
    }

    /// Whether `node`'s RRsets were written.
    fn written(&self, node: u32) -> bool {
        self.extra
            .get(node as usize)
            .is_some_and(|extra| extra.records > 0)
    }

    /// Reads the records written for `node` back, in `push` (each
    /// RRset's records with its TTL, the RRSIG records all with theirs),
    /// and marks the node returned: its written octets are garbage.
    fn read_back(
        &mut self,
        node: u32,
        nodes: &mut [Node],
        push: &mut impl FnMut(RType, u32, &[u8]) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        let slot = &mut nodes[node as usize];
        let (start, count) = (slot.rrsets_start as usize, usize::from(slot.rrset_count));
        slot.rrsets_start = 0;
        slot.rrset_count = 0;
        let total = core::mem::take(&mut self.extra[node as usize].records);
        self.returned.insert(node);
        let sets = &self.rrsets.tail(start)[..count];
        self.garbage += core::mem::size_of_val(sets);
        let plain: u32 = sets
            .iter()
            .filter(|set| set.rtype != RType::RRSIG)
            .map(|set| u32::from(set.count))
            .sum();
        for set in sets {
            let (records, ttl) = if set.rtype == RType::RRSIG {
                let ttl = self.rrsig_ttls.remove(&node).unwrap_or(set.ttl);
                (total.saturating_sub(plain) as usize, ttl)
            } else {
                (usize::from(set.count), set.ttl)
            };
            let mut bytes = self.rdata.tail(set.rdata_start as usize);
            for _ in 0..records {
                let len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
                push(set.rtype, ttl, &bytes[2..2 + len])?;
                self.garbage += 2 + len;
                bytes = &bytes[2 + len..];
            }
        }
        Ok(())
    }
}

impl ZoneBuilder {
    /// Starts a zone with the given origin.
    pub fn new(origin: Name<'_>) -> ZoneBuilder {
        let origin = NameBuf::from_name(origin.to_lower().as_name());
        let mut tables = Tables {
            names: Vec::new(),
            nodes: Vec::new(),
            index: NameIndex::default(),
        };
        let apex = ensure_node(&mut tables, origin.as_name()).expect("an empty zone has room");
        debug_assert_eq!(apex, 0);
        ZoneBuilder {
            origin,
            tables,
            pending: Blocks::new(),
            rdata: Blocks::new(),
            hashed: NameIndex::default(),
            last: None,
            stream: None,
        }
    }

    /// Writes each owner's RRsets into the zone's tables as soon as the
    /// next owner's first record comes, rather than keeping every record
    /// for [`ZoneBuilder::finish`]: for records handed over owner by
    /// owner (each owner's records together, as a signer hands them),
    /// so that they never exist twice, in the builder's blocks and in the
    /// zone. Records in any other order still make the same zone: an owner
    /// that comes back has its RRsets read back and written again by
    /// `finish`, the first ones left unused (garbage) in the tables. Call
    /// it before the first record; the records inserted before stay in the
    /// blocks.
    pub fn stream_owners(&mut self) {
        if self.stream.is_some() {
            return;
        }
        if self.pending.end() == 0 {
            // What `reserve` set aside for them is not used.
            self.pending = Blocks::new();
            self.rdata = Blocks::new();
        }
        self.stream = Some(Box::new(Stream::new()));
    }

    /// Makes room for `records` more records with `rdata` octets of RDATA
    /// in all (a hint: a loader that knows the zone's size saves the
    /// copies of growing tables).
    pub fn reserve(&mut self, records: usize, rdata: usize) {
        self.pending.reserve(records);
        self.rdata.reserve(rdata);
        // A small zone gets no index (see `SMALL_ZONE_NODES`), and its few
        // nodes no room to spare: what `finish` would give back is a hole
        // in the heap for every one of 100,000 small zones.
        if records <= SMALL_ZONE_NODES {
            return;
        }
        // Most zones have about one owner per record; what stays unused
        // is given back by `finish`.
        self.tables.nodes.reserve(records);
        let (names, nodes) = (&self.tables.names, &self.tables.nodes);
        self.tables
            .index
            .reserve(records, |id| flat_name(names, nodes, id));
    }

    /// Adds one record. The owner is lowercased; RDATA is kept as given
    /// (uncompressed wire form).
    pub fn insert(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), BuildError> {
        if class != RClass::IN {
            return Err(BuildError::Class { class });
        }
        check_record(self.origin.as_name(), owner, rtype, rdata)?;
        let rdata_len =
            u16::try_from(rdata.len()).map_err(|_| BuildError::TooLarge { what: "RDATA" })?;
        let hashed = is_nsec3_data(rtype, rdata);
        let node = match self.last {
            Some((node, last_hashed))
                if last_hashed == hashed
                    && self
                        .tables
                        .name_bytes(node)
                        .eq_ignore_ascii_case(owner.as_bytes()) =>
            {
                node
            }
            _ => {
                let mut buffer = [0u8; MAX_NAME_LEN];
                let lower = &mut buffer[..owner.len()];
                lower.copy_from_slice(owner.as_bytes());
                lower.make_ascii_lowercase();
                let name = Name::from_wire(lower).expect("a lowercased name stays valid");
                let node = if hashed {
                    self.hashed_node(name)?
                } else {
                    ensure_node(&mut self.tables, name)?
                };
                self.last = Some((node, hashed));
                node
            }
        };
        if let Some(stream) = &mut self.stream {
            if stream.open != Some(node) {
                stream.close(&mut self.tables.nodes);
                if stream.written(node) {
                    // An owner that comes back: its records wait in the
                    // blocks with the ones that follow.
                    let (pending, blocks) = (&mut self.pending, &mut self.rdata);
                    stream.read_back(node, &mut self.tables.nodes, &mut |rtype, ttl, rdata| {
                        push_pending(pending, blocks, node, rtype, ttl, rdata)
                    })?;
                } else if !stream.returned.contains(&node) {
                    stream.open = Some(node);
                }
            }
            if stream.open == Some(node) {
                let rdata_start = offset(stream.open_rdata.len(), "RDATA")?;
                stream.open_rdata.extend_from_slice(rdata);
                stream.open_records.push(Pending {
                    node,
                    rdata_start,
                    ttl,
                    rtype,
                    rdata_len,
                });
                return Ok(());
            }
        }
        push_pending(&mut self.pending, &mut self.rdata, node, rtype, ttl, rdata)
    }

    /// The node of the NSEC3 owner `name` (lowercase), created the first
    /// time.
    fn hashed_node(&mut self, name: Name<'_>) -> Result<u32, BuildError> {
        let (names, nodes) = (&self.tables.names, &self.tables.nodes);
        if let Some(node) = self
            .hashed
            .find(name.as_bytes(), |id| flat_name(names, nodes, id))
        {
            return Ok(node);
        }
        let id = offset(self.tables.nodes.len(), "nodes")?;
        let name_start = self.tables.push_name(name)?;
        self.tables.nodes.push(Node {
            name_start,
            name_len: name.len() as u8,
            flags: FLAG_NSEC3_OWNER,
            rrset_count: 0,
            rrsets_start: 0,
            parent: 0,
        });
        let (names, nodes) = (&self.tables.names, &self.tables.nodes);
        self.hashed
            .insert(name.as_bytes(), id, |other| flat_name(names, nodes, other));
        Ok(id)
    }

    /// Runs the adjust pass and returns the immutable zone.
    pub fn finish(self) -> Result<Zone, BuildError> {
        let ZoneBuilder {
            tables,
            mut pending,
            mut rdata,
            hashed,
            stream,
            ..
        } = self;
        let Tables {
            names,
            mut nodes,
            index,
        } = tables;
        // The insertion indexes are done with.
        drop((index, hashed));
        let node_count = nodes.len();
        // The zone's RDATA and RRsets, written straight into their chunks:
        // those of the owners streamed already, then the rest from the
        // blocks.
        let (mut zone_rdata, mut rrsets, mut extra, garbage) = match stream {
            Some(mut stream) => {
                stream.close(&mut nodes);
                if let Some(err) = stream.error {
                    return Err(err);
                }
                let Stream {
                    rdata,
                    rrsets,
                    mut extra,
                    garbage,
                    ..
                } = *stream;
                extra.resize(node_count, NodeExtra::default());
                (rdata, rrsets, extra, garbage)
            }
            None => (
                ArenaWriter::new(),
                ArenaWriter::new(),
                vec![NodeExtra::default(); node_count],
                0,
            ),
        };

        // Records grouped by node (a counting sort: insertion order kept
        // within a node). After the fill, `ends[node]` is where the
        // node's records end and `ends[node - 1]` where they start. And
        // the last node whose records each block holds: the block is
        // freed once that node is written.
        let mut ends = vec![0u32; if pending.end() == 0 { 0 } else { node_count }];
        let mut pending_last = vec![0u32; pending.blocks.len()];
        let mut rdata_last = vec![0u32; rdata.blocks.len()];
        for (index, record) in pending.iter() {
            ends[record.node as usize] += 1;
            let last = &mut pending_last[Blocks::<Pending, PENDING_BLOCK_SHIFT>::block_of(index)];
            *last = (*last).max(record.node);
            let block = Blocks::<u8, RDATA_BLOCK_SHIFT>::block_of(record.rdata_start as usize);
            rdata_last[block] = rdata_last[block].max(record.node);
        }
        let mut total = 0;
        for end in &mut ends {
            let count = *end;
            *end = total;
            total += count;
        }
        let mut order = vec![0u32; total as usize];
        for (index, record) in pending.iter() {
            let cursor = &mut ends[record.node as usize];
            order[*cursor as usize] = index as u32;
            *cursor += 1;
        }
        // (last node, an RDATA block, block), in the order they are freed.
        let mut frees: Vec<(u32, bool, u32)> = pending_last
            .iter()
            .enumerate()
            .map(|(block, &last)| (last, false, block as u32))
            .chain(
                rdata_last
                    .iter()
                    .enumerate()
                    .map(|(block, &last)| (last, true, block as u32)),
            )
            .collect();
        frees.sort_unstable();
        drop((pending_last, rdata_last));
        let mut next_free = 0;

        let mut scratch = Vec::new();
        let mut sets = Vec::new();
        let mut start = 0;
        for (node, &end) in ends.iter().enumerate() {
            let end = end as usize;
            let records = &mut order[start..end];
            start = end;
            if records.is_empty() {
                continue; // an empty non-terminal
            }
            let record_of = |index: u32| {
                let record = pending.slice(index as usize, 1)[0];
                (
                    record.rtype,
                    record.ttl,
                    rdata.slice(record.rdata_start as usize, usize::from(record.rdata_len)),
                )
            };
            let count = node_rrsets(records, &record_of, &mut scratch, &mut sets, &mut |bytes| {
                let at = zone_rdata.push_run(bytes).ok_or(BuildError::TooLarge {
                    what: "octets in one RRset",
                })?;
                offset(at, "RDATA")
            })?;
            extra[node].records = count;
            let rrsets_start = rrsets
                .push_run(&sets)
                .ok_or(BuildError::TooLarge {
                    what: "types at one name",
                })
                .and_then(|at| offset(at, "RRsets"))?;
            let slot = &mut nodes[node];
            slot.rrsets_start = rrsets_start;
            slot.rrset_count = sets.len() as u16;
            // The blocks whose records are all written now.
            while let Some(&(last, is_rdata, block)) = frees.get(next_free) {
                if last as usize > node {
                    break;
                }
                if is_rdata {
                    rdata.free(block as usize);
                } else {
                    pending.free(block as usize);
                }
                next_free += 1;
            }
        }
        // The insertion-order tables are done with: free them before the
        // adjust steps allocate.
        drop((order, ends, pending, rdata, scratch, sets, frees));
        let record_count = extra.iter().map(|extra| extra.records as usize).sum();
        let mut hashed_nodes = 0;
        for id in 1..node_count {
            if nodes[id].flags & FLAG_NSEC3_OWNER != 0 {
                hashed_nodes += 1;
            } else {
                extra[nodes[id].parent as usize].children += 1;
            }
        }

        // Each flat table is freed as soon as it is in chunks.
        let names = Arena::from_vec_owned(names);
        let nodes = Arena::from_vec_owned(nodes);
        let extra = Arena::from_vec_owned(extra);
        let mut zone = Zone {
            names,
            nodes,
            rrsets: rrsets.finish(),
            rdata: zone_rdata.finish(),
            glue: Arena::default(),
            extra,
            index: ShardedIndex::default(),
            soa: 0,
            negative_ttl: 0,
            soa_plan: None,
            record_count,
            signed: false,
            expired: false,
            nsec: Default::default(),
            nsec3: None,
            targets: Default::default(),
            order: Default::default(),
            hashed_nodes,
            dead_nodes: 0,
            garbage,
            lineage: Default::default(),
        };
        if node_count > SMALL_ZONE_NODES {
            zone.index = index_of(&zone);
        }
        set_flags(&mut zone);
        check(&mut zone)?;
        resolve_glue(&mut zone)?;
        index_nsec(&mut zone);
        zone.nsec3 = index_nsec3(&zone)?.map(Arc::new);
        Ok(zone)
    }
}

/// The sharded name index of a zone's nodes (NSEC3 owners and dead nodes
/// aside).
pub(crate) fn index_of(zone: &Zone) -> ShardedIndex {
    let ids = (0..zone.nodes.end()).filter(|&id| zone.node(id).flags & FLAG_NSEC3_OWNER == 0);
    ShardedIndex::build(ids, |id| node_name_bytes(&zone.names, &zone.nodes, id))
}

/// The checks of one record on its own, whatever its class: type, owner
/// inside the zone, RDATA shape, SOA only at the apex.
pub(crate) fn check_record(
    origin: Name<'_>,
    owner: Name<'_>,
    rtype: RType,
    rdata: &[u8],
) -> Result<(), BuildError> {
    if rtype.is_meta() {
        return Err(BuildError::MetaType { rtype });
    }
    if !owner.ends_with(origin) {
        return Err(BuildError::OutOfZone {
            owner: owner.to_string(),
            origin: origin.to_string(),
        });
    }
    if !rdata_is_valid(rtype, rdata) {
        return Err(BuildError::InvalidRdata {
            owner: owner.to_string(),
            rtype,
        });
    }
    if rtype == RType::SOA && owner.len() != origin.len() {
        return Err(BuildError::SoaNotAtApex {
            owner: owner.to_string(),
        });
    }
    if rdata.len() > usize::from(u16::MAX) {
        return Err(BuildError::TooLarge { what: "RDATA" });
    }
    Ok(())
}

/// Writes one node's RRsets: sorts `order` (record indexes; an index is
/// the record's insertion order) by type, then RDATA, then insertion
/// order; writes each RRset's RDATA through `push_rdata` (which returns
/// its arena offset) and its entry into `sets` (cleared first), with
/// the RRSIGs attached; returns the records kept. Exact duplicates are
/// dropped; an RRset's TTL is that of the record inserted first (RFC 2181
/// section 5.2 wants one). Records read from a zone file come here with
/// one TTL per RRset already, the one BIND reads from the file
/// (`tern_zone::ttl`, docs/decisions/0002: the first of the last group of
/// consecutive records), so this rule only decides for records built
/// otherwise (transfers, tests).
pub(crate) fn node_rrsets<'r>(
    order: &mut [u32],
    record_of: &impl Fn(u32) -> (RType, u32, &'r [u8]),
    scratch: &mut Vec<u8>,
    sets: &mut Vec<RRset>,
    push_rdata: &mut impl FnMut(&[u8]) -> Result<u32, BuildError>,
) -> Result<u32, BuildError> {
    sets.clear();
    order.sort_unstable_by(|&a, &b| {
        let (a_type, _, a_rdata) = record_of(a);
        let (b_type, _, b_rdata) = record_of(b);
        a_type
            .cmp(&b_type)
            .then_with(|| a_rdata.cmp(b_rdata))
            .then(a.cmp(&b))
    });
    // (arena offset of the first record, record count, type covered)
    let mut groups: Vec<(u32, u16, RType)> = Vec::new();
    let mut total = 0u32;
    let mut first = 0;
    while first < order.len() {
        let rtype = record_of(order[first]).0;
        let mut type_end = first;
        while type_end < order.len() && record_of(order[type_end]).0 == rtype {
            type_end += 1;
        }
        scratch.clear();
        let mut count = 0usize;
        let mut first_inserted = u32::MAX;
        let mut ttl = 0;
        let mut previous: Option<&[u8]> = None;
        for &index in &order[first..type_end] {
            let (_, record_ttl, rdata) = record_of(index);
            if index <= first_inserted {
                first_inserted = index;
                ttl = record_ttl;
            }
            if previous == Some(rdata) {
                continue; // exact duplicate
            }
            previous = Some(rdata);
            scratch.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            scratch.extend_from_slice(rdata);
            count += 1;
        }
        if count > MAX_RRSET_RECORDS {
            return Err(BuildError::TooLarge {
                what: "records in one RRset",
            });
        }
        let rdata_start = push_rdata(scratch)?;
        if rtype == RType::RRSIG {
            signature_groups(scratch, rdata_start, count, &mut groups);
        }
        total += count as u32;
        sets.push(RRset {
            rtype,
            count: count as u16,
            ttl,
            rdata_start,
            ..RRset::default()
        });
        first = type_end;
    }
    if sets.len() > usize::from(u16::MAX) {
        return Err(BuildError::TooLarge {
            what: "types at one name",
        });
    }
    attach_signatures(sets, &groups);
    Ok(total)
}

/// The RRSIG records of one RRset (`bytes`, written at arena offset
/// `start`) in groups of one type covered: (offset, count, type).
fn signature_groups(bytes: &[u8], start: u32, count: usize, groups: &mut Vec<(u32, u16, RType)>) {
    let mut pos = 0usize;
    for _ in 0..count {
        let len = usize::from(u16::from_be_bytes([bytes[pos], bytes[pos + 1]]));
        let rdata = &bytes[pos + 2..pos + 2 + len];
        // RRSIG RDATA is at least 18 octets only in valid zones; a short
        // one covers nothing.
        let covered = match rdata {
            [high, low, ..] => RType(u16::from_be_bytes([*high, *low])),
            _ => RType(0),
        };
        match groups.last_mut() {
            Some((_, count, current)) if *current == covered => *count += 1,
            _ => groups.push((start + pos as u32, 1, covered)),
        }
        pos += 2 + len;
    }
}

/// Appends one record of `node` to the builder's blocks.
fn push_pending(
    pending: &mut Blocks<Pending, PENDING_BLOCK_SHIFT>,
    blocks: &mut Blocks<u8, RDATA_BLOCK_SHIFT>,
    node: u32,
    rtype: RType,
    ttl: u32,
    rdata: &[u8],
) -> Result<(), BuildError> {
    let rdata_len =
        u16::try_from(rdata.len()).map_err(|_| BuildError::TooLarge { what: "RDATA" })?;
    offset(pending.end(), "records")?;
    let rdata_start = offset(blocks.push_run(rdata), "RDATA")?;
    pending.push_run(&[Pending {
        node,
        rdata_start,
        ttl,
        rtype,
        rdata_len,
    }]);
    Ok(())
}

impl fmt::Debug for ZoneBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZoneBuilder")
            .field("origin", &self.origin)
            .field("records", &self.pending.end())
            .finish()
    }
}

//----------- Zone::expired -------------------------------------------------

impl Zone {
    /// The stand-in for a secondary zone that expired: its origin and SOA
    /// (so that it is found as the zone of its names) and nothing else;
    /// every query for it is answered SERVFAIL.
    pub fn expired(&self) -> Zone {
        let soa = self.soa_record();
        let mut builder = ZoneBuilder::new(self.origin());
        // The SOA was valid in this zone: it is valid in the stand-in.
        let mut zone = match builder.insert(
            self.origin(),
            RType::SOA,
            tern_wire::types::RClass::IN,
            soa.ttl,
            soa.rdata,
        ) {
            Ok(()) => builder.finish().ok(),
            Err(_) => None,
        }
        .unwrap_or_else(|| self.clone());
        zone.expired = true;
        zone
    }
}

//----------- Adjust steps ---------------------------------------------------

/// A `u32` offset, or the error saying which arena outgrew it.
pub(crate) fn offset(len: usize, what: &'static str) -> Result<u32, BuildError> {
    u32::try_from(len).map_err(|_| BuildError::TooLarge { what })
}

/// The id of the node named `name` (lowercase, inside the zone), created
/// with its missing ancestors. Bound: at most [`MAX_LABELS`] ancestors.
fn ensure_node(tables: &mut Tables, name: Name<'_>) -> Result<u32, BuildError> {
    // Collect the missing suffixes, deepest first, then create them from
    // the top so that every parent id precedes its children's.
    let mut missing = [name; MAX_LABELS];
    let mut count = 0;
    let mut parent = NO_PARENT;
    let mut suffix = Some(name);
    while let Some(current) = suffix {
        if let Some(found) = tables.find(current.as_bytes()) {
            parent = found;
            break;
        }
        missing[count] = current;
        count += 1;
        if tables.nodes.is_empty() {
            break; // the apex itself is being created
        }
        suffix = current.parent();
    }
    for current in missing[..count].iter().rev() {
        let id = offset(tables.nodes.len(), "nodes")?;
        let name_start = tables.push_name(*current)?;
        tables.nodes.push(Node {
            name_start,
            name_len: current.len() as u8,
            flags: 0,
            rrset_count: 0,
            rrsets_start: 0,
            parent,
        });
        if !tables.index.is_empty() {
            let (names, nodes) = (&tables.names, &tables.nodes);
            tables.index.insert(current.as_bytes(), id, |other| {
                flat_name(names, nodes, other)
            });
        } else if tables.nodes.len() > SMALL_ZONE_NODES {
            index_nodes(tables);
        }
        parent = id;
    }
    Ok(parent)
}

/// Builds the name index of a zone that has just outgrown
/// [`SMALL_ZONE_NODES`]: every node so far but the owners of NSEC3
/// records (which look-ups must not find).
fn index_nodes(tables: &mut Tables) {
    let (names, nodes) = (&tables.names, &tables.nodes);
    tables
        .index
        .reserve(nodes.len(), |id| flat_name(names, nodes, id));
    for (id, node) in nodes.iter().enumerate() {
        if node.flags & FLAG_NSEC3_OWNER == 0 {
            let name = flat_name(names, nodes, id as u32);
            tables
                .index
                .insert(name, id as u32, |other| flat_name(names, nodes, other));
        }
    }
}

/// Gives each RRset of one node its range of covering RRSIGs (`groups`,
/// from [`signature_groups`]), and trims the RRSIG RRset itself to the
/// signatures of the lowest type covered, which is what a query for type
/// RRSIG gets (as from Knot 3.2, which answers RRSIG like ANY: one RRset),
/// written with that type's TTL.
fn attach_signatures(sets: &mut [RRset], groups: &[(u32, u16, RType)]) {
    let Some(rrsig) = sets.iter().position(|set| set.rtype == RType::RRSIG) else {
        return;
    };
    let all = sets[rrsig];
    for &(start, count, covered) in groups {
        if let Some(set) = sets.iter_mut().find(|set| set.rtype == covered) {
            set.sig_start = start;
            set.sig_count = count;
        }
    }
    if let Some(&(start, count, covered)) = groups.first() {
        let ttl = sets
            .iter()
            .find(|set| set.rtype == covered)
            .map_or(all.ttl, |set| set.ttl);
        let set = &mut sets[rrsig];
        set.rdata_start = start;
        set.count = count;
        set.ttl = ttl;
        set.sig_count = 0;
    }
}

/// The NSEC owners of the tree, in canonical order, and in a signed zone
/// the order of every name (`crate::order`), whose NSEC owners they are.
fn index_nsec(zone: &mut Zone) {
    let (order, nsec) = crate::order::build(zone);
    zone.order = order;
    if let Some(owners) = nsec {
        zone.nsec = crate::parts::Parts::from_sorted(&owners);
        return;
    }
    let mut owners: Vec<u32> = (0..zone.nodes.end())
        .filter(|&node| {
            zone.node(node).flags & (FLAG_NSEC3_OWNER | FLAG_DEAD) == 0
                && zone.rrset_index(node, RType::NSEC).is_some()
        })
        .collect();
    owners.sort_by(|&a, &b| canonical_cmp(zone.node_name(a), zone.node_name(b)));
    zone.nsec = crate::parts::Parts::from_sorted(&owners);
}

/// The NSEC3 chain with the parameters of the apex NSEC3PARAM (the first
/// record, if there are several, as Knot does), and per node the link that
/// matches its name and the one that matches or covers `*.<name>`. NSEC3
/// records with other parameters, or whose owner is not a base32hex hash,
/// stay out of the chain (`tern check` warns about them). Nodes below a
/// delegation get no links: no proof is ever about them.
fn index_nsec3(zone: &Zone) -> Result<Option<Chain>, BuildError> {
    let Some(param) = zone.rrset_index(0, RType::NSEC3PARAM) else {
        return Ok(None);
    };
    let Some((params, _, _)) = zone
        .rdata_iter(zone.rrset(param))
        .next()
        .and_then(Params::parse)
    else {
        return Ok(None);
    };
    if params.algorithm != nsec3::HASH_SHA1 {
        return Ok(None);
    }
    if params.iterations > nsec3::MAX_ITERATIONS {
        return Err(BuildError::Nsec3Iterations {
            iterations: params.iterations,
            max: nsec3::MAX_ITERATIONS,
        });
    }
    let node_count = zone.nodes.end();
    let mut links = Vec::new();
    for node in 0..node_count {
        if zone.node(node).flags & FLAG_NSEC3_OWNER == 0 {
            continue;
        }
        let Some(set) = zone.rrset_index(node, RType::NSEC3) else {
            continue;
        };
        if !zone
            .rdata_iter(zone.rrset(set))
            .any(|rdata| params.matches(rdata))
        {
            continue;
        }
        let Some(hash) = nsec3::decode_label(zone.node_name(node).first_label()) else {
            continue;
        };
        links.push(Link { hash, node, set });
    }
    links.sort_by_key(|link| link.hash);
    links.dedup_by(|a, b| a.hash == b.hash);
    let mut hashes = vec![NodeHash::default(); node_count as usize];
    for node in 0..node_count {
        if zone.node(node).flags & (FLAG_NSEC3_OWNER | FLAG_NONAUTH | FLAG_DEAD) != 0 {
            continue;
        }
        hashes[node as usize] = NodeHash::of(&params, zone.node_name(node));
    }
    let chain = Chain {
        params,
        links: Links::from_sorted(&links),
        hashes: NodeHashes::from_vec_owned(hashes),
    };
    Ok(Some(chain))
}

/// The apex, delegation, non-authoritative and DNAME flags a node gets
/// from its parent's flags and its own RRsets (the wildcard-child flag is
/// its children's to set).
pub(crate) fn own_flags(zone: &Zone, id: u32) -> u8 {
    let dname = if zone.rrset_index(id, RType::DNAME).is_some() {
        FLAG_DNAME
    } else {
        0
    };
    let parent = zone.node(id).parent;
    if parent == NO_PARENT {
        return FLAG_APEX | dname;
    }
    let parent_flags = zone.node(parent).flags;
    dname
        | if parent_flags & (FLAG_DELEG | FLAG_NONAUTH) != 0 {
            FLAG_NONAUTH
        } else if zone.rrset_index(id, RType::NS).is_some() {
            FLAG_DELEG
        } else {
            0
        }
}

/// Apex, delegation, non-authoritative, DNAME and wildcard-child flags. Parents
/// precede children in id order, so one forward pass sees final parent
/// flags.
fn set_flags(zone: &mut Zone) {
    // The zone's chunks are its own yet: nothing is copied.
    let mut work = Work::default();
    for id in 0..zone.nodes.end() {
        let node = *zone.node(id);
        if node.flags & FLAG_NSEC3_OWNER != 0 {
            continue;
        }
        let flags = own_flags(zone, id);
        if node.parent != NO_PARENT && zone.node_name(id).is_wildcard() {
            zone.nodes.get_mut(node.parent, &mut work).flags |= FLAG_WILDCARD_CHILD;
        }
        zone.nodes.get_mut(id, &mut work).flags |= flags;
    }
}

/// The zone-level checks, and the SOA facts answering needs.
fn check(zone: &mut Zone) -> Result<(), BuildError> {
    check_apex(zone)?;
    for node in 0..zone.nodes.end() {
        check_node(zone, node)?;
    }
    Ok(())
}

/// The apex's SOA: there, and one; the SOA facts answering needs.
pub(crate) fn check_apex(zone: &mut Zone) -> Result<(), BuildError> {
    let origin = || zone.origin().to_string();
    let soa = zone
        .rrset_index(0, RType::SOA)
        .ok_or_else(|| BuildError::MissingSoa { origin: origin() })?;
    let set = *zone.rrset(soa);
    if set.count != 1 {
        return Err(BuildError::MultipleSoa { origin: origin() });
    }
    let minimum = zone
        .rdata_iter(&set)
        .next()
        .and_then(soa_minimum)
        .ok_or_else(|| BuildError::InvalidRdata {
            owner: origin(),
            rtype: RType::SOA,
        })?;
    zone.soa = soa;
    zone.negative_ttl = set.ttl.min(minimum);
    zone.soa_plan = zone
        .rdata_iter(&set)
        .next()
        .and_then(|rdata| tern_wire::build::Precompressed::plan(zone.origin(), RType::SOA, rdata));
    zone.signed = set.sig_count > 0;
    Ok(())
}

/// A node's aliases: at most one CNAME or DNAME, and a CNAME beside no
/// other data.
pub(crate) fn check_node(zone: &Zone, node: u32) -> Result<(), BuildError> {
    let sets = zone.rrsets(node);
    let owner = || zone.node_name(node).to_string();
    for set in sets {
        if (set.rtype == RType::CNAME || set.rtype == RType::DNAME) && set.count > 1 {
            return Err(BuildError::MultipleAliases {
                owner: owner(),
                rtype: set.rtype,
            });
        }
    }
    let has_cname = sets.iter().any(|set| set.rtype == RType::CNAME);
    // RFC 4035 section 2.5 allows RRSIG and NSEC beside a CNAME.
    let other = sets
        .iter()
        .any(|set| !matches!(set.rtype, RType::CNAME | RType::RRSIG | RType::NSEC));
    if has_cname && other {
        return Err(BuildError::CnameAndOtherData { owner: owner() });
    }
    Ok(())
}

/// The types whose targets get additional-section records, and for each
/// target type the RRsets copied (Knot 3.2 `put_additional`: A and AAAA,
/// plus the record's own type for SVCB and HTTPS, RFC 9460 section 4.1).
pub(crate) fn additional_types(rtype: RType) -> &'static [RType] {
    match rtype {
        RType::NS | RType::MX | RType::SRV => &[RType::A, RType::AAAA],
        RType::SVCB => &[RType::A, RType::AAAA, RType::SVCB],
        RType::HTTPS => &[RType::A, RType::AAAA, RType::HTTPS],
        _ => &[],
    }
}

/// The additional-section targets of the RRset at `index` (of `node`):
/// into `out`, required glue (in-bailiwick NS targets below a cut, RFC
/// 9471) first. Each target resolves to a node (exact, or the wildcard
/// that would answer for it) that has something to add.
pub(crate) fn glue_of(
    zone: &Zone,
    node: u32,
    index: u32,
    out: &mut Vec<Glue>,
) -> Result<(), BuildError> {
    out.clear();
    let set = *zone.rrset(index);
    let types = additional_types(set.rtype);
    if types.is_empty() {
        return Ok(());
    }
    let owner = zone.node_name(node);
    let mut optional_from = 0;
    let mut records = zone.rdata_iter(&set);
    loop {
        let rdata_offset = records.next_offset();
        let Some(rdata) = records.next() else { break };
        let Some((at, target)) = tern_wire::rdata::additional_target(set.rtype, rdata) else {
            continue;
        };
        let Some(target_node) = answering_node(zone, target.to_lower().as_name()) else {
            continue;
        };
        if !types
            .iter()
            .any(|&t| zone.rrset_index(target_node, t).is_some())
        {
            continue;
        }
        let glue = Glue {
            node: target_node,
            target: offset(rdata_offset + at, "RDATA")?,
        };
        let required = set.rtype == RType::NS
            && zone.node(target_node).flags & (FLAG_DELEG | FLAG_NONAUTH) != 0
            && target.ends_with(owner);
        if required {
            out.insert(optional_from, glue);
            optional_from += 1;
        } else {
            out.push(glue);
        }
    }
    if out.len() > usize::from(u16::MAX) {
        return Err(BuildError::TooLarge { what: "glue" });
    }
    Ok(())
}

/// Whether a node owns an RRset with additional-section targets.
pub(crate) fn is_glue_source(zone: &Zone, node: u32) -> bool {
    zone.rrsets(node)
        .iter()
        .any(|set| !additional_types(set.rtype).is_empty())
}

/// Resolves every additional-section target to a node.
fn resolve_glue(zone: &mut Zone) -> Result<(), BuildError> {
    let mut table: Vec<Glue> = Vec::new();
    let mut sources = Vec::new();
    let mut glue = Vec::new();
    let mut work = Work::default();
    for node in 0..zone.nodes.end() {
        if !is_glue_source(zone, node) {
            continue;
        }
        sources.push(node);
        let first = zone.node(node).rrsets_start;
        for index in first..first + u32::from(zone.node(node).rrset_count) {
            glue_of(zone, node, index, &mut glue)?;
            if glue.is_empty() {
                continue;
            }
            let start = push_aligned(&mut table, &glue, GlueTable::CHUNK)
                .ok_or(BuildError::TooLarge { what: "glue" })?;
            let set = zone.rrsets.get_mut(index, &mut work);
            set.glue_start = offset(start, "glue")?;
            set.glue_count = glue.len() as u16;
        }
    }
    zone.glue = Arena::from_vec(&table);
    zone.targets = crate::targets::index(zone, sources.iter());
    Ok(())
}

/// The node whose data a name would be answered from: the name itself, or
/// the wildcard child of its closest encloser (RFC 4592).
fn answering_node(zone: &Zone, lower: Name<'_>) -> Option<u32> {
    let (node, exact) = zone.closest_encloser(lower)?;
    if exact {
        Some(node)
    } else {
        zone.wildcard_child(node)
    }
}

/// Whether the RDATA has the shape that answering relies on. Other types
/// are opaque and always accepted.
fn rdata_is_valid(rtype: RType, rdata: &[u8]) -> bool {
    match rtype {
        RType::NS | RType::CNAME | RType::DNAME | RType::PTR => Name::from_wire(rdata).is_ok(),
        RType::MX => rdata.len() > 2 && Name::from_wire(&rdata[2..]).is_ok(),
        RType::SRV => rdata.len() > 6 && Name::from_wire(&rdata[6..]).is_ok(),
        RType::SOA => soa_minimum(rdata).is_some(),
        RType::A => rdata.len() == 4,
        RType::AAAA => rdata.len() == 16,
        _ => true,
    }
}

/// NSEC3 records and the RRSIGs covering them (type covered in the first
/// two RDATA octets).
pub(crate) fn is_nsec3_data(rtype: RType, rdata: &[u8]) -> bool {
    rtype == RType::NSEC3 || (rtype == RType::RRSIG && rdata.get(..2) == Some(&[0, 50][..]))
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    fn soa() -> Vec<u8> {
        let mut rdata = name("ns.example.").as_bytes().to_vec();
        rdata.extend_from_slice(name("host.example.").as_bytes());
        for value in [1u32, 3600, 900, 604800, 300] {
            rdata.extend_from_slice(&value.to_be_bytes());
        }
        rdata
    }

    fn builder() -> ZoneBuilder {
        let mut b = ZoneBuilder::new(name("Example.").as_name());
        b.insert(
            name("example.").as_name(),
            RType::SOA,
            RClass::IN,
            3600,
            &soa(),
        )
        .unwrap();
        b
    }

    fn insert(b: &mut ZoneBuilder, owner: &str, rtype: RType, ttl: u32, rdata: &[u8]) {
        b.insert(name(owner).as_name(), rtype, RClass::IN, ttl, rdata)
            .unwrap();
    }

    #[test]
    fn nodes_flags_and_empty_non_terminals() {
        let mut b = builder();
        insert(&mut b, "A.b.C.example.", RType::A, 60, &[192, 0, 2, 1]);
        insert(
            &mut b,
            "sub.example.",
            RType::NS,
            60,
            name("ns.sub.example.").as_bytes(),
        );
        insert(&mut b, "ns.sub.example.", RType::A, 60, &[192, 0, 2, 2]);
        insert(&mut b, "*.example.", RType::TXT, 60, b"\x01x");
        let zone = b.finish().unwrap();
        // example, c, b.c, a.b.c, sub, ns.sub, *
        assert_eq!(zone.node_count(), 7);
        let id = |text: &str| zone.find_node(name(text).as_bytes()).unwrap();
        let ent = id("b.c.example.");
        assert_eq!(zone.node(ent).rrset_count, 0);
        assert_eq!(zone.node(id("a.b.c.example.")).parent, ent);
        assert!(zone.node(id("sub.example.")).flags & FLAG_DELEG != 0);
        assert!(zone.node(id("ns.sub.example.")).flags & FLAG_NONAUTH != 0);
        assert!(zone.node(0).flags & FLAG_APEX != 0);
        assert!(zone.node(0).flags & FLAG_WILDCARD_CHILD != 0);
        assert_eq!(zone.wildcard_child(0), Some(id("*.example.")));
        assert_eq!(
            zone.closest_encloser(name("x.y.b.c.example.").as_name()),
            Some((ent, false))
        );
        assert_eq!(zone.closest_encloser(name("example.org.").as_name()), None);
        assert_eq!(zone.negative_ttl, 300);
        // Negative answers write the SOA from its plan.
        assert!(zone.soa_plan.is_some());
    }

    #[test]
    fn duplicates_dropped_and_first_ttl_wins() {
        let mut b = builder();
        insert(&mut b, "a.example.", RType::A, 100, &[192, 0, 2, 9]);
        insert(&mut b, "A.example.", RType::A, 50, &[192, 0, 2, 2]);
        insert(&mut b, "a.example.", RType::A, 200, &[192, 0, 2, 1]);
        insert(&mut b, "a.example.", RType::A, 300, &[192, 0, 2, 9]);
        let zone = b.finish().unwrap();
        let node = zone.find_node(name("a.example.").as_bytes()).unwrap();
        let set = zone.rrset(zone.rrset_index(node, RType::A).unwrap());
        // The first inserted record sorts last by RDATA: its TTL still wins.
        assert_eq!((set.count, set.ttl), (3, 100));
        assert_eq!(zone.record_count(), 4);
    }

    #[test]
    fn rejects_what_cannot_be_served() {
        let mut b = ZoneBuilder::new(name("example.").as_name());
        let err = b.insert(
            name("www.other.").as_name(),
            RType::A,
            RClass::IN,
            1,
            &[1, 2, 3, 4],
        );
        assert!(matches!(err, Err(BuildError::OutOfZone { .. })));
        assert_eq!(
            err.unwrap_err().to_string(),
            "record owner www.other. is outside the zone example."
        );
        let err = b.insert(
            name("a.example.").as_name(),
            RType::A,
            RClass::CH,
            1,
            &[1, 2, 3, 4],
        );
        assert_eq!(err, Err(BuildError::Class { class: RClass::CH }));
        let err = b.insert(name("a.example.").as_name(), RType::ANY, RClass::IN, 1, &[]);
        assert_eq!(err, Err(BuildError::MetaType { rtype: RType::ANY }));
        let err = b.insert(
            name("a.example.").as_name(),
            RType::A,
            RClass::IN,
            1,
            &[1, 2],
        );
        assert!(matches!(err, Err(BuildError::InvalidRdata { .. })));
        let err = b.insert(
            name("a.example.").as_name(),
            RType::SOA,
            RClass::IN,
            1,
            &soa(),
        );
        assert!(matches!(err, Err(BuildError::SoaNotAtApex { .. })));
        assert!(matches!(b.finish(), Err(BuildError::MissingSoa { .. })));

        let mut b = builder();
        insert(
            &mut b,
            "c.example.",
            RType::CNAME,
            1,
            name("x.example.").as_bytes(),
        );
        insert(&mut b, "c.example.", RType::TXT, 1, b"\x01x");
        assert!(matches!(
            b.finish(),
            Err(BuildError::CnameAndOtherData { .. })
        ));

        let mut b = builder();
        insert(
            &mut b,
            "c.example.",
            RType::CNAME,
            1,
            name("x.example.").as_bytes(),
        );
        insert(
            &mut b,
            "c.example.",
            RType::CNAME,
            1,
            name("y.example.").as_bytes(),
        );
        assert!(matches!(
            b.finish(),
            Err(BuildError::MultipleAliases { .. })
        ));

        let mut b = builder();
        let mut other = soa();
        other[5] ^= 1;
        insert(&mut b, "example.", RType::SOA, 1, &other);
        assert!(matches!(b.finish(), Err(BuildError::MultipleSoa { .. })));
    }

    #[test]
    fn glue_resolution() {
        let mut b = builder();
        let mut mx = vec![0, 10];
        mx.extend_from_slice(name("Mail.example.").as_bytes());
        insert(&mut b, "example.", RType::MX, 60, &mx);
        let mut mx_wild = vec![0, 20];
        mx_wild.extend_from_slice(name("x.wild.example.").as_bytes());
        insert(&mut b, "example.", RType::MX, 60, &mx_wild);
        insert(&mut b, "mail.example.", RType::A, 60, &[192, 0, 2, 25]);
        insert(&mut b, "*.wild.example.", RType::AAAA, 60, &[0; 16]);
        insert(
            &mut b,
            "sub.example.",
            RType::NS,
            60,
            name("ns.sub.example.").as_bytes(),
        );
        insert(
            &mut b,
            "sub.example.",
            RType::NS,
            60,
            name("ns.example.").as_bytes(),
        );
        insert(
            &mut b,
            "sub.example.",
            RType::NS,
            60,
            name("ns.other.").as_bytes(),
        );
        insert(&mut b, "ns.sub.example.", RType::A, 60, &[192, 0, 2, 2]);
        insert(&mut b, "ns.example.", RType::A, 60, &[192, 0, 2, 3]);
        let zone = b.finish().unwrap();

        let mx = zone.rrset(zone.rrset_index(0, RType::MX).unwrap());
        let glue = zone.glue(mx);
        assert_eq!(glue.len(), 2);
        let target = |g: &Glue| {
            Name::parse_prefix(zone.rdata_at(g.target))
                .unwrap()
                .0
                .to_string()
        };
        assert_eq!(target(&glue[0]), "Mail.example.");
        assert_eq!(target(&glue[1]), "x.wild.example.");
        assert_eq!(zone.node_name(glue[1].node).to_string(), "*.wild.example.");

        let sub = zone.find_node(name("sub.example.").as_bytes()).unwrap();
        let ns = zone.rrset(zone.rrset_index(sub, RType::NS).unwrap());
        let glue = zone.glue(ns);
        // ns.sub (required, first), ns.example (optional); ns.other: none.
        assert_eq!(glue.len(), 2);
        assert_eq!(target(&glue[0]), "ns.sub.example.");
    }

    #[test]
    fn nsec3_records_live_outside_the_tree() {
        let mut b = builder();
        let owner = "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.";
        insert(
            &mut b,
            owner,
            RType::NSEC3,
            60,
            b"\x01\x00\x00\x01\x00\x14\xaa",
        );
        // RRSIG NSEC3 (type covered 50) at the same owner belongs to it.
        let mut sig = vec![0, 50, 13, 2, 0, 0, 0, 60];
        sig.extend_from_slice(&[0; 10]);
        sig.extend_from_slice(name("example.").as_bytes());
        insert(&mut b, owner, RType::RRSIG, 60, &sig);
        let zone = b.finish().unwrap();
        assert_eq!(zone.node_count(), 2);
        assert_eq!(zone.find_node(name(owner).as_bytes()), None);
        assert_eq!(zone.node(1).flags & FLAG_NSEC3_OWNER, FLAG_NSEC3_OWNER);
        let set = zone.rrset(zone.rrset_index(1, RType::NSEC3).unwrap());
        assert_eq!(set.sig_count, 1);
        // No NSEC3PARAM at the apex: no chain.
        assert!(zone.nsec3.is_none());
    }

    /// Records of one owner need not be consecutive, nor spelled alike:
    /// they meet at one node, and an NSEC3 owner's records at one hashed
    /// node.
    #[test]
    fn interleaved_owners_share_their_node() {
        let mut b = builder();
        b.reserve(8, 64);
        let hash = "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.";
        let mut sig = vec![0, 50, 13, 2, 0, 0, 0, 60];
        sig.extend_from_slice(&[0; 10]);
        sig.extend_from_slice(name("example.").as_bytes());
        insert(&mut b, "www.example.", RType::A, 60, &[192, 0, 2, 1]);
        insert(
            &mut b,
            hash,
            RType::NSEC3,
            60,
            b"\x01\x00\x00\x01\x00\x14\xaa",
        );
        insert(&mut b, "mail.example.", RType::A, 60, &[192, 0, 2, 2]);
        insert(&mut b, "WWW.example.", RType::AAAA, 60, &[0; 16]);
        insert(&mut b, hash, RType::RRSIG, 60, &sig);
        insert(&mut b, "www.Example.", RType::A, 30, &[192, 0, 2, 3]);
        let zone = b.finish().unwrap();
        // example, www, hashed, mail
        assert_eq!(zone.node_count(), 4);
        let www = zone.find_node(name("www.example.").as_bytes()).unwrap();
        let types: Vec<RType> = zone.rrsets(www).iter().map(|set| set.rtype).collect();
        assert_eq!(types, [RType::A, RType::AAAA]);
        let a = zone.rrset(zone.rrset_index(www, RType::A).unwrap());
        assert_eq!((a.count, a.ttl), (2, 60));
        let hashed = (0..zone.node_count() as u32)
            .find(|&node| zone.node(node).flags & FLAG_NSEC3_OWNER != 0)
            .unwrap();
        let nsec3 = zone.rrset(zone.rrset_index(hashed, RType::NSEC3).unwrap());
        assert_eq!(nsec3.sig_count, 1);
        assert_eq!(zone.record_count(), 7);
    }

    #[test]
    fn signatures_attach_to_the_rrset_they_cover() {
        let mut b = builder();
        let sig = |covered: RType, tag: u8| {
            let mut rdata = covered.0.to_be_bytes().to_vec();
            rdata.extend_from_slice(&[13, 2, 0, 0, 0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, tag]);
            rdata.extend_from_slice(name("example.").as_bytes());
            rdata.extend_from_slice(&[tag; 8]);
            rdata
        };
        insert(&mut b, "www.example.", RType::AAAA, 300, &[0; 16]);
        insert(&mut b, "www.example.", RType::A, 60, &[192, 0, 2, 1]);
        insert(
            &mut b,
            "www.example.",
            RType::RRSIG,
            999,
            &sig(RType::AAAA, 1),
        );
        insert(&mut b, "www.example.", RType::RRSIG, 999, &sig(RType::A, 2));
        insert(&mut b, "www.example.", RType::RRSIG, 999, &sig(RType::A, 3));
        insert(
            &mut b,
            "www.example.",
            RType::RRSIG,
            999,
            &sig(RType::TXT, 4),
        );
        let zone = b.finish().unwrap();
        let node = zone.find_node(name("www.example.").as_bytes()).unwrap();
        let a = *zone.rrset(zone.rrset_index(node, RType::A).unwrap());
        let aaaa = *zone.rrset(zone.rrset_index(node, RType::AAAA).unwrap());
        let tags = |set: &RRset| zone.sigs(set).map(|r| r[17]).collect::<Vec<_>>();
        assert_eq!(tags(&a), [2, 3]);
        assert_eq!(tags(&aaaa), [1]);
        // A query for RRSIG gets the signatures of the lowest type, with
        // that type's TTL (Knot).
        let rrsig = *zone.rrset(zone.rrset_index(node, RType::RRSIG).unwrap());
        assert_eq!((rrsig.count, rrsig.ttl), (2, 60));
        assert_eq!(
            zone.rdata_iter(&rrsig).map(|r| r[17]).collect::<Vec<_>>(),
            [2, 3]
        );
    }

    #[test]
    fn nsec_owners_sorted_canonically() {
        let mut b = builder();
        for owner in [
            "b.example.",
            "\\000.b.example.",
            "*.b.example.",
            "a.example.",
            "example.",
        ] {
            let mut rdata = name("example.").as_bytes().to_vec();
            rdata.extend_from_slice(&[0, 1, 0x40]);
            insert(&mut b, owner, RType::NSEC, 60, &rdata);
        }
        let zone = b.finish().unwrap();
        let order: Vec<String> = zone
            .nsec
            .iter()
            .map(|&n| zone.node_name(n).to_string())
            .collect();
        assert_eq!(
            order,
            [
                "example.",
                "a.example.",
                "b.example.",
                "\\000.b.example.",
                "*.b.example."
            ]
        );
        let cover = |text: &str| {
            zone.node_name(zone.nsec_covering(name(text).as_name()).unwrap())
                .to_string()
        };
        assert_eq!(cover("aa.example."), "a.example.");
        assert_eq!(cover("a.example."), "a.example.");
        assert_eq!(cover("x.b.example."), "*.b.example.");
        assert_eq!(cover("c.example."), "*.b.example.");
    }

    /// Every node of `zone` as text: its name and flags, and each RRset's
    /// type, TTL, records, glue and signatures, and the record count.
    fn dump(zone: &Zone) -> Vec<String> {
        let mut lines = vec![format!("records {}", zone.record_count())];
        for node in 0..zone.nodes.end() {
            let mut line = format!("{} {:#x}:", zone.node_name(node), zone.node(node).flags);
            for set in zone.rrsets(node) {
                line.push_str(&format!(
                    " {} {} {:?} glue {} sigs {:?};",
                    set.rtype,
                    set.ttl,
                    zone.rdata_iter(set).collect::<Vec<_>>(),
                    zone.glue(set).len(),
                    zone.sigs(set).collect::<Vec<_>>(),
                ));
            }
            lines.push(line);
        }
        lines
    }

    /// Built owner by owner ([`ZoneBuilder::stream_owners`]), a zone is the
    /// zone built from the blocks, whatever the records' order: owners
    /// together (nothing left unused), or coming back (the apex, a name
    /// after others, an owner spelled in another case, an NSEC3 owner
    /// between the records of the ordinary node of the same name), with
    /// duplicates and TTLs that disagree (the first inserted wins, the
    /// RRSIG RRset's own TTL too).
    #[test]
    fn streamed_owners_make_the_same_zone() {
        let sig = |covered: RType, tag: u8| {
            let mut rdata = covered.0.to_be_bytes().to_vec();
            rdata.extend_from_slice(&[13, 2, 0, 0, 0, 60, 0, 0, 0, 9, 0, 0, 0, 1, 0, tag]);
            rdata.extend_from_slice(name("example.").as_bytes());
            rdata.extend_from_slice(&[tag; 8]);
            rdata
        };
        let hash = "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.";
        let nsec3 = b"\x01\x00\x00\x01\x00\x14\xaa".to_vec();
        let mut mx = vec![0, 10];
        mx.extend_from_slice(name("a.example.").as_bytes());
        let together: Vec<(&str, RType, u32, Vec<u8>)> = vec![
            ("example.", RType::MX, 300, mx.clone()),
            ("example.", RType::RRSIG, 299, sig(RType::MX, 1)),
            ("a.example.", RType::A, 60, vec![192, 0, 2, 1]),
            ("a.example.", RType::A, 90, vec![192, 0, 2, 2]),
            ("a.example.", RType::A, 60, vec![192, 0, 2, 1]),
            ("a.example.", RType::RRSIG, 50, sig(RType::TXT, 2)),
            ("a.example.", RType::RRSIG, 60, sig(RType::A, 3)),
            ("a.example.", RType::TXT, 70, b"\x02hi".to_vec()),
            ("b.c.example.", RType::A, 60, vec![192, 0, 2, 3]),
            (hash, RType::NSEC3, 60, nsec3.clone()),
            (hash, RType::RRSIG, 60, sig(RType::NSEC3, 4)),
        ];
        let mut returning = together.clone();
        returning.extend([
            ("A.example.", RType::AAAA, 60, vec![0x20; 16]),
            ("a.example.", RType::RRSIG, 61, sig(RType::AAAA, 5)),
            ("example.", RType::TXT, 300, b"\x01x".to_vec()),
            // Covering a type the apex has not: the RRSIG RRset keeps the
            // TTL of the RRSIG inserted first (299).
            ("example.", RType::RRSIG, 300, sig(RType::NS, 8)),
            ("b.c.example.", RType::A, 10, vec![192, 0, 2, 3]),
            (hash, RType::A, 60, vec![192, 0, 2, 4]),
            (hash, RType::RRSIG, 60, sig(RType::NSEC3, 6)),
            (hash, RType::RRSIG, 60, sig(RType::A, 7)),
            ("example.", RType::MX, 300, mx),
        ]);
        for (records, garbage) in [(&together, false), (&returning, true)] {
            let build = |stream: bool| {
                let mut b = ZoneBuilder::new(name("example.").as_name());
                b.reserve(records.len(), 256);
                if stream {
                    b.stream_owners();
                }
                insert(&mut b, "example.", RType::SOA, 3600, &soa());
                for (owner, rtype, ttl, rdata) in records {
                    insert(&mut b, owner, *rtype, *ttl, rdata);
                }
                b.finish().unwrap()
            };
            let (blocks, streamed) = (build(false), build(true));
            assert_eq!(dump(&streamed), dump(&blocks));
            assert_eq!(streamed.nsec.len(), blocks.nsec.len());
            assert_eq!(blocks.garbage_bytes(), 0);
            assert_eq!(streamed.garbage_bytes() > 0, garbage);
        }
    }
}
