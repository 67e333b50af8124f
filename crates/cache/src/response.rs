//! The response cache: pre-serialized answers, SIEVE eviction, a keyed hash,
//! and memory taken once, when the cache is made.
//!
//! Layout. Entries live in a slot array (`Vec<Slot>`, 32 bytes a slot);
//! a `hashbrown::HashTable<u32>` maps a key's hash to a slot index, so the
//! index costs 4 bytes and one control byte a bucket. Each slot's bytes
//! are an extent of the cache's [`Slab`] (`crate::slab`): one arena of
//! 32-octet granules, with free lists per size and coalescing, holding
//!
//! ```text
//!   flags(2, RD clear) counts(8) | lowercased qname | tail (answer, authority, additional, OPT)
//! ```
//!
//! The name is stored there rather than as a `LowerNameBuf` (256 bytes
//! whatever the name's length): a typical entry then costs its real length
//! rounded up to the granule, plus [`ENTRY_OVERHEAD`], and the lookup
//! compares the key's name with the stored bytes (one `memcmp`) after the
//! table has matched 7 bits of hash and the slot's type, class, flags and
//! name length.
//!
//! No allocation after [`ResponseCache::new`]. A random-subdomain flood
//! makes every query a miss and an insert into a full cache, so the insert
//! and the evictions must not allocate either (issue 12); they did, one
//! boxed byte string per entry, until the storage became fixed:
//!
//! - the slab's arena is reserved whole at construction (the byte limit,
//!   or less if the entry limit cannot use it all), but its pages are only
//!   written, hence made resident, as entries first reach them: a core's
//!   memory follows the most its cache has held, at the cost of address
//!   space for the whole limit per core;
//! - the slot array's capacity is reserved for the entry limit and never
//!   exceeded (slots are reused through a free list);
//! - the index is made for twice the entry limit. hashbrown leaves
//!   tombstones when it removes, and an insert that finds no room left
//!   rehashes in place only if the table is at most half full, else it
//!   reallocates twice as large: at twice the limit it is never more than
//!   half full. The price is about 11 to 23 index bytes an entry, counted
//!   in [`ENTRY_OVERHEAD`].
//!
//! An entry of more than [`MAX_ENTRY_LEN`] stored bytes (an answer of more
//! than 4102 octets, over UDP only with a `udp-size` above 4096) is not
//! stored: `respond` writes it every time. [`ResponseCache::counters`]
//! counts them.
//!
//! Invalidation by zone. Each entry carries its caller's tag (the server's
//! slot of the answer's zone) and the cache's clock when it was stored. A
//! new version of one zone invalidates its tag ([`ResponseCache::invalidate_tag`]):
//! the clock ticks and the tag records it, and an entry stored before that
//! no longer answers. The other zones' entries stay, and nothing is walked:
//! replacing one zone of 100,000 costs that zone, not the cache.
//!
//! Invalidation by name. A version made by a dynamic update changes a
//! few names of its zone; [`ResponseCache::invalidate_names`] takes them
//! (with, for each, whether names below it may answer differently too).
//! The clock ticks and the tag records it, as above, and each name's hash
//! (under the cache's key, mixed with the tag) records it in a small table
//! of changed names. An entry of the tag stored before is then looked at
//! once, at its next hit (not before: nothing is walked): it answers on
//! only if its question's type is not SOA, RRSIG or ANY (every version
//! changes the SOA, and the apex is not listed when that is all it
//! changed), it has no additional record but the OPT, neither its name
//! nor a name above it that changes what is below was changed since it
//! was stored, and it is
//!
//! - a positive answer (NOERROR, at least one answer record) whose every
//!   answer record is owned by the question's name (a compression
//!   pointer to it), with no authority record; or
//! - a negative answer (NXDOMAIN or NODATA) with the SOA alone in its
//!   authority section, when every version since it was stored changed
//!   the SOA in its serial alone ([`ResponseCache::invalidate_update`]):
//!   the new serial is written into its SOA.
//!
//! Then it is stamped anew and its next hits cost nothing more. What
//! the check needs is ready when the entry is hit: its kind (never kept,
//! positive, negative) and its name's label count are set when it is
//! stored, and its name's hash is the one the key's hash passes through
//! ([`KeyHash`]), so the check costs one look-up in the table of changed
//! names, most often only a bit of the filter in front of it (about 80
//! instructions a hit, against 386 when it parsed the entry and hashed
//! its name and each name above it: docs/benchmarks.md, "queries beside
//! updates within 10 %").
//! Everything else of the tag (referrals and signed denials, which
//! depend on names other than the question's, CNAME chains, answers with
//! additional records) is dropped as a whole-zone invalidation drops it.
//! The names above are looked up only at label counts where a name that
//! changes what is below it changed since (a table by label count): in a
//! zone whose updates come and go at `_acme-challenge.www.example.com.`,
//! the check of `host.example.com.` hashes its own name alone. The table
//! holds at most [`MAX_TRACKED_NAMES`]; past it, every tag's changes so
//! far become whole-zone invalidations and the table empties.
//!
//! Eviction is SIEVE (Zhang et al., NSDI 2024): a FIFO list threaded
//! through the slots (`prev`/`next` indices), a `visited` bit set on a hit,
//! and a hand that walks from the oldest entry towards the newest, clearing
//! visited bits and evicting the first entry without one. A hit writes one
//! bool; an eviction is amortized O(1) and bounded by one pass over the
//! list. Unlike CLOCK, new entries enter at the head while the hand keeps
//! its place, so a flood of one-time names (random-subdomain attacks) is
//! evicted before the entries that real clients keep asking for. SIEVE
//! evicts when the entry or the byte limit would be exceeded, and also,
//! rarely, when the slab has the bytes free but not in one piece: the
//! insert then evicts more SIEVE victims until their extents, merged with
//! free neighbours, make room. A flood churns entries in FIFO order, which
//! frees neighbouring extents together, so this is rare, and the counters
//! say how rare: none in the unit tests' floods of a million names, about
//! 3 % of evictions in a 16 KiB cache where one answer in eight is ten
//! times the size of the others. A victim of exactly the new entry's size
//! is reused in place, without a trip through the free lists: in a flood
//! of answers of one kind that is the common case. An insert into a full
//! cache costs about 60 instructions fewer than with the `free` and
//! `malloc` it replaced (docs/benchmarks.md, "Cold cache").
//!
//! Admission. Once the cache is full, an answer is stored only if its key
//! was missed before (the "doorkeeper" of TinyLFU, Einziger et al., 2017):
//! a bit array indexed by the key's hash remembers the keys missed once,
//! and is cleared after as many marks as the cache has entries, so it
//! remembers roughly the last cache-full of one-time names. In a
//! random-subdomain flood every name is asked once: its answer is written
//! and sent but not stored, which costs one bit instead of an eviction and
//! an insert (about 600 instructions), and the entries that real clients
//! keep asking for are not pushed out by names nobody asks again. A name
//! asked twice while the cache is full is stored at its second miss; while
//! the cache has room every answer is stored at once. Whether a name
//! counts as seen can be wrong in one direction only (two keys sharing a
//! bit): a one-time name is then stored, as it was before admission.

