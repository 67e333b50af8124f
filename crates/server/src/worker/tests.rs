use super::*;
use tern_authority::{cookie, respond_with};
use tern_wire::parse::MessageView;

use crate::rrl::RateLimitConfig;
use crate::Cidr;
use tern_cache::forward::ForwardConfig;

/// The zone the tests answer from.
const ZONE: &str = tern_testkit::EXAMPLE_COM_ZONE;

/// The per-core rate of responses in these tests.
const RATE: u32 = 5;

fn catalog() -> Arc<Catalog> {
    Arc::new(tern_testkit::catalog("example.com.", ZONE))
}

/// A query (RD set), with an OPT announcing 4096 octets if `edns`.
fn query(id: u16, name: &str, qtype: u16, edns: bool) -> Vec<u8> {
    tern_testkit::query(id, name, qtype, edns.then_some((4096, false)))
}

fn worker(config: RateLimitConfig) -> Worker {
    let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
    worker.set_rate_limiter(RateLimiter::new(&config, 1));
    worker
}

fn config() -> RateLimitConfig {
    RateLimitConfig {
        responses_per_second: RATE,
        exempt: vec![Cidr::parse("127.0.0.0/8").unwrap()],
        ..RateLimitConfig::default()
    }
}

fn peer(text: &str) -> Option<SocketAddr> {
    Some(text.parse().unwrap())
}

/// What `count` queries (IDs from 0) from `from` at `now` ms got:
/// (full answers, slips, dropped).
fn burst(
    worker: &mut Worker,
    from: &str,
    name: impl Fn(usize) -> String,
    qtype: u16,
    count: usize,
    now: u64,
) -> (usize, usize, usize) {
    let mut out = [0u8; 1232];
    let (mut full, mut slipped, mut dropped) = (0, 0, 0);
    for i in 0..count {
        let query = query(i as u16, &name(i), qtype, i % 2 == 0);
        match worker.answer_udp_from(&query, peer(from), now, &mut out) {
            UdpAnswer::Send(len) => {
                let view = MessageView::parse(&out[..len]).unwrap();
                assert_eq!(view.header().id(), i as u16);
                assert_eq!(
                    view.question().unwrap().bytes,
                    MessageView::parse(&query)
                        .unwrap()
                        .question()
                        .unwrap()
                        .bytes
                );
                if view.header().tc() {
                    assert_eq!(view.header().counts()[..3], [1, 0, 0]);
                    // The OPT only if the query had one.
                    assert_eq!(view.edns().unwrap().is_some(), i % 2 == 0);
                    slipped += 1;
                } else {
                    full += 1;
                }
            }
            UdpAnswer::Drop => dropped += 1,
            UdpAnswer::Forward | UdpAnswer::Update => panic!("nothing is forwarded or updated"),
        }
    }
    (full, slipped, dropped)
}

fn www(_: usize) -> String {
    "WwW.example.com.".to_string()
}

#[test]
fn a_burst_gets_the_rate_and_every_second_limited_answer_slips() {
    let mut worker = worker(config());
    let count = 10 * RATE as usize;
    let second = 1_000_000;
    let (full, slipped, dropped) = burst(&mut worker, "192.0.2.1:5300", www, 1, count, second);
    let limited = count - RATE as usize;
    assert_eq!(full, RATE as usize);
    // slip 2: the first limited answer slips, then every other one.
    assert_eq!(slipped, limited.div_ceil(2));
    assert_eq!(dropped, limited / 2);
    let counters = worker.counters();
    assert_eq!(counters.queries, count as u64);
    assert_eq!(counters.rrl_limited, limited as u64);
    assert_eq!(counters.rrl_slipped, slipped as u64);
    assert_eq!(counters.truncated, slipped as u64);
    assert_eq!(counters.dropped, dropped as u64);
    assert_eq!(counters.answers_by_rcode[0], (full + slipped) as u64);
    // Another client of the same /24 shares the account; another /24
    // does not.
    assert_eq!(
        burst(&mut worker, "192.0.2.99:53", www, 1, 1, second + 500),
        (0, 0, 1)
    );
    assert_eq!(
        burst(&mut worker, "192.0.3.1:53", www, 1, 3, second + 500),
        (3, 0, 0)
    );
    // The debt: 5 - 50 - 1 = -46; nine seconds later -1, still limited
    // (and one more in debt); a second more pays it.
    assert_eq!(
        burst(&mut worker, "192.0.2.1:5300", www, 1, 1, second + 9_000),
        (0, 1, 0)
    );
    assert_eq!(
        burst(&mut worker, "192.0.2.1:5300", www, 1, 1, second + 10_000),
        (1, 0, 0)
    );
}

#[test]
fn exempt_clients_and_tcp_are_not_limited() {
    let mut worker = worker(config());
    let count = 10 * RATE as usize;
    assert_eq!(
        burst(&mut worker, "127.0.0.1:5300", www, 1, count, 0),
        (count, 0, 0)
    );
    assert_eq!(
        burst(&mut worker, "192.0.2.1:5300", www, 1, count, 0).0,
        RATE as usize
    );
    let mut out = vec![0u8; TCP_SIZE];
    for id in 0..count as u16 {
        let query = query(id, "www.example.com.", 1, false);
        let answer = worker.answer_tcp_from(&query, peer("192.0.2.1:5300"), 0, &mut out);
        let UdpAnswer::Send(len) = answer else {
            panic!("TCP answers are never limited: {answer:?}");
        };
        assert!(!MessageView::parse(&out[..len]).unwrap().header().tc());
    }
    // Without a client address (the plain `answer`) nothing is limited.
    let mut out = [0u8; 1232];
    for id in 0..count as u16 {
        let query = query(id, "www.example.com.", 1, false);
        assert!(worker.answer(&query, Transport::Udp, &mut out).is_some());
    }
    assert_eq!(
        worker.counters().rrl_limited,
        (count - RATE as usize) as u64
    );
}

#[test]
fn nxdomain_and_errors_have_their_own_accounts() {
    let mut worker = worker(RateLimitConfig {
        responses_per_second: 100,
        nxdomains_per_second: 2,
        errors_per_second: 3,
        slip: 0,
        ..RateLimitConfig::default()
    });
    let client = "198.51.100.7:1000";
    // Random names of one zone share the zone's NXDOMAIN account.
    let random = |i: usize| format!("r{i}.example.com.");
    assert_eq!(burst(&mut worker, client, random, 1, 10, 0), (2, 0, 8));
    // REFUSED (not our zone), whatever the name: the error account.
    let elsewhere = |i: usize| format!("r{i}.example.org.");
    assert_eq!(burst(&mut worker, client, elsewhere, 1, 10, 0), (3, 0, 7));
    // NOTIMP (a malformed-path answer) shares the error account.
    let mut status = query(1, "www.example.com.", 6, false);
    status[2] = 0x10; // opcode STATUS
    let mut out = [0u8; 1232];
    assert_eq!(
        worker.answer_udp_from(&status, peer(client), 0, &mut out),
        UdpAnswer::Drop
    );
    // The responses account is untouched: NOERROR answers and NODATA.
    assert_eq!(burst(&mut worker, client, www, 1, 10, 0), (10, 0, 0));
    assert_eq!(burst(&mut worker, client, www, 16, 10, 0), (10, 0, 0));
    let counters = worker.counters();
    assert_eq!(counters.answers_by_rcode[3], 2);
    assert_eq!(counters.answers_by_rcode[5], 3);
    assert_eq!(counters.rrl_limited, 8 + 7 + 1);
    assert_eq!(counters.rrl_slipped, 0);
    assert_eq!(counters.dropped, 16);
}

