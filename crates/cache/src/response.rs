//! The response cache: pre-serialized answers, SIEVE eviction, a keyed hash.
//!
//! Layout. Entries live in a slot array (`Vec<Slot>`, 32 bytes a slot on
//! 64-bit targets); a `hashbrown::HashTable<u32>` maps a key's hash to a
//! slot index, so the index costs 4 bytes and one control byte an entry.
//! Each slot owns one boxed byte string:
//!
//! ```text
//!   flags(2, RD clear) counts(8) | lowercased qname | tail (answer, authority, additional, OPT)
//! ```
//!
//! The name is stored there rather than as a `LowerNameBuf` (256 bytes
//! whatever the name's length): a typical entry then costs its real length
//! plus [`ENTRY_OVERHEAD`], and the lookup compares the key's name with the
//! stored bytes (one `memcmp`) after the table has matched 7 bits of hash
//! and the slot's type, class, flags and name length.
//!
//! Eviction is SIEVE (Zhang et al., NSDI 2024): a FIFO list threaded
//! through the slots (`prev`/`next` indices), a `visited` bit set on a hit,
//! and a hand that walks from the oldest entry towards the newest, clearing
//! visited bits and evicting the first entry without one. A hit writes one
//! bool; an eviction is amortized O(1) and bounded by one pass over the
//! list. Unlike CLOCK, new entries enter at the head while the hand keeps
//! its place, so a flood of one-time names (random-subdomain attacks) is
//! evicted before the entries that real clients keep asking for.

use core::mem::size_of;

use hashbrown::HashTable;
use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::{Opcode, RClass, RType};

use crate::hash::KeyedHash;
use crate::key::{CacheKey, BIT_DO, BIT_EDNS};

/// The largest answer stored: the largest DNS message (TCP's two-octet
/// length prefix).
pub const MAX_ANSWER_LEN: usize = 65535;

/// Header octets 2-3 (flags) and 4-11 (counts) kept from the answer.
const TEMPLATE_LEN: usize = 10;

/// The RD bit in header octet 2.
const RD: u8 = 0x01;

/// The CD bit in header octet 3 (copied from each query, like RD).
const CD: u8 = 0x10;

/// The most slots: indices are `u32` and `u32::MAX` means "none".
const MAX_SLOTS: usize = (u32::MAX - 1) as usize;

/// "No slot" in the list links and the hand.
const NIL: u32 = u32::MAX;

/// Index bytes per entry: a `u32` and hashbrown's control byte, rounded up
/// for its 7/8 maximum load.
const INDEX_BYTES_PER_ENTRY: usize = 8;

/// What the allocator adds to each boxed byte string: glibc malloc's chunk
/// header plus rounding to 16 octets.
const ALLOC_OVERHEAD: usize = 16;

/// Bytes charged to each entry on top of its stored bytes (template, name
/// and tail): the slot, its share of the index and the allocator's
/// overhead. [`ResponseCache::bytes`] is the sum of these honest costs;
/// what it leaves out is the slack of the slot array and of the index
/// after growth or eviction (at most `max_entries` slots).
pub const ENTRY_OVERHEAD: usize = size_of::<Slot>() + INDEX_BYTES_PER_ENTRY + ALLOC_OVERHEAD;

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
    /// The most bytes, counted as stored bytes plus [`ENTRY_OVERHEAD`] per
    /// entry. Default [`DEFAULT_MAX_BYTES`] (64 MiB): 100 000 entries of a
    /// typical 200-octet answer need about 25 MiB, so the entry limit
    /// usually binds first and large answers cannot crowd memory.
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

//----------- Slot -----------------------------------------------------------

/// One entry, or a free slot (empty `data`, `next` links the free list).
struct Slot {
    /// Template, lowercased name, tail; see the module docs.
    data: Box<[u8]>,
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
    /// The caller's tag (see [`ResponseCache::insert_tagged`]).
    tag: u32,
}

impl Slot {
    fn name(&self) -> &[u8] {
        self.data
            .get(TEMPLATE_LEN..TEMPLATE_LEN + usize::from(self.name_len))
            .unwrap_or(&[])
    }

