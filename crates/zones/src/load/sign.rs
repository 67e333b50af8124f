//! Signing a loaded zone: whole, or only the owners a reload edited; the
//! steps' times; the served version patched.

use super::*;

/// Signs a zone's `records` as `signer` says: from its previous signed
/// version if it has one (only what changed, and what the rollover steps
/// due change), else whole on `signer.threads` threads, streamed as it is
/// signed; each signed record handed to `build` and written to disk for
/// the next signing ([`crate::kept`]), never held whole in memory here
/// (signed whole, `build` is handed them from disk once the signer's copy
/// of the zone is freed: the two never meet at the peak).
/// The version made, with its keys and when it must be signed again (its
/// first signature due for refresh, or its keys' next step if earlier).
///
/// When the zone has a served version and the signing knows what changed,
/// the next version is that one patched ([`patch_signed`]) into `patched`,
/// and `build` is handed nothing.
pub(super) fn sign_loaded(
    origin: NameBuf,
    records: &Records,
    signer: &Signer<'_>,
    build: &mut dyn Sink,
    patched: &mut Option<(Zone, tern_authority::Work)>,
) -> Result<SignedVersion, Failure> {
    let now = crate::unix_time();
    let started = std::time::Instant::now();
    let name = origin.as_name();
    let kept = std::fs::create_dir_all(signer.state_directory)
        .and_then(|()| KeptWriter::create(signer.state_directory))
        .map_err(|err| {
            Failure::Signing(format!(
                "cannot keep the signed records in {}: {err}",
                signer.state_directory.display()
            ))
        })?;
    let mut both = Both {
        kept,
        build: Some(build),
        refresh: crate::signing::refresh_of(signer.policy, now),
        now,
        next_refresh: None,
        earliest_expiry: None,
        serial: None,
    };
    // The RRSIGs made and kept, what the keys call for next and what
    // changed.
    let mut phases = Phases::default();
    let mut visited = records.len();
    // The previous signed version: the one served, else (a start) the
    // copy saved by the last whole signing before it, whose signatures
    // still valid are kept (crate::kept, "saved copies").
    let previous_records = match &signer.previous {
        // Read back for this signing only, and dropped with it.
        Some(previous) => Some(previous.records().map_err(|err| {
            Failure::Signing(format!("reading the previous signed records: {err}"))
        })?),
        None => saved_signed(signer.state_directory, name),
    };
    phases.lap("previous records read");
    let saved = signer.previous.is_none();
    let mut build_from_kept = None;
    let mut streamed = None;
    let resigned = match previous_records {
        // Streamed to the kept records, built from them once the saved
        // ones are freed, as a whole signing is (issue 24).
        Some(previous_records) if saved => {
            build_from_kept = both.build.take();
            visited += previous_records.len();
            streamed = sign_saved(name, &previous_records, records, signer, now, &mut both)?;
            None
        }
        // The version served now, signed again.
        Some(previous_records) => {
            visited += previous_records.len();
            let from = previous_serial(name, &previous_records);
            let resigned = crate::signing::sign_again(
                name,
                &previous_records,
                records,
                signer.policy,
                signer.state_directory,
                now,
                signer.serial_above,
            )
            .map_err(Failure::Signing)?;
            Some((from, resigned))
        }
        None => None,
    };
    phases.lap("signed again");
    let (signatures, kept, next_key_event, awaiting_ds, change) = match (resigned, streamed) {
        (Some((from, resigned)), _) => {
            let zone = resigned.zone;
            // The version served now, patched with the owners the signing
            // changed; else (no served version, no difference, a change a
            // patch does not make) every record goes to the builder.
            // Only from the version these signed records are (an update
            // may serve another).
            *patched = signer
                .served
                .as_deref()
                .filter(|served| from == Some(served.serial()))
                .zip(zone.difference.as_ref())
                .and_then(|(served, change)| patch_signed(name, served, &zone.records, change));
            // The lap says which: a patch refused (or not tried) leaves
            // the build to the next one.
            phases.lap(if patched.is_some() {
                "served version patched"
            } else {
                "served version not patched"
            });
            if patched.is_some() {
                both.build = None;
            }
            Sink::reserve(&mut both, zone.records.len());
            visited += zone.records.len();
            for index in 0..zone.records.len() {
                Sink::record(&mut both, zone.records.record(index))
                    .map_err(|err| Failure::Signing(err.to_string()))?;
            }
            phases.lap("records kept (and built)");
            (
                zone.signatures,
                zone.kept,
                resigned.next_key_event,
                resigned.awaiting_ds,
                from.zip(zone.difference),
            )
        }
        (None, Some(signed)) => {
            visited += signed.zone.records;
            let zone = signed.zone;
            let (key_event, awaiting_ds) = (signed.next_key_event, signed.awaiting_ds);
            (zone.signatures, zone.kept, key_event, awaiting_ds, None)
        }
        (None, None) => {
            // Signed whole: to the kept records only, and built from them
            // once the signer has freed its copy of the zone.
            build_from_kept = build_from_kept.or(both.build.take());
            let signed = crate::signing::sign_into(
                name,
                records,
                signer.policy,
                signer.state_directory,
                now,
                signer.serial_above,
                signer.threads,
                &mut both,
            )
            .map_err(Failure::Signing)?;
            visited += signed.zone.signatures;
            (
                signed.zone.signatures,
                0,
                signed.next_key_event,
                signed.awaiting_ds,
                None,
            )
        }
    };
    let next = both
        .next_refresh
        .unwrap_or_else(|| crate::signing::resign_due(signer.policy, now));
    let earliest_expiry = both.earliest_expiry;
    let both_serial = both.serial;
    let kept_records = both.kept.finish().map_err(|err| {
        Failure::Signing(format!(
            "cannot keep the signed records in {}: {err}",
            signer.state_directory.display()
        ))
    })?;
    phases.lap("kept file finished");
    if let Some(build) = build_from_kept {
        kept_records
            .read_into(build)
            .map_err(|err| Failure::Signing(format!("reading back the signed records: {err}")))?;
        phases.lap("built from the kept records");
    }
    // Saved for the next start, which signs from it rather than whole.
    let saved_path = saved_signed_path(signer.state_directory, name);
    if let Err(err) = kept_records.save(&saved_path) {
        log::warn!(
            "zone {name}: cannot save the signed records in {}: {err}; the next start signs \
             from an older copy or whole",
            saved_path.display()
        );
    }
    phases.lap("signed records saved");
    log::info!(
        "zone {name}: signed, {signatures} signatures made, {kept} kept, in {} ms; \
         {} records kept on disk for the next signing ({} octets); {phases}",
        started.elapsed().as_millis(),
        kept_records.len(),
        kept_records.size()
    );
    crate::sign_status::signed(
        tern_wire::name::LowerNameBuf::from_name(name).as_bytes(),
        signer.policy,
        crate::sign_status::LastSigning {
            at: now,
            duration: started.elapsed().as_secs_f64(),
            signatures: signatures as u64,
        },
        earliest_expiry,
        next_key_event,
    );
    let keys = crate::rollover::ZoneKeys {
        origin,
        dir: crate::keys::key_dir(signer.state_directory, name),
        policy: Arc::clone(signer.policy),
        next_event: next_key_event,
        awaiting_ds,
    };
    // What the next reload needs to sign only the owners it changes; the
    // file's records are added by the caller.
    let edit_base =
        crate::signing::key_state(name, signer.state_directory).map(|key_state| EditBase {
            unsigned: Records::new(),
            serial: both_serial.unwrap_or(0),
            key_state,
            next_refresh: next,
            earliest_expiry,
            rrsigs: signatures + kept,
            uniform: false,
            text: None,
        });
    let written = kept_records.written();
    Ok(SignedVersion {
        records: kept_records,
        resign_at: next_key_event.map_or(next, |at| at.min(next)),
        key_event_first: next_key_event.is_some_and(|at| at < next),
        keys: Arc::new(keys),
        change: Mutex::new(change),
        signatures,
        kept,
        edit_base,
        cost: SigningCost {
            visited,
            signatures,
            written,
            // Counted by the caller, which checks and reads.
            checked: 0,
            parsed: 0,
            scanned: 0,
        },
    })
}

