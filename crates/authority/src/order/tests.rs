//! The order of a signed zone's names against a sort of its live names,
//! through random patches; what a patch copies of it; `names_below`.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};

use super::*;
use crate::test_model::{build, changes_of, name, soa, Model};
use crate::{PatchError, ZoneBuilder};

/// An RRSIG over the SOA: what makes the zone signed.
fn soa_rrsig() -> Vec<u8> {
    let mut rdata = vec![0, 6, 13, 1, 0, 0, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
    rdata.extend_from_slice(name("example.").as_bytes());
    rdata.push(7);
    rdata
}

fn apex() -> Vec<u8> {
    name("example.").as_bytes().to_vec()
}

/// The apex's records with serial `serial`, signed or not.
fn apex_records(serial: u32, signed: bool) -> Vec<(RType, u32, Vec<u8>)> {
    let mut records = vec![(RType::SOA, 3600, soa(serial))];
    if signed {
        records.push((RType::RRSIG, 3600, soa_rrsig()));
    }
    records.push((RType::NS, 3600, name("ns.example.").as_bytes().to_vec()));
    records
}

/// A name's labels lowercased, from the apex's down (the test's own
/// canonical order, RFC 4034 section 6.1: labels compared as octet
/// strings, a label that is a prefix of another first; a name before the
/// names below it).
type Key = Vec<Vec<u8>>;

fn canonical_key(wire: &[u8]) -> Key {
    let mut labels = Vec::new();
    let mut at = 0;
    while wire[at] != 0 {
        let len = usize::from(wire[at]);
        labels.push(wire[at + 1..at + 1 + len].to_ascii_lowercase());
        at += 1 + len;
    }
    labels.reverse();
    labels
}

/// A key as text, for the messages.
fn show(key: &Key) -> String {
    let labels: Vec<String> = key
        .iter()
        .rev()
        .map(|label| String::from_utf8_lossy(label).into_owned())
        .collect();
    labels.join(".") + "."
}

/// What the zone must list, from the model alone: each owner and every
/// name between it and the apex (empty non-terminals), in canonical
/// order, each with whether it owns records; the owners of NSEC3 records
/// (outside the name tree) left out.
fn model_keys(model: &Model) -> BTreeMap<Key, bool> {
    let depth = canonical_key(&apex()).len();
    let mut names: BTreeMap<Key, bool> = BTreeMap::new();
    for (owner, records) in model {
        if records.iter().any(|r| r.0 == RType::NSEC3) || records.is_empty() {
            continue;
        }
        let key = canonical_key(owner);
        for end in depth..key.len() {
            names.entry(key[..end].to_vec()).or_insert(false);
        }
        names.insert(key, true);
    }
    names
}

/// The names of [`model_keys`], as [`show`] writes them.
fn model_names(model: &Model) -> Vec<String> {
    model_keys(model).keys().map(show).collect()
}

/// The model's names strictly below `below` (see [`model_keys`]).
fn model_below(model: &Model, below: Name<'_>) -> Vec<(String, bool)> {
    let below = canonical_key(below.as_bytes());
    model_keys(model)
        .iter()
        .filter(|(key, _)| key.len() > below.len() && key.starts_with(&below))
        .map(|(key, owns)| (show(key), *owns))
        .collect()
}

/// The names of the order list, in its order (as [`show`] writes them).
fn listed(zone: &Zone) -> Vec<String> {
    zone.order
        .iter()
        .map(|&id| show(&canonical_key(zone.node_name(id).as_bytes())))
        .collect()
}

fn below_listed(zone: &Zone, below: Name<'_>) -> Vec<(String, bool)> {
    zone.names_below(below)
        .expect("a signed zone lists its names")
        .map(|(name, owns)| (show(&canonical_key(name.as_bytes())), owns))
        .collect()
}

/// Owners the changes pick from: empty non-terminals coming and going
/// (`b.a`, `d.c`), cuts above names (`a`, `sub`, `c`), glue and occluded
/// names below them, a wildcard.
const OWNERS: &[&str] = &[
    "a.example.",
    "b.a.example.",
    "c.b.a.example.",
    "x.c.b.a.example.",
    "e.d.c.example.",
    "c.example.",
    "sub.example.",
    "ns.sub.example.",
    "deep.ns.sub.example.",
    "*.w.example.",
    "y.w.example.",
    "ns.example.",
    "z.example.",
    "a-b.example.",
    "a0.example.",
];

/// Names asked for besides the owners: empty non-terminals, names that do
/// not exist, the apex, a name outside the zone, in any case.
const ASKED: &[&str] = &[
    "example.",
    "w.example.",
    "d.c.example.",
    "b.A.example.",
    "nx.example.",
    "q.sub.example.",
    "other.",
    "SUB.example.",
];

/// One random change: an owner's records added to, cut down or removed;
/// an NS made or taken (a cut made or removed), with every name below it
/// touched half the time (as a signed window does: the patch is made,
/// not left to a whole build); the apex's SOA signed or not now and then.
/// The owners touched.
fn change(rng: &mut StdRng, model: &mut Model, serial: &mut u32) -> Vec<Vec<u8>> {
    let owner = name(OWNERS[rng.random_range(0..OWNERS.len())])
        .as_bytes()
        .to_vec();
    let mut touched = vec![owner.clone()];
    let records = model.entry(owner.clone()).or_default();
    match rng.random_range(0..7) {
        0 | 1 => {
            let record = (RType::A, 300, vec![192, 0, 2, rng.random_range(1..4)]);
            if !records.contains(&record) {
                records.push(record);
            }
        }
        2 => records.push((RType::TXT, 300, vec![1, b'a' + rng.random_range(0..3)])),
        3 => {
            let cut = (RType::NS, 300, name("ns.sub.example.").as_bytes().to_vec());
            if records.iter().any(|r| r.0 == RType::NS) {
                records.retain(|r| r.0 != RType::NS);
            } else {
                records.push(cut);
            }
            if rng.random_bool(0.5) {
                let below = Name::from_wire(&owner).unwrap();
                touched.extend(
                    model
                        .keys()
                        .filter(|other| {
                            let other = Name::from_wire(other).unwrap();
                            other.len() > below.len() && other.ends_with(below)
                        })
                        .cloned(),
                );
            }
        }
        4 | 5 => {
            records.clear();
        }
        _ => {}
    }
    model.retain(|_, records| !records.is_empty());
    *serial += 1;
    let signed = if rng.random_range(0..10) == 0 {
        !model[&apex()].iter().any(|r| r.0 == RType::RRSIG)
    } else {
        model[&apex()].iter().any(|r| r.0 == RType::RRSIG)
    };
    // An NSEC3 zone's NSEC3PARAM kept.
    let param = model[&apex()]
        .iter()
        .find(|r| r.0 == RType::NSEC3PARAM)
        .cloned();
    let mut records = apex_records(*serial, signed);
    records.extend(param);
    model.insert(apex(), records);
    touched.push(apex());
    touched
}

/// The NSEC3 salt of [`with_nsec3_owners`].
const SALT: u8 = 0xab;

/// `model` made an NSEC3 zone: the apex's NSEC3PARAM, and three NSEC3
/// records (a chain of made-up hashes, at owners below the apex that the
/// changes never touch).
fn with_nsec3_owners(model: &mut Model) {
    let mut records = model[&apex()].clone();
    records.push((RType::NSEC3PARAM, 0, vec![1, 0, 0, 0, 1, SALT]));
    model.insert(apex(), records);
    let hashes: Vec<[u8; 20]> = (1..=3u8).map(|at| [at * 0x40; 20]).collect();
    for (at, hash) in hashes.iter().enumerate() {
        let label = data_encoding::BASE32HEX_NOPAD
            .encode(hash)
            .to_ascii_lowercase();
        let owner = name(&format!("{label}.example."));
        let mut rdata = vec![1, 0, 0, 0, 1, SALT, 20];
        rdata.extend_from_slice(&hashes[(at + 1) % hashes.len()]);
        rdata.extend_from_slice(&[0, 1, 0x40]);
        model.insert(owner.as_bytes().to_vec(), vec![(RType::NSEC3, 300, rdata)]);
    }
}

/// Checks the order list and `names_below` of `zone` against what the
/// model, the records the zone was given, says.
fn assert_order(zone: &Zone, model: &Model, context: &str, stops: &mut usize) {
    if !zone.signed {
        assert!(zone.order.is_empty(), "{context}: an unsigned zone's list");
        assert!(zone.names_below(zone.origin()).is_none(), "{context}");
        return;
    }
    assert_eq!(listed(zone), model_names(model), "{context}");
    zone.order.assert_bounds();
    for asked in OWNERS.iter().chain(ASKED) {
        let asked = name(asked);
        let lower = NameBuf::from_name(asked.as_name().to_lower().as_name());
        let by_pass = model_below(model, lower.as_name());
        assert_eq!(
            below_listed(zone, asked.as_name()),
            by_pass,
            "{context}: below {asked}"
        );
        // `any_name_below` visits the owners of records among them.
        let mut visited = Vec::new();
        let any = zone.any_name_below(lower.as_name(), |name| {
            visited.push((show(&canonical_key(name.as_bytes())), true));
            false
        });
        assert!(!any);
        let owners: Vec<(String, bool)> = by_pass.into_iter().filter(|(_, owns)| *owns).collect();
        assert_eq!(visited, owners, "{context}: owners below {asked}");
        // It stops at the first owner `visit` returns true for: the
        // second here, after exactly two calls.
        if owners.len() >= 2 {
            let mut calls = 0;
            let any = zone.any_name_below(lower.as_name(), |_| {
                calls += 1;
                calls == 2
            });
            assert!(any, "{context}: below {asked}");
            assert_eq!(calls, 2, "{context}: calls below {asked}");
            *stops += 1;
        }
    }
}

/// Random sequences of patches of small signed zones (and of zones
/// signed and unsigned in turn): after each, the list holds the live
/// names in canonical order, as a sort of them does (empty
/// non-terminals come and go, cuts are made and removed above names),
/// and `names_below` of every owner and of names that do not exist or
/// are empty non-terminals gives exactly the live names below them. A
/// patch that left the list as it was (or copied the version patched's)
/// fails at the first name come or gone. Seeds 12 and 13 are NSEC3 zones
/// (whose NSEC3 owners the list leaves out); names removed and added
/// again come back under their old node ids (the patch revives them),
/// which the list must take as names come.
#[test]
fn the_order_is_a_sort_of_the_live_names_after_random_patches() {
    let (mut patched_count, mut rebuilt, mut unsigned, mut cuts) = (0, 0, 0, 0);
    let (mut revived, mut nsec3_patched, mut stops) = (0, 0, 0);
    for seed in 0..14u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = Model::new();
        let mut serial = 1;
        model.insert(apex(), apex_records(serial, true));
        // Half the zones big enough for parts.
        let hosts = if seed % 2 == 0 { 600 } else { 5 };
        for i in 0..hosts {
            model.insert(
                name(&format!("h{i}.example.")).as_bytes().to_vec(),
                vec![(RType::A, 300, vec![192, 0, 2, 1])],
            );
        }
        if seed >= 12 {
            with_nsec3_owners(&mut model);
        }
        let mut zone = build(&model).unwrap();
        assert_order(&zone, &model, &format!("seed {seed}, built"), &mut stops);
        for step in 0..40 {
            let saved = model.clone();
            let touched = change(&mut rng, &mut model, &mut serial);
            let context = format!("seed {seed} step {step}");
            let built = build(&model);
            match (zone.patch(&changes_of(&model, &touched)), built) {
                (Ok(patched), Ok(built)) => {
                    assert_order(&patched.zone, &model, &context, &mut stops);
                    assert_eq!(listed(&patched.zone), listed(&built), "{context}");
                    revived += usize::from(patched.zone.dead_nodes < zone.dead_nodes);
                    nsec3_patched += usize::from(seed >= 12);
                    zone = patched.zone;
                    patched_count += 1;
                    unsigned += usize::from(!zone.signed);
                    cuts += usize::from(touched.len() > 2);
                }
                (Err(PatchError::Rebuild(_)), Ok(built)) => {
                    assert_order(&built, &model, &context, &mut stops);
                    zone = built;
                    rebuilt += 1;
                }
                (Err(PatchError::Build(_)), Err(_)) => model = saved,
                (patched, built) => panic!(
                    "{context}: patch {:?}, build {:?}",
                    patched.map(|p| p.zone),
                    built
                ),
            }
        }
    }
    eprintln!(
        "{patched_count} patched ({unsigned} unsigned, {cuts} touching names below a cut, \
         {revived} reviving names, {nsec3_patched} NSEC3), {rebuilt} rebuilt, \
         {stops} visits stopped at the second owner"
    );
    assert!(
        revived > 0 && nsec3_patched > 10 && stops > 0,
        "{revived} reviving, {nsec3_patched} NSEC3, {stops} stopped"
    );
    assert!(
        patched_count > 5 * (rebuilt + 1),
        "{patched_count} patched, {rebuilt} rebuilt"
    );
    assert!(
        unsigned > 5 && cuts > 5,
        "{unsigned} unsigned, {cuts} with cuts"
    );
}

