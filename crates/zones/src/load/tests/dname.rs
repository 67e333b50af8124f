//! Reloads of a signed zone that edit DNAMEs below the apex (NSEC, NSEC3,
//! NSEC3 with opt-out): each signed as a window, as a whole signing signs
//! the file, and costing as much at 5,000 names as at 50,000.

use tern_wire::types::RType;

use super::*;

/// The file's text after host 7 in each round: `dn5` an address that
/// gains a DNAME (round 1) and loses it (round 3); `dn7` a DNAME made at a
/// new name (round 1), its target changed (round 2), removed while a name
/// is added below it (round 3: `dn7` an empty non-terminal), made again
/// once that name is removed (round 4), and removed with its name (round
/// 5).
fn extra(round: usize) -> String {
    let mut text = String::from("dn5 A 192.0.2.50\n");
    if (1..=2).contains(&round) {
        text.push_str("dn5 DNAME example.org.\n");
    }
    match round {
        1 | 4 => text.push_str("dn7 DNAME example.net.\n"),
        2 => text.push_str("dn7 DNAME example.org.\n"),
        3 => text.push_str("a.dn7 A 192.0.2.90\n"),
        _ => {}
    }
    text
}

/// The types the RRSIGs at the name `text` cover.
fn signed_types(zone: &Zone, text: &str) -> Vec<RType> {
    let owner = tern_wire::name::NameBuf::from_text(text.as_bytes(), None).unwrap();
    let mut covered: Vec<RType> = zone
        .owner_records(owner.as_name())
        .iter()
        .filter(|record| record.rtype == RType::RRSIG)
        .map(|record| RType(u16::from_be_bytes([record.rdata[0], record.rdata[1]])))
        .collect();
    covered.sort_unstable();
    covered.dedup();
    covered
}

/// What each round serves at `dn5`, `dn7` and `a.dn7` (signed, or gone).
fn check(round: usize, zone: &Zone) {
    let dname = |text: &str| signed_types(zone, text).contains(&RType::DNAME);
    assert_eq!(dname("dn5.example."), round <= 2, "round {round}: dn5");
    assert!(
        signed_types(zone, "dn5.example.").contains(&RType::A),
        "round {round}: dn5's address"
    );
    assert_eq!(
        dname("dn7.example."),
        matches!(round, 1 | 2 | 4),
        "round {round}: dn7"
    );
    assert_eq!(
        signed_types(zone, "a.dn7.example.").contains(&RType::A),
        round == 3,
        "round {round}: a.dn7"
    );
}

/// The reloads of [`extra`] with `policy`: every round a window (before,
/// each DNAME edit signed the zone whole: `find_edits` declined it), as
/// much at both sizes.
fn dname_reloads(prefix: &str, policy: &dyn Fn() -> crate::signing::Policy) {
    let costs = super::nsec3::reloads_with(prefix, 5, policy, &extra, &check, &|_| false);
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}

#[test]
fn a_signed_nsec_reload_editing_dnames_costs_the_change() {
    dname_reloads("tern-zones-dname", &|| {
        crate::signing::Policy::new("p".to_string())
    });
}

#[test]
fn a_signed_nsec3_reload_editing_dnames_costs_the_change() {
    dname_reloads("tern-zones-dname3", &nsec3_policy);
}

#[test]
fn a_signed_opt_out_nsec3_reload_editing_dnames_costs_the_change() {
    dname_reloads("tern-zones-dname3o", &super::nsec3::opt_out_policy);
}

/// A DNAME made above names the reload does not touch: the file has
/// records below a DNAME, an error of the whole file's check, which the
/// reload reports (it is not signed as a window of the edited owners,
/// whose check would not see those names). The changed owners' check
/// finds it: the warning of a delegation without glue, which the whole
/// file's check repeats (as before the DNAME was checked with the names
/// below it: the reload was signed whole), is not repeated.
#[test]
fn a_dname_made_above_names_fails_the_reload() {
    for policy in [crate::signing::Policy::new("p".to_string()), nsec3_policy()] {
        let (dir, zone_file) = hosts_dir("tern-zones-dnameabove", 50);
        let text = |dname: bool| {
            hosts_text(50, |i, text| {
                text.push_str(&host_line(i));
                if i == 7 {
                    text.push_str("a.up8 A 192.0.2.81\nsub NS ns.sub\n");
                    if dname {
                        text.push_str("up8 DNAME example.net.\n");
                    }
                }
            })
        };
        std::fs::write(&zone_file, text(false)).unwrap();
        let (origin, sources) = signed_example_with(&dir, &zone_file, 2, policy);
        let first = load_all(&sources, None).unwrap();
        let no_glue = |warnings: &[String]| {
            warnings
                .iter()
                .filter(|w| w.contains("ns.sub.example. has no A or AAAA"))
                .count()
        };
        assert_eq!(no_glue(&first.warnings), 1, "{:?}", first.warnings);
        let (zone, stamp) = &first.zones[0];
        let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        std::fs::write(&zone_file, text(true)).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        assert!(again.zones.is_empty(), "a DNAME above a.up8 loaded");
        assert!(
            again
                .errors
                .iter()
                .any(|error| error.contains("child record exists under DNAME")),
            "{:?}",
            again.errors
        );
        assert_eq!(no_glue(&again.warnings), 0, "{:?}", again.warnings);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A reload that adds more DNAMEs than [`super::super::changed::MAX_CHECKED_DNAMES`]
/// has the whole file checked (each owner would be compared with every
/// DNAME: 2,000 DNAMEs in a zone of a million records, 2e9 compares),
/// as many as that a window of the changed owners: the records checked
/// counted.
#[test]
fn a_reload_adding_many_dnames_checks_the_whole_file() {
    let names = 1_000;
    let most = super::super::changed::MAX_CHECKED_DNAMES;
    let (dir, zone_file) = hosts_dir("tern-zones-dnamemany", names);
    let text = |dnames: usize| {
        hosts_text(names, |i, text| {
            text.push_str(&host_line(i));
            // Apart, so that the reload's difference finds them.
            if i % 8 == 0 && i / 8 < dnames {
                text.push_str(&format!("d{i} DNAME example.net.\n"));
            }
        })
    };
    std::fs::write(&zone_file, text(0)).unwrap();
    let (origin, sources) = signed_example(&dir, &zone_file, 2);
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    let mut checked = Vec::new();
    for dnames in [most, most + 1] {
        std::fs::write(&zone_file, text(dnames)).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        assert!(again.errors.is_empty(), "{:?}", again.errors);
        let (zone, stamp) = &again.zones[0];
        let signed = stamp.signed().unwrap();
        checked.push(signed.cost().checked);
        previous = SignedServedZone(Arc::clone(zone), Arc::clone(signed));
        // Back to none, so that the next round adds them all.
        std::fs::write(&zone_file, text(0)).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        let (zone, stamp) = &again.zones[0];
        previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    }
    // The changed owners (each DNAME's, its address's) and the apex's;
    // then every record of the file.
    assert!(checked[0] < 4 * most, "{checked:?}");
    assert!(checked[1] > names, "{checked:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