/// The zone `origin`'s next signed version when only a few owners of
/// `records` changed since `signer`'s previous version ([`crate::edited`]):
/// those signed, the served version patched, the kept records patched.
/// `Ok(None)`: the zone is signed again from its previous version.
/// `known`: the records that differ from the previous load's, when the
/// reload found them (`super::region`).
///
/// The records of the edited owners (and the apex) are checked here, as
/// the whole file is otherwise (errors as [`Failure::Zone`], warnings into
/// `warnings`): every error `check_zone` finds is at one owner or the
/// apex, but for records below a DNAME (a DNAME that differs is checked
/// with the names the file holds below it, [`super::changed`], as names
/// added or removed are with their ancestors, or the whole file by the
/// caller); warnings that
/// relate names (glue, the NSEC chain of a signed file) are not repeated.
pub(super) fn sign_edited(
    origin: &NameBuf,
    records: &Records,
    signer: &Signer<'_>,
    warnings: &mut Vec<String>,
    file_of: &dyn Fn(tern_zone::Location) -> String,
    phases: &mut Phases,
    known: Option<&crate::edited::Diff>,
) -> Result<Option<(Zone, SignedVersion)>, Failure> {
    let (Some(previous), Some(served)) = (&signer.previous, &signer.served) else {
        return Ok(None);
    };
    let Some(base) = &previous.edit_base else {
        return Ok(None);
    };
    let now = crate::unix_time();
    let started = std::time::Instant::now();
    let name = origin.as_name();
    let from = crate::edited::Previous {
        kept: &previous.records,
        serial: base.serial,
        resign_at: previous.resign_at,
        key_state: &base.key_state,
        policy: &previous.keys.policy,
        rrsigs: base.rrsigs,
        uniform: base.uniform,
    };
    if !crate::edited::usable(name, &from, served, signer.policy, now) {
        return Ok(None);
    }
    let Some(mut edits) = crate::edited::find_edits(name, &base.unsigned, records, known) else {
        return Ok(None);
    };
    // A delegation made or removed above names not edited: those names
    // are made edited owners too (the window signs what the cut changes
    // below it), or, past the bounds, the zone is signed whole
    // (`sign_edits` declines it): not checked here, or the whole load's
    // check would report its warnings a second time.
    if edits.changes_delegations() && !edits.delegations_in_window(served, records) {
        log::debug!(
            "zone {name}: signed whole: a delegation made or removed above too many names not \
             edited"
        );
        return Ok(None);
    }
    if signer
        .policy
        .nsec3
        .as_ref()
        .is_some_and(|nsec3| nsec3.opt_out)
    {
        edits.widen_for_opt_out(served, records);
    }
    let mut errors = Vec::new();
    // A name added or removed: its ancestors checked too, or the whole
    // file when the change relates owners (`load::changed`).
    let checked: Box<dyn tern_zone::RecordList> =
        if edits.adds_or_removes(served) || edits.changes_delegations() {
            match super::changed::changed_records(name, &base.unsigned, records, known) {
                Some(changed) => Box::new(changed),
                None => return Ok(None),
            }
        } else {
            Box::new(edits.checked_list(name, records))
        };
    for diagnostic in tern_zone::check::check_zone(name, &*checked) {
        let line = diagnostic.render(&file_of(diagnostic.location));
        match diagnostic.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    phases.lap("edited owners found and checked");
    // The list borrows the edits, which the signing may widen.
    let checked_count = checked.len();
    drop(checked);
    let Some(edit) = crate::edited::sign_edits(
        name,
        &from,
        served,
        &mut edits,
        records,
        signer.policy,
        signer.state_directory,
        now,
        signer.serial_above,
    )
    .map_err(Failure::Signing)?
    else {
        return Ok(None);
    };
    let signatures = edit.signatures;
    let kept = edit.rrsigs.saturating_sub(signatures);
    let next = edit
        .next_refresh
        .map_or(base.next_refresh, |at| at.min(base.next_refresh));
    let next_key_event = edit.next_key_event;
    log::info!(
        "zone {name}: signed, {signatures} signatures made, {kept} kept, in {} ms; \
         {} owners edited, {} records kept on disk for the next signing ({} octets, \
         {} written, {} patches); the served version patched ({} table octets copied, {} \
         nodes touched)",
        started.elapsed().as_millis(),
        edit.owners,
        edit.kept.len(),
        edit.kept.size(),
        edit.kept.written(),
        edit.kept.patch_count(),
        edit.work.bytes_copied,
        edit.work.nodes_touched
    );
    crate::sign_status::signed(
        tern_wire::name::LowerNameBuf::from_name(name).as_bytes(),
        signer.policy,
        crate::sign_status::LastSigning {
            at: now,
            duration: started.elapsed().as_secs_f64(),
            signatures: signatures as u64,
        },
        base.earliest_expiry,
        next_key_event,
    );
    let keys = crate::rollover::ZoneKeys {
        origin: *origin,
        dir: crate::keys::key_dir(signer.state_directory, name),
        policy: Arc::clone(signer.policy),
        next_event: next_key_event,
        awaiting_ds: edit.awaiting_ds,
    };
    let serial = edit.zone.serial();
    let cost = SigningCost {
        visited: edit.visited,
        signatures,
        written: edit.kept.written(),
        checked: checked_count,
        // Counted by the caller, which reads the file.
        parsed: 0,
        scanned: edits.scanned(),
    };
    let version = SignedVersion {
        cost,
        records: edit.kept,
        resign_at: next_key_event.map_or(next, |at| at.min(next)),
        key_event_first: next_key_event.is_some_and(|at| at < next),
        keys: Arc::new(keys),
        change: Mutex::new(Some((base.serial, edit.difference))),
        signatures,
        kept,
        edit_base: Some(EditBase {
            unsigned: Records::new(),
            serial,
            key_state: base.key_state.clone(),
            next_refresh: next,
            earliest_expiry: base.earliest_expiry,
            rrsigs: edit.rrsigs,
            uniform: true,
            text: None,
        }),
    };
    Ok(Some((edit.zone, version)))
}

/// How long each step of a load took, for its log line: the steps named
/// in order, each with the milliseconds since the one before and the
/// loading thread's CPU time meanwhile (what compares on a busy machine).
pub(super) struct Phases {
    last: std::time::Instant,
    last_cpu: Option<u64>,
    steps: Vec<(&'static str, u128, Option<u64>)>,
}

impl Default for Phases {
    fn default() -> Self {
        Phases {
            last: std::time::Instant::now(),
            last_cpu: thread_cpu_ns(),
            steps: Vec::new(),
        }
    }
}

/// The calling thread's CPU time in nanoseconds (the first field of
/// Linux's `/proc/thread-self/schedstat`), if it reads.
pub(super) fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

impl Phases {
    /// The step `what` ends now.
    pub(super) fn lap(&mut self, what: &'static str) {
        let now = std::time::Instant::now();
        let cpu = thread_cpu_ns();
        let used = cpu
            .zip(self.last_cpu)
            .map(|(now, then)| now.saturating_sub(then));
        self.steps
            .push((what, now.duration_since(self.last).as_millis(), used));
        self.last = now;
        self.last_cpu = cpu;
    }
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (at, (what, ms, cpu)) in self.steps.iter().enumerate() {
            let comma = if at == 0 { "" } else { ", " };
            write!(f, "{comma}{what} {ms} ms")?;
            if let Some(cpu) = cpu {
                write!(f, " ({} ms CPU)", cpu / 1_000_000)?;
            }
        }
        Ok(())
    }
}

/// A start's signing from the zone's saved signed records, each record
/// streamed to `both`: `None`, logged, when the signer cannot sign from
/// them (`both` is then emptied for a whole signing).
fn sign_saved(
    name: Name<'_>,
    saved: &Records,
    records: &Records,
    signer: &Signer<'_>,
    now: u64,
    both: &mut Both<'_>,
) -> Result<Option<crate::signing::Signed<tern_dnssec::ResignStats>>, Failure> {
    let (dir, serial) = (signer.state_directory, signer.serial_above);
    match crate::signing::sign_again_into(
        name,
        saved,
        records,
        signer.policy,
        dir,
        now,
        serial,
        both,
    ) {
        Ok(signed) => Ok(Some(signed)),
        Err(err) => {
            log::warn!(
                "zone {name}: cannot sign from its saved signed records ({err}); it is \
                 signed whole"
            );
            both.kept = KeptWriter::create(dir).map_err(|err| {
                Failure::Signing(format!(
                    "cannot keep the signed records in {}: {err}",
                    dir.display()
                ))
            })?;
            (both.next_refresh, both.earliest_expiry, both.serial) = (None, None, None);
            Ok(None)
        }
    }
}

/// The signed records, each written for the next signing and handed to
/// the zone's builder; the first signature due for refresh and the
/// earliest expiry noted on the way (what the kept records are no longer
/// in memory to be asked afterwards).
pub(super) struct Both<'a> {
    kept: KeptWriter,
    /// `None` when the version is patched rather than built.
    build: Option<&'a mut dyn Sink>,
    refresh: tern_dnssec::Refresh,
    now: u64,
    next_refresh: Option<u64>,
    earliest_expiry: Option<u64>,
    /// The SOA's serial (only the apex has an SOA in a zone that signs).
    serial: Option<u32>,
}

