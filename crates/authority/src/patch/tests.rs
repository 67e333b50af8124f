//! `Zone::patch` against whole builds of the same records.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType};

use super::*;
use crate::zone::FLAG_DNAME;
use crate::{respond, Catalog, Options, RecordCursor, Response, Transport, ZoneBuilder};

fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

/// The zone's records as the model keeps them: by lowercased owner, in the
/// order they were added (a builder is given them in that order).
type Model = BTreeMap<Vec<u8>, Vec<(RType, u32, Vec<u8>)>>;

fn soa(serial: u32) -> Vec<u8> {
    let mut rdata = name("ns.example.").as_bytes().to_vec();
    rdata.extend_from_slice(name("host.example.").as_bytes());
    for value in [serial, 3600, 900, 604800, 300] {
        rdata.extend_from_slice(&value.to_be_bytes());
    }
    rdata
}

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
    RType::ANY,
];

fn random_record(rng: &mut StdRng) -> (RType, u32, Vec<u8>) {
    let target = name(
        OWNERS[rng.random_range(1..OWNERS.len())]
            .replace('*', "t")
            .as_str(),
    );
    let ttl = [60, 300][rng.random_range(0..2)];
    match rng.random_range(0..11) {
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
        _ => (RType::A, 300, vec![198, 51, 100, rng.random_range(1..3)]),
    }
}

fn build(model: &Model) -> Result<Zone, BuildError> {
    let mut builder = ZoneBuilder::new(name("example.").as_name());
    for (owner, records) in model {
        for (rtype, ttl, rdata) in records {
            builder.insert(
                Name::from_wire(owner).unwrap(),
                *rtype,
                RClass::IN,
                *ttl,
                rdata,
            )?;
        }
    }
    builder.finish()
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
    let catalog = Catalog::new(vec![zone.clone()]);
    let mut out = vec![0; 65535];
    let mut all = Vec::new();
    for text in OWNERS.iter().chain(QUERIES) {
        let qname = name(text);
        for &qtype in TYPES {
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

fn changes_of(model: &Model, touched: &[Vec<u8>]) -> ZoneChanges {
    let mut changes = ZoneChanges::new();
    for owner in touched {
        let records = model.get(owner).map(Vec::as_slice).unwrap_or(&[]);
        changes.set(
            Name::from_wire(owner).unwrap(),
            records.iter().map(|(t, ttl, r)| (*t, *ttl, &r[..])),
        );
    }
    changes
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
            costs.push((patched.work.nsec_moved, patched.chain_work));
            current = patched.zone;
        }
        costs
    };
    let small = cost(5_000);
    let large = cost(50_000);
    eprintln!("5,000 names: {small:?}\n50,000 names: {large:?}");
    // At most two chunks of node hashes (the new node's, the apex's) and
    // two parts of links (the new link's, the one before it).
    let bound =
        2 * crate::nsec3::NodeHashes::CHUNK * core::mem::size_of::<crate::nsec3::NodeHash>()
            + 2 * crate::nsec3::Links::MAX_PART * core::mem::size_of::<crate::nsec3::Link>();
    for ((small_moved, small), (large_moved, large)) in small.iter().zip(&large) {
        // All the zone's list entries moved (the NSEC3 links): the same.
        assert_eq!(small_moved, large_moved);
        assert_eq!(large.nsec_moved, small.nsec_moved);
        assert!(
            small.nsec_moved <= 2 * crate::nsec3::Links::MAX_PART,
            "{small:?}"
        );
        assert_eq!(large.chunks_copied, small.chunks_copied);
        assert!(
            small.bytes_copied <= bound && large.bytes_copied <= bound,
            "{small:?} {large:?}"
        );
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
