//! A window of a signed NSEC zone signed apart (issues 24 and 25): the
//! owners a change touched, their NSEC neighbours in the served version,
//! the zone cuts above them and the apex, read from the served version one
//! name at a time and signed through the incremental signer, so that the
//! signing costs the change, not the zone. Used by the update thread
//! (`update::signed`) and by a reload that adds or removes names or
//! edits a delegation (`edited`): a delegation made, removed, made secure
//! or insecure is signed as any window is, when every served name below a
//! cut made or removed is a changed owner ([`names_below_cuts_edited`];
//! a reload makes the names below such a cut changed owners,
//! `edited::Edits::delegations_in_window`).

use std::collections::BTreeSet;
use std::path::Path;

use tern_authority::Zone;
use tern_update::store::Key;
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::RType;
use tern_zone::{RecordList, Records, Sink};

/// The most owners (changed, their neighbours and the cuts above them) a
/// window signs; a group that changes more is signed whole.
pub(crate) const MAX_WINDOW_OWNERS: usize = 4_096;

/// The most NSEC owners the window's neighbour look-ups pass over (the
/// changed owners between a changed owner and its unchanged neighbours,
/// and those checked for the NSEC records kept); beyond, the zone is
/// signed whole.
pub(crate) const MAX_WINDOW_SCAN: usize = 65_536;

/// A version made by patches is built whole once the unused space they
/// left in its tables ([`Zone::garbage_bytes`]) passes one part in this
/// many of them (here a quarter: the tables are at most 4/3 of the live
/// records'), as `garbage_within_share` tests. Here, not in `update`, so that the
/// signed windows use it without a circle of imports; `update` re-exports
/// it.
pub const MAX_GARBAGE_SHARE: usize = 4;

/// Whether a patched version is served as it is: the unused space the
/// patches left in its tables ([`Zone::garbage_bytes`]) within one part
/// in [`MAX_GARBAGE_SHARE`] of them. Past it, the version is built whole
/// (or a signed zone signed whole): compaction, its cost spread over the
/// changes that made the garbage. The one rule of every path that
/// patches: unsigned updates (`update`) and those that sign
/// (`update::signed`, `edited`, `window`, `load::sign`).
pub(crate) fn garbage_within_share(zone: &Zone) -> bool {
    zone.garbage_bytes() <= zone.table_bytes() / MAX_GARBAGE_SHARE
}

/// What a patch copied, as every path that patches counts it (its log
/// line, `update::next_version`'s work): the tables' and lists' work (the
/// NSEC3 chain's among it) and, counted apart by the patch, the order of
/// the names a signed zone keeps, summed.
pub(crate) fn patch_work(patched: &tern_authority::Patched) -> tern_authority::Work {
    let mut work = patched.work;
    work += patched.order_work;
    work
}

/// The names strictly between `name` and the zone's apex (`origin`, of
/// which `name` is a subdomain), nearest first. Bound: `name`'s labels.
pub(crate) fn names_between<'a>(
    name: Name<'a>,
    origin: Name<'_>,
) -> impl Iterator<Item = Name<'a>> {
    let apex_labels = origin.label_count();
    std::iter::successors(name.parent(), |above| above.parent())
        .take_while(move |parent| parent.label_count() > apex_labels)
}

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
        let record = crate::signing::record_ref(record);
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