    fn tail(&self) -> &[u8] {
        self.data
            .get(TEMPLATE_LEN + usize::from(self.name_len)..)
            .unwrap_or(&[])
    }

    fn matches(&self, name: &[u8], qtype: RType, qclass: RClass, bits: u8) -> bool {
        self.qtype == qtype
            && self.qclass == qclass
            && self.bits == bits
            && usize::from(self.name_len) == name.len()
            && self.name() == name
    }

    /// Whether this entry answers a question whose name is `query_name`
    /// as the client wrote it (the stored name is lowercase).
    fn answers(&self, query_name: &[u8], qtype: RType, qclass: RClass, bits: u8) -> bool {
        self.qtype == qtype
            && self.qclass == qclass
            && self.bits == bits
            && usize::from(self.name_len) == query_name.len()
            && eq_lowercase(query_name, self.name())
    }

    fn cost(&self) -> usize {
        self.data.len() + ENTRY_OVERHEAD
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

fn hash_slot(hasher: &KeyedHash, slot: &Slot) -> u64 {
    hash_parts(hasher, slot.name(), slot.qtype, slot.qclass, slot.bits)
}

//----------- ResponseCache --------------------------------------------------

/// One core's cache of complete authoritative answers, keyed by
/// [`CacheKey`]. Not shared: every method takes `&mut self` or `&self` of
/// the core that owns it; there is no lock, atomic, `Arc` or `RefCell`.
pub struct ResponseCache {
    /// Hash of the key -> slot index.
    table: HashTable<u32>,
    slots: Vec<Slot>,
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
    /// foldhash under a per-process random key: query names are chosen by
    /// whoever sends packets (see `crate::hash` for why foldhash suffices
    /// in a bounded, evicting cache).
    hasher: KeyedHash,
}

impl ResponseCache {
    /// An empty cache; nothing is allocated until the first insert.
    /// `max_entries` above `u32::MAX - 1` is lowered to it.
    pub fn new(limits: CacheLimits) -> Self {
        ResponseCache {
            table: HashTable::new(),
            slots: Vec::new(),
            free: NIL,
            head: NIL,
            tail: NIL,
            hand: NIL,
            len: 0,
            bytes: 0,
            limits: CacheLimits {
                max_entries: limits.max_entries.min(MAX_SLOTS),
                max_bytes: limits.max_bytes,
            },
            hasher: KeyedHash::new(),
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

    /// The bytes charged to the entries: stored bytes plus
    /// [`ENTRY_OVERHEAD`] each. Never above `max_bytes`.
    pub fn bytes(&self) -> usize {
        self.bytes
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
        let name_len = key.name.as_bytes().len();
        let question_end = HEADER_LEN + name_len + 4;
        let question = query.get(HEADER_LEN..question_end)?;
        let (query_name, type_class) = question.split_at(name_len);
        let qtype = RType(u16::from_be_bytes([type_class[0], type_class[1]]));
        let qclass = RClass(u16::from_be_bytes([type_class[2], type_class[3]]));
        let bits = key.bits();
        let hash = hash_parts(
            &self.hasher,
            key.name.as_bytes(),
            key.qtype,
            key.qclass,
            bits,
        );
        // The entry must answer the query's own question: its name equal
        // ignoring case (hence the same labels, so the tail's pointers stay
        // valid), its type and class; the key gives the hash and the EDNS
        // flags. Comparing with the query rather than the key costs one
        // comparison instead of two, and a key not made from this query
        // can only miss.
        let slots = &self.slots;
        let &index = self.table.find(hash, |&i| {
            slots
                .get(i as usize)
                .is_some_and(|slot| slot.answers(query_name, qtype, qclass, bits))
        })?;
        let slot = self.slots.get_mut(index as usize)?;
        let tail = slot.tail();
        let total = question_end + tail.len();
        if total > limit {
            return None;
        }
        let out = out.get_mut(..total)?;
        out[..2].copy_from_slice(&query[..2]);
        out[2..HEADER_LEN].copy_from_slice(&slot.data[..TEMPLATE_LEN]);
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
    /// presence or DO bit differs from the key; or it alone would exceed
    /// `max_bytes`. An entry with the same key is replaced. Then the oldest
    /// unvisited entries are evicted until both limits hold.
    ///
    /// Allocates the entry's bytes (the miss path only).
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
        let name = key.name.as_bytes();
        let tail = &answer[tail_start..];
        let stored = TEMPLATE_LEN + name.len() + tail.len();
        if self.limits.max_entries == 0 || stored + ENTRY_OVERHEAD > self.limits.max_bytes {
            return false;
        }
        let bits = key.bits();
        let hash = hash_parts(&self.hasher, name, key.qtype, key.qclass, bits);

        // Replace, never duplicate.
        let slots = &self.slots;
        if let Ok(entry) = self.table.find_entry(hash, |&i| {
            slots
                .get(i as usize)
                .is_some_and(|slot| slot.matches(name, key.qtype, key.qclass, bits))
        }) {
            let (index, _) = entry.remove();
            self.release(index);
        }

        // Bounded: each round removes one entry, and `evict` fails only on
        // an empty cache, which satisfies both limits given the checks above.
        while self.len >= self.limits.max_entries
            || self.bytes + stored + ENTRY_OVERHEAD > self.limits.max_bytes
        {
            if !self.evict() {
                return false;
            }
        }

        let mut data = Vec::with_capacity(stored);
        data.extend_from_slice(&[answer[2] & !RD, answer[3] & !CD]);
        data.extend_from_slice(&answer[4..HEADER_LEN]);
        data.extend_from_slice(name);
        data.extend_from_slice(tail);
        let slot = Slot {
            data: data.into_boxed_slice(),
            prev: NIL,
            next: NIL,
            qtype: key.qtype,
            qclass: key.qclass,
            name_len: name.len() as u8,
            bits,
            visited: false,
            tag,
        };
        let Some(index) = self.allocate(slot) else {
            return false;
        };
        self.push_head(index);
        let Self {
            table,
            slots,
            hasher,
            ..
        } = self;
        table.insert_unique(hash, index, |&i| {
            slots
                .get(i as usize)
                .map_or(0, |slot| hash_slot(hasher, slot))
        });
        self.len += 1;
        self.bytes += stored + ENTRY_OVERHEAD;
        true
    }

    /// Drops every entry (the zones or the answering options changed).
    /// Keeps the slot array's and the index's memory for reuse.
    pub fn clear(&mut self) {
        self.table.clear();
        self.slots.clear();
        self.free = NIL;
        self.head = NIL;
        self.tail = NIL;
        self.hand = NIL;
        self.len = 0;
        self.bytes = 0;
    }

    //--- SIEVE

    /// Evicts one entry: from the hand (or the tail) towards the head, the
    /// first entry not visited since the hand last passed; visited bits
    /// passed over are cleared. Returns false on an empty cache.
    ///
    /// Bound: `len + 1` steps. After `len` steps every entry has been
    /// examined once and its bit cleared, so the next step finds a victim.
    fn evict(&mut self) -> bool {
        if self.tail == NIL {
            return false;
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
        let hash = hash_slot(&self.hasher, &self.slots[at as usize]);
        // `release` moves the hand to the victim's newer neighbour.
        self.hand = at;
        if let Ok(entry) = self.table.find_entry(hash, |&i| i == at) {
            entry.remove();
        }
        self.release(at);
        true
    }

    /// Unlinks an entry already removed from the index and frees its slot.
    fn release(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        let (prev, next) = (slot.prev, slot.next);
        let cost = slot.cost();
        slot.data = Box::default();
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
    }

    /// Puts `slot` in a free slot or a new one; `None` past [`MAX_SLOTS`].
    fn allocate(&mut self, slot: Slot) -> Option<u32> {
        if self.free != NIL {
            let index = self.free;
            let place = &mut self.slots[index as usize];
            self.free = place.next;
            *place = slot;
            return Some(index);
        }
        if self.slots.len() >= MAX_SLOTS {
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
