//! The answer slab: one arena of 32-octet granules, reserved once, from
//! which the response cache takes each entry's bytes.
//!
//! Why. A random-subdomain flood makes every answer a cache miss and an
//! insert into a full cache: with a box per entry, that was one `malloc`
//! and one `free` per query. Here the bytes of every entry live in one
//! `Vec<u8>` whose capacity is reserved when the cache is made and never
//! exceeded, so no insert, eviction or clear allocates.
//!
//! Layout. An entry takes an *extent*: `n` consecutive granules, the
//! fewest that hold its bytes (at most [`MAX_EXTENT`] granules, 4 KiB),
//! so the cache's hit path reads each entry as one contiguous slice, as it
//! did from a box. Free extents are kept in segregated lists, one per
//! size from 1 to 127 granules and one for 128 and more, with a `u128` of
//! which lists are non-empty; an allocation takes the smallest size that
//! fits (one `trailing_zeros`), splitting it if larger. A freed extent is
//! merged with free neighbours on both sides at once (boundary tags, as
//! in TLSF and dlmalloc), so memory is never carved for good into one
//! size: a flood of small answers leaves room for a large one as soon as
//! neighbouring entries are evicted. Every operation is O(1).
//!
//! ```text
//!   granule:  0    1    2    3    4    5    6    7    8  ...  top ........... capacity
//!             [entry A ][free   ][entry B      ][free    ] ... | wilderness: untouched
//!                        ^ header: size, prev, next (in the free extent's own bytes)
//!                             ^ footer: size (its last 4 octets)
//!   starts:        bit 2 set (a free extent begins)      ends: bit 3 set (one ends)
//! ```
//!
//! A free extent's size and list links are written in its own first
//! granule, its size again in its last four octets; two bitmaps (one bit
//! per granule, 1/256 of the arena each) say where free extents begin and
//! end, so a freed extent finds a free neighbour on either side without
//! reading the neighbour's bytes first.
//!
//! Why this allocator. The cache evicts by SIEVE, which picks victims by
//! age and use, anywhere in memory; the space a victim frees must serve
//! the next entry whatever its size. The alternatives weighed:
//!
//! - Fixed chunks per size class (64, 128, ... 4096 octets) with a free
//!   list each, memcached's slabs: simple, but memory given to one class
//!   stays there ("calcification"): after a flood of small NXDOMAINs, no
//!   chunk is ever free for a 1 KiB DNSSEC answer unless pages move
//!   between classes, which means evicting by page, not by SIEVE. And
//!   power-of-two chunks waste a quarter of the memory on average.
//! - A ring (log-structured) arena: appends are trivial, but space comes
//!   back in the ring's order, so it evicts by position (FIFO), or copies
//!   the visited entries forward, which is FIFO-reinsertion (CLOCK), not
//!   SIEVE, and costs a copy per retained entry on the miss path.
//! - Fixed blocks chained per entry: no fragmentation at all, but an entry
//!   in pieces makes the hit path copy piece by piece.
//! - Compaction (slide live entries down when the arena's end is reached):
//!   contiguous and exact, but a pause of a memmove of the whole arena.
//!
//! Granules with coalescing keep SIEVE exact, each entry contiguous, waste
//! 16 octets an entry on average, and every operation O(1); the price
//! is that free space can be split into pieces too small for a large
//! entry, which the cache answers by evicting further SIEVE victims (see
//! `response.rs`; rare, and counted).
//!
//! Memory. The arena's capacity is reserved at construction, but a page is
//! only written, and so only made resident by the kernel, when the
//! *wilderness* (the granules above `top`, never used yet) is first
//! handed out: free lists are tried first, and a free extent that reaches
//! `top` goes back to the wilderness. So a core's resident memory follows
//! the largest its cache has been, not the configured limit. The
//! trade-off is address space for the whole limit per core, reserved at
//! start: an allocation this large is an anonymous mapping whose pages the
//! kernel provides on first write, so it costs nothing until used, except
//! where overcommit is off (`vm.overcommit_memory = 2`), where it counts
//! against the commit limit from the start; if the system refuses it,
//! [`Slab::new`] halves the arena until it agrees.

use core::mem::size_of;

/// The unit of allocation, in octets: each entry's bytes are rounded up to
/// it, 16 octets of waste on average (the boxes this replaced paid about
/// as much in `malloc`'s header and rounding).
pub(crate) const GRANULE: usize = 32;

/// Free lists: sizes 1 to `CLASSES - 1` granules exactly, and the last
/// for `CLASSES` granules or more. One bit each in a `u128`.
const CLASSES: usize = 128;

