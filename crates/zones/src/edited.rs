//! A signed zone reloaded after an edit of a few records: only the owners
//! the edit changed are signed again, the served version is patched with
//! them and the kept records get a patch of them, so that the reload
//! costs the change, not the zone (issue 24; docs/decisions/0014, 0019).
//!
//! The zone file is read only where it changed since the previous load
//! when it can be (`load::region`: the text last read is kept, and the
//! records of the region that differs give what differs), else whole (a
//! large one on the signing threads); it is checked whole unless
//! `load::changed` finds the change confined to a few owners (then only
//! they, their ancestors and the apex). Read whole, its records are
//! compared in file order with the previous load's ([`diff`]: a pass that
//! moves both lists in step and, where they differ, looks at most
//! [`RESYNC`] records ahead in each for them to agree again); the owners of
//! the records that differ, and the apex (its SOA's serial changes), are
//! the owners edited. Each is signed again from its records in the served
//! version ([`tern_dnssec::resign_owners`]: the RRSIGs of the RRsets that
//! did not change kept, the NSEC's next name kept, its type bitmap made
//! again).
//!
//! An edit that adds or removes names (the NSEC chain changes), edits a
//! delegation (an NS or DS RRset below the apex), or changes glue in
//! place below a cut that stays, is signed as an update is: a window of
//! the served version ([`crate::window::window_of`]: the edited owners,
//! their NSEC neighbours, the zone cuts above them, the apex) through the
//! incremental signer, the served version and the kept records patched
//! with the owners that changed (`sign_window_edits`).
//!
//! A DNAME below the apex added, removed or changed is taken as a cut
//! is (the names below it are not signed and not in the chain; a valid
//! file has none, `load::changed` checks that): its owner, signed with
//! DNAME in its NSEC or NSEC3 bitmap, goes through the same windows.
//!
//! A delegation made or removed above names the edit does not touch
//! changes those names (they become glue or occluded and leave the chain
//! with their RRSIGs, or glue becomes authoritative and enters it): the
//! names below the cut in the file are made edited owners too, their
//! records unchanged ([`Edits::delegations_in_window`], at most
//! [`MAX_WIDENED_CUTS`] cuts and [`crate::window::MAX_WINDOW_OWNERS`]
//! names below them), so that the window (NSEC or NSEC3) signs what
//! changed below the cut and the patch flags those names again.
//!
//! An NSEC3 zone (with opt-out or without) is signed as an update of one
//! is, any edit of a few owners: the window of
//! [`crate::window::sign_nsec3_window_of`] (the edited owners, the apex,
//! the chain's links their change adds, removes or rewrites), the served
//! version and the kept records patched (`sign_nsec3_edits`).
//!
//! The previous version's whole signing from its kept records
//! ([`crate::signing::sign_again`]) is used instead when this cannot be
//! told to give the same zone ([`sign_edits`] says `None`): a delegation
//! made or removed above more names the edit does not touch than the
//! window's bounds (or than [`MAX_WIDENED_CUTS`] such delegations),
//! a DNAME at the apex or a DNSSEC record among the records that differ, in an NSEC3
//! zone with opt-out a name taken out of the chain below an empty
//! non-terminal that keeps more other names below it than the window's
//! bounds ([`Edits::widen_for_opt_out`], which also widens, to the same
//! bounds, for glue removed below such an empty non-terminal: it tells
//! the chain from types alone), an RRset of several TTLs at a name a
//! widening adds, a key
//! event or signatures due for refresh, a policy changed, the keys'
//! DNSKEY RRset changed, more than [`MAX_EDITED_RECORDS`] records that
//! differ, a window past the update's bounds, or the kept records
//! carrying [`crate::kept::MAX_PATCHES`] patches.
//!
//! Cost: finding the names below a delegation made or removed (or below
//! an opt-out empty non-terminal) is a pass over the file's records
//! ([`Edits::widen_below`], counted in `SigningCost::scanned`): O(records)
//! for a reload that makes or removes a cut above names it does not
//! touch, none for the others.

use std::path::Path;

use tern_authority::Zone;
use tern_dnssec::{OwnerEdit, MAX_OWNER_EDITS};
use tern_update::store::Key;
use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_zone::{Location, RecordList, RecordRef, Records};

use crate::kept::{KeptRecords, MAX_PATCHES};
use crate::signing::{KeyState, Policy};
use crate::window::MAX_WINDOW_OWNERS;

/// The most records (deleted and added) an edit may change for only its
/// owners to be signed again.
pub(crate) const MAX_EDITED_RECORDS: usize = 4096;

/// How many records past a difference [`diff`] looks, in each list, for
/// the two to agree again.
pub(crate) const RESYNC: usize = 64;

/// How many records in a row must agree for the lists to be in step
/// again after a difference.
const RUN: usize = 4;

/// The most delegations an edit may make or remove above names it does
/// not touch for those names to be made edited owners too
/// ([`Edits::delegations_in_window`]); past it, the zone is signed whole.
pub(crate) const MAX_WIDENED_CUTS: usize = 64;

//----------- diff -----------------------------------------------------------

/// The records of two loads of a zone file that differ, as indexes in
/// each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Diff {
    /// Records of the previous load not in the new one.
    pub(crate) old: Vec<usize>,
    /// Records of the new load not in the previous one.
    pub(crate) new: Vec<usize>,
}

/// Whether two records are the same, an SOA's serial aside (a new
/// serial in the file is not an edit: the apex is signed again anyway).
fn same(a: RecordRef<'_>, b: RecordRef<'_>) -> bool {
    a.rtype == b.rtype
        && a.class == b.class
        && a.ttl == b.ttl
        && a.owner.as_bytes() == b.owner.as_bytes()
        && if a.rtype == RType::SOA {
            let length = a.rdata.len();
            length == b.rdata.len()
                && length >= 20
                && a.rdata[..length - 20] == b.rdata[..length - 20]
                && a.rdata[length - 16..] == b.rdata[length - 16..]
        } else {
            a.rdata == b.rdata
        }
}