/// One name added to a signed zone (below a new empty non-terminal), then
/// removed: each patch copies the part of the order list the names fall
/// in, the same number of entries at 5,000 names as at 50,000 (a list
/// copied whole, or made again, would be 5,000 and 50,000 entries), and
/// `names_below` of the new empty non-terminal gives the name.
#[test]
fn a_name_added_or_removed_copies_a_part_of_the_order_not_the_list() {
    let cost = |hosts: u32| {
        let mut model = Model::new();
        model.insert(apex(), apex_records(1, true));
        for i in 0..hosts {
            model.insert(
                name(&format!("h{i}.example.")).as_bytes().to_vec(),
                vec![(RType::A, 300, vec![192, 0, 2, 1])],
            );
        }
        let mut zone = build(&model).unwrap();
        assert_eq!(zone.order.len() as u32, hosts + 1);
        let new = name("x.h1new.example.").as_bytes().to_vec();
        let mut costs = Vec::new();
        for (serial, add) in [(2, true), (3, false)] {
            model.insert(apex(), apex_records(serial, true));
            if add {
                model.insert(new.clone(), vec![(RType::TXT, 300, vec![1, b'x'])]);
            } else {
                model.remove(&new);
            }
            let patched = zone
                .patch(&changes_of(&model, &[new.clone(), apex()]))
                .unwrap();
            let below: Vec<(String, bool)> =
                below_listed(&patched.zone, name("h1new.example.").as_name());
            if add {
                assert_eq!(below, [("x.h1new.example.".to_string(), true)]);
            } else {
                assert!(below.is_empty());
            }
            assert_eq!(
                patched.zone.order.len() as u32,
                hosts + 1 + 2 * u32::from(add)
            );
            let parts_copied =
                patched.zone.order.part_lens().len() - patched.zone.order.shared_with(&zone.order);
            costs.push((patched.order_work.nsec_moved, parts_copied));
            zone = patched.zone;
        }
        costs
    };
    let small = cost(5_000);
    let large = cost(50_000);
    eprintln!(
        "(order entries copied, parts copied)\n5,000 names: {small:?}\n50,000 names: {large:?}"
    );
    assert_eq!(small, large);
    for (entries, parts) in small {
        assert!(
            entries > 0 && entries <= Order::MAX_PART + Order::MIN_PART,
            "{entries}"
        );
        assert!(parts <= 2, "{parts}");
    }
}