use core::mem::size_of;

use hashbrown::HashTable;
use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::{Opcode, RClass, RType};

use crate::hash::KeyedHash;
use crate::key::{CacheKey, BIT_DO, BIT_EDNS};
use crate::slab::{reserve_cache, Slab, GRANULE, INDEX_SLACK, MAX_ALLOCATION};

mod versions;
pub use versions::MAX_TRACKED_NAMES;
use versions::{keep_of, labels, DEPTHS};

/// The largest DNS message (TCP's two-octet length prefix): a longer
/// answer is malformed.
pub const MAX_ANSWER_LEN: usize = 65535;

/// The most bytes one entry stores (template, name and tail): the slab's
/// largest extent, 4 KiB. An answer stores 6 octets fewer than its length
/// (the ID, and the question's type and class, come from each query), so
/// answers of up to 4102 octets are cached.
pub const MAX_ENTRY_LEN: usize = MAX_ALLOCATION;

/// Header octets 2-3 (flags) and 4-11 (counts) kept from the answer.
const TEMPLATE_LEN: usize = 10;

/// The RD bit in header octet 2.
const RD: u8 = 0x01;

/// The CD bit in header octet 3 (copied from each query, like RD).
const CD: u8 = 0x10;

/// "No slot" in the list links and the hand.
const NIL: u32 = u32::MAX;

/// Index bytes per entry: a bucket is a `u32` and hashbrown's control
/// byte; the table has room for twice the entries (see the module docs)
/// at a load of at most 7/8, rounded up to a power of two: between 2.3
/// and 4.6 buckets an entry, 16 bytes taken as typical.
const INDEX_BYTES_PER_ENTRY: usize = 16;

/// Bytes charged to each entry on top of its stored bytes (template, name
/// and tail, rounded up to the slab's 32-octet granule): the slot and its
/// share of the index. [`ResponseCache::bytes`] is the sum of these
/// costs. Both are allocated at construction for the entry limit, so
/// what the charge leaves out is the part of them the cache does not use.
pub const ENTRY_OVERHEAD: usize = size_of::<Slot>() + INDEX_BYTES_PER_ENTRY;

/// The default [`CacheLimits::max_entries`].
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

/// The default [`CacheLimits::max_bytes`]: 64 MiB.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

//----------- CacheLimits ----------------------------------------------------

/// How large one core's cache may grow. Both limits hold after every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheLimits {
    /// The most entries. Default [`DEFAULT_MAX_ENTRIES`] (100 000): the
    /// distinct (name, type) pairs that a busy authoritative server sees
    /// asked within minutes.
    pub max_entries: usize,
    /// The most bytes, counted as stored bytes (rounded up to 32 octets)
    /// plus [`ENTRY_OVERHEAD`] per entry. Default [`DEFAULT_MAX_BYTES`]
    /// (64 MiB): 100 000 entries of a typical 200-octet answer need about
    /// 25 MiB, so the entry limit usually binds first and large answers
    /// cannot crowd memory. The slab for the stored bytes is reserved at
    /// this size (less when the entry limit cannot use so much), the slot
    /// array and index for `max_entries` (fewer when this limit cannot
    /// hold so many).
    pub max_bytes: usize,
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits {
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

//----------- CacheCounters -------------------------------------------------

/// What the cache did since it was made (a clear does not reset them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Answers stored.
    pub stored: u64,
    /// Entries evicted, for any reason.
    pub evicted: u64,
    /// Of those, entries evicted although both limits held, because the
    /// slab's free bytes were not in one piece large enough.
    pub evicted_to_fit: u64,
    /// Cacheable answers not stored because they are longer than
    /// [`MAX_ENTRY_LEN`] allows.
    pub too_large: u64,
    /// Cacheable answers not stored because [`MAX_EVICTIONS_TO_FIT`]
    /// evictions did not make a free piece large enough.
    pub unplaced: u64,
    /// Answers not stored because the cache was full and their key had
    /// not been missed before (see "Admission" in the module docs).
    pub not_admitted: u64,
}

