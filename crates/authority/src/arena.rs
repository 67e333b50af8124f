//! The zone's tables in shared chunks, so that a new version can share
//! every chunk it does not change with the version it was made from
//! ([`crate::Zone::patch`]).
//!
//! An [`Arena`] is a table of `T` addressed by a `u32` index, split into
//! chunks of `1 << SHIFT` entries, each behind an `Arc`. Index `i` is entry
//! `i & MASK` of chunk `i >> SHIFT`: one more load than a flat `Vec` and no
//! search. A run of entries that is read as one slice (a node's RRsets, an
//! RRset's RDATA, a name) never straddles two chunks: the builder pads
//! before a run that would, and [`Arena::push_run`] starts a new chunk.
//!
//! A zone built from a file has chunks of exactly its size (the last one
//! short). Changing an entry of a chunk that another version shares copies
//! that chunk first ([`Arena::get_mut`], counted in [`Work`]); appending
//! grows the last chunk to its full size once.

use std::sync::Arc;

/// What a patch copied: the measure of its cost (the test that an update
/// costs its change, not the zone, reads it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Chunks of the zone's tables copied (copy-on-write or grown).
    pub chunks_copied: usize,
    /// Octets copied with them.
    pub bytes_copied: usize,
    /// Name index shards copied.
    pub shards_copied: usize,
    /// Nodes whose RRsets were rebuilt, created or removed.
    pub nodes_touched: usize,
    /// RRsets whose additional-section targets were looked up again.
    pub glue_resolved: usize,
    /// Entries of sorted lists in parts copied (`crate::parts::Parts`: the
    /// NSEC order list, the glue owners, the NSEC3 chain's links): a part
    /// copied before a change, two merged, a flat list rebuilt.
    pub nsec_moved: usize,
}

impl core::ops::AddAssign for Work {
    /// Both measures summed, field by field.
    fn add_assign(&mut self, other: Work) {
        self.chunks_copied += other.chunks_copied;
        self.bytes_copied += other.bytes_copied;
        self.shards_copied += other.shards_copied;
        self.nodes_touched += other.nodes_touched;
        self.glue_resolved += other.glue_resolved;
        self.nsec_moved += other.nsec_moved;
    }
}

/// A table of `T` in shared chunks of `1 << SHIFT` entries.
#[derive(Clone, Debug)]
pub(crate) struct Arena<T, const SHIFT: u32> {
    /// Chunk 0, held apart so that a read in it (every read of a table
    /// of one chunk, as most zones' are) costs what a plain slice's does.
    first: Arc<[T]>,
    /// Chunks 1 onwards.
    rest: Vec<Arc<[T]>>,
    /// The index one past the last entry.
    end: u32,
}

impl<T, const SHIFT: u32> Default for Arena<T, SHIFT> {
    /// An empty arena, with one empty chunk: an empty run at 0 (a node
    /// without RRsets, an RRset without glue) reads without a check.
    fn default() -> Self {
        Arena {
            first: Arc::from(Vec::new()),
            rest: Vec::new(),
            end: 0,
        }
    }
}

impl<T: Copy + Default, const SHIFT: u32> Arena<T, SHIFT> {
    /// Entries per chunk, and the longest run.
    pub(crate) const CHUNK: usize = 1 << SHIFT;
    /// The chunk's size as a power of two.
    pub(crate) const SHIFT: u32 = SHIFT;
    const MASK: u32 = (1 << SHIFT) - 1;

    /// The arena of a built table, whose runs the builder laid out so that
    /// none straddles a multiple of [`Arena::CHUNK`].
    pub(crate) fn from_vec(table: &[T]) -> Self {
        if table.is_empty() {
            return Arena::default();
        }
        let mut chunks = table.chunks(Self::CHUNK).map(Arc::from);
        Arena {
            first: chunks.next().unwrap_or_else(|| Arc::from(Vec::new())),
            rest: chunks.collect(),
            end: table.len() as u32,
        }
    }

