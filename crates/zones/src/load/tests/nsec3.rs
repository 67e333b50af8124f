//! Reloads of a zone signed with NSEC3: the cases past a name added or
//! removed (`a_signed_nsec3_reload_adding_a_name_costs_the_change_not_the_zone`
//! in the parent): empty non-terminals that go with the last name below
//! them, owner names in mixed case, the chain's parameters changed.

use tern_wire::types::RType;

use super::*;

/// The zone `example.` of `names` hosts (each [`host_line`]) with what
/// `extra` writes after host 7, signed with `policy` and reloaded once per
/// round (`extra(round)`; round 0 is the first load), at 5,000 names and
/// at 50,000: each reload is signed as a window (patched, not built
/// whole), its version served holds its kept records and passes `check`
/// (given the round), and, at the smaller size, the records a whole
/// signing of the same file makes. The records visited and signatures
/// made per reload, at both sizes.
fn reloads(
    prefix: &str,
    rounds: usize,
    policy: &dyn Fn() -> crate::signing::Policy,
    extra: &dyn Fn(usize) -> String,
    check: &dyn Fn(usize, &Zone),
) -> Vec<Vec<(usize, usize)>> {
    reloads_with(prefix, rounds, policy, extra, check, &|_| false)
}

/// [`reloads`], the rounds `whole` names allowed to sign the zone whole
/// (a window declined): such a round is still checked (its version holds
/// its kept records, passes `check` and is what a whole signing makes),
/// but neither required to be patched nor counted in the costs.
pub(super) fn reloads_with(
    prefix: &str,
    rounds: usize,
    policy: &dyn Fn() -> crate::signing::Policy,
    extra: &dyn Fn(usize) -> String,
    check: &dyn Fn(usize, &Zone),
    whole: &dyn Fn(usize) -> bool,
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
                whole(round) || patched.garbage_bytes() > 0,
                "round {round}: patched, not built whole"
            );
            let served = served_shape(patched);
            assert_eq!(served, shape(signed.records().unwrap().iter()));
            check(round, patched);
            if names == 5_000 {
                // The signatures at the owners that changed verify (the
                // comparison below reads their types and key tags only).
                let verified = crate::verified::assert_changed_rrsigs_verify(&previous.0, patched);
                assert!(verified > 0, "round {round}");
                assert_eq!(
                    served,
                    whole_signing(name, &zone_file, &policy(), &dir, patched.serial() - 1),
                    "round {round}: as a whole signing"
                );
            }
            let cost = signed.cost();
            // The widening's passes over the file (a cut made or removed
            // above other names, an opt-out empty non-terminal): one
            // each at most, none for the other edits.
            let lines = text(round).lines().count();
            eprintln!(
                "{names} names, round {round}: {} file records scanned by the widening",
                cost.scanned
            );
            assert!(cost.scanned <= 2 * lines, "round {round}: {cost:?}");
            if !whole(round) {
                size.push((cost.visited, cost.signatures));
            }
            previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
        }
        costs.push(size);
        let _ = std::fs::remove_dir_all(&dir);
    }
    costs
}

/// The NSEC3 hash of the name `text` (presentation form) with these
/// parameters.
fn hash_of(text: &str, iterations: u16, salt: &[u8]) -> tern_dnssec::nsec3::Hash {
    let owner = tern_wire::name::NameBuf::from_text(text.as_bytes(), None).unwrap();
    tern_dnssec::nsec3::nsec3_hash(owner.as_name(), iterations, salt)
}

/// Whether `zone`'s NSEC3 chain has a link for the name `text`.
pub(super) fn has_link(zone: &Zone, text: &str) -> bool {
    let (iterations, salt) = zone.nsec3_chain_params().expect("an NSEC3 chain");
    !zone
        .nsec3_link_records(&hash_of(text, iterations, salt))
        .is_empty()
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
    let costs = reloads("tern-zones-ent3", 3, &nsec3_policy, &extra, &|_, _| {});
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}

