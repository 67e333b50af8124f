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
//! Bounds: entries and bytes (stored bytes plus [`FORWARD_ENTRY_OVERHEAD`]
//! each); eviction is CLOCK over the slot array: a hit sets `visited`, the
//! hand clears it and evicts the first entry without it. Expired entries
//! stay (for serve-stale, RFC 8767) until [`MAX_STALE`] past their expiry
//! or until evicted.

use core::mem::size_of;

use hashbrown::HashTable;
use tern_wire::parse::HEADER_LEN;

use super::validate::Prepared;
use super::ForwardKey;
use crate::hash::KeyedHash;
use crate::response::CacheLimits;

/// How long past its expiry an entry may still be served stale (RFC 8767
/// section 5 suggests 1 to 3 days; one day keeps memory for live names).
pub const MAX_STALE: u32 = 86_400;

/// Bytes charged per entry besides its stored bytes: the slot, its share
/// of the index, and the allocator's overhead for two boxed slices.
pub const FORWARD_ENTRY_OVERHEAD: usize = size_of::<Option<Entry>>() + 8 + 2 * 16;

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

/// One cached answer.
pub(crate) struct Entry {
    /// Lowercased name, then the tail.
    data: Box<[u8]>,
    ttl_offsets: Box<[u16]>,
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
    pub(crate) prefetching: bool,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.data[..usize::from(self.name_len)]
    }

    fn tail(&self) -> &[u8] {
        &self.data[usize::from(self.name_len)..]
    }

    fn matches(&self, key: &ForwardKey) -> bool {
        self.qtype == key.qtype.0
            && self.qclass == key.qclass.0
            && self.bits == key.bits()
            && self.name() == key.name.as_bytes()
    }

    fn cost(&self) -> usize {
        self.data.len() + 2 * self.ttl_offsets.len() + FORWARD_ENTRY_OVERHEAD
    }

    /// Seconds left before expiry (0 once expired).
    pub(crate) fn remaining(&self, now: u32) -> u32 {
        (self.stored + self.ttl).saturating_sub(now)
    }

    pub(crate) fn fresh(&self, now: u32) -> bool {
        now < self.stored.saturating_add(self.ttl)
    }

    fn usable_stale(&self, now: u32) -> bool {
        now < self
            .stored
            .saturating_add(self.ttl)
            .saturating_add(MAX_STALE)
    }

    /// The entry's parts, for [`write_answer`].
    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            flags: self.flags,
            counts: self.counts,
            tail: self.tail(),
            ttl_offsets: &self.ttl_offsets,
        }
    }

    pub(crate) fn elapsed(&self, now: u32) -> u32 {
        now.saturating_sub(self.stored)
    }

    pub(crate) fn hits(&self) -> u32 {
        self.hits
    }

    pub(crate) fn ttl(&self) -> u32 {
        self.ttl
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
    pub(crate) ttl_offsets: &'a [u16],
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
        for &offset in parts.ttl_offsets {
            let at = usize::from(offset);
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
    table: HashTable<u32>,
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    hand: usize,
    len: usize,
    bytes: usize,
    limits: CacheLimits,
    /// foldhash under a per-process random key: names are chosen by
    /// whoever sends queries (see `crate::hash`).
    hasher: KeyedHash,
}

impl ForwardCache {
    pub(crate) fn new(limits: CacheLimits) -> Self {
        ForwardCache {
            table: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            hand: 0,
            len: 0,
            bytes: 0,
            limits: CacheLimits {
                max_entries: limits.max_entries.min(u32::MAX as usize - 1),
                max_bytes: limits.max_bytes,
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

    fn hash(&self, name: &[u8], qtype: u16, qclass: u16, bits: u8) -> u64 {
        self.hasher.hash(name, qtype, qclass, bits)
    }

    fn hash_key(&self, key: &ForwardKey) -> u64 {
        self.hash(key.name.as_bytes(), key.qtype.0, key.qclass.0, key.bits())
    }

    /// The slot of `key`'s entry, fresh or not.
    fn find(&self, key: &ForwardKey) -> Option<u32> {
        let hash = self.hash_key(key);
        let slots = &self.slots;
        self.table
            .find(hash, |&i| {
                slots
                    .get(i as usize)
                    .and_then(Option::as_ref)
                    .is_some_and(|entry| entry.matches(key))
            })
            .copied()
    }

    /// A fresh entry for `key`, marked as used. No allocation.
    pub(crate) fn fresh(&mut self, key: &ForwardKey, now: u32) -> Option<&mut Entry> {
        let index = self.find(key)?;
        let entry = self.slots.get_mut(index as usize)?.as_mut()?;
        if !entry.fresh(now) {
            return None;
        }
        entry.visited = true;
        entry.hits = entry.hits.saturating_add(1);
        Some(entry)
    }

    /// An entry for `key` that expired less than [`MAX_STALE`] ago (or is
    /// still fresh).
    pub(crate) fn stale(&self, key: &ForwardKey, now: u32) -> Option<&Entry> {
        let index = self.find(key)?;
        let entry = self.slots.get(index as usize)?.as_ref()?;
        entry.usable_stale(now).then_some(entry)
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
    /// until both limits hold. Returns whether it was stored (a zero TTL,
    /// an answer alone over the byte limit, or a zero entry limit: not).
    pub(crate) fn insert(&mut self, key: &ForwardKey, prepared: &Prepared, now: u32) -> bool {
        if prepared.ttl == 0 || self.limits.max_entries == 0 {
            return false;
        }
        let name = key.name.as_bytes();
        let cost = name.len()
            + prepared.tail.len()
            + 2 * prepared.ttl_offsets.len()
            + FORWARD_ENTRY_OVERHEAD;
        if cost > self.limits.max_bytes {
            return false;
        }
        self.remove(key);
        // Bounded: each round removes one entry; `evict` fails only when
        // the cache is empty, and then both limits hold given the checks
        // above.
        while self.len >= self.limits.max_entries || self.bytes + cost > self.limits.max_bytes {
            if !self.evict() {
                return false;
            }
        }
        let mut data = Vec::with_capacity(name.len() + prepared.tail.len());
        data.extend_from_slice(name);
        data.extend_from_slice(&prepared.tail);
        let entry = Entry {
            data: data.into_boxed_slice(),
            ttl_offsets: prepared.ttl_offsets.clone().into_boxed_slice(),
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
            hasher,
            ..
        } = self;
        table.insert_unique(hash, index, |&i| match slots.get(i as usize) {
            Some(Some(entry)) => hasher.hash(entry.name(), entry.qtype, entry.qclass, entry.bits),
            _ => 0,
        });
        self.len += 1;
        self.bytes += cost;
        true
    }

    /// Removes `key`'s entry, if any.
    fn remove(&mut self, key: &ForwardKey) {
        let hash = self.hash_key(key);
        let slots = &self.slots;
        if let Ok(found) = self.table.find_entry(hash, |&i| {
            slots
                .get(i as usize)
                .and_then(Option::as_ref)
                .is_some_and(|entry| entry.matches(key))
        }) {
            let (index, _) = found.remove();
            self.release(index);
        }
    }

    /// Frees a slot already removed from the index.
    fn release(&mut self, index: u32) {
        if let Some(entry) = self.slots.get_mut(index as usize).and_then(Option::take) {
            self.len -= 1;
            self.bytes -= entry.cost();
            self.free.push(index);
        }
    }

    /// CLOCK: from the hand, clears visited bits and evicts the first entry
    /// without one. Bound: two passes over the slots.
    fn evict(&mut self) -> bool {
        if self.len == 0 || self.slots.is_empty() {
            return false;
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
            let Some(entry) = self.slots[at].as_ref() else {
                continue;
            };
            let hash = self.hash(entry.name(), entry.qtype, entry.qclass, entry.bits);
            if let Ok(found) = self.table.find_entry(hash, |&i| i as usize == at) {
                found.remove();
            }
            self.release(at as u32);
            return true;
        }
        false
    }
}