/// The largest extent allocated, in granules: with it every extent in the
/// last list fits any request, so an allocation never searches a list.
pub(crate) const MAX_EXTENT: usize = CLASSES;

/// The most bytes one allocation holds: 4 KiB.
pub(crate) const MAX_ALLOCATION: usize = MAX_EXTENT * GRANULE;

/// The most granules: extents are addressed by `u32`, `u32::MAX` is "none".
const MAX_GRANULES: usize = (u32::MAX - 1) as usize;

/// "No extent" in the list heads and links.
const NIL: u32 = u32::MAX;

/// A free extent's header: its size, the previous and the next extent on
/// its list, three `u32` in its first granule.
const HEADER_LEN: usize = 12;

/// Bits per bitmap word.
const WORD_BITS: usize = 64;

/// How far the written part of the arena grows at a time when the
/// wilderness is first used: a page, so that growing costs one `memset`
/// a page rather than one per allocation.
const GROW_STEP: usize = 4096;

//----------- Slab -----------------------------------------------------------

/// A fixed arena of granules with segregated free lists and coalescing.
/// Never allocates after [`Slab::new`].
pub(crate) struct Slab {
    /// Capacity `granules * GRANULE`, reserved once; `len` is the part
    /// written so far (zeros beyond what entries wrote), never shrunk.
    bytes: Vec<u8>,
    /// Granules in the arena.
    granules: u32,
    /// The first granule of the wilderness.
    top: u32,
    /// The first free extent of each size class, or `NIL`.
    heads: [u32; CLASSES],
    /// Bit `c`: `heads[c]` is not `NIL`.
    nonempty: u128,
    /// Bit `g`: a free extent begins at granule `g`.
    starts: Vec<u64>,
    /// Bit `g`: a free extent ends at granule `g`.
    ends: Vec<u64>,
}

impl Slab {
    /// An arena of up to `bytes` octets (rounded down to whole granules).
    /// If the system refuses to reserve that much address space, the
    /// arena is halved until it agrees; [`Slab::capacity`] tells what was
    /// reserved.
    pub(crate) fn new(bytes: usize) -> Self {
        let mut granules = (bytes / GRANULE).min(MAX_GRANULES);
        let mut arena = Vec::new();
        while granules > 0 && arena.try_reserve_exact(granules * GRANULE).is_err() {
            granules /= 2;
        }
        let words = granules.div_ceil(WORD_BITS);
        Slab {
            bytes: arena,
            granules: granules as u32,
            top: 0,
            heads: [NIL; CLASSES],
            nonempty: 0,
            starts: vec![0; words],
            ends: vec![0; words],
        }
    }

    /// The arena's size in octets.
    pub(crate) fn capacity(&self) -> usize {
        self.granules as usize * GRANULE
    }

    /// The bytes of the extent at granule `at`, `len` of them (at most
    /// the extent's); empty if out of range.
    #[inline]
    pub(crate) fn get(&self, at: u32, len: usize) -> &[u8] {
        self.get_from(at, 0, len)
    }

    /// `len` bytes from octet `offset` of the extent at granule `at` (one
    /// bounds check, for the hit path's name comparison); empty if out of
    /// range.
    #[inline]
    pub(crate) fn get_from(&self, at: u32, offset: usize, len: usize) -> &[u8] {
        let start = at_byte(at) + offset;
        self.bytes.get(start..start + len).unwrap_or(&[])
    }

    /// [`Slab::get`], writable.
    pub(crate) fn get_mut(&mut self, at: u32, len: usize) -> &mut [u8] {
        let start = at as usize * GRANULE;
        self.bytes.get_mut(start..start + len).unwrap_or(&mut [])
    }

    /// An extent of `granules` (1 to [`MAX_EXTENT`]); `None` when no free
    /// extent is that large and the wilderness is too small either.
    pub(crate) fn allocate(&mut self, granules: usize) -> Option<u32> {
        if granules == 0 || granules > MAX_EXTENT {
            return None;
        }
        let size = granules as u32;
        let fitting = self.nonempty & (u128::MAX << class_of(size));
        if fitting != 0 {
            let class = fitting.trailing_zeros() as usize;
            let at = self.heads[class];
            let found = self.header(at).0;
            self.unlink(at, found);
            // The rest stays free. Its neighbour on the right is in use:
            // `found` was merged with any free neighbour when it was freed.
            if found > size {
                self.link(at + size, found - size);
            }
            return Some(at);
        }
        if self.granules - self.top < size {
            return None;
        }
        let at = self.top;
        self.top += size;
        let written = self.top as usize * GRANULE;
        if self.bytes.len() < written {
            // Within the capacity reserved: never reallocates.
            let grown = written.next_multiple_of(GROW_STEP).min(self.capacity());
            self.bytes.resize(grown, 0);
        }
        Some(at)
    }