//----------- Cookies ----------------------------------------------------

const SECRET: [u8; 16] = [7; 16];
const CLIENT_COOKIE: [u8; 8] = *b"tern-cli";
/// The cookies' clock in these tests (Unix seconds).
const NOW: u32 = 1_800_000_000;

/// A query for `name` A with an OPT carrying `cookie` (the COOKIE
/// option's value).
fn cookie_query(id: u16, name: &str, cookie: &[u8]) -> Vec<u8> {
    let mut q = query(id, name, 1, true);
    let opt = q.len() - 11;
    let mut option = vec![0, 10];
    option.extend_from_slice(&(cookie.len() as u16).to_be_bytes());
    option.extend_from_slice(cookie);
    q[opt + 9..opt + 11].copy_from_slice(&(option.len() as u16).to_be_bytes());
    q.extend_from_slice(&option);
    q
}

fn cookie_worker() -> Worker {
    let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
    worker.set_cookie_secret(CookieSecret::new(SECRET));
    worker.set_cookie_clock(NOW);
    worker
}

/// [`cookie_worker`] with rate limiting by `config` (one core).
fn limited_cookie_worker(config: RateLimitConfig) -> Worker {
    let mut worker = cookie_worker();
    worker.set_rate_limiter(RateLimiter::new(&config, 1));
    worker
}

/// The COOKIE option's value in an answer, and the answer's full rcode
/// (header bits and the OPT's upper bits).
fn answer_cookie(answer: &[u8]) -> (Option<Vec<u8>>, u16) {
    let view = MessageView::parse(answer).unwrap();
    let edns = view.edns().unwrap().expect("an OPT");
    let rcode = u16::from(edns.extended_rcode) << 4 | u16::from(view.header().rcode_bits());
    let cookie = edns
        .options()
        .map(Result::unwrap)
        .find(|(code, _)| *code == 10)
        .map(|(_, value)| value.to_vec());
    (cookie, rcode)
}

fn server_cookie_for(ip: &str, now: u32) -> [u8; 16] {
    let secret = CookieSecret::new(SECRET);
    cookie::server_cookie(&secret, &CLIENT_COOKIE, ip.parse().unwrap(), now)
}

#[test]
fn answers_carry_a_server_cookie_from_the_cache_too() {
    let mut worker = cookie_worker();
    let client = "192.0.2.7:5300";
    let asked = cookie_query(1, "WwW.example.com.", &CLIENT_COOKIE);
    let mut expected = CLIENT_COOKIE.to_vec();
    expected.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
    // What respond_with writes with that option: the reference.
    let option = cookie::CookieOption::new(&CLIENT_COOKIE, &server_cookie_for("192.0.2.7", NOW));
    let mut reference = [0u8; 1232];
    let Response::Send(reference_len) = respond_with(
        &catalog(),
        &asked,
        Transport::Udp,
        &Options::default(),
        option.as_bytes(),
        &mut reference,
    ) else {
        panic!("respond_with answers");
    };
    let mut out = [0u8; 1232];
    for round in 0..3 {
        let UdpAnswer::Send(len) = worker.answer_udp_from(&asked, peer(client), 0, &mut out) else {
            panic!("an answer");
        };
        assert_eq!(answer_cookie(&out[..len]), (Some(expected.clone()), 0));
        assert_eq!(&out[..len], &reference[..reference_len], "round {round}");
    }
    // One miss, then hits: the cached answer got the option appended.
    let counters = worker.counters();
    assert_eq!((counters.cache_misses, counters.cache_hits), (1, 2));
    // The cache holds the answer without the cookie: a query without
    // one gets none.
    let plain = query(2, "www.example.com.", 1, true);
    let UdpAnswer::Send(len) = worker.answer_udp_from(&plain, peer(client), 0, &mut out) else {
        panic!("an answer");
    };
    assert_eq!(answer_cookie(&out[..len]), (None, 0));
    // Over TCP, the same option.
    let UdpAnswer::Send(len) = worker.answer_tcp_from(&asked, peer(client), 0, &mut out) else {
        panic!("an answer");
    };
    assert_eq!(answer_cookie(&out[..len]), (Some(expected.clone()), 0));
    // A refusal (EDE already in the OPT) is written again with it.
    let refused = cookie_query(3, "www.example.org.", &CLIENT_COOKIE);
    let UdpAnswer::Send(len) = worker.answer_udp_from(&refused, peer(client), 0, &mut out) else {
        panic!("an answer");
    };
    assert_eq!(answer_cookie(&out[..len]), (Some(expected), 5));
}

#[test]
fn a_valid_server_cookie_is_echoed_and_a_bad_one_replaced() {
    let mut worker = cookie_worker();
    let mut out = [0u8; 1232];
    let mut ask = |worker: &mut Worker, from: &str, server: &[u8]| {
        let mut value = CLIENT_COOKIE.to_vec();
        value.extend_from_slice(server);
        let query = cookie_query(4, "www.example.com.", &value);
        let UdpAnswer::Send(len) = worker.answer_udp_from(&query, peer(from), 0, &mut out) else {
            panic!("an answer");
        };
        let (cookie, rcode) = answer_cookie(&out[..len]);
        assert_eq!(rcode, 0);
        let cookie = cookie.expect("a cookie");
        assert_eq!(cookie[..8], CLIENT_COOKIE);
        cookie[8..].to_vec()
    };
    // Minted 100 s ago for this address: echoed as it is.
    let young = server_cookie_for("192.0.2.7", NOW - 100);
    assert_eq!(ask(&mut worker, "192.0.2.7:1", &young), young);
    // Minted 2000 s ago: still valid, renewed.
    let old = server_cookie_for("192.0.2.7", NOW - 2000);
    assert_eq!(
        ask(&mut worker, "192.0.2.7:1", &old),
        server_cookie_for("192.0.2.7", NOW)
    );
    // For another address, or altered: a fresh one for this address.
    assert_eq!(
        ask(&mut worker, "192.0.2.8:1", &young),
        server_cookie_for("192.0.2.8", NOW)
    );
    let mut altered = young;
    altered[15] ^= 1;
    assert_eq!(
        ask(&mut worker, "192.0.2.7:1", &altered),
        server_cookie_for("192.0.2.7", NOW)
    );
}

