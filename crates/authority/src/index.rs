//! A hash index from lowercased wire names to dense ids, without owned keys.
//!
//! The keys live elsewhere (the zone's name arena, the catalog's origins);
//! the table stores only `u32` ids and asks the caller to compare the bytes
//! behind an id. A lookup hashes a borrowed `&[u8]` and allocates nothing,
//! which is what lets the closest-encloser search try every suffix of a
//! query name without building a key per label.

use core::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::{DefaultHashBuilder, HashTable};
use tern_wire::hash::NameHasher;

use crate::arena::Work;

//----------- NameIndex ------------------------------------------------------

/// Maps lowercased name bytes to ids; the bytes are resolved by a closure.
#[derive(Clone, Default)]
pub(crate) struct NameIndex {
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl NameIndex {
    /// An empty index with room for `capacity` names.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        NameIndex {
            table: HashTable::with_capacity(capacity),
            hasher: DefaultHashBuilder::default(),
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The id stored for `key`; `key_of` returns the bytes of a stored id.
    pub(crate) fn find<'k>(&self, key: &[u8], key_of: impl Fn(u32) -> &'k [u8]) -> Option<u32> {
        self.table
            .find(self.hash(key), |&id| key_of(id) == key)
            .copied()
    }

    /// Adds `id` under `key`, which must not be present yet.
    pub(crate) fn insert<'k>(&mut self, key: &[u8], id: u32, key_of: impl Fn(u32) -> &'k [u8]) {
        let hash = self.hash(key);
        let hasher = self.hasher;
        self.table
            .insert_unique(hash, id, move |&other| hasher.hash_one(key_of(other)));
    }

    /// Removes `key`'s entry; the id it had, if it was present.
    pub(crate) fn remove<'k>(
        &mut self,
        key: &[u8],
        key_of: impl Fn(u32) -> &'k [u8],
    ) -> Option<u32> {
        let entry = self
            .table
            .find_entry(self.hash(key), |&id| key_of(id) == key)
            .ok()?;
        Some(entry.remove().0)
    }

    /// Makes room for `additional` more entries, so that inserting them
    /// rehashes nothing; `key_of` returns the bytes of a stored id.
    pub(crate) fn reserve<'k>(&mut self, additional: usize, key_of: impl Fn(u32) -> &'k [u8]) {
        let hasher = self.hasher;
        self.table
            .reserve(additional, move |&other| hasher.hash_one(key_of(other)));
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

//----------- ShardedIndex ----------------------------------------------------

/// The most names a shard is built for: a patch that adds or removes a
/// name copies one shard (a few KiB), whatever the zone's size.
const SHARD_NAMES: usize = 1024;

/// The most shards (a zone of 64 million names).
const MAX_SHARD_BITS: u32 = 16;

/// The hash's top bits that hashbrown keeps as a slot's tag (`h2`), left
/// out of the shard's bits (see `ShardedIndex::shard_of`).
const TAG_BITS: u32 = 7;

/// A zone's name index split into shards by the hash's top bits, each
/// behind an `Arc`, so that a new version of the zone shares the shards a
/// patch did not touch. A look-up hashes once, picks its shard and probes
/// it: one load more than one table.
///
/// Names are hashed with the process's keyed hash
/// ([`NameHasher::process`]), the answer cache's: a query's name, hashed
/// once by the server, is looked up with that hash
/// ([`ShardedIndex::find_where_hashed`]).
#[derive(Clone)]
pub(crate) struct ShardedIndex {
    shards: Vec<Arc<HashTable<u32>>>,
    /// Bits of the hash that pick the shard (0: one shard).
    bits: u32,
    hasher: NameHasher,
}

impl Default for ShardedIndex {
    fn default() -> Self {
        ShardedIndex {
            shards: Vec::new(),
            bits: 0,
            hasher: NameHasher::process(),
        }
    }
}

impl ShardedIndex {
    /// The index of `ids`, whose names `key_of` gives, with shards for
    /// about `SHARD_NAMES` names each.
    pub(crate) fn build<'k>(
        ids: impl Iterator<Item = u32> + Clone,
        key_of: impl Fn(u32) -> &'k [u8],
    ) -> Self {
        let count = ids.clone().count();
        let mut bits = 0;
        while bits < MAX_SHARD_BITS && (count >> bits) > SHARD_NAMES {
            bits += 1;
        }
        let hasher = NameHasher::process();
        let per_shard = (count >> bits) + (count >> bits) / 4 + 1;
        let mut shards: Vec<HashTable<u32>> = (0..1usize << bits)
            .map(|_| HashTable::with_capacity(if count == 0 { 0 } else { per_shard }))
            .collect();
        let mut index = ShardedIndex {
            shards: Vec::new(),
            bits,
            hasher,
        };
        for id in ids {
            let hash = index.hash(key_of(id));
            shards[index.shard_of(hash)]
                .insert_unique(hash, id, |&other| hasher.hash(key_of(other)));
        }
        index.shards = shards.into_iter().map(Arc::new).collect();
        index
    }

    /// The hash of a lowercased name: [`NameHasher::process`]'s.
    #[inline]
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key)
    }

    /// The shard of a hash: its `bits` bits just below the top
    /// [`TAG_BITS`], which hashbrown keeps in each slot's control byte to
    /// compare before the key. Taken from the top, every name of a shard
    /// would share its tag once `bits` reaches 7 (65,536 names): every
    /// probe would compare the names of every slot it passes.
    #[inline]
    fn shard_of(&self, hash: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            ((hash >> (64 - TAG_BITS - self.bits)) & ((1 << self.bits) - 1)) as usize
        }
    }

    /// The id stored for `key`; `key_of` returns the bytes of a stored id.
    #[inline]
    pub(crate) fn find<'k>(&self, key: &[u8], key_of: impl Fn(u32) -> &'k [u8]) -> Option<u32> {
        let hash = self.hash(key);
        self.shards
            .get(self.shard_of(hash))?
            .find(hash, |&id| key_of(id) == key)
            .copied()
    }

    /// Adds `id` under `key`, which must not be present yet, copying its
    /// shard first if another version shares it.
    /// The id whose entry `matches` accepts among those stored under
    /// `key`'s hash: [`ShardedIndex::find`] with the caller's own test
    /// (one that also reads more of the entry than its key).
    #[inline]
    pub(crate) fn find_where(&self, key: &[u8], matches: impl Fn(u32) -> bool) -> Option<u32> {
        self.find_where_hashed(self.hash(key), matches)
    }

    /// [`ShardedIndex::find_where`] with the key's hash made already
    /// (`NameHasher::process().hash(key)`, by the caller).
    #[inline]
    pub(crate) fn find_where_hashed(
        &self,
        hash: u64,
        matches: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        self.shards
            .get(self.shard_of(hash))?
            .find(hash, |&id| matches(id))
            .copied()
    }

    pub(crate) fn insert<'k>(
        &mut self,
        key: &[u8],
        id: u32,
        key_of: impl Fn(u32) -> &'k [u8],
        work: &mut Work,
    ) {
        let hash = self.hash(key);
        let hasher = self.hasher;
        let shard = self.shard_of(hash);
        let slot = &mut self.shards[shard];
        if Arc::get_mut(slot).is_none() {
            work.shards_copied += 1;
            *slot = Arc::new(HashTable::clone(slot));
        }
        Arc::get_mut(slot)
            .expect("a shard just copied is not shared")
            .insert_unique(hash, id, move |&other| hasher.hash(key_of(other)));
    }

    /// Whether the index has no shard (a zone searched without one).
    pub(crate) fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}