/// The records of `new` (a zone file's records, in file order) not in
/// `old` (the previous load's) and of `old` not in `new`, found by
/// walking both in step: where they differ, the nearest pair of places
/// (at most [`RESYNC`] records on in each) from which [`RUN`] records
/// agree is where they are in step again. `None` when they do not come
/// back in step, or more than [`MAX_EDITED_RECORDS`] records differ.
/// Bound: one pass over each list; at each difference at most
/// `(RESYNC + 1)^2` places tried, [`RUN`] comparisons each.
pub(crate) fn diff<O: RecordList + ?Sized, N: RecordList + ?Sized>(
    old: &O,
    new: &N,
) -> Option<Diff> {
    let agree = |i: usize, j: usize| {
        (0..RUN).all(|k| match (i + k < old.len(), j + k < new.len()) {
            (true, true) => same(old.record(i + k), new.record(j + k)),
            (false, false) => true,
            _ => false,
        })
    };
    let mut out = Diff::default();
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if same(old.record(i), new.record(j)) {
            i += 1;
            j += 1;
            continue;
        }
        let (a, b) = (1..=2 * RESYNC)
            .flat_map(|d| (0..=d).map(move |a| (a, d - a)))
            .filter(|&(a, b)| a <= RESYNC && b <= RESYNC)
            .find(|&(a, b)| agree(i + a, j + b))?;
        out.old.extend(i..(i + a).min(old.len()));
        out.new.extend(j..(j + b).min(new.len()));
        i += a;
        j += b;
        if out.old.len() + out.new.len() > MAX_EDITED_RECORDS {
            return None;
        }
    }
    out.old.extend(i..old.len());
    out.new.extend(j..new.len());
    (out.old.len() + out.new.len() <= MAX_EDITED_RECORDS).then_some(out)
}

/// Whether a record of `rtype` that changed keeps the change to its
/// owner: not a delegation's, a DNAME (which hides names below it) or a
/// DNSSEC record (which the signer makes or replaces). The same types
/// have the checks of a reload look beyond the changed owners
/// (`load::changed`).
pub(crate) fn edit_stays_at_owner(rtype: RType) -> bool {
    !matches!(
        rtype,
        RType::NS
            | RType::DS
            | RType::DNAME
            | RType::RRSIG
            | RType::NSEC
            | RType::NSEC3
            | RType::NSEC3PARAM
            | RType::DNSKEY
            | RType::CDS
            | RType::CDNSKEY
    )
}

//----------- sign_edits -----------------------------------------------------

/// What a signed zone's previous version leaves for [`sign_edits`].
pub(crate) struct Previous<'p> {
    /// Its signed records kept.
    pub(crate) kept: &'p KeptRecords,
    /// Its serial.
    pub(crate) serial: u32,
    /// When it must be signed again (a refresh or a key event).
    pub(crate) resign_at: u64,
    /// Its keys' metadata after its signing.
    pub(crate) key_state: &'p KeyState,
    /// Its policy.
    pub(crate) policy: &'p Policy,
    /// Its RRSIG records.
    pub(crate) rrsigs: usize,
    /// Its load's file gave each RRset one TTL.
    pub(crate) uniform: bool,
}

/// A version signed by [`sign_edits`].
pub(crate) struct EditSigned {
    /// The served version patched.
    pub(crate) zone: Zone,
    /// What the patch copied ([`crate::window::patch_work`]), for the
    /// load's log line.
    pub(crate) work: tern_authority::Work,
    /// The kept records patched.
    pub(crate) kept: KeptRecords,
    /// The RRSIGs made.
    pub(crate) signatures: usize,
    /// When the first signature made or kept is due for refresh.
    pub(crate) next_refresh: Option<u64>,
    /// When a key's next step is due.
    pub(crate) next_key_event: Option<u64>,
    /// Whether a KSK's or CSK's DS is awaited at the parent.
    pub(crate) awaiting_ds: bool,
    /// What changed from the served version.
    pub(crate) difference: tern_dnssec::Change,
    /// Records the signer read or made.
    pub(crate) visited: usize,
    /// The owners edited.
    pub(crate) owners: usize,
    /// The RRSIG records of the new version.
    pub(crate) rrsigs: usize,
}

/// Whether the zone's next version may be signed by owners from
/// `previous` (see the module documentation): the same policy,
/// `served` the version its kept records are, fewer than
/// [`MAX_PATCHES`] patches, no signature due nor key event before `now`
/// plus the refresh window, the previous load's TTLs as written.
pub(crate) fn usable(
    origin: Name<'_>,
    previous: &Previous<'_>,
    served: &Zone,
    policy: &Policy,
    now: u64,
) -> bool {
    let refresh = crate::signing::refresh_of(policy, now);
    let why_not = if previous.policy != policy {
        Some("its policy changed")
    } else if served.serial() != previous.serial {
        Some("the served version is not the one its kept records are")
    } else if previous.kept.patch_count() >= MAX_PATCHES {
        Some("its kept records are due to be written whole")
    } else if now.saturating_add(refresh.window) >= previous.resign_at {
        Some("signatures due for refresh or a key event")
    } else if !previous.uniform {
        Some("its file gives an RRset several TTLs")
    } else {
        None
    };
    if let Some(why) = why_not {
        log::debug!("zone {origin}: signed again from its previous version: {why}");
    }
    why_not.is_none()
}

/// The owners a zone file's edit changed, and their records in the new
/// file (in file order): what [`sign_edits`] signs, and what the checks
/// of the new file need to read (the apex among them).
pub(crate) struct Edits<'r> {
    owners: Vec<LowerNameBuf>,
    records: Vec<Vec<RecordRef<'r>>>,
    /// Whether an NS, DS or DNAME record below the apex differs (a
    /// delegation made, removed, or made secure or insecure; a DNAME
    /// made, removed or changed).
    delegations: bool,
    /// Whether every served name below each delegation made or removed is
    /// among the owners, once [`Edits::delegations_in_window`] asked it.
    cuts_in_window: Option<bool>,
    /// The file's records the widening passes compared
    /// ([`Edits::scanned`]).
    scanned: usize,
}

impl<'r> Edits<'r> {
    /// Whether an NS, DS or DNAME record below the apex differs (a
    /// delegation or a DNAME made, removed or changed): the checks then
    /// relate owners (`load::changed`), and an NSEC zone's edit is signed
    /// as a window ([`sign_edits`]) when [`Edits::delegations_in_window`].
    pub(crate) fn changes_delegations(&self) -> bool {
        self.delegations
    }

    /// Whether a window ([`sign_edits`], NSEC or NSEC3) can sign the
    /// delegations this edit makes or removes (an NS RRset below the
    /// apex come or gone): every name `served` holds below each is an
    /// edited owner ([`crate::window::names_below_cuts_edited`]). When
    /// some are not, the names below each such cut in the file
    /// (`records`, the same as `served` holds there but for the edited
    /// owners) are made edited owners too, their records unchanged: the
    /// window then signs what the cut changes below it (names that become
    /// glue or occluded leave the chain with their RRSIGs; glue that
    /// becomes authoritative is signed and enters it). `false` past
    /// [`MAX_WIDENED_CUTS`] cuts, [`MAX_WINDOW_OWNERS`] names below them
    /// or [`MAX_OWNER_EDITS`] owners in all. `true` when no cut is made
    /// or removed (a DS added or removed, or an NS RRset changed). Asked
    /// before the checks (`load::sign`), so that a reload signed whole is
    /// not checked twice; the answer is kept for [`sign_edits`], which
    /// asks it (once) only if its caller did not. Bound: a look-up of
    /// `served` per edited owner and per name between one and the apex;
    /// when widened, [`Edits::widen_below`]'s pass over `records`.
    pub(crate) fn delegations_in_window(&mut self, served: &Zone, records: &'r Records) -> bool {
        if let Some(answer) = self.cuts_in_window {
            return answer;
        }
        let answer = self.widened_to_cuts(served, records);
        self.cuts_in_window = Some(answer);
        answer
    }

