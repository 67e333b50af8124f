//! Answers built by `tern_authority::respond` from a real zone, so the bytes
//! tested are exactly those the server stores.

use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_wire::parse::MessageView;
use tern_wire::types::RType;

use super::*;

const ZONE: &str = "\
$TTL 300
@        SOA   ns1 hostmaster 1 7200 3600 1209600 300
@        NS    ns1
ns1      A     192.0.2.53
www      A     192.0.2.1
www      AAAA  2001:db8::1
mail     MX    10 mx
mx       A     192.0.2.25
mx       AAAA  2001:db8::25
alias    CNAME www
*.wild   A     192.0.2.7
*.big    TXT   \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"
*.big    TXT   \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"
*.big    TXT   \"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\"
*.big    TXT   \"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd\"
*.big    TXT   \"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\"
*.big    TXT   \"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"
sub      NS    ns.sub
ns.sub   A     192.0.2.99
";

fn catalog() -> Catalog {
    tern_testkit::catalog("example.", ZONE)
}

/// How to ask.
#[derive(Clone, Copy)]
struct Ask {
    id: u16,
    rd: bool,
    /// EDNS: (DO, version).
    edns: Option<(bool, u8)>,
}

const EDNS: Ask = Ask {
    id: 0x4242,
    rd: false,
    edns: Some((false, 0)),
};

const PLAIN: Ask = Ask {
    id: 0x4242,
    rd: false,
    edns: None,
};

/// Query bytes; `qname` is written with its case kept. An OPT announces
/// 1232 octets.
fn query(qname: &str, qtype: RType, ask: Ask) -> Vec<u8> {
    let edns = ask
        .edns
        .map(|(dnssec_ok, version)| (1232, dnssec_ok, version));
    tern_testkit::query_with(ask.id, ask.rd, qname, qtype.0, edns)
}

fn key(query: &[u8]) -> CacheKey {
    try_key(query).expect("cacheable query")
}

fn try_key(query: &[u8]) -> Option<CacheKey> {
    let view = MessageView::parse(query).unwrap();
    let edns = view.edns().unwrap();
    CacheKey::from_query(&view, edns.as_ref())
}

/// The slow path's answer.
fn slow(catalog: &Catalog, query: &[u8], transport: Transport) -> Vec<u8> {
    let mut out = vec![0; 65535];
    match respond(catalog, query, transport, &Options::default(), &mut out) {
        Response::Send(len) => out[..len].to_vec(),
        Response::Drop => panic!("dropped"),
    }
}

/// The cache's answer, with a roomy limit.
fn hit(cache: &mut ResponseCache, query: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![0; 65535];
    let len = cache.answer(&key(query), query, 65535, &mut out)?;
    Some(out[..len].to_vec())
}

/// Inserts as a name asked twice would be: once the cache is full, its
/// first miss is only noted by the doorkeeper, the second is stored.
fn insert_twice(cache: &mut ResponseCache, key: CacheKey, answer: &[u8]) -> bool {
    let refused = cache.counters().not_admitted;
    if cache.insert(key, answer) {
        return true;
    }
    cache.counters().not_admitted == refused + 1 && cache.insert(key, answer)
}

fn small(max_entries: usize, max_bytes: usize) -> ResponseCache {
    ResponseCache::new(CacheLimits {
        max_entries,
        max_bytes,
    })
}

#[test]
fn hit_equals_the_slow_path_for_another_id_rd_and_case() {
    let catalog = catalog();
    let cases: &[(&str, RType, &str)] = &[
        ("www.example.", RType::A, "wWw.EXAMPLE."),
        ("www.example.", RType::AAAA, "WWW.example."),
        ("mail.example.", RType::MX, "MaIl.ExAmPlE."),
        ("alias.example.", RType::A, "ALIAS.example."),
        ("x.wild.example.", RType::A, "X.Wild.Example."),
        ("nope.example.", RType::A, "NoPe.example."), // NXDOMAIN
        ("www.example.", RType::TXT, "www.Example."), // NODATA
        ("a.sub.example.", RType::A, "A.SUB.example."), // referral
        ("example.", RType::NS, "EXAMPLE."),
    ];
    for &(stored, qtype, asked) in cases {
        for ask in [EDNS, PLAIN] {
            let mut cache = ResponseCache::new(CacheLimits::default());
            let first = query(stored, qtype, ask);
            assert_eq!(
                hit(&mut cache, &first),
                None,
                "{stored} {qtype}: empty cache"
            );
            let answer = slow(&catalog, &first, Transport::Udp);
            assert!(cache.insert(key(&first), &answer), "{stored} {qtype}");
            assert_eq!(cache.len(), 1);

            // The same query: the same bytes.
            assert_eq!(hit(&mut cache, &first).unwrap(), answer);

            // Another ID, RD set, another case: what respond would say.
            let again = Ask {
                id: 0xbeef,
                rd: true,
                ..ask
            };
            let second = query(asked, qtype, again);
            let cached = hit(&mut cache, &second).expect("hit");
            assert_eq!(
                cached,
                slow(&catalog, &second, Transport::Udp),
                "{asked} {qtype}"
            );
            assert_eq!(&cached[..2], &[0xbe, 0xef]);
            assert_eq!(cached[2] & RD, RD);
            // The question echoes the client's case.
            let qlen = second.len() - if ask.edns.is_some() { 11 } else { 0 };
            assert_eq!(&cached[12..qlen], &second[12..qlen]);
        }
    }
}

