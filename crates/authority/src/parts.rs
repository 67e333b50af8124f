//! A sorted list in parts shared between a zone's versions, so that a
//! patch that adds or removes an entry copies the entry's part, not the
//! list: the NSEC3 chain's links (`crate::nsec3::Links`), the NSEC owners
//! in canonical order and the owners of RRsets with additional-section
//! targets (`crate::Zone`'s `nsec` and `glue_sources`).
//!
//! The entries are kept in parts of at most [`Parts::MAX_PART`], each
//! behind an `Arc`; a list of the parts' first keys finds a part by a
//! binary search, a second finds the entry in it. The list does not know
//! how its keys are ordered: each search is given the order of a key
//! against what is sought (an NSEC owner's key is its node id, ordered by
//! the node's name, which only the zone can read).
//!
//! Costs: an entry added, removed or replaced copies its part if another
//! version shares it (at most [`Parts::MAX_PART`] entries, counted in
//! [`Work::nsec_moved`]); a part grown past [`Parts::MAX_PART`] is split in
//! two, one fallen below [`Parts::MIN_PART`] merged with a neighbour (and
//! split again if that makes it too long), so that every part but a lone
//! one holds [`Parts::MIN_PART`] to [`Parts::MAX_PART`] entries: a list of
//! `n` entries has at most `n / MIN_PART` parts. A version that changes
//! the list copies the list of parts (a key and a pointer per part).

use core::cmp::Ordering;
use std::sync::Arc;

use crate::arena::Work;

/// An entry of a [`Parts`] list: the key the list keeps of the first
/// entry of each part, to find the part.
pub(crate) trait Keyed: Clone {
    /// What orders the entries (with the order each search is given).
    type Key: Copy;

    /// The entry's key.
    fn key(&self) -> Self::Key;
}

/// A node id, its own key (ordered by the node's name for the NSEC
/// owners, by the id for the owners of RRsets with glue).
impl Keyed for u32 {
    type Key = u32;

    #[inline]
    fn key(&self) -> u32 {
        *self
    }
}

/// A sorted list of `T` without equal keys, in shared parts (see the
/// module documentation). Each search takes `order`: the order of a key
/// of the list against what is sought (`Less`: the key comes before it).
pub(crate) struct Parts<T: Keyed> {
    /// The key of each part's first entry, ascending.
    firsts: Vec<T::Key>,
    /// The parts, none empty.
    parts: Vec<Arc<Vec<T>>>,
    len: usize,
}

/// A place in a list: a part and an index in it (past the end: the part
/// count and 0).
type At = (usize, usize);

impl<T: Keyed> Clone for Parts<T> {
    fn clone(&self) -> Self {
        Parts {
            firsts: self.firsts.clone(),
            parts: self.parts.clone(),
            len: self.len,
        }
    }
}

impl<T: Keyed> Default for Parts<T> {
    fn default() -> Self {
        Parts {
            firsts: Vec::new(),
            parts: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Keyed> core::fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Parts")
            .field("len", &self.len)
            .field("parts", &self.parts.len())
            .finish()
    }
}

impl<T: Keyed> Parts<T> {
    /// The entries a part is built with.
    pub(crate) const PART: usize = 128;
    /// The most entries in a part: a longer part is split in two.
    pub(crate) const MAX_PART: usize = 2 * Self::PART;
    /// The fewest entries in a part that is not the only one: a shorter
    /// part is merged with a neighbour.
    pub(crate) const MIN_PART: usize = Self::PART / 4;

    /// The list of `sorted` (ascending, no equal keys), in parts of
    /// [`Parts::PART`] (the last one longer rather than shorter than
    /// [`Parts::MIN_PART`]).
    pub(crate) fn from_sorted(sorted: &[T]) -> Self {
        let mut parts: Vec<Arc<Vec<T>>> = Vec::with_capacity(sorted.len() / Self::PART + 1);
        let mut rest = sorted;
        while !rest.is_empty() {
            let take = if rest.len() < Self::PART + Self::MIN_PART {
                rest.len()
            } else {
                Self::PART
            };
            parts.push(Arc::new(rest[..take].to_vec()));
            rest = &rest[take..];
        }
        Parts {
            firsts: parts.iter().map(|part| part[0].key()).collect(),
            parts,
            len: sorted.len(),
        }
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.parts.iter().flat_map(|part| part.iter())
    }