    /// [`Edits::delegations_in_window`], asked once.
    fn widened_to_cuts(&mut self, served: &Zone, records: &'r Records) -> bool {
        let origin = served.origin();
        let cuts = self.cuts_made_or_removed(served);
        if crate::window::names_below_cuts_edited(served, &self.below_apex(origin), &cuts) {
            return true;
        }
        if cuts.len() > MAX_WIDENED_CUTS {
            return false;
        }
        let Some(below) = self.widen_below(origin, &cuts, records) else {
            return false;
        };
        log::debug!(
            "zone {origin}: {below} names below {} delegations made or removed edited too",
            cuts.len()
        );
        crate::window::names_below_cuts_edited(served, &self.below_apex(origin), &cuts)
    }

    /// The names strictly below `roots` (at most [`MAX_WIDENED_CUTS`]) in
    /// the file (`records`: the same as the served version holds there
    /// but for the edited owners) made edited owners, their records
    /// unchanged; how many were added. `None`, the owners left as they
    /// were, past [`MAX_WINDOW_OWNERS`] names added or [`MAX_OWNER_EDITS`]
    /// owners, or with an RRset of several TTLs among theirs. Bound: one
    /// pass over `records` (counted in [`Edits::scanned`]: the file's
    /// records per reload that makes or removes a cut above other names,
    /// or takes a name below an empty non-terminal out of an opt-out
    /// chain), comparing an owner's last octets with a root's only when
    /// it is longer than the shortest root, and a map's look-up per
    /// record below a root.
    fn widen_below(
        &mut self,
        origin: Name<'_>,
        roots: &[NameBuf],
        records: &'r Records,
    ) -> Option<usize> {
        use std::collections::HashMap;
        if roots.len() > MAX_WIDENED_CUTS {
            return None;
        }
        let roots: Vec<LowerNameBuf> = roots.iter().map(|root| root.as_name().to_lower()).collect();
        let shortest = roots.iter().map(|root| root.as_bytes().len()).min()?;
        let known: std::collections::HashSet<&[u8]> =
            self.owners.iter().map(|owner| owner.as_bytes()).collect();
        // The names added, in the order found, and each one's records.
        let mut added: Vec<LowerNameBuf> = Vec::new();
        let mut at_of: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut added_records: Vec<Vec<RecordRef<'r>>> = Vec::new();
        self.scanned += records.len();
        for index in 0..records.len() {
            let record = records.record(index);
            let owner = record.owner;
            let bytes = owner.as_bytes();
            if bytes.len() <= shortest {
                continue;
            }
            let under = roots.iter().any(|root| {
                let root = root.as_bytes();
                bytes.len() > root.len()
                    && bytes[bytes.len() - root.len()..].eq_ignore_ascii_case(root)
                    && owner.ends_with(Name::from_validated(root))
            });
            if !under {
                continue;
            }
            let lower = owner.to_lower();
            if known.contains(lower.as_bytes()) {
                continue;
            }
            let at = match at_of.get(lower.as_bytes()) {
                Some(&at) => at,
                None => {
                    if added.len() == MAX_WINDOW_OWNERS {
                        return None;
                    }
                    at_of.insert(lower.as_bytes().to_vec(), added.len());
                    added.push(lower);
                    added_records.push(Vec::new());
                    added.len() - 1
                }
            };
            added_records[at].push(record);
        }
        if self.owners.len() + added.len() > MAX_OWNER_EDITS {
            return None;
        }
        if !one_ttl_per_rrset(origin, &added_records) {
            return None;
        }
        let count = added.len();
        let mut pairs: Vec<(LowerNameBuf, Vec<RecordRef<'r>>)> = std::mem::take(&mut self.owners)
            .into_iter()
            .zip(std::mem::take(&mut self.records))
            .chain(added.into_iter().zip(added_records))
            .collect();
        pairs.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        (self.owners, self.records) = pairs.into_iter().unzip();
        Some(count)
    }

    /// The records the widening passes ([`Edits::widen_below`]) compared:
    /// none when the edit makes or removes no cut above other names and
    /// takes no name out of an opt-out chain below an empty
    /// non-terminal; the file's records per pass else.
    pub(crate) fn scanned(&self) -> usize {
        self.scanned
    }

    /// With NSEC3 opt-out: an empty non-terminal keeps its link while a
    /// name in the chain (not an insecure delegation, not glue) is below
    /// it, which the served version does not tell when the edit takes a
    /// name below it out of the chain (removed, its DS removed, or made an
    /// insecure delegation) and other names stay below it. The names below
    /// the highest of the empty non-terminals above each such owner (up to
    /// the first name with records) are made edited owners too, so that
    /// the window ([`crate::window::sign_nsec3_window_of`]) sees each say
    /// whether it stays in the chain. Past the bounds of
    /// [`Edits::widen_below`] the owners are left as they were (the window
    /// then declines, and the zone is signed whole). Whether a name is in
    /// the chain is told from its types alone, not from the cuts above
    /// it: glue or an occluded name removed looks chained before, and
    /// widens the window for nothing (or has the zone signed whole past
    /// the bounds: the safe side); a name leaving the chain because a cut
    /// is made above it looks chained after, and is not looked at here:
    /// the cut's own owner is (made an insecure delegation, it leaves the
    /// chain and widens from the empty non-terminal above it), and the
    /// names between it and the names below it get no link whatever is
    /// below them ([`Edits::delegations_in_window`] made those names
    /// edited owners). Bound: a look-up of `served` per edited owner and
    /// per name above one, and [`Edits::widen_below`]'s.
    pub(crate) fn widen_for_opt_out(&mut self, served: &Zone, records: &'r Records) {
        let origin = served.origin();
        let chained = |types: &mut dyn Iterator<Item = RType>| {
            let (mut any, mut ns, mut ds) = (false, false, false);
            for rtype in types {
                any = true;
                ns |= rtype == RType::NS;
                ds |= rtype == RType::DS;
            }
            any && (!ns || ds)
        };
        let mut roots: Vec<NameBuf> = Vec::new();
        for (owner, new) in self.owners.iter().zip(&self.records) {
            let owner = owner.as_name();
            if owner.eq_ignore_case(origin) {
                continue;
            }
            let before = chained(&mut served.owner_records(owner).iter().map(|r| r.rtype));
            let after = chained(&mut new.iter().map(|record| record.rtype));
            if !before || after {
                continue;
            }
            let mut root = None;
            for parent in crate::window::names_between(owner, origin) {
                if !served.owner_records(parent).is_empty() {
                    break;
                }
                root = Some(NameBuf::from_name(parent));
            }
            if let Some(root) = root {
                if !roots
                    .iter()
                    .any(|known| known.as_name().eq_ignore_case(root.as_name()))
                {
                    roots.push(root);
                }
            }
        }
        if roots.is_empty() {
            return;
        }
        if let Some(below) = self.widen_below(origin, &roots, records) {
            log::debug!(
                "zone {origin}: NSEC3 opt-out, {below} names below {} empty non-terminals edited \
                 too",
                roots.len()
            );
        }
    }

    /// The edited owners but the apex.
    fn below_apex(&self, origin: Name<'_>) -> Vec<NameBuf> {
        self.owners
            .iter()
            .filter(|owner| !owner.as_name().eq_ignore_case(origin))
            .map(|owner| NameBuf::from_name(owner.as_name()))
            .collect()
    }

    /// The edited owners below the apex that own an NS RRset in `served`
    /// and none in the file, or the other way, and those that own a DNAME
    /// in one and not in the other (what a DNAME hides is not signed and
    /// not in the chain, as below a cut).
    fn cuts_made_or_removed(&self, served: &Zone) -> Vec<NameBuf> {
        let origin = served.origin();
        let cut = |types: &mut dyn Iterator<Item = RType>| {
            let (mut ns, mut dname) = (false, false);
            for rtype in types {
                ns |= rtype == RType::NS;
                dname |= rtype == RType::DNAME;
            }
            (ns, dname)
        };
        self.owners
            .iter()
            .zip(&self.records)
            .filter(|(owner, new)| {
                let owner = owner.as_name();
                let before = cut(&mut served.owner_records(owner).iter().map(|r| r.rtype));
                let after = cut(&mut new.iter().map(|record| record.rtype));
                !owner.eq_ignore_case(origin) && before != after
            })
            .map(|(owner, _)| NameBuf::from_name(owner.as_name()))
            .collect()
    }

    /// What the checks of the new file read for this edit: the edited
    /// owners' records and those of the apex's NS
    /// targets in the zone that are not edited owners, from `records`
    /// (the file's), so that the apex's glue, not edited, is not reported
    /// missing. Bound: a pass over `records` comparing an owner only when
    /// its length is a target's, at most [`MAX_OWNER_EDITS`] targets.
    pub(crate) fn checked_list(&self, origin: Name<'_>, records: &'r Records) -> List<'r> {
        let mut list: Vec<RecordRef<'r>> = self.records.concat();
        let apex = origin.to_lower();
        let Ok(at) = self
            .owners
            .binary_search_by(|owner| owner.as_bytes().cmp(apex.as_bytes()))
        else {
            return List(list);
        };
        let mut targets: Vec<LowerNameBuf> = Vec::new();
        for record in &self.records[at] {
            if record.rtype != RType::NS || targets.len() >= MAX_OWNER_EDITS {
                continue;
            }
            let Ok(target) = Name::from_wire(record.rdata) else {
                continue;
            };
            let target = target.to_lower();
            let edited = self
                .owners
                .binary_search_by(|owner| owner.as_bytes().cmp(target.as_bytes()))
                .is_ok();
            if !edited && target.as_name().ends_with(origin) {
                targets.push(target);
            }
        }
        if targets.is_empty() {
            return List(list);
        }
        targets.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        targets.dedup();
        list.extend(records_of(&targets, records).into_iter().flatten());
        List(list)
    }