/// `insert_written` (the server's miss path, which does not parse its own
/// answer again) stores what `insert_tagged` stores for every answer
/// `respond` writes, and refuses what it refuses by the header: TC, an
/// rcode other than NOERROR and NXDOMAIN.
#[test]
fn an_answer_written_for_the_key_is_stored_as_insert_stores_it() {
    let catalog = catalog();
    let cases: &[(&str, RType)] = &[
        ("wWw.example.", RType::A),
        ("mail.example.", RType::MX),
        ("alias.example.", RType::A),
        ("X.wild.example.", RType::A),
        ("nope.example.", RType::A),
        ("www.example.", RType::TXT),
        ("a.sub.example.", RType::A),
        ("other.test.", RType::A), // REFUSED: not stored
        ("x.big.example.", RType::TXT),
    ];
    for &(name, qtype) in cases {
        for ask in [EDNS, PLAIN] {
            for dnssec_ok in [false, true] {
                let ask = Ask {
                    edns: ask.edns.map(|(_, version)| (dnssec_ok, version)),
                    ..ask
                };
                let asked = query(name, qtype, ask);
                let head_len = MessageView::parse(&asked)
                    .unwrap()
                    .question()
                    .map_or(HEADER_LEN, |question| HEADER_LEN + question.bytes.len());
                // At 512 octets (without EDNS) the big TXT set is cut: TC.
                let mut out = vec![0; 512];
                let len = match respond(
                    &catalog,
                    &asked,
                    Transport::Udp,
                    &Options::default(),
                    &mut out,
                ) {
                    Response::Send(len) => len,
                    Response::Drop => panic!("dropped"),
                };
                let answer = &out[..len];
                let mut checked = ResponseCache::new(CacheLimits::default());
                let mut written = ResponseCache::new(CacheLimits::default());
                let stored = checked.insert_tagged(key(&asked), answer, 7);
                assert_eq!(
                    {
                        let key = key(&asked);
                        let hash = written.key_hash(&key);
                        written.insert_written(&key, hash, answer, head_len, 7)
                    },
                    stored,
                    "{name} {qtype}"
                );
                assert_eq!(hit(&mut written, &asked), hit(&mut checked, &asked));
            }
        }
    }
}

#[test]
fn rd_is_taken_from_each_query() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let with_rd = query("www.example.", RType::A, Ask { rd: true, ..EDNS });
    assert!(cache.insert(key(&with_rd), &slow(&catalog, &with_rd, Transport::Udp)));
    let without = query("www.example.", RType::A, EDNS);
    let cached = hit(&mut cache, &without).unwrap();
    assert_eq!(cached[2] & RD, 0);
    assert_eq!(cached, slow(&catalog, &without, Transport::Udp));
}

#[test]
fn cd_is_taken_from_each_query() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let mut with_cd = query("www.example.", RType::A, EDNS);
    with_cd[3] |= CD;
    let answer = slow(&catalog, &with_cd, Transport::Udp);
    assert_eq!(answer[3] & CD, CD, "respond copies CD");
    assert!(cache.insert(key(&with_cd), &answer));
    let without = query("www.example.", RType::A, EDNS);
    let cached = hit(&mut cache, &without).unwrap();
    assert_eq!(cached[3] & CD, 0);
    assert_eq!(cached, slow(&catalog, &without, Transport::Udp));
    assert_eq!(hit(&mut cache, &with_cd).unwrap(), answer);
}