    /// Frees the extent of `granules` at `at`, merging it with free
    /// neighbours, or into the wilderness if it reaches `top`.
    pub(crate) fn free(&mut self, at: u32, granules: usize) {
        let (mut at, mut size) = (at, granules as u32);
        let right = at + size;
        if right < self.top && bit(&self.starts, right) {
            let right_size = self.header(right).0;
            self.unlink(right, right_size);
            size += right_size;
        }
        if at > 0 && bit(&self.ends, at - 1) {
            let left_size = self.read(at as usize * GRANULE - 4);
            let left = at - left_size;
            self.unlink(left, left_size);
            at = left;
            size += left_size;
        }
        if at + size == self.top {
            self.top = at;
        } else {
            self.link(at, size);
        }
    }

    /// Frees everything. Keeps the memory, written or not.
    pub(crate) fn clear(&mut self) {
        let words = (self.top as usize).div_ceil(WORD_BITS);
        self.starts[..words].fill(0);
        self.ends[..words].fill(0);
        self.heads = [NIL; CLASSES];
        self.nonempty = 0;
        self.top = 0;
    }

    //--- Free lists

    /// Pushes the free extent `at` of `size` granules on its list and
    /// writes its boundary tags.
    fn link(&mut self, at: u32, size: u32) {
        let class = class_of(size);
        let next = self.heads[class];
        self.write_header(at, size, NIL, next);
        self.write((at + size) as usize * GRANULE - 4, size);
        if next != NIL {
            self.write(at_byte(next) + 4, at);
        }
        self.heads[class] = at;
        self.nonempty |= 1 << class;
        set_bit(&mut self.starts, at, true);
        set_bit(&mut self.ends, at + size - 1, true);
    }

    /// Takes the free extent `at` of `size` granules off its list.
    fn unlink(&mut self, at: u32, size: u32) {
        let class = class_of(size);
        let (_, prev, next) = self.header(at);
        if prev == NIL {
            self.heads[class] = next;
            if next == NIL {
                self.nonempty &= !(1 << class);
            }
        } else {
            self.write(at_byte(prev) + 8, next);
        }
        if next != NIL {
            self.write(at_byte(next) + 4, prev);
        }
        set_bit(&mut self.starts, at, false);
        set_bit(&mut self.ends, at + size - 1, false);
    }

    /// A free extent's size, previous and next on its list.
    fn header(&self, at: u32) -> (u32, u32, u32) {
        let byte = at_byte(at);
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&self.bytes[byte..byte + HEADER_LEN]);
        let [s0, s1, s2, s3, p0, p1, p2, p3, n0, n1, n2, n3] = header;
        (
            u32::from_le_bytes([s0, s1, s2, s3]),
            u32::from_le_bytes([p0, p1, p2, p3]),
            u32::from_le_bytes([n0, n1, n2, n3]),
        )
    }

    fn write_header(&mut self, at: u32, size: u32, prev: u32, next: u32) {
        let byte = at_byte(at);
        let mut header = [0; HEADER_LEN];
        header[..4].copy_from_slice(&size.to_le_bytes());
        header[4..8].copy_from_slice(&prev.to_le_bytes());
        header[8..].copy_from_slice(&next.to_le_bytes());
        self.bytes[byte..byte + HEADER_LEN].copy_from_slice(&header);
    }

    /// The `u32` at octet `at`, which is below `top` (written).
    fn read(&self, at: usize) -> u32 {
        let mut word = [0; size_of::<u32>()];
        word.copy_from_slice(&self.bytes[at..at + size_of::<u32>()]);
        u32::from_le_bytes(word)
    }

    fn write(&mut self, at: usize, value: u32) {
        self.bytes[at..at + size_of::<u32>()].copy_from_slice(&value.to_le_bytes());
    }

    //--- Checks

    /// Walks the arena from granule 0 to `top` and checks every invariant
    /// against `live` (start -> granules of the extents handed out): each
    /// granule is in exactly one live or free extent, free extents carry
    /// consistent tags and bits, are on the list of their size, and no two
    /// are adjacent; nothing free touches the wilderness. Slow: tests only.
    #[cfg(test)]
    pub(crate) fn assert_consistent(&self, live: &std::collections::BTreeMap<u32, u32>) {
        let mut at = 0;
        let mut previous_free = false;
        let mut free_extents = 0;
        while at < self.top {
            if let Some(&size) = live.get(&at) {
                assert!(!bit(&self.starts, at), "live extent {at} marked free");
                at += size;
                previous_free = false;
                continue;
            }
            assert!(bit(&self.starts, at), "granule {at} neither live nor free");
            assert!(!previous_free, "free extents not merged at {at}");
            let (size, _, _) = self.header(at);
            assert!(
                size > 0 && at + size <= self.top,
                "free extent {at} of {size}"
            );
            assert!(bit(&self.ends, at + size - 1));
            assert_eq!(self.read(at_byte(at + size) - 4), size, "footer of {at}");
            for inner in at + 1..at + size - 1 {
                assert!(!bit(&self.starts, inner) && !bit(&self.ends, inner));
            }
            // On its list.
            let mut on = self.heads[class_of(size)];
            let mut seen = 0;
            while on != at {
                assert_ne!(on, NIL, "free extent {at} not on its list");
                on = self.header(on).2;
                seen += 1;
                assert!(seen < self.granules);
            }
            free_extents += 1;
            previous_free = true;
            at += size;
        }
        assert_eq!(at, self.top);
        assert!(!previous_free, "a free extent reaches the wilderness");
        // The lists hold exactly the free extents, with consistent links.
        let mut listed = 0;
        for (class, &head) in self.heads.iter().enumerate() {
            assert_eq!(
                self.nonempty & 1 << class != 0,
                head != NIL,
                "class {class}"
            );
            let (mut prev, mut on) = (NIL, head);
            while on != NIL {
                let (size, back, next) = self.header(on);
                assert_eq!(class_of(size), class);
                assert_eq!(back, prev);
                listed += 1;
                (prev, on) = (on, next);
            }
        }
        assert_eq!(listed, free_extents);
        // Nothing above `top` is marked.
        for granule in self.top..self.granules {
            assert!(!bit(&self.starts, granule) && !bit(&self.ends, granule));
        }
    }
}