/// An unsigned zone keeps no order (no allocation; `names_below` says
/// so), and gets none by a patch; signing it by a patch makes it whole,
/// unsigning it drops it.
#[test]
fn only_signed_zones_keep_the_order() {
    let mut model = Model::new();
    model.insert(apex(), apex_records(1, false));
    for host in ["a.example.", "b.a.example.", "c.example."] {
        model.insert(
            name(host).as_bytes().to_vec(),
            vec![(RType::TXT, 300, vec![0])],
        );
    }
    let zone = build(&model).unwrap();
    assert!(zone.order.is_empty() && zone.names_below(zone.origin()).is_none());
    let new = name("d.example.").as_bytes().to_vec();
    model.insert(new.clone(), vec![(RType::TXT, 300, vec![0])]);
    model.insert(apex(), apex_records(2, false));
    let zone = zone
        .patch(&changes_of(&model, &[new, apex()]))
        .unwrap()
        .zone;
    assert!(zone.order.is_empty());
    model.insert(apex(), apex_records(3, true));
    let signed = zone.patch(&changes_of(&model, &[apex()])).unwrap();
    assert_eq!(listed(&signed.zone), model_names(&model));
    assert_eq!(signed.order_work.nsec_moved, 5);
    assert_eq!(
        below_listed(&signed.zone, name("a.example.").as_name()),
        [("b.a.example.".to_string(), true)]
    );
    model.insert(apex(), apex_records(4, false));
    let unsigned = signed.zone.patch(&changes_of(&model, &[apex()])).unwrap();
    assert!(unsigned.zone.order.is_empty());
}