#[test]
fn dnssec_ok_and_edns_presence_are_separate_keys() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let plain = query("www.example.", RType::A, PLAIN);
    let edns = query("www.example.", RType::A, EDNS);
    let dnssec = query(
        "www.example.",
        RType::A,
        Ask {
            edns: Some((true, 0)),
            ..EDNS
        },
    );
    assert!(cache.insert(key(&edns), &slow(&catalog, &edns, Transport::Udp)));
    assert_eq!(hit(&mut cache, &plain), None);
    assert_eq!(hit(&mut cache, &dnssec), None);
    assert!(hit(&mut cache, &edns).is_some());

    // An answer stored under the wrong EDNS flags is refused.
    assert!(!cache.insert(key(&plain), &slow(&catalog, &edns, Transport::Udp)));
    assert!(!cache.insert(key(&dnssec), &slow(&catalog, &edns, Transport::Udp)));

    assert!(cache.insert(key(&plain), &slow(&catalog, &plain, Transport::Udp)));
    assert!(cache.insert(key(&dnssec), &slow(&catalog, &dnssec, Transport::Udp)));
    assert_eq!(cache.len(), 3);
    for q in [&plain, &edns, &dnssec] {
        assert_eq!(
            hit(&mut cache, q).unwrap(),
            slow(&catalog, q, Transport::Udp)
        );
    }
    // The DO bit comes back in each answer's OPT.
    let with_do = hit(&mut cache, &dnssec).unwrap();
    assert_eq!(with_do[with_do.len() - 4] & 0x80, 0x80);
}

#[test]
fn refuses_truncated_error_and_malformed_answers() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());

    // TC: six 100-octet TXT records do not fit in 512 octets without EDNS.
    let big = query("x.big.example.", RType::TXT, PLAIN);
    let truncated = slow(&catalog, &big, Transport::Udp);
    assert_eq!(truncated[2] & 0x02, 0x02, "TC set by respond");
    assert!(!cache.insert(key(&big), &truncated));
    // Over TCP it fits, and is stored.
    assert!(cache.insert(key(&big), &slow(&catalog, &big, Transport::Tcp)));

    // REFUSED: a name in no zone.
    let outside = query("www.example.org.", RType::A, EDNS);
    let refused = slow(&catalog, &outside, Transport::Udp);
    assert_eq!(refused[3] & 0x0f, 5);
    assert!(!cache.insert(key(&outside), &refused));

    // SERVFAIL, FORMERR, NOTIMP: a good answer with its rcode changed.
    let www = query("www.example.", RType::A, EDNS);
    let good = slow(&catalog, &www, Transport::Udp);
    for rcode in [1, 2, 4, 5] {
        let mut bad = good.clone();
        bad[3] = (bad[3] & 0xf0) | rcode;
        assert!(!cache.insert(key(&www), &bad), "rcode {rcode}");
    }
    // QR clear; opcode not QUERY.
    let mut query_bit = good.clone();
    query_bit[2] &= !0x80;
    assert!(!cache.insert(key(&www), &query_bit));
    let mut notify = good.clone();
    notify[2] |= 4 << 3;
    assert!(!cache.insert(key(&www), &notify));
    // BADVERS: header rcode 0, extended rcode 1 in the OPT.
    let v1 = query(
        "www.example.",
        RType::A,
        Ask {
            edns: Some((false, 1)),
            ..EDNS
        },
    );
    assert_eq!(try_key(&v1), None);
    let badvers = slow(&catalog, &v1, Transport::Udp);
    assert_eq!(badvers[3] & 0x0f, 0);
    assert!(!cache.insert(key(&www), &badvers));

    // Malformed: every strict prefix, trailing bytes, a lying count, junk.
    for cut in 0..good.len() {
        assert!(!cache.insert(key(&www), &good[..cut]), "cut at {cut}");
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(!cache.insert(key(&www), &trailing));
    let mut more = good.clone();
    more[7] += 1; // ANCOUNT
    assert!(!cache.insert(key(&www), &more));
    assert!(!cache.insert(key(&www), &[0xff; 64]));
    assert!(!cache.insert(key(&www), &vec![0; MAX_ANSWER_LEN + 1]));

    // Only the TCP answer went in.
    assert_eq!(cache.len(), 1);
    assert_eq!(hit(&mut cache, &www), None);
    assert!(cache.insert(key(&www), &good));
    assert_eq!(hit(&mut cache, &www).unwrap(), good);
}