#[test]
fn a_malformed_cookie_is_a_formerr_on_every_path() {
    let mut out = [0u8; 1232];
    for cookies in [false, true] {
        let mut worker = if cookies {
            cookie_worker()
        } else {
            Worker::new(catalog(), Options::default(), CacheLimits::default())
        };
        // Warm the cache for the name first.
        let plain = query(5, "www.example.com.", 1, true);
        worker.answer_udp_from(&plain, peer("192.0.2.7:1"), 0, &mut out);
        for bad in [&b"short"[..], &[1; 9], &[1; 15], &[1; 41]] {
            let query = cookie_query(6, "www.example.com.", bad);
            let UdpAnswer::Send(len) =
                worker.answer_udp_from(&query, peer("192.0.2.7:1"), 0, &mut out)
            else {
                panic!("an answer");
            };
            assert_eq!(answer_cookie(&out[..len]), (None, 1), "{bad:?}");
            let UdpAnswer::Send(len) =
                worker.answer_tcp_from(&query, peer("192.0.2.7:1"), 0, &mut out)
            else {
                panic!("an answer");
            };
            assert_eq!(answer_cookie(&out[..len]), (None, 1), "{bad:?}");
        }
    }
}

#[test]
fn cookies_off_or_absent_leave_answers_as_they_were() {
    let mut with = cookie_worker();
    let mut without = Worker::new(catalog(), Options::default(), CacheLimits::default());
    let mut a = [0u8; 1232];
    let mut b = [0u8; 1232];
    // No COOKIE option: the same answers with cookies on or off.
    for asked in [
        query(7, "www.example.com.", 1, true),
        query(8, "nope.example.com.", 1, false),
    ] {
        let first = without.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut a);
        let UdpAnswer::Send(len) = first else {
            panic!("an answer");
        };
        let second = with.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut b);
        assert_eq!(second, first);
        assert_eq!(a[..len], b[..len]);
    }
    // Cookies off: a COOKIE option is ignored, as before cookies.
    let asked = cookie_query(9, "www.example.com.", &CLIENT_COOKIE);
    let UdpAnswer::Send(len) = without.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut a)
    else {
        panic!("an answer");
    };
    assert_eq!(answer_cookie(&a[..len]), (None, 0));
}

#[test]
fn rate_limiting_exempts_valid_cookies_and_slips_badcookie() {
    let mut worker = limited_cookie_worker(RateLimitConfig {
        responses_per_second: RATE,
        slip: 1,
        ..RateLimitConfig::default()
    });
    let mut out = [0u8; 1232];
    let count = 4 * RATE as usize;
    // A client cookie only: RATE answers, then BADCOOKIE slips with a
    // fresh server cookie.
    let asked = cookie_query(10, "www.example.com.", &CLIENT_COOKIE);
    let mut rcodes = Vec::new();
    for _ in 0..count {
        let UdpAnswer::Send(len) =
            worker.answer_udp_from(&asked, peer("192.0.2.7:1"), 5_000, &mut out)
        else {
            panic!("slip 1 answers every query");
        };
        let (cookie, rcode) = answer_cookie(&out[..len]);
        let mut expected = CLIENT_COOKIE.to_vec();
        expected.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
        assert_eq!(cookie, Some(expected));
        rcodes.push(rcode);
    }
    assert_eq!(
        rcodes.iter().filter(|&&rcode| rcode == 0).count(),
        RATE as usize
    );
    assert_eq!(
        rcodes.iter().filter(|&&rcode| rcode == 23).count(),
        count - RATE as usize
    );
    // With the server cookie it got: never limited.
    let mut value = CLIENT_COOKIE.to_vec();
    value.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
    let valid = cookie_query(11, "www.example.com.", &value);
    for _ in 0..count {
        let UdpAnswer::Send(len) =
            worker.answer_udp_from(&valid, peer("192.0.2.7:1"), 5_000, &mut out)
        else {
            panic!("an answer");
        };
        let view = MessageView::parse(&out[..len]).unwrap();
        assert!(!view.header().tc());
        assert_eq!(
            (view.header().counts()[1], answer_cookie(&out[..len]).1),
            (1, 0)
        );
    }
    // Without a cookie, the same /24 is still limited: TC=1 slips.
    let plain = query(12, "www.example.com.", 1, true);
    let UdpAnswer::Send(len) = worker.answer_udp_from(&plain, peer("192.0.2.9:1"), 5_000, &mut out)
    else {
        panic!("slip 1 answers every query");
    };
    assert!(MessageView::parse(&out[..len]).unwrap().header().tc());
    let counters = worker.counters();
    assert_eq!(counters.rrl_slipped, count as u64 - u64::from(RATE) + 1);
    assert_eq!(counters.badcookie, count as u64 - u64::from(RATE));
    assert_eq!(counters.answers_by_rcode[7], 0);
    assert_eq!(counters.rrl_limited, counters.rrl_slipped);
}

#[test]
fn queries_badcookie_does_not_answer_slip_as_tc() {
    let mut worker = limited_cookie_worker(RateLimitConfig {
        errors_per_second: RATE,
        slip: 1,
        ..RateLimitConfig::default()
    });
    let mut out = [0u8; 1232];
    // A STATUS with a client cookie: NOTIMP, an error answer; when
    // limited, BADCOOKIE does not answer another opcode, so it slips
    // as TC=1.
    let mut notify = cookie_query(13, "www.example.com.", &CLIENT_COOKIE);
    notify[2] = 0x10;
    let count = 3 * RATE as usize;
    let mut kinds = Vec::new();
    for _ in 0..count {
        let UdpAnswer::Send(len) =
            worker.answer_udp_from(&notify, peer("192.0.2.7:1"), 5_000, &mut out)
        else {
            panic!("slip 1 answers every query");
        };
        let view = MessageView::parse(&out[..len]).unwrap();
        kinds.push((view.header().tc(), view.header().rcode_bits()));
    }
    let notimp = kinds.iter().filter(|kind| **kind == (false, 4)).count();
    let slips = kinds.iter().filter(|kind| kind.0).count();
    assert_eq!((notimp, slips), (RATE as usize, count - RATE as usize));
    let counters = worker.counters();
    assert_eq!(counters.rrl_slipped, counters.rrl_limited);
    assert_eq!(counters.rrl_slipped, (count - RATE as usize) as u64);
    assert_eq!(counters.truncated, counters.rrl_slipped);
    assert_eq!(counters.dropped, 0);
}

