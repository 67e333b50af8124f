//! A window of a signed NSEC zone signed apart (issues 24 and 25): the
//! owners a change touched, their NSEC neighbours in the served version,
//! the zone cuts above them and the apex, read from the served version one
//! name at a time and signed through the incremental signer, so that the
//! signing costs the change, not the zone. Used by the update thread
//! (`update::signed`) and by a reload that adds or removes names
//! (`edited`).

use std::collections::BTreeSet;
use std::path::Path;

use tern_authority::Zone;
use tern_update::store::Key;
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_zone::{RecordList, Records, Sink};

/// The most owners (changed, their neighbours and the cuts above them) a
/// window signs; a group that changes more is signed whole.
pub(crate) const MAX_WINDOW_OWNERS: usize = 4_096;

/// The most NSEC owners the window's neighbour look-ups pass over (the
/// changed owners between a changed owner and its unchanged neighbours,
/// and those checked for the NSEC records kept); beyond, the zone is
/// signed whole.
pub(crate) const MAX_WINDOW_SCAN: usize = 65_536;

/// Where the records of `owner` start in `list` (canonical order of
/// owners), or would. Bound: a binary search.
pub(crate) fn owner_start<L: RecordList + ?Sized>(list: &L, owner: Name<'_>) -> usize {
    let (mut low, mut high) = (0, list.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if list.record(middle).owner.canonical_cmp(owner) == std::cmp::Ordering::Less {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// The records of `owner` in `list`: their range (empty if none), and how
/// many were read past the binary search.
pub(crate) fn owner_range<L: RecordList + ?Sized>(
    list: &L,
    owner: Name<'_>,
) -> std::ops::Range<usize> {
    let start = owner_start(list, owner);
    let mut end = start;
    while end < list.len() && list.record(end).owner.eq_ignore_case(owner) {
        end += 1;
    }
    start..end
}

/// Whether an RRSIG's RDATA covers NSEC.
pub(crate) fn covers_nsec(rdata: &[u8]) -> bool {
    rdata.get(..2) == Some(&RType::NSEC.0.to_be_bytes()[..])
}

/// The records the lowercased name `lower` owns in the served signed
/// version `zone` (as the signer made them: each RRset with its RRSIGs),
/// appended to `into`; how many. Bound: one look-up, the name's records.
pub(crate) fn served_owner<S: Sink>(
    zone: &Zone,
    lower: Name<'_>,
    into: &mut S,
) -> Result<usize, String> {
    let records = zone.owner_records(lower);
    for record in &records {
        let record = tern_zone::RecordRef {
            owner: record.owner,
            class: RClass::IN,
            ttl: record.ttl,
            rtype: record.rtype,
            rdata: record.rdata,
            location: tern_zone::Location::default(),
        };
        Sink::record(into, record).map_err(str::to_string)?;
    }
    Ok(records.len())
}

/// The NSEC owners of the served version `zone` nearest `lower` on one
/// side (`after`: the side after it), passing over those in `changed`: each
/// of them, up to and including the first not changed, is added to
/// `window`; how many were looked at, or `None` past `budget`.
pub(crate) fn nsec_neighbours(
    zone: &Zone,
    lower: Name<'_>,
    after: bool,
    changed: &BTreeSet<Key>,
    window: &mut std::collections::BTreeMap<Key, NameBuf>,
    budget: usize,
) -> Option<usize> {
    let mut at = NameBuf::from_name(lower);
    let mut looked = 0;
    loop {
        let around = zone.nsec_owners_around(at.as_name());
        let Some(next) = (if after { around.1 } else { around.0 }) else {
            return Some(looked);
        };
        looked += 1;
        if looked > budget {
            return None;
        }
        let key = Key::of(next);
        let past = !changed.contains(&key);
        window
            .entry(key)
            .or_insert_with(|| NameBuf::from_name(next));
        if past {
            return Some(looked);
        }
        at = NameBuf::from_name(next);
    }
}

/// A window of an NSEC zone to sign apart ([`window_of`]).
pub(crate) struct Window {
    /// The changed owners, the apex aside.
    changed: BTreeSet<Key>,
    /// The owners of the window, lowercased, in canonical order.
    pub(crate) owners: std::collections::BTreeMap<Key, NameBuf>,
    /// NSEC owners of the served version looked at.
    scanned: usize,
}

impl Window {
    /// The owners of the window, lowercased, in canonical order.
    pub(crate) fn owners(&self) -> impl Iterator<Item = Name<'_>> {
        self.owners.values().map(NameBuf::as_name)
    }

    /// How many owners the window has.
    pub(crate) fn len(&self) -> usize {
        self.owners.len()
    }
}

/// The window of the served signed NSEC version `served` for a change of
/// `changed` owners (the apex among them or not; no delegation or DNAME
/// changed): the apex, each changed owner, the nearest NSEC owners of
/// `served` before and after each (past the changed ones,
/// [`Zone::nsec_owners_around`]), and the zone cuts above each
/// (`is_cut`, so that glue stays glue). `None` past
/// [`MAX_WINDOW_OWNERS`] owners or [`MAX_WINDOW_SCAN`] NSEC owners looked
/// at. Bound: those limits.
pub(crate) fn window_of<'n>(
    served: &Zone,
    changed: impl Iterator<Item = Name<'n>>,
    is_cut: &dyn Fn(Name<'_>) -> bool,
) -> Option<Window> {
    let origin = served.origin();
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let mut window = Window {
        changed: BTreeSet::new(),
        owners: Default::default(),
        scanned: 0,
    };
    window.owners.insert(Key::of(origin), lower(origin));
    for owner in changed {
        if !owner.eq_ignore_case(origin) && window.changed.insert(Key::of(owner)) {
            if window.changed.len() > MAX_WINDOW_OWNERS {
                return None;
            }
            window.owners.insert(Key::of(owner), lower(owner));
        }
    }
    let starts: Vec<NameBuf> = window.owners.values().copied().collect();
    for name in &starts {
        let name = name.as_name();
        // The zone cuts above (no delegation or DNAME changed below the
        // apex: the same before and after).
        let mut above = name;
        while let Some(parent) = above.parent() {
            if parent.label_count() <= origin.label_count() {
                break;
            }
            if is_cut(parent) {
                window
                    .owners
                    .entry(Key::of(parent))
                    .or_insert_with(|| lower(parent));
            }
            above = parent;
        }
        // The NSEC owners before (the apex has none: the last owner's NSEC
        // names it, unchanged) and after, past the changed ones.
        let sides: &[bool] = if name.eq_ignore_case(origin) {
            &[true]
        } else {
            &[false, true]
        };
        for &after in sides {
            let budget = MAX_WINDOW_SCAN.saturating_sub(window.scanned);
            let looked = nsec_neighbours(
                served,
                name,
                after,
                &window.changed,
                &mut window.owners,
                budget,
            )?;
            window.scanned += looked;
        }
        if window.owners.len() > MAX_WINDOW_OWNERS {
            return None;
        }
    }
    Some(window)
}

/// A window signed ([`sign_window_of`]).
pub(crate) struct WindowSigned {
    /// The window's signed records, in canonical order.
    pub(crate) records: Vec<tern_zone::Record>,
    /// What changed from the served version.
    pub(crate) change: tern_dnssec::Change,
    /// RRSIGs made.
    pub(crate) signatures: usize,
    /// Records read: the window's new and previous records, and the NSEC
    /// owners looked at.
    pub(crate) visited: usize,
    /// When the first signature made or kept is due for refresh.
    pub(crate) next_refresh: Option<u64>,
    /// When a key's next step is due.
    pub(crate) next_key_event: Option<u64>,
    /// Whether a KSK's or CSK's DS is awaited at the parent.
    pub(crate) awaiting_ds: bool,
}

/// The owners of `window` signed from `input` (their new records,
/// unsigned) and their previous records in `served` (read one name at a
/// time) through [`crate::signing::sign_window`]: what changed is signed,
/// the rest kept. An owner of the window whose next NSEC owner lies
/// outside it (only a neighbour's, whose NSEC did not change) keeps its
/// previous NSEC and signatures. `None` when the window cannot be signed
/// apart. Bound: the window's records, a look-up of `served` per owner,
/// [`MAX_WINDOW_SCAN`] NSEC owners looked at.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_window_of(
    served: &Zone,
    window: &Window,
    input: &[tern_zone::Record],
    policy: &crate::signing::Policy,
    state: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Option<WindowSigned>, String> {
    let origin = served.origin();
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let changed = &window.changed;
    let mut scanned = window.scanned;
    // The window's previous (signed) records.
    let mut before = Records::new();
    for name in window.owners.values() {
        served_owner(served, name.as_name(), &mut before)?;
    }
    let resigned =
        crate::signing::sign_window(origin, &before, input, policy, state, now, serial_above)?;
    let signatures = resigned.zone.signatures;
    let next_refresh = resigned.zone.next_refresh;
    let Some(mut change) = resigned.zone.difference else {
        return Ok(None);
    };
    let mut out = resigned.zone.records;
    // The NSEC owners of the window, in order: each whose next owner in
    // the window is not its next in the zone keeps its previous NSEC.
    let nsec_owners: Vec<NameBuf> = out
        .iter()
        .filter(|record| record.rtype == RType::NSEC)
        .map(|record| lower(record.owner.as_name()))
        .collect();
    let mut kept: Vec<NameBuf> = Vec::new();
    for (at, owner) in nsec_owners.iter().enumerate() {
        let next = nsec_owners.get(at + 1);
        // The served version's NSEC owners after this one and before the
        // next: one not in the window (an NSEC owner of the window, one
        // deleted, is not outside it) lies outside.
        let mut from = *owner;
        let outside = loop {
            let Some(after) = served.nsec_owners_around(from.as_name()).1 else {
                break false;
            };
            scanned += 1;
            if scanned > MAX_WINDOW_SCAN {
                return Ok(None);
            }
            if next.is_some_and(|next| after.canonical_cmp(next.as_name()).is_ge()) {
                break false;
            }
            if !window.owners.contains_key(&Key::of(after)) {
                break true;
            }
            from = NameBuf::from_name(after);
        };
        if outside {
            let key = Key::of(owner.as_name());
            if owner.as_name().eq_ignore_case(origin) || changed.contains(&key) {
                // Never expected: a changed owner's next is in the window.
                return Ok(None);
            }
            kept.push(*owner);
        }
    }
    for owner in &kept {
        let owner = owner.as_name();
        let is_nsec = |record: &tern_zone::Record| {
            record.owner.as_name().eq_ignore_case(owner)
                && (record.rtype == RType::NSEC
                    || (record.rtype == RType::RRSIG && covers_nsec(&record.rdata)))
        };
        out.retain(|record| !is_nsec(record));
        change.deleted.retain(|record| !is_nsec(record));
        change.added.retain(|record| !is_nsec(record));
        let at = owner_start(&out, owner);
        let mut previous_nsec: Vec<tern_zone::Record> = Vec::new();
        scanned += served_owner(served, owner, &mut previous_nsec)?;
        previous_nsec.retain(|record| {
            record.rtype == RType::NSEC
                || (record.rtype == RType::RRSIG && covers_nsec(&record.rdata))
        });
        let end = at
            + out[at..]
                .iter()
                .take_while(|record| record.owner.as_name().eq_ignore_case(owner))
                .count();
        out.splice(end..end, previous_nsec);
    }
    Ok(Some(WindowSigned {
        visited: scanned + input.len() + RecordList::len(&before),
        records: out,
        change,
        signatures,
        next_refresh,
        next_key_event: resigned.next_key_event,
        awaiting_ds: resigned.awaiting_ds,
    }))
}

/// The owners `change` names, each once in canonical order, with the
/// range of their records in `out` (a window's signed records, in
/// canonical order; empty for an owner removed).
pub(crate) fn changed_owners<'c>(
    out: &[tern_zone::Record],
    change: &'c tern_dnssec::Change,
) -> Vec<(Name<'c>, std::ops::Range<usize>)> {
    let mut owners: Vec<&tern_zone::Record> = change.deleted.iter().chain(&change.added).collect();
    owners.sort_unstable_by(|a, b| a.owner.as_name().canonical_cmp(b.owner.as_name()));
    owners.dedup_by(|a, b| a.owner.as_name().eq_ignore_case(b.owner.as_name()));
    owners
        .into_iter()
        .map(|record| {
            let owner = record.owner.as_name();
            (owner, owner_range(out, owner))
        })
        .collect()
}
