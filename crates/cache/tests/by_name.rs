//! Invalidation by name (`ResponseCache::invalidate_names`) against the
//! versions a dynamic update makes (`Zone::patch`): an answer the cache
//! keeps across a version is the answer the new version gives.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tern_authority::{
    respond, Catalog, Options, Response, Transport, Zone, ZoneBuilder, ZoneChanges,
};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::name::{Name, NameBuf};
use tern_wire::parse::MessageView;
use tern_wire::types::{RClass, RType};

fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

/// By lowercased owner: type, TTL, RDATA, in the order given.
type Model = BTreeMap<Vec<u8>, Vec<(RType, u32, Vec<u8>)>>;

fn soa(serial: u32) -> Vec<u8> {
    soa_refresh(serial, 3600)
}

fn soa_refresh(serial: u32, refresh: u32) -> Vec<u8> {
    let mut rdata = name("ns.example.").as_bytes().to_vec();
    rdata.extend_from_slice(name("host.example.").as_bytes());
    for value in [serial, refresh, 900, 604800, 300] {
        rdata.extend_from_slice(&value.to_be_bytes());
    }
    rdata
}

fn build(model: &Model) -> Zone {
    let mut builder = ZoneBuilder::new(name("example.").as_name());
    for (owner, records) in model {
        for (rtype, ttl, rdata) in records {
            builder
                .insert(
                    Name::from_wire(owner).unwrap(),
                    *rtype,
                    RClass::IN,
                    *ttl,
                    rdata,
                )
                .unwrap();
        }
    }
    builder.finish().unwrap()
}

/// The model's records at `owners`, as an update hands them to a patch.
fn changes_of(model: &Model, owners: &[Vec<u8>]) -> ZoneChanges {
    let mut changes = ZoneChanges::new();
    for owner in owners {
        let records = model.get(owner).map(Vec::as_slice).unwrap_or(&[]);
        changes.set(
            Name::from_wire(owner).unwrap(),
            records.iter().map(|(t, ttl, r)| (*t, *ttl, &r[..])),
        );
    }
    changes
}

/// A new serial at the apex (every update makes one).
fn bump(model: &mut Model, serial: &mut u32) -> Vec<u8> {
    bump_refresh(model, serial, 3600)
}

/// A new serial at the apex, and `refresh` its refresh field.
fn bump_refresh(model: &mut Model, serial: &mut u32, refresh: u32) -> Vec<u8> {
    *serial += 1;
    let apex = name("example.").as_bytes().to_vec();
    let records = model.entry(apex.clone()).or_default();
    records.retain(|r| r.0 != RType::SOA);
    records.insert(0, (RType::SOA, 3600, soa_refresh(*serial, refresh)));
    apex
}

/// The version after changing `owners` of `zone` as `model` now says.
fn patch(zone: &Zone, model: &Model, owners: &[Vec<u8>]) -> Option<Zone> {
    zone.patch(&changes_of(model, owners)).ok().map(|p| p.zone)
}

fn query(qname: &str, qtype: RType, dnssec: bool) -> Vec<u8> {
    let mut query = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    query.extend_from_slice(name(qname).as_bytes());
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&1u16.to_be_bytes());
    let flags = if dnssec { 0x80 } else { 0 };
    query.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, flags, 0, 0, 0]);
    query
}

fn key(query: &[u8]) -> CacheKey {
    let view = MessageView::parse(query).unwrap();
    let edns = view.edns().unwrap();
    CacheKey::from_query(&view, edns.as_ref()).unwrap()
}

fn fresh(zone: &Zone, query: &[u8]) -> Vec<u8> {
    let catalog = Catalog::new(vec![zone.clone()]);
    let mut out = vec![0; 4096];
    match respond(
        &catalog,
        query,
        Transport::Udp,
        &Options::default(),
        &mut out,
    ) {
        Response::Send(len) => out[..len].to_vec(),
        Response::Drop => Vec::new(),
    }
}

