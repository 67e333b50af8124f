//! The forwarding cache: upstream answers, pre-serialized, with TTLs that
//! count down.
//!
//! An entry stores the lowercased name and the *tail* of a checked
//! upstream answer (its records after the question, without upstream's
//! OPT), the header flags and counts, the offset of every TTL field in the
//! tail, the time it was stored and its lifetime. A hit copies the tail
//! after the client's own header and question and rewrites each TTL field
//! with `stored TTL - elapsed` (`now` is a parameter, never read from a
//! clock), so no two clients see a TTL that did not count down. Nothing
//! is allocated on a hit.
//!
//! Memory. As in the answer cache (`crate::response`), everything is
//! taken when the cache is made: the slot array for the entry limit, the
//! index for twice that, and a [`Slab`] for the byte limit, whose pages are
//! written only as entries reach them. Each entry's bytes (name, tail, TTL
//! offsets) are one extent of the slab, so neither an insert nor an
//! eviction allocates: a flood of forwarded misses, each an insert into a
//! full cache, runs without `malloc`. An entry holds at most
//! [`MAX_FORWARD_ENTRY_LEN`] bytes (4 KiB, the slab's largest extent);
//! a longer answer, which only a TCP retry can bring, is forwarded but not
//! cached.
//!
//! Bounds: entries and bytes (stored bytes rounded up to the slab's
//! 32-octet granule, plus [`FORWARD_ENTRY_OVERHEAD`] each); eviction is
//! CLOCK over the slot array: a hit sets `visited`, the hand clears it and
//! evicts the first entry without it. Expired entries stay (for
//! serve-stale, RFC 8767) until [`MAX_STALE`] past their expiry or until
//! evicted.

use core::mem::size_of;

use hashbrown::HashTable;
use tern_wire::parse::HEADER_LEN;

use super::validate::Prepared;
use super::ForwardKey;
use crate::hash::KeyedHash;
use crate::response::{CacheLimits, MAX_EVICTIONS_TO_FIT};
use crate::slab::{reserve_cache, Slab, GRANULE, INDEX_SLACK, MAX_ALLOCATION};

/// How long past its expiry an entry may still be served stale (RFC 8767
/// section 5 suggests 1 to 3 days; one day keeps memory for live names).
pub const MAX_STALE: u32 = 86_400;

/// The most bytes one entry stores: the lowercased name, the tail and two
/// octets per TTL offset, in one extent of the slab (4 KiB).
pub const MAX_FORWARD_ENTRY_LEN: usize = MAX_ALLOCATION;

/// Index bytes per entry: a `u32` bucket and its control byte, in a table
/// made for twice the entries (as the answer cache's).
const INDEX_BYTES_PER_ENTRY: usize = 16;

/// Bytes charged per entry besides its stored bytes (rounded up to the
/// slab's granule): the slot, its share of the index and its place on the
/// free list, all allocated at construction for the entry limit.
pub const FORWARD_ENTRY_OVERHEAD: usize =
    size_of::<Option<Entry>>() + INDEX_BYTES_PER_ENTRY + size_of::<u32>();

/// The OPT record written for an EDNS client: root owner, type 41, our UDP
/// size, no extended rcode, version 0, flags (DO), no options.
pub(crate) const OPT_LEN: usize = 11;

/// Header octet 2: TC.
const TC: u8 = 0x02;
/// Header octet 2: RD.
const RD: u8 = 0x01;
/// Header octet 3: CD.
const CD: u8 = 0x10;

//----------- Entry ----------------------------------------------------------

/// One cached answer: where its bytes are in the slab, and its facts.
pub(crate) struct Entry {
    /// The first granule of its bytes: the lowercased name, the tail,
    /// then each TTL offset as two octets (little-endian).
    at: u32,
    /// Stored bytes.
    len: u16,
    tail_len: u16,
    name_len: u8,
    bits: u8,
    qtype: u16,
    qclass: u16,
    flags: [u8; 2],
    counts: [u16; 3],
    /// When it was stored, in seconds of the caller's clock.
    stored: u32,
    /// Its lifetime in seconds.
    ttl: u32,
    hits: u32,
    visited: bool,
    prefetching: bool,
}