    /// Whether the edit adds or removes names: an edited owner with no
    /// records in `served` (the previous version) or none in the file.
    /// Bound: a look-up per edited owner.
    pub(crate) fn adds_or_removes(&self, served: &Zone) -> bool {
        self.owners
            .iter()
            .zip(&self.records)
            .any(|(owner, new)| new.is_empty() || served.owner_records(owner.as_name()).is_empty())
    }
}

/// Records borrowed from elsewhere, as a list.
pub(crate) struct List<'a>(Vec<RecordRef<'a>>);

impl RecordList for List<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        self.0[index]
    }
}

/// The owners of `records` (a zone file's, in file order, TTLs as
/// written) whose records differ from `unsigned` (the previous load's),
/// and the apex, each with its records; `None` when the edit is not one
/// of a few owners that stay (see the module documentation), or an
/// edited owner's RRset has several TTLs (the file's TTLs would then be
/// settled, which may depend on records elsewhere). `known`: the records
/// that differ, when the reload found them (`load::region`). Bound:
/// [`diff`] (unless `known`), and a
/// pass over `records` comparing an owner only when its length is an
/// edited owner's.
pub(crate) fn find_edits<'r>(
    origin: Name<'_>,
    unsigned: &Records,
    records: &'r Records,
    known: Option<&Diff>,
) -> Option<Edits<'r>> {
    let Some(diff) = known.cloned().or_else(|| diff(unsigned, records)) else {
        log::debug!("zone {origin}: signed again from its previous version: many records changed");
        return None;
    };
    // The owners edited: those of the records that differ, and the apex.
    let changed = diff
        .old
        .iter()
        .map(|&index| unsigned.record(index))
        .chain(diff.new.iter().map(|&index| records.record(index)));
    let mut owners: Vec<LowerNameBuf> = vec![origin.to_lower()];
    let mut delegations = false;
    for record in changed {
        // A delegation's NS or DS, or a DNAME, below the apex: signed as a
        // window ([`sign_edits`]), when every name the cut or the DNAME
        // changes below it is an edited owner
        // ([`Edits::delegations_in_window`]).
        let delegation = matches!(record.rtype, RType::NS | RType::DS | RType::DNAME)
            && !record.owner.eq_ignore_case(origin);
        delegations |= delegation;
        if !delegation && !edit_stays_at_owner(record.rtype) {
            log::debug!(
                "zone {origin}: signed again from its previous version: a {} record changed",
                record.rtype
            );
            return None;
        }
        owners.push(record.owner.to_lower());
    }
    owners.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    owners.dedup_by(|a, b| a.as_bytes() == b.as_bytes());
    if owners.len() > MAX_OWNER_EDITS {
        return None;
    }
    let new_records = owners_records(origin, &owners, records)?;
    Some(Edits {
        owners,
        records: new_records,
        delegations,
        cuts_in_window: None,
        scanned: 0,
    })
}