/// A version made by an update (patched from the version the core serves,
/// listing the names it changed) keeps the cached answers of the names it
/// did not change: they are still hits, and the new version's; the
/// negative ones (NXDOMAIN, and NODATA at the apex, whose SOA alone
/// changed) with the new serial. The changed name and the SOA are
/// answered afresh; and after an update that changes the SOA's refresh
/// too, the negative answers as well.
#[test]
fn an_update_keeps_the_cached_answers_of_other_names() {
    use tern_authority::ZoneChanges;
    use tern_wire::name::NameBuf;
    use tern_wire::types::RType;

    let built = tern_testkit::zone("example.com.", ZONE);
    let apex = NameBuf::from_text(b"example.com.", None).unwrap();
    let soa_refresh = |serial: u32, refresh: u32| {
        let mut rdata = NameBuf::from_text(b"ns1.example.com.", None)
            .unwrap()
            .as_bytes()
            .to_vec();
        rdata.extend_from_slice(
            NameBuf::from_text(b"hostmaster.example.com.", None)
                .unwrap()
                .as_bytes(),
        );
        for value in [serial, refresh, 3600, 1209600, 300] {
            rdata.extend_from_slice(&value.to_be_bytes());
        }
        rdata
    };
    let soa = |serial: u32| soa_refresh(serial, 7200);
    let mut changes = ZoneChanges::new();
    let serial2 = soa(2);
    changes.set(
        apex.as_name(),
        [
            (RType::SOA, 300, &serial2[..]),
            (RType::NS, 300, b"\x03ns1\x07example\x03com\x00"),
        ],
    );
    let first = Arc::new(built.patch(&changes).unwrap().zone);
    let mut worker = Worker::new(
        Arc::new(Catalog::new([Arc::clone(&first)])),
        Options::default(),
        CacheLimits::default(),
    );
    let mut out = [0u8; 1232];
    let mut ask = |worker: &mut Worker, name: &str, qtype: u16| -> Vec<u8> {
        let query = query(1, name, qtype, true);
        let UdpAnswer::Send(len) =
            worker.answer_udp_from(&query, peer("127.0.0.1:53"), 0, &mut out)
        else {
            panic!("{name}: an answer");
        };
        out[..len].to_vec()
    };
    let asked = [
        ("www.example.com.", 1),
        ("nothing.example.com.", 1),
        ("example.com.", 1),
        ("example.com.", 6),
        ("_acme-challenge.example.com.", 16),
    ];
    for (name, qtype) in asked {
        ask(&mut worker, name, qtype);
    }
    assert_eq!(worker.counters().cache_hits, 0);
    for (name, qtype) in asked {
        ask(&mut worker, name, qtype);
    }
    assert_eq!(worker.counters().cache_hits, 5, "all cached");

    // The update: a TXT at _acme-challenge, serial 3.
    let mut changes = ZoneChanges::new();
    let serial3 = soa(3);
    changes.set(
        apex.as_name(),
        [
            (RType::SOA, 300, &serial3[..]),
            (RType::NS, 300, b"\x03ns1\x07example\x03com\x00"),
        ],
    );
    let challenge = NameBuf::from_text(b"_acme-challenge.example.com.", None).unwrap();
    changes.set(challenge.as_name(), [(RType::TXT, 60, &b"\x05token"[..])]);
    let second = Arc::new(first.patch(&changes).unwrap().zone);
    assert!(second.changed_since(&first).is_some());
    worker.apply(
        &[CatalogChange::Serve(Arc::clone(&second))],
        &mut Vec::new(),
    );

    let fresh = |zone: &Arc<tern_authority::Zone>, name: &str, qtype: u16| {
        let mut reference = [0u8; 1232];
        let Response::Send(len) = respond_with(
            &Catalog::new([Arc::clone(zone)]),
            &query(1, name, qtype, true),
            Transport::Udp,
            &Options::default(),
            &[],
            &mut reference,
        ) else {
            panic!("respond_with answers");
        };
        reference[..len].to_vec()
    };
    let mut hits = 5;
    for (name, qtype) in &asked[..3] {
        let answer = ask(&mut worker, name, *qtype);
        hits += 1;
        assert_eq!(worker.counters().cache_hits, hits, "{name} {qtype} kept");
        assert_eq!(answer, fresh(&second, name, *qtype), "{name} {qtype}");
    }
    for (name, qtype) in &asked[3..] {
        let answer = ask(&mut worker, name, *qtype);
        assert_eq!(answer, fresh(&second, name, *qtype), "{name} {qtype}");
        assert_eq!(worker.counters().cache_hits, hits, "{name} answered afresh");
    }

    // Serial 4 and a new refresh: the negative answers go too.
    let mut changes = ZoneChanges::new();
    let serial4 = soa_refresh(4, 3600);
    changes.set(
        apex.as_name(),
        [
            (RType::SOA, 300, &serial4[..]),
            (RType::NS, 300, b"\x03ns1\x07example\x03com\x00"),
        ],
    );
    let third = Arc::new(second.patch(&changes).unwrap().zone);
    assert!(third.changed_since(&second).is_some());
    worker.apply(&[CatalogChange::Serve(Arc::clone(&third))], &mut Vec::new());
    let www = ask(&mut worker, "www.example.com.", 1);
    hits += 1;
    assert_eq!(worker.counters().cache_hits, hits, "www kept");
    assert_eq!(www, fresh(&third, "www.example.com.", 1));
    for (name, qtype) in &asked[1..4] {
        let answer = ask(&mut worker, name, *qtype);
        assert_eq!(answer, fresh(&third, name, *qtype), "{name} {qtype}");
        assert_eq!(worker.counters().cache_hits, hits, "{name} answered afresh");
    }
}

/// The zones a core stops serving (a version replaced, by an update or
/// built whole, and a zone removed) are handed back in `retired`, not
/// dropped by `Worker::apply`: `apply` never frees a version, whatever
/// its size (the last reference is the one handed back, which
/// `control::run` sends to the thread that made the change; only when
/// that thread stopped waiting, `UPDATE_TIMEOUT`, are they freed on the
/// core). Before, the
/// old version was dropped inside `apply`, its memory freed on the core
/// when that was its last reference (as it is once the zones' owner has
/// moved on): a cost of the version's size on the answering core.
#[test]
fn apply_hands_back_the_zones_it_stops_serving() {
    use tern_authority::ZoneChanges;
    use tern_wire::name::NameBuf;
    use tern_wire::types::RType;

    for names in [0, 2_000] {
        let mut text = String::from(ZONE);
        for i in 0..names {
            text.push_str(&format!("n{i}.example.com. 300 IN A 192.0.2.{}\n", i % 250));
        }
        let first = Arc::new(tern_testkit::zone("example.com.", &text));
        let mut worker = Worker::new(
            Arc::new(Catalog::new([Arc::clone(&first)])),
            Options::default(),
            CacheLimits::default(),
        );
        // An update: patched from the version served.
        let mut changes = ZoneChanges::new();
        let name = NameBuf::from_text(b"new.example.com.", None).unwrap();
        changes.set(name.as_name(), [(RType::TXT, 60, &b"\x05token"[..])]);
        let second = Arc::new(first.patch(&changes).unwrap().zone);
        let old = Arc::downgrade(&first);
        drop(first);
        let mut retired = Vec::with_capacity(1);
        let room = retired.capacity();
        worker.apply(&[CatalogChange::Serve(Arc::clone(&second))], &mut retired);
        assert!(
            old.upgrade().is_some(),
            "{names} names: the old version lives"
        );
        assert_eq!(retired.len(), 1, "{names} names");
        assert_eq!(retired.capacity(), room, "{names} names: in the room given");
        assert!(Arc::ptr_eq(&retired[0], &old.upgrade().unwrap()));
        retired.clear();
        assert!(
            old.upgrade().is_none(),
            "{names} names: its last reference came back"
        );

        // A version built whole, then the zone removed.
        let third = Arc::new(tern_testkit::zone("example.com.", &text));
        let (old, newest) = (Arc::downgrade(&second), Arc::downgrade(&third));
        drop(second);
        worker.apply(&[CatalogChange::Serve(third)], &mut retired);
        assert_eq!(retired.len(), 1, "{names} names");
        retired.clear();
        assert!(old.upgrade().is_none(), "{names} names");
        let origin = NameBuf::from_text(b"example.com.", None).unwrap();
        worker.apply(
            &[CatalogChange::Remove(origin.as_bytes().into())],
            &mut retired,
        );
        assert!(
            newest.upgrade().is_some(),
            "{names} names: the zone removed lives"
        );
        retired.clear();
        assert!(newest.upgrade().is_none(), "{names} names");
        assert!(worker.catalog().is_empty());
    }
}