    /// [`Arena::from_vec`] of a table given up: each chunk's entries are
    /// freed once copied (the table shrinks from its end), so that the
    /// table does not exist twice in full.
    pub(crate) fn from_vec_owned(mut table: Vec<T>) -> Self {
        let end = table.len() as u32;
        let mut chunks = Vec::with_capacity(table.len().div_ceil(Self::CHUNK));
        while !table.is_empty() {
            let start = (table.len() - 1) / Self::CHUNK * Self::CHUNK;
            chunks.push(Arc::from(&table[start..]));
            table.truncate(start);
            table.shrink_to_fit();
        }
        chunks.reverse();
        let mut chunks = chunks.into_iter();
        match chunks.next() {
            Some(first) => Arena {
                first,
                rest: chunks.collect(),
                end,
            },
            None => Arena::default(),
        }
    }

    /// The index one past the last entry.
    pub(crate) fn end(&self) -> u32 {
        self.end
    }

    /// Chunk `chunk`.
    #[inline]
    fn chunk(&self, chunk: usize) -> &[T] {
        match chunk {
            0 => &self.first,
            _ => &self.rest[chunk - 1],
        }
    }

    fn slot_mut(&mut self, chunk: usize) -> &mut Arc<[T]> {
        match chunk {
            0 => &mut self.first,
            _ => &mut self.rest[chunk - 1],
        }
    }

    /// Entry `index`: in chunk 0 with one bounds check, as from a slice.
    /// Inlined always: with `#[inline]` alone it was called, about 13,600
    /// times in a flood's 5,000 answers at about 12 instructions a call,
    /// for what inlined is a compare and a load.
    #[inline(always)]
    pub(crate) fn get(&self, index: u32) -> &T {
        if let Some(value) = self.first.get(index as usize) {
            return value;
        }
        // Past chunk 0: chunk 0 is full, so the chunk is 1 or more (or the
        // index is out of bounds, and so is `usize::MAX`).
        &self.rest[((index >> SHIFT) as usize).wrapping_sub(1)][(index & Self::MASK) as usize]
    }

    /// `len` entries from `start`, which the layout keeps in one chunk.
    #[inline]
    pub(crate) fn slice(&self, start: u32, len: usize) -> &[T] {
        let at = (start & Self::MASK) as usize;
        &self.chunk((start >> SHIFT) as usize)[at..at + len]
    }

    /// The entries from `start` to the end of its chunk.
    #[inline]
    pub(crate) fn tail(&self, start: u32) -> &[T] {
        &self.chunk((start >> SHIFT) as usize)[(start & Self::MASK) as usize..]
    }

    /// Entry `index` to change, its chunk copied first if another version
    /// shares it.
    pub(crate) fn get_mut(&mut self, index: u32, work: &mut Work) -> &mut T {
        let chunk = self.chunk_mut((index >> SHIFT) as usize, work);
        &mut chunk[(index & Self::MASK) as usize]
    }

    fn chunk_mut(&mut self, chunk: usize, work: &mut Work) -> &mut [T] {
        let slot = self.slot_mut(chunk);
        if Arc::get_mut(slot).is_none() {
            work.chunks_copied += 1;
            work.bytes_copied += core::mem::size_of_val::<[T]>(slot);
            *slot = Arc::from(&slot[..]);
        }
        Arc::get_mut(slot).expect("a chunk just copied is not shared")
    }

    /// Appends `run` in one chunk; its first index. `None` if the run is
    /// longer than a chunk or the table would outgrow `u32`.
    pub(crate) fn push_run(&mut self, run: &[T], work: &mut Work) -> Option<u32> {
        if run.len() > Self::CHUNK {
            return None;
        }
        let mut chunk = (self.end >> SHIFT) as usize;
        let mut at = (self.end & Self::MASK) as usize;
        if at + run.len() > Self::CHUNK {
            chunk += 1;
            at = 0;
        }
        let start = u32::try_from((chunk << SHIFT) + at).ok()?;
        let end = start.checked_add(run.len() as u32)?;
        while self.rest.len() < chunk {
            self.rest.push(Arc::from(&[][..]));
        }
        let slot = self.slot_mut(chunk);
        if slot.len() < at + run.len() {
            // Grow to a whole chunk once: later appends copy nothing.
            work.chunks_copied += 1;
            work.bytes_copied += core::mem::size_of_val::<[T]>(slot);
            let mut grown = Vec::with_capacity(Self::CHUNK);
            grown.extend_from_slice(slot);
            grown.resize(Self::CHUNK, T::default());
            *slot = Arc::from(grown);
        }
        let target = self.chunk_mut(chunk, work);
        target[at..at + run.len()].copy_from_slice(run);
        self.end = end;
        Some(start)
    }