/// The most entries one insert evicts, beyond what the limits require, to
/// find a free piece of the slab large enough: bounds the work of one
/// insert when the free space is fragmented (an attacker alternating
/// floods of small and large answers could otherwise make one insert
/// evict a large part of the cache). Past it the answer is not cached.
pub const MAX_EVICTIONS_TO_FIT: u32 = 32;

//----------- Doorkeeper -----------------------------------------------------

/// Bits of the doorkeeper per cache entry: with as many marks as entries
/// before it is cleared, at most one bit in eight is set, so a one-time
/// key is taken for a seen one at most one time in eight.
const DOORKEEPER_BITS_PER_ENTRY: usize = 8;

/// The keys missed once, as one bit per hash value modulo its size (a
/// power of two), cleared before the mark after `limit` marks (so the
/// newest mark always survives). Made once with the cache;
/// never allocates after.
struct Doorkeeper {
    words: Vec<u64>,
    /// Bits minus one: the index mask.
    mask: u64,
    /// Marks since the last clear.
    marks: usize,
    /// Marks before the bits are cleared: the cache's entry limit.
    limit: usize,
}

impl Doorkeeper {
    /// A doorkeeper for a cache of `entries`; should the memory be refused,
    /// one that admits everything (the cache then behaves as without one).
    fn new(entries: usize) -> Self {
        let bits = entries
            .saturating_mul(DOORKEEPER_BITS_PER_ENTRY)
            .checked_next_power_of_two()
            .unwrap_or(0)
            .max(64);
        let mut words = Vec::new();
        if entries == 0 || words.try_reserve_exact(bits / 64).is_err() {
            return Doorkeeper {
                words,
                mask: 0,
                marks: 0,
                limit: 0,
            };
        }
        words.resize(bits / 64, 0);
        Doorkeeper {
            words,
            mask: bits as u64 - 1,
            marks: 0,
            limit: entries,
        }
    }

    /// Whether a key of this hash was marked since the last clear; marks it
    /// if not. Inlined always: with the insert inlined into the server's
    /// miss path, `#[inline]` was not followed (a call of about 40
    /// instructions a refused answer).
    #[inline(always)]
    fn admit(&mut self, hash: u64) -> bool {
        if self.words.is_empty() {
            return true;
        }
        // The table's buckets use the hash's low bits and its tag the top
        // seven; the middle ones are as good and independent of both.
        let bit = (hash >> 20) & self.mask;
        let Some(word) = self.words.get_mut((bit / 64) as usize) else {
            return true;
        };
        let flag = 1u64 << (bit % 64);
        if *word & flag != 0 {
            return true;
        }
        if self.marks >= self.limit {
            self.clear();
        }
        if let Some(word) = self.words.get_mut((bit / 64) as usize) {
            *word |= flag;
        }
        self.marks += 1;
        false
    }

    /// Forgets every key.
    fn clear(&mut self) {
        self.words.fill(0);
        self.marks = 0;
    }
}

//----------- Slot -----------------------------------------------------------

/// One entry, or a free slot (`len` 0, `next` links the free list).
struct Slot {
    /// The first granule of the entry's bytes in the slab.
    at: u32,
    /// Stored bytes: template, lowercased name, tail; see the module docs.
    len: u16,
    /// The next older entry (towards the tail), or `NIL`.
    prev: u32,
    /// The next newer entry (towards the head), or `NIL`; in a free slot,
    /// the next free slot.
    next: u32,
    qtype: RType,
    qclass: RClass,
    name_len: u8,
    /// `BIT_EDNS | BIT_DO` of the key.
    bits: u8,
    /// SIEVE's bit: hit since the hand last passed.
    visited: bool,
    /// The labels of the name, the root's not counted.
    labels: u8,
    /// `KEEP_NEVER`, `KEEP_POSITIVE` or `KEEP_NEGATIVE`: whether the
    /// entry may answer on across a version made by name, and how it is
    /// checked then.
    keep: u8,
    /// The caller's tag (see [`ResponseCache::insert_tagged`]).
    tag: u32,
    /// [`ResponseCache::clock`] when the entry was stored: it answers only
    /// while no [`ResponseCache::invalidate_tag`] of its tag came later.
    stamp: u32,
}

impl Slot {
    /// The entry's bytes in `slab`.
    #[inline]
    fn data<'s>(&self, slab: &'s Slab) -> &'s [u8] {
        slab.get(self.at, usize::from(self.len))
    }

    #[inline]
    fn name<'s>(&self, slab: &'s Slab) -> &'s [u8] {
        slab.get_from(self.at, TEMPLATE_LEN, usize::from(self.name_len))
    }

    fn matches(&self, slab: &Slab, name: &[u8], qtype: RType, qclass: RClass, bits: u8) -> bool {
        self.qtype == qtype
            && self.qclass == qclass
            && self.bits == bits
            && usize::from(self.name_len) == name.len()
            && self.name(slab) == name
    }

    /// Whether this entry answers a question whose name is `query_name`
    /// as the client wrote it (the stored name is lowercase).
    #[inline]
    fn answers(
        &self,
        slab: &Slab,
        query_name: &[u8],
        qtype: RType,
        qclass: RClass,
        bits: u8,
    ) -> bool {
        self.qtype == qtype
            && self.qclass == qclass
            && self.bits == bits
            && usize::from(self.name_len) == query_name.len()
            && eq_lowercase(query_name, self.name(slab))
    }

    fn granules(&self) -> usize {
        usize::from(self.len).div_ceil(GRANULE)
    }

    fn cost(&self) -> usize {
        self.granules() * GRANULE + ENTRY_OVERHEAD
    }
}

