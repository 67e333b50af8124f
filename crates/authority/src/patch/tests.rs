//! `Zone::patch` against whole builds of the same records.

use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tern_wire::name::NameBuf;
use tern_wire::types::RType;

use super::*;
use crate::test_model::{build, changes_of, name, soa, Model};
use crate::zone::FLAG_DNAME;
use crate::{respond, Catalog, Options, RecordCursor, Response, Transport};

/// Owners the changes pick from: the apex, new and existing names, empty
/// non-terminals (b.a, d.c), a delegation with glue below it, wildcards,
/// names a wildcard answers for.
const OWNERS: &[&str] = &[
    "example.",
    "a.example.",
    "b.a.example.",
    "c.b.a.example.",
    "e.d.c.example.",
    "sub.example.",
    "ns.sub.example.",
    "deep.ns.sub.example.",
    "*.example.",
    "*.w.example.",
    "x.w.example.",
    "mail.example.",
    "ns.example.",
    "*.a.example.",
    "alias.example.",
];

/// Names asked for: the owners and names that do not exist.
const QUERIES: &[&str] = &[
    "nx.example.",
    "q.b.a.example.",
    "z.sub.example.",
    "foo.w.example.",
    "y.x.w.example.",
    "d.c.example.",
    "c.example.",
    "zz.a.example.",
];

const TYPES: &[RType] = &[
    RType::A,
    RType::AAAA,
    RType::TXT,
    RType::MX,
    RType::NS,
    RType::CNAME,
    RType::SOA,
    RType::RRSIG,
    RType::NSEC,
    RType::DS,
    RType::SVCB,
    RType::HTTPS,
    RType::ANY,
];

fn random_record(rng: &mut StdRng) -> (RType, u32, Vec<u8>) {
    let target = name(
        OWNERS[rng.random_range(1..OWNERS.len())]
            .replace('*', "t")
            .as_str(),
    );
    let ttl = [60, 300][rng.random_range(0..2)];
    let kind = rng.random_range(0..13);
    match kind {
        0 | 1 => (RType::A, ttl, vec![192, 0, 2, rng.random_range(1..4)]),
        2 => (RType::AAAA, ttl, vec![rng.random_range(0..3); 16]),
        3 => (RType::TXT, ttl, vec![1, b'a' + rng.random_range(0..3)]),
        4 => {
            let mut rdata = vec![0, rng.random_range(1..3)];
            rdata.extend_from_slice(target.as_bytes());
            (RType::MX, ttl, rdata)
        }
        5 => (RType::NS, ttl, target.as_bytes().to_vec()),
        6 => (RType::CNAME, ttl, target.as_bytes().to_vec()),
        7 => {
            // An NSEC naming the next owner of the list (its bitmap does
            // not matter to answering).
            let mut rdata = target.as_bytes().to_vec();
            rdata.extend_from_slice(&[0, 1, 0x40]);
            (RType::NSEC, ttl, rdata)
        }
        8 => {
            let covered = [RType::A, RType::TXT, RType::NS, RType::SOA][rng.random_range(0..4)];
            let mut rdata = covered.0.to_be_bytes().to_vec();
            rdata.extend_from_slice(&[13, 2, 0, 0, 0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            rdata.extend_from_slice(name("example.").as_bytes());
            rdata.push(rng.random_range(0..3));
            (RType::RRSIG, ttl, rdata)
        }
        // A DNAME (to an owner's name: the names below it that QUERIES
        // ask for are answered by substitution).
        10 => (RType::DNAME, ttl, target.as_bytes().to_vec()),
        // An SVCB or HTTPS in ServiceMode, no parameters (its targets add
        // addresses and records of its type).
        11 | 12 => {
            let mut rdata = vec![0, 1];
            rdata.extend_from_slice(target.as_bytes());
            let rtype = if kind == 11 {
                RType::SVCB
            } else {
                RType::HTTPS
            };
            (rtype, ttl, rdata)
        }
        _ => (RType::A, 300, vec![198, 51, 100, rng.random_range(1..3)]),
    }
}

fn query(qname: &NameBuf, qtype: RType, dnssec: bool) -> Vec<u8> {
    let mut query = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(dnssec)];
    query.extend_from_slice(qname.as_bytes());
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&1u16.to_be_bytes());
    if dnssec {
        query.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
    }
    query
}

/// Every answer, for every name and type asked with and without DO.
fn answers(zone: &Zone) -> Vec<Vec<u8>> {
    answers_to(zone, OWNERS.iter().chain(QUERIES).copied(), TYPES)
}

/// The answers to each of `names` for each of `types`, with and without
/// DO.
fn answers_to<'n>(
    zone: &Zone,
    names: impl Iterator<Item = &'n str>,
    types: &[RType],
) -> Vec<Vec<u8>> {
    let catalog = Catalog::new(vec![zone.clone()]);
    let mut out = vec![0; 65535];
    let mut all = Vec::new();
    for text in names {
        let qname = name(text);
        for &qtype in types {
            for dnssec in [false, true] {
                let answer = match respond(
                    &catalog,
                    &query(&qname, qtype, dnssec),
                    Transport::Tcp,
                    &Options::default(),
                    &mut out,
                ) {
                    Response::Send(len) => out[..len].to_vec(),
                    _ => Vec::new(),
                };
                all.push(answer);
            }
        }
    }
    all
}

/// Every record of the walk, sorted (a patched zone walks its new names
/// after the old ones).
fn walk(zone: &Zone) -> Vec<(Vec<u8>, RType, u32, Vec<u8>)> {
    let mut records = Vec::new();
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        records.push((
            record.owner.as_bytes().to_vec(),
            record.rtype,
            record.ttl,
            record.rdata.to_vec(),
        ));
    }
    records.sort();
    records
}

fn assert_same(patched: &Zone, built: &Zone, context: &str) {
    assert_eq!(walk(patched), walk(built), "walk, {context}");
    assert_eq!(
        patched.record_count(),
        built.record_count(),
        "records, {context}"
    );
    assert_eq!(patched.node_count(), built.node_count(), "nodes, {context}");
    assert_eq!(patched.serial(), built.serial(), "serial, {context}");
    // The names directly below each (what tells whether an empty
    // non-terminal goes with the last name below it).
    for owner in OWNERS.iter().chain(QUERIES) {
        let owner = name(owner);
        assert_eq!(
            patched.child_count(owner.as_name()),
            built.child_count(owner.as_name()),
            "names directly below {owner}, {context}"
        );
    }
    // Each name's flags (apex, cut, below a cut, `*` child, DNAME): what
    // the answers read instead of the records.
    for owner in OWNERS.iter().chain(QUERIES) {
        let owner = name(owner);
        let flags = |zone: &Zone| {
            zone.find_node(owner.as_bytes())
                .map(|node| zone.node(node).flags)
        };
        assert_eq!(flags(patched), flags(built), "flags of {owner}, {context}");
    }
    // The NSEC owners in canonical order, in parts within their bounds.
    let nsec_order = |zone: &Zone| -> Vec<String> {
        zone.nsec
            .iter()
            .map(|&node| zone.node_name(node).to_string())
            .collect()
    };
    assert_eq!(
        nsec_order(patched),
        nsec_order(built),
        "NSEC order, {context}"
    );
    patched.nsec.assert_bounds();
    // Each RRset's glue (targets and the nodes they resolve to), and the
    // index of target names the patch kept.
    assert_eq!(glue_table(patched), glue_table(built), "glue, {context}");
    assert_eq!(
        crate::targets::pairs(patched, &patched.targets),
        crate::targets::pairs(built, &built.targets),
        "targets, {context}"
    );
    assert!(
        crate::targets::is_sorted(patched, &patched.targets),
        "targets' order, {context}"
    );
    patched.targets.assert_bounds();
    let (patched, built) = (answers(patched), answers(built));
    for (index, (p, b)) in patched.iter().zip(&built).enumerate() {
        let names = OWNERS.len() + QUERIES.len();
        let per_name = TYPES.len() * 2;
        let which = index / per_name;
        assert!(which < names);
        assert_eq!(
            p,
            b,
            "answer for {} {} (DO {}), {context}",
            OWNERS.iter().chain(QUERIES).nth(which).unwrap(),
            TYPES[(index % per_name) / 2],
            index % 2
        );
    }
}