#[test]
fn an_answer_to_another_question_is_refused() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let www = query("www.example.", RType::A, EDNS);
    let aaaa = query("www.example.", RType::AAAA, EDNS);
    let mail = query("mail.example.", RType::MX, EDNS);
    assert!(!cache.insert(key(&www), &slow(&catalog, &mail, Transport::Udp)));
    assert!(!cache.insert(key(&www), &slow(&catalog, &aaaa, Transport::Udp)));
    assert!(cache.is_empty());
    // The question's case does not matter.
    let upper = query("WWW.EXAMPLE.", RType::A, EDNS);
    assert!(cache.insert(key(&www), &slow(&catalog, &upper, Transport::Udp)));
    assert_eq!(
        hit(&mut cache, &www).unwrap(),
        slow(&catalog, &www, Transport::Udp)
    );
}

#[test]
fn a_query_that_does_not_match_its_key_misses() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let www = query("www.example.", RType::A, EDNS);
    let wwx = query("wwx.example.", RType::A, EDNS);
    let aaaa = query("www.example.", RType::AAAA, EDNS);
    assert!(cache.insert(key(&www), &slow(&catalog, &www, Transport::Udp)));
    let mut out = vec![0; 4096];
    assert!(cache.answer(&key(&www), &www, 4096, &mut out).is_some());
    assert_eq!(cache.answer(&key(&www), &wwx, 4096, &mut out), None);
    assert_eq!(cache.answer(&key(&www), &aaaa, 4096, &mut out), None);
    assert_eq!(cache.answer(&key(&www), &www[..20], 4096, &mut out), None);
}

#[test]
fn limit_and_output_size_are_respected() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let big = query("x.big.example.", RType::TXT, PLAIN);
    let answer = slow(&catalog, &big, Transport::Tcp);
    assert!(answer.len() > 512);
    assert!(cache.insert(key(&big), &answer));

    let mut out = vec![0xaa; 65535];
    let k = key(&big);
    assert_eq!(cache.answer(&k, &big, 512, &mut out), None);
    assert_eq!(cache.answer(&k, &big, answer.len() - 1, &mut out), None);
    assert!(
        out.iter().all(|&b| b == 0xaa),
        "nothing written on a decline"
    );
    assert_eq!(
        cache.answer(&k, &big, answer.len(), &mut out),
        Some(answer.len())
    );
    assert_eq!(&out[..answer.len()], &answer[..]);
    // An output buffer too short is a decline, not a panic.
    let mut short = vec![0; answer.len() - 1];
    assert_eq!(cache.answer(&k, &big, 65535, &mut short), None);
}

#[test]
fn a_replacing_answer_of_the_same_size_keeps_the_extent() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let www = query("www.example.", RType::A, EDNS);
    let answer = slow(&catalog, &www, Transport::Udp);
    assert!(cache.insert(key(&www), &answer));
    assert_eq!(cache.slab_calls, 1);
    let extents = live_extents(&cache);
    // Replaced by an answer of its size: the same extent, no slab call.
    for round in 0..3 {
        assert!(cache.insert(key(&www), &answer));
        assert_eq!((cache.len(), cache.slab_calls), (1, 1), "{round}");
        assert_eq!(live_extents(&cache), extents);
        assert_eq!(hit(&mut cache, &www).as_deref(), Some(&answer[..]));
    }
    cache.slab.assert_consistent(&live_extents(&cache));
}

#[test]
fn insert_replaces_an_entry_with_the_same_key() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let www = query("www.example.", RType::A, EDNS);
    let answer = slow(&catalog, &www, Transport::Udp);
    assert!(cache.insert(key(&www), &answer));
    let bytes = cache.bytes();
    let stored = TEMPLATE_LEN + answer.len() - HEADER_LEN - 4;
    assert_eq!(stored, answer.len() - 6);
    assert_eq!(bytes, stored.next_multiple_of(GRANULE) + ENTRY_OVERHEAD);
    assert!(cache.insert(key(&www), &answer));
    assert_eq!((cache.len(), cache.bytes()), (1, bytes));
}

#[test]
fn clear_empties_and_the_cache_still_works() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let names = ["www.example.", "mail.example.", "nope.example."];
    for name in names {
        let q = query(name, RType::A, EDNS);
        assert!(cache.insert(key(&q), &slow(&catalog, &q, Transport::Udp)));
    }
    assert_eq!(cache.len(), 3);
    cache.clear();
    assert!(cache.is_empty());
    assert_eq!((cache.len(), cache.bytes()), (0, 0));
    for name in names {
        assert_eq!(hit(&mut cache, &query(name, RType::A, EDNS)), None);
    }
    let q = query("www.example.", RType::A, EDNS);
    assert!(cache.insert(key(&q), &slow(&catalog, &q, Transport::Udp)));
    assert_eq!(
        hit(&mut cache, &q).unwrap(),
        slow(&catalog, &q, Transport::Udp)
    );
}