    /// The length of each part, in order (for tests and figures).
    #[cfg(test)]
    pub(crate) fn part_lens(&self) -> Vec<usize> {
        self.parts.iter().map(|part| part.len()).collect()
    }

    /// How many of the parts are shared with `other` (the same `Arc`).
    #[cfg(test)]
    pub(crate) fn shared_with(&self, other: &Parts<T>) -> usize {
        self.parts
            .iter()
            .filter(|part| other.parts.iter().any(|o| Arc::ptr_eq(part, o)))
            .count()
    }

    /// The octets of the list of parts: what a version that changes the
    /// list copies besides the parts it changes.
    pub(crate) fn list_bytes(&self) -> usize {
        self.parts.len() * (core::mem::size_of::<T::Key>() + core::mem::size_of::<Arc<Vec<T>>>())
    }

    /// The list behind `shared`, to change: taken if no other version
    /// holds it, else its list of parts copied (the parts stay shared;
    /// the octets counted in `work.bytes_copied`).
    pub(crate) fn unshared(shared: Arc<Parts<T>>, work: &mut Work) -> Parts<T> {
        Arc::try_unwrap(shared).unwrap_or_else(|shared| {
            work.bytes_copied += shared.list_bytes();
            Parts::clone(&shared)
        })
    }

    /// The part that holds what `order` seeks or would: the last whose
    /// first key is not above it, else the first.
    #[inline]
    fn part_of(&self, order: &impl Fn(&T::Key) -> Ordering) -> usize {
        self.firsts
            .partition_point(|first| order(first) != Ordering::Greater)
            .saturating_sub(1)
    }

    /// The place of the first entry not below what `order` seeks
    /// (`above`: above it). Bound: two binary searches.
    #[inline]
    fn bound(&self, order: &impl Fn(&T::Key) -> Ordering, above: bool) -> At {
        let part = self.part_of(order);
        let Some(entries) = self.parts.get(part) else {
            return (self.parts.len(), 0);
        };
        let index = entries.partition_point(|entry| match order(&entry.key()) {
            Ordering::Less => true,
            Ordering::Equal => above,
            Ordering::Greater => false,
        });
        if index == entries.len() {
            (part + 1, 0)
        } else {
            (part, index)
        }
    }

    #[inline]
    fn at(&self, (part, index): At) -> Option<&T> {
        self.parts.get(part)?.get(index)
    }