/// Siblings whose labels share four, eight and up to 63 octets, differ
/// only by trailing zero octets or in length, built in an order that is
/// not canonical: the builder's list (by four octets of the labels at a
/// time) is the sort of whole names, at the apex and below a name.
#[test]
fn the_build_orders_labels_by_every_octet() {
    let long = "x".repeat(62);
    let labels = [
        "abcd".to_string(),
        "abc".to_string(),
        "abcdefgh1".to_string(),
        "abcdefgh".to_string(),
        "abcdefgh\\000".to_string(),
        "abcdefgh\\000\\000".to_string(),
        "abcd\\000".to_string(),
        "abcdefghijklmnop".to_string(),
        "abcdefghijklmnoq".to_string(),
        format!("{long}b"),
        format!("{long}a"),
        long.clone(),
        format!("{long}\\000"),
        "a".to_string(),
        "\\000".to_string(),
        "\\255".to_string(),
        "b".to_string(),
        "abce".to_string(),
    ];
    let mut model = Model::new();
    model.insert(apex(), apex_records(1, true));
    for parent in ["", "deep.sub."] {
        for label in labels.iter().rev() {
            model.insert(
                name(&format!("{label}.{parent}example."))
                    .as_bytes()
                    .to_vec(),
                vec![(RType::TXT, 300, vec![0])],
            );
        }
    }
    let zone = build(&model).unwrap();
    assert_eq!(zone.order.len(), 1 + 2 * labels.len() + 2);
    assert_eq!(listed(&zone), model_names(&model));
    assert_eq!(
        below_listed(&zone, name("sub.example.").as_name()).len(),
        1 + labels.len()
    );
}