/// An RRset's glue in [`glue_table`]: owner, type, and each target with
/// the node it resolved to.
type GlueRow = (String, u16, Vec<(String, String)>);

/// Each RRset's glue, by owner and type: each target's name (lowercased)
/// and the name of the node it resolved to, required glue first.
fn glue_table(zone: &Zone) -> Vec<GlueRow> {
    let mut table = Vec::new();
    for node in 0..zone.nodes.end() {
        if zone.node(node).flags & FLAG_DEAD != 0 {
            continue;
        }
        for set in zone.rrsets(node) {
            let glue = zone.glue(set);
            if glue.is_empty() {
                continue;
            }
            let glue = glue
                .iter()
                .map(|g| {
                    let (target, _) = Name::parse_prefix(zone.rdata_at(g.target)).unwrap();
                    (
                        target.to_lower().as_name().to_string(),
                        zone.node_name(g.node).to_string(),
                    )
                })
                .collect();
            table.push((zone.node_name(node).to_string(), set.rtype.0, glue));
        }
    }
    table.sort();
    table
}

/// One random change to the model: the owners it touched.
fn change(rng: &mut StdRng, model: &mut Model, serial: &mut u32) -> Vec<Vec<u8>> {
    let owner = name(OWNERS[rng.random_range(0..OWNERS.len())])
        .as_bytes()
        .to_vec();
    let mut touched = vec![owner.clone()];
    let records = model.entry(owner.clone()).or_default();
    match rng.random_range(0..6) {
        0..=2 => {
            let record = random_record(rng);
            if !records.iter().any(|r| r.0 == record.0 && r.2 == record.2) {
                records.push(record);
            }
        }
        3 if !records.is_empty() => {
            let at = rng.random_range(0..records.len());
            records.remove(at);
        }
        4 if !records.is_empty() => {
            let rtype = records[rng.random_range(0..records.len())].0;
            records.retain(|r| r.0 != rtype || r.0 == RType::SOA);
        }
        5 => {
            records.retain(|r| r.0 == RType::SOA);
        }
        _ => {}
    }
    if records.is_empty() {
        model.remove(&owner);
    }
    // Every change is a new version with a higher serial, as an update.
    *serial += 1;
    let apex = name("example.").as_bytes().to_vec();
    let records = model.entry(apex.clone()).or_default();
    records.retain(|r| r.0 != RType::SOA);
    records.insert(0, (RType::SOA, 3600, soa(*serial)));
    touched.push(apex);
    touched
}

/// For random sequences of changes, a patch gives the zone a whole build
/// of the same records gives: every answer (with and without DO) to every
/// name asked, the records walked, their count and the names'; and the
/// builder's errors where it refuses the records.
#[test]
fn patches_equal_whole_builds() {
    let mut patched_count = 0;
    let mut rebuilt = 0;
    let mut refused = 0;
    // Patched versions with a DNAME somewhere: the flag is exercised.
    let mut with_dname = 0;
    for seed in 0..10u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = Model::new();
        let mut serial = 1;
        model.insert(
            name("example.").as_bytes().to_vec(),
            vec![(RType::SOA, 3600, soa(serial))],
        );
        // Half of the zones are big enough for a name index.
        if seed % 2 == 0 {
            for i in 0..12 {
                model.insert(
                    name(&format!("h{i}.example.")).as_bytes().to_vec(),
                    vec![(RType::A, 300, vec![192, 0, 2, i])],
                );
            }
        }
        let mut zone = build(&model).unwrap();
        for step in 0..25 {
            let saved = model.clone();
            let saved_serial = serial;
            let touched = change(&mut rng, &mut model, &mut serial);
            let context = format!("seed {seed} step {step}");
            let built = build(&model);
            match (zone.patch(&changes_of(&model, &touched)), built) {
                (Ok(patched), Ok(built)) => {
                    assert_same(&patched.zone, &built, &context);
                    zone = patched.zone;
                    patched_count += 1;
                    with_dname += usize::from(
                        (0..zone.nodes.end()).any(|n| zone.node(n).flags & FLAG_DNAME != 0),
                    );
                }
                (Err(PatchError::Rebuild(_)), Ok(built)) => {
                    zone = built;
                    rebuilt += 1;
                }
                (Err(PatchError::Build(_)), Err(_)) => {
                    model = saved;
                    serial = saved_serial;
                    refused += 1;
                }
                (patched, built) => panic!(
                    "{context}: patch {:?}, build {:?}",
                    patched.map(|p| p.zone),
                    built
                ),
            }
        }
    }
    eprintln!(
        "{patched_count} patched ({with_dname} with a DNAME), {rebuilt} rebuilt whole, {refused} refused"
    );
    // The sequences exercise the patch, not only its fallback.
    assert!(
        patched_count > 10 * (rebuilt + 1),
        "{patched_count} patched, {rebuilt} rebuilt"
    );
    assert!(refused > 0, "no change was refused");
    assert!(with_dname > 10, "{with_dname} versions with a DNAME");
}

/// The NSEC3 salt of [`with_nsec3_chain`]'s chains.
const SALT: u8 = 0xab;