    /// The entry before `at`, if any.
    #[inline]
    fn before(&self, (part, index): At) -> Option<&T> {
        if index > 0 {
            return self.at((part, index - 1));
        }
        self.parts.get(part.checked_sub(1)?)?.last()
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<&T> {
        self.parts.first()?.first()
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<&T> {
        self.parts.last()?.last()
    }

    /// The entry `order` seeks. Bound: two binary searches.
    pub(crate) fn get(&self, order: impl Fn(&T::Key) -> Ordering) -> Option<&T> {
        self.at(self.bound(&order, false))
            .filter(|entry| order(&entry.key()) == Ordering::Equal)
    }

    /// The entry `order` seeks, or else the one that covers it: the last
    /// entry before it, wrapping around to the last entry (as the last
    /// NSEC and NSEC3 records cover the names before the first). `None`
    /// only for an empty list. Bound: two binary searches.
    #[inline]
    pub(crate) fn covering(&self, order: impl Fn(&T::Key) -> Ordering) -> Option<&T> {
        self.before(self.bound(&order, true))
            .or_else(|| self.last())
    }

    /// The last entry strictly before what `order` seeks and the first
    /// strictly after it, without wrapping. Bound: four binary searches.
    pub(crate) fn neighbours(
        &self,
        order: impl Fn(&T::Key) -> Ordering,
    ) -> (Option<&T>, Option<&T>) {
        (
            self.before(self.bound(&order, false)),
            self.at(self.bound(&order, true)),
        )
    }

    /// The part `part` to change, copied first if another version shares
    /// it (its entries counted in `work.nsec_moved`).
    fn part_mut(&mut self, part: usize, work: &mut Work) -> &mut Vec<T> {
        let slot = &mut self.parts[part];
        if Arc::get_mut(slot).is_none() {
            work.nsec_moved += slot.len();
            work.bytes_copied += slot.len() * core::mem::size_of::<T>();
        }
        Arc::make_mut(slot)
    }

    /// The entry `order` seeks, to change (its key must stay). Bound: two
    /// binary searches, a part copied.
    pub(crate) fn get_mut(
        &mut self,
        order: impl Fn(&T::Key) -> Ordering,
        work: &mut Work,
    ) -> Option<&mut T> {
        let (part, index) = self.bound(&order, false);
        self.at((part, index))
            .filter(|entry| order(&entry.key()) == Ordering::Equal)?;
        Some(&mut self.part_mut(part, work)[index])
    }

    /// Adds `entry`, or replaces the entry with its key; `order` is the
    /// order of a key against `entry`'s. Bound: two binary searches, a
    /// part copied and split in two when too long.
    pub(crate) fn insert(
        &mut self,
        entry: T,
        order: impl Fn(&T::Key) -> Ordering,
        work: &mut Work,
    ) {
        if self.parts.is_empty() {
            self.firsts.push(entry.key());
            self.parts.push(Arc::new(vec![entry]));
            self.len = 1;
            return;
        }
        let part = self.part_of(&order);
        let entries = self.part_mut(part, work);
        let index = match entries.binary_search_by(|other| order(&other.key())) {
            Ok(index) => {
                entries[index] = entry;
                return;
            }
            Err(index) => index,
        };
        entries.insert(index, entry);
        let first = entries[0].key();
        let upper = (entries.len() > Self::MAX_PART).then(|| entries.split_off(entries.len() / 2));
        self.len += 1;
        self.firsts[part] = first;
        if let Some(upper) = upper {
            self.firsts.insert(part + 1, upper[0].key());
            self.parts.insert(part + 1, Arc::new(upper));
        }
    }

    /// Removes the entry `order` seeks; whether there was one. Bound: two
    /// binary searches, a part copied, and merged with a neighbour (also
    /// copied) when too short.
    pub(crate) fn remove(&mut self, order: impl Fn(&T::Key) -> Ordering, work: &mut Work) -> bool {
        let (part, index) = self.bound(&order, false);
        if self
            .at((part, index))
            .is_none_or(|entry| order(&entry.key()) != Ordering::Equal)
        {
            return false;
        }
        self.len -= 1;
        if self.parts[part].len() == 1 {
            self.parts.remove(part);
            self.firsts.remove(part);
            return true;
        }
        let entries = self.part_mut(part, work);
        entries.remove(index);
        let (first, short) = (entries[0].key(), entries.len() < Self::MIN_PART);
        self.firsts[part] = first;
        if short && self.parts.len() > 1 {
            self.merge(part.min(self.parts.len() - 2), work);
        }
        true
    }

    /// Merges part `left + 1` into part `left`, splitting the result in two
    /// halves if it is too long. Bound: the two parts copied.
    fn merge(&mut self, left: usize, work: &mut Work) {
        self.firsts.remove(left + 1);
        let right = self.parts.remove(left + 1);
        let entries = self.part_mut(left, work);
        work.nsec_moved += right.len();
        work.bytes_copied += right.len() * core::mem::size_of::<T>();
        entries.extend(right.iter().cloned());
        if entries.len() > Self::MAX_PART {
            let upper = entries.split_off(entries.len() / 2);
            self.firsts.insert(left + 1, upper[0].key());
            self.parts.insert(left + 1, Arc::new(upper));
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// An entry ordered by its key alone, carrying a value (to see a
    /// replacement).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Entry {
        key: u32,
        value: u32,
    }

    impl Keyed for Entry {
        type Key = u32;

        fn key(&self) -> u32 {
            self.key
        }
    }

    /// Keys ordered backwards: the list uses only the order it is given.
    fn order(sought: u32) -> impl Fn(&u32) -> Ordering {
        move |key: &u32| sought.cmp(key)
    }

    /// [`Parts`] against a plain sorted list: entries added, replaced and
    /// removed at random in a narrow range (so that parts grow past
    /// [`Parts::MAX_PART`] and split, then, as the list mostly shrinks,
    /// fall below [`Parts::MIN_PART`] and merge), every search answered
    /// as the plain list answers it, every part within its bounds, a
    /// version kept from before a change unchanged by it, and each change
    /// copying at most a part and its neighbour.
    #[test]
    fn parts_search_split_and_merge_as_a_sorted_list() {
        let mut rng = StdRng::seed_from_u64(4034);
        // The model, in the list's order (descending keys).
        let mut model: Vec<Entry> = Vec::new();
        let mut list: Parts<Entry> = Parts::from_sorted(&[]);
        let (mut splits, mut merges) = (0, 0);
        let position = |model: &[Entry], key: u32| model.binary_search_by(|e| key.cmp(&e.key));
        for step in 0..12_000u32 {
            let kept = list.clone();
            let kept_model = model.clone();
            let mut work = Work::default();
            let parts_before = list.part_lens().len();
            // Phases of 2,000 steps that mostly grow the list, then mostly
            // shrink it (removing entries it holds, in three cases of four).
            let grow = (step / 2000) % 2 == 0;
            let key = if !grow && !model.is_empty() && rng.random_range(0..4) > 0 {
                model[rng.random_range(0..model.len())].key
            } else {
                rng.random_range(0..3000)
            };
            if rng.random_range(0..10) < if grow { 8 } else { 2 } {
                let entry = Entry { key, value: step };
                list.insert(entry, order(key), &mut work);
                match position(&model, key) {
                    Ok(at) => model[at] = entry,
                    Err(at) => model.insert(at, entry),
                }
            } else {
                let removed = list.remove(order(key), &mut work);
                let at = position(&model, key);
                assert_eq!(removed, at.is_ok(), "step {step}");
                if let Ok(at) = at {
                    model.remove(at);
                }
            }
            let parts_after = list.part_lens().len();
            splits += usize::from(parts_after > parts_before);
            merges += usize::from(parts_after < parts_before && parts_before > 1);
            assert!(
                work.nsec_moved <= Parts::<Entry>::MIN_PART + Parts::<Entry>::MAX_PART,
                "step {step}: {work:?}"
            );
            // The version before the change still reads as it did.
            assert!(kept.iter().eq(kept_model.iter()), "step {step}");
            assert_eq!(list.len(), model.len());
            assert!(list.iter().eq(model.iter()), "step {step}");
            let lens = list.part_lens();
            assert!(
                lens.iter()
                    .all(|&len| len > 0 && len <= Parts::<Entry>::MAX_PART)
                    && (lens.len() == 1 || lens.iter().all(|&len| len >= Parts::<Entry>::MIN_PART)),
                "step {step}: {lens:?}"
            );
            assert_eq!(list.first(), model.first());
            assert_eq!(list.last(), model.last());
            for _ in 0..4 {
                let sought = rng.random_range(0..3001);
                let at = position(&model, sought);
                let exact = at.ok().map(|at| model[at]);
                assert_eq!(list.get(order(sought)).copied(), exact, "step {step}");
                let after = match at {
                    Ok(at) => at + 1,
                    Err(at) => at,
                };
                let covering = after
                    .checked_sub(1)
                    .or(model.len().checked_sub(1))
                    .map(|at| model[at]);
                assert_eq!(
                    list.covering(order(sought)).copied(),
                    covering,
                    "step {step}"
                );
                let below = match at {
                    Ok(at) | Err(at) => at.checked_sub(1).map(|at| model[at]),
                };
                let (b, a) = list.neighbours(order(sought));
                assert_eq!((b.copied(), a.copied()), (below, model.get(after).copied()));
                if let Some(entry) = list.get_mut(order(sought), &mut Work::default()) {
                    entry.value += 1;
                    model[at.unwrap()].value += 1;
                }
            }
        }
        eprintln!("{splits} splits, {merges} merges, {} left", model.len());
        assert!(
            splits >= 12 && merges >= 12,
            "{splits} splits, {merges} merges"
        );
    }

    /// A list built whole: parts of [`Parts::PART`], the last one taking
    /// a remainder shorter than [`Parts::MIN_PART`] (two bytes of key and
    /// pointer a part in the list).
    #[test]
    fn built_parts() {
        let entries =
            |n: u32| -> Vec<Entry> { (0..n).rev().map(|key| Entry { key, value: 0 }).collect() };
        assert_eq!(
            Parts::from_sorted(&entries(0)).part_lens(),
            Vec::<usize>::new()
        );
        assert_eq!(Parts::from_sorted(&entries(5)).part_lens(), [5]);
        assert_eq!(
            Parts::from_sorted(&entries(300)).part_lens(),
            [128, 128, 44]
        );
        assert_eq!(Parts::from_sorted(&entries(300)).list_bytes(), 3 * 12);
        assert_eq!(
            Parts::from_sorted(&entries(400)).part_lens(),
            [128, 128, 144]
        );
        assert_eq!(
            Parts::from_sorted(&entries(416)).part_lens(),
            [128, 128, 128, 32]
        );
    }
}