/// What a core does with a query: the cache's answer if it has one (then
/// checked against the zone's own), else the zone's, stored. Whether it
/// was a hit.
fn ask(cache: &mut ResponseCache, zone: &Zone, query: &[u8], context: &str) -> bool {
    let mut out = [0; 4096];
    let expected = fresh(zone, query);
    match cache.answer(&key(query), query, 4096, &mut out) {
        Some(len) => {
            assert_eq!(
                &out[..len],
                &expected[..],
                "a cached answer differs from the version's, {context}"
            );
            true
        }
        None => {
            cache.insert(key(query), &expected);
            false
        }
    }
}

/// A new version replaces `old` in the cache's tag 0 as a core's
/// `Worker::apply` does.
fn swap(cache: &mut ResponseCache, old: &Zone, new: &Zone) -> bool {
    match new.changed_since(old) {
        Some(names) => {
            cache.invalidate_update(0, names.iter(), new.serial_step_since(old));
            true
        }
        None => {
            cache.invalidate_tag(0);
            false
        }
    }
}

const ZONE: &[(&str, RType, &str)] = &[
    ("example.", RType::NS, "ns.example."),
    ("example.", RType::TXT, "apex"),
    ("ns.example.", RType::A, "192.0.2.53"),
    ("www.example.", RType::A, "192.0.2.1"),
    ("mail.example.", RType::A, "192.0.2.2"),
    ("*.wild.example.", RType::TXT, "wild"),
    ("alias.example.", RType::CNAME, "www.example."),
];

fn rdata(rtype: RType, text: &str) -> Vec<u8> {
    match rtype {
        RType::A => text.split('.').map(|o| o.parse::<u8>().unwrap()).collect(),
        RType::TXT => {
            let mut rdata = vec![text.len() as u8];
            rdata.extend_from_slice(text.as_bytes());
            rdata
        }
        _ => name(text).as_bytes().to_vec(),
    }
}

fn small_model(serial: u32) -> Model {
    let mut model = Model::new();
    model.insert(
        name("example.").as_bytes().to_vec(),
        vec![(RType::SOA, 3600, soa(serial))],
    );
    for &(owner, rtype, text) in ZONE {
        model
            .entry(name(owner).as_bytes().to_vec())
            .or_default()
            .push((rtype, 300, rdata(rtype, text)));
    }
    model
}

