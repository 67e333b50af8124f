//! One hash of a query's name for the answer cache and the zone index
//! (`tern_wire::hash::NameHasher::process`): the name hash the cache makes
//! for a key ([`KeyHash::name`]) is the one the zone's look-up takes, and
//! an answer looked up with it (`respond_to_at` with a `HashedName`), as
//! the server does on a miss, is the answer looked up without it, byte
//! for byte. If the cache's name hash and the zone index's hash were two
//! functions, the look-up of the name itself would miss: an existing
//! name would be answered NXDOMAIN (and debug builds stop at the check in
//! `HashedName::with_hash`).
//!
//! [`KeyHash::name`]: tern_cache::KeyHash::name

use tern_authority::{respond_to_at, Catalog, Options, Response, Transport, ZoneBuilder};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::hash::{HashedName, NameHasher};
use tern_wire::name::NameBuf;
use tern_wire::parse::MessageView;
use tern_wire::query::Query;
use tern_wire::types::{RClass, RType};

fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

fn query(qname: &str, qtype: RType) -> Vec<u8> {
    let mut query = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    query.extend_from_slice(name(qname).as_bytes());
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&1u16.to_be_bytes());
    query.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    query
}

fn key(query: &[u8]) -> CacheKey {
    let view = MessageView::parse(query).unwrap();
    let edns = view.edns().unwrap();
    CacheKey::from_query(&view, edns.as_ref()).unwrap()
}

#[test]
fn the_caches_name_hash_finds_the_zones_names() {
    let origin = name("example.");
    let mut builder = ZoneBuilder::new(origin.as_name());
    let mut soa = name("ns.example.").as_bytes().to_vec();
    soa.extend_from_slice(name("host.example.").as_bytes());
    for value in [1u32, 3600, 900, 604800, 300] {
        soa.extend_from_slice(&value.to_be_bytes());
    }
    builder
        .insert(origin.as_name(), RType::SOA, RClass::IN, 3600, &soa)
        .unwrap();
    // Enough names for a zone index of several shards.
    let owners: Vec<String> = (0..3000)
        .map(|i| format!("h{i}.example."))
        .chain(["a.b.example.".into(), "c.b.example.".into()])
        .collect();
    for owner in &owners {
        builder
            .insert(
                name(owner).as_name(),
                RType::A,
                RClass::IN,
                60,
                &[192, 0, 2, 1],
            )
            .unwrap();
    }
    let catalog = Catalog::new(vec![builder.finish().unwrap()]);
    let cache = ResponseCache::new(CacheLimits::default());
    let options = Options::default();
    let asked = owners
        .iter()
        .map(|owner| (owner.to_uppercase(), RType::A))
        .chain([
            ("nope.example.".into(), RType::A),
            ("h7.example.".into(), RType::AAAA),
            ("x.a.b.example.".into(), RType::A),
        ]);
    let mut found = 0;
    for (qname, qtype) in asked {
        let bytes = query(&qname, qtype);
        let key = key(&bytes);
        let hash = cache.key_hash(&key);
        assert_eq!(
            hash.name(),
            NameHasher::process().hash(key.name.as_bytes()),
            "{qname}"
        );
        let parsed = Query::parse(&bytes);
        let mut hashed = vec![0u8; 4096];
        let mut plain = vec![0u8; 4096];
        let given = HashedName::with_hash(key.name.as_name(), hash.name());
        let with_hash = respond_to_at(
            &catalog,
            &parsed,
            Some(given),
            Transport::Udp,
            &options,
            &[],
            &mut hashed,
        );
        let without = respond_to_at(
            &catalog,
            &parsed,
            None,
            Transport::Udp,
            &options,
            &[],
            &mut plain,
        );
        assert_eq!(with_hash, without, "{qname}");
        let (Response::Send(len), Some(_)) = with_hash else {
            panic!("{qname}: not answered from the zone");
        };
        assert_eq!(hashed[..len], plain[..len], "{qname}");
        // NOERROR with an answer record for the names that exist.
        if hashed[3] & 0x0f == 0 && hashed[6..8] == [0, 1] {
            found += 1;
        }
    }
    assert_eq!(found, owners.len());
}