/// Whether the delegations made or removed at `cuts` (NS RRsets below
/// the apex come or gone; names of `edited`) leave every name the served
/// version `served` holds below them among `edited` (the change's owners
/// but the apex, lowercased), so that a window of the edited owners
/// signs again all that a cut made or removed turns into glue or out of
/// it: the names directly below each name from a cut down to an edited
/// owner counted in the served version ([`Zone::child_count`]) against
/// those among the window's names (the edited owners and the names
/// between them and the apex), a served name with records not edited
/// refused. With no cut, `true`; with more than [`MAX_WINDOW_OWNERS`]
/// edited owners, `false`. Bound: a look-up of `served` and of the cuts'
/// set per edited owner and per name between one and the apex.
pub(crate) fn names_below_cuts_edited(served: &Zone, edited: &[NameBuf], cuts: &[NameBuf]) -> bool {
    use std::collections::BTreeMap;
    if cuts.is_empty() {
        return true;
    }
    if edited.len() > MAX_WINDOW_OWNERS {
        return false;
    }
    let origin = served.origin();
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let edited_keys: BTreeSet<Key> = edited.iter().map(|name| Key::of(name.as_name())).collect();
    let cut_keys: BTreeSet<Key> = cuts.iter().map(|cut| Key::of(cut.as_name())).collect();
    // The name itself or a name between it and the apex is a cut (the
    // apex never is one).
    let under_cut = |name: Name<'_>| {
        cut_keys.contains(&Key::of(name))
            || names_between(name, origin).any(|parent| cut_keys.contains(&Key::of(parent)))
    };
    // The window's names: the edited owners and the names between each
    // and the apex.
    let mut window_names: BTreeMap<Key, NameBuf> = BTreeMap::new();
    for name in edited {
        let name = name.as_name();
        if name.eq_ignore_case(origin) {
            continue;
        }
        window_names
            .entry(Key::of(name))
            .or_insert_with(|| lower(name));
        for parent in names_between(name, origin) {
            window_names
                .entry(Key::of(parent))
                .or_insert_with(|| lower(parent));
        }
    }
    // The window's names the served version holds, counted under their
    // parents.
    let mut below_in_window: BTreeMap<Key, u32> = BTreeMap::new();
    for (key, name) in &window_names {
        let name = name.as_name();
        let held = !served.owner_records(name).is_empty();
        if held && !edited_keys.contains(key) && under_cut(name) {
            // Not edited: its records (glue to be signed, or signed to
            // become glue) would not be in the window.
            return false;
        }
        if held || served.has_names_below(name) {
            if let Some(parent) = name.parent() {
                *below_in_window.entry(Key::of(parent)).or_default() += 1;
            }
        }
    }
    window_names.iter().all(|(key, name)| {
        let name = name.as_name();
        !under_cut(name)
            || served.child_count(name).unwrap_or(0)
                == below_in_window.get(key).copied().unwrap_or(0)
    })
}

/// The names the served version `served` holds strictly below `cuts` (a
/// delegation or a DNAME made or removed at each, by an update) that are
/// not in `known` (the update's edited owners), found by the served
/// version's order, not by a pass over the zone: a signed version (every
/// version the signer serves) lists the names below each cut
/// ([`Zone::names_below`]), so all of them are found, authoritative
/// names, glue and occluded names alike (NSEC or NSEC3), each name listed
/// one look; a version that keeps no such list (unsigned) gives `None`
/// (signed whole). [`names_below_cuts_edited`], asked again with these
/// names edited, tells (by the served version's counts of names below
/// each) whether these are all. With how many names were looked at;
/// `None` past [`MAX_WINDOW_OWNERS`] names or [`MAX_WINDOW_SCAN`] looked
/// at. Bound: those limits, two binary searches of the list per cut.
pub(crate) fn names_below_served(
    served: &Zone,
    cuts: &[NameBuf],
    known: &BTreeSet<Key>,
) -> Option<(Vec<NameBuf>, usize)> {
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let mut found: std::collections::BTreeMap<Key, NameBuf> = Default::default();
    let mut looked = 0;
    // A signed version lists the names below a name (`Zone::names_below`):
    // every name below each cut, glue and occluded names included, each
    // one step. A version that keeps no order of its names (unsigned:
    // the signer never serves one) is signed whole.
    if !served.keeps_name_order() {
        return None;
    }
    for cut in cuts {
        for (name, owns_records) in served.names_below(cut.as_name()).into_iter().flatten() {
            looked += 1;
            if looked > MAX_WINDOW_SCAN {
                return None;
            }
            // An empty non-terminal is a name between an owner and the
            // cut, not an owner.
            let key = Key::of(name);
            if owns_records && !known.contains(&key) {
                found.entry(key).or_insert_with(|| lower(name));
                if found.len() > MAX_WINDOW_OWNERS {
                    return None;
                }
            }
        }
    }
    Some((found.into_values().collect(), looked))
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
/// `changed` owners (the apex among them or not; a delegation or a DNAME
/// made or removed only when every served name below it is among
/// `changed`, [`names_below_cuts_edited`]): the apex, each changed
/// owner, the nearest NSEC owners of
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
        // The zone cuts above (a cut made or removed above an owner is
        // itself a changed owner, in the window; an NSEC owner's cut is
        // also its NSEC predecessor).
        for parent in names_between(name, origin) {
            if is_cut(parent) {
                window
                    .owners
                    .entry(Key::of(parent))
                    .or_insert_with(|| lower(parent));
            }
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

/// The changes that patch the served version with a window's records
/// (`out`, in canonical order): each owner that changed (`changed`, from
/// [`changed_owners`]) and each of `edited` that did not (glue that stays
/// glue below a cut made or removed above it: the patch flags again the
/// names below such a cut only when it touches all of them). Bound: a
/// binary search per owner, its records.
pub(crate) fn patch_changes<'n>(
    out: &[tern_zone::Record],
    changed: &[(Name<'_>, std::ops::Range<usize>)],
    edited: impl IntoIterator<Item = Name<'n>>,
) -> tern_authority::ZoneChanges {
    let mut changes = tern_authority::ZoneChanges::new();
    let records = |range: std::ops::Range<usize>| {
        out[range]
            .iter()
            .map(|record| (record.rtype, record.ttl, &record.rdata[..]))
    };
    for (owner, range) in changed {
        changes.set(*owner, records(range.clone()));
    }
    for owner in edited {
        if changed
            .binary_search_by(|(name, _)| name.canonical_cmp(owner))
            .is_err()
        {
            changes.set(owner, records(owner_range(out, owner)));
        }
    }
    changes
}

//----------- NSEC3 ----------------------------------------------------------

/// What tells a window of an NSEC3 zone the new version's shape around
/// its owners (each asked only of the owners and the names between them
/// and the apex): whether a name is a zone cut (a delegation or a DNAME;
/// an edit may make or remove either, read from its owners' records),
/// owns records, or has names below it.
pub(crate) struct Nsec3Shape<'s> {
    /// Whether the name is a zone cut.
    pub(crate) is_cut: &'s dyn Fn(Name<'_>) -> bool,
    /// Whether the name owns records in the new version.
    pub(crate) has_records: &'s dyn Fn(Name<'_>) -> bool,
    /// Whether a name strictly below it owns records in the new version.
    pub(crate) has_names_below: &'s dyn Fn(Name<'_>) -> bool,
    /// Whether the caller found every served name below each delegation
    /// made or removed among the owners ([`names_below_cuts_edited`]):
    /// then not asked again.
    pub(crate) cuts_checked: bool,
}

