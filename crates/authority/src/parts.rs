//! A sorted list in parts shared between a zone's versions, so that a
//! patch that adds or removes an entry copies the entry's part, not the
//! list: the NSEC3 chain's links (`crate::nsec3::Links`), the NSEC owners
//! in canonical order (`crate::Zone`'s `nsec`) and the names the
//! additional-section targets of RRsets name (`crate::targets`).
//!
//! A list of at most [`Parts::MAX_PART`] entries is flat: one shared
//! slice, one allocation (none when empty), as most zones' lists are. A
//! longer one keeps its entries in parts of at most [`Parts::MAX_PART`],
//! each behind an `Arc`; a list of the parts' first keys finds a part by
//! a binary search, a second finds the entry in it. The list does not
//! know how its keys are ordered: each search is given the order of a key
//! against what is sought (an NSEC owner's key is its node id, ordered by
//! the node's name, which only the zone can read).
//!
//! Costs: an entry added, removed or replaced copies its part if another
//! version shares it (at most [`Parts::MAX_PART`] entries, counted in
//! [`Work::nsec_moved`]; a flat list is always copied, being one slice);
//! a part grown past [`Parts::MAX_PART`] is split in two, one fallen
//! below [`Parts::MIN_PART`] merged with a neighbour (and split again if
//! that makes it too long), so that every part but a lone one holds
//! [`Parts::MIN_PART`] to [`Parts::MAX_PART`] entries: a list of `n`
//! entries has at most `max(1, n / MIN_PART)` parts. A version that
//! changes a list in parts copies the list of parts (a key and a pointer
//! per part).

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
/// owners).
impl Keyed for u32 {
    type Key = u32;

    #[inline]
    fn key(&self) -> u32 {
        *self
    }
}

/// A sorted list of `T` without equal keys, flat or in shared parts (see
/// the module documentation). Each search takes `order`: the order of a
/// key of the list against what is sought (`Less`: the key comes before
/// it). Cheap to clone: one `Arc`.
pub(crate) enum Parts<T: Keyed> {
    /// At most [`Parts::MAX_PART`] entries in one slice (the empty list
    /// shares one static slice, without allocating).
    Flat(Arc<[T]>),
    /// Entries in parts, shared between versions.
    Split(Arc<Split<T>>),
}

/// The parts of a [`Parts`] list too long to be flat.
#[derive(Clone)]
pub(crate) struct Split<T: Keyed> {
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
        match self {
            Parts::Flat(entries) => Parts::Flat(Arc::clone(entries)),
            Parts::Split(split) => Parts::Split(Arc::clone(split)),
        }
    }
}

impl<T: Keyed> Default for Parts<T> {
    fn default() -> Self {
        Parts::Flat(Arc::default())
    }
}

impl<T: Keyed> core::fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Parts")
            .field("len", &self.len())
            .field("parts", &self.part_count())
            .finish()
    }
}

/// Counts `entries` entries of `T` copied.
fn copied<T>(work: &mut Work, entries: usize) {
    work.nsec_moved += entries;
    work.bytes_copied += entries * core::mem::size_of::<T>();
}

/// A new part of `entries` with room for one more (so that the insert
/// that follows a copy does not grow it again).
fn part_of_slice<T: Clone>(entries: &[T]) -> Vec<T> {
    let mut part = Vec::with_capacity(entries.len() + 1);
    part.extend_from_slice(entries);
    part
}

impl<T: Keyed> Parts<T> {
    /// The entries a part is built with.
    pub(crate) const PART: usize = 128;
    /// The most entries in a part: a longer part is split in two.
    pub(crate) const MAX_PART: usize = 2 * Self::PART;
    /// The fewest entries in a part that is not the only one: a shorter
    /// part is merged with a neighbour.
    pub(crate) const MIN_PART: usize = Self::PART / 4;

    /// The list of `sorted` (ascending, no equal keys): flat if it fits
    /// one part, else in parts of [`Parts::PART`] (the last one longer
    /// rather than shorter than [`Parts::MIN_PART`]).
    pub(crate) fn from_sorted(sorted: &[T]) -> Self {
        if sorted.len() <= Self::MAX_PART {
            return if sorted.is_empty() {
                Parts::default()
            } else {
                Parts::Flat(Arc::from(sorted))
            };
        }
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
        Parts::Split(Arc::new(Split {
            firsts: parts.iter().map(|part| part[0].key()).collect(),
            parts,
            len: sorted.len(),
        }))
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        match self {
            Parts::Flat(entries) => entries.len(),
            Parts::Split(split) => split.len,
        }
    }