/// Owner names in mixed case in the file of a zone signed with NSEC3: a
/// name added (`NewName.Sub7`, below the empty non-terminal `Sub7`),
/// a record changed at `MiXeD7`, then the name removed, each reload
/// signed as a window, as a whole signing signs the file, and costing as
/// much at 5,000 names as at 50,000. The links are the hashes of the
/// lowercased names (RFC 5155 section 5): `newname.sub7.example.`'s and
/// `sub7.example.`'s link is in the chain exactly while the name is.
#[test]
fn a_signed_nsec3_reload_of_mixed_case_owners_hashes_them_lowercased() {
    let extra = |round: usize| {
        let mut text = String::from("MiXeD7 TXT \"mixed\"\n");
        if round == 1 || round == 2 {
            text.push_str("NewName.Sub7 A 192.0.2.77\n");
        }
        if round >= 2 {
            text.push_str("MiXeD7 A 192.0.2.78\n");
        }
        text
    };
    let check = |round: usize, zone: &Zone| {
        for name in ["newname.sub7.example.", "sub7.example."] {
            assert_eq!(
                has_link(zone, name),
                round == 1 || round == 2,
                "round {round}: the link of {name}"
            );
        }
        assert!(has_link(zone, "mixed7.example."), "mixed7's link");
    };
    let costs = reloads("tern-zones-case3", 3, &nsec3_policy, &extra, &check);
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}