/// Each of `owners`' (lowercased, each once) records in `records` (the
/// zone file's, in file order); `None` when an owner's RRset has several
/// TTLs (all RRsets elsewhere are unchanged and had one: settling the
/// file's TTLs then changes nothing). Bound: a pass over `records`, a
/// look-up of a map of the owners for each record whose owner is as long
/// as one of them.
fn owners_records<'r>(
    origin: Name<'_>,
    owners: &[LowerNameBuf],
    records: &'r Records,
) -> Option<Vec<Vec<RecordRef<'r>>>> {
    let new_records = records_of(owners, records);
    one_ttl_per_rrset(origin, &new_records).then_some(new_records)
}

/// Each of `owners`' (lowercased, each once) records in `records`, in
/// file order. Bound: a pass over `records`, a look-up of a map of the
/// owners for each record whose owner is as long as one of them.
fn records_of<'r>(owners: &[LowerNameBuf], records: &'r Records) -> Vec<Vec<RecordRef<'r>>> {
    let mut lengths = [false; 256];
    for owner in owners {
        lengths[owner.as_bytes().len()] = true;
    }
    let at_of: std::collections::HashMap<&[u8], usize> = owners
        .iter()
        .enumerate()
        .map(|(at, owner)| (owner.as_bytes(), at))
        .collect();
    let mut found: Vec<Vec<RecordRef<'r>>> = vec![Vec::new(); owners.len()];
    for index in 0..records.len() {
        let record = records.record(index);
        if !lengths[record.owner.as_bytes().len()] {
            continue;
        }
        if let Some(&at) = at_of.get(record.owner.to_lower().as_bytes()) {
            found[at].push(record);
        }
    }
    found
}

/// Each edited owner's place in `owners`, by its key (any case): a
/// look-up per name instead of a scan of the owners. Bound: a key per
/// owner.
fn owner_index(owners: &[LowerNameBuf]) -> std::collections::BTreeMap<Key, usize> {
    owners
        .iter()
        .enumerate()
        .map(|(at, owner)| (Key::of(owner.as_name()), at))
        .collect()
}

/// Whether the served version holds an NS or DNAME RRset at `name` (a
/// cut, or a DNAME: the names below are not signed). Bound: a look-up.
fn served_cut(served: &Zone, name: Name<'_>) -> bool {
    served
        .owner_records(name.to_lower().as_name())
        .iter()
        .any(|record| record.rtype == RType::NS || record.rtype == RType::DNAME)
}

/// Whether each owner's records (`lists`) hold one TTL per RRset. Bound:
/// per owner, the square of its records (as the file's check of TTLs).
fn one_ttl_per_rrset(origin: Name<'_>, lists: &[Vec<RecordRef<'_>>]) -> bool {
    for list in lists {
        for (at, record) in list.iter().enumerate() {
            if list[..at]
                .iter()
                .any(|other| other.rtype == record.rtype && other.ttl != record.ttl)
            {
                log::debug!(
                    "zone {origin}: signed again from its previous version: several TTLs \
                     for an RRset at {}",
                    record.owner
                );
                return false;
            }
        }
    }
    true
}

/// The zone `origin`'s next version when only `edits`' owners of `records`
/// (the zone file's, checked) need signing again (see the module
/// documentation; [`usable`] said so of `previous`): those owners signed,
/// `served` (the previous version, served now) patched with them, the
/// kept records patched. `Ok(None)` when the zone is to be signed again
/// from its previous version instead; errors are the signer's or the key
/// files'. Bound: a look-up and a signing per edited owner, and the key
/// step's pass over `records` for their highest TTL.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_edits<'r>(
    origin: Name<'_>,
    previous: &Previous<'_>,
    served: &Zone,
    edits: &mut Edits<'r>,
    records: &'r Records,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Option<EditSigned>, String> {
    // Whether every served name below a cut made or removed is edited
    // (`load::sign` asked it before the checks; asked here otherwise).
    let cuts_in_window = edits.delegations && edits.delegations_in_window(served, records);
    let edits: &Edits<'r> = edits;
    let owners = &edits.owners;
    let edits_records = &edits.records;
    if policy.nsec3.is_some() {
        return sign_nsec3_edits(
            origin,
            previous,
            served,
            owners,
            edits_records,
            policy,
            state_directory,
            now,
            serial_above,
            cuts_in_window,
        );
    }
    // A delegation made, removed, made secure or insecure: signed as a
    // window (the incremental signer signs its DS and NSEC only, its glue
    // not at all), when every served name below a cut made or removed is
    // edited too.
    if edits.delegations && !cuts_in_window {
        log::debug!(
            "zone {origin}: signed again from its previous version: a delegation made or \
             removed above names not edited"
        );
        return Ok(None);
    }
    // Glue changed in place below a cut that stays (no NS or DS changed
    // with it): its owner is neither signed nor in the chain, which the
    // window works out from the cuts above it (nothing signed there, the
    // served version and the kept records patched), as it does when a
    // delegation is edited with it.
    let is_cut = |name: Name<'_>| served_cut(served, name);
    if edits.delegations
        || owners
            .iter()
            .any(|owner| crate::window::names_between(owner.as_name(), origin).any(&is_cut))
    {
        return sign_window_edits(
            origin,
            previous,
            served,
            owners,
            edits_records,
            policy,
            state_directory,
            now,
            serial_above,
        );
    }
    let new_records = edits.records.iter().cloned();
    // Each edited owner's records in the served version.
    let mut edits = Vec::with_capacity(owners.len());
    for (owner, new) in owners.iter().zip(new_records) {
        // None (or an empty non-terminal, outside the NSEC chain): a name
        // added.
        let old = served.owner_records(owner.as_name().to_lower().as_name());
        if old.is_empty() || new.is_empty() {
            // A name added or removed: the NSEC chain changes.
            return sign_window_edits(
                origin,
                previous,
                served,
                owners,
                edits_records,
                policy,
                state_directory,
                now,
                serial_above,
            );
        }
        let previous: Vec<RecordRef<'_>> = old
            .iter()
            .map(|record| RecordRef {
                owner: record.owner,
                class: RClass::IN,
                ttl: record.ttl,
                rtype: record.rtype,
                rdata: record.rdata,
                location: Location::default(),
            })
            .collect();
        edits.push(OwnerEdit {
            owner: previous
                .first()
                .map_or(owner.as_name(), |record| record.owner),
            previous,
            records: new,
        });
    }
    let apex_index = edits
        .iter()
        .position(|edit| edit.owner.eq_ignore_case(origin));
    let apex: Vec<RecordRef<'_>> =
        apex_index.map_or_else(Vec::new, |at| edits[at].previous.clone());
    let Some(signed) = crate::signing::sign_owners(
        origin,
        &apex,
        &edits,
        records,
        policy,
        state_directory,
        now,
        serial_above,
        previous.key_state,
    )?
    else {
        log::debug!("zone {origin}: signed again from its previous version: not an edit of owners");
        return Ok(None);
    };
    // The served version patched with each owner's new records.
    let mut changes = tern_authority::ZoneChanges::new();
    for (edit, records) in edits.iter().zip(&signed.zone.owners) {
        changes.set(
            edit.owner,
            records
                .iter()
                .map(|record| (record.rtype, record.ttl, &record.rdata[..])),
        );
    }
    let (zone, work) = match served.patch(&changes) {
        Ok(patched) if crate::window::garbage_within_share(&patched.zone) => {
            let work = crate::window::patch_work(&patched);
            (patched.zone, work)
        }
        Ok(_) | Err(_) => {
            log::debug!("zone {origin}: signed again from its previous version: not patched");
            return Ok(None);
        }
    };
    // The kept records: a patch of the owners' records appended.
    let rrsig =
        |list: &mut dyn Iterator<Item = RType>| list.filter(|&rtype| rtype == RType::RRSIG).count();
    let before: usize = edits.iter().map(|edit| edit.previous.len()).sum();
    let after: usize = signed.zone.owners.iter().map(Vec::len).sum();
    let rrsigs_before: usize = edits
        .iter()
        .map(|edit| rrsig(&mut edit.previous.iter().map(|record| record.rtype)))
        .sum();
    let rrsigs_after: usize = signed
        .zone
        .owners
        .iter()
        .map(|owner| rrsig(&mut owner.iter().map(|record| record.rtype)))
        .sum();
    let patch: Vec<(Name<'_>, Vec<RecordRef<'_>>)> = edits
        .iter()
        .zip(&signed.zone.owners)
        .map(|(edit, records)| {
            let records = records
                .iter()
                .map(|record| RecordRef {
                    location: Location::default(),
                    ..record.as_record_ref()
                })
                .collect();
            (edit.owner, records)
        })
        .collect();
    let count = (previous.kept.len() + after).saturating_sub(before);
    let kept = previous
        .kept
        .patched(&patch, count)
        .map_err(|err| format!("cannot keep the signed records: {err}"))?;
    Ok(Some(EditSigned {
        zone,
        work,
        kept,
        owners: edits.len(),
        rrsigs: (previous.rrsigs + rrsigs_after).saturating_sub(rrsigs_before),
        signatures: signed.zone.signatures,
        next_refresh: signed.zone.next_refresh,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
        difference: signed.zone.difference,
        visited: signed.zone.visited,
    }))
}