    /// Whether there is no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of parts (a flat list's one, none if empty).
    fn part_count(&self) -> usize {
        match self {
            Parts::Flat(entries) => usize::from(!entries.is_empty()),
            Parts::Split(split) => split.parts.len(),
        }
    }

    /// The part `part`, if there is one.
    #[inline]
    fn part(&self, part: usize) -> Option<&[T]> {
        match self {
            Parts::Flat(entries) => (part == 0 && !entries.is_empty()).then_some(&entries[..]),
            Parts::Split(split) => split.parts.get(part).map(|part| &part[..]),
        }
    }

    /// The entries in order (for tests: the zone reads ranges,
    /// [`Parts::iter_from`]).
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.part_count()).flat_map(|part| self.part(part).unwrap_or_default())
    }

    /// The length of each part, in order (for tests and figures).
    #[cfg(test)]
    pub(crate) fn part_lens(&self) -> Vec<usize> {
        (0..self.part_count())
            .map(|part| self.part(part).map_or(0, <[T]>::len))
            .collect()
    }

    /// Panics unless every part holds 1 to [`Parts::MAX_PART`] entries,
    /// and, when there are several, at least [`Parts::MIN_PART`].
    #[cfg(test)]
    pub(crate) fn assert_bounds(&self) {
        let lens = self.part_lens();
        assert!(
            lens.iter().all(|&len| len > 0 && len <= Self::MAX_PART)
                && (lens.len() == 1 || lens.iter().all(|&len| len >= Self::MIN_PART)),
            "part lengths {lens:?}"
        );
    }

    /// How many of the parts are shared with `other` (the same `Arc`; a
    /// flat list's one part if it is the same slice).
    #[cfg(test)]
    pub(crate) fn shared_with(&self, other: &Parts<T>) -> usize {
        match (self, other) {
            (Parts::Flat(a), Parts::Flat(b)) => usize::from(!a.is_empty() && Arc::ptr_eq(a, b)),
            (Parts::Split(a), Parts::Split(b)) => a
                .parts
                .iter()
                .filter(|part| b.parts.iter().any(|o| Arc::ptr_eq(part, o)))
                .count(),
            _ => 0,
        }
    }

    /// The octets of the list of parts: what a version that changes the
    /// list copies besides the parts it changes (none for a flat list).
    pub(crate) fn list_bytes(&self) -> usize {
        match self {
            Parts::Flat(_) => 0,
            Parts::Split(split) => {
                split.parts.len()
                    * (core::mem::size_of::<T::Key>() + core::mem::size_of::<Arc<Vec<T>>>())
            }
        }
    }

    /// The part that holds what `order` seeks or would: the last whose
    /// first key is not above it, else the first (for an order that finds
    /// one entry at most `Equal`; [`Parts::iter_from`] makes its order so).
    #[inline]
    fn part_of(&self, order: &impl Fn(&T::Key) -> Ordering) -> usize {
        match self {
            Parts::Flat(_) => 0,
            Parts::Split(split) => split
                .firsts
                .partition_point(|first| order(first) != Ordering::Greater)
                .saturating_sub(1),
        }
    }

    /// The place of the first entry not below what `order` seeks
    /// (`above`: above it). Bound: two binary searches.
    #[inline]
    fn bound(&self, order: &impl Fn(&T::Key) -> Ordering, above: bool) -> At {
        let part = self.part_of(order);
        let Some(entries) = self.part(part) else {
            return (self.part_count(), 0);
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
        self.part(part)?.get(index)
    }

    /// The entry before `at`, if any.
    #[inline]
    fn before(&self, (part, index): At) -> Option<&T> {
        if index > 0 {
            return self.at((part, index - 1));
        }
        self.part(part.checked_sub(1)?)?.last()
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<&T> {
        self.part(0)?.first()
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<&T> {
        self.part(self.part_count().checked_sub(1)?)?.last()
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

    /// The entries from the first not below what `order` seeks, in
    /// order: a range of the list is this, taken while in the range.
    /// `order` may find many entries `Equal` (a range's start: every
    /// target of one name), which may span parts: the search is for the
    /// first of them, with an order that finds none equal (`Equal` taken
    /// as `Greater`), as `part_of` takes the last part whose first key is
    /// not above what is sought, which holds the last of them. Bound: two
    /// binary searches, then one step an entry taken.
    pub(crate) fn iter_from(
        &self,
        order: impl Fn(&T::Key) -> Ordering,
    ) -> impl Iterator<Item = &T> {
        self.iter_at(self.start_of(order))
    }

    /// Where [`Parts::iter_from`] starts (its part, its index there): the
    /// search apart from the walk, for an order that borrows what the walk
    /// must not. Bound: two binary searches.
    pub(crate) fn start_of(&self, order: impl Fn(&T::Key) -> Ordering) -> (usize, usize) {
        let lower = |key: &T::Key| order(key).then(Ordering::Greater);
        self.bound(&lower, false)
    }

    /// The entries from `(part, index)` ([`Parts::start_of`]) to the end.
    /// Bound: one step an entry taken.
    pub(crate) fn iter_at(&self, (first, index): (usize, usize)) -> impl Iterator<Item = &T> {
        (first..self.part_count()).flat_map(move |part| {
            let entries = self.part(part).unwrap_or_default();
            let skip = if part == first { index } else { 0 };
            entries.get(skip..).unwrap_or_default()
        })
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

    /// The parts of a split list, to change: its list of parts copied
    /// first if another version shares it (the parts stay shared; the
    /// octets counted in `work.bytes_copied`). A flat list is made a split
    /// one of one part, its entries copied.
    fn split_mut(&mut self, work: &mut Work) -> &mut Split<T> {
        if let Parts::Flat(entries) = self {
            copied::<T>(work, entries.len());
            let parts = if entries.is_empty() {
                Vec::new()
            } else {
                vec![Arc::new(part_of_slice(entries))]
            };
            *self = Parts::Split(Arc::new(Split {
                firsts: parts.iter().map(|part| part[0].key()).collect(),
                len: entries.len(),
                parts,
            }));
        }
        let list_bytes = self.list_bytes();
        let Parts::Split(split) = self else {
            unreachable!("made split above")
        };
        if Arc::get_mut(split).is_none() {
            work.bytes_copied += list_bytes;
        }
        Arc::make_mut(split)
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
        match self {
            Parts::Flat(entries) => {
                if Arc::get_mut(entries).is_none() {
                    copied::<T>(work, entries.len());
                    *entries = Arc::from(&entries[..]);
                }
                Arc::get_mut(entries)?.get_mut(index)
            }
            Parts::Split(_) => {
                let split = self.split_mut(work);
                Some(&mut split.part_mut(part, work)[index])
            }
        }
    }

    /// The flat list's slice, if the list is flat and shorter than
    /// [`Parts::MAX_PART`].
    fn flat_below_max(&mut self) -> Option<&mut Arc<[T]>> {
        match self {
            Parts::Flat(entries) if entries.len() < Self::MAX_PART => Some(entries),
            _ => None,
        }
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
        if let Some(entries) = self.flat_below_max() {
            // One slice copied with the entry in its place.
            let (index, skip) = match entries.binary_search_by(|other| order(&other.key())) {
                Ok(index) => (index, 1),
                Err(index) => (index, 0),
            };
            copied::<T>(work, entries.len() - skip);
            let (lower, upper) = entries.split_at(index);
            *entries = lower
                .iter()
                .cloned()
                .chain(core::iter::once(entry))
                .chain(upper[skip..].iter().cloned())
                .collect();
            return;
        }
        let part = self.part_of(&order);
        let split = self.split_mut(work);
        split.insert(part, entry, order, work);
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
        if let Parts::Flat(entries) = self {
            copied::<T>(work, entries.len() - 1);
            let (lower, upper) = entries.split_at(index);
            *entries = lower.iter().chain(&upper[1..]).cloned().collect();
            return true;
        }
        self.split_mut(work).remove(part, index, work);
        true
    }

    /// Adds each entry of `changes` that has come into the list and
    /// removes each that has left it: `(entry, was in, is in)`, `order`
    /// giving the order against an entry (in debug builds, each entry's
    /// membership before is checked against what the list holds).
    pub(crate) fn apply<O: Fn(&T::Key) -> Ordering>(
        &mut self,
        changes: impl IntoIterator<Item = (T, bool, bool)>,
        order: impl Fn(&T) -> O,
        work: &mut Work,
    ) {
        for (entry, was, is) in changes {
            if was == is {
                continue;
            }
            debug_assert_eq!(self.get(order(&entry)).is_some(), was);
            if is {
                let order = order(&entry);
                self.insert(entry, order, work);
            } else {
                self.remove(order(&entry), work);
            }
        }
    }
}

impl<T: Keyed> Split<T> {
    /// The part `part` to change, copied first if another version shares
    /// it (its entries counted in `work.nsec_moved`), with room for one
    /// more entry.
    fn part_mut(&mut self, part: usize, work: &mut Work) -> &mut Vec<T> {
        let slot = &mut self.parts[part];
        if Arc::get_mut(slot).is_none() {
            copied::<T>(work, slot.len());
            *slot = Arc::new(part_of_slice(slot));
        }
        Arc::get_mut(slot).expect("copied above")
    }

    /// [`Parts::insert`] into part `part` (the part `order` falls in).
    fn insert(
        &mut self,
        part: usize,
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
        let upper = (entries.len() > Parts::<T>::MAX_PART).then(|| {
            let upper = entries.split_off(entries.len() / 2);
            entries.shrink_to_fit();
            upper
        });
        self.len += 1;
        self.firsts[part] = first;
        if let Some(upper) = upper {
            self.firsts.insert(part + 1, upper[0].key());
            self.parts.insert(part + 1, Arc::new(upper));
        }
    }

    /// [`Parts::remove`] of the entry at `index` in part `part`.
    fn remove(&mut self, part: usize, index: usize, work: &mut Work) {
        self.len -= 1;
        let len = self.parts[part].len();
        if len == 1 {
            self.parts.remove(part);
            self.firsts.remove(part);
            return;
        }
        if len - 1 < Parts::<T>::MIN_PART && self.parts.len() > 1 {
            // Merged with a neighbour: the two parts copied once, into
            // one, without the entry.
            let left = part.min(self.parts.len() - 2);
            let right = self.parts.remove(left + 1);
            self.firsts.remove(left + 1);
            let lower = &self.parts[left];
            let mut merged = Vec::with_capacity(lower.len() + right.len());
            for (at, entries) in [(left, &lower[..]), (left + 1, &right[..])] {
                if at == part {
                    merged.extend_from_slice(&entries[..index]);
                    merged.extend_from_slice(&entries[index + 1..]);
                } else {
                    merged.extend_from_slice(entries);
                }
            }
            copied::<T>(work, merged.len());
            if merged.len() > Parts::<T>::MAX_PART {
                let upper = merged.split_off(merged.len() / 2);
                merged.shrink_to_fit();
                self.firsts.insert(left + 1, upper[0].key());
                self.parts.insert(left + 1, Arc::new(upper));
            }
            self.firsts[left] = merged[0].key();
            self.parts[left] = Arc::new(merged);
            return;
        }
        let entries = self.part_mut(part, work);
        entries.remove(index);
        self.firsts[part] = entries[0].key();
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
            list.assert_bounds();
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

    /// A range whose entries all compare `Equal` to what is sought (the
    /// targets of one name, many owners) and span three parts: iterated
    /// from its first entry, not from the last part whose first key is in
    /// it (which skipped 200 to 255 and 384 to 399 before).
    #[test]
    fn a_range_of_equal_keys_across_parts_is_iterated_from_its_first() {
        let keys: Vec<u32> = (0..600).collect();
        let list = Parts::from_sorted(&keys);
        assert_eq!(list.part_lens(), [128, 128, 128, 128, 88]);
        for class in 0..7u32 {
            // Every key of a hundred is `Equal` to the hundred sought.
            let taken: Vec<u32> = list
                .iter_from(|key: &u32| (key / 100).cmp(&class))
                .take_while(|&&key| key / 100 == class)
                .copied()
                .collect();
            let expected: Vec<u32> = (class * 100..(class * 100 + 100).min(600)).collect();
            assert_eq!(taken, expected, "keys {class}00 to {class}99");
        }
        // A flat list too, and a class before every key.
        let flat = Parts::from_sorted(&keys[..250]);
        assert!(flat
            .iter_from(|key: &u32| (key / 100).cmp(&1))
            .copied()
            .eq(100..250));
        assert!(list
            .iter_from(|key: &u32| (key / 100 + 1).cmp(&0))
            .copied()
            .eq(0..600));
    }

    /// A list built whole: flat up to [`Parts::MAX_PART`] entries, else
    /// parts of [`Parts::PART`], the last one taking a remainder shorter
    /// than [`Parts::MIN_PART`] (12 octets of key and pointer a part in
    /// the list).
    #[test]
    fn built_parts() {
        let entries =
            |n: u32| -> Vec<Entry> { (0..n).rev().map(|key| Entry { key, value: 0 }).collect() };
        assert_eq!(
            Parts::from_sorted(&entries(0)).part_lens(),
            Vec::<usize>::new()
        );
        assert_eq!(Parts::from_sorted(&entries(5)).part_lens(), [5]);
        assert_eq!(Parts::from_sorted(&entries(256)).part_lens(), [256]);
        assert!(matches!(Parts::from_sorted(&entries(256)), Parts::Flat(_)));
        assert!(matches!(Parts::from_sorted(&entries(257)), Parts::Split(_)));
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

    /// What a zone pays for a short list: an empty one allocates nothing
    /// (every empty list shares one slice), a list of one part is one
    /// allocation (a shared slice: no list of first keys, no second
    /// `Arc`), and the list is a pointer and a length in the zone (as the
    /// `Arc<[u32]>` it replaced).
    #[test]
    fn a_short_list_is_one_slice() {
        assert_eq!(core::mem::size_of::<Parts<u32>>(), 16);
        let (Parts::Flat(a), Parts::Flat(b)) =
            (Parts::<u32>::default(), Parts::<u32>::from_sorted(&[]))
        else {
            panic!("an empty list is flat");
        };
        assert!(Arc::ptr_eq(&a, &b), "an empty list allocates");
        let Parts::Flat(one) = Parts::from_sorted(&[3u32, 7, 9]) else {
            panic!("a short list is flat");
        };
        assert_eq!(&one[..], [3, 7, 9]);
        // Grown and shrunk by patches, a list stays flat to MAX_PART.
        let mut list = Parts::<u32>::default();
        let mut work = Work::default();
        for key in 0..Parts::<u32>::MAX_PART as u32 {
            list.insert(key, |other: &u32| other.cmp(&key), &mut work);
        }
        assert!(matches!(list, Parts::Flat(_)));
        let key = Parts::<u32>::MAX_PART as u32;
        list.insert(key, |other: &u32| other.cmp(&key), &mut work);
        assert_eq!(list.part_lens(), [128, 129]);
    }

    /// A removal from a shared part that leaves it shorter than
    /// [`Parts::MIN_PART`] copies the part and its neighbour once, into
    /// the merged part: 159 entries, not the 191 of copying the short
    /// part, then both into the merge.
    #[test]
    fn a_short_shared_part_is_copied_once_into_its_merge() {
        let keys: Vec<Entry> = (0..288u32)
            .rev()
            .map(|key| Entry { key, value: 0 })
            .collect();
        let mut list = Parts::from_sorted(&keys);
        assert_eq!(list.part_lens(), [128, 128, 32]);
        let kept = list.clone();
        let mut work = Work::default();
        // The last part holds the keys 31 down to 0.
        assert!(list.remove(order(5), &mut work));
        assert_eq!(list.part_lens(), [128, 159]);
        assert_eq!(work.nsec_moved, 159, "{work:?}");
        assert_eq!(work.bytes_copied, 159 * 8 + 3 * 12, "{work:?}");
        assert_eq!(kept.len(), 288);
        assert!(kept.iter().map(|e| e.key).eq((0..288).rev()));
        assert!(list
            .iter()
            .map(|e| e.key)
            .eq((0..288).rev().filter(|&k| k != 5)));
    }

    /// A copied part has room for the entry the insert adds, and the
    /// lower half of a split keeps no more than it holds.
    #[test]
    fn copies_and_splits_keep_no_slack() {
        let keys: Vec<u32> = (0..400).map(|key| key * 2).collect();
        let mut list = Parts::from_sorted(&keys);
        let kept = list.clone();
        let mut work = Work::default();
        list.insert(1, |other: &u32| other.cmp(&1), &mut work);
        let Parts::Split(split) = &list else {
            panic!("400 entries are in parts");
        };
        assert_eq!(split.parts[0].len(), 129);
        assert_eq!(split.parts[0].capacity(), 129);
        // A part filled past MAX_PART and split: the lower half shrunk
        // (the last part, grown in place unshared, may have slack).
        for key in (0..200).map(|key| 801 + 2 * key) {
            list.insert(key, |other: &u32| other.cmp(&key), &mut work);
        }
        let Parts::Split(split) = &list else {
            panic!("still in parts");
        };
        assert!(
            split.parts[..split.parts.len() - 1]
                .iter()
                .all(|part| part.capacity() <= part.len() + 1),
            "{:?}",
            split
                .parts
                .iter()
                .map(|p| (p.len(), p.capacity()))
                .collect::<Vec<_>>()
        );
        drop(kept);
    }
}