#[test]
fn invalidating_a_tag_drops_its_entries_and_no_others() {
    let catalog = catalog();
    let mut cache = ResponseCache::new(CacheLimits::default());
    let (www, mail) = (
        query("www.example.", RType::A, EDNS),
        query("mail.example.", RType::A, EDNS),
    );
    assert!(cache.insert_tagged(key(&www), &slow(&catalog, &www, Transport::Udp), 1));
    assert!(cache.insert_tagged(key(&mail), &slow(&catalog, &mail, Transport::Udp), 2));
    cache.invalidate_tag(1);
    assert_eq!(hit(&mut cache, &www), None, "tag 1 was invalidated");
    assert!(hit(&mut cache, &mail).is_some(), "tag 2 was not");
    // Stored again after the invalidation: it answers.
    assert!(cache.insert_tagged(key(&www), &slow(&catalog, &www, Transport::Udp), 1));
    assert!(hit(&mut cache, &www).is_some());
    assert_eq!(
        cache.len(),
        2,
        "the stale entry was replaced, not kept beside"
    );
    // A tag never seen before, far past the others.
    cache.invalidate_tag(70_000);
    assert!(hit(&mut cache, &www).is_some());
    cache.invalidate_tag(2);
    assert_eq!(hit(&mut cache, &mail), None);
    assert!(hit(&mut cache, &www).is_some());
    // After a clear the clock starts again and old invalidations are gone.
    cache.clear();
    assert!(cache.insert_tagged(key(&mail), &slow(&catalog, &mail, Transport::Udp), 2));
    assert!(hit(&mut cache, &mail).is_some());
}

#[test]
fn zero_limits_store_nothing() {
    let catalog = catalog();
    let q = query("www.example.", RType::A, EDNS);
    let answer = slow(&catalog, &q, Transport::Udp);
    let mut no_entries = small(0, 1 << 20);
    assert!(!no_entries.insert(key(&q), &answer));
    let mut no_bytes = small(10, ENTRY_OVERHEAD);
    assert!(!no_bytes.insert(key(&q), &answer));
    assert!(no_entries.is_empty() && no_bytes.is_empty());
}

/// Writes six decimal digits of `i` at `at` in a query or an answer.
fn number(bytes: &mut [u8], at: usize, i: u32) {
    let digits = format!("{i:06}");
    bytes[at..at + 6].copy_from_slice(digits.as_bytes());
}

