//! One zone file: read, parsed, checked, its TTLs settled, signed (see
//! [`super::sign`]) and built.

use super::*;

/// The builder of a zone as a sink of records: a record it refuses is an
/// error at the record's location (the scan goes on, the zone fails).
pub(super) struct Build<'b, F> {
    builder: &'b mut ZoneBuilder,
    errors: &'b mut Vec<String>,
    file_of: &'b F,
}

impl<F: Fn(tern_zone::Location) -> String> Build<'_, F> {
    pub(super) fn insert(&mut self, record: tern_zone::RecordRef<'_>) {
        if let Err(err) = self.builder.insert(
            record.owner,
            record.rtype,
            record.class,
            record.ttl,
            record.rdata,
        ) {
            let location = record.location;
            self.errors.push(format!(
                "{}:{}:{}: error: {err}",
                (self.file_of)(location),
                location.line,
                location.col
            ));
        }
    }
}

impl<F: Fn(tern_zone::Location) -> String> tern_zone::Sink for Build<'_, F> {
    fn record(&mut self, record: tern_zone::RecordRef<'_>) -> Result<(), &'static str> {
        self.insert(record);
        Ok(())
    }
}

/// [`load_zone_from`], with the `$INCLUDE`d files read by `read`, and
/// the records signed by `signer` (if given) before the zone is built.
pub(super) fn load_zone_with(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
    read: &mut dyn tern_zone::Include,
    signer: Option<Signer<'_>>,
) -> Result<(Zone, Stamp), Failure> {
    let origin = parse_origin(origin_text)
        .map_err(|err| Failure::Zone(vec![format!("{}: {err}", path.display())]))?;
    let file = FileStamp::of(path);
    let mut includes = StampingInclude {
        stamps: Vec::new(),
        read,
    };
    let mut phases = Phases::default();
    let data = std::fs::read(path).map_err(|err| {
        Failure::Zone(vec![format!(
            "{}: cannot read zone file: {err}",
            path.display()
        )])
    })?;
    let options = tern_zone::Options {
        // A signed zone's file is read on the signing threads where it
        // can be cut into parts (tern_zone's `scan::split`).
        threads: signer.as_ref().map_or(1, |signer| signer.threads),
        ..tern_zone::Options::default()
    };
    // A signed zone reloaded: only the part of its file that changed since
    // the previous load is read, if it can be (`super::region`).
    let previous_base = signer
        .as_ref()
        .and_then(|signer| signer.previous.as_ref())
        .and_then(|previous| previous.edit_base.as_ref())
        .filter(|base| base.uniform);
    // What of the previous text was held, even when its region could not
    // be read apart (the file then read whole).
    let mut held = 0;
    let changed_read = previous_base.and_then(|base| {
        let old = base
            .text
            .as_ref()?
            .differences(&data, super::region::MAX_REGION_LEN)?;
        phases.lap("previous text compared");
        held = old.held;
        super::region::read_changed(
            origin.as_name(),
            path,
            &options,
            &old,
            &data,
            &base.unsigned,
        )
    });
    let copied;
    let (mut records, files, parsed, known) = match changed_read {
        Some(read) => {
            let parsed = read.parsed;
            copied = read.copied;
            (read.records, vec![path.to_path_buf()], parsed, read.diff)
        }
        None => {
            let mut records = Records::new();
            let files = tern_zone::scan_bytes(
                &data,
                path,
                origin.as_name(),
                &options,
                &mut includes,
                &mut records,
            )
            .map_err(|errors| {
                Failure::Zone(
                    errors
                        .errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>(),
                )
            })?;
            let parsed = records.len();
            copied = parsed;
            (records, files, parsed, None)
        }
    };
    // The text is in `records` now: freed before the zone is signed and
    // built, or, for a signed zone, kept on disk for the next reload
    // (written on a thread of its own).
    let text = match &signer {
        Some(signer) => Some(super::region::keep_text(
            signer.state_directory,
            origin.as_name(),
            data,
            (held, copied),
        )),
        None => {
            drop(data);
            None
        }
    };
    phases.lap("file read and parsed");
    let mut errors = Vec::new();
    let file_of = |location: tern_zone::Location| {
        let file = files
            .get(location.file as usize)
            .map_or(path, PathBuf::as_path);
        file.display().to_string()
    };
    // A signed zone of which a few owners changed: those checked and
    // signed, the served version patched.
    if let Some(signer) = &signer {
        let edited = sign_edited(
            &origin,
            &records,
            signer,
            warnings,
            &file_of,
            &mut phases,
            known.as_ref(),
        )
        .inspect_err(|failure| {
            if let Failure::Signing(cause) = failure {
                let wire = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
                crate::sign_status::failed(
                    wire.as_bytes(),
                    signer.policy,
                    cause,
                    crate::unix_time(),
                );
            }
        })?;
        if let Some((zone, mut version)) = edited {
            phases.lap("owners signed, served version and kept records patched");
            if let Some(base) = &mut version.edit_base {
                base.unsigned = records;
                base.uniform = true;
                base.text = text;
            }
            version.cost.parsed = parsed;
            let stamp = Stamp {
                path: path.into(),
                file,
                includes: includes.stamps.into_boxed_slice(),
                signed: Some(Arc::new(version)),
            };
            log::info!("zone {origin_text}: loaded: {phases}");
            return Ok((zone, stamp));
        }
        phases.lap("not an edit of a few owners");
    }
    // The whole file checked, or, for a signed zone whose file changed in
    // a few owners since its previous load, those owners
    // ([`super::changed`]).
    let base = signer
        .as_ref()
        .and_then(|signer| signer.previous.as_ref())
        .and_then(|previous| previous.edit_base.as_ref());
    let changed = base.and_then(|base| {
        super::changed::changed_records(origin.as_name(), &base.unsigned, &records, known.as_ref())
            .map(|changed| (changed, base.uniform))
    });
    let mut checked = 0;
    let diagnostics = match &changed {
        Some((list, _)) => {
            checked += list.len();
            tern_zone::check::check_zone(origin.as_name(), list)
        }
        None => {
            checked += records.len();
            tern_zone::check::check_zone(origin.as_name(), &records)
        }
    };
    for diagnostic in diagnostics {
        let line = diagnostic.render(&file_of(diagnostic.location));
        match diagnostic.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    // Each RRset's TTL as BIND reads the file (tern_zone::ttl); a file
    // that gives each RRset one TTL is left as it is. When the previous
    // load's did and the changed owners' RRsets have one TTL each, so
    // does the file (its other records are the previous load's).
    let known_uniform = match &changed {
        Some((list, true)) => {
            phases.lap("changed owners checked");
            checked += list.len();
            tern_zone::ttl::RrsetTtls::of(list).changes().is_empty()
        }
        Some(_) => {
            phases.lap("changed owners checked");
            false
        }
        None => {
            phases.lap("checked");
            false
        }
    };
    drop(changed);
    let uniform = known_uniform || {
        checked += records.len();
        tern_zone::ttl::RrsetTtls::of(&records).changes().is_empty()
    };
    if !uniform {
        tern_zone::ttl::settle_ttls(&mut records);
    }
    phases.lap("TTLs settled");
    let mut builder = ZoneBuilder::new(origin.as_name());
    builder.reserve(records.len(), records.rdata_len());
    phases.lap("builder reserved");
    let mut signed = None;
    let mut patched = None;
    let mut build = Build {
        builder: &mut builder,
        errors: &mut errors,
        file_of: &file_of,
    };
    match signer {
        // A zone with a policy is built from its signed records only
        // (signed whole or from a saved copy, read back from the kept
        // file once the signer's copy of the zone is freed; signed from
        // the served version, as each is made): a signing failure leaves
        // nothing to serve.
        Some(signer) => {
            // The signer hands its records over owner by owner: each
            // owner's RRsets go into the zone's tables as they come.
            build.builder.stream_owners();
            // A failure is counted and kept for `tern zone-status`.
            let wire = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
            let version = sign_loaded(origin, &records, &signer, &mut build, &mut patched)
                .inspect_err(|failure| {
                    if let Failure::Signing(cause) = failure {
                        let now = crate::unix_time();
                        crate::sign_status::failed(wire.as_bytes(), signer.policy, cause, now);
                    }
                })?;
            phases.lap("signed");
            signed = Some(SignedVersion {
                cost: SigningCost {
                    checked,
                    parsed,
                    ..version.cost
                },
                ..version
            });
        }
        None => {
            for record in records.iter() {
                build.insert(record);
            }
        }
    }
    let signed = match signed {
        // The file's records are kept for the next reload to compare.
        Some(mut version) => {
            if let Some(base) = &mut version.edit_base {
                base.unsigned = records;
                base.uniform = uniform;
                base.text = text;
            } else {
                drop(records);
            }
            Some(Arc::new(version))
        }
        None => {
            drop(records);
            None
        }
    };
    phases.lap("records freed");
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    let stamp = Stamp {
        path: path.into(),
        file,
        includes: includes.stamps.into_boxed_slice(),
        signed,
    };
    let signed_zone = stamp.signed.is_some();
    // Built whole, a phase of its own; patched (while signing, its time
    // in the phase "signed"), said after the phases with the patch's work.
    let (zone, patch_work) = match patched {
        Some((zone, work)) => (zone, Some(work)),
        None => {
            let zone = builder
                .finish()
                .map_err(|err| Failure::Zone(vec![format!("{}: {err}", path.display())]))?;
            phases.lap("built whole");
            (zone, None)
        }
    };
    if signed_zone {
        match patch_work {
            Some(work) => log::info!(
                "zone {origin_text}: loaded: {phases}; the served version patched while \
                 signing ({} table octets copied, {} nodes touched)",
                work.bytes_copied,
                work.nodes_touched
            ),
            None => log::info!("zone {origin_text}: loaded: {phases}"),
        }
    }
    Ok((zone, stamp))
}