/// Whether `mixed`, with ASCII letters lowercased, equals `lower`. Eight
/// octets at a time: this runs on every cache hit, and the byte-wise
/// `eq_ignore_ascii_case` costs about ten instructions an octet.
fn eq_lowercase(mixed: &[u8], lower: &[u8]) -> bool {
    if mixed.len() != lower.len() {
        return false;
    }
    let mut mixed_chunks = mixed.chunks_exact(8);
    let mut lower_chunks = lower.chunks_exact(8);
    for (m, l) in mixed_chunks.by_ref().zip(lower_chunks.by_ref()) {
        let m = u64::from_le_bytes(m.try_into().unwrap_or([0; 8]));
        let l = u64::from_le_bytes(l.try_into().unwrap_or([0; 8]));
        if lowercase8(m) != l {
            return false;
        }
    }
    let rest = mixed_chunks.remainder().iter();
    rest.zip(lower_chunks.remainder())
        .all(|(&m, &l)| m.to_ascii_lowercase() == l)
}

/// Lowercases the ASCII letters among eight octets (SWAR): for each octet
/// with the high bit clear, adding 0x3f sets bit 7 iff it is at least `A`,
/// adding 0x25 iff it is above `Z`; neither sum carries into the next
/// octet. The letters' bit 7 flags, shifted to bit 5, are OR-ed in.
fn lowercase8(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let low7 = x & (0x7f * ONES);
    let at_least_a = low7 + (0x80 - u64::from(b'A')) * ONES;
    let above_z = low7 + (0x80 - u64::from(b'Z') - 1) * ONES;
    let upper = at_least_a & !above_z & !x & (0x80 * ONES);
    x | (upper >> 2)
}

/// The hash of a key's parts (see [`KeyedHash::hash`]).
fn hash_parts(hasher: &KeyedHash, name: &[u8], qtype: RType, qclass: RClass, bits: u8) -> u64 {
    hasher.hash(name, qtype.0, qclass.0, bits)
}

fn hash_slot(hasher: &KeyedHash, slab: &Slab, slot: &Slot) -> u64 {
    hash_parts(hasher, slot.name(slab), slot.qtype, slot.qclass, slot.bits)
}

//----------- KeyHash --------------------------------------------------------

/// A [`CacheKey`]'s hash under one cache's hasher
/// ([`ResponseCache::key_hash`]), with its name's (on the way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash {
    key: u64,
    name: u64,
}

impl KeyHash {
    /// The key's name hashed alone: `tern_wire::hash::NameHasher::process`'s
    /// hash of the lowercased name (the answer cache hashes under the
    /// process's key, [`KeyedHash::process`]), which the zone index takes
    /// for its look-up of the same name (`tern_wire::hash::HashedName`).
    pub fn name(&self) -> u64 {
        self.name
    }
}

//----------- ResponseCache --------------------------------------------------

/// One core's cache of complete authoritative answers, keyed by
/// [`CacheKey`]. Not shared: every method takes `&mut self` or `&self` of
/// the core that owns it; there is no lock, atomic, `Arc` or `RefCell`.
pub struct ResponseCache {
    /// Hash of the key -> slot index. Made for `INDEX_SLACK` times the
    /// entry limit: never grows.
    table: HashTable<u32>,
    /// Reserved for the entry limit: never grows past it.
    slots: Vec<Slot>,
    /// The entries' bytes.
    slab: Slab,
    /// Head of the free-slot list (threaded through `Slot::next`).
    free: u32,
    /// The newest entry.
    head: u32,
    /// The oldest entry.
    tail: u32,
    /// SIEVE's hand: the next entry to examine, or `NIL` for the tail.
    hand: u32,
    len: usize,
    bytes: usize,
    limits: CacheLimits,
    counters: CacheCounters,
    /// foldhash under a per-process random key: query names are chosen by
    /// whoever sends packets (see `crate::hash` for why foldhash suffices
    /// in a bounded, evicting cache).
    hasher: KeyedHash,
    /// Counts invalidations since the last [`ResponseCache::clear`]; an
    /// entry records it when stored.
    clock: u32,
    /// By tag: the clock at the tag's last invalidation of either kind.
    /// Entries stored before it are checked at their next hit
    /// (`ResponseCache::still_answers`; they are evicted as SIEVE finds
    /// them); a tag past the end was never invalidated.
    tag_since: Vec<u32>,
    /// By tag: the clock at the tag's last whole invalidation. Entries
    /// stored before it no longer answer.
    tag_whole: Vec<u32>,
    /// Changed names ([`ResponseCache::invalidate_names`]): the hash of
    /// (tag, kind, name) and the clock when it changed. At most
    /// [`MAX_TRACKED_NAMES`].
    changed: HashTable<(u64, u32)>,
    /// One bit per hash of `changed` (`changed_bit`), set as it is
    /// inserted, cleared when it is emptied: a clear bit says the hash is
    /// not in the table, without a probe. Empty (every hash probed) until
    /// the first invalidation by name.
    changed_bits: Box<[u64]>,
    /// By label count: the clock when a name of that many labels last
    /// changed what is below it (`CHANGED_BELOW`, any tag), so that
    /// the check of an entry's names above it hashes only the ones of
    /// label counts that did; 0 since the table of changed names was
    /// last emptied.
    below_at: [u32; DEPTHS],
    /// By tag: the clock at the tag's last version whose SOA changed in
    /// more than its serial (or not known to have): the negative answers
    /// stored before it no longer answer. Those stored after it and
    /// before the tag's last version answer with `tag_serial`.
    tag_soa: Vec<u32>,
    /// By tag: the SOA serial of its last version made by name (see
    /// [`ResponseCache::invalidate_update`]).
    tag_serial: Vec<u32>,
    /// The keys missed once while the cache was full (see "Admission").
    doorkeeper: Doorkeeper,
    /// Frees and allocations of the slab by inserts, for the tests.
    #[cfg(test)]
    slab_calls: u64,
}