impl Entry {
    fn data<'s>(&self, slab: &'s Slab) -> &'s [u8] {
        slab.get(self.at, usize::from(self.len))
    }

    fn name<'s>(&self, slab: &'s Slab) -> &'s [u8] {
        slab.get(self.at, usize::from(self.name_len))
    }

    fn matches(&self, slab: &Slab, key: &ForwardKey) -> bool {
        self.qtype == key.qtype.0
            && self.qclass == key.qclass.0
            && self.bits == key.bits()
            && self.name(slab) == key.name.as_bytes()
    }

    fn granules(&self) -> usize {
        usize::from(self.len).div_ceil(GRANULE)
    }

    fn cost(&self) -> usize {
        self.granules() * GRANULE + FORWARD_ENTRY_OVERHEAD
    }

    fn fresh(&self, now: u32) -> bool {
        now < self.stored.saturating_add(self.ttl)
    }

    fn usable_stale(&self, now: u32) -> bool {
        now < self
            .stored
            .saturating_add(self.ttl)
            .saturating_add(MAX_STALE)
    }
}

//----------- Found ----------------------------------------------------------

/// A cached answer as read: its entry and the slab holding its bytes.
#[derive(Clone, Copy)]
pub(crate) struct Found<'c> {
    entry: &'c Entry,
    slab: &'c Slab,
}

impl<'c> Found<'c> {
    /// Seconds left before expiry (0 once expired).
    pub(crate) fn remaining(&self, now: u32) -> u32 {
        (self.entry.stored + self.entry.ttl).saturating_sub(now)
    }

    /// The entry's parts, for [`write_answer`].
    pub(crate) fn parts(&self) -> Parts<'c> {
        let data = self.entry.data(self.slab);
        let name_len = usize::from(self.entry.name_len);
        let tail_end = name_len + usize::from(self.entry.tail_len);
        Parts {
            flags: self.entry.flags,
            counts: self.entry.counts,
            tail: data.get(name_len..tail_end).unwrap_or(&[]),
            ttl_offsets: data.get(tail_end..).unwrap_or(&[]),
        }
    }

    pub(crate) fn elapsed(&self, now: u32) -> u32 {
        now.saturating_sub(self.entry.stored)
    }

    pub(crate) fn hits(&self) -> u32 {
        self.entry.hits
    }

    pub(crate) fn ttl(&self) -> u32 {
        self.entry.ttl
    }

    pub(crate) fn prefetching(&self) -> bool {
        self.entry.prefetching
    }
}

//----------- Parts ----------------------------------------------------------

/// What an answer is written from: a cache entry's or a fresh upstream
/// answer's flags, counts, tail and TTL offsets.
#[derive(Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub(crate) flags: [u8; 2],
    pub(crate) counts: [u16; 3],
    pub(crate) tail: &'a [u8],
    /// Offsets in `tail` of every TTL field, two octets each,
    /// little-endian.
    pub(crate) ttl_offsets: &'a [u8],
}

impl<'a> Parts<'a> {
    pub(crate) fn of(prepared: &'a Prepared) -> Self {
        Parts {
            flags: prepared.flags,
            counts: prepared.counts,
            tail: &prepared.tail,
            ttl_offsets: &prepared.ttl_offsets,
        }
    }
}

/// How the TTL fields are written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ttls {
    /// Stored TTL minus this many seconds (at least 0).
    Elapsed(u32),
    /// This TTL everywhere (serve-stale).
    Fixed(u32),
}

/// The client's side of an answer: its header and question, whether it
/// sent EDNS, and its size limit.
#[derive(Clone, Copy)]
pub(crate) struct ClientView<'a> {
    /// The client's header and question (at least [`HEADER_LEN`] octets).
    pub(crate) head: &'a [u8],
    pub(crate) edns: bool,
    pub(crate) dnssec_ok: bool,
    pub(crate) limit: usize,
    /// The UDP size our OPT advertises.
    pub(crate) udp_size: u16,
    /// Our NSID option for the OPT (empty: none; only with `edns`).
    pub(crate) nsid: &'a [u8],
}

