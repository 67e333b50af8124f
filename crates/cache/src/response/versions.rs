//! The response cache across a zone's versions: what an update makes
//! stale, and what stays. A new version drops its zone's entries as a
//! whole ([`ResponseCache::invalidate_tag`]) or by the names it changed
//! ([`ResponseCache::invalidate_names`], [`ResponseCache::invalidate_update`]):
//! those are kept in a table of changed names (with a filter of one bit a
//! name in front of it), and an entry stored before the version is checked
//! at its next hit (`still_answers`): kept if it is of a kind that can be
//! (`keep_of`), its name and the names above it unchanged, a negative
//! answer's SOA rewritten to the new serial when only the serial moved
//! (`soa_serial_at`). Decisions 0015 and 0022.

use tern_wire::types::RType;

use super::{ResponseCache, TEMPLATE_LEN};

/// The most changed names [`ResponseCache::invalidate_names`] keeps, all
/// tags together (each name and, for names that change what is below
/// them, a second entry). Past it every invalidation by name so far counts
/// as a whole-zone one, and the table starts empty; a call with more than
/// this many names invalidates its whole tag. 4,096 entries: 64 KiB of
/// table, some 16 to 40 seconds of a zone updated 100 to 250 times a
/// second with one name each.
pub const MAX_TRACKED_NAMES: usize = 4096;

/// Kinds of entry in the table of changed names (the `bits` of their
/// hash): the name's own answers changed; answers below it changed.
pub(super) const CHANGED_NAME: u8 = 1;
pub(super) const CHANGED_BELOW: u8 = 2;

/// Bits of the filter in front of the table of changed names
/// (`ResponseCache::changed_bits`): 65,536 (8 KiB), sixteen per tracked
/// name at most, so a name not in the table finds its bit clear at least
/// fifteen times in sixteen and skips the probe.
pub(super) const CHANGED_BITS: usize = 1 << 16;

/// The filter's bit of a hash in the table of changed names: bits the
/// table uses for neither its buckets (the low ones) nor its tags (the
/// top seven).
pub(super) fn changed_bit(hash: u64) -> (usize, u64) {
    let bit = (hash >> 32) as usize % CHANGED_BITS;
    (bit / 64, 1 << (bit % 64))
}

/// Label counts tracked by [`ResponseCache::below_at`]: a name has at
/// most 128 labels, the root's included.
pub(super) const DEPTHS: usize = 128;

/// What an entry is, for the check of an entry kept across versions
/// (`Slot::keep`, set when it is stored): an answer never kept; a
/// positive answer of the question's name alone; a negative answer with
/// the SOA alone in its authority section.
pub(super) const KEEP_NEVER: u8 = 0;
pub(super) const KEEP_POSITIVE: u8 = 1;
pub(super) const KEEP_NEGATIVE: u8 = 2;

/// Spreads a name's hash, with a tag and a kind, over the table of
/// changed names: one multiplication, folded.
pub(super) fn changed_hash(name_hash: u64, tag: u32, kind: u8) -> u64 {
    const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
    let mixed =
        u128::from(name_hash ^ (u64::from(tag) << 8 | u64::from(kind))) * u128::from(SPREAD);
    (mixed as u64) ^ (mixed >> 64) as u64
}

impl ResponseCache {
    /// Makes every entry stored with `tag` so far answer no more (a new
    /// version of the zone whose answers carry it), at once and without a
    /// walk: the entries stay until evicted, and an insert of the same key
    /// replaces one. Not for the query path: the table of tags may grow.
    pub fn invalidate_tag(&mut self, tag: u32) {
        if self.clock == u32::MAX {
            self.clear();
            return;
        }
        self.clock += 1;
        let tag = tag as usize;
        self.grow_tags(tag);
        self.tag_since[tag] = self.clock;
        self.tag_whole[tag] = self.clock;
        self.tag_soa[tag] = self.clock;
    }

    /// Makes room for `tag` in the tables by tag.
    pub(super) fn grow_tags(&mut self, tag: usize) {
        if self.tag_since.len() <= tag {
            self.tag_since.resize(tag + 1, 0);
            self.tag_whole.resize(tag + 1, 0);
            self.tag_soa.resize(tag + 1, 0);
            self.tag_serial.resize(tag + 1, 0);
        }
    }