/// The zone's next version when an edit added or removed names (the NSEC
/// chain changes): signed as a window of the served version, as an update
/// is ([`crate::window::window_of`]: the edited owners, their NSEC
/// neighbours, the zone cuts above them, the apex), the served version
/// patched with the owners that changed and the kept records with a
/// patch of them (a name added goes into its place in canonical order).
/// The edited owners' new records are the file's (`new_records`, by
/// `owners`); the others' the served version's, the signer's aside.
/// `Ok(None)`: signed again from the previous version instead (the window
/// too large, the keys' DNSKEY RRset changed, or the patch refused).
/// Bound: the window's ([`crate::window::sign_window_of`]).
#[allow(clippy::too_many_arguments)]
fn sign_window_edits(
    origin: Name<'_>,
    previous: &Previous<'_>,
    served: &Zone,
    owners: &[LowerNameBuf],
    new_records: &[Vec<RecordRef<'_>>],
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Option<EditSigned>, String> {
    use crate::window::{changed_owners, sign_window_of, window_of};
    let declined = |why: &str| {
        log::debug!("zone {origin}: signed again from its previous version: {why}");
        Ok(None)
    };
    let is_cut = |name: Name<'_>| served_cut(served, name);
    if unchanged_denial_ttl(origin, served, new_records).is_none() {
        return declined("a name added or removed, and the SOA's TTL or minimum changed");
    }
    let Some(window) = window_of(served, owners.iter().map(LowerNameBuf::as_name), &is_cut) else {
        return declined("a name added or removed, and the window too large");
    };
    // The window's new records, unsigned.
    let record = |record: RecordRef<'_>| tern_zone::Record {
        owner: tern_wire::name::NameBuf::from_name(record.owner),
        class: RClass::IN,
        ttl: record.ttl,
        rtype: record.rtype,
        rdata: record.rdata.to_vec(),
        location: Location::default(),
    };
    let mut input: Vec<tern_zone::Record> = Vec::new();
    let at_of = owner_index(owners);
    for owner in window.owners() {
        match at_of.get(&Key::of(owner)).copied() {
            Some(at) => input.extend(new_records[at].iter().copied().map(record)),
            None => {
                for served_record in served.owner_records(owner).iter() {
                    if !matches!(served_record.rtype, RType::RRSIG | RType::NSEC) {
                        input.push(record(RecordRef {
                            owner: served_record.owner,
                            class: RClass::IN,
                            ttl: served_record.ttl,
                            rtype: served_record.rtype,
                            rdata: served_record.rdata,
                            location: Location::default(),
                        }));
                    }
                }
            }
        }
    }
    let Some(signed) = sign_window_of(
        served,
        &window,
        &input,
        policy,
        state_directory,
        now,
        serial_above,
    )?
    else {
        return declined("a name added or removed, and the window not signed apart");
    };
    let visited = signed.visited;
    let dnskey = |records: &[tern_zone::Record]| records.iter().any(|r| r.rtype == RType::DNSKEY);
    if dnskey(&signed.change.added) || dnskey(&signed.change.deleted) {
        return declined("a name added or removed, and the keys changed");
    }
    let out = &signed.records;
    let changed = changed_owners(out, &signed.change);
    if changed.len() > MAX_OWNER_EDITS {
        return declined("a name added or removed, and too many owners changed");
    }
    // The served version patched with each changed owner's records, and
    // each edited owner's that did not change.
    let changes =
        crate::window::patch_changes(out, &changed, owners.iter().map(LowerNameBuf::as_name));
    let (zone, work) = match served.patch(&changes) {
        Ok(patched) if crate::window::garbage_within_share(&patched.zone) => {
            let work = crate::window::patch_work(&patched);
            (patched.zone, work)
        }
        Ok(_) | Err(_) => return declined("a name added or removed, and not patched"),
    };
    // The kept records: a patch of the changed owners' records.
    let (kept, rrsigs) = kept_patched(
        previous,
        &signed.change,
        changed
            .iter()
            .map(|(owner, range)| (*owner, &out[range.clone()])),
    )?;
    log::debug!(
        "zone {origin}: a name added or removed, signed as a window of {} owners",
        window.len()
    );
    Ok(Some(EditSigned {
        zone,
        work,
        kept,
        owners: owners.len(),
        rrsigs,
        signatures: signed.signatures,
        next_refresh: signed.next_refresh,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
        visited,
        difference: signed.change,
    }))
}

/// The zone's next version when an edit of an NSEC3 zone (with opt-out
/// or without) changed a few owners: signed as a window of the served
/// version, as an update is ([`crate::window::sign_nsec3_window_of`]: the
/// edited owners, the apex among them, and the chain's links their change
/// adds, removes or rewrites), the served version patched with the owners
/// and links that changed and the kept records with a patch of them.
/// The edited owners' new records are the file's (`new_records`, by
/// `owners`); whether an owner or a name between one and the apex keeps
/// names below it is worked out from the served version's names directly
/// below it, less those the edit empties ([`names_below_after`]: an
/// empty non-terminal goes with the last name below it). `Ok(None)`: signed again from the
/// previous version instead (the SOA's TTL or minimum changed, too many
/// owners, the keys' DNSKEY RRset changed, or the window not signed
/// apart). `cuts_checked`: [`Edits::delegations_in_window`] said yes
/// (the window does not ask again). Bound: the window's, and a look-up of
/// the served version per edited owner and per name between one and the
/// apex.
#[allow(clippy::too_many_arguments)]
fn sign_nsec3_edits(
    origin: Name<'_>,
    previous: &Previous<'_>,
    served: &Zone,
    owners: &[LowerNameBuf],
    new_records: &[Vec<RecordRef<'_>>],
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    cuts_checked: bool,
) -> Result<Option<EditSigned>, String> {
    use crate::window::{sign_nsec3_window_of, Nsec3Shape};

    let declined = |why: &str| {
        log::debug!("zone {origin}: signed again from its previous version: {why}");
        Ok(None)
    };
    if owners.len() > MAX_WINDOW_OWNERS {
        return declined("NSEC3, and too many owners edited");
    }
    let Some(nsec3_ttl) = unchanged_denial_ttl(origin, served, new_records) else {
        return declined("NSEC3, and the SOA's TTL or minimum changed");
    };
    // The owners, the apex first, with their new records.
    let Some(apex_at) = owners
        .iter()
        .position(|owner| owner.as_name().eq_ignore_case(origin))
    else {
        return declined("NSEC3, and the apex not among the owners");
    };
    let order: Vec<usize> = std::iter::once(apex_at)
        .chain((0..owners.len()).filter(|&at| at != apex_at))
        .collect();
    let names: Vec<NameBuf> = order
        .iter()
        .map(|&at| NameBuf::from_name(owners[at].as_name()))
        .collect();
    let records: Vec<Vec<tern_zone::Record>> = order
        .iter()
        .map(|&at| new_records[at].iter().map(RecordRef::to_record).collect())
        .collect();
    let at_of = owner_index(owners);
    let edited = |name: Name<'_>| at_of.get(&Key::of(name)).copied();
    let served_has_records =
        |name: Name<'_>| !served.owner_records(name.to_lower().as_name()).is_empty();
    let has_records = |name: Name<'_>| match edited(name) {
        Some(at) => !new_records[at].is_empty(),
        None => served_has_records(name),
    };
    let is_cut = |name: Name<'_>| served_cut(served, name);
    // Whether each edited owner and each name between one and the apex
    // has names below it after the edit (`below_after`).
    let Some(below_after) = names_below_after(origin, served, owners, new_records) else {
        return declined("NSEC3, and a name removed not found in the served version");
    };
    let has_names_below = |name: Name<'_>| match below_after.get(&Key::of(name)) {
        Some(&below) => below,
        None => served.has_names_below(name.to_lower().as_name()),
    };
    let shape = Nsec3Shape {
        is_cut: &is_cut,
        has_records: &has_records,
        has_names_below: &has_names_below,
        cuts_checked,
    };
    let Some(signed) = sign_nsec3_window_of(
        served,
        &names,
        &records,
        &shape,
        nsec3_ttl,
        policy,
        state_directory,
        now,
        serial_above,
    )?
    else {
        return declined("NSEC3, and the window not signed apart");
    };
    let dnskey = |records: &[tern_zone::Record]| records.iter().any(|r| r.rtype == RType::DNSKEY);
    if dnskey(&signed.change.added) || dnskey(&signed.change.deleted) {
        return declined("NSEC3, and the keys changed");
    }
    // The kept records: a patch of the owners and links that changed.
    let (kept, rrsigs) = kept_patched(
        previous,
        &signed.change,
        signed
            .owners
            .iter()
            .map(|(owner, records)| (owner.as_name(), &records[..])),
    )?;
    log::debug!(
        "zone {origin}: NSEC3, signed as a window of {} owners and {} links",
        signed.sizes.0,
        signed.sizes.1
    );
    Ok(Some(EditSigned {
        zone: signed.zone,
        work: signed.work,
        kept,
        owners: owners.len(),
        rrsigs,
        signatures: signed.signatures,
        next_refresh: signed.next_refresh,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
        visited: signed.visited,
        difference: signed.change,
    }))
}