/// An update that adds an ACME challenge's TXT: the cached answer for an
/// untouched name survives the new version (and is the new version's),
/// while the changed name, the apex's SOA (its serial) and every negative
/// answer (they carry the SOA) are answered fresh.
#[test]
fn untouched_names_survive_an_update() {
    let mut serial = 1;
    let mut model = small_model(serial);
    let built = build(&model);
    // The first patch of a version built whole cannot say what changed
    // since (the built one has no number): the tag is invalidated.
    let apex = bump(&mut model, &mut serial);
    let first = patch(&built, &model, &[apex]).unwrap();
    let mut cache = ResponseCache::new(CacheLimits::default());
    assert!(!swap(&mut cache, &built, &first), "from a whole build");

    let www = query("www.example.", RType::A, false);
    let www_do = query("www.example.", RType::A, true);
    let soa = query("example.", RType::SOA, false);
    let nx = query("nothing.example.", RType::A, false);
    let nodata = query("www.example.", RType::TXT, false);
    let challenge = query("_acme-challenge.www.example.", RType::TXT, false);
    let wild = query("a.wild.example.", RType::TXT, false);
    let apex_txt = query("example.", RType::TXT, false);
    let apex_a = query("example.", RType::A, true);
    let all = [
        &www, &www_do, &soa, &nx, &nodata, &challenge, &wild, &apex_txt, &apex_a,
    ];
    for query in all {
        assert!(!ask(&mut cache, &first, query, "first"));
        assert!(ask(&mut cache, &first, query, "first, again"));
    }

    // The update: a TXT at _acme-challenge.www, a new serial.
    let owner = name("_acme-challenge.www.example.").as_bytes().to_vec();
    model.insert(
        owner.clone(),
        vec![(RType::TXT, 60, rdata(RType::TXT, "token"))],
    );
    let apex = bump(&mut model, &mut serial);
    let second = patch(&first, &model, &[owner, apex]).unwrap();
    assert!(swap(&mut cache, &first, &second), "names listed");

    assert!(ask(&mut cache, &second, &www, "www A"), "www A kept");
    assert!(
        ask(&mut cache, &second, &www_do, "www A DO"),
        "www A with DO kept"
    );
    assert!(
        ask(&mut cache, &second, &wild, "wildcard"),
        "a wildcard's answer kept"
    );
    // The apex changed only in its SOA: its other answers are kept, and
    // the negative ones of unchanged names (the SOA in them changed in its
    // serial alone) too, with the new serial.
    assert!(
        ask(&mut cache, &second, &apex_txt, "apex TXT"),
        "the apex's TXT kept"
    );
    assert!(ask(&mut cache, &second, &nx, "NXDOMAIN"), "NXDOMAIN kept");
    assert!(ask(&mut cache, &second, &nodata, "NODATA"), "NODATA kept");
    assert!(
        ask(&mut cache, &second, &apex_a, "apex NODATA with DO"),
        "the apex's NODATA kept"
    );
    for (query, what) in [(&soa, "the SOA"), (&challenge, "the changed name")] {
        assert!(
            !ask(&mut cache, &second, query, what),
            "{what} answered fresh"
        );
        assert!(ask(&mut cache, &second, query, what), "{what} cached again");
    }

    // An SOA changed in more than its serial: the negative answers go,
    // the positive ones of unchanged names stay.
    let apex = bump_refresh(&mut model, &mut serial, 7200);
    let refreshed = patch(&second, &model, &[apex]).unwrap();
    assert_eq!(refreshed.serial_step_since(&second), None);
    assert!(swap(&mut cache, &second, &refreshed));
    assert!(!ask(&mut cache, &refreshed, &nx, "NXDOMAIN, new refresh"));
    assert!(!ask(&mut cache, &refreshed, &apex_a, "NODATA, new refresh"));
    assert!(ask(
        &mut cache,
        &refreshed,
        &apex_txt,
        "apex TXT, new refresh"
    ));
    assert!(ask(&mut cache, &refreshed, &www, "www A, new refresh"));
    let apex = bump_refresh(&mut model, &mut serial, 3600);
    let second = patch(&refreshed, &model, &[apex]).unwrap();
    assert!(swap(&mut cache, &refreshed, &second));
    assert!(!ask(&mut cache, &second, &nx, "NXDOMAIN, refresh back"));

    // A change of the apex's other RRsets reaches its answers.
    let apex = bump(&mut model, &mut serial);
    model
        .get_mut(&apex)
        .unwrap()
        .push((RType::TXT, 300, rdata(RType::TXT, "more")));
    let changed = patch(&second, &model, &[apex]).unwrap();
    assert_eq!(changed.serial_step_since(&second), Some(serial));
    assert!(swap(&mut cache, &second, &changed));
    assert!(!ask(&mut cache, &changed, &apex_txt, "apex TXT changed"));
    assert!(!ask(
        &mut cache,
        &changed,
        &apex_a,
        "apex NODATA, apex changed"
    ));
    assert!(ask(&mut cache, &changed, &nx, "NXDOMAIN, apex changed"));
    let second = changed;

    // A change of the wildcard reaches the names it answers for.
    let owner = name("*.wild.example.").as_bytes().to_vec();
    model.insert(
        owner.clone(),
        vec![(RType::TXT, 300, rdata(RType::TXT, "other"))],
    );
    let apex = bump(&mut model, &mut serial);
    let third = patch(&second, &model, &[owner, apex]).unwrap();
    assert!(swap(&mut cache, &second, &third));
    assert!(!ask(&mut cache, &third, &wild, "wildcard changed"));
    assert!(ask(&mut cache, &third, &www, "www A, third"));

    // A change of a CNAME's target reaches the CNAME's answers.
    let alias = query("alias.example.", RType::A, false);
    assert!(!ask(&mut cache, &third, &alias, "alias"));
    assert!(ask(&mut cache, &third, &alias, "alias, again"));
    let owner = name("www.example.").as_bytes().to_vec();
    model.insert(
        owner.clone(),
        vec![(RType::A, 300, rdata(RType::A, "192.0.2.9"))],
    );
    let apex = bump(&mut model, &mut serial);
    let changed = patch(&third, &model, &[owner, apex]).unwrap();
    assert!(
        swap(&mut cache, &third, &changed),
        "an address changed, not added"
    );
    assert!(!ask(&mut cache, &changed, &alias, "the target changed"));
    assert!(!ask(&mut cache, &changed, &www, "www changed"));
    let third = changed;

    // A version patched from another one than the cache's says nothing.
    let apex = bump(&mut model, &mut serial);
    let fourth = patch(&third, &model, std::slice::from_ref(&apex)).unwrap();
    let apex = bump(&mut model, &mut serial);
    let fifth = patch(&fourth, &model, &[apex]).unwrap();
    assert!(!swap(&mut cache, &third, &fifth), "skipped a version");
    assert!(!ask(&mut cache, &fifth, &www, "after a skipped version"));
}