impl Sink for Both<'_> {
    fn record(&mut self, record: tern_zone::RecordRef<'_>) -> Result<(), &'static str> {
        if record.rtype == tern_wire::types::RType::SOA && self.serial.is_none() {
            let at = record.rdata.len().saturating_sub(20);
            self.serial = record
                .rdata
                .get(at..at + 4)
                .map(|field| u32::from_be_bytes([field[0], field[1], field[2], field[3]]));
        }
        if record.rtype == tern_wire::types::RType::RRSIG {
            let one = One(record);
            let earliest = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.next_refresh = earliest(
                self.next_refresh,
                tern_dnssec::next_refresh(&one, &self.refresh),
            );
            self.earliest_expiry = earliest(
                self.earliest_expiry,
                crate::sign_status::earliest_expiry(&one, self.now),
            );
        }
        Sink::record(&mut self.kept, record)?;
        match &mut self.build {
            Some(build) => build.record(record),
            None => Ok(()),
        }
    }
}

/// One record as a list, for the functions that read a list.
pub(super) struct One<'a>(tern_zone::RecordRef<'a>);

impl RecordList for One<'_> {
    fn len(&self) -> usize {
        1
    }

    fn record(&self, _index: usize) -> tern_zone::RecordRef<'_> {
        self.0
    }
}