/// Writes a forwarded answer for `client` into `out`: the client's ID and
/// question, QR/RA and the stored flags with the client's RD and CD, the
/// records with TTLs counted down, and an OPT if the client sent one
/// (holding `client.nsid`). An answer over the client's limit (the OPT and
/// its NSID counted) is sent empty with TC set (the client retries over
/// TCP). Returns the length, or `None` if `out` is too small
/// even for that.
pub(crate) fn write_answer(
    parts: Parts<'_>,
    ttls: Ttls,
    client: ClientView<'_>,
    out: &mut [u8],
) -> Option<usize> {
    let head = client.head;
    if head.len() < HEADER_LEN {
        return None;
    }
    let nsid = if client.edns { client.nsid } else { &[] };
    let opt = if client.edns { OPT_LEN + nsid.len() } else { 0 };
    let full = head.len() + parts.tail.len() + opt;
    let truncated = full > client.limit.min(out.len());
    let tail: &[u8] = if truncated { &[] } else { parts.tail };
    let total = head.len() + tail.len() + opt;
    let out = out.get_mut(..total)?;
    out[..2].copy_from_slice(&head[..2]);
    out[2] = parts.flags[0] | (head[2] & RD) | if truncated { TC } else { 0 };
    out[3] = parts.flags[1] | (head[3] & CD);
    out[4..6].copy_from_slice(&[0, 1]);
    let counts = if truncated { [0; 3] } else { parts.counts };
    out[6..8].copy_from_slice(&counts[0].to_be_bytes());
    out[8..10].copy_from_slice(&counts[1].to_be_bytes());
    let additional = counts[2] + u16::from(client.edns);
    out[10..12].copy_from_slice(&additional.to_be_bytes());
    out[HEADER_LEN..head.len()].copy_from_slice(&head[HEADER_LEN..]);
    let records = &mut out[head.len()..head.len() + tail.len()];
    records.copy_from_slice(tail);
    if !truncated {
        for offset in parts.ttl_offsets.chunks_exact(2) {
            let at = usize::from(u16::from_le_bytes([offset[0], offset[1]]));
            let Some(field) = records.get_mut(at..at + 4) else {
                continue;
            };
            let stored = u32::from_be_bytes([field[0], field[1], field[2], field[3]]);
            let ttl = match ttls {
                Ttls::Elapsed(elapsed) => stored.saturating_sub(elapsed),
                Ttls::Fixed(ttl) => ttl,
            };
            field.copy_from_slice(&ttl.to_be_bytes());
        }
    }
    if client.edns {
        let o = &mut out[total - opt..];
        o[0] = 0;
        o[1..3].copy_from_slice(&41u16.to_be_bytes());
        o[3..5].copy_from_slice(&client.udp_size.to_be_bytes());
        o[5..9].copy_from_slice(&[0, 0, if client.dnssec_ok { 0x80 } else { 0 }, 0]);
        // At most `MAX_NSID_OPTION` octets: the cast cannot wrap.
        o[9..11].copy_from_slice(&(nsid.len() as u16).to_be_bytes());
        o[OPT_LEN..].copy_from_slice(nsid);
    }
    Some(total)
}

//----------- ForwardCache ---------------------------------------------------

/// One core's cache of forwarded answers. Not shared.
pub(crate) struct ForwardCache {
    /// Hash of the key -> slot. Made for `INDEX_SLACK` times the entry
    /// limit: never grows.
    table: HashTable<u32>,
    /// Reserved for the entry limit: never grows past it.
    slots: Vec<Option<Entry>>,
    /// Free slots; reserved for the entry limit.
    free: Vec<u32>,
    /// The entries' bytes.
    slab: Slab,
    hand: usize,
    len: usize,
    bytes: usize,
    limits: CacheLimits,
    /// foldhash under a per-process random key: names are chosen by
    /// whoever sends queries (see `crate::hash`).
    hasher: KeyedHash,
}