/// Queries are counted by type, and by zone from the cache too; a reload
/// keeps each zone's counts; TCP queries and names of no zone count apart.
#[test]
fn queries_are_counted_by_zone_and_type_across_reloads() {
    let two_zones = |serial: u32| {
        let net = ZONE
            .replace("example.com.", "example.net.")
            .replace(" 1 7200", &format!(" {serial} 7200"));
        Arc::new(Catalog::new([
            tern_testkit::zone("example.com.", ZONE),
            tern_testkit::zone("example.net.", &net),
        ]))
    };
    let mut worker = Worker::new(two_zones(1), Options::default(), CacheLimits::default());
    let mut out = [0u8; 65535];
    let mut ask = |worker: &mut Worker, name: &str, qtype: u16, tcp: bool| {
        let query = query(1, name, qtype, false);
        let answer = if tcp {
            worker.answer_tcp_from(&query, peer("127.0.0.1:53"), 0, &mut out)
        } else {
            worker.answer_udp_from(&query, peer("127.0.0.1:53"), 0, &mut out)
        };
        assert!(matches!(answer, UdpAnswer::Send(_)), "{name}");
    };
    for _ in 0..3 {
        ask(&mut worker, "www.example.com.", 1, false); // a miss, then hits
    }
    ask(&mut worker, "nothing.example.net.", 28, false);
    ask(&mut worker, "example.net.", 6, true);
    ask(&mut worker, "www.example.org.", 1, false); // REFUSED: no zone
    let zone = |worker: &Worker, origin: &[u8]| {
        let counters = worker.counters();
        let catalog = worker.catalog();
        let index = catalog
            .position(tern_wire::name::Name::from_wire(origin).unwrap())
            .unwrap();
        counters.zones.get(index as usize).unwrap()
    };
    let com = b"\x07example\x03com\x00";
    let net = b"\x07example\x03net\x00";
    assert_eq!(worker.counters().cache_hits, 2);
    assert_eq!(zone(&worker, com).queries_by_type[0], 3, "A, hits included");
    assert_eq!(zone(&worker, com).answers_by_rcode[0], 3);
    let aaaa = crate::stats::type_slot(28);
    let soa = crate::stats::type_slot(6);
    assert_eq!(zone(&worker, net).queries_by_type[aaaa], 1);
    assert_eq!(zone(&worker, net).answers_by_rcode[3], 1, "NXDOMAIN");
    assert_eq!(zone(&worker, net).queries_by_type[soa], 1, "over TCP");
    assert_eq!(worker.counters().queries_by_type[0], 4, "A, all zones");
    assert_eq!(worker.counters().answers_by_rcode[5], 1, "REFUSED");
    let zoned: u64 = (0..worker.counters().zones.len())
        .filter_map(|slot| worker.counters().zones.get(slot))
        .map(|zone| zone.queries_by_type.iter().sum::<u64>())
        .sum();
    assert_eq!(zoned, 5, "example.org counts under no zone");

    // A new version of example.net keeps both zones' counts, and the
    // cached answers of the other zone: only its own are dropped.
    ask(&mut worker, "nothing.example.net.", 28, false);
    assert_eq!(
        worker.counters().cache_hits,
        3,
        "example.net's answer is cached"
    );
    let newer = two_zones(2).zones().nth(1).cloned().unwrap();
    assert_eq!(newer.serial(), 2);
    worker.apply(&[CatalogChange::Serve(newer)], &mut Vec::new());
    assert_eq!(zone(&worker, com).queries_by_type[0], 3);
    assert_eq!(zone(&worker, net).queries_by_type[soa], 1);
    ask(&mut worker, "www.example.com.", 1, false);
    assert_eq!(zone(&worker, com).queries_by_type[0], 4);
    assert_eq!(
        worker.counters().cache_hits,
        4,
        "example.com's answer survived"
    );
    ask(&mut worker, "nothing.example.net.", 28, false);
    assert_eq!(worker.counters().cache_hits, 4, "example.net's was dropped");
    ask(&mut worker, "nothing.example.net.", 28, false);
    assert_eq!(worker.counters().cache_hits, 5, "and cached again");
    // Removing a zone frees its slot, counts and all; a zone added there
    // starts from zero.
    let org = tern_testkit::zone(
        "example.org.",
        &ZONE.replace("example.com.", "example.org."),
    );
    worker.apply(
        &[
            CatalogChange::Remove(com.to_vec().into_boxed_slice()),
            CatalogChange::Serve(Arc::new(org)),
        ],
        &mut Vec::new(),
    );
    assert_eq!(
        worker
            .catalog()
            .zone_at(0)
            .map(|zone| zone.origin().to_string()),
        Some("example.org.".to_string())
    );
    let org_wire = b"\x07example\x03org\x00";
    assert_eq!(zone(&worker, org_wire).queries_by_type[0], 0);
    ask(&mut worker, "www.example.org.", 1, false);
    assert_eq!(zone(&worker, org_wire).queries_by_type[0], 1);
}

//=== Class ANY ===

/// QCLASS ANY is answered as IN, echoing the class asked, and served from
/// the answer cache under its own key; it is not forwarded (a name outside
/// our zones is REFUSED, as for IN without forwarding).
#[test]
fn class_any_is_answered_as_in_cached_and_not_forwarded() {
    let mut forward = ForwardConfig::new(vec!["127.0.0.1:9".parse().unwrap()]);
    forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
    worker.set_forwarder(Forwarder::new(forward, 1232));
    let mut any = query(7, "www.example.com.", 1, true);
    let class_at = any.len() - 11 - 1;
    any[class_at] = 255;
    let in_class = query(7, "www.example.com.", 1, true);
    let mut out = [0u8; 1232];
    let mut expected = [0u8; 1232];
    let UdpAnswer::Send(len) =
        worker.answer_udp_from(&in_class, peer("127.0.0.1:53"), 0, &mut expected)
    else {
        panic!("IN not answered");
    };
    expected[class_at] = 255;
    for round in 0..2 {
        let hits = worker.counters().cache_hits;
        let answer = worker.answer_udp_from(&any, peer("127.0.0.1:53"), 0, &mut out);
        assert_eq!(answer, UdpAnswer::Send(len), "round {round}");
        assert_eq!(&out[..len], &expected[..len], "round {round}");
        assert_eq!(worker.counters().cache_hits, hits + round, "round {round}");
    }
    // Outside our zones, with RD from an allowed client: IN is forwarded,
    // ANY refused.
    let mut outside = query(8, "www.example.org.", 1, true);
    assert_eq!(
        worker.answer_udp_from(&outside, peer("127.0.0.1:53"), 0, &mut out),
        UdpAnswer::Forward
    );
    let class_at = outside.len() - 11 - 1;
    outside[class_at] = 255;
    let UdpAnswer::Send(len) = worker.answer_udp_from(&outside, peer("127.0.0.1:53"), 0, &mut out)
    else {
        panic!("class ANY outside our zones not answered");
    };
    assert_eq!(out[3] & 0x0f, 5, "REFUSED");
    assert_eq!(out[12 + 17 + 3], 255, "{:?}", &out[..len]);
}