/// The version after `served` of the zone `origin` whose signed records
/// are now `records` (canonical order of owners), `change` from it:
/// `served` patched with every record of each owner `change` names
/// ([`Zone::patch`]), in time proportional to the change. `None` when a
/// patch is refused (NSEC3, a delegation moving, too much garbage) or the
/// records do not make a zone: the caller builds the version whole (and
/// reports the builder's errors). In a debug build the patched version is
/// checked against a whole build of the same records. With the version,
/// what the patch copied ([`crate::window::patch_work`]).
pub(crate) fn patch_signed(
    origin: tern_wire::name::Name<'_>,
    served: &Zone,
    records: &[tern_zone::Record],
    change: &Change,
) -> Option<(Zone, tern_authority::Work)> {
    let started = std::time::Instant::now();
    let mut owners: Vec<&tern_zone::Record> = change.deleted.iter().chain(&change.added).collect();
    owners.sort_unstable_by(|a, b| a.owner.as_name().canonical_cmp(b.owner.as_name()));
    owners.dedup_by(|a, b| a.owner.as_name().eq_ignore_case(b.owner.as_name()));
    let mut changes = tern_authority::ZoneChanges::new();
    for owner in owners {
        let owner = owner.owner.as_name();
        let start = records.partition_point(|record| {
            record.owner.as_name().canonical_cmp(owner) == std::cmp::Ordering::Less
        });
        let count = records[start..]
            .iter()
            .take_while(|record| record.owner.as_name().eq_ignore_case(owner))
            .count();
        changes.set(
            owner,
            records[start..start + count]
                .iter()
                .map(|record| (record.rtype, record.ttl, &record.rdata[..])),
        );
    }
    let (zone, work) = match served.patch(&changes) {
        Ok(patched) if crate::window::garbage_within_share(&patched.zone) => {
            let work = crate::window::patch_work(&patched);
            (patched.zone, work)
        }
        Ok(_) => {
            log::debug!("zone {origin}: built whole, its patches' garbage past its share");
            return None;
        }
        Err(err) => {
            log::debug!("zone {origin}: not patched ({err}), built whole");
            return None;
        }
    };
    log::debug!(
        "zone {origin}: serial {} patched from {} ({} owners; {} table octets copied, {} \
         nodes touched) in {:?}",
        zone.serial(),
        served.serial(),
        changes.len(),
        work.bytes_copied,
        work.nodes_touched,
        started.elapsed()
    );
    #[cfg(debug_assertions)]
    {
        let mut builder = ZoneBuilder::new(origin);
        for record in records {
            builder
                .insert(
                    record.owner.as_name(),
                    record.rtype,
                    record.class,
                    record.ttl,
                    &record.rdata,
                )
                .expect("the patched records build");
        }
        let whole = builder.finish().expect("the patched records build");
        assert!(
            same_records(&zone, &whole),
            "zone {origin}: the patched version differs from the whole build"
        );
    }
    Some((zone, work))
}