/// A million unique names (wildcard answers, a small and a large kind)
/// into a small cache: both limits hold after every insert, and an entry
/// that keeps being asked for survives the flood.
#[test]
fn a_flood_of_unique_names_keeps_both_limits() {
    const FLOOD: u32 = 1_000_000;
    const MAX_ENTRIES: usize = 64;
    const MAX_BYTES: usize = 16 * 1024;
    let catalog = catalog();
    let mut cache = small(MAX_ENTRIES, MAX_BYTES);

    // Templates: `n000000.wild.example.` A (about 60 octets) and
    // `n000000.big.example.` TXT (over 600 octets). The answers' owners
    // are pointers to the question, so only the question's digits change
    // from one name to the next; checked against respond below.
    let mut small_q = query("n000000.wild.example.", RType::A, EDNS);
    let mut small_a = slow(&catalog, &small_q, Transport::Udp);
    let mut big_q = query("n000000.big.example.", RType::TXT, EDNS);
    let mut big_a = slow(&catalog, &big_q, Transport::Tcp);
    assert!(big_a.len() > 600);
    let digits = HEADER_LEN + 2; // after the length octet and the 'n'

    let hot = query("www.example.", RType::A, EDNS);
    let hot_answer = slow(&catalog, &hot, Transport::Udp);
    assert!(cache.insert(key(&hot), &hot_answer));

    let mut rng: u32 = 0x2545_f491;
    let mut out = vec![0; 65535];
    let mut most_bytes = 0;
    let mut most_entries = 0;
    for i in 0..FLOOD {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let big = rng & 7 == 0;
        let (q, a) = if big {
            (&mut big_q, &mut big_a)
        } else {
            (&mut small_q, &mut small_a)
        };
        number(q, digits, i);
        number(a, digits, i);
        if i % 250_000 == 1 {
            let transport = if big { Transport::Tcp } else { Transport::Udp };
            assert_eq!(*a, slow(&catalog, q, transport), "template still exact");
        }
        let k = key(q);
        assert!(insert_twice(&mut cache, k, a));
        assert!(cache.len() <= MAX_ENTRIES, "entries at {i}");
        assert!(cache.bytes() <= MAX_BYTES, "bytes at {i}");
        most_bytes = most_bytes.max(cache.bytes());
        most_entries = most_entries.max(cache.len());
        // The newest entry is there and answers. (Not every time: a hit
        // marks it visited, and a flood is made of names asked once.)
        if i % 1000 == 0 {
            assert_eq!(cache.answer(&k, q, 65535, &mut out), Some(a.len()));
        }
        // A client keeps asking for the hot name.
        if i % 16 == 0 {
            assert_eq!(
                cache.answer(&key(&hot), &hot, 65535, &mut out),
                Some(hot_answer.len()),
                "hot entry evicted at {i}"
            );
        }
    }
    // Both limits were reached at some point, so both were enforced.
    assert_eq!(most_entries, MAX_ENTRIES);
    assert!(most_bytes > MAX_BYTES - 700);
    // The accounting matches a recount from the slots.
    let recount: usize = cache
        .slots
        .iter()
        .filter(|slot| slot.len != 0)
        .map(Slot::cost)
        .sum();
    assert_eq!(recount, cache.bytes());
    assert_eq!(cache.table.len(), cache.len());
    cache.slab.assert_consistent(&live_extents(&cache));
    // Evictions for want of one piece large enough are rare: the flood's
    // FIFO order frees neighbours together.
    let counters = cache.counters();
    assert_eq!(counters.stored, u64::from(FLOOD) + 1);
    assert_eq!(counters.evicted, counters.stored - cache.len() as u64);
    assert!(
        counters.evicted_to_fit * 50 < counters.evicted,
        "{counters:?}"
    );
}

/// The extents of the live entries: first granule -> granules.
fn live_extents(cache: &ResponseCache) -> std::collections::BTreeMap<u32, u32> {
    cache
        .slots
        .iter()
        .filter(|slot| slot.len != 0)
        .map(|slot| (slot.at, slot.granules() as u32))
        .collect()
}

/// The SIEVE list stays consistent through inserts, hits, replacements
/// and evictions: walking it from the tail visits every entry once.
#[test]
fn list_and_index_stay_consistent() {
    let catalog = catalog();
    let mut cache = small(8, 1 << 20);
    let mut out = vec![0; 4096];
    for i in 0..200u32 {
        let name = format!("n{}.wild.example.", i % 13);
        let q = query(&name, RType::A, EDNS);
        if i % 3 == 0 {
            let _ = cache.answer(&key(&q), &q, 4096, &mut out);
        } else {
            let answer = slow(&catalog, &q, Transport::Udp);
            assert!(insert_twice(&mut cache, key(&q), &answer));
        }
        let mut seen = 0;
        let mut at = cache.tail;
        let mut previous = NIL;
        while at != NIL {
            let slot = &cache.slots[at as usize];
            assert_eq!(slot.prev, previous);
            assert_ne!(slot.len, 0);
            previous = at;
            at = slot.next;
            seen += 1;
            assert!(seen <= cache.len());
        }
        assert_eq!(previous, cache.head);
        assert_eq!(seen, cache.len());
        assert_eq!(cache.table.len(), cache.len());
        cache.slab.assert_consistent(&live_extents(&cache));
        assert!(cache.hand == NIL || cache.slots[cache.hand as usize].len != 0);
    }
}