/// A reload whose policy changes the NSEC3 chain's parameters (no salt
/// and no further iteration, then 4 octets of salt and 1 iteration)
/// signs the whole zone again with a new chain: the served version's
/// chain has the new parameters, the link of each name is its hash with
/// them and none is left with the old ones, as many links as a whole
/// signing makes, and every other record as that whole signing's (its
/// salt being its own, the NSEC3 records and the NSEC3PARAM's salt
/// compared apart). The reload after it, a name added, is a window again.
#[test]
fn a_signed_nsec3_reload_with_new_parameters_makes_a_new_chain() {
    let names = 2_000;
    let (dir, zone_file) = hosts_dir("tern-zones-params3", names);
    let text = |round: usize| {
        hosts_text(names, |i, text| {
            text.push_str(&host_line(i));
            if i == 7 && round >= 2 {
                text.push_str("h7x A 192.0.2.99\n");
            }
        })
    };
    std::fs::write(&zone_file, text(0)).unwrap();
    let (origin, sources) = signed_example_with(&dir, &zone_file, 2, nsec3_policy());
    let name = tern_wire::name::Name::from_wire(&origin).unwrap();
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    assert_eq!(zone.nsec3_chain_params(), Some((0, &[][..])));
    let mut previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    let salted = || {
        let mut policy = crate::signing::Policy::new("p".to_string());
        policy.nsec3 = Some(crate::policy::Nsec3Policy {
            iterations: 1,
            salt_length: 4,
            ..crate::policy::Nsec3Policy::default()
        });
        policy
    };
    let (_, sources) = signed_example_with(&dir, &zone_file, 2, salted());
    let apart = |shape: Shape| {
        let is_chain = |rtype: u16| rtype == RType::NSEC3.0 || rtype == RType::NSEC3PARAM.0;
        let links = shape.0.iter().filter(|r| r.1 == RType::NSEC3.0).count();
        let rest: Shape = (
            shape.0.into_iter().filter(|r| !is_chain(r.1)).collect(),
            shape.1.into_iter().filter(|r| !is_chain(r.1)).collect(),
        );
        (links, rest)
    };
    for round in 1..=2 {
        std::fs::write(&zone_file, text(round)).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        let (served, stamp) = &again.zones[0];
        let signed = stamp.signed().unwrap();
        let (iterations, salt) = served.nsec3_chain_params().expect("an NSEC3 chain");
        assert_eq!((iterations, salt.len()), (1, 4), "round {round}");
        for owner in ["example.", "ns.example.", "h0.example.", "h1999.example."] {
            let new = hash_of(owner, iterations, salt);
            assert!(!served.nsec3_link_records(&new).is_empty(), "{owner}");
            let old = hash_of(owner, 0, &[]);
            assert!(served.nsec3_link_records(&old).is_empty(), "{owner}");
        }
        let shape = served_shape(served);
        assert_eq!(shape, self::shape(signed.records().unwrap().iter()));
        let whole = whole_signing(name, &zone_file, &salted(), &dir, served.serial() - 1);
        assert_eq!(
            apart(shape),
            apart(whole),
            "round {round}: as a whole signing"
        );
        let cost = signed.cost();
        if round == 1 {
            assert!(
                cost.visited > 4 * names,
                "round 1: the whole zone, {cost:?}"
            );
        } else {
            assert!(cost.visited < 200, "round 2: a window, {cost:?}");
        }
        previous = SignedServedZone(Arc::clone(served), Arc::clone(signed));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The policy of [`nsec3_policy`] with opt-out.
pub(super) fn opt_out_policy() -> crate::signing::Policy {
    let mut policy = nsec3_policy();
    if let Some(nsec3) = policy.nsec3.as_mut() {
        nsec3.opt_out = true;
    }
    policy
}

/// A zone signed with NSEC3 with opt-out (insecure delegations `ins7` and
/// `d.sub7`, the empty non-terminal `sub7` above the latter left out of
/// the chain with it, a secure delegation `sec7` with glue): a name
/// added, a name added below `sub7` (whose link then comes), the first
/// name removed, glue added below `d.sub7`, each reload signed as a
/// window, as a whole signing signs the file, and costing as much at
/// 5,000 names as at 50,000. The DS of `x.e8` removed (round 3: `e8`
/// keeps only the insecure delegations `x.e8` and `y.e8` below it, its
/// link goes), and `new.sub7` removed (round 5: `sub7` keeps only the
/// insecure `d.sub7` below it, its link goes): the names below `e8` and
/// `sub7` are made edited owners, so that the window sees that none of
/// them stays in the chain. Before, every reload of an opt-out zone
/// signed the whole zone; then, until those names were made edited
/// owners, rounds 3 and 5.
#[test]
fn a_signed_opt_out_nsec3_reload_costs_the_change() {
    let extra = |round: usize| {
        let mut text = String::from(
            "ins7 NS ns.example.net.\nd.sub7 NS ns.example.net.\n\
             sec7 NS ns.sec7\nsec7 DS 12345 13 2 \
             0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
             ns.sec7 A 192.0.2.70\nx.e8 NS ns.example.net.\ny.e8 NS ns.example.net.\n",
        );
        if round < 3 {
            text.push_str(
                "x.e8 DS 12345 13 2 \
                 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
            );
        }
        if round == 1 || round == 2 {
            text.push_str("h7x A 192.0.2.99\n");
        }
        if (2..=4).contains(&round) {
            text.push_str("new.sub7 TXT \"new\"\n");
        }
        if round >= 4 {
            text.push_str("ns.d.sub7 A 192.0.2.71\n");
        }
        text
    };
    let check = |round: usize, zone: &Zone| {
        let link = |text: &str| has_link(zone, text);
        assert!(
            !link("ins7.example."),
            "round {round}: an insecure delegation"
        );
        assert!(
            !link("d.sub7.example."),
            "round {round}: an insecure delegation"
        );
        assert_eq!(
            link("sub7.example."),
            (2..=4).contains(&round),
            "round {round}: sub7"
        );
        assert!(!link("ns.d.sub7.example."), "round {round}: glue");
        assert!(link("sec7.example."), "round {round}: a secure delegation");
        assert_eq!(link("x.e8.example."), round < 3, "round {round}: x.e8");
        assert_eq!(link("e8.example."), round < 3, "round {round}: e8");
        assert!(!link("y.e8.example."), "round {round}: y.e8");
    };
    let costs = reloads("tern-zones-optout3", 5, &opt_out_policy, &extra, &check);
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}

/// Delegations edited by reloads of a zone signed with NSEC3, with
/// opt-out (`opt_out`) or without: `del7` made (its NS target out of the
/// zone), made secure by a DS, insecure again, removed; the delegation
/// `both7` and its glue `ns.both7` added in one reload (round 1: whole
/// before glue that differs had only the NS records naming it checked
/// with it), removed in one; then the secure
/// delegation `sec7` removed with its glue `ns.sec7`; then a delegation
/// made at the empty non-terminal `up7` above names the reload does not
/// edit (`x.up7`, `a.b.up7` below the empty non-terminal `b.up7`, the
/// secure delegation `d.up7` with its glue: their links go), the glue
/// `x.up7` changed in place, and `up7` removed (the links come back).
/// Each reload is signed as a window, as a whole signing signs the file,
/// and costs as much at 5,000 names as at 50,000. Before, each signed the
/// whole zone (`edited::find_edits` refused an NS or DS that differs;
/// then, until the names below a cut made or removed were made edited
/// owners, the rounds of `up7`).
fn delegation_reloads(prefix: &str, policy: &dyn Fn() -> crate::signing::Policy, opt_out: bool) {
    let extra = |round: usize| {
        let mut text = format!(
            "x.up7 A 192.0.2.{}\na.b.up7 A 192.0.2.73\nd.up7 NS ns.d.up7\n\
             d.up7 DS 12345 13 2 \
             0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
             ns.d.up7 A 192.0.2.74\n",
            if round == 7 { 79 } else { 71 }
        );
        if (6..=7).contains(&round) {
            text.push_str("up7 NS x.up7\n");
        }
        if round < 5 {
            text.push_str(
                "sec7 NS ns.sec7\nsec7 DS 12345 13 2 \
                 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
                 ns.sec7 A 192.0.2.70\n",
            );
        }
        if (1..=3).contains(&round) {
            text.push_str("del7 NS ns.example.net.\n");
        }
        if (1..=4).contains(&round) {
            text.push_str("both7 NS ns.both7\nns.both7 A 192.0.2.80\n");
        }
        if round == 2 {
            text.push_str(
                "del7 DS 54321 13 2 \
                 fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n",
            );
        }
        text
    };
    let check = |round: usize, zone: &Zone| {
        let link = |text: &str| has_link(zone, text);
        let del7 = match round {
            2 => true,
            1 | 3 => !opt_out,
            _ => false,
        };
        assert_eq!(link("del7.example."), del7, "round {round}: del7");
        assert_eq!(link("sec7.example."), round < 5, "round {round}: sec7");
        assert!(!link("ns.sec7.example."), "round {round}: glue");
        assert_eq!(
            link("both7.example."),
            (1..=4).contains(&round) && !opt_out,
            "round {round}: both7"
        );
        assert!(!link("ns.both7.example."), "round {round}: glue");
        let below_up7 = !(6..=7).contains(&round);
        for name in ["x.up7", "a.b.up7", "b.up7", "d.up7"] {
            assert_eq!(
                link(&format!("{name}.example.")),
                below_up7,
                "round {round}: {name}"
            );
        }
        assert_eq!(
            link("up7.example."),
            below_up7 || !opt_out,
            "round {round}: up7"
        );
        assert!(!link("ns.d.up7.example."), "round {round}: glue");
    };
    let costs = reloads(prefix, 8, policy, &extra, &check);
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}

#[test]
fn a_signed_nsec3_reload_editing_delegations_costs_the_change() {
    delegation_reloads("tern-zones-n3deleg", &nsec3_policy, false);
}

#[test]
fn a_signed_opt_out_nsec3_reload_editing_delegations_costs_the_change() {
    delegation_reloads("tern-zones-n3odeleg", &opt_out_policy, true);
}

/// A delegation `up7` removed by a reload of a zone signed whole with it
/// (the builder gave the names below it no hashes): the window's patch
/// hashes the empty non-terminals `c.up7` and `b.c.up7` it flags again
/// without touching them, so that the answers with DO for them and for
/// names below them are a whole build's of the same records. Before,
/// they kept no hash, and their proofs differed.
#[test]
fn a_cut_removed_from_a_zone_signed_whole_with_it_proves_the_names_below() {
    let (dir, zone_file) = hosts_dir("tern-zones-n3uncut", 100);
    let text = |cut: bool| {
        hosts_text(100, |i, text| {
            text.push_str(&host_line(i));
            if i == 7 {
                text.push_str("x.up7 A 192.0.2.71\na.b.c.up7 A 192.0.2.73\n");
                if cut {
                    text.push_str("up7 NS x.up7\n");
                }
            }
        })
    };
    std::fs::write(&zone_file, text(true)).unwrap();
    let (origin, sources) = signed_example_with(&dir, &zone_file, 2, nsec3_policy());
    let first = load_all(&sources, None).unwrap();
    let (zone, stamp) = &first.zones[0];
    assert!(!has_link(zone, "c.up7.example."));
    let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
    std::fs::write(&zone_file, text(false)).unwrap();
    let again = load_one(&sources, &origin, Some(&previous)).unwrap();
    let (patched, stamp) = &again.zones[0];
    assert!(patched.garbage_bytes() > 0, "patched, not built whole");
    assert!(has_link(patched, "c.up7.example."));
    let name = tern_wire::name::Name::from_wire(&origin).unwrap();
    let whole = built_whole(name, &stamp.signed().unwrap().records().unwrap());
    let answer = |zone: Arc<Zone>, qname: &str, qtype: u16| {
        let catalog = tern_authority::Catalog::new([zone]);
        let owner = tern_wire::name::NameBuf::from_text(qname.as_bytes(), None).unwrap();
        let mut query = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        query.extend_from_slice(owner.as_bytes());
        query.extend_from_slice(&qtype.to_be_bytes());
        query.extend_from_slice(&[0, 1, 0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
        let mut out = vec![0; 65535];
        match tern_authority::respond(
            &catalog,
            &query,
            tern_authority::Transport::Tcp,
            &tern_authority::Options::default(),
            &mut out,
        ) {
            tern_authority::Response::Send(len) => out[..len].to_vec(),
            _ => Vec::new(),
        }
    };
    let whole = Arc::new(whole);
    for qname in [
        "c.up7.example.",
        "b.c.up7.example.",
        "q.c.up7.example.",
        "q.b.c.up7.example.",
        "a.b.c.up7.example.",
        "up7.example.",
    ] {
        for qtype in [1, 16, 43] {
            assert_eq!(
                answer(Arc::clone(patched), qname, qtype),
                answer(Arc::clone(&whole), qname, qtype),
                "{qname} type {qtype} with DO"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