/// Whether `a` and `b` hold the same records (owner, type, TTL, RDATA),
/// walked with [`Zone::next_record`] (whose order follows node ids, which
/// a patch and a build give differently) and sorted.
#[cfg(any(test, debug_assertions))]
pub(super) fn same_records(a: &Zone, b: &Zone) -> bool {
    let all = |zone: &Zone| {
        let mut cursor = tern_authority::RecordCursor::default();
        let mut all = Vec::with_capacity(zone.record_count());
        while let Some(record) = zone.next_record(&mut cursor) {
            all.push((
                record.owner.as_bytes().to_vec(),
                record.rtype.0,
                record.ttl,
                record.rdata.to_vec(),
            ));
        }
        all.sort_unstable();
        all
    };
    a.serial() == b.serial() && a.record_count() == b.record_count() && all(a) == all(b)
}

/// The serial of the apex SOA among signed `records` (first in canonical
/// order).
pub(super) fn previous_serial(origin: tern_wire::name::Name<'_>, records: &Records) -> Option<u32> {
    let rdata = records
        .iter()
        .take_while(|record| record.owner.eq_ignore_case(origin))
        .find(|record| record.rtype == tern_wire::types::RType::SOA)?
        .rdata;
    let at = rdata.len().checked_sub(20)?;
    Some(u32::from_be_bytes(rdata.get(at..at + 4)?.try_into().ok()?))
}