//=== NSID ===

/// `query` with `option` (a whole EDNS option) added to its OPT, which
/// must be its last record and hold no option yet.
fn with_option(mut query: Vec<u8>, option: &[u8]) -> Vec<u8> {
    let opt = query.len() - 11;
    let rdlen = u16::from_be_bytes([query[opt + 9], query[opt + 10]]) + option.len() as u16;
    query[opt + 9..opt + 11].copy_from_slice(&rdlen.to_be_bytes());
    query.extend_from_slice(option);
    query
}

/// The NSID option's value of an answer (`None`: no option).
fn answer_nsid(answer: &[u8]) -> Option<Vec<u8>> {
    let view = MessageView::parse(answer).unwrap();
    let edns = view.edns().unwrap()?;
    edns.options()
        .map(Result::unwrap)
        .find(|(code, _)| *code == 3)
        .map(|(_, value)| value.to_vec())
}

fn nsid_options() -> Options {
    Options {
        nsid: Some(tern_authority::nsid::Nsid::new(b"core-7").unwrap()),
        ..Options::default()
    }
}

/// The answer cache keeps NSID-free answers and serves both kinds of
/// query from one entry: with the option appended when asked (after a
/// miss and on hits, with a COOKIE too), without it otherwise; a
/// truncated answer still fits the client's limit.
#[test]
fn nsid_is_appended_to_cached_answers_only_when_asked() {
    let mut worker = Worker::new(catalog(), nsid_options(), CacheLimits::default());
    worker.set_cookie_secret(CookieSecret::new(SECRET));
    worker.set_cookie_clock(NOW);
    let ask = with_option(query(1, "www.example.com.", 1, true), &[0, 3, 0, 0]);
    let plain = query(2, "www.example.com.", 1, true);
    let mut out = [0u8; 1232];
    let mut send = |worker: &mut Worker, q: &[u8]| match worker.answer_udp_from(
        q,
        peer("192.0.2.7:5300"),
        0,
        &mut out,
    ) {
        UdpAnswer::Send(len) => out[..len].to_vec(),
        other => panic!("{other:?}"),
    };
    // Miss, then hits, alternating: the cache holds one entry throughout.
    for round in 0..2 {
        let hits = worker.counters().cache_hits;
        let with = send(&mut worker, &ask);
        assert_eq!(
            answer_nsid(&with),
            Some(b"core-7".to_vec()),
            "round {round}"
        );
        let without = send(&mut worker, &plain);
        assert_eq!(answer_nsid(&without), None, "round {round}");
        assert_eq!(
            worker.counters().cache_hits,
            hits + 1 + round,
            "round {round}"
        );
        // The same answer but for the ID and the option.
        let mut expected = without.clone();
        expected[..2].copy_from_slice(&with[..2]);
        let opt = expected.len() - 11;
        expected[opt + 9..opt + 11].copy_from_slice(&10u16.to_be_bytes());
        expected.extend_from_slice(b"\x00\x03\x00\x06core-7");
        assert_eq!(with, expected, "round {round}");
    }
    assert_eq!(worker.cached(), 1);
    // With a COOKIE: both options, from the cache.
    let cookie_option = [&[0, 10, 0, 8][..], &CLIENT_COOKIE].concat();
    let both = with_option(
        query(3, "www.example.com.", 1, true),
        &[&cookie_option[..], &[0, 3, 0, 0]].concat(),
    );
    let answer = send(&mut worker, &both);
    assert_eq!(answer_nsid(&answer), Some(b"core-7".to_vec()));
    assert!(answer_cookie(&answer).0.is_some());
    // Without EDNS: no OPT, no NSID.
    let classic = query(4, "www.example.com.", 1, false);
    assert!(MessageView::parse(&send(&mut worker, &classic))
        .unwrap()
        .edns()
        .unwrap()
        .is_none());
    // REFUSED (its OPT has an EDE): the option after it.
    let refused = with_option(query(5, "www.example.net.", 1, true), &[0, 3, 0, 0]);
    let answer = send(&mut worker, &refused);
    assert_eq!(answer[3] & 0x0f, 5, "{answer:?}");
    assert_eq!(answer_nsid(&answer), Some(b"core-7".to_vec()));
}

/// Forwarded answers carry it too, and TCP answers.
#[test]
fn nsid_in_forwarded_and_tcp_answers() {
    let mut forward = ForwardConfig::new(vec!["127.0.0.1:9".parse().unwrap()]);
    forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    forward.max_in_flight = 0; // answered at once: SERVFAIL
    let mut worker = Worker::new(catalog(), nsid_options(), CacheLimits::default());
    worker.set_forwarder(Forwarder::new(forward, 1232));
    let ask = with_option(query(1, "www.example.org.", 1, true), &[0, 3, 0, 0]);
    let mut out = [0u8; 1232];
    assert_eq!(
        worker.answer_udp_from(&ask, peer("127.0.0.1:5300"), 0, &mut out),
        UdpAnswer::Forward
    );
    let client = tern_cache::forward::Client::Udp {
        listener: 0,
        address: "127.0.0.1:5300".parse().unwrap(),
        behind: None,
    };
    let mut actions = Vec::new();
    let len = worker
        .forward(&ask, client, 0, &mut actions, &mut out)
        .expect("answered at once");
    assert_eq!(out[3] & 0x0f, 2, "SERVFAIL");
    assert_eq!(answer_nsid(&out[..len]), Some(b"core-7".to_vec()));
    let plain = query(2, "www.example.org.", 1, true);
    let len = worker
        .forward(&plain, client, 0, &mut actions, &mut out)
        .expect("answered at once");
    assert_eq!(answer_nsid(&out[..len]), None);

    let ask = with_option(query(3, "www.example.com.", 1, true), &[0, 3, 0, 0]);
    let mut tcp = vec![0u8; 65535];
    let UdpAnswer::Send(len) = worker.answer_tcp_from(&ask, None, 0, &mut tcp) else {
        panic!("TCP not answered");
    };
    assert_eq!(answer_nsid(&tcp[..len]), Some(b"core-7".to_vec()));
}

//----------- NOTIFY ---------------------------------------------------------