/// `model` with its NSEC3 chain made again (SHA-1, no further iteration,
/// salt [`SALT`]): a link for each name not below a cut and each empty
/// non-terminal above one, the apex's NSEC3PARAM and an RRSIG over its SOA
/// (so that the zone is signed and answers carry proofs); the hashed
/// owners whose records changed, for the patch. With opt-out when
/// `opt_out` says so: the insecure delegations (NS without DS below the apex) have no link, nor
/// have the empty non-terminals with only those (or glue) below them, and
/// every link carries the flag, as the signer makes such a chain.
fn with_nsec3_chain(model: &mut Model, opt_out: bool) -> Vec<Vec<u8>> {
    let apex = name("example.");
    let params = crate::nsec3::Params {
        algorithm: 1,
        iterations: 0,
        salt: Box::new([SALT]),
    };
    let hashed = |owner: &[u8]| {
        let name = Name::from_wire(owner).unwrap();
        name.parent().is_some_and(|p| p == apex.as_name())
            && crate::nsec3::decode_label(name.first_label()).is_some()
    };
    let old: Model = model
        .iter()
        .filter(|(owner, _)| hashed(owner))
        .map(|(owner, records)| (owner.clone(), records.clone()))
        .collect();
    model.retain(|owner, _| !hashed(owner));
    let records = model.entry(apex.as_bytes().to_vec()).or_default();
    let param = vec![1, 0, 0, 0, 1, SALT];
    if !records.iter().any(|r| r.0 == RType::NSEC3PARAM) {
        records.push((RType::NSEC3PARAM, 0, param));
    }
    if !records
        .iter()
        .any(|r| r.0 == RType::RRSIG && r.2.starts_with(&[0, 6]))
    {
        let mut rdata = vec![0, 6, 13, 1, 0, 0, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
        rdata.extend_from_slice(apex.as_bytes());
        rdata.push(7);
        records.push((RType::RRSIG, 3600, rdata));
    }
    let cut = |owner: Name<'_>| {
        model
            .get(owner.as_bytes())
            .is_some_and(|records| records.iter().any(|r| r.0 == RType::NS))
    };
    let mut names: std::collections::BTreeSet<Vec<u8>> = Default::default();
    for owner in model.keys() {
        let name = Name::from_wire(owner).unwrap();
        let mut above = name;
        let mut below_cut = false;
        while let Some(parent) = above.parent() {
            if parent == apex.as_name() || parent.label_count() <= 1 {
                break;
            }
            below_cut |= cut(parent);
            above = parent;
        }
        if below_cut {
            continue;
        }
        let insecure = opt_out
            && name != apex.as_name()
            && model.get(owner).is_some_and(|records| {
                records.iter().any(|r| r.0 == RType::NS)
                    && !records.iter().any(|r| r.0 == RType::DS)
            });
        if insecure {
            continue;
        }
        let mut at = Some(name);
        while let Some(current) = at {
            names.insert(current.as_bytes().to_vec());
            if current == apex.as_name() {
                break;
            }
            at = current.parent();
        }
    }
    let mut hashes: Vec<crate::nsec3::Hash> = names
        .iter()
        .map(|owner| params.hash(Name::from_wire(owner).unwrap()))
        .collect();
    hashes.sort_unstable();
    let mut new = Model::new();
    for (at, hash) in hashes.iter().enumerate() {
        let label = data_encoding::BASE32HEX_NOPAD
            .encode(hash)
            .to_ascii_lowercase();
        let owner = NameBuf::concat(
            &[&[label.len() as u8], label.as_bytes()].concat(),
            apex.as_name(),
        )
        .unwrap();
        let mut rdata = vec![1, u8::from(opt_out), 0, 0, 1, SALT, 20];
        rdata.extend_from_slice(&hashes[(at + 1) % hashes.len()]);
        rdata.extend_from_slice(&[0, 1, 0x40]);
        new.insert(owner.as_bytes().to_vec(), vec![(RType::NSEC3, 300, rdata)]);
    }
    let mut touched: Vec<Vec<u8>> = old
        .iter()
        .filter(|(owner, records)| new.get(*owner) != Some(records))
        .map(|(owner, _)| owner.clone())
        .collect();
    touched.extend(
        new.iter()
            .filter(|(owner, records)| old.get(*owner) != Some(records))
            .map(|(owner, _)| owner.clone()),
    );
    model.extend(new);
    touched
}

/// [`patches_equal_whole_builds`] in zones with an NSEC3 chain: each
/// change with the chain's links that follow it (added, removed, their
/// next hashes) patched, and the answers with DO (their NSEC3 proofs:
/// each node's matching and wildcard links) those of a whole build.
#[test]
fn nsec3_patches_equal_whole_builds() {
    nsec3_patches_as_builds(false);
}

/// [`nsec3_patches_equal_whole_builds`] with an opt-out chain, and DS
/// records added to and removed from the delegations among the changes
/// (an insecure delegation made secure gains its link, and the empty
/// non-terminals above it theirs; made insecure again, loses them).
#[test]
fn opt_out_nsec3_patches_with_ds_equal_whole_builds() {
    nsec3_patches_as_builds(true);
}

fn nsec3_patches_as_builds(opt_out: bool) {
    let mut patched_count = 0;
    let mut rebuilt = 0;
    let mut ds_toggled = 0;
    for seed in 0..10u64 {
        let mut rng = StdRng::seed_from_u64(100 + seed);
        // Apart, so that the changes drawn are those without DS.
        let mut ds_rng = StdRng::seed_from_u64(200 + seed);
        let mut model = Model::new();
        let mut serial = 1;
        model.insert(
            name("example.").as_bytes().to_vec(),
            vec![(RType::SOA, 3600, soa(serial))],
        );
        if seed % 2 == 0 {
            for i in 0..12 {
                model.insert(
                    name(&format!("h{i}.example.")).as_bytes().to_vec(),
                    vec![(RType::A, 300, vec![192, 0, 2, i])],
                );
            }
        }
        with_nsec3_chain(&mut model, opt_out);
        let mut zone = build(&model).unwrap();
        assert!(zone.nsec3.is_some());
        for step in 0..25 {
            let saved = model.clone();
            let saved_serial = serial;
            let mut touched = change(&mut rng, &mut model, &mut serial);
            if opt_out && ds_rng.random_range(0..2) == 0 {
                // A DS added at, or removed from, a delegation.
                let apex = name("example.").as_bytes().to_vec();
                let delegations: Vec<Vec<u8>> = model
                    .iter()
                    .filter(|(owner, records)| {
                        **owner != apex && records.iter().any(|r| r.0 == RType::NS)
                    })
                    .map(|(owner, _)| owner.clone())
                    .collect();
                if !delegations.is_empty() {
                    let owner = delegations[ds_rng.random_range(0..delegations.len())].clone();
                    let records = model.get_mut(&owner).unwrap();
                    if records.iter().any(|r| r.0 == RType::DS) {
                        records.retain(|r| r.0 != RType::DS);
                    } else {
                        records.push((RType::DS, 300, vec![0x30, 0x39, 13, 2, 1, 2, 3, 4]));
                    }
                    touched.push(owner);
                    ds_toggled += 1;
                }
            }
            // No NSEC in an NSEC3 zone.
            for records in model.values_mut() {
                records.retain(|r| r.0 != RType::NSEC);
            }
            model.retain(|_, records| !records.is_empty());
            touched.extend(with_nsec3_chain(&mut model, opt_out));
            let context = format!("seed {seed} step {step} opt-out {opt_out}");
            let built = build(&model);
            match (zone.patch(&changes_of(&model, &touched)), built) {
                (Ok(patched), Ok(built)) => {
                    assert_same(&patched.zone, &built, &context);
                    zone = patched.zone;
                    patched_count += 1;
                }
                (Err(PatchError::Rebuild(_)), Ok(built)) => {
                    zone = built;
                    rebuilt += 1;
                }
                (Err(PatchError::Build(_)), Err(_)) => {
                    model = saved;
                    serial = saved_serial;
                }
                (patched, built) => panic!(
                    "{context}: patch {:?}, build {:?}",
                    patched.map(|p| p.zone),
                    built
                ),
            }
        }
    }
    eprintln!("{patched_count} patched, {rebuilt} rebuilt whole, {ds_toggled} DS toggled");
    assert!(
        patched_count > 10 * (rebuilt + 1),
        "{patched_count} patched, {rebuilt} rebuilt"
    );
    assert!(!opt_out || ds_toggled > 20, "{ds_toggled} DS toggled");
}

