//=========== Tests ==========================================================

use tern_wire::name::LowerNameBuf;

use super::*;

/// A zone served at this serial, loaded from a file.
struct Served(u32);

/// A signed zone served at this serial, with its signed records.
struct SignedServed(u32, Arc<SignedVersion>);

impl Previous for SignedServed {
    fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
        Some(false)
    }

    fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
        Vec::new()
    }

    fn count(&self) -> usize {
        1
    }

    fn serial(&self, _: &[u8]) -> Option<u32> {
        Some(self.0)
    }

    fn signed(&self, _: &[u8]) -> Option<Arc<SignedVersion>> {
        Some(Arc::clone(&self.1))
    }
}

/// One record changed in a signed zone of 10,000 names and in one of
/// 100,000: the reload signs only the changed RRset and the SOA, reads
/// and writes as much at both sizes (records visited, signatures
/// made, octets written to the kept records), and serves the served
/// version patched, equal to a whole build of its kept records (the
/// kept list with its patches read back). A second edit patches again.
#[test]
fn a_signed_reload_costs_the_change_not_the_zone() {
    let mut costs = Vec::new();
    for names in [10_000, 100_000] {
        let (dir, zone_file) = hosts_dir("tern-zones-cost", names);
        let text = |address: &str, mx: u16| {
            let mut text = hosts_text(names, |i, text| {
                if i == 7 {
                    text.push_str(&format!("h7 A {address}\n"));
                } else {
                    text.push_str(&host_line(i));
                }
            });
            text.push_str(&format!("www MX {mx} mail\n"));
            text
        };
        std::fs::write(&zone_file, text("192.0.2.2", 10)).unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 2);
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        for (round, (address, mx)) in [("192.0.2.20", 10), ("192.0.2.20", 20)]
            .into_iter()
            .enumerate()
        {
            std::fs::write(&zone_file, text(address, mx)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            let (patched, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert_eq!(patched.serial(), 2 + round as u32);
            assert!(patched.garbage_bytes() > 0, "patched, not built whole");
            let name = tern_wire::name::Name::from_wire(&origin).unwrap();
            assert!(same_records(
                patched,
                &built_whole(name, &signed.records().unwrap())
            ));
            assert_eq!(
                signed.signatures().0,
                2,
                "the changed RRset's and the SOA's"
            );
            costs.push((round, signed.cost()));
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        costs[0], costs[2],
        "the first edit costs as much at both sizes"
    );
    assert_eq!(costs[1], costs[3], "the second edit too");
}

/// A name added to a signed NSEC zone's file, then removed, at 5,000
/// names and at 50,000: each reload signs a window of the zone (the
/// name, its NSEC neighbours, the apex), not the zone, so it visits as
/// many records and makes as many signatures at both sizes; the version
/// served is the previous one patched, and holds the records a whole
/// signing of the same file makes, the RRSIGs compared by owner, type
/// covered and key (at the smaller size, the whole signing's cost aside).
#[test]
fn a_signed_reload_adding_a_name_costs_the_change_not_the_zone() {
    let mut costs = Vec::new();
    for names in [5_000, 50_000] {
        let (dir, zone_file) = hosts_dir("tern-zones-window", names);
        let text = |added: bool| {
            hosts_text(names, |i, text| {
                text.push_str(&host_line(i));
                if added && i == 7 {
                    text.push_str("h7x A 192.0.2.99\nh7x TXT \"added\"\n");
                }
            })
        };
        std::fs::write(&zone_file, text(false)).unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 2);
        let name = tern_wire::name::Name::from_wire(&origin).unwrap();
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        for (round, added) in [true, false].into_iter().enumerate() {
            std::fs::write(&zone_file, text(added)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            let (patched, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert_eq!(patched.serial(), 2 + round as u32);
            assert!(patched.garbage_bytes() > 0, "patched, not built whole");
            let served = served_shape(patched);
            assert_eq!(served, shape(signed.records().unwrap().iter()));
            assert_eq!(
                served.0.iter().any(|record| record.0 == "h7x.example."),
                added
            );
            if names == 5_000 {
                let records = tern_zone::parse_bytes(
                    &std::fs::read(&zone_file).unwrap(),
                    &zone_file,
                    name,
                    &tern_zone::Options::default(),
                    &mut tern_zone::NoInclude,
                )
                .unwrap()
                .records;
                let policy = crate::signing::Policy::new("p".to_string());
                let whole = crate::signing::sign(
                    name,
                    &records,
                    &policy,
                    &dir.join("state"),
                    crate::unix_time(),
                    Some(patched.serial() - 1),
                )
                .unwrap();
                let whole = shape(
                    whole
                        .zone
                        .records
                        .iter()
                        .map(|record| record.as_record_ref()),
                );
                assert_eq!(served, whole, "as a whole signing");
            }
            let cost = signed.cost();
            costs.push((round, cost.visited, cost.signatures));
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        costs[0], costs[2],
        "the name added costs as much at both sizes"
    );
    assert_eq!(costs[1], costs[3], "the name removed too");
}

/// The same for a zone signed with NSEC3 (no opt-out, no salt): a name
/// added and then removed by a reload is signed as a window of the
/// served version (the edited owners, the apex and the chain's links
/// that change), patched, not built whole; the version served is the one
/// a whole signing of the file makes, and the records visited and the
/// signatures made are the same at 5,000 names and at 50,000.
#[test]
fn a_signed_nsec3_reload_adding_a_name_costs_the_change_not_the_zone() {
    let mut costs = Vec::new();
    for names in [5_000, 50_000] {
        let (dir, zone_file) = hosts_dir("tern-zones-window3", names);
        let text = |added: bool| {
            hosts_text(names, |i, text| {
                text.push_str(&host_line(i));
                if added && i == 7 {
                    text.push_str("h7x A 192.0.2.99\nh7x TXT \"added\"\n");
                }
            })
        };
        std::fs::write(&zone_file, text(false)).unwrap();
        let (origin, sources) = signed_example_with(&dir, &zone_file, 2, nsec3_policy());
        let name = tern_wire::name::Name::from_wire(&origin).unwrap();
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        for (round, added) in [true, false].into_iter().enumerate() {
            std::fs::write(&zone_file, text(added)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            let (patched, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert_eq!(patched.serial(), 2 + round as u32);
            assert!(patched.garbage_bytes() > 0, "patched, not built whole");
            let served = served_shape(patched);
            assert_eq!(served, shape(signed.records().unwrap().iter()));
            assert_eq!(
                served.0.iter().any(|record| record.0 == "h7x.example."),
                added
            );
            if names == 5_000 {
                let records = tern_zone::parse_bytes(
                    &std::fs::read(&zone_file).unwrap(),
                    &zone_file,
                    name,
                    &tern_zone::Options::default(),
                    &mut tern_zone::NoInclude,
                )
                .unwrap()
                .records;
                let policy = nsec3_policy();
                let whole = crate::signing::sign(
                    name,
                    &records,
                    &policy,
                    &dir.join("state"),
                    crate::unix_time(),
                    Some(patched.serial() - 1),
                )
                .unwrap();
                let whole = shape(
                    whole
                        .zone
                        .records
                        .iter()
                        .map(|record| record.as_record_ref()),
                );
                assert_eq!(served, whole, "as a whole signing");
            }
            let cost = signed.cost();
            costs.push((round, cost.visited, cost.signatures));
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        costs[0], costs[2],
        "the name added costs as much at both sizes"
    );
    assert_eq!(costs[1], costs[3], "the name removed too");
}

/// The policy of [`signed_example`] with NSEC3 (no opt-out, no salt).
fn nsec3_policy() -> crate::signing::Policy {
    let mut policy = crate::signing::Policy::new("p".to_string());
    policy.nsec3 = Some(crate::policy::Nsec3Policy::default());
    policy
}

/// A new, empty directory for a test of `names` hosts, named from
/// `prefix`, and its `example.zone`'s path.
fn hosts_dir(prefix: &str, names: usize) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("{prefix}-{names}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    (dir, zone_file)
}

/// The text of a zone of `names` hosts: the apex (SOA, NS, the name
/// server's address), then for each host `i` what `host` writes (most
/// often [`host_line`]).
fn hosts_text(names: usize, mut host: impl FnMut(usize, &mut String)) -> String {
    let mut text = String::from(
        "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
         ns A 192.0.2.1\n",
    );
    for i in 0..names {
        host(i, &mut text);
    }
    text
}

/// Host `i`'s address record: `hI A 10.x.y.z`.
fn host_line(i: usize) -> String {
    format!("h{i} A 10.{}.{}.{}\n", i >> 16, (i >> 8) & 255, i & 255)
}

/// The zone `origin` built whole from `records` (a signed version's).
fn built_whole(origin: tern_wire::name::Name<'_>, records: &Records) -> Zone {
    crate::bump::build(origin, records).unwrap()
}

/// The [`Shape`] of a served version's records.
fn served_shape(zone: &Zone) -> Shape {
    let mut cursor = tern_authority::RecordCursor::default();
    let mut records = Vec::new();
    while let Some(record) = zone.next_record(&mut cursor) {
        records.push(tern_zone::RecordRef {
            owner: record.owner,
            class: tern_wire::types::RClass::IN,
            ttl: record.ttl,
            rtype: record.rtype,
            rdata: record.rdata,
            location: tern_zone::Location::default(),
        });
    }
    shape(records.into_iter())
}

/// A name added to a signed zone's file, then removed (signed as a window,
/// the NSEC chain changes): the file's checks and its look for RRsets of
/// several TTLs read only the changed owner's, its ancestors' and the
/// apex's records: as many at 5,000 names as at
/// 50,000. An error at the changed owner (a CNAME beside its address) is
/// still found, and one that relates owners (an NS record) has the whole
/// file checked.
#[test]
fn a_signed_reload_checks_the_change_not_the_zone() {
    let mut checked = Vec::new();
    for names in [5_000, 50_000] {
        let (dir, zone_file) = hosts_dir("tern-zones-checked", names);
        let text = |extra: &str| {
            hosts_text(names, |i, text| {
                text.push_str(&host_line(i));
                if i == names / 2 {
                    text.push_str(extra);
                }
            })
        };
        std::fs::write(&zone_file, text("")).unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 2);
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        assert_eq!(
            stamp.signed().unwrap().cost().checked,
            2 * (names + 3),
            "the first load checks the whole file"
        );
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        // A name added below another (new.h1: h1 its ancestor), then
        // removed.
        for (round, extra) in ["new.h1 A 192.0.2.9\n", ""].into_iter().enumerate() {
            std::fs::write(&zone_file, text(extra)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(again.errors.is_empty(), "{:?}", again.errors);
            let (zone, stamp) = &again.zones[0];
            assert_eq!(zone.serial(), 2 + round as u32);
            let signed = stamp.signed().unwrap();
            checked.push(signed.cost().checked);
            previous = SignedServedZone(Arc::clone(zone), Arc::clone(signed));
        }
        if names == 5_000 {
            // A record added at a name that has records (no name added
            // or removed, no delegation edited): the edited owners and the
            // apex are checked, the apex with its glue (else its in-zone
            // NS target looks missing): no warning.
            std::fs::write(&zone_file, text("h1 TXT \"plain\"\n")).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(again.errors.is_empty(), "{:?}", again.errors);
            assert!(again.warnings.is_empty(), "{:?}", again.warnings);
            let (zone, stamp) = &again.zones[0];
            previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
            // A CNAME beside h1's address: rejected.
            std::fs::write(&zone_file, text("h1 CNAME h2\n")).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(again.zones.is_empty());
            assert!(
                again.errors[0].contains("another record exists beside CNAME"),
                "{:?}",
                again.errors
            );
            // A delegation added with its glue: its owners, the NS's
            // and the glue's, checked (the whole file until glue that
            // differs had the owners of the NS records naming it checked
            // instead).
            std::fs::write(&zone_file, text("sub NS ns.sub\nns.sub A 192.0.2.7\n")).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(again.errors.is_empty(), "{:?}", again.errors);
            assert!(
                !again.warnings.iter().any(|w| w.contains("sub.example.")),
                "{:?}",
                again.warnings
            );
            let (zone, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert!(signed.cost().checked < 20, "{:?}", signed.cost());
            previous = SignedServedZone(Arc::clone(zone), Arc::clone(signed));
            // Its glue removed, the NS kept: the NS's owner checked with
            // it, so the missing glue is still found.
            std::fs::write(&zone_file, text("sub NS ns.sub\n")).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(
                again
                    .warnings
                    .iter()
                    .any(|w| w.contains("ns.sub.example. has no A or AAAA")),
                "{:?}",
                again.warnings
            );
            assert!(again.zones[0].1.signed().unwrap().cost().checked < 20);
            // A delegation with two targets in the zone, then only the
            // first one's address changed (with a name added, so that
            // the owners changed are checked, not the records edited; the
            // unchanged target written before the changed one, outside
            // the region the reload read again):
            // the second target is checked with the delegation, its glue
            // found (before, only the changed address's owner was, and
            // `ns2.sub2` was warned of as missing glue); and the apex's
            // NS target `ns` with the apex (before, its glue looked
            // missing at every reload that added a name).
            let two = |address: u8| {
                let mut text = format!(
                    "sub2 NS ns1.sub2\nsub2 NS ns2.sub2\nns2.sub2 A 192.0.2.12\n\
                     ns1.sub2 A 192.0.2.{address}\n"
                );
                if address == 13 {
                    text.push_str("new2 A 192.0.2.14\n");
                }
                text
            };
            // Then the delegation edited without an address changed: a
            // DS added, then one of its two NS records removed (with that
            // target's address, occluded otherwise). Its NS targets in
            // the zone are checked with it (before, neither target was,
            // and both looked without glue).
            let ds = format!("sub2 DS 12345 13 2 {}\n", "ab".repeat(32));
            let steps = [
                ("address 11", two(11)),
                ("address 13", two(13)),
                ("a DS added", format!("{}{ds}", two(13))),
                (
                    "an NS removed",
                    format!(
                        "sub2 NS ns1.sub2\nns1.sub2 A 192.0.2.13\n\
                         new2 A 192.0.2.14\n{ds}"
                    ),
                ),
            ];
            for (step, file) in &steps {
                std::fs::write(&zone_file, text(file)).unwrap();
                let again = load_one(&sources, &origin, Some(&previous)).unwrap();
                assert!(again.errors.is_empty(), "{:?}", again.errors);
                assert!(again.warnings.is_empty(), "{step}: {:?}", again.warnings);
                let (zone, stamp) = &again.zones[0];
                let signed = stamp.signed().unwrap();
                assert!(signed.cost().checked < 20, "{:?}", signed.cost());
                previous = SignedServedZone(Arc::clone(zone), Arc::clone(signed));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        checked[..2],
        checked[2..],
        "a name added and removed checks as many records at both sizes"
    );
    assert!(checked.iter().all(|&count| count < 20), "{checked:?}");
}

/// A reload that signed only the owners it changed (the kept records
/// patched) saves no copy; a start after it signs from the older copy
/// the whole signing saved, and serves the edit signed, making only
/// the changed owner's and the SOA's signatures.
#[test]
fn a_start_after_a_patched_reload_signs_from_the_older_copy() {
    let (dir, zone_file) = small_example("tern-load-patched");
    let (origin, sources) = signed_example(&dir, &zone_file, 1);
    let saved = dir.join("state/signed/example.kept");
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    let whole = stamp.signed().unwrap().signatures().0;
    let saved_whole = std::fs::read(&saved).unwrap();
    let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    std::fs::write(&zone_file, small_example_text("192.0.2.20")).unwrap();
    let again = load_one(&sources, &origin, Some(&previous)).unwrap();
    let patched = again.zones[0].1.signed().unwrap();
    assert!(patched.records().unwrap().len() > 0);
    assert_eq!(patched.signatures().0, 2, "the edit took the patch path");
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        saved_whole,
        "a patched reload leaves the saved copy"
    );
    // A start: no previous version, the saved copy older than the file.
    let started = load_one(&sources, &origin, None).unwrap();
    let (zone, stamp) = &started.zones[0];
    let signatures = stamp.signed().unwrap().signatures().0;
    assert!(
        signatures < whole && signatures <= 3,
        "from the older copy: {signatures} of {whole}"
    );
    let www = tern_wire::name::NameBuf::from_text(b"www.example.", None).unwrap();
    let records = zone.owner_records(www.as_name());
    assert!(
        records
            .iter()
            .any(|record| record.rtype == tern_wire::types::RType::A
                && record.rdata == [192, 0, 2, 20]),
        "the edit served"
    );
    assert!(
        records
            .iter()
            .any(|record| record.rtype == tern_wire::types::RType::RRSIG),
        "and signed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A signed zone served at this version, with its signed records.
struct SignedServedZone(Arc<Zone>, Arc<SignedVersion>);

impl Previous for SignedServedZone {
    fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
        Some(false)
    }

    fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
        Vec::new()
    }

    fn count(&self) -> usize {
        1
    }

    fn serial(&self, _: &[u8]) -> Option<u32> {
        Some(self.0.serial())
    }

    fn signed(&self, _: &[u8]) -> Option<Arc<SignedVersion>> {
        Some(Arc::clone(&self.1))
    }

    fn served(&self, _: &[u8]) -> Option<Arc<Zone>> {
        Some(Arc::clone(&self.0))
    }
}

/// A signed (NSEC) zone reloaded with one record changed is served as
/// its previous version patched, not built whole, and the patched
/// version holds exactly the records a whole build of the signed
/// records holds; a version not the signed records' is not patched.
#[test]
fn a_signed_reload_patches_the_served_version() {
    let dir = std::env::temp_dir().join(format!("tern-zones-patch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    let text = |address: &str| {
        let mut text = String::from(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
             ns A 192.0.2.1\nsub NS ns.sub\nns.sub A 192.0.2.9\n*.wild TXT w\n",
        );
        for i in 0..50 {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i + 10));
        }
        text.push_str(&format!("www A {address}\nwww MX 10 mail\n"));
        text
    };
    std::fs::write(&zone_file, text("192.0.2.2")).unwrap();
    let (origin, sources) = signed_example(&dir, &zone_file, 1);
    let whole = |stamp: &Stamp| {
        let records = stamp.signed().unwrap().records().unwrap();
        built_whole(tern_wire::name::Name::from_wire(&origin).unwrap(), &records)
    };
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    assert_eq!(zone.garbage_bytes(), 0, "built whole");

    // One record changed: www's A (and so its RRSIG, and the SOA's).
    std::fs::write(&zone_file, text("192.0.2.20")).unwrap();
    let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    let again = load_one(&sources, &origin, Some(&previous)).unwrap();
    let (patched, stamp) = &again.zones[0];
    assert_eq!(patched.serial(), 2);
    assert!(patched.garbage_bytes() > 0, "patched, not built whole");
    assert!(same_records(patched, &whole(stamp)));

    // A name added and one removed: NSEC chain changes.
    std::fs::write(
        &zone_file,
        text("192.0.2.20")
            .replace("h7 A", "h7b A")
            .replace("h8 A 192.0.2.18\n", ""),
    )
    .unwrap();
    let previous = SignedServedZone(Arc::clone(patched), Arc::clone(stamp.signed().unwrap()));
    let third = load_one(&sources, &origin, Some(&previous)).unwrap();
    let (zone, stamp) = &third.zones[0];
    assert_eq!(zone.serial(), 3);
    assert!(
        zone.garbage_bytes() > patched.garbage_bytes(),
        "patched again"
    );
    assert!(same_records(zone, &whole(stamp)));

    // Served at another version than the signed records': built whole.
    std::fs::write(&zone_file, text("192.0.2.21")).unwrap();
    let previous = SignedServedZone(Arc::clone(patched), Arc::clone(stamp.signed().unwrap()));
    let fourth = load_one(&sources, &origin, Some(&previous)).unwrap();
    let (zone, stamp) = &fourth.zones[0];
    assert_eq!(zone.garbage_bytes(), 0, "built whole");
    assert!(same_records(zone, &whole(stamp)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stamp is kept for every zone, most of them unsigned: the signed
/// state is one pointer (main kept the re-sign time inline, 88 octets).
#[test]
fn a_stamp_is_small() {
    assert!(
        std::mem::size_of::<Stamp>() <= 80,
        "{}",
        std::mem::size_of::<Stamp>()
    );
}

/// A new directory named from `prefix` holding `example.zone`, the
/// small example zone ([`small_example_text`]) with www at 192.0.2.2.
fn small_example(prefix: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    std::fs::write(&zone_file, small_example_text("192.0.2.2")).unwrap();
    (dir, zone_file)
}

/// The small example zone's text, www at `address`.
fn small_example_text(address: &str) -> String {
    format!(
        "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
         ns A 192.0.2.1\nwww A {address}\nmail A 192.0.2.3\n"
    )
}

/// The zone `example.` from `zone_file`, signed with the default
/// policy on `threads` threads, its state under `dir`.
fn signed_example(dir: &Path, zone_file: &Path, threads: usize) -> (Origin, Sources) {
    signed_example_with(
        dir,
        zone_file,
        threads,
        crate::signing::Policy::new("p".to_string()),
    )
}

/// [`signed_example`] with `policy`.
fn signed_example_with(
    dir: &Path,
    zone_file: &Path,
    threads: usize,
    policy: crate::signing::Policy,
) -> (Origin, Sources) {
    let origin: Origin = b"\x07example\x00".to_vec().into();
    let policy = Arc::new(policy);
    let sources = Sources {
        dir: None,
        listed: vec![("example.".to_string(), zone_file.to_path_buf())],
        signing: Some(Signing::new(
            dir.join("state"),
            threads,
            vec![(origin.clone(), policy)],
        )),
    };
    (origin, sources)
}

/// A signed zone loaded again after an edit is signed from its
/// previous version: the changed RRset and the SOA signed, the rest
/// kept, and the difference from the version served handed on; its
/// serial is saved in the state directory (by the owner), and a start
/// (nothing served) signs above it.
#[test]
fn a_signed_zone_is_signed_again_from_its_previous_version() {
    let (dir, zone_file) = small_example("tern-zones-resign");
    let (origin, sources) = signed_example(&dir, &zone_file, 1);
    let first = load_all(&sources, None).unwrap();
    let signed = Arc::clone(first.zones[0].1.signed().unwrap());
    // SOA, NS, DNSKEY, CDS, CDNSKEY (the first CSK's DS submitted:
    // `cds-cdnskey: rollover`), NSEC at the apex; A and NSEC at each
    // of 3 names.
    assert_eq!(signed.signatures(), (12, 0));
    assert!(signed.take_change().is_none(), "signed whole");

    std::fs::write(&zone_file, small_example_text("192.0.2.20")).unwrap();
    let again = load_one(&sources, &origin, Some(&SignedServed(1, signed))).unwrap();
    let (zone, stamp) = &again.zones[0];
    assert_eq!(zone.serial(), 2);
    let version = stamp.signed().unwrap();
    assert_eq!(version.signatures(), (2, 10), "www's A and the SOA");
    let (from, change) = version.take_change().unwrap();
    assert_eq!(from, 1);
    let types = |records: &[tern_zone::Record]| {
        let mut types: Vec<(String, u16)> = records
            .iter()
            .map(|record| (record.owner.to_string(), record.rtype.0))
            .collect();
        types.sort();
        types
    };
    let expected = vec![
        ("example.".to_string(), 6),
        ("example.".to_string(), 46),
        ("www.example.".to_string(), 1),
        ("www.example.".to_string(), 46),
    ];
    assert_eq!(types(&change.deleted), expected);
    assert_eq!(types(&change.added), expected);
    assert!(version.take_change().is_none(), "taken once");

    // A start (nothing served) with a saved serial of 7 signs above it.
    crate::signed_serial::save_signed_serial(
        &dir.join("state"),
        LowerNameBuf::from_name(tern_wire::name::Name::from_wire(&origin).unwrap()),
        7,
    )
    .unwrap();
    let restarted = load_all(&sources, None).unwrap();
    assert_eq!(restarted.zones[0].0.serial(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each record of a signed zone but RRSIGs as (owner, type, TTL,
/// RDATA), and each RRSIG as (owner, type covered, key tag).
type Shape = (
    std::collections::BTreeSet<(String, u16, u32, Vec<u8>)>,
    std::collections::BTreeSet<(String, u16, u16)>,
);

fn shape<'r>(records: impl Iterator<Item = tern_zone::RecordRef<'r>>) -> Shape {
    let mut shape = Shape::default();
    for record in records {
        let owner = record.owner.to_lower().as_name().to_string();
        if record.rtype == tern_wire::types::RType::RRSIG {
            let covered = u16::from_be_bytes([record.rdata[0], record.rdata[1]]);
            let tag = u16::from_be_bytes([record.rdata[16], record.rdata[17]]);
            shape.1.insert((owner, covered, tag));
        } else {
            shape
                .0
                .insert((owner, record.rtype.0, record.ttl, record.rdata.to_vec()));
        }
    }
    shape
}

/// A CSK rollover started on a signed zone: its next version, signed
/// from the previous one, publishes the new CSK and has it sign the
/// DNSKEY, CDS and CDNSKEY RRsets beside the old one (the zone still by
/// the old one),
/// as a whole signing at that time does; the keys' next step is its
/// re-sign time, and the difference holds the DNSKEY RRset's change.
#[test]
fn a_rollover_step_signed_from_the_previous_version() {
    let dir = std::env::temp_dir().join(format!("tern-zones-roll-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    std::fs::write(
        &zone_file,
        "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 192.0.2.2\n",
    )
    .unwrap();
    let origin: Origin = b"\x07example\x00".to_vec().into();
    let name = NameBuf::from_text(b"example.", None).unwrap();
    let policy = Arc::new(crate::signing::Policy::new("p".to_string()));
    let state = dir.join("state");
    let sources = Sources {
        dir: None,
        listed: vec![("example.".to_string(), zone_file.clone())],
        signing: Some(Signing::new(
            state.clone(),
            1,
            vec![(origin.clone(), Arc::clone(&policy))],
        )),
    };
    let first = load_all(&sources, None).unwrap();
    let signed = Arc::clone(first.zones[0].1.signed().unwrap());
    let old_tag = {
        let keys = crate::keys::read_keys(&crate::keys::key_dir(&state, name.as_name()));
        keys.unwrap()[0].meta.key_tag
    };
    let now = crate::unix_time();
    let (new_tag, _) = crate::rollover::start(
        &crate::keys::key_dir(&state, name.as_name()),
        &policy,
        tern_dnssec::KeyRole::Csk,
        now,
    )
    .unwrap();

    let again = load_one(&sources, &origin, Some(&SignedServed(1, signed))).unwrap();
    let (zone, stamp) = &again.zones[0];
    let version = stamp.signed().unwrap();
    // The changed DNSKEY RRset by both CSKs, the CDS and CDNSKEY
    // RRsets by the new one (the old one's kept), and the SOA.
    assert_eq!(version.signatures(), (5, 8));
    let (_, change) = version.take_change().unwrap();
    assert!(change
        .added
        .iter()
        .any(|record| record.rtype == tern_wire::types::RType::DNSKEY));
    let keys = stamp.keys().unwrap();
    let next = keys.next_event.unwrap();
    assert_eq!(stamp.resign_at(), Some(next));
    assert!(stamp.key_event_first());

    let records = tern_zone::parse_bytes(
        &std::fs::read(&zone_file).unwrap(),
        &zone_file,
        name.as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .unwrap()
    .records;
    let whole = crate::signing::sign(
        name.as_name(),
        &records,
        &policy,
        &state,
        crate::unix_time(),
        Some(1),
    )
    .unwrap();
    assert_eq!(zone.serial(), 2);
    let whole_shape = shape(
        whole
            .zone
            .records
            .iter()
            .map(|record| record.as_record_ref()),
    );
    assert_eq!(shape(version.records().unwrap().iter()), whole_shape);
    let by = |tag: u16| whole_shape.1.iter().filter(|sig| sig.2 == tag).count();
    assert_eq!(by(new_tag), 3, "the new CSK signs the apex's keys only");
    assert!(by(old_tag) > 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

impl Previous for Served {
    fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
        Some(false)
    }

    fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
        Vec::new()
    }

    fn count(&self) -> usize {
        1
    }

    fn serial(&self, _: &[u8]) -> Option<u32> {
        Some(self.0)
    }
}

/// Reads includes from disk, then changes the file it read: an edit
/// made while the zone loads.
struct EditAfterRead;

impl tern_zone::Include for EditAfterRead {
    fn include(&mut self, from: &Path, target: &str) -> Result<tern_zone::IncludedFile, String> {
        let read = tern_zone::FileInclude.include(from, target)?;
        std::fs::write(&read.path, "www A 192.0.2.2\nextra A 192.0.2.3\n")
            .map_err(|err| err.to_string())?;
        Ok(read)
    }
}

#[test]
fn an_include_changed_during_the_load_differs_from_its_stamp() {
    let dir = std::env::temp_dir().join(format!("tern-zones-stamp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    std::fs::write(
        &zone_file,
        "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns.example.net.\n\
         $INCLUDE hosts.inc\n",
    )
    .unwrap();
    std::fs::write(dir.join("hosts.inc"), "www A 192.0.2.1\n").unwrap();
    let mut warnings = Vec::new();
    let (zone, stamp) = load_zone_with(
        "example.",
        &zone_file,
        &mut warnings,
        &mut EditAfterRead,
        None,
    )
    .ok()
    .unwrap();
    // The version loaded is the one read, before the edit ...
    assert_eq!(zone.record_count(), 3);
    assert_eq!(stamp.includes.len(), 1, "the include");
    // ... so the next reload must see the edit and rebuild the zone.
    assert!(
        !stamp.unchanged(&zone_file, FileStamp::of(&zone_file)),
        "the include was stamped after it changed: the edit would be missed"
    );
    // Unedited, a stamp stays the same.
    let (_, stamp) = load_zone_from("example.", &zone_file, &mut warnings).unwrap();
    assert!(stamp.unchanged(&zone_file, FileStamp::of(&zone_file)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A zone with a policy is built signed; when its keys do not read it
/// is not built, its failure is a signing one (not a zone-file error,
/// which would stop the start), and a served version is kept.
#[test]
fn a_zone_with_a_policy_is_signed_or_not_built() {
    let dir = std::env::temp_dir().join(format!("tern-zones-sign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("example.zone");
    std::fs::write(
        &zone_file,
        "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n",
    )
    .unwrap();
    let (origin, sources) = signed_example(&dir, &zone_file, 1);
    let loaded = load_all(&sources, None).unwrap();
    assert_eq!(
        (loaded.zones.len(), loaded.failed),
        (1, 0),
        "{:?}",
        loaded.errors
    );
    // SOA, NS, A, DNSKEY, two NSECs, the CDS and CDNSKEY of the
    // first CSK (its DS submitted: `cds-cdnskey: rollover`) and eight
    // RRSIGs.
    assert_eq!(loaded.zones[0].0.record_count(), 16);
    // The file's serial at first; it is signed again half a lifetime
    // (the default refresh: 7 of 14 days) from now, less up to the
    // default jitter (2 days).
    assert_eq!(loaded.zones[0].0.serial(), 1);
    let resign_at = loaded.zones[0].1.resign_at().unwrap();
    let half = crate::unix_time() + 7 * 86_400;
    assert!((half - 2 * 86_400 - 60..=half).contains(&resign_at));
    // Signed again over serial 1 with the file unchanged: serial 2; a
    // higher file serial is kept.
    let loaded = load_one(&sources, &origin, Some(&Served(1))).unwrap();
    assert_eq!(loaded.zones[0].0.serial(), 2);
    let loaded = load_all(&sources, Some(&Served(0))).unwrap();
    assert_eq!(loaded.zones[0].0.serial(), 1);
    let key_dir = crate::keys::key_dir(
        &dir.join("state"),
        parse_origin("example.").unwrap().as_name(),
    );
    let files: Vec<_> = std::fs::read_dir(&key_dir).unwrap().collect();
    assert_eq!(files.len(), 2, "a CSK's .pem and .meta");
    for file in files {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|suffix| suffix == "pem") {
            std::fs::write(&path, "not a key").unwrap();
        }
    }
    let loaded = load_one(&sources, &origin, Some(&Served(1))).unwrap();
    assert!(loaded.zones.is_empty());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!((loaded.failed, loaded.signing_failed), (1, 1));
    assert_eq!(loaded.kept, ["example."]);
    // Unsigned, the same file loads: 3 records.
    let unsigned = Sources {
        signing: None,
        ..sources
    };
    let loaded = load_all(&unsigned, None).unwrap();
    assert_eq!(loaded.zones[0].0.record_count(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A start (nothing served before) signs from the signed records the
/// last signing saved: with the file and keys unchanged and the
/// signatures far from expiry, it makes at most the SOA's; an edit
/// signs only what changed; a saved copy that does not read signs the
/// zone whole.
#[test]
fn a_start_signs_from_the_saved_signed_records() {
    let dir = std::env::temp_dir().join(format!("tern-load-saved-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("saved.zone");
    let text = "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
                ns A 192.0.2.1\nwww A 192.0.2.80\nmail A 192.0.2.25\n";
    std::fs::write(&zone_file, text).unwrap();
    let origin: Box<[u8]> = b"\x05saved\x04test\x00"[..].into();
    let policy = Arc::new(Policy::new("p".to_string()));
    let sources = Sources {
        dir: None,
        listed: vec![("saved.test.".to_string(), zone_file.clone())],
        signing: Some(Signing::new(
            dir.join("state"),
            1,
            vec![(origin.clone(), policy)],
        )),
    };
    let made = || {
        let loaded = load_one(&sources, &origin, None).unwrap();
        assert_eq!(loaded.zones.len(), 1);
        crate::sign_status::get(&origin)
            .unwrap()
            .last
            .unwrap()
            .signatures
    };
    let whole = made();
    assert!(whole >= 8, "signed whole: {whole}");
    assert!(dir.join("state/signed/saved.test.kept").exists());
    let again = made();
    assert!(
        again <= 1,
        "a start with nothing changed: {again} signatures"
    );
    std::fs::write(&zone_file, format!("{text}added A 192.0.2.7\n")).unwrap();
    let edited = made();
    assert!(
        edited > again && edited < whole,
        "an edit: {edited} of {whole}"
    );
    std::fs::write(dir.join("state/signed/saved.test.kept"), b"damaged").unwrap();
    assert!(made() > whole, "signed whole again");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One address changed, a name added and the name removed in a signed
/// zone's file of 5,000 names and of 50,000: each reload reads only the
/// part of the file that changed (`region`), as many records at both
/// sizes (with the file read whole at each reload: 5,003 against
/// 50,003).
#[test]
fn a_signed_reload_reads_the_change_not_the_file() {
    let mut parsed = Vec::new();
    let mut held = Vec::new();
    let mut copied = Vec::new();
    for names in [5_000, 50_000] {
        let (dir, zone_file) = hosts_dir("tern-zones-region", names);
        let text = |address: &str, added: bool| {
            hosts_text(names, |i, text| {
                if i == 7 {
                    text.push_str(&format!("h7 A {address}\n"));
                } else {
                    text.push_str(&host_line(i));
                }
                if added && i == 7 {
                    text.push_str("h7x A 192.0.2.99\n");
                }
            })
        };
        std::fs::write(&zone_file, text("192.0.2.2", false)).unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 2);
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        assert_eq!(stamp.signed().unwrap().cost().parsed, names + 3);
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        for (round, (address, added)) in [
            ("192.0.2.20", false),
            ("192.0.2.20", true),
            ("192.0.2.20", false),
        ]
        .into_iter()
        .enumerate()
        {
            std::fs::write(&zone_file, text(address, added)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            assert!(again.errors.is_empty(), "{:?}", again.errors);
            let (patched, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert_eq!(patched.serial(), 2 + round as u32);
            assert!(patched.garbage_bytes() > 0, "patched, not built whole");
            parsed.push((round, signed.cost().parsed));
            held.push((round, signed.text_held()));
            copied.push((round, signed.records_copied()));
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        parsed[..3],
        parsed[3..],
        "as many records read at both sizes"
    );
    assert!(parsed.iter().all(|&(_, parsed)| parsed <= 4), "{parsed:?}");
    // The previous text is compared through one buffer, its differing
    // part alone read whole: as many octets held at both sizes (the whole
    // copy, 5,000 or 50,000 names' worth, before).
    assert_eq!(held[..3], held[3..], "as many octets held at both sizes");
    assert!(
        held.iter()
            .all(|&(_, held)| held.is_some_and(|held| held > 0 && held <= 2 * 65_536)),
        "{held:?}"
    ); // The previous load's records are shared, not copied: the new
       // region's alone are (the whole list, 5,003 or 50,003 records, before).
    assert_eq!(
        copied[..3],
        copied[3..],
        "as many records copied at both sizes"
    );
    assert!(
        copied
            .iter()
            .all(|&(_, copied)| copied.is_some_and(|copied| copied <= 2)),
        "{copied:?}"
    );
}

/// Edits of a signed zone's file, one after another: each reload's
/// records (those the next one compares with) are the whole file's, at
/// the same lines, and the version served holds the records a whole
/// signing of the file makes; an edit in the tail (a record changed,
/// added, removed, at the start and the end of the tail, a line that
/// repeats its owner) reads only its part, one in the head (the SOA's
/// parenthesised lines), a `$TTL` or `$ORIGIN` line or a quoted string
/// added reads the file whole.
#[test]
fn a_signed_reload_read_in_part_is_a_whole_reading() {
    let names = 300;
    let (dir, zone_file) = hosts_dir("tern-zones-region-same", names);
    let base = {
        let mut text = String::from(
            "$TTL 300\n@ SOA ns hostmaster ( 1 3600\n 900 604800 300 )\n@ NS ns\n\
             ns A 192.0.2.1\n",
        );
        for i in 0..names {
            text.push_str(&host_line(i));
            if i % 10 == 3 {
                text.push_str("  AAAA 2001:db8::1\n; a comment\n\n");
            }
        }
        text
    };
    let (origin, sources) = signed_example(&dir, &zone_file, 1);
    let name = tern_wire::name::Name::from_wire(&origin).unwrap();
    std::fs::write(&zone_file, &base).unwrap();
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    let whole_count = names + names / 10 + 3;
    // Each edit from the text before it; whether it is read in part.
    let mut text = base.clone();
    type Edit = Box<dyn Fn(&str) -> String>;
    let edits: Vec<(&str, Edit, bool)> = vec![
        (
            "address",
            Box::new(|t: &str| t.replace("h7 A 10.0.0.7\n", "h7 A 192.0.2.7\n")),
            true,
        ),
        (
            "added",
            Box::new(|t: &str| t.replace("h9 A", "h8x A 192.0.2.8\nh9 A")),
            true,
        ),
        (
            "removed",
            Box::new(|t: &str| t.replace("h8x A 192.0.2.8\n", "")),
            true,
        ),
        (
            "first host",
            Box::new(|t: &str| t.replace("h0 A 10.0.0.0\n", "h0 A 10.0.0.100\n")),
            true,
        ),
        (
            "last host",
            Box::new(|t: &str| t.replace("h299 A 10.0.1.43\n", "h299 A 10.0.1.44\n")),
            true,
        ),
        (
            "appended",
            Box::new(|t: &str| format!("{t}z TXT last\n")),
            true,
        ),
        (
            "owner repeated",
            Box::new(|t: &str| {
                t.replacen(
                    "h13 A 10.0.0.13\n  AAAA 2001:db8::1\n",
                    "h13 A 10.0.0.13\n  AAAA 2001:db8::2\n",
                    1,
                )
            }),
            true,
        ),
        (
            "owner line removed",
            Box::new(|t: &str| t.replacen("h23 A 10.0.0.23\n", "", 1)),
            true,
        ),
        (
            "SOA",
            Box::new(|t: &str| t.replace(" 900 604800", " 901 604800")),
            false,
        ),
        (
            "$TTL",
            Box::new(|t: &str| t.replace("$TTL 300", "$TTL 600")),
            false,
        ),
        (
            "$ORIGIN",
            Box::new(|t: &str| t.replace("h50 A", "$ORIGIN example.\nh50 A")),
            false,
        ),
        (
            "after the directive",
            Box::new(|t: &str| t.replace("h60 A 10.0.0.60\n", "h60 A 10.0.0.61\n")),
            true,
        ),
        (
            "quoted",
            Box::new(|t: &str| t.replace("h70 A", "h70 TXT \"q\"\nh70 A")),
            false,
        ),
    ];
    for (round, (what, edit, in_part)) in edits.iter().enumerate() {
        let next = edit(&text);
        assert_ne!(next, text, "{what}");
        text = next;
        std::fs::write(&zone_file, &text).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        assert!(again.errors.is_empty(), "{what}: {:?}", again.errors);
        let (served, stamp) = &again.zones[0];
        let signed = stamp.signed().unwrap();
        assert_eq!(served.serial(), 2 + round as u32, "{what}");
        let parsed = signed.cost().parsed;
        assert_eq!(
            parsed < whole_count,
            *in_part,
            "{what}: {parsed} records read"
        );
        // The previous text was compared with the file, read in part or
        // not: what that held is counted.
        let held = signed.text_held();
        assert!(held.is_some_and(|held| held > 0), "{what}: {held:?} held");
        let whole = tern_zone::parse_bytes(
            text.as_bytes(),
            &zone_file,
            name,
            &tern_zone::Options::default(),
            &mut tern_zone::NoInclude,
        )
        .unwrap()
        .records;
        let base = signed.edit_base.as_ref().unwrap();
        let kept: Vec<tern_zone::Record> = base.unsigned.iter().map(|r| r.to_record()).collect();
        assert_eq!(kept, whole, "{what}: the records kept for the next reload");
        let policy = crate::signing::Policy::new("p".to_string());
        let signed_whole = crate::signing::sign(
            name,
            &whole,
            &policy,
            &dir.join("state"),
            crate::unix_time(),
            Some(served.serial() - 1),
        )
        .unwrap();
        let signed_whole = shape(
            signed_whole
                .zone
                .records
                .iter()
                .map(|record| record.as_record_ref()),
        );
        assert_eq!(
            served_shape(served),
            signed_whole,
            "{what}: as a whole signing"
        );
        previous = SignedServedZone(Arc::clone(served), Arc::clone(signed));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

mod dname;
mod nsec;
mod nsec3;