/// Issue 22: a NOTIFY to a server without secondary zones, for a zone it
/// serves as primary and for one it does not know, over UDP and TCP, is
/// answered as by a server whose secondary zones do not include it:
/// NOTAUTH (Knot), with the ID, the opcode NOTIFY and the question
/// echoed, QR set and AA clear; never NOTIMP.
#[test]
fn notify_without_secondary_zones_is_notauth() {
    let bare = Worker::new(catalog(), Options::default(), CacheLimits::default());
    let mut with_secondaries = Worker::new(catalog(), Options::default(), CacheLimits::default());
    with_secondaries.set_notify(crate::NotifyIn {
        zones: Arc::new(std::sync::RwLock::new(
            [(
                b"\x09secondary\x04test\x00"[..].into(),
                crate::NotifySource {
                    primaries: vec!["192.0.2.53:53".parse().unwrap()],
                    key: None,
                },
            )]
            .into_iter()
            .collect(),
        )),
        refresh: Arc::new(|_| {}),
    });
    let mut answers = Vec::new();
    for (server, mut worker) in [("bare", bare), ("with secondaries", with_secondaries)] {
        for zone in ["example.com.", "Unknown.TEST."] {
            let mut notify = query(0x4e07, zone, 6, false);
            notify[2] = 0x20 | 0x04; // opcode NOTIFY, AA (RFC 1996 section 3.7)
            let question = MessageView::parse(&notify)
                .unwrap()
                .question()
                .unwrap()
                .bytes
                .to_vec();
            let mut out = vec![0u8; TCP_SIZE];
            let udp = worker.answer_udp_from(&notify, peer("192.0.2.7:5300"), 0, &mut out);
            let tcp_out = out.clone();
            let tcp = worker.answer_tcp_from(&notify, peer("192.0.2.7:5300"), 0, &mut out);
            for (transport, answer, bytes) in [("udp", udp, &tcp_out), ("tcp", tcp, &out)] {
                let UdpAnswer::Send(len) = answer else {
                    panic!("{server} {zone} {transport}: no answer ({answer:?})");
                };
                let view = MessageView::parse(&bytes[..len]).unwrap();
                let header = view.header();
                assert_eq!(header.id(), 0x4e07);
                assert!(header.qr(), "{server} {zone} {transport}: QR");
                assert!(!header.aa(), "{server} {zone} {transport}: AA");
                assert_eq!(header.opcode(), tern_wire::types::Opcode::NOTIFY);
                assert_eq!(view.question().unwrap().bytes, &question[..]);
                assert_eq!(header.counts(), [1, 0, 0, 0]);
                answers.push((server, zone, transport, header.rcode_bits()));
            }
        }
    }
    // NOTAUTH (9) everywhere: the same answer with and without secondaries.
    assert!(answers.iter().all(|answer| answer.3 == 9), "{answers:?}");
}

//----------- Parsed once ----------------------------------------------------

/// The TSIG key of the parse-count test.
fn parse_test_key() -> tern_xfr::tsig::Key {
    let name = tern_wire::name::NameBuf::from_text(b"transfer-key.", None).unwrap();
    tern_xfr::tsig::Key::new(
        name.as_name(),
        tern_xfr::tsig::Algorithm::HmacSha256,
        b"secret",
    )
}

/// `query` signed with `key` at the current time.
fn signed_query(query: &[u8], key: &tern_xfr::tsig::Key) -> Vec<u8> {
    let mut session = tern_xfr::tsig::Session::new(key);
    let mut buf = query.to_vec();
    let len = buf.len();
    buf.resize(len + session.record_len(), 0);
    let now = crate::signing::unix_time();
    let len = session.sign(&mut buf, len, now).unwrap();
    buf.truncate(len);
    buf
}

/// Every kind of query the behaviour tests above send, and more: cache
/// hits and misses, NXDOMAIN and NODATA, forwarded names, NOTIFY, IXFR and
/// AXFR over UDP, signed queries (a good key and an unknown one), cookies
/// (client only, a valid server cookie, malformed), NSID, EDNS version 1,
/// another opcode, classes CH and ANY, and malformed messages (trailing
/// bytes, two questions, a cut question, a short header, QR set).
fn parse_test_queries() -> Vec<(&'static str, Vec<u8>)> {
    let key = parse_test_key();
    let mut queries = vec![
        ("hit/miss, EDNS", query(1, "www.example.com.", 1, true)),
        ("hit/miss, no EDNS", query(2, "Www.Example.com.", 1, false)),
        ("NXDOMAIN", query(3, "nope.example.com.", 1, true)),
        ("NODATA", query(4, "www.example.com.", 28, false)),
        ("forwarded", query(5, "www.example.org.", 1, true)),
        (
            "forwarded, no EDNS",
            query(6, "host.example.net.", 28, false),
        ),
        (
            "cookie, client only",
            cookie_query(7, "www.example.com.", &CLIENT_COOKIE),
        ),
        (
            "cookie, malformed",
            cookie_query(8, "www.example.com.", &[1, 2, 3, 4, 5]),
        ),
        (
            "NSID",
            with_option(query(9, "www.example.com.", 1, true), &[0, 3, 0, 0]),
        ),
        ("AXFR", query(10, "example.com.", 252, false)),
        (
            "signed SOA",
            signed_query(&query(11, "example.com.", 6, true), &key),
        ),
        (
            "signed with an unknown key",
            signed_query(
                &query(12, "example.com.", 6, false),
                &tern_xfr::tsig::Key::new(
                    tern_wire::name::NameBuf::from_text(b"other.", None)
                        .unwrap()
                        .as_name(),
                    tern_xfr::tsig::Algorithm::HmacSha256,
                    b"x",
                ),
            ),
        ),
        ("class CH", query(13, "version.bind.", 16, false)),
    ];
    let mut valid = cookie_query(14, "www.example.com.", &CLIENT_COOKIE);
    let cookie = server_cookie_for("127.0.0.1", NOW);
    let at = valid.len() - 8;
    valid.truncate(at - 4);
    let mut option = vec![0, 10, 0, 24];
    option.extend_from_slice(&CLIENT_COOKIE);
    option.extend_from_slice(&cookie[8..]);
    let opt = valid.len() - 11;
    valid[opt + 9..opt + 11].copy_from_slice(&[0, 0]);
    queries.push(("cookie, valid server cookie", with_option(valid, &option)));
    let mut ixfr = query(15, "example.com.", 251, false);
    ixfr[9] = 1; // NSCOUNT: the client's SOA
    ixfr.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 22, 0, 0]);
    ixfr.extend_from_slice(&[0; 20]);
    queries.push(("IXFR", ixfr));
    let mut notify = query(16, "example.com.", 6, false);
    notify[2] = 0x20 | 0x04;
    queries.push(("NOTIFY", notify));
    let mut badvers = query(17, "www.example.com.", 1, true);
    let ttl_at = badvers.len() - 6;
    badvers[ttl_at - 2] = 1; // the OPT's version
    queries.push(("EDNS version 1", badvers));
    let mut status = query(18, "www.example.com.", 1, true);
    status[2] = 0x10; // opcode STATUS
    queries.push(("opcode STATUS", status));
    let mut any = query(19, "www.example.com.", 1, true);
    let class_at = any.len() - 11 - 1;
    any[class_at] = 255;
    queries.push(("class ANY", any));
    let mut trailing = query(20, "www.example.com.", 1, true);
    trailing.push(0);
    queries.push(("malformed: trailing octet", trailing));
    let mut two = query(21, "www.example.com.", 1, false);
    two[5] = 2;
    queries.push(("malformed: two questions", two));
    let cut = query(22, "www.example.com.", 1, false);
    queries.push(("malformed: cut question", cut[..20].to_vec()));
    queries.push(("malformed: short header", cut[..11].to_vec()));
    let mut response = query(23, "www.example.com.", 1, false);
    response[2] |= 0x80;
    queries.push(("QR set", response));
    queries
}