impl ResponseCache {
    /// An empty cache, with all the memory it will ever use allocated:
    /// the slot array, the index, and the slab (reserved, its pages
    /// written only as entries reach them; see the module docs).
    ///
    /// The limits in force ([`ResponseCache::limits`]) may be lower than
    /// asked: `max_entries` is at most what `max_bytes` can hold (entries
    /// of one granule) and below `u32::MAX`; and should the system refuse
    /// the memory, each part is halved until it agrees, the limits with
    /// it. A cache with a limit of 0 allocates nothing.
    pub fn new(limits: CacheLimits) -> Self {
        let mut table = HashTable::new();
        let mut slots = Vec::new();
        let (max_entries, max_bytes, slab) = reserve_cache(
            limits.max_entries,
            limits.max_bytes,
            ENTRY_OVERHEAD,
            MAX_ENTRY_LEN,
            |entries| {
                table
                    .try_reserve(entries.saturating_mul(INDEX_SLACK), |_| 0)
                    .is_ok()
                    && slots.try_reserve_exact(entries).is_ok()
            },
        );
        let doorkeeper = Doorkeeper::new(max_entries);
        ResponseCache {
            table,
            slots,
            slab,
            free: NIL,
            head: NIL,
            tail: NIL,
            hand: NIL,
            len: 0,
            bytes: 0,
            limits: CacheLimits {
                max_entries,
                max_bytes,
            },
            counters: CacheCounters::default(),
            // The process's key: the name hashes are the zone index's.
            hasher: KeyedHash::process(),
            clock: 0,
            tag_since: Vec::new(),
            tag_whole: Vec::new(),
            changed: HashTable::new(),
            changed_bits: Box::default(),
            below_at: [0; DEPTHS],
            tag_soa: Vec::new(),
            tag_serial: Vec::new(),
            doorkeeper,
            #[cfg(test)]
            slab_calls: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> CacheLimits {
        self.limits
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes charged to the entries: stored bytes rounded up to the
    /// slab's granule plus [`ENTRY_OVERHEAD`] each. Never above
    /// `max_bytes`.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What the cache did so far.
    pub fn counters(&self) -> CacheCounters {
        self.counters
    }

    /// On a hit, writes the whole answer for `query` into `out` and returns
    /// its length; `None` on a miss, or if the answer is longer than
    /// `limit` or `out` (the caller then takes the slow path, which
    /// truncates properly).
    ///
    /// `key` must be [`CacheKey::from_query`] of `query`. The answer is:
    /// the query's ID; the stored flags with the query's RD and CD bits; the stored
    /// counts; the query's question bytes verbatim (0x20 case kept: the
    /// stored tail's pointers to offset 12 and into the name stay valid
    /// because a name equal ignoring case has the same labels and length);
    /// then the stored tail byte for byte. A query whose question does not
    /// match `key` is a miss.
    ///
    /// Cost: one hash of the name, one table probe, a `memcmp` of the name,
    /// a case-insensitive check of the query's name, three copies. No
    /// allocation.
    pub fn answer(
        &mut self,
        key: &CacheKey,
        query: &[u8],
        limit: usize,
        out: &mut [u8],
    ) -> Option<usize> {
        self.answer_tagged(key, query, limit, out)
            .map(|(len, _)| len)
    }

    /// [`ResponseCache::answer`], with the tag the entry was stored with.
    pub fn answer_tagged(
        &mut self,
        key: &CacheKey,
        query: &[u8],
        limit: usize,
        out: &mut [u8],
    ) -> Option<(usize, u32)> {
        let hash = self.key_hash(key);
        self.answer_hashed(key, hash, query, limit, out)
    }

    /// The hash of `key` under this cache's hasher, for
    /// [`ResponseCache::answer_hashed`] and
    /// [`ResponseCache::insert_written`]: a miss is then answered and
    /// stored with one hash of its key, not two. Inlined: once a query,
    /// where a call's frame cost about 10 instructions.
    #[inline]
    pub fn key_hash(&self, key: &CacheKey) -> KeyHash {
        let (name, key) =
            self.hasher
                .hashes(key.name.as_bytes(), key.qtype.0, key.qclass.0, key.bits());
        KeyHash { key, name }
    }

    /// [`ResponseCache::answer_tagged`] with the key's hash, made by
    /// [`ResponseCache::key_hash`] of the same key. Inlined: the server's
    /// UDP path probes once a query, and a call's frame (six registers
    /// saved and restored) cost about 16 instructions of a miss's 79.
    #[inline]
    pub fn answer_hashed(
        &mut self,
        key: &CacheKey,
        hash: KeyHash,
        query: &[u8],
        limit: usize,
        out: &mut [u8],
    ) -> Option<(usize, u32)> {
        let name_hash = hash.name;
        let hash = hash.key;
        let name_len = key.name.as_bytes().len();
        let question_end = HEADER_LEN + name_len + 4;
        let question = query.get(HEADER_LEN..question_end)?;
        let (query_name, type_class) = question.split_at(name_len);
        let qtype = RType(u16::from_be_bytes([type_class[0], type_class[1]]));
        let qclass = RClass(u16::from_be_bytes([type_class[2], type_class[3]]));
        let bits = key.bits();
        // The entry must answer the query's own question: its name equal
        // ignoring case (hence the same labels, so the tail's pointers stay
        // valid), its type and class; the key gives the hash and the EDNS
        // flags. Comparing with the query rather than the key costs one
        // comparison instead of two, and a key not made from this query
        // can only miss.
        let (slots, slab) = (&self.slots, &self.slab);
        let &index = self.table.find(hash, |&i| {
            slots
                .get(i as usize)
                .is_some_and(|slot| slot.answers(slab, query_name, qtype, qclass, bits))
        })?;
        let slot = self.slots.get(index as usize)?;
        if slot.stamp < self.tag_since.get(slot.tag as usize).copied().unwrap_or(0) {
            // Its zone changed since: a miss (replaced by the insert)
            // unless only other names changed.
            if !self.still_answers(index, name_hash) {
                return None;
            }
        }
        let slot = self.slots.get_mut(index as usize)?;
        let data = slot.data(&self.slab);
        let (template, tail) = data.split_at_checked(TEMPLATE_LEN + name_len)?;
        let total = question_end + tail.len();
        if total > limit {
            return None;
        }
        let out = out.get_mut(..total)?;
        out[..2].copy_from_slice(&query[..2]);
        out[2..HEADER_LEN].copy_from_slice(&template[..TEMPLATE_LEN]);
        out[2] |= query[2] & RD;
        out[3] |= query[3] & CD;
        out[HEADER_LEN..question_end].copy_from_slice(question);
        out[question_end..].copy_from_slice(tail);
        slot.visited = true;
        Some((total, slot.tag))
    }

    /// Stores a complete answer written by `tern_authority::respond` for a
    /// query with this key; returns whether it was stored.
    ///
    /// The answer is parsed once, and refused when: it is malformed (bad
    /// header, question or records, trailing bytes) or longer than
    /// [`MAX_ANSWER_LEN`]; QR is clear; TC is set; the opcode is not QUERY;
    /// the rcode is not NOERROR or NXDOMAIN (extended rcode included); its
    /// question differs from the key (name compared ignoring case); its OPT
    /// presence or DO bit differs from the key; it would store more than
    /// [`MAX_ENTRY_LEN`] bytes (counted in
    /// [`CacheCounters::too_large`]); or it alone would exceed
    /// `max_bytes`. An entry with the same key is replaced. Then the oldest
    /// unvisited entries are evicted until both limits hold and the slab
    /// has an extent for it.
    ///
    /// Allocates nothing: the bytes go into the slab.
    pub fn insert(&mut self, key: CacheKey, answer: &[u8]) -> bool {
        self.insert_tagged(key, answer, 0)
    }

    /// [`ResponseCache::insert`], storing `tag` with the entry for
    /// [`ResponseCache::answer_tagged`] to return: a number the cache does
    /// not read, such as the server's index of the answer's zone.
    pub fn insert_tagged(&mut self, key: CacheKey, answer: &[u8], tag: u32) -> bool {
        let Some(tail_start) = cacheable(&key, answer) else {
            return false;
        };
        let hash = self.key_hash(&key);
        self.store(&key, hash, answer, tail_start, tag)
    }

    /// [`ResponseCache::insert_tagged`] for an answer the caller wrote
    /// itself, with `tern_authority::respond_to` and no extra options, to
    /// the query `key` was made from, whose header and question end at
    /// `head_len`: such an answer echoes the key's question and its OPT
    /// presence and DO bit, is well formed, and has no extended rcode (a
    /// query with an EDNS version above 0 has no key), so only its header
    /// is checked here (QR set, TC clear, opcode QUERY, NOERROR or
    /// NXDOMAIN), and it is not parsed again. The miss path of a server
    /// that has just answered the query, which also probed with the key's
    /// hash, `hash` ([`ResponseCache::key_hash`] of `key`).
    ///
    /// Inlined always: under a flood of new names a full cache refuses
    /// most answers at its doorkeeper, a few compares and a bit, for which
    /// a call's frame and saved registers cost about 20 instructions.
    #[inline(always)]
    pub fn insert_written(
        &mut self,
        key: &CacheKey,
        hash: KeyHash,
        answer: &[u8],
        head_len: usize,
        tag: u32,
    ) -> bool {
        let Some(&[flags, rcode]) = answer.get(2..4) else {
            return false;
        };
        // QR set; opcode QUERY and TC clear (the bits between QR and RD);
        // rcode NOERROR or NXDOMAIN.
        if flags & 0xfa != 0x80
            || !matches!(rcode & 0x0f, 0 | 3)
            || answer.len() > MAX_ANSWER_LEN
            || head_len < HEADER_LEN
            || head_len > answer.len()
        {
            return false;
        }
        self.store(key, hash, answer, head_len, tag)
    }

    /// Stores `answer`, whose tail starts at `tail_start`, under `key`,
    /// whose hash is `hash`.
    ///
    /// The refusals first, inlined into the callers: under a flood of new
    /// names a full cache refuses most answers at its doorkeeper, and the
    /// storing's own call (its frame and saved registers, about 30
    /// instructions) is then not made. Inlined always: with
    /// `insert_written` inlined into the server's miss path, `#[inline]`
    /// was not followed, and the refusal paid a call of its own.
    #[inline(always)]
    fn store(
        &mut self,
        key: &CacheKey,
        hash: KeyHash,
        answer: &[u8],
        tail_start: usize,
        tag: u32,
    ) -> bool {
        let Some(tail) = answer.get(tail_start..) else {
            return false;
        };
        let stored = TEMPLATE_LEN + key.name.as_bytes().len() + tail.len();
        if self.limits.max_entries == 0 {
            return false;
        }
        if stored > MAX_ENTRY_LEN {
            self.counters.too_large += 1;
            return false;
        }
        let granules = stored.div_ceil(GRANULE);
        let cost = granules * GRANULE + ENTRY_OVERHEAD;
        if cost > self.limits.max_bytes {
            return false;
        }
        if !self.has_room(cost) && !self.doorkeeper.admit(hash.key) {
            self.counters.not_admitted += 1;
            return false;
        }
        self.store_admitted(key, hash.key, answer, tail_start, tag)
    }

    /// [`ResponseCache::store`] once the entry is admitted: replaces an
    /// entry of the same key, evicts until it fits, writes it.
    #[inline(never)]
    fn store_admitted(
        &mut self,
        key: &CacheKey,
        hash: u64,
        answer: &[u8],
        tail_start: usize,
        tag: u32,
    ) -> bool {
        let name = key.name.as_bytes();
        let tail = &answer[tail_start..];
        let stored = TEMPLATE_LEN + name.len() + tail.len();
        let granules = stored.div_ceil(GRANULE);
        let cost = granules * GRANULE + ENTRY_OVERHEAD;
        let bits = key.bits();

        // Replace, never duplicate.
        let (slots, slab) = (&self.slots, &self.slab);
        let mut reused = None;
        if let Ok(entry) = self.table.find_entry(hash, |&i| {
            slots
                .get(i as usize)
                .is_some_and(|slot| slot.matches(slab, name, key.qtype, key.qclass, bits))
        }) {
            let (index, _) = entry.remove();
            let (at, old) = self.release(index);
            // An entry replaced by an answer of its size (a version's
            // answer with the SOA's new serial, the miss of a name whose
            // entry a change made stale) keeps its extent: no trip through
            // the slab's free lists.
            if old == granules && self.has_room(cost) {
                reused = Some(at);
            } else {
                #[cfg(test)]
                {
                    self.slab_calls += 1;
                }
                self.slab.free(at, old);
            }
        }

        // Bounded: each round removes one entry, and at most
        // MAX_EVICTIONS_TO_FIT rounds are spent on fragmentation alone. On
        // an empty cache both limits hold (given the checks above) and the
        // whole slab is wilderness, larger than `cost`, so the allocation
        // succeeds.
        let mut to_fit = 0;
        let at = loop {
            if let Some(at) = reused {
                break at;
            }
            if self.has_room(cost) {
                #[cfg(test)]
                {
                    self.slab_calls += 1;
                }
                if let Some(at) = self.slab.allocate(granules) {
                    break at;
                }
                to_fit += 1;
                if to_fit > MAX_EVICTIONS_TO_FIT {
                    self.counters.unplaced += 1;
                    return false;
                }
                self.counters.evicted_to_fit += 1;
            }
            let Some((victim, victim_granules)) = self.evict() else {
                return false;
            };
            // A victim of the same size, once the limits hold, is reused
            // as it is: what freeing it and allocating would come to in a
            // flood of answers of one size, without the free lists.
            if victim_granules == granules && self.has_room(cost) {
                break victim;
            }
            self.slab.free(victim, victim_granules);
        };

        // The extent holds `stored` bytes (an empty slice would mean a bug
        // in the slab: refused, not a panic).
        let Some((template, rest)) = self
            .slab
            .get_mut(at, stored)
            .split_at_mut_checked(TEMPLATE_LEN)
        else {
            self.slab.free(at, granules);
            return false;
        };
        template[0] = answer[2] & !RD;
        template[1] = answer[3] & !CD;
        template[2..].copy_from_slice(&answer[4..HEADER_LEN]);
        let (stored_name, stored_tail) = rest.split_at_mut(name.len());
        stored_name.copy_from_slice(name);
        stored_tail.copy_from_slice(tail);
        let slot = Slot {
            at,
            len: stored as u16,
            prev: NIL,
            next: NIL,
            qtype: key.qtype,
            qclass: key.qclass,
            name_len: name.len() as u8,
            bits,
            visited: false,
            labels: labels(name) as u8,
            keep: keep_of(key.qtype, answer, tail_start, bits & BIT_EDNS != 0),
            tag,
            stamp: self.clock,
        };
        let Some(index) = self.allocate(slot) else {
            self.slab.free(at, granules);
            return false;
        };
        self.push_head(index);
        let Self {
            table,
            slots,
            slab,
            hasher,
            ..
        } = self;
        table.insert_unique(hash, index, |&i| {
            slots
                .get(i as usize)
                .map_or(0, |slot| hash_slot(hasher, slab, slot))
        });
        self.len += 1;
        self.bytes += cost;
        self.counters.stored += 1;
        true
    }

    /// Drops every entry (the zones or the answering options changed).
    /// Keeps all the memory for reuse.
    pub fn clear(&mut self) {
        self.clock = 0;
        self.tag_since.clear();
        self.tag_whole.clear();
        self.tag_soa.clear();
        self.tag_serial.clear();
        self.changed.clear();
        self.changed_bits.fill(0);
        self.below_at = [0; DEPTHS];
        self.table.clear();
        self.slots.clear();
        self.slab.clear();
        self.free = NIL;
        self.head = NIL;
        self.tail = NIL;
        self.hand = NIL;
        self.len = 0;
        self.bytes = 0;
        self.doorkeeper.clear();
    }

    /// Whether an entry of `cost` fits within both limits.
    fn has_room(&self, cost: usize) -> bool {
        self.len < self.limits.max_entries && self.bytes + cost <= self.limits.max_bytes
    }

    //--- SIEVE

    /// Evicts one entry: from the hand (or the tail) towards the head, the
    /// first entry not visited since the hand last passed; visited bits
    /// passed over are cleared. Returns the victim's extent, for the caller
    /// to free or reuse; `None` on an empty cache.
    ///
    /// Bound: `len + 1` steps. After `len` steps every entry has been
    /// examined once and its bit cleared, so the next step finds a victim.
    fn evict(&mut self) -> Option<(u32, usize)> {
        if self.tail == NIL {
            return None;
        }
        let mut at = if self.hand == NIL {
            self.tail
        } else {
            self.hand
        };
        for _ in 0..=self.len {
            let slot = &mut self.slots[at as usize];
            if !slot.visited {
                break;
            }
            slot.visited = false;
            at = if slot.next == NIL {
                self.tail
            } else {
                slot.next
            };
        }
        let hash = hash_slot(&self.hasher, &self.slab, &self.slots[at as usize]);
        // `release` moves the hand to the victim's newer neighbour.
        self.hand = at;
        if let Ok(entry) = self.table.find_entry(hash, |&i| i == at) {
            entry.remove();
        }
        self.counters.evicted += 1;
        Some(self.release(at))
    }

    /// Unlinks an entry already removed from the index and frees its slot;
    /// returns its extent (first granule, granules), which the caller
    /// frees or reuses.
    fn release(&mut self, index: u32) -> (u32, usize) {
        let slot = &mut self.slots[index as usize];
        let (prev, next) = (slot.prev, slot.next);
        let cost = slot.cost();
        let extent = (slot.at, slot.granules());
        slot.len = 0;
        slot.visited = false;
        slot.prev = NIL;
        slot.next = self.free;
        self.free = index;
        if self.hand == index {
            self.hand = next;
        }
        if prev == NIL {
            self.tail = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.head = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        self.len -= 1;
        self.bytes -= cost;
        extent
    }

    /// Puts `slot` in a free slot or a new one; `None` past the capacity
    /// reserved (which the entry limit keeps from happening).
    fn allocate(&mut self, slot: Slot) -> Option<u32> {
        if self.free != NIL {
            let index = self.free;
            let place = &mut self.slots[index as usize];
            self.free = place.next;
            *place = slot;
            return Some(index);
        }
        // Within the capacity reserved: never reallocates.
        if self.slots.len() >= self.slots.capacity() {
            return None;
        }
        self.slots.push(slot);
        Some((self.slots.len() - 1) as u32)
    }

    /// Links an entry as the newest.
    fn push_head(&mut self, index: u32) {
        let old_head = self.head;
        let slot = &mut self.slots[index as usize];
        slot.prev = old_head;
        slot.next = NIL;
        if old_head == NIL {
            self.tail = index;
        } else {
            self.slots[old_head as usize].next = index;
        }
        self.head = index;
    }
}

impl core::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ResponseCache")
            .field("len", &self.len)
            .field("bytes", &self.bytes)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Checks an answer against its key; returns where the tail starts.
fn cacheable(key: &CacheKey, answer: &[u8]) -> Option<usize> {
    if answer.len() > MAX_ANSWER_LEN {
        return None;
    }
    let view = MessageView::parse(answer).ok()?;
    let header = view.header();
    if !header.qr() || header.tc() || header.opcode() != Opcode::QUERY {
        return None;
    }
    // NOERROR or NXDOMAIN.
    if !matches!(header.rcode_bits(), 0 | 3) {
        return None;
    }
    let question = view.question()?;
    if !question.name.eq_ignore_case(key.name.as_name())
        || question.qtype != key.qtype
        || question.qclass != key.qclass
    {
        return None;
    }
    // Walks every record: malformed records and trailing bytes fail here.
    let edns = view.edns().ok()?;
    let bits = match edns {
        None => 0,
        Some(edns) if edns.extended_rcode != 0 => return None,
        Some(edns) => BIT_EDNS | if edns.dnssec_ok { BIT_DO } else { 0 },
    };
    if bits != key.bits() {
        return None;
    }
    Some(HEADER_LEN + question.bytes.len())
}

#[cfg(test)]
mod tests;