    /// Makes the entries stored with `tag` so far that can hold data of
    /// `names` answer no more (a new version of the zone, made by a dynamic
    /// update, that changed only those names): see "Invalidation by name"
    /// in the module docs. `names` are lowercased wire names, each with
    /// whether the answers for names below it may have changed too. Not
    /// for the query path: the table of changed names may grow (up to
    /// [`MAX_TRACKED_NAMES`]). More names than that invalidate the tag
    /// whole.
    pub fn invalidate_names<'n, I>(&mut self, tag: u32, names: I)
    where
        I: IntoIterator<Item = (&'n [u8], bool)>,
        I::IntoIter: Clone,
    {
        self.invalidate_update(tag, names, None);
    }

    /// [`ResponseCache::invalidate_names`], for a version whose SOA
    /// differs from the previous version's in the serial alone, `serial`
    /// (`tern_authority`'s `Zone::serial_step_since`; `None`: not known
    /// to): the negative answers of the tag (their authority section the
    /// SOA alone) whose names did not change then answer on, with this
    /// serial written into their SOA, rather than being dropped.
    ///
    /// Allocates nothing once the table of changed names has grown (it
    /// goes over `names` twice: to count, then to enter them). Bound: two
    /// passes over `names`, the count's stopping at
    /// [`MAX_TRACKED_NAMES`], and a look-up (hash and probe) for each.
    pub fn invalidate_update<'n, I>(&mut self, tag: u32, names: I, serial: Option<u32>)
    where
        I: IntoIterator<Item = (&'n [u8], bool)>,
        I::IntoIter: Clone,
    {
        let names = names.into_iter();
        let mut entries = 0;
        let mut count = 0;
        for (_, below) in names.clone() {
            count += 1;
            entries += 1 + usize::from(below);
            if entries > MAX_TRACKED_NAMES {
                self.invalidate_tag(tag);
                return;
            }
        }
        if self.clock == u32::MAX {
            self.clear();
            return;
        }
        if self.changed.len() + entries > MAX_TRACKED_NAMES {
            // Every change by name so far becomes a whole-zone one.
            for (whole, since) in self.tag_whole.iter_mut().zip(&self.tag_since) {
                *whole = *since;
            }
            self.changed.clear();
            self.changed_bits.fill(0);
            self.below_at = [0; DEPTHS];
        }
        self.clock += 1;
        let clock = self.clock;
        let at = tag as usize;
        self.grow_tags(at);
        self.tag_since[at] = clock;
        if self.changed_bits.is_empty() {
            self.changed_bits = vec![0; CHANGED_BITS / 64].into_boxed_slice();
        }
        match serial {
            Some(serial) => self.tag_serial[at] = serial,
            None => self.tag_soa[at] = clock,
        }
        // As many as counted: a clone that gave more would pass the bound.
        for (name, below) in names.take(count) {
            let name_hash = self.hasher.name_hash(name);
            self.mark_changed(changed_hash(name_hash, tag, CHANGED_NAME), clock);
            if below {
                if let Some(below) = self.below_at.get_mut(labels(name)) {
                    *below = clock;
                }
                self.mark_changed(changed_hash(name_hash, tag, CHANGED_BELOW), clock);
            }
        }
    }

    /// Enters (or restamps) a hash in the table of changed names, and its
    /// bit in the filter, changed at `clock`.
    fn mark_changed(&mut self, hash: u64, clock: u32) {
        match self.changed.find_mut(hash, |&(other, _)| other == hash) {
            Some(entry) => entry.1 = clock,
            None => {
                self.changed
                    .insert_unique(hash, (hash, clock), |&(other, _)| other);
                let (word, bit) = changed_bit(hash);
                if let Some(word) = self.changed_bits.get_mut(word) {
                    *word |= bit;
                }
            }
        }
    }

    /// When the name of this hash last changed, by the clock; 0 if not
    /// since the table was last emptied.
    pub(super) fn changed_at(&self, hash: u64) -> u32 {
        let (word, bit) = changed_bit(hash);
        if self
            .changed_bits
            .get(word)
            .is_some_and(|word| word & bit == 0)
        {
            return 0;
        }
        self.changed
            .find(hash, |&(other, _)| other == hash)
            .map_or(0, |&(_, clock)| clock)
    }

    /// Whether the entry in slot `index`, stored before its tag's last
    /// invalidation, still answers (see "Invalidation by name" in the
    /// module docs); if it does, it is stamped with the clock now (and a
    /// negative answer given the tag's serial), so that its next hits do
    /// not ask again. `name_hash` is its name's ([`KeyedHash::name_hash`]).
    /// Bound: one look-up of its name, and, only at label counts where a
    /// name changed what is below it since, one of the name above it there
    /// (a walk of its labels, at most 128).
    pub(super) fn still_answers(&mut self, index: u32, name_hash: u64) -> bool {
        let Some(slot) = self.slots.get(index as usize) else {
            return false;
        };
        let tag = slot.tag;
        let stamp = slot.stamp;
        let keep = slot.keep;
        let depth = usize::from(slot.labels);
        let at = tag as usize;
        if keep == KEEP_NEVER
            || stamp < self.tag_whole.get(at).copied().unwrap_or(u32::MAX)
            || (keep == KEEP_NEGATIVE && stamp < self.tag_soa.get(at).copied().unwrap_or(u32::MAX))
            || self.changed_at(changed_hash(name_hash, tag, CHANGED_NAME)) > stamp
        {
            return false;
        }
        // The names above it, up to the root: a change that moves what is
        // below one of them (a name come or gone, a DNAME, a cut, a
        // wildcard's parent). Only those of label counts that had such a
        // change since are looked up.
        let below = self.below_at.get(..depth).unwrap_or(&self.below_at);
        if below.iter().any(|&clock| clock > stamp) && !self.nothing_above_changed(index) {
            return false;
        }
        let (slot_at, len, name_len) = (slot.at, usize::from(slot.len), usize::from(slot.name_len));
        if keep == KEEP_NEGATIVE {
            let serial = self.tag_serial.get(at).copied().unwrap_or(0);
            let data = self.slab.get_mut(slot_at, len);
            let tail = data.get_mut(TEMPLATE_LEN + name_len..).unwrap_or_default();
            let Some(serial_at) = soa_serial_at(tail) else {
                return false;
            };
            match tail.get_mut(serial_at..serial_at + 4) {
                Some(bytes) => bytes.copy_from_slice(&serial.to_be_bytes()),
                None => return false,
            }
        }
        let clock = self.clock;
        if let Some(slot) = self.slots.get_mut(index as usize) {
            slot.stamp = clock;
        }
        true
    }

    /// Whether no name above the entry in slot `index` changed what is
    /// below it since the entry was stamped; the names of label counts
    /// that had no such change are not looked up. Each step skips a
    /// label: at most 128 steps.
    pub(super) fn nothing_above_changed(&self, index: u32) -> bool {
        let Some(slot) = self.slots.get(index as usize) else {
            return false;
        };
        let (tag, stamp) = (slot.tag, slot.stamp);
        let name = slot.name(&self.slab);
        let mut depth = usize::from(slot.labels);
        let mut label = 0;
        while let Some(&len) = name.get(label) {
            if len == 0 {
                break;
            }
            label += 1 + usize::from(len);
            depth = depth.saturating_sub(1);
            if self.below_at.get(depth).copied().unwrap_or(u32::MAX) <= stamp {
                continue;
            }
            let Some(above) = name.get(label..) else {
                return false;
            };
            let hash = changed_hash(self.hasher.name_hash(above), tag, CHANGED_BELOW);
            if self.changed_at(hash) > stamp {
                return false;
            }
        }
        true
    }
}

/// What an answer to `qtype`, whose tail starts at `tail_start`, is for
/// the check of an entry kept across versions (`KEEP_*`): answers for
/// the SOA, RRSIG and ANY are never kept (every version changes the
/// SOA), nor answers with additional records other than the OPT (`edns`).
/// Bound: the answer records (at most `answer`'s octets).
pub(super) fn keep_of(qtype: RType, answer: &[u8], tail_start: usize, edns: bool) -> u8 {
    if matches!(qtype, RType::SOA | RType::RRSIG | RType::ANY) {
        return KEEP_NEVER;
    }
    let count = |at: usize| {
        answer
            .get(at..at + 2)
            .map_or(u16::MAX, |c| u16::from_be_bytes([c[0], c[1]]))
    };
    let (rcode, answers, authority) =
        (answer.get(3).map_or(0xff, |f| f & 0x0f), count(6), count(8));
    let tail = answer.get(tail_start..).unwrap_or_default();
    if count(10) != u16::from(edns) {
        return KEEP_NEVER;
    }
    if rcode == 0 && answers > 0 && authority == 0 {
        // Each answer record owned by the question's name (a pointer to
        // offset 12): nothing of another name is in the answer.
        let mut at = 0;
        for _ in 0..answers {
            let Some(&[c0, c1, _, _, _, _, _, _, _, _, l0, l1]) = tail.get(at..at + 12) else {
                return KEEP_NEVER;
            };
            if [c0, c1] != [0xc0, 0x0c] {
                return KEEP_NEVER;
            }
            at += 12 + usize::from(u16::from_be_bytes([l0, l1]));
        }
        KEEP_POSITIVE
    } else if (rcode == 0 || rcode == 3) && answers == 0 && authority == 1 {
        match soa_serial_at(tail) {
            Some(_) => KEEP_NEGATIVE,
            None => KEEP_NEVER,
        }
    } else {
        KEEP_NEVER
    }
}

/// The labels of a wire name, the root's not counted. Bound: the name's
/// octets.
pub(super) fn labels(name: &[u8]) -> usize {
    let mut count = 0;
    let mut at = 0;
    while let Some(&len) = name.get(at) {
        if len == 0 {
            break;
        }
        count += 1;
        at += 1 + usize::from(len);
    }
    count
}

/// Where the serial of the SOA record that starts `tail` (a negative
/// answer's authority section, its owner a compression pointer or a
/// name) is in `tail`; `None` if the record is no SOA or is cut short.
/// Bound: the owner's labels, at most `tail`'s octets.
pub(super) fn soa_serial_at(tail: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let len = *tail.get(at)?;
        match len {
            0 => {
                at += 1;
                break;
            }
            0xc0..=0xff => {
                at += 2;
                break;
            }
            1..=63 => at += 1 + usize::from(len),
            _ => return None,
        }
    }
    let fixed = tail.get(at..at + 10)?;
    if fixed[..2] != RType::SOA.0.to_be_bytes() {
        return None;
    }
    let rdlen = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
    let end = at + 10 + rdlen;
    // Two names of at least one octet, and five 32-bit fields.
    if rdlen < 22 || end > tail.len() {
        return None;
    }
    Some(end - 20)
}