/// A worker with every stage on: cookies, rate limiting (127.0.0.0/8
/// exempt, 5 answers a second, every limited answer slips),
/// forwarding (127.0.0.0/8 allowed; none in flight, so the forwarder
/// answers SERVFAIL at once), transfers (127.0.0.0/8) and a TSIG key, NSID.
fn parse_test_worker() -> (Worker, crate::TransferConfig) {
    let mut worker = Worker::new(catalog(), nsid_options(), CacheLimits::default());
    worker.set_cookie_secret(CookieSecret::new(SECRET));
    worker.set_cookie_clock(NOW);
    let limits = RateLimitConfig {
        slip: 1,
        ..config()
    };
    worker.set_rate_limiter(RateLimiter::new(&limits, 1));
    let mut forward = ForwardConfig::new(vec!["127.0.0.1:9".parse().unwrap()]);
    forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    forward.max_in_flight = 0;
    worker.set_forwarder(Forwarder::new(forward, 1232));
    let transfer = crate::TransferConfig {
        allow: vec![Cidr::parse("127.0.0.0/8").unwrap()],
        keys: vec![parse_test_key()],
        ..crate::TransferConfig::default()
    };
    worker.set_transfer(transfer.clone());
    (worker, transfer)
}

/// Issue 23: a query is parsed once on every path. Each query of
/// [`parse_test_queries`], several rounds (misses, then hits, then rate
/// limited), from an exempt client (forwarded, transfers allowed) and a
/// limited one (slips, refused transfers), over UDP (answer, then
/// forward) and TCP (the transfer check, answer, then forward) as the
/// transports call the worker: `MessageView::parse` reads its bytes once.
#[test]
fn every_query_is_parsed_once() {
    use tern_wire::parse::count;
    use tern_wire::query::Query;
    let (mut worker, transfer) = parse_test_worker();
    let xfr_counters = crate::xfr_out::XfrOutCounters::default();
    let queries = parse_test_queries();
    let mut out = vec![0u8; TCP_SIZE];
    let mut actions = Vec::new();
    let mut wrong = Vec::new();
    // Enough for the rate limiter to slip each of the limited client's
    // kinds of answers.
    const ROUNDS: usize = 6;
    for round in 0..ROUNDS {
        for from in ["127.0.0.1:5300", "192.0.2.7:5300"] {
            let address: SocketAddr = from.parse().unwrap();
            for (what, query) in &queries {
                // As the UDP loop: parse, answer, forward.
                count::watch(query);
                let parsed = Query::parse(query);
                let udp = worker.answer_udp_lazy(&parsed, &|| Some(address), 0, &mut out);
                if udp == UdpAnswer::Forward {
                    let client = tern_cache::forward::Client::Udp {
                        listener: 0,
                        address,
                        behind: None,
                    };
                    worker.forward_query(&parsed, client, 0, &mut actions, &mut out);
                }
                let parses = count::parses();
                if parses != 1 {
                    wrong.push(format!("UDP {what} from {from}, round {round}: {parses}"));
                }
                // As the TCP loop: parse, the transfer check, answer,
                // forward.
                count::watch(query);
                let parsed = Query::parse(query);
                let start = crate::xfr_out::start(
                    worker.catalog(),
                    &transfer,
                    None,
                    &xfr_counters,
                    &parsed,
                    address.ip(),
                    crate::xfr_out::Channel::Tcp,
                    &mut out,
                );
                if matches!(start, crate::xfr_out::Start::NotTransfer) {
                    let tcp = worker.answer_tcp(&parsed, Some(address), 0, &mut out);
                    if tcp == UdpAnswer::Forward {
                        let client = tern_cache::forward::Client::Tcp {
                            connection: 0,
                            slot: 0,
                        };
                        worker.forward_tcp(&parsed, client, 0, &mut actions, &mut out);
                    }
                }
                let parses = count::parses();
                if parses != 1 {
                    wrong.push(format!("TCP {what} from {from}, round {round}: {parses}"));
                }
                actions.clear();
            }
        }
    }
    // Every path was taken.
    let counters = worker.counters();
    assert!(counters.cache_hits > 0 && counters.cache_misses > 0);
    assert!(counters.rrl_slipped > 0, "{counters:?}");
    assert!(counters.badcookie > 0, "a BADCOOKIE slip: {counters:?}");
    assert!(
        xfr_counters.stats().refusals.iter().sum::<u64>() > 0,
        "a refused transfer"
    );
    assert!(
        wrong.is_empty(),
        "parsed other than once:\n{}",
        wrong.join("\n")
    );
}

/// The UDP path's cache key is the worker's, written in place by each
/// query: a shorter name after a longer one leaves the longer one's octets
/// past its end, which nothing may read. The key then equals one made
/// anew, and the short name's answer, stored while the octets past it were
/// zeros, is hit with them left over (a hash or comparison that read them
/// would miss).
#[test]
fn the_reused_cache_key_reads_only_its_name() {
    let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
    let mut out = vec![0; 4096];
    let short = query(1, "WwW.Example.COM.", 1, true);
    let long = query(
        2,
        "a-long-label-to-leave-octets-behind.www.example.com.",
        1,
        true,
    );
    let mut answers = Vec::new();
    for asked in [&short, &long, &short] {
        let UdpAnswer::Send(len) = worker.answer_udp_from(asked, peer("127.0.0.1:53"), 0, &mut out)
        else {
            panic!("an answer");
        };
        answers.push(out[..len].to_vec());
    }
    let counters = worker.counters();
    assert_eq!((counters.cache_misses, counters.cache_hits), (2, 1));
    assert_eq!(answers[0], answers[2]);
    let view = MessageView::parse(&short).unwrap();
    let fresh = CacheKey::from_query(&view, view.edns().unwrap().as_ref()).unwrap();
    assert_eq!(worker.key, fresh);
    assert_eq!(
        worker.cache.key_hash(&worker.key),
        worker.cache.key_hash(&fresh)
    );
}

/// The request arena is reset after a query only if the query allocated
/// in it (`Worker::reset_arena`): something left in it before an answer
/// over UDP is gone after it, and an answer that allocated nothing leaves
/// the arena as it was, empty. A check that never reset (or compared the
/// wrong capacity) keeps the allocation; one that always did is the old
/// reset.
#[test]
fn the_request_arena_is_reset_when_used() {
    let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
    let empty = worker.arena.chunk_capacity();
    assert_eq!(empty, worker.arena_capacity);
    let mut out = [0u8; 1232];
    let query = query(1, "www.example.com.", 1, true);
    for round in 0..3 {
        // As the UDP loop answers and as `Worker::answer` (UDP) does.
        let left = worker.arena.alloc([round as u8; 100]);
        assert_eq!(left[99], round as u8);
        assert!(worker.arena.chunk_capacity() < empty, "round {round}");
        let answer = worker.answer_udp_from(&query, None, 0, &mut out);
        assert!(matches!(answer, UdpAnswer::Send(_)), "round {round}");
        assert_eq!(worker.arena.chunk_capacity(), empty, "round {round}");
        worker.arena.alloc([round as u8; 100]);
        assert!(
            worker.answer(&query, Transport::Udp, &mut out).is_some(),
            "round {round}"
        );
        assert_eq!(worker.arena.chunk_capacity(), empty, "round {round}");
        // Nothing allocated: still empty.
        worker.answer_udp_from(&query, None, 0, &mut out);
        assert_eq!(worker.arena.chunk_capacity(), empty, "round {round}");
    }
}