/// Owners the random changes pick from: the apex, plain names, empty
/// non-terminals (b.a), a delegation with glue, wildcards and names they
/// answer for, a CNAME and a DNAME target.
const OWNERS: &[&str] = &[
    "example.",
    "a.example.",
    "b.a.example.",
    "c.b.a.example.",
    "sub.example.",
    "ns.sub.example.",
    "*.example.",
    "*.w.example.",
    "x.w.example.",
    "mail.example.",
    "ns.example.",
    "*.a.example.",
    "alias.example.",
    "dn.example.",
    "t.dn.example.",
];

/// Names asked for besides the owners.
const QUERIES: &[&str] = &[
    "nx.example.",
    "q.b.a.example.",
    "z.sub.example.",
    "foo.w.example.",
    "y.x.w.example.",
    "zz.a.example.",
    "q.example.",
    "q.dn.example.",
];

const TYPES: &[RType] = &[
    RType::A,
    RType::TXT,
    RType::MX,
    RType::NS,
    RType::CNAME,
    RType::SOA,
    RType::DNAME,
    RType::ANY,
];

fn random_record(rng: &mut StdRng) -> (RType, u32, Vec<u8>) {
    let target = name(
        OWNERS[rng.random_range(1..OWNERS.len())]
            .replace('*', "t")
            .as_str(),
    );
    let ttl = [60, 300][rng.random_range(0..2)];
    match rng.random_range(0..9) {
        0..=2 => (RType::A, ttl, vec![192, 0, 2, rng.random_range(1..4)]),
        3 => (RType::TXT, ttl, vec![1, b'a' + rng.random_range(0..3)]),
        4 => {
            let mut rdata = vec![0, rng.random_range(1..3)];
            rdata.extend_from_slice(target.as_bytes());
            (RType::MX, ttl, rdata)
        }
        5 => (RType::NS, ttl, target.as_bytes().to_vec()),
        6 => (RType::CNAME, ttl, target.as_bytes().to_vec()),
        7 => (RType::DNAME, ttl, name("other.test.").as_bytes().to_vec()),
        _ => (RType::TXT, 300, vec![1, b'x']),
    }
}