impl core::fmt::Debug for ShardedIndex {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShardedIndex")
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl core::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NameIndex")
            .field("len", &self.len())
            .finish()
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_borrowed_bytes() {
        let keys: Vec<&[u8]> = vec![b"\x01a\x00", b"\x01b\x00", b"\x00"];
        let mut index = NameIndex::with_capacity(1);
        for (id, key) in keys.iter().enumerate() {
            index.insert(key, id as u32, |i| keys[i as usize]);
        }
        assert_eq!(index.len(), 3);
        assert_eq!(index.find(b"\x01b\x00", |i| keys[i as usize]), Some(1));
        assert_eq!(index.find(b"\x00", |i| keys[i as usize]), Some(2));
        assert_eq!(index.find(b"\x01c\x00", |i| keys[i as usize]), None);
        index.reserve(100, |i| keys[i as usize]);
        assert_eq!(index.len(), 3);
        assert_eq!(index.find(b"\x01a\x00", |i| keys[i as usize]), Some(0));
        assert_eq!(index.remove(b"\x01a\x00", |i| keys[i as usize]), Some(0));
        assert_eq!(index.remove(b"\x01a\x00", |i| keys[i as usize]), None);
        assert_eq!(index.find(b"\x01a\x00", |i| keys[i as usize]), None);
        assert_eq!(index.find(b"\x01b\x00", |i| keys[i as usize]), Some(1));
        assert_eq!(index.len(), 2);
    }

    /// The names of one shard keep their tags apart: hashbrown compares
    /// a slot's top 7 bits of the hash before the key, and a shard taken
    /// from those bits would give all its names one tag (every probe
    /// comparing names). 300,000 names: 9 bits of shard.
    #[test]
    fn a_shards_names_keep_distinct_tags() {
        let names: Vec<Vec<u8>> = (0..300_000u32)
            .map(|i| {
                let label = format!("h{i}");
                let mut name = vec![label.len() as u8];
                name.extend_from_slice(label.as_bytes());
                name.extend_from_slice(b"\x07example\x00");
                name
            })
            .collect();
        let index = ShardedIndex::build(0..names.len() as u32, |id| &names[id as usize]);
        assert_eq!(index.bits, 9);
        let mut tags = [false; 128];
        let mut in_shard = 0;
        for name in &names {
            let hash = index.hash(name);
            if index.shard_of(hash) == 0 {
                in_shard += 1;
                tags[(hash >> (64 - TAG_BITS)) as usize] = true;
            }
        }
        let distinct = tags.iter().filter(|&&seen| seen).count();
        assert!(in_shard > 500, "{in_shard} names in shard 0");
        assert!(
            distinct > 100,
            "{distinct} tags among shard 0's {in_shard} names"
        );
        for name in names.iter().step_by(997) {
            let id = index.find(name, |id| &names[id as usize]);
            assert_eq!(id.map(|id| &names[id as usize]), Some(name));
        }
    }
}