/// One name added to a zone with an NSEC3 chain, then removed again (the
/// chain's links following it, as the signer changes them): each patch
/// copies a part of the chain's links and the chunks of its node hashes
/// it writes, the same at 5,000 names as at 50,000, not the chain (which
/// the patch copied and passed over whole before, `nsec_moved` then being
/// the links' count).
#[test]
fn an_nsec3_patch_costs_its_change_not_the_chain() {
    let cost = |hosts: u32| {
        let mut model = Model::new();
        model.insert(
            name("example.").as_bytes().to_vec(),
            vec![(RType::SOA, 3600, soa(1))],
        );
        for i in 0..hosts {
            model.insert(
                name(&format!("h{i}.example.")).as_bytes().to_vec(),
                vec![(RType::A, 300, vec![192, 0, 2, 1])],
            );
        }
        with_nsec3_chain(&mut model, false);
        let zone = build(&model).unwrap();
        let mut costs = Vec::new();
        let mut current = zone;
        for (serial, add) in [(2, true), (3, false)] {
            let apex = name("example.").as_bytes().to_vec();
            model.get_mut(&apex).unwrap()[0] = (RType::SOA, 3600, soa(serial));
            let new = name("new.example.").as_bytes().to_vec();
            if add {
                model.insert(new.clone(), vec![(RType::TXT, 300, vec![1, b'a'])]);
            } else {
                model.remove(&new);
            }
            let mut touched = vec![new, apex];
            touched.extend(with_nsec3_chain(&mut model, false));
            let patched = current.patch(&changes_of(&model, &touched)).unwrap();
            assert_same(&patched.zone, &build(&model).unwrap(), "patched");
            // The list of the links' parts, copied as the version is made.
            let list = current.nsec3.as_ref().unwrap().links.list_bytes();
            costs.push((patched.work.nsec_moved, patched.chain_work, list));
            current = patched.zone;
        }
        costs
    };
    let small = cost(5_000);
    let large = cost(50_000);
    eprintln!("5,000 names: {small:?}\n50,000 names: {large:?}");
    // At most two chunks of node hashes (the new node's, the apex's) and
    // two parts of links (the new link's, the one before it), and the
    // list of the links' parts (a hash and a pointer per part: 1/4,000th
    // of the chain, the one cost that grows with it).
    let bound =
        2 * crate::nsec3::NodeHashes::CHUNK * core::mem::size_of::<crate::nsec3::NodeHash>()
            + 2 * crate::nsec3::Links::MAX_PART * core::mem::size_of::<crate::nsec3::Link>();
    for ((small_moved, small, small_list), (large_moved, large, large_list)) in
        small.iter().zip(&large)
    {
        // All the zone's list entries moved (the NSEC3 links): the same.
        assert_eq!(small_moved, large_moved);
        assert_eq!(large.nsec_moved, small.nsec_moved);
        assert!(
            small.nsec_moved <= 2 * crate::nsec3::Links::MAX_PART,
            "{small:?}"
        );
        assert_eq!(large.chunks_copied, small.chunks_copied);
        assert!(
            small.bytes_copied <= bound + small_list && large.bytes_copied <= bound + large_list,
            "{small:?} {large:?}"
        );
    }
}

/// [`Zone::table_bytes`] counts the NSEC3 chain's tables (its links and
/// each node's hashes), which it left out before (the chain moved to
/// parts): the garbage share a patched zone is rebuilt at is a share of
/// them too.
#[test]
fn table_bytes_count_the_nsec3_chain() {
    let mut model = Model::new();
    model.insert(
        name("example.").as_bytes().to_vec(),
        vec![(RType::SOA, 3600, soa(1))],
    );
    for i in 0..100 {
        model.insert(
            name(&format!("h{i}.example.")).as_bytes().to_vec(),
            vec![(RType::A, 300, vec![192, 0, 2, 1])],
        );
    }
    with_nsec3_chain(&mut model, false);
    let zone = build(&model).unwrap();
    assert!(zone.nsec3.is_some());
    let others = zone.names.size_bytes()
        + zone.nodes.size_bytes()
        + zone.rrsets.size_bytes()
        + zone.rdata.size_bytes()
        + zone.glue.size_bytes()
        + zone.extra.size_bytes();
    // 101 links (the apex and the hosts), a hash pair for each node.
    let least = 101 * core::mem::size_of::<crate::nsec3::Link>()
        + zone.nodes.end() as usize * core::mem::size_of::<crate::nsec3::NodeHash>();
    assert!(
        zone.table_bytes() >= others + least,
        "{} octets of tables, {others} without the chain, {least} at least in it",
        zone.table_bytes()
    );
}

