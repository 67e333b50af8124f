//! Reloads of a zone signed with NSEC3: the cases past a name added or
//! removed (`a_signed_nsec3_reload_adding_a_name_costs_the_change_not_the_zone`
//! in the parent): empty non-terminals that go with the last name below
//! them, owner names in mixed case, the chain's parameters changed.

use super::*;

/// The zone `example.` of `names` hosts (each [`host_line`]) with what
/// `extra` writes after host 7, signed with `policy` and reloaded once per
/// round (`extra(round)`; round 0 is the first load), at 5,000 names and
/// at 50,000: each reload is signed as a window (patched, not built
/// whole), its version served holds its kept records, and, at the
/// smaller size, the records a whole signing of the same file makes. The
/// records visited and signatures made per reload, at both sizes.
fn reloads(
    prefix: &str,
    rounds: usize,
    policy: &dyn Fn() -> crate::signing::Policy,
    extra: &dyn Fn(usize) -> String,
) -> Vec<Vec<(usize, usize)>> {
    let mut costs = Vec::new();
    for names in [5_000, 50_000] {
        let (dir, zone_file) = hosts_dir(prefix, names);
        let text = |round: usize| {
            hosts_text(names, |i, text| {
                text.push_str(&host_line(i));
                if i == 7 {
                    text.push_str(&extra(round));
                }
            })
        };
        std::fs::write(&zone_file, text(0)).unwrap();
        let (origin, sources) = signed_example_with(&dir, &zone_file, 2, policy());
        let name = tern_wire::name::Name::from_wire(&origin).unwrap();
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        let mut size = Vec::new();
        for round in 1..=rounds {
            std::fs::write(&zone_file, text(round)).unwrap();
            let again = load_one(&sources, &origin, Some(&previous)).unwrap();
            let (patched, stamp) = &again.zones[0];
            let signed = stamp.signed().unwrap();
            assert_eq!(patched.serial(), 1 + round as u32, "round {round}");
            assert!(
                patched.garbage_bytes() > 0,
                "round {round}: patched, not built whole"
            );
            let served = served_shape(patched);
            assert_eq!(served, shape(signed.records().unwrap().iter()));
            if names == 5_000 {
                assert_eq!(
                    served,
                    whole_signing(name, &zone_file, &policy(), &dir, patched.serial() - 1),
                    "round {round}: as a whole signing"
                );
            }
            let cost = signed.cost();
            size.push((cost.visited, cost.signatures));
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        costs.push(size);
        let _ = std::fs::remove_dir_all(&dir);
    }
    costs
}

/// The [`Shape`] of a whole signing of `zone_file` with `policy` above
/// `serial`.
fn whole_signing(
    name: tern_wire::name::Name<'_>,
    zone_file: &Path,
    policy: &crate::signing::Policy,
    dir: &Path,
    serial: u32,
) -> Shape {
    let records = tern_zone::parse_bytes(
        &std::fs::read(zone_file).unwrap(),
        zone_file,
        name,
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .unwrap()
    .records;
    let whole = crate::signing::sign(
        name,
        &records,
        policy,
        &dir.join("state"),
        crate::unix_time(),
        Some(serial),
    )
    .unwrap();
    shape(
        whole
            .zone
            .records
            .iter()
            .map(|record| record.as_record_ref()),
    )
}

/// Names removed below empty non-terminals, then added again: `x.e7`
/// removed (`e7` keeps `y.e7` below it), then `y.e7` and `z.d.e9`
/// removed (`e7`, `d.e9` and `e9` go with them: their NSEC3 links go),
/// then all three added again (the links come back). Each reload is
/// signed as a window, as a whole signing would sign the file, and visits
/// as many records and makes as many signatures at 5,000 names as at
/// 50,000. Before the served version's names directly below a name were
/// asked ([`tern_authority::Zone::child_count`]), a name removed below an
/// empty non-terminal made the reload sign the whole zone again.
#[test]
fn a_signed_nsec3_reload_removing_names_below_empty_non_terminals_costs_the_change() {
    let extra = |round: usize| {
        let mut text = String::new();
        if round != 1 && round != 2 {
            text.push_str("x.e7 A 192.0.2.71\n");
        }
        if round != 2 {
            text.push_str("y.e7 A 192.0.2.72\nz.d.e9 TXT \"deep\"\n");
        }
        text
    };
    let costs = reloads("tern-zones-ent3", 3, &nsec3_policy, &extra);
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}