/// A window of an NSEC3 zone signed by [`sign_nsec3_window_of`].
pub(crate) struct Nsec3WindowSigned {
    /// The served version patched.
    pub(crate) zone: Zone,
    /// What the patch copied ([`patch_work`]).
    pub(crate) work: tern_authority::Work,
    /// What changed, the owners' then the chain's.
    pub(crate) change: tern_dnssec::Change,
    /// Each owner and link that changed with its records in the new
    /// version (none: gone), for the kept records.
    pub(crate) owners: Vec<(NameBuf, Vec<tern_zone::Record>)>,
    /// The RRSIGs made.
    pub(crate) signatures: usize,
    /// Records read or made (the binary searches' probes aside).
    pub(crate) visited: usize,
    /// When the first signature made or kept is due for refresh.
    pub(crate) next_refresh: Option<u64>,
    /// When a key's next step is due.
    pub(crate) next_key_event: Option<u64>,
    /// Whether a KSK's or CSK's DS is awaited at the parent.
    pub(crate) awaiting_ds: bool,
    /// The owners signed and the links signed.
    pub(crate) sizes: (usize, usize),
}

/// A window of `served`, a version of a zone signed with NSEC3 (with
/// opt-out, the chain without the insecure delegations and the empty
/// non-terminals with only those or glue below them, as the whole signer
/// makes it; a name removed below an empty non-terminal that keeps names
/// below it is told apart from those only when every served name below
/// it is among `names`, else `Ok(None)`), signed apart: the owners `names` (lowercased, the apex first,
/// each once) with their new records `new_records` (unsigned, by `names`)
/// signed through [`crate::signing::sign_nsec3_window`], then the
/// chain's links their change adds, removes or rewrites. The names whose
/// link may change: the owners and the names between each and the apex
/// (empty non-terminals that come or go with it); the link of each is in
/// the window when it is in the chain before (the served chain) or after
/// (`shape`: not below a cut, with records or names below); and the
/// predecessor in hash order, in the new chain, of each link added or
/// removed (its next hashed owner changes). Each link's next hash is read
/// from the served chain ([`Zone::nsec3_links_around`]) past the links
/// removed, and from the links added. `nsec3_ttl`: the NSEC3 records' TTL
/// (the caller checks that it did not change). The served version is
/// patched with the owners and links that changed ([`Zone::patch`]).
/// `Ok(None)`: not signed apart (the policy's chain not the served one,
/// a cut (a delegation or a DNAME) made or removed above served names the
/// window does not hold, the served chain not as expected, too many links passed over, the
/// patch refused or its garbage past [`garbage_within_share`]): the caller
/// signs the zone whole. Bound: the owners and their ancestors (the caller
/// keeps the owners under [`MAX_WINDOW_OWNERS`]), a binary search of the
/// served chain per link and per link removed passed over (at most
/// [`MAX_WINDOW_SCAN`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_nsec3_window_of(
    served: &Zone,
    names: &[NameBuf],
    new_records: &[Vec<tern_zone::Record>],
    shape: &Nsec3Shape<'_>,
    nsec3_ttl: u32,
    policy: &crate::signing::Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Option<Nsec3WindowSigned>, String> {
    use std::collections::BTreeMap;
    type Hash = tern_dnssec::nsec3::Hash;
    let Some((iterations, salt)) = served.nsec3_chain_params() else {
        return Ok(None);
    };
    let origin = served.origin();
    if names.is_empty()
        || names.len() != new_records.len()
        || !names[0].as_name().eq_ignore_case(origin)
    {
        return Ok(None);
    }
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let old_records: Vec<_> = names
        .iter()
        .map(|name| served.owner_records(name.as_name()))
        .collect();
    // The edited owners by name, for the cut and opt-out questions below.
    let edited_at: BTreeMap<Key, usize> = names
        .iter()
        .enumerate()
        .map(|(at, name)| (Key::of(name.as_name()), at))
        .collect();
    let has_type = |rtype: RType| move |record_type: RType| record_type == rtype;
    let cut_types = |types: &mut dyn Iterator<Item = RType>| {
        let (mut ns, mut dname) = (false, false);
        for rtype in types {
            ns |= has_type(RType::NS)(rtype);
            dname |= has_type(RType::DNAME)(rtype);
        }
        (ns, dname)
    };
    let old_cut: Vec<(bool, bool)> = old_records
        .iter()
        .map(|old| cut_types(&mut old.iter().map(|record| record.rtype)))
        .collect();
    let new_cut: Vec<(bool, bool)> = new_records
        .iter()
        .map(|new| cut_types(&mut new.iter().map(|record| record.rtype)))
        .collect();
    // Whether a name is a zone cut before and after the edit: an edited
    // owner's from its records, any other's from `shape` (the same before
    // and after, as it is not edited).
    let is_cut = |name: Name<'_>, after: bool| -> bool {
        if name.eq_ignore_case(origin) {
            return false;
        }
        match edited_at.get(&Key::of(name)) {
            Some(&at) => {
                let (ns, dname) = if after { new_cut[at] } else { old_cut[at] };
                ns || dname
            }
            None => (shape.is_cut)(name),
        }
    };
    // Below a zone cut (strictly): glue, or names a DNAME hides.
    let below_cut = |name: Name<'_>, after: bool| {
        names_between(name, origin).any(|parent| is_cut(parent, after))
    };
    // A delegation or a DNAME made or removed (an NS or DNAME RRset
    // below the apex come or gone) changes what the names below it are
    // (a DNAME's owner stays in the chain; the names below it do not,
    // as glue): each of the served
    // version's names below it must be in the window (an edited owner, or
    // an empty non-terminal between one and the apex), so that their
    // records and links are made again ([`names_below_cuts_edited`]);
    // else the caller signs the zone whole.
    let cuts_changed: Vec<NameBuf> = (1..names.len())
        .filter(|&at| old_cut[at] != new_cut[at])
        .map(|at| names[at])
        .collect();
    if !shape.cuts_checked && !names_below_cuts_edited(served, &names[1..], &cuts_changed) {
        return Ok(None);
    }
    let glue: Vec<bool> = names
        .iter()
        .map(|name| below_cut(name.as_name(), true))
        .collect();
    // With opt-out, the chain leaves out the insecure delegations (a
    // delegation without DS) and the empty non-terminals with only such
    // names (or glue) below them, as the whole signer does; the served
    // chain's flags must say the same.
    let opt_out = policy.nsec3.as_ref().is_some_and(|nsec3| nsec3.opt_out);
    let apex_flags = served
        .nsec3_link_records(&tern_dnssec::nsec3::nsec3_hash(origin, iterations, salt))
        .iter()
        .find(|record| record.rtype == RType::NSEC3)
        .and_then(|record| record.rdata.get(1).copied());
    if apex_flags.map(|flags| flags & 1 == 1) != Some(opt_out) {
        return Ok(None);
    }
    // An insecure delegation (opt-out only) before or after the edit: an
    // edited owner's from its records, any other's from the served ones.
    let insecure = |name: Name<'_>, after: bool| -> bool {
        if !opt_out || name.eq_ignore_case(origin) {
            return false;
        }
        let types: Vec<RType> = match edited_at.get(&Key::of(name)) {
            Some(&at) if after => new_records[at].iter().map(|record| record.rtype).collect(),
            Some(&at) => old_records[at].iter().map(|record| record.rtype).collect(),
            None => served
                .owner_records(name)
                .iter()
                .map(|record| record.rtype)
                .collect(),
        };
        types.contains(&RType::NS) && !types.contains(&RType::DS)
    };
    // With opt-out, for each name above an edited owner: whether a name
    // in the chain is added below it, and whether one is removed.
    let mut chained_below: BTreeMap<Key, (bool, bool)> = BTreeMap::new();
    if opt_out {
        for (at, name) in names.iter().enumerate() {
            let name = name.as_name();
            // In the chain before or after: not below a cut, not an
            // insecure delegation, with records (a delegation made secure
            // by a DS, or insecure by its DS removed, comes or goes).
            let chained = |after: bool| {
                let records = if after {
                    !new_records[at].is_empty()
                } else {
                    !old_records[at].is_empty()
                };
                records && !below_cut(name, after) && !insecure(name, after)
            };
            let added = chained(true);
            let removed = chained(false) && !added;
            if removed {
                chained_below.entry(Key::of(name)).or_default().1 = true;
            }
            for parent in names_between(name, origin) {
                let entry = chained_below.entry(Key::of(parent)).or_default();
                entry.0 |= added;
                entry.1 |= removed;
            }
        }
    }
    let edits: Vec<tern_dnssec::OwnerEdit<'_>> = names
        .iter()
        .zip(new_records)
        .zip(&old_records)
        .map(|((name, new), old)| tern_dnssec::OwnerEdit {
            owner: name.as_name(),
            previous: old.iter().map(crate::signing::record_ref).collect(),
            records: (0..new.len()).map(|at| new.record(at)).collect(),
        })
        .collect();
    let apex: Vec<tern_zone::RecordRef<'_>> = edits[0].previous.clone();
    // The names whose link may change: the owners and the names between
    // each and the apex.
    let mut candidates: BTreeMap<Key, (NameBuf, Option<usize>)> = BTreeMap::new();
    for (at, name) in names.iter().enumerate() {
        candidates.insert(Key::of(name.as_name()), (*name, Some(at)));
        for parent in names_between(name.as_name(), origin) {
            candidates
                .entry(Key::of(parent))
                .or_insert_with(|| (lower(parent), None));
        }
    }
    /// Where a link's type bitmap comes from.
    enum Bitmap {
        /// The owner's records made (index into the edits).
        Owner(usize),
        /// An empty non-terminal's: none.
        Empty,
        /// The previous NSEC3's, unchanged.
        Previous,
    }
    struct Edit<'z> {
        owner: NameBuf,
        previous: Vec<tern_authority::ZoneRecord<'z>>,
        /// `None`: the link goes.
        bitmap: Option<Bitmap>,
        next: Hash,
    }
    let mut visited = 0;
    let mut links: BTreeMap<Hash, Edit<'_>> = BTreeMap::new();
    let (mut removed, mut added): (BTreeSet<Hash>, BTreeSet<Hash>) = Default::default();
    let origin_buf = lower(origin);
    for (name, edit) in candidates.values() {
        let name = name.as_name();
        let hash = tern_dnssec::nsec3::nsec3_hash(name, iterations, salt);
        let previous = served.nsec3_link_records(&hash);
        visited += previous.len();
        let before = !previous.is_empty();
        let has_records = (shape.has_records)(name);
        let hidden = below_cut(name, true);
        let names_below = if hidden {
            // Below a cut after the edit: no link, whatever is below it.
            false
        } else if opt_out && !has_records {
            // A name in the chain below it: one added says so; else, one
            // removed, whether any name is left below it (none: no link;
            // some: when every served name below it is in the window, each
            // said whether it stays in the chain, so none does; else not
            // told apart from insecure delegations, and the zone is signed
            // whole); else as before.
            match chained_below
                .get(&Key::of(name))
                .copied()
                .unwrap_or_default()
            {
                (true, _) => true,
                (false, true) if (shape.has_names_below)(name) => {
                    let below = [NameBuf::from_name(name)];
                    if !names_below_cuts_edited(served, &names[1..], &below) {
                        return Ok(None);
                    }
                    false
                }
                (false, true) => false,
                (false, false) => before,
            }
        } else {
            (shape.has_names_below)(name)
        };
        let after = name.eq_ignore_case(origin)
            || (!hidden && !insecure(name, true) && (has_records || names_below));
        if !before && !after {
            continue;
        }
        let bitmap = match (after, edit) {
            (false, _) => None,
            (true, Some(at)) => Some(Bitmap::Owner(*at)),
            (true, None) if has_records => Some(Bitmap::Previous),
            (true, None) => Some(Bitmap::Empty),
        };
        if matches!(bitmap, Some(Bitmap::Previous)) && !before {
            return Ok(None);
        }
        match (before, after) {
            (true, false) => {
                removed.insert(hash);
            }
            (false, true) => {
                added.insert(hash);
            }
            _ => {}
        }
        let owner = tern_dnssec::nsec3::hashed_owner(&hash, origin_buf.as_name())
            .ok_or("an NSEC3 owner too long")?;
        links.insert(
            hash,
            Edit {
                owner,
                previous,
                bitmap,
                next: hash,
            },
        );
    }
    // The new chain's neighbours of `hash` (on the side `after`): the
    // served chain's past the links removed, or a link added nearer.
    let mut scanned = 0;
    let mut neighbour = |hash: &Hash, after: bool| -> Option<Option<Hash>> {
        let mut at = *hash;
        let mut served_side = None;
        while let Some(around) = served.nsec3_links_around(&at) {
            let next = if after { around.1 } else { around.0 };
            scanned += 1;
            if scanned > MAX_WINDOW_SCAN {
                return None;
            }
            if next == *hash {
                break;
            }
            if !removed.contains(&next) {
                served_side = Some(next);
                break;
            }
            if next == at {
                break;
            }
            at = next;
        }
        // Nearest in the circular order from `hash` on that side.
        let rank = |x: &Hash| {
            if after {
                (x <= hash, *x)
            } else {
                // Largest below first: invert to pick with `min`.
                let mut inverted = *x;
                inverted.iter_mut().for_each(|octet| *octet = !*octet);
                (x >= hash, inverted)
            }
        };
        Some(
            served_side
                .into_iter()
                .chain(added.iter().copied())
                .filter(|x| x != hash)
                .min_by_key(rank),
        )
    };
    // Predecessors of the links added or removed.
    let changed: Vec<Hash> = added.iter().chain(&removed).copied().collect();
    for hash in changed {
        let Some(before) = neighbour(&hash, false) else {
            return Ok(None);
        };
        let Some(before) = before else {
            continue;
        };
        if links.contains_key(&before) {
            continue;
        }
        let previous = served.nsec3_link_records(&before);
        visited += previous.len();
        if previous.is_empty() {
            return Ok(None);
        }
        let owner = tern_dnssec::nsec3::hashed_owner(&before, origin_buf.as_name())
            .ok_or("an NSEC3 owner too long")?;
        links.insert(
            before,
            Edit {
                owner,
                previous,
                bitmap: Some(Bitmap::Previous),
                next: before,
            },
        );
    }
    for (hash, edit) in links.iter_mut() {
        if edit.bitmap.is_some() {
            let Some(next) = neighbour(hash, true) else {
                return Ok(None);
            };
            edit.next = next.unwrap_or(*hash);
        }
    }
    visited += scanned;
    let apex_input: &[tern_zone::Record] = &new_records[0];
    let links_of = |made: &tern_dnssec::OwnersResigned,
                    params: &tern_dnssec::Nsec3Params|
     -> Result<Option<Vec<tern_dnssec::Nsec3Link<'_>>>, String> {
        let mut out = Vec::with_capacity(links.len());
        for edit in links.values() {
            let rdata = match &edit.bitmap {
                None => None,
                Some(Bitmap::Owner(at)) => {
                    let mut types: Vec<RType> =
                        made.owners[*at].iter().map(|record| record.rtype).collect();
                    if *at != 0 && new_cut[*at].0 {
                        // A delegation: NS, DS and the DS's RRSIG only
                        // (what else it owns is hidden, as glue is).
                        types
                            .retain(|rtype| matches!(*rtype, RType::NS | RType::DS | RType::RRSIG));
                    }
                    types.sort_unstable();
                    types.dedup();
                    Some(tern_dnssec::nsec3::nsec3_rdata(params, &edit.next, &types))
                }
                Some(Bitmap::Empty) => {
                    Some(tern_dnssec::nsec3::nsec3_rdata(params, &edit.next, &[]))
                }
                Some(Bitmap::Previous) => {
                    let Some(old) = edit.previous.iter().find(|r| r.rtype == RType::NSEC3) else {
                        return Ok(None);
                    };
                    // Algorithm, flags, iterations, salt length, salt, hash
                    // length, next hash, then the bitmap.
                    let salt_len = usize::from(*old.rdata.get(4).ok_or("a short NSEC3")?);
                    let at = 5 + salt_len;
                    let hash_len = usize::from(*old.rdata.get(at).ok_or("a short NSEC3")?);
                    let bitmap = old.rdata.get(at + 1 + hash_len..).ok_or("a short NSEC3")?;
                    let mut rdata = tern_dnssec::nsec3::nsec3_rdata(params, &edit.next, &[]);
                    rdata.extend_from_slice(bitmap);
                    Some(rdata)
                }
            };
            out.push(tern_dnssec::Nsec3Link {
                owner: edit.owner.as_name(),
                previous: edit
                    .previous
                    .iter()
                    .map(crate::signing::record_ref)
                    .collect(),
                rdata,
                ttl: nsec3_ttl,
            });
        }
        Ok(Some(out))
    };
    let Some(signed) = crate::signing::sign_nsec3_window(
        origin,
        &apex,
        &edits,
        &glue,
        apex_input,
        policy,
        state_directory,
        now,
        serial_above,
        salt,
        links_of,
    )?
    else {
        return Ok(None);
    };
    let (owners_signed, chain_signed) = signed.zone;
    let mut changes = tern_authority::ZoneChanges::new();
    for (name, records) in names.iter().zip(&owners_signed.owners) {
        changes.set(
            name.as_name(),
            records
                .iter()
                .map(|record| (record.rtype, record.ttl, &record.rdata[..])),
        );
    }
    for (edit, records) in links.values().zip(&chain_signed.owners) {
        changes.set(
            edit.owner.as_name(),
            records
                .iter()
                .map(|record| (record.rtype, record.ttl, &record.rdata[..])),
        );
    }
    let (zone, work) = match served.patch(&changes) {
        Ok(patched) if garbage_within_share(&patched.zone) => {
            let work = patch_work(&patched);
            (patched.zone, work)
        }
        Ok(_) => return Ok(None),
        Err(err) => {
            log::debug!("zone {origin}: a window of the NSEC3 zone not patched ({err})");
            return Ok(None);
        }
    };
    drop(changes);
    let sizes = (names.len(), links.len());
    let mut owners: Vec<(NameBuf, Vec<tern_zone::Record>)> = Vec::new();
    for (name, records) in names.iter().zip(owners_signed.owners) {
        owners.push((*name, records));
    }
    for (edit, records) in links.values().zip(chain_signed.owners) {
        owners.push((edit.owner, records));
    }
    let next_refresh = match (owners_signed.next_refresh, chain_signed.next_refresh) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut change = owners_signed.difference;
    change.deleted.extend(chain_signed.difference.deleted);
    change.added.extend(chain_signed.difference.added);
    Ok(Some(Nsec3WindowSigned {
        zone,
        work,
        change,
        owners,
        signatures: owners_signed.signatures + chain_signed.signatures,
        visited: visited + owners_signed.visited + chain_signed.visited,
        next_refresh,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
        sizes,
    }))
}