/// Random updates, each a patched version; a core's cache of a random
/// half of all the questions (every owner and more, every type, with and
/// without EDNS's DO) asked between versions, invalidated by name when
/// the version lists its names: every answer it gives is the one the
/// version being served gives. And it does keep answers across versions
/// (the invalidation is not the whole zone's in disguise): positive and
/// negative ones (the SOA's serial rewritten), the apex's among them; one
/// version in five also changes the SOA's refresh, when the negative
/// answers must go.
#[test]
fn kept_answers_are_the_new_versions() {
    let mut kept = 0;
    let mut kept_negative = 0;
    let mut kept_apex = 0;
    let mut by_name = 0;
    let apex_name = name("example.");
    for seed in 0..12u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut serial = 1;
        let mut model = small_model(serial);
        let mut zone = build(&model);
        let mut cache = ResponseCache::new(CacheLimits::default());
        for step in 0..40 {
            let context = format!("seed {seed} step {step}");
            for text in OWNERS.iter().chain(QUERIES) {
                for &qtype in TYPES {
                    for dnssec in [false, true] {
                        if rng.random_range(0..2) == 0 {
                            let query = query(text, qtype, dnssec);
                            let hit = ask(&mut cache, &zone, &query, &context) && step > 0;
                            let answer = fresh(&zone, &query);
                            let negative = answer[3] & 0x0f == 3 || answer[6..8] == [0, 0];
                            kept += usize::from(hit);
                            kept_negative += usize::from(hit && negative);
                            kept_apex += usize::from(hit && name(text) == apex_name);
                        }
                    }
                }
            }
            // One to three owners changed, and the serial.
            let saved = model.clone();
            let mut owners = Vec::new();
            for _ in 0..rng.random_range(1..4) {
                let owner = name(OWNERS[rng.random_range(0..OWNERS.len())])
                    .as_bytes()
                    .to_vec();
                let records = model.entry(owner.clone()).or_default();
                match rng.random_range(0..4) {
                    0 | 1 => {
                        let record = random_record(&mut rng);
                        if !records.iter().any(|r| r.0 == record.0 && r.2 == record.2) {
                            records.push(record);
                        }
                    }
                    2 if !records.is_empty() => {
                        let at = rng.random_range(0..records.len());
                        records.remove(at);
                    }
                    _ => records.retain(|r| r.0 == RType::SOA),
                }
                if records.is_empty() {
                    model.remove(&owner);
                }
                owners.push(owner);
            }
            let refresh = if rng.random_range(0..5) == 0 {
                [3600, 7200][rng.random_range(0..2)]
            } else {
                model
                    .get(apex_name.as_bytes())
                    .and_then(|records| records.iter().find(|r| r.0 == RType::SOA))
                    .map_or(3600, |soa| {
                        let at = soa.2.len() - 16;
                        u32::from_be_bytes(soa.2[at..at + 4].try_into().unwrap())
                    })
            };
            owners.push(bump_refresh(&mut model, &mut serial, refresh));
            owners.sort();
            owners.dedup();
            match patch(&zone, &model, &owners) {
                Some(next) => {
                    by_name += usize::from(swap(&mut cache, &zone, &next));
                    zone = next;
                }
                None => model = saved, // refused (or left to a whole build)
            }
        }
    }
    eprintln!(
        "{by_name} versions invalidated by name, {kept} answers kept across versions \
         ({kept_negative} negative, {kept_apex} at the apex)"
    );
    assert!(by_name > 100, "{by_name} versions invalidated by name");
    assert!(kept > 1000, "{kept} answers kept");
    assert!(
        kept_negative > 3000,
        "{kept_negative} negative answers kept"
    );
    assert!(kept_apex > 200, "{kept_apex} answers at the apex kept");
}

/// A cut made at a name without names below it (a patch makes it): the
/// answers below it, a negative one and a wildcard's, become referrals.
/// Today the patch resolves every glue again then and lists no names (the
/// tag is invalidated whole); were it to list them, the name is marked as
/// changing what is below it.
#[test]
fn a_cut_made_reaches_the_answers_below() {
    let mut serial = 1;
    let mut model = small_model(serial);
    model.insert(
        name("*.example.").as_bytes().to_vec(),
        vec![(RType::TXT, 300, rdata(RType::TXT, "any"))],
    );
    let built = build(&model);
    let apex = bump(&mut model, &mut serial);
    let first = patch(&built, &model, &[apex]).unwrap();
    let mut cache = ResponseCache::new(CacheLimits::default());
    swap(&mut cache, &built, &first);

    // mail.example. has an A and nothing below it.
    let nx = query("x.mail.example.", RType::A, false);
    let wild = query("y.mail.example.", RType::TXT, false);
    for query in [&nx, &wild] {
        assert!(!ask(&mut cache, &first, query, "first"));
        assert!(ask(&mut cache, &first, query, "first, again"));
    }
    let apex = bump(&mut model, &mut serial);
    let second = patch(&first, &model, &[apex]).unwrap();
    assert!(swap(&mut cache, &first, &second));
    assert!(ask(&mut cache, &second, &nx, "kept"), "NXDOMAIN kept");
    assert!(ask(&mut cache, &second, &wild, "kept"), "wildcard kept");

    // NS at mail.example.: a cut, with no names below to move.
    let owner = name("mail.example.").as_bytes().to_vec();
    model
        .get_mut(&owner)
        .unwrap()
        .push((RType::NS, 300, name("ns.example.").as_bytes().to_vec()));
    let apex = bump(&mut model, &mut serial);
    let third = patch(&second, &model, &[owner, apex]).unwrap();
    swap(&mut cache, &second, &third);
    assert!(!ask(&mut cache, &third, &nx, "a referral now"));
    assert!(!ask(&mut cache, &third, &wild, "a referral now"));
}