    /// The octets the arena holds (its chunks' lengths).
    pub(crate) fn size_bytes(&self) -> usize {
        core::iter::once(&self.first)
            .chain(&self.rest)
            .map(|chunk| core::mem::size_of_val::<[T]>(chunk))
            .sum()
    }
}

/// A table being built straight into the chunks of its [`Arena`]: full
/// chunks are frozen as they fill, so that the table never exists twice
/// (a `Vec` of the whole table, then its copy in chunks), and no `Vec` of
/// the whole table is ever grown by doubling. The layout is that of
/// [`push_aligned`] then [`Arena::from_vec`]: a run that would straddle a
/// multiple of [`Arena::CHUNK`] starts the next chunk, the last chunk is
/// short.
pub(crate) struct ArenaWriter<T, const SHIFT: u32> {
    /// The chunks filled, each exactly [`Arena::CHUNK`] entries.
    full: Vec<Arc<[T]>>,
    /// The chunk being filled (its buffer reused for every chunk).
    current: Vec<T>,
}

impl<T: Copy + Default, const SHIFT: u32> ArenaWriter<T, SHIFT> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        ArenaWriter {
            full: Vec::new(),
            current: Vec::new(),
        }
    }

    /// The index of the next entry.
    pub(crate) fn len(&self) -> usize {
        (self.full.len() << SHIFT) + self.current.len()
    }

    /// The entries written from `start` to the end of its chunk (a run
    /// written never straddles two).
    pub(crate) fn tail(&self, start: usize) -> &[T] {
        let chunk = start >> SHIFT;
        let at = start & (Arena::<T, SHIFT>::CHUNK - 1);
        match self.full.get(chunk) {
            Some(full) => &full[at..],
            None => &self.current[at..],
        }
    }

    /// Appends `run` in one chunk; its first index. `None` if it is longer
    /// than a chunk.
    pub(crate) fn push_run(&mut self, run: &[T]) -> Option<usize> {
        let chunk = Arena::<T, SHIFT>::CHUNK;
        if run.len() > chunk {
            return None;
        }
        if self.current.len() + run.len() > chunk {
            self.current.resize(chunk, T::default());
            self.full.push(Arc::from(&self.current[..]));
            self.current.clear();
        }
        let start = self.len();
        self.current.extend_from_slice(run);
        Some(start)
    }

    /// The arena of the table written.
    pub(crate) fn finish(self) -> Arena<T, SHIFT> {
        let end = self.len() as u32;
        let mut chunks = self.full.into_iter();
        let Some(first) = chunks.next() else {
            return Arena {
                first: Arc::from(self.current),
                rest: Vec::new(),
                end,
            };
        };
        let mut rest: Vec<Arc<[T]>> = chunks.collect();
        if !self.current.is_empty() {
            rest.push(Arc::from(self.current));
        }
        Arena { first, rest, end }
    }
}

/// Appends `run` to a table being built, padding first so that it does not
/// straddle a multiple of `chunk`; its first index. `None` if it is longer
/// than a chunk.
pub(crate) fn push_aligned<T: Copy + Default>(
    table: &mut Vec<T>,
    run: &[T],
    chunk: usize,
) -> Option<usize> {
    if run.len() > chunk {
        return None;
    }
    let at = table.len() % chunk;
    if at + run.len() > chunk {
        table.resize(table.len() + chunk - at, T::default());
    }
    let start = table.len();
    table.extend_from_slice(run);
    Some(start)
}

//=========== Tests ==========================================================