impl ForwardCache {
    /// An empty cache with all the memory it will use: the slots and the
    /// index for the entry limit, and the slab for the byte limit (its
    /// pages written only as entries reach them). As the answer cache's,
    /// the limits in force may be lower than asked: at most the entries
    /// `max_bytes` can hold, and each part halved until the system grants
    /// it.
    pub(crate) fn new(limits: CacheLimits) -> Self {
        let mut table = HashTable::new();
        let mut slots = Vec::new();
        let mut free = Vec::new();
        let (max_entries, max_bytes, slab) = reserve_cache(
            limits.max_entries,
            limits.max_bytes,
            FORWARD_ENTRY_OVERHEAD,
            MAX_FORWARD_ENTRY_LEN,
            |entries| {
                table
                    .try_reserve(entries.saturating_mul(INDEX_SLACK), |_| 0)
                    .is_ok()
                    && slots.try_reserve_exact(entries).is_ok()
                    && free.try_reserve_exact(entries).is_ok()
            },
        );
        ForwardCache {
            table,
            slots,
            free,
            slab,
            hand: 0,
            len: 0,
            bytes: 0,
            limits: CacheLimits {
                max_entries,
                max_bytes,
            },
            hasher: KeyedHash::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    fn hash_key(&self, key: &ForwardKey) -> u64 {
        self.hasher
            .hash(key.name.as_bytes(), key.qtype.0, key.qclass.0, key.bits())
    }

    /// The slot of `key`'s entry, fresh or not.
    fn find(&self, key: &ForwardKey) -> Option<u32> {
        let hash = self.hash_key(key);
        let (slots, slab) = (&self.slots, &self.slab);
        self.table
            .find(hash, |&i| {
                slots
                    .get(i as usize)
                    .and_then(Option::as_ref)
                    .is_some_and(|entry| entry.matches(slab, key))
            })
            .copied()
    }

    /// The fresh entry for `key`, counted as a hit and marked as used
    /// (its slot and the entry). No allocation.
    pub(crate) fn fresh(&mut self, key: &ForwardKey, now: u32) -> Option<(u32, Found<'_>)> {
        let index = self.find(key)?;
        let entry = self.slots.get_mut(index as usize)?.as_mut()?;
        if !entry.fresh(now) {
            return None;
        }
        entry.visited = true;
        entry.hits = entry.hits.saturating_add(1);
        let entry = &*entry;
        Some((
            index,
            Found {
                entry,
                slab: &self.slab,
            },
        ))
    }

    /// An entry for `key` that expired less than [`MAX_STALE`] ago (or is
    /// still fresh).
    pub(crate) fn stale(&self, key: &ForwardKey, now: u32) -> Option<Found<'_>> {
        let index = self.find(key)?;
        let entry = self.slots.get(index as usize)?.as_ref()?;
        entry.usable_stale(now).then_some(Found {
            entry,
            slab: &self.slab,
        })
    }

    /// Marks the entry in slot `index` as being prefetched.
    pub(crate) fn start_prefetch(&mut self, index: u32) {
        if let Some(Some(entry)) = self.slots.get_mut(index as usize) {
            entry.prefetching = true;
        }
    }

    /// Clears the prefetching mark of `key`'s entry.
    pub(crate) fn prefetch_done(&mut self, key: &ForwardKey) {
        if let Some(index) = self.find(key) {
            if let Some(Some(entry)) = self.slots.get_mut(index as usize) {
                entry.prefetching = false;
            }
        }
    }

    /// Stores `prepared` for `key` at `now`, replacing any entry; evicts
    /// until both limits hold and the slab has an extent for it (at most
    /// [`MAX_EVICTIONS_TO_FIT`] evictions beyond the limits). Returns
    /// whether it was stored (a zero TTL, an answer alone over the byte
    /// limit or over [`MAX_FORWARD_ENTRY_LEN`], or a zero entry limit:
    /// not). Allocates nothing: the bytes go into the slab.
    pub(crate) fn insert(&mut self, key: &ForwardKey, prepared: &Prepared, now: u32) -> bool {
        if prepared.ttl == 0 || self.limits.max_entries == 0 {
            return false;
        }
        let name = key.name.as_bytes();
        let stored = name.len() + prepared.tail.len() + prepared.ttl_offsets.len();
        if stored > MAX_FORWARD_ENTRY_LEN {
            return false;
        }
        let granules = stored.div_ceil(GRANULE);
        let cost = granules * GRANULE + FORWARD_ENTRY_OVERHEAD;
        if cost > self.limits.max_bytes {
            return false;
        }
        self.remove(key);
        // Bounded: each round evicts one entry, and at most
        // MAX_EVICTIONS_TO_FIT rounds are spent on fragmentation alone. On
        // an empty cache both limits hold (given the checks above) and the
        // whole slab is free, so the allocation succeeds.
        let mut to_fit = 0;
        let at = loop {
            if self.has_room(cost) {
                if let Some(at) = self.slab.allocate(granules) {
                    break at;
                }
                to_fit += 1;
                if to_fit > MAX_EVICTIONS_TO_FIT {
                    return false;
                }
            }
            let Some((victim, victim_granules)) = self.evict() else {
                return false;
            };
            // A victim of the same size, once the limits hold, is reused
            // as it is.
            if victim_granules == granules && self.has_room(cost) {
                break victim;
            }
            self.slab.free(victim, victim_granules);
        };
        let bytes = self.slab.get_mut(at, stored);
        if bytes.len() != stored {
            // Out of the slab's range: a bug there; refused, not a panic.
            self.slab.free(at, granules);
            return false;
        }
        let (stored_name, rest) = bytes.split_at_mut(name.len());
        let (stored_tail, stored_offsets) = rest.split_at_mut(prepared.tail.len());
        stored_name.copy_from_slice(name);
        stored_tail.copy_from_slice(&prepared.tail);
        stored_offsets.copy_from_slice(&prepared.ttl_offsets);
        let entry = Entry {
            at,
            // At most MAX_FORWARD_ENTRY_LEN: the casts cannot wrap.
            len: stored as u16,
            tail_len: prepared.tail.len() as u16,
            name_len: name.len() as u8,
            bits: key.bits(),
            qtype: key.qtype.0,
            qclass: key.qclass.0,
            flags: prepared.flags,
            counts: prepared.counts,
            stored: now,
            ttl: prepared.ttl,
            hits: 0,
            visited: false,
            prefetching: false,
        };
        // A free slot, or a new one: fewer than `max_entries` are in use,
        // and the array is reserved for that many, so it never grows.
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Some(entry);
                index
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        let hash = self.hash_key(key);
        let Self {
            table,
            slots,
            slab,
            hasher,
            ..
        } = self;
        table.insert_unique(hash, index, |&i| match slots.get(i as usize) {
            Some(Some(entry)) => {
                hasher.hash(entry.name(slab), entry.qtype, entry.qclass, entry.bits)
            }
            _ => 0,
        });
        self.len += 1;
        self.bytes += cost;
        true
    }

    /// Whether an entry of `cost` fits within both limits.
    fn has_room(&self, cost: usize) -> bool {
        self.len < self.limits.max_entries && self.bytes + cost <= self.limits.max_bytes
    }

    /// Removes `key`'s entry, if any, and frees its bytes.
    fn remove(&mut self, key: &ForwardKey) {
        let hash = self.hash_key(key);
        let (slots, slab) = (&self.slots, &self.slab);
        if let Ok(found) = self.table.find_entry(hash, |&i| {
            slots
                .get(i as usize)
                .and_then(Option::as_ref)
                .is_some_and(|entry| entry.matches(slab, key))
        }) {
            let (index, _) = found.remove();
            if let Some((at, granules)) = self.release(index) {
                self.slab.free(at, granules);
            }
        }
    }

    /// Frees a slot already removed from the index; returns its extent,
    /// which the caller frees (or reuses).
    fn release(&mut self, index: u32) -> Option<(u32, usize)> {
        let entry = self.slots.get_mut(index as usize).and_then(Option::take)?;
        self.len -= 1;
        self.bytes -= entry.cost();
        self.free.push(index);
        Some((entry.at, entry.granules()))
    }

    /// CLOCK: from the hand, clears visited bits and evicts the first entry
    /// without one; returns its extent, not yet freed. Bound: two passes
    /// over the slots.
    fn evict(&mut self) -> Option<(u32, usize)> {
        if self.len == 0 || self.slots.is_empty() {
            return None;
        }
        let slots = self.slots.len();
        for _ in 0..2 * slots + 1 {
            let at = self.hand % slots;
            self.hand = (at + 1) % slots;
            let Some(entry) = self.slots[at].as_mut() else {
                continue;
            };
            if entry.visited {
                entry.visited = false;
                continue;
            }
            let hash = self.hasher.hash(
                entry.name(&self.slab),
                entry.qtype,
                entry.qclass,
                entry.bits,
            );
            if let Ok(found) = self.table.find_entry(hash, |&i| i as usize == at) {
                found.remove();
            }
            return self.release(at as u32);
        }
        None
    }
}