/// Labels equal but for trailing zero octets (`abcd` and `abcd\000`, 62
/// octets and the same with `\000`), the longer given to the builder
/// first, so that its node id, the integer sort's tie-break, is the
/// smaller: only the comparison of whole labels past [`MAX_LABEL`]
/// octets puts the shorter first, at the apex and below a name. (Given
/// in canonical order, as the model's map gives them, the ids would
/// break the tie right by chance.)
#[test]
fn the_shorter_of_labels_equal_but_for_trailing_zeros_comes_first() {
    let long = "x".repeat(62);
    let labels = [
        "abcd\\000".to_string(),
        "abcd".to_string(),
        "abcdefgh\\000\\000".to_string(),
        "abcdefgh\\000".to_string(),
        "abcdefgh".to_string(),
        format!("{long}\\000"),
        long,
    ];
    let mut model = Model::new();
    let mut builder = ZoneBuilder::new(name("example.").as_name());
    let mut insert = |model: &mut Model, owner: NameBuf, records: Vec<(RType, u32, Vec<u8>)>| {
        for (rtype, ttl, rdata) in &records {
            builder
                .insert(owner.as_name(), *rtype, RClass::IN, *ttl, rdata)
                .unwrap();
        }
        model.insert(owner.as_bytes().to_vec(), records);
    };
    insert(&mut model, name("example."), apex_records(1, true));
    for parent in ["", "deep.sub."] {
        for label in &labels {
            let owner = name(&format!("{label}.{parent}example."));
            insert(&mut model, owner, vec![(RType::TXT, 300, vec![0])]);
        }
    }
    let zone = builder.finish().unwrap();
    // The builder numbers the nodes as it is given them.
    let id_of = |text: &str| {
        let wanted = canonical_key(name(text).as_bytes());
        (0..zone.nodes.end())
            .find(|&id| canonical_key(zone.node_name(id).as_bytes()) == wanted)
            .unwrap()
    };
    assert!(id_of("abcd\\000.example.") < id_of("abcd.example."));
    assert_eq!(listed(&zone), model_names(&model));
    let order = listed(&zone);
    let at = |text: &str| {
        let wanted = show(&canonical_key(name(text).as_bytes()));
        order.iter().position(|listed| *listed == wanted).unwrap()
    };
    assert_eq!(at("abcd\\000.example."), at("abcd.example.") + 1);
}