/// The memory a cache will use is taken when it is made: a flood of
/// answers of every size (evicting by entries, by bytes and to fit), a
/// clear and another flood leave the index, the slot array and the slab
/// with the capacity and place they had (the allocation-counting proof is
/// `tests/alloc_hit.rs` and tern-server's `alloc_miss_flood`).
#[test]
fn memory_is_taken_once() {
    let catalog = catalog();
    let mut cache = small(300, 48 << 10);
    let table = (cache.table.capacity(), cache.table.len());
    let slots = (cache.slots.capacity(), cache.slots.as_ptr());
    let slab = cache.slab.capacity();
    assert!(
        table.0 >= 2 * 300,
        "the index has room for twice the entries"
    );
    assert!(slots.0 >= 300);
    assert_eq!(slab, 48 << 10);
    for round in 0..2 {
        for i in 0..3000u32 {
            let (name, qtype, transport) = match i % 5 {
                0 => (format!("n{i}.big.example."), RType::TXT, Transport::Tcp),
                1 => (format!("n{i}.example."), RType::A, Transport::Udp),
                _ => (format!("n{i}.wild.example."), RType::A, Transport::Udp),
            };
            let q = query(&name, qtype, if i % 3 == 0 { PLAIN } else { EDNS });
            let answer = slow(&catalog, &q, transport);
            assert!(insert_twice(&mut cache, key(&q), &answer), "{name}");
            if i % 7 == 0 {
                assert_eq!(hit(&mut cache, &q), Some(answer));
            }
            assert!(cache.len() <= 300 && cache.bytes() <= 48 << 10);
        }
        cache.slab.assert_consistent(&live_extents(&cache));
        // Never grown: a reallocation would double the capacity, while the
        // tombstones of removed entries (their number depends on the hash
        // key, random per process) only lower what hashbrown reports.
        assert!(cache.table.capacity() <= table.0, "round {round}");
        assert_eq!((cache.slots.capacity(), cache.slots.as_ptr()), slots);
        assert_eq!(cache.slab.capacity(), slab);
        cache.clear();
        assert_eq!(cache.table.capacity(), table.0);
    }
    assert!(cache.counters().evicted > 4000);
}

#[test]
fn limits_are_lowered_to_what_can_be_held() {
    // 76 000 bytes hold at most 1000 entries of one granule.
    let cache = small(1 << 20, 1000 * (ENTRY_OVERHEAD + GRANULE));
    assert_eq!(cache.limits().max_entries, 1000);
    assert!(cache.table.capacity() < 4 * 2 * 1000);
    // The slab is never larger than the entries could fill.
    let cache = small(10, 1 << 30);
    assert_eq!(cache.slab.capacity(), 10 * MAX_ENTRY_LEN);
    assert_eq!(cache.limits().max_bytes, 1 << 30);
    // Off: nothing reserved.
    let off = small(0, 1 << 30);
    assert_eq!(off.slab.capacity(), 0);
    assert_eq!((off.table.capacity(), off.slots.capacity()), (0, 0));
    assert_eq!(size_of::<Slot>(), 32, "the module docs say so");
}

/// A zone whose `*.huge` owns one TXT record per length in `lengths`
/// (each a distinct string of that many octets, at least 3).
fn huge(lengths: &[usize]) -> Catalog {
    let mut text = String::from("$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n");
    text.push_str("@ NS ns1\n");
    for (i, &len) in lengths.iter().enumerate() {
        text.push_str(&format!("*.huge TXT \"{i:03}{}\"\n", "x".repeat(len - 3)));
    }
    tern_testkit::catalog("example.", &text)
}

/// An answer too large for the slab's largest extent is answered by
/// `respond` each time, and counted; one octet shorter, it is stored.
#[test]
fn answers_beyond_the_largest_extent_are_counted_not_stored() {
    let q = query("a.huge.example.", RType::TXT, PLAIN);
    // Each record: a pointer to the question (2), type, class, TTL and
    // length (10), the string's length octet and its text.
    let one = slow(&huge(&[10]), &q, Transport::Tcp).len();
    let base = one - (13 + 10);
    let largest = MAX_ENTRY_LEN + 6;
    let records = (largest - base - 13 - 3) / 213;
    let last = largest - base - records * 213 - 13;
    let mut lengths = vec![200; records];
    lengths.push(last);
    let fits = slow(&huge(&lengths), &q, Transport::Tcp);
    assert_eq!(fits.len(), largest, "the largest answer stored");
    *lengths.last_mut().unwrap() += 1;
    let too_large = slow(&huge(&lengths), &q, Transport::Tcp);
    assert_eq!(too_large.len(), largest + 1);

    let mut cache = ResponseCache::new(CacheLimits::default());
    assert!(!cache.insert(key(&q), &too_large));
    assert_eq!(cache.counters().too_large, 1);
    assert!(cache.is_empty());
    assert!(cache.insert(key(&q), &fits));
    assert_eq!(cache.bytes(), MAX_ENTRY_LEN + ENTRY_OVERHEAD);
    assert_eq!(hit(&mut cache, &q), Some(fits));
    assert_eq!(cache.counters().too_large, 1);
}