/// The free list of extents of `size` granules.
fn class_of(size: u32) -> usize {
    (size as usize).min(CLASSES) - 1
}

/// The first octet of granule `at`.
fn at_byte(at: u32) -> usize {
    at as usize * GRANULE
}

fn bit(map: &[u64], granule: u32) -> bool {
    let granule = granule as usize;
    map[granule / WORD_BITS] & 1 << (granule % WORD_BITS) != 0
}

fn set_bit(map: &mut [u64], granule: u32, on: bool) {
    let granule = granule as usize;
    let word = &mut map[granule / WORD_BITS];
    let mask = 1 << (granule % WORD_BITS);
    if on {
        *word |= mask;
    } else {
        *word &= !mask;
    }
}

//----------- Reserving a cache ----------------------------------------------

/// The most entries a cache of `u32` slot indices can have (`u32::MAX`
/// means "none").
pub(crate) const MAX_SLOTS: usize = (u32::MAX - 1) as usize;

/// An index made for this many times a cache's entry limit is never more
/// than half full, so hashbrown never reallocates it (see the answer
/// cache's module docs).
pub(crate) const INDEX_SLACK: usize = 2;

/// Reserves a cache's memory once, for at most `max_entries` entries and
/// `max_bytes` bytes, an entry costing its bytes rounded to the granule
/// plus `entry_overhead`, and none longer than `max_entry_len`:
/// `reserve_entries(n)` reserves the cache's own tables (slots, index) for
/// `n` entries and says whether the system granted them. The entry limit
/// is at most what the byte limit can hold (entries of one granule) and
/// [`MAX_SLOTS`]; should the system refuse, it is halved until it agrees.
/// The slab is reserved for the bytes the entries could fill (its pages
/// written only as entries reach them), and the byte limit lowered to what
/// was granted. Returns the limits in force, entries then bytes, and the
/// slab; a limit of 0 reserves nothing.
pub(crate) fn reserve_cache(
    max_entries: usize,
    max_bytes: usize,
    entry_overhead: usize,
    max_entry_len: usize,
    mut reserve_entries: impl FnMut(usize) -> bool,
) -> (usize, usize, Slab) {
    let most_entries = max_bytes / (entry_overhead + GRANULE);
    let mut max_entries = max_entries.min(MAX_SLOTS).min(most_entries);
    let mut max_bytes = if max_entries == 0 { 0 } else { max_bytes };
    while max_entries > 0 && !reserve_entries(max_entries) {
        max_entries /= 2;
    }
    // The slab never holds more than the entries can use.
    let wanted = max_bytes.min(max_entries.saturating_mul(max_entry_len));
    let slab = Slab::new(wanted);
    if slab.capacity() < wanted / GRANULE * GRANULE {
        // Reserved less than asked: the byte limit is what we got.
        max_bytes = slab.capacity();
    }
    (max_entries, max_bytes, slab)
}

#[cfg(test)]
mod tests;