/// An RRSIG over `covered` at the apex, by key 12345 of `example.`, with
/// 64 octets of signature: the cache never checks one.
fn rrsig_over(covered: RType, labels: u8) -> Vec<u8> {
    let mut rdata = covered.0.to_be_bytes().to_vec();
    rdata.extend_from_slice(&[13, labels]);
    rdata.extend_from_slice(&3600u32.to_be_bytes());
    rdata.extend_from_slice(&2_000_000_000u32.to_be_bytes());
    rdata.extend_from_slice(&1_900_000_000u32.to_be_bytes());
    rdata.extend_from_slice(&12345u16.to_be_bytes());
    rdata.extend_from_slice(name("example.").as_bytes());
    rdata.extend_from_slice(&[0x5a; 64]);
    rdata
}

/// A signed zone's negative answers asked with DO carry the SOA's RRSIG
/// beside the SOA: never kept across a version, since a serial rewritten
/// under a signature would make it bogus. The same answers without DO
/// (the SOA alone) are kept, with the new serial.
#[test]
fn signed_negative_answers_are_not_kept() {
    let mut serial = 1;
    let mut model = small_model(serial);
    let apex = name("example.").as_bytes().to_vec();
    model
        .get_mut(&apex)
        .unwrap()
        .push((RType::RRSIG, 3600, rrsig_over(RType::SOA, 1)));
    let built = build(&model);
    let bumped = bump(&mut model, &mut serial);
    let first = patch(&built, &model, &[bumped]).unwrap();
    let mut cache = ResponseCache::new(CacheLimits::default());
    swap(&mut cache, &built, &first);

    let signed_nx = query("nowhere.example.", RType::A, true);
    let plain_nx = query("nowhere.example.", RType::A, false);
    let signed_nodata = query("www.example.", RType::TXT, true);
    let plain_nodata = query("www.example.", RType::TXT, false);
    for query in [&signed_nx, &plain_nx, &signed_nodata, &plain_nodata] {
        assert!(!ask(&mut cache, &first, query, "first"));
        assert!(ask(&mut cache, &first, query, "first, again"));
    }
    // With DO the authority section holds the SOA and its RRSIG.
    for query in [&signed_nx, &signed_nodata] {
        let answer = fresh(&first, query);
        let counts = MessageView::parse(&answer).unwrap().header().counts();
        assert!(counts[2] >= 2, "authority {counts:?}");
    }

    let bumped = bump(&mut model, &mut serial);
    let second = patch(&first, &model, &[bumped]).unwrap();
    assert!(swap(&mut cache, &first, &second), "a serial step: by name");
    assert!(
        ask(&mut cache, &second, &plain_nx, "kept"),
        "NXDOMAIN without DO kept"
    );
    assert!(
        ask(&mut cache, &second, &plain_nodata, "kept"),
        "NODATA without DO kept"
    );
    assert!(
        !ask(&mut cache, &second, &signed_nx, "signed"),
        "NXDOMAIN with DO answered afresh"
    );
    assert!(
        !ask(&mut cache, &second, &signed_nodata, "signed"),
        "NODATA with DO answered afresh"
    );
}