#[test]
fn swar_lowercase_agrees_with_std_for_every_octet() {
    for b in 0..=255u8 {
        for position in 0..8 {
            // The octet among neighbours that could carry into it.
            let mut bytes = [0xff, b'Z', b'@', b'[', b'A', 0x80, 0xc1, 0x7f];
            bytes[position] = b;
            let expected = bytes.map(|x| x.to_ascii_lowercase());
            assert_eq!(
                lowercase8(u64::from_le_bytes(bytes)).to_le_bytes(),
                expected,
                "octet {b:#04x} at {position}"
            );
        }
    }
}

#[test]
fn eq_lowercase_matches_eq_ignore_ascii_case_against_lowercase() {
    let mut rng: u32 = 0x9e37_79b9;
    let alphabet = b"aAzZ@[`{09-\x00\x3f\xc1\xe1";
    for _ in 0..20_000 {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let len = (rng % 40) as usize;
        let mixed: Vec<u8> = (0..len)
            .map(|i| alphabet[((rng >> (i % 24)) as usize + i) % alphabet.len()])
            .collect();
        let mut lower = mixed.to_ascii_lowercase();
        assert!(eq_lowercase(&mixed, &lower));
        if len > 0 {
            let at = (rng as usize >> 3) % len;
            lower[at] ^= 1 << (rng % 8);
            assert_eq!(
                eq_lowercase(&mixed, &lower),
                mixed.to_ascii_lowercase() == lower
            );
        }
        assert!(!eq_lowercase(&mixed, &lower[..len.saturating_sub(1)]) || len == 0);
    }
}

/// Admission: once the cache is full, a flood of names asked once is
/// answered but, but for the doorkeeper's rare shared bits, not stored
/// (nothing evicted for it), and a name is stored at its second miss.
#[test]
fn a_full_cache_stores_a_name_at_its_second_miss() {
    const ENTRIES: usize = 64;
    const FLOOD: usize = 10 * ENTRIES;
    let catalog = catalog();
    let mut cache = small(ENTRIES, 1 << 20);
    for i in 0..ENTRIES {
        let q = query(&format!("r{i}.wild.example."), RType::A, EDNS);
        assert!(cache.insert(key(&q), &slow(&catalog, &q, Transport::Udp)));
    }
    assert_eq!(cache.len(), ENTRIES);
    assert_eq!(
        cache.counters().not_admitted,
        0,
        "stored while there was room"
    );
    for i in 0..FLOOD {
        let q = query(&format!("f{i}.wild.example."), RType::A, EDNS);
        let _ = cache.insert(key(&q), &slow(&catalog, &q, Transport::Udp));
    }
    let counters = cache.counters();
    assert_eq!(
        counters.stored + counters.not_admitted,
        (ENTRIES + FLOOD) as u64
    );
    // At most one bit in eight is set, so about one name in sixteen is
    // taken for a seen one; three in four would be far out.
    assert!(
        counters.not_admitted >= (FLOOD * 3 / 4) as u64,
        "{counters:?}"
    );
    assert_eq!(counters.evicted, counters.stored - ENTRIES as u64);

    // A name refused at its first miss is stored at its second, and hits.
    let mut refused = None;
    for i in 0..FLOOD {
        let q = query(&format!("s{i}.wild.example."), RType::A, EDNS);
        if !cache.insert(key(&q), &slow(&catalog, &q, Transport::Udp)) {
            refused = Some(q);
            break;
        }
    }
    let q = refused.expect("a one-time name refused");
    let answer = slow(&catalog, &q, Transport::Udp);
    assert_eq!(hit(&mut cache, &q), None);
    assert!(cache.insert(key(&q), &answer));
    assert_eq!(hit(&mut cache, &q), Some(answer));
}

/// The doorkeeper remembers a mark until `limit` later marks, and the
/// newest mark survives the clear.
#[test]
fn the_doorkeeper_forgets_after_as_many_marks_as_entries() {
    let mut door = Doorkeeper::new(4);
    let hash = |i: u64| i << 20; // one bit each
    assert!(!door.admit(hash(1)), "first sight");
    assert!(door.admit(hash(1)), "second sight");
    for i in 2..=4 {
        assert!(!door.admit(hash(i)));
    }
    assert!(door.admit(hash(1)), "four marks: still there");
    assert!(!door.admit(hash(5)), "the fifth mark clears first");
    assert!(door.admit(hash(5)), "and survives");
    assert!(!door.admit(hash(1)), "forgotten");
    let mut none = Doorkeeper::new(0);
    assert!(none.admit(hash(1)), "no cache: everything admitted");
}