/// A signed NSEC zone: the apex (SOA, an RRSIG over it, an NSEC) and each
/// of `hosts` with an A record and an NSEC (their next names do not
/// matter to answering; the order list is by owner).
fn nsec_model(hosts: impl IntoIterator<Item = String>) -> Model {
    let apex = name("example.").as_bytes().to_vec();
    let mut rrsig = vec![0, 6, 13, 1, 0, 0, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
    rrsig.extend_from_slice(&apex);
    rrsig.push(7);
    let mut model = Model::new();
    model.insert(
        apex.clone(),
        vec![
            (RType::SOA, 3600, soa(1)),
            (RType::RRSIG, 3600, rrsig),
            (RType::NSEC, 300, nsec_rdata()),
        ],
    );
    for host in hosts {
        model.insert(name(&host).as_bytes().to_vec(), nsec_host(4));
    }
    model
}

/// An NSEC's RDATA: the apex as the next name, A and NSEC in the bitmap.
fn nsec_rdata() -> Vec<u8> {
    let mut rdata = name("example.").as_bytes().to_vec();
    rdata.extend_from_slice(&[0, 1, 0x40]);
    rdata
}

/// A host's records in [`nsec_model`].
fn nsec_host(address: u8) -> Vec<(RType, u32, Vec<u8>)> {
    vec![
        (RType::A, 300, vec![192, 0, 2, address]),
        (RType::NSEC, 300, nsec_rdata()),
    ]
}

/// The apex's SOA in `model` given serial `serial`.
fn set_serial(model: &mut Model, serial: u32) {
    let apex = name("example.").as_bytes().to_vec();
    model.get_mut(&apex).unwrap()[0] = (RType::SOA, 3600, soa(serial));
}

/// Patches of a signed NSEC zone of 400 names that add 640 names in one
/// stretch of the canonical order, twenty at a time (the part they fall in
/// grows past `Parts::MAX_PART` and splits, again and again), then
/// remove them and names around them (parts fall below
/// `Parts::MIN_PART` and merge), with an NSEC taken from and given back
/// to names that keep their other records: each version the whole build
/// of its records ([`assert_same`]: the NSEC order list too), and the
/// NXDOMAIN answers with DO (their covering NSEC) for names all along the
/// order the same.
#[test]
fn nsec_patches_split_and_merge_parts_as_whole_builds() {
    let hosts = (0..200).flat_map(|i| [format!("h{i:03}.example."), format!("p{i:03}.example.")]);
    let mut model = nsec_model(hosts);
    let mut zone = build(&model).unwrap();
    let apex = name("example.").as_bytes().to_vec();
    let initial_parts = zone.nsec.part_lens().len();
    let (mut most_parts, mut merges) = (initial_parts, 0);
    let probes: Vec<String> = (0..640)
        .step_by(13)
        .map(|j| format!("m{j:03}x.example."))
        .chain((0..200).step_by(9).map(|i| format!("h{i:03}x.example.")))
        .chain([
            "a.example.".into(),
            "zz.example.".into(),
            "p199z.example.".into(),
        ])
        .collect();
    for step in 0..64u32 {
        let mut touched = vec![apex.clone()];
        let batch = (step % 32) * 20..(step % 32) * 20 + 20;
        for j in batch.clone() {
            let owner = name(&format!("m{j:03}.example.")).as_bytes().to_vec();
            if step < 32 {
                model.insert(owner.clone(), nsec_host(5));
            } else {
                model.remove(&owner);
            }
            touched.push(owner);
        }
        if step >= 32 {
            // Names next to the stretch go too, or lose their NSEC alone.
            for i in batch.clone().map(|j| 199 - j / 4).filter(|i| i % 2 == 0) {
                let owner = name(&format!("h{i:03}.example.")).as_bytes().to_vec();
                if i % 4 == 0 {
                    model.remove(&owner);
                } else {
                    model
                        .get_mut(&owner)
                        .unwrap()
                        .retain(|r| r.0 != RType::NSEC);
                }
                touched.push(owner);
            }
        } else if step % 4 == 1 {
            // An NSEC taken away and given back (the node stays).
            let owner = name(&format!("p{:03}.example.", step)).as_bytes().to_vec();
            let records = model.get_mut(&owner).unwrap();
            if records.iter().any(|r| r.0 == RType::NSEC) {
                records.retain(|r| r.0 != RType::NSEC);
            } else {
                records.push((RType::NSEC, 300, nsec_rdata()));
            }
            touched.push(owner);
        }
        set_serial(&mut model, step + 2);
        let parts_before = zone.nsec.part_lens().len();
        let patched = zone.patch(&changes_of(&model, &touched)).unwrap();
        let built = build(&model).unwrap();
        let context = format!("step {step}");
        assert_same(&patched.zone, &built, &context);
        let probe = |zone: &Zone| answers_to(zone, probes.iter().map(String::as_str), &[RType::A]);
        assert_eq!(probe(&patched.zone), probe(&built), "{context}");
        zone = patched.zone;
        let parts = zone.nsec.part_lens().len();
        most_parts = most_parts.max(parts);
        merges += usize::from(parts < parts_before);
    }
    eprintln!(
        "parts: {initial_parts} at first, {most_parts} at most, {merges} merges, {} at last",
        zone.nsec.part_lens().len()
    );
    assert!(
        most_parts >= initial_parts + 2,
        "{most_parts} parts at most"
    );
    assert!(merges >= 3, "{merges} merges");
}

/// One name added to a signed NSEC zone (with an NSEC, the NSEC before it
/// rewritten, an MX that makes it an owner of glue), then removed again:
/// each patch copies a part of the NSEC order list and of the index of
/// target names, the same at 5,000 names as at 50,000, not the lists
/// (which the patch copied whole before, `nsec_moved` then being the NSEC
/// owners' count).
#[test]
fn an_nsec_patch_costs_its_change_not_the_list() {
    let cost = |hosts: u32| {
        let mut model = nsec_model((0..hosts).map(|i| format!("h{i}.example.")));
        // Every tenth host an owner of glue.
        for i in (0..hosts).step_by(10) {
            let owner = name(&format!("h{i}.example.")).as_bytes().to_vec();
            let mut rdata = vec![0, 10];
            rdata.extend_from_slice(name("h1.example.").as_bytes());
            model.get_mut(&owner).unwrap().push((RType::MX, 300, rdata));
        }
        let mut current = build(&model).unwrap();
        let apex = name("example.").as_bytes().to_vec();
        // A name amid the hosts (after `h1` and the names that begin so,
        // before `h2`), in a part of its own size at either size.
        let new = name("h1new.example.").as_bytes().to_vec();
        // The NSEC owner before it: `h1999` or `h19999`.
        let digits = (hosts - 1).to_string().len();
        let before_new = name(&format!("h1{}.example.", "9".repeat(digits - 1)))
            .as_bytes()
            .to_vec();
        let mut costs = Vec::new();
        for (serial, add) in [(2, true), (3, false)] {
            set_serial(&mut model, serial);
            if add {
                let mut records = nsec_host(7);
                let mut rdata = vec![0, 10];
                rdata.extend_from_slice(name("h2.example.").as_bytes());
                records.push((RType::MX, 300, rdata));
                model.insert(new.clone(), records);
            } else {
                model.remove(&new);
            }
            let next = if add { new.clone() } else { apex.clone() };
            let mut nsec = next;
            nsec.extend_from_slice(&[0, 1, 0x40]);
            model.get_mut(&before_new).unwrap()[1] = (RType::NSEC, 300, nsec);
            let touched = [new.clone(), before_new.clone(), apex.clone()];
            let patched = current.patch(&changes_of(&model, &touched)).unwrap();
            assert_same(&patched.zone, &build(&model).unwrap(), "patched");
            let zone = &patched.zone;
            fn copied<T: crate::parts::Keyed>(
                list: &crate::parts::Parts<T>,
                old: &crate::parts::Parts<T>,
            ) -> usize {
                list.part_lens().len() - list.shared_with(old)
            }
            costs.push((
                patched.work.nsec_moved,
                copied(&zone.nsec, &current.nsec),
                copied(&zone.targets, &current.targets),
                zone.nsec.list_bytes() + zone.targets.list_bytes(),
                patched.work.bytes_copied,
                // The new name's MX alone (it names `h2`, which did not
                // change); every glue owner's before the index of targets
                // (501 and 5,001).
                patched.work.glue_resolved,
            ));
            current = patched.zone;
        }
        costs
    };
    let small = cost(5_000);
    let large = cost(50_000);
    eprintln!(
        "(NSEC entries moved, NSEC parts copied, targets' parts copied, octets of the lists of parts, octets copied, RRsets' glue resolved)\n5,000 names: {small:?}\n50,000 names: {large:?}"
    );
    for (small, large) in small.iter().zip(&large) {
        // The entries of the NSEC list copied: the same at both sizes,
        // a part (and a neighbour merged into it) at most.
        assert_eq!(small.0, large.0);
        assert!(
            small.0 <= crate::parts::Parts::<u32>::MAX_PART + crate::parts::Parts::<u32>::MIN_PART
        );
        // One part of each list, at both sizes.
        assert_eq!((small.1, small.2), (large.1, large.2));
        assert!(small.1 <= 2 && small.2 <= 2, "{small:?}");
        // RRsets' glue resolved: the new name's MX (none when it goes).
        assert_eq!(small.5, large.5);
        assert!(small.5 <= 1, "{small:?}");
    }
}

/// A delegation made at an empty non-terminal (`a`, above the empty
/// non-terminal `b.a` and `c.b.a`) and one removed above glue
/// (`sub`, above `ns.sub` and `deep.ns.sub`), each patched with every
/// name below it touched (its records unchanged): the names below are
/// flagged again, as a whole build flags them. With a name below it left
/// out (`e.d.c` below `c`), the zone is built whole. Before, any cut made
/// or removed above other names was built whole.
#[test]
fn a_delegation_made_or_removed_above_names_it_touches_is_patched() {
    delegations_above_touched_names(false);
}

/// [`a_delegation_made_or_removed_above_names_it_touches_is_patched`] in
/// a zone with an NSEC3 chain, the answers with DO compared (their
/// proofs), each step patching a whole build: the empty non-terminal
/// `b.a`, which the patch does not touch, hashed again when `a` stops
/// being a cut. Before, it kept the hash the builder gives a name below a
/// cut (none), and the proofs for `b.a` and `q.b.a` differed from a whole
/// build's.
#[test]
fn an_nsec3_delegation_made_or_removed_above_names_it_touches_is_patched() {
    delegations_above_touched_names(true);
}

fn delegations_above_touched_names(nsec3: bool) {
    let mut model = Model::new();
    let mut add = |owner: &str, rtype: RType, rdata: Vec<u8>| {
        model
            .entry(name(owner).as_bytes().to_vec())
            .or_default()
            .push((rtype, 300, rdata));
    };
    add("example.", RType::SOA, soa(1));
    add(
        "example.",
        RType::NS,
        name("ns.example.").as_bytes().to_vec(),
    );
    add("ns.example.", RType::A, vec![192, 0, 2, 1]);
    add("c.b.a.example.", RType::A, vec![192, 0, 2, 2]);
    add("e.d.c.example.", RType::A, vec![192, 0, 2, 3]);
    add(
        "sub.example.",
        RType::NS,
        name("ns.sub.example.").as_bytes().to_vec(),
    );
    add("ns.sub.example.", RType::A, vec![192, 0, 2, 4]);
    add("deep.ns.sub.example.", RType::A, vec![192, 0, 2, 5]);
    if nsec3 {
        with_nsec3_chain(&mut model, false);
    }
    let mut zone = build(&model).unwrap();
    let ns = |target: &str| (RType::NS, 300, name(target).as_bytes().to_vec());
    let steps: [(&str, Option<&str>, &[&str], bool); 4] = [
        (
            "a.example.",
            Some("ns.example.net."),
            &["c.b.a.example."],
            true,
        ),
        ("c.example.", Some("ns.example.net."), &[], false),
        (
            "sub.example.",
            None,
            &["ns.sub.example.", "deep.ns.sub.example."],
            true,
        ),
        ("a.example.", None, &["c.b.a.example."], true),
    ];
    for (step, (cut, target, below, patched)) in steps.into_iter().enumerate() {
        let mut model_after = model.clone();
        let records = model_after
            .entry(name(cut).as_bytes().to_vec())
            .or_default();
        records.retain(|record| record.0 != RType::NS);
        if let Some(target) = target {
            records.push(ns(target));
        }
        if records.is_empty() {
            model_after.remove(name(cut).as_bytes());
        }
        let apex = name("example.").as_bytes().to_vec();
        if let Some(soa_record) = model_after
            .get_mut(&apex)
            .and_then(|records| records.iter_mut().find(|r| r.0 == RType::SOA))
        {
            soa_record.2 = soa(2 + step as u32);
        }
        let mut touched: Vec<Vec<u8>> = [cut, "example."]
            .iter()
            .chain(below)
            .map(|owner| name(owner).as_bytes().to_vec())
            .collect();
        if nsec3 {
            touched.extend(with_nsec3_chain(&mut model_after, false));
        }
        let context = format!("step {step}, NSEC3 {nsec3}");
        if nsec3 {
            // Each step from a whole build: the names below a cut there
            // have no hashes (the last step's `b.a`).
            zone = build(&model).unwrap();
        }
        match zone.patch(&changes_of(&model_after, &touched)) {
            Ok(done) => {
                assert!(patched, "{context}: patched");
                assert_same(&done.zone, &build(&model_after).unwrap(), &context);
                zone = done.zone;
                model = model_after;
            }
            Err(PatchError::Rebuild(_)) => assert!(!patched, "{context}: built whole"),
            Err(err) => panic!("{context}: {err}"),
        }
    }
}

/// A zone of `hosts` hosts `h{i}` with an A record each, every tenth one
/// owning an MX that names the host after it (`h0` names `h1`): `hosts /
/// 10 + 1` RRsets with targets inside the zone.
fn glue_model(hosts: u32) -> Model {
    let mut model = Model::new();
    model.insert(
        name("example.").as_bytes().to_vec(),
        vec![(RType::SOA, 3600, soa(1))],
    );
    for i in 0..hosts {
        let mut records = vec![(RType::A, 300, vec![192, 0, 2, (i % 250) as u8 + 1])];
        if i % 10 == 0 {
            let mut mx = vec![0, 10];
            mx.extend_from_slice(name(&format!("h{}.example.", i + 1)).as_bytes());
            records.push((RType::MX, 300, mx));
        }
        model.insert(name(&format!("h{i}.example.")).as_bytes().to_vec(), records);
    }
    model
}

/// An UPDATE's common case, a host's address removed or added (`h1`,
/// which `h0`'s MX names), and a host no RRset names coming and going
/// (DHCP): each patch resolves the glue of the RRsets naming the host
/// (one, or none), the same at 5,000 names as at 50,000, and copies as
/// many chunks of the tables at both sizes; the version lists `h0`, whose MX's glue
/// changed. Before, each resolved every RRset with targets again (501 and
/// 5,001) and listed no name.
#[test]
fn an_address_change_resolves_only_the_glue_naming_it() {
    let cost = |hosts: u32| {
        let mut model = glue_model(hosts);
        let mut current = build(&model).unwrap();
        let apex = name("example.").as_bytes().to_vec();
        let h1 = name("h1.example.").as_bytes().to_vec();
        let new = name("dhcp-new.example.").as_bytes().to_vec();
        let mut costs = Vec::new();
        for step in 0..5u32 {
            set_serial(&mut model, step + 2);
            let touched = match step {
                // The serial alone: the tables' last chunks grown whole,
                // as a first patch does, whatever it changes.
                0 => Vec::new(),
                1 => {
                    model.insert(h1.clone(), vec![(RType::TXT, 300, vec![1, b'x'])]);
                    vec![h1.clone()]
                }
                2 => {
                    model.insert(h1.clone(), vec![(RType::A, 300, vec![192, 0, 2, 9])]);
                    vec![h1.clone()]
                }
                3 => {
                    model.insert(new.clone(), vec![(RType::A, 300, vec![192, 0, 2, 7])]);
                    vec![new.clone()]
                }
                _ => {
                    model.remove(&new);
                    vec![new.clone()]
                }
            };
            let touched: Vec<Vec<u8>> = touched.into_iter().chain([apex.clone()]).collect();
            let patched = current.patch(&changes_of(&model, &touched)).unwrap();
            assert_same(
                &patched.zone,
                &build(&model).unwrap(),
                &format!("step {step}"),
            );
            // (A version built whole has no number to be patched from.)
            if step > 0 {
                let listed: Vec<String> = patched
                    .zone
                    .changed_since(&current)
                    .expect("the names changed are listed")
                    .iter()
                    .map(|(name, _)| Name::from_wire(name).unwrap().to_string())
                    .collect();
                let expected: &[&str] = match step {
                    1 | 2 => &["h0.example.", "h1.example."],
                    _ => &["dhcp-new.example."],
                };
                assert_eq!(listed, expected, "step {step}");
            }
            costs.push((
                patched.work.glue_resolved,
                patched.work.chunks_copied,
                patched.work.bytes_copied,
            ));
            current = patched.zone;
        }
        costs
    };
    let small = cost(5_000);
    let large = cost(50_000);
    eprintln!(
        "(RRsets' glue resolved, chunks copied, octets copied) a step\n5,000 names: {small:?}\n50,000 names: {large:?}"
    );
    // The steps after the first: h1's address gone and back (h0's MX
    // resolved again), the new host come and gone (nothing resolved).
    assert_eq!(
        small[1..].iter().map(|c| c.0).collect::<Vec<_>>(),
        [1, 1, 0, 0]
    );
    // The chunks of the tables each copies: as many at both sizes for
    // the address changes (the new host's node lands in another chunk
    // than the apex's at 50,000 names), each at most a whole chunk (128
    // KiB): the octets differ only by how full a chunk is (the 5,000-name
    // zone's glue and RRset tables are shorter than a chunk).
    for (step, (small, large)) in small.iter().zip(&large).enumerate().skip(1) {
        assert_eq!(small.0, large.0, "step {step}");
        if step <= 2 {
            assert_eq!(small.1, large.1, "step {step}");
        }
        for &(_, chunks, bytes) in [small, large] {
            assert!(
                chunks <= 8 && bytes <= chunks * 128 * 1024,
                "step {step}: {small:?} {large:?}"
            );
        }
    }
}

/// Two hosts each named by 200 owners, `mail` by the MX of `m0` to
/// `m199`, `ns1` by the NS of the delegations `d0` to `d199` (and the
/// apex's): 401 entries of the index of target names, in parts of 128,
/// the targets of each name spanning two parts. Each host loses its
/// address, then gains one (an A, then an AAAA for `ns1`): each patch
/// the whole build of its records ([`assert_same`]: every owner's glue),
/// and the version lists the host and every owner naming it (200 are
/// fewer than `MAX_CHANGED_NAMES`). Before, the search of the index
/// started in the last part whose first entry named the host, and the
/// owners in the part before (128 of `mail`'s, 56 of `ns1`'s) kept their
/// old glue and went unlisted; and the apex, whose NS names `ns1`, went
/// unlisted (touched for its serial alone, its glue written anew was
/// compared with what it resolved to, not with the version patched).
#[test]
fn a_host_many_owners_name_changes_the_glue_of_each() {
    const OWNERS_A_HOST: usize = 200;
    let mut model = Model::new();
    let apex = name("example.").as_bytes().to_vec();
    let mail = name("mail.example.").as_bytes().to_vec();
    let ns1 = name("ns1.example.").as_bytes().to_vec();
    model.insert(
        apex.clone(),
        vec![
            (RType::SOA, 3600, soa(1)),
            (RType::NS, 300, ns1[..].to_vec()),
        ],
    );
    model.insert(mail.clone(), vec![(RType::A, 300, vec![192, 0, 2, 1])]);
    model.insert(ns1.clone(), vec![(RType::A, 300, vec![192, 0, 2, 2])]);
    let mut mx = vec![0, 10];
    mx.extend_from_slice(&mail);
    for i in 0..OWNERS_A_HOST {
        model.insert(
            name(&format!("m{i}.example.")).as_bytes().to_vec(),
            vec![(RType::MX, 300, mx.clone())],
        );
        model.insert(
            name(&format!("d{i}.example.")).as_bytes().to_vec(),
            vec![(RType::NS, 300, ns1.clone())],
        );
    }
    let mut zone = build(&model).unwrap();
    assert_eq!(zone.targets.part_lens(), [128, 128, 145]);
    // A version built whole has no number to be patched from: the serial
    // alone, first.
    set_serial(&mut model, 2);
    zone = zone
        .patch(&changes_of(&model, std::slice::from_ref(&apex)))
        .unwrap()
        .zone;
    let naming = |prefix: char| -> Vec<String> {
        (0..OWNERS_A_HOST)
            .map(|i| format!("{prefix}{i}.example."))
            .collect()
    };
    // What, the host, its records, the owners naming it.
    type Step<'h> = (&'static str, &'h Vec<u8>, Vec<Record>, Vec<String>);
    type Record = (RType, u32, Vec<u8>);
    let steps: Vec<Step> = vec![
        (
            "mail's address gone",
            &mail,
            vec![(RType::TXT, 300, vec![1, b'x'])],
            naming('m'),
        ),
        (
            "mail's address back",
            &mail,
            vec![(RType::A, 300, vec![192, 0, 2, 3])],
            naming('m'),
        ),
        (
            "ns1's address gone",
            &ns1,
            vec![(RType::TXT, 300, vec![1, b'x'])],
            naming('d').into_iter().chain(["example.".into()]).collect(),
        ),
        (
            "ns1 given an AAAA",
            &ns1,
            vec![(RType::AAAA, 300, vec![0x20; 16])],
            naming('d').into_iter().chain(["example.".into()]).collect(),
        ),
    ];
    for (serial, (what, host, records, owners)) in steps.into_iter().enumerate() {
        model.insert(host.clone(), records);
        set_serial(&mut model, serial as u32 + 3);
        let patched = zone
            .patch(&changes_of(&model, &[host.clone(), apex.clone()]))
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_same(&patched.zone, &build(&model).unwrap(), what);
        let listed: BTreeSet<String> = patched
            .zone
            .changed_since(&zone)
            .unwrap_or_else(|| panic!("{what}: the names changed are listed"))
            .iter()
            .map(|(name, _)| Name::from_wire(name).unwrap().to_string())
            .collect();
        let expected: BTreeSet<String> = owners
            .into_iter()
            .chain([Name::from_wire(host).unwrap().to_string()])
            .collect();
        assert_eq!(
            listed.difference(&expected).collect::<Vec<_>>(),
            Vec::<&String>::new(),
            "{what}: listed, not expected"
        );
        assert_eq!(
            expected.difference(&listed).collect::<Vec<_>>(),
            Vec::<&String>::new(),
            "{what}: expected, not listed"
        );
        // The owners naming the host, and the apex's NS (touched for its
        // serial; naming `ns1`).
        assert_eq!(patched.work.glue_resolved, OWNERS_A_HOST + 1, "{what}");
        zone = patched.zone;
    }
}

/// Patches that change what RRsets' targets resolve to, each the whole
/// build of its records ([`assert_same`]: each RRset's glue and the index
/// of target names too): addresses added and removed at a target (named
/// in another case), targets added and removed, an NS retargeted, a cut
/// made and removed above glue, a wildcard's neighbours coming and going
/// (a name beside it, an empty non-terminal made between a target and
/// it), wildcards made and removed at the apex and below, with targets
/// below them answered by them. Each resolves fewer RRsets' glue than
/// the zone has RRsets with targets but the wildcards at the apex.
#[test]
fn glue_patches_equal_whole_builds() {
    let mut model = Model::new();
    let apex = name("example.").as_bytes().to_vec();
    let set = |model: &mut Model, owner: &str, records: Vec<(RType, u32, Vec<u8>)>| {
        let owner = name(owner).as_bytes().to_vec();
        if records.is_empty() {
            model.remove(&owner);
        } else {
            model.insert(owner.clone(), records);
        }
        owner
    };
    let a = |last: u8| (RType::A, 300, vec![192, 0, 2, last]);
    let txt = || (RType::TXT, 300, vec![1, b't']);
    let ns = |target: &str| (RType::NS, 300, name(target).as_bytes().to_vec());
    let mx = |target: &str| {
        let mut rdata = vec![0, 10];
        rdata.extend_from_slice(name(target).as_bytes());
        (RType::MX, 300, rdata)
    };
    let srv = |target: &str| {
        let mut rdata = vec![0, 1, 0, 1, 0x13, 0xc4];
        rdata.extend_from_slice(name(target).as_bytes());
        (RType::SRV, 300, rdata)
    };
    set(
        &mut model,
        "example.",
        vec![
            (RType::SOA, 3600, soa(1)),
            ns("ns0.example."),
            ns("ns1.example."),
            ns("ns.example.net."),
        ],
    );
    // ServiceMode (priority 1), no parameters.
    let svcb = |rtype: RType, target: &str| {
        let mut rdata = vec![0, 1];
        rdata.extend_from_slice(name(target).as_bytes());
        (rtype, 300, rdata)
    };
    set(&mut model, "ns0.example.", vec![a(1)]);
    set(&mut model, "ns1.example.", vec![a(1)]);
    // An MX, an HTTPS and an SVCB naming `web` (without records of a
    // kind they add, yet).
    set(&mut model, "mx3.example.", vec![mx("web.example.")]);
    set(
        &mut model,
        "svc.example.",
        vec![svcb(RType::HTTPS, "web.example.")],
    );
    set(
        &mut model,
        "sv.example.",
        vec![svcb(RType::SVCB, "web.example.")],
    );
    set(&mut model, "web.example.", vec![txt()]);
    set(&mut model, "mx1.example.", vec![mx("host1.example.")]);
    set(
        &mut model,
        "mx2.example.",
        vec![mx("Host2.Example."), mx("a.w.example.")],
    );
    set(&mut model, "host2.example.", vec![a(2)]);
    set(
        &mut model,
        "_sip._tcp.example.",
        vec![srv("sip.w.example."), srv("b.c.w.example.")],
    );
    set(
        &mut model,
        "sub.example.",
        vec![ns("ns.sub.example."), ns("ns2.sub.example.")],
    );
    set(&mut model, "ns.sub.example.", vec![a(3)]);
    set(&mut model, "*.w.example.", vec![a(4)]);
    set(
        &mut model,
        "x.w.example.",
        vec![mx("sip.w.example."), mx("host3.example.")],
    );
    // Twenty more RRsets with targets elsewhere, which no step concerns.
    for i in 0..20 {
        set(
            &mut model,
            &format!("o{i}.example."),
            vec![mx(&format!("p{i}.example.")), a(9)],
        );
        set(&mut model, &format!("p{i}.example."), vec![a(10)]);
    }
    let mut zone = build(&model).unwrap();
    let sources = (0..zone.nodes.end())
        .filter(|&node| crate::builder::is_glue_source(&zone, node))
        .count();
    type Records = Vec<(RType, u32, Vec<u8>)>;
    let steps: Vec<(&str, Vec<(&str, Records)>)> = vec![
        (
            "an address added at a target",
            vec![("host1.example.", vec![a(5)])],
        ),
        (
            "an address removed at a target named in another case",
            vec![("host2.example.", vec![txt()])],
        ),
        (
            "an address added back",
            vec![("host2.example.", vec![a(6), txt()])],
        ),
        (
            "a target removed",
            vec![("mx1.example.", vec![mx("host2.example.")])],
        ),
        (
            "a target added",
            vec![(
                "mx1.example.",
                vec![mx("host2.example."), mx("ns1.example.")],
            )],
        ),
        (
            "an NS retargeted to a name without addresses",
            vec![(
                "sub.example.",
                vec![ns("ns3.sub.example."), ns("ns2.sub.example.")],
            )],
        ),
        (
            "the glue of the new target",
            vec![("ns3.sub.example.", vec![a(7)])],
        ),
        (
            "the old target's address gone",
            vec![("ns.sub.example.", vec![])],
        ),
        (
            "a cut made above a wildcard and its names",
            vec![
                ("w.example.", vec![ns("sip.w.example.")]),
                ("*.w.example.", vec![a(4)]),
                (
                    "x.w.example.",
                    vec![mx("sip.w.example."), mx("host3.example.")],
                ),
            ],
        ),
        (
            "the cut removed",
            vec![
                ("w.example.", vec![]),
                ("*.w.example.", vec![a(4)]),
                (
                    "x.w.example.",
                    vec![mx("sip.w.example."), mx("host3.example.")],
                ),
            ],
        ),
        (
            "a name beside the wildcard, without addresses",
            vec![("a.w.example.", vec![txt()])],
        ),
        ("the name gone again", vec![("a.w.example.", vec![])]),
        (
            "an empty non-terminal made between a target and the wildcard",
            vec![("d.c.w.example.", vec![txt()])],
        ),
        ("a wildcard below it", vec![("*.c.w.example.", vec![a(8)])]),
        (
            "the wildcard's address gone",
            vec![("*.c.w.example.", vec![txt()])],
        ),
        (
            "both gone",
            vec![("*.c.w.example.", vec![]), ("d.c.w.example.", vec![])],
        ),
        ("the wildcard gone", vec![("*.w.example.", vec![])]),
        (
            "the wildcard back with another address type",
            vec![("*.w.example.", vec![(RType::AAAA, 300, vec![1; 16])])],
        ),
        ("a wildcard at the apex", vec![("*.example.", vec![a(11)])]),
        ("a name beside it", vec![("host3.example.", vec![txt()])]),
        ("the name gone", vec![("host3.example.", vec![])]),
        ("the apex wildcard gone", vec![("*.example.", vec![])]),
        (
            "the target of an MX made an address of its own",
            vec![(
                "x.w.example.",
                vec![mx("sip.w.example."), mx("host3.example."), a(12)],
            )],
        ),
        (
            "a target of the apex's NS made a cut (its glue required, so first), the apex untouched",
            vec![("ns1.example.", vec![a(1), ns("ns1.example.")])],
        ),
        (
            "the cut removed, the apex untouched",
            vec![("ns1.example.", vec![a(1)])],
        ),
        (
            "a target that is its own owner",
            vec![("x.w.example.", vec![mx("x.w.example."), a(12)])],
        ),
        (
            "a target given an HTTPS record (the HTTPS naming it gains glue)",
            vec![("web.example.", vec![svcb(RType::HTTPS, "."), txt()])],
        ),
        (
            "the target given an A besides (the MX and the SVCB gain glue)",
            vec![("web.example.", vec![svcb(RType::HTTPS, "."), a(13)])],
        ),
        (
            "the A gone, the HTTPS kept (the MX and the SVCB lose their glue)",
            vec![("web.example.", vec![svcb(RType::HTTPS, ".")])],
        ),
        (
            "the HTTPS replaced by an SVCB (the HTTPS loses its glue, the SVCB gains it)",
            vec![("web.example.", vec![svcb(RType::SVCB, ".")])],
        ),
        (
            "an AAAA besides the SVCB (the MX and the HTTPS gain glue)",
            vec![(
                "web.example.",
                vec![svcb(RType::SVCB, "."), (RType::AAAA, 300, vec![2; 16])],
            )],
        ),
        ("the target gone", vec![("web.example.", vec![])]),
    ];
    for (serial, (what, changes)) in steps.into_iter().enumerate() {
        let mut touched = Vec::new();
        for (owner, records) in changes {
            touched.push(set(&mut model, owner, records));
        }
        if !what.contains("apex untouched") {
            touched.push(apex.clone());
            set_serial(&mut model, serial as u32 + 2);
        }
        let patched = zone
            .patch(&changes_of(&model, &touched))
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_same(&patched.zone, &build(&model).unwrap(), what);
        eprintln!(
            "{what}: {} RRsets' glue resolved",
            patched.work.glue_resolved
        );
        // A wildcard at the apex can answer for every target.
        if !what.contains("wildcard at the apex") && !what.contains("apex wildcard") {
            assert!(
                patched.work.glue_resolved < sources,
                "{what}: {} of {sources}",
                patched.work.glue_resolved
            );
        }
        zone = patched.zone;
    }
}