/// For each of `owners` (lowercased, edited: their records in the new
/// version are `new_records`) and each name between one and the apex,
/// whether a name strictly below it owns records after the edit. A name
/// added below one says so; else the served version's names directly
/// below it ([`Zone::child_count`]) less those of them the edit leaves
/// with no records and no names below (removed owners, and the empty
/// non-terminals that vanish with them), worked out from the deepest
/// names up. `None` when the served version is not as the edit expects
/// (a name that had records not in its tree). Bound: the owners and their
/// ancestors, a look-up of the served version and a map's per name.
fn names_below_after(
    origin: Name<'_>,
    served: &Zone,
    owners: &[LowerNameBuf],
    new_records: &[Vec<RecordRef<'_>>],
) -> Option<std::collections::BTreeMap<Key, bool>> {
    use std::collections::BTreeMap;
    /// What is known of one name.
    #[derive(Default)]
    struct Below {
        /// It owns records after the edit.
        records: bool,
        /// A name below it owns records after the edit, one edited.
        added: bool,
        /// Names directly below it in the served version (`None`: it is
        /// not in the served version's tree).
        served: Option<u32>,
        /// Of those, the ones the edit leaves empty.
        vanished: u32,
        /// The number of its labels.
        labels: usize,
    }
    let mut names: BTreeMap<Key, Below> = BTreeMap::new();
    for (owner, new) in owners.iter().zip(new_records) {
        let owner = owner.as_name();
        let entry = names.entry(Key::of(owner)).or_default();
        entry.records = !new.is_empty();
        for parent in crate::window::names_between(owner, origin) {
            let entry = names.entry(Key::of(parent)).or_insert_with(|| Below {
                records: !served.owner_records(parent).is_empty(),
                ..Below::default()
            });
            entry.added |= !new.is_empty();
        }
    }
    // An edited owner's records are the new version's; an owner in
    // `owners` that is also another's ancestor was inserted first by its
    // own edit or overwritten here.
    for (owner, new) in owners.iter().zip(new_records) {
        if let Some(entry) = names.get_mut(&Key::of(owner.as_name())) {
            entry.records = !new.is_empty();
        }
    }
    let mut order: Vec<Key> = Vec::with_capacity(names.len());
    for (key, entry) in names.iter_mut() {
        let name = key.name();
        let name = name.as_name();
        entry.labels = name.label_count();
        entry.served = served.child_count(name);
        if entry.served.is_none() && !served.owner_records(name).is_empty() {
            return None;
        }
        order.push(key.clone());
    }
    // Deepest first: a name's children are settled before it.
    order.sort_by_key(|key| std::cmp::Reverse(names.get(key).map_or(0, |e| e.labels)));
    let mut out = BTreeMap::new();
    for key in order {
        let Some(entry) = names.get(&key) else {
            continue;
        };
        let below = entry.added || entry.served.unwrap_or(0) > entry.vanished;
        let vanishes = entry.served.is_some() && !entry.records && !below;
        if vanishes {
            let name = key.name();
            if let Some(parent) = name.as_name().parent() {
                if let Some(parent) = names.get_mut(&Key::of(parent)) {
                    parent.vanished += 1;
                }
            }
        }
        out.insert(key, below);
    }
    Some(out)
}

/// The NSEC or NSEC3 records' TTL (the SOA's TTL or minimum, the lower)
/// when the edit's SOA (in `new_records`) keeps the served version's TTL
/// and minimum; `None` when either changed (then every NSEC or NSEC3
/// record changes) or the edit has no SOA. Bound: one pass of
/// `new_records`.
fn unchanged_denial_ttl(
    origin: Name<'_>,
    served: &Zone,
    new_records: &[Vec<RecordRef<'_>>],
) -> Option<u32> {
    let soa = served.soa_record();
    let denial = |ttl: u32, rdata: &[u8]| {
        (
            ttl,
            rdata.len().checked_sub(4).map(|at| rdata[at..].to_vec()),
        )
    };
    let same_denial = new_records.iter().flatten().any(|record| {
        record.rtype == RType::SOA
            && record.owner.eq_ignore_case(origin)
            && denial(record.ttl, record.rdata) == denial(soa.ttl, soa.rdata)
    });
    if !same_denial {
        return None;
    }
    Some(match denial(soa.ttl, soa.rdata).1 {
        Some(minimum) => minimum
            .try_into()
            .map_or(soa.ttl, |m: [u8; 4]| soa.ttl.min(u32::from_be_bytes(m))),
        None => soa.ttl,
    })
}

/// The previous version's kept records patched with `owners` (each owner
/// that `change` touches with its signed records in the new version;
/// none: gone), and the new version's RRSIG count. Bound: the owners'
/// records and `change`'s.
fn kept_patched<'r>(
    previous: &Previous<'_>,
    change: &tern_dnssec::Change,
    owners: impl Iterator<Item = (Name<'r>, &'r [tern_zone::Record])>,
) -> Result<(KeptRecords, usize), String> {
    let is_rrsig = |record: &&tern_zone::Record| record.rtype == RType::RRSIG;
    let before = change.deleted.len();
    let after = change.added.len();
    let rrsigs_before = change.deleted.iter().filter(is_rrsig).count();
    let rrsigs_after = change.added.iter().filter(is_rrsig).count();
    let patch: Vec<(Name<'_>, Vec<RecordRef<'_>>)> = owners
        .map(|(owner, records)| {
            let records = records
                .iter()
                .map(|record| RecordRef {
                    location: Location::default(),
                    ..record.as_record_ref()
                })
                .collect();
            (owner, records)
        })
        .collect();
    let count = (previous.kept.len() + after).saturating_sub(before);
    let kept = previous
        .kept
        .patched(&patch, count)
        .map_err(|err| format!("cannot keep the signed records: {err}"))?;
    Ok((
        kept,
        (previous.rrsigs + rrsigs_after).saturating_sub(rrsigs_before),
    ))
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Records {
        let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
        let mut records = Records::new();
        tern_zone::scan_bytes(
            text.as_bytes(),
            Path::new("test"),
            origin.as_name(),
            &tern_zone::Options::default(),
            &mut tern_zone::NoInclude,
            &mut records,
        )
        .unwrap();
        records
    }

    fn zone(hosts: impl Iterator<Item = String>) -> String {
        let mut text = String::from(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n",
        );
        for host in hosts {
            text.push_str(&host);
            text.push('\n');
        }
        text
    }

    /// Records changed, added and removed anywhere are found, and only
    /// they; a new SOA serial is no difference; a list out of step for
    /// longer than [`RESYNC`] records is refused.
    #[test]
    fn the_records_that_differ() {
        let hosts = |skip: Option<usize>, change: Option<usize>, add: Option<usize>| {
            (0..200).flat_map(move |n| {
                let mut lines = Vec::new();
                if Some(n) != skip {
                    let last = if Some(n) == change { 99 } else { n % 250 };
                    lines.push(format!("h{n} A 198.51.100.{last}"));
                }
                if Some(n) == add {
                    lines.push(format!("h{n} TXT \"new\""));
                }
                lines
            })
        };
        let old = records(&zone(hosts(None, None, None)));
        assert_eq!(diff(&old, &old), Some(Diff::default()));
        let serial = records(&zone(hosts(None, None, None)).replace(" 1 3600", " 2 3600"));
        assert_eq!(diff(&old, &serial), Some(Diff::default()));
        let changed = records(&zone(hosts(None, Some(7), None)));
        assert_eq!(
            diff(&old, &changed),
            Some(Diff {
                old: vec![3 + 7],
                new: vec![3 + 7]
            })
        );
        let removed = records(&zone(hosts(Some(0), None, None)));
        assert_eq!(
            diff(&old, &removed),
            Some(Diff {
                old: vec![3],
                new: vec![]
            })
        );
        let added = records(&zone(hosts(None, None, Some(199))));
        assert_eq!(
            diff(&old, &added),
            Some(Diff {
                old: vec![],
                new: vec![3 + 200]
            })
        );
        let many: String = zone((0..200).map(|n| format!("h{n} A 198.51.100.{}", (n + 1) % 250)));
        assert_eq!(diff(&old, &records(&many)), None);
    }
}