impl<const SHIFT: u32> Arena<u8, SHIFT> {
    /// Whether the `len` octets from `start` (a name the layout keeps in
    /// one chunk) are `other`: the lengths first, then a name of 8 to 16
    /// octets (most of a zone's names, `wild.bench.`) as two words that
    /// overlap, without the call of a `memcmp` (about 50 instructions a
    /// name found by the index, 20 after); others by the slice comparison.
    #[inline]
    pub(crate) fn slice_is(&self, start: u32, len: usize, other: &[u8]) -> bool {
        if len != other.len() {
            return false;
        }
        let octets = self.slice(start, len);
        if !(8..=16).contains(&len) {
            return octets == other;
        }
        let word = |from: &[u8], at: usize| {
            from.get(at..at + 8)
                .and_then(|eight| <[u8; 8]>::try_from(eight).ok())
                .map(u64::from_le_bytes)
        };
        word(octets, 0) == word(other, 0) && word(octets, len - 8) == word(other, len - 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stay_in_one_chunk_and_shared_chunks_are_copied() {
        let mut table: Vec<u8> = Vec::new();
        assert_eq!(push_aligned(&mut table, &[1, 2, 3], 4), Some(0));
        assert_eq!(push_aligned(&mut table, &[4, 5], 4), Some(4));
        assert_eq!(push_aligned(&mut table, &[0; 5], 4), None);
        let arena: Arena<u8, 2> = Arena::from_vec(&table);
        assert_eq!(arena.slice(4, 2), &[4, 5]);
        assert_eq!(arena.tail(1), &[2, 3, 0]);
        let mut copy = arena.clone();
        let mut work = Work::default();
        *copy.get_mut(1, &mut work) = 9;
        assert_eq!((work.chunks_copied, *arena.get(1), *copy.get(1)), (1, 2, 9));
        *copy.get_mut(2, &mut work) = 8;
        assert_eq!(work.chunks_copied, 1);
        // The second chunk holds 2 of 4: a run of 3 starts a third.
        assert_eq!(copy.push_run(&[7, 7, 7], &mut work), Some(8));
        assert_eq!(copy.push_run(&[6], &mut work), Some(11));
        assert_eq!(copy.slice(8, 4), &[7, 7, 7, 6]);
        assert_eq!(arena.end(), 6);
        assert_eq!(copy.end(), 12);
    }

    /// Written chunk by chunk, a table is laid out as `push_aligned` and
    /// `from_vec` lay it out.
    #[test]
    fn a_table_written_in_chunks_is_the_table_built_whole() {
        let runs: [&[u8]; 7] = [
            &[1, 2, 3],
            &[4, 5],
            &[],
            &[6, 7, 8, 9],
            &[10],
            &[11, 12, 13],
            &[],
        ];
        let mut table: Vec<u8> = Vec::new();
        let mut writer: ArenaWriter<u8, 2> = ArenaWriter::new();
        for run in runs {
            assert_eq!(
                writer.push_run(run),
                push_aligned(&mut table, run, 4),
                "{run:?}"
            );
        }
        assert_eq!(writer.push_run(&[0; 5]), None);
        let (whole, written) = (Arena::<u8, 2>::from_vec(&table), writer.finish());
        assert_eq!(written.end(), whole.end());
        let chunks = |arena: &Arena<u8, 2>| {
            core::iter::once(&arena.first)
                .chain(&arena.rest)
                .map(|chunk| chunk.to_vec())
                .collect::<Vec<_>>()
        };
        assert_eq!(chunks(&written), chunks(&whole));
        let owned = Arena::<u8, 2>::from_vec_owned(table.clone());
        assert_eq!((chunks(&owned), owned.end()), (chunks(&whole), whole.end()));
        assert_eq!(
            chunks(&Arena::<u8, 2>::from_vec_owned(Vec::new())),
            [vec![]]
        );
        assert_eq!(chunks(&ArenaWriter::<u8, 2>::new().finish()), [vec![]]);
    }

    /// `slice_is` says what the slice comparison says for every length
    /// from 0 to 20 octets, with one octet changed at each place (the
    /// two words of 8 to 16 octets overlap: a change in either counts)
    /// and a length one more or one less.
    #[test]
    fn slice_is_compares_every_octet() {
        let octets: Vec<u8> = (1..=20).collect();
        let arena: Arena<u8, 8> = Arena::from_vec(&octets);
        for len in 0..=20usize {
            let same = &octets[..len];
            assert!(arena.slice_is(0, len, same), "{len}");
            for at in 0..len {
                let mut other = same.to_vec();
                other[at] ^= 0x20;
                assert!(!arena.slice_is(0, len, &other), "{len} at {at}");
            }
            if len < 20 {
                assert!(!arena.slice_is(0, len, &octets[..len + 1]), "{len} longer");
            }
            if let Some(shorter) = len.checked_sub(1) {
                assert!(!arena.slice_is(0, len, &octets[..shorter]), "{len} shorter");
            }
        }
    }
}
