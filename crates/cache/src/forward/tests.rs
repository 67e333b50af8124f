//! The forwarder with a fake clock and hand-made upstream answers.

use std::net::SocketAddr;
use std::time::Duration;

use tern_wire::name::NameBuf;
use tern_wire::parse::{MessageView, Section};

use super::*;

fn upstreams(count: usize) -> Vec<SocketAddr> {
    (0..count)
        .map(|i| SocketAddr::from(([127, 0, 0, 1], 5300 + i as u16)))
        .collect()
}

fn forwarder(configure: impl Fn(&mut ForwardConfig)) -> Forwarder {
    let mut config = ForwardConfig::new(upstreams(2));
    config.timeout = Duration::from_millis(100);
    config.retries = 1;
    configure(&mut config);
    Forwarder::new(config, 1232)
}

/// A client's query: RD set, no EDNS.
fn client_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    tern_testkit::query(id, name, qtype, None)
}

fn key_of(query: &[u8]) -> ForwardKey {
    Forwarder::key(&MessageView::parse(query).unwrap(), false).unwrap()
}

fn client(port: u16) -> Client {
    Client::Udp {
        listener: 0,
        address: SocketAddr::from(([127, 0, 0, 1], port)),
        behind: None,
    }
}

/// Starts `query` at `now`; returns the transmits.
fn start(f: &mut Forwarder, query: &[u8], now: u64) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut out = [0u8; 512];
    let key = key_of(query);
    assert_eq!(
        f.start(
            key,
            client(1),
            query,
            query.len(),
            false,
            false,
            512,
            now,
            &mut actions,
            &mut out
        ),
        None
    );
    actions
}

/// (upstream, socket, bytes) of a transmit.
fn transmit(action: &Action) -> (usize, usize, Vec<u8>) {
    match action {
        Action::Transmit {
            upstream,
            socket,
            bytes,
        } => (*upstream, *socket, bytes.clone()),
        other => panic!("not a transmit: {other:?}"),
    }
}

/// The one transmit among `actions`.
fn only_transmit(actions: &[Action]) -> (usize, usize, Vec<u8>) {
    let transmits: Vec<_> = actions
        .iter()
        .filter(|action| matches!(action, Action::Transmit { .. }))
        .collect();
    assert_eq!(transmits.len(), 1, "{actions:?}");
    transmit(transmits[0])
}

/// The (upstream, socket) of every release among `actions`.
fn releases(actions: &[Action]) -> Vec<(usize, usize)> {
    actions
        .iter()
        .filter_map(|action| match action {
            Action::Release { upstream, socket } => Some((*upstream, *socket)),
            _ => None,
        })
        .collect()
}

fn answers(actions: &[Action]) -> Vec<Vec<u8>> {
    actions
        .iter()
        .filter_map(|action| match action {
            Action::Answer { bytes, .. } => Some(bytes.clone()),
            _ => None,
        })
        .collect()
}

/// An answer to upstream query `sent`: rcode, answer records and
/// authority records (already encoded).
fn response(sent: &[u8], rcode: u8, answer: &[&[u8]], authority: &[&[u8]]) -> Vec<u8> {
    let question_end = HEADER_LEN
        + MessageView::parse(sent)
            .unwrap()
            .question()
            .unwrap()
            .bytes
            .len();
    let mut out = sent[..2].to_vec();
    out.extend_from_slice(&[0x81, 0x80 | rcode, 0, 1]);
    out.extend_from_slice(&(answer.len() as u16).to_be_bytes());
    out.extend_from_slice(&(authority.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&sent[12..question_end]);
    for record in answer.iter().chain(authority) {
        out.extend_from_slice(record);
    }
    out
}

fn a_record(ttl: u32) -> Vec<u8> {
    let mut r = vec![0xc0, 12, 0, 1, 0, 1];
    r.extend_from_slice(&ttl.to_be_bytes());
    r.extend_from_slice(&[0, 4, 192, 0, 2, 1]);
    r
}

/// An SOA for `owner` with the given TTL and MINIMUM.
fn soa_record(owner: &str, ttl: u32, minimum: u32) -> Vec<u8> {
    let mut r = NameBuf::from_text(owner.as_bytes(), None)
        .unwrap()
        .as_bytes()
        .to_vec();
    r.extend_from_slice(&[0, 6, 0, 1]);
    r.extend_from_slice(&ttl.to_be_bytes());
    r.extend_from_slice(&[0, 22, 0, 0]); // RDLENGTH, then MNAME and RNAME: the root
    r.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
    r.extend_from_slice(&minimum.to_be_bytes());
    r
}

fn ttls(answer: &[u8], section: Section) -> Vec<u32> {
    let view = MessageView::parse(answer).unwrap();
    view.section(section).map(|r| r.unwrap().ttl).collect()
}

#[test]
fn answers_waiters_then_counts_ttls_down_from_the_cache() {
    let mut f = forwarder(|_| {});
    let query = client_query(0x4242, "WwW.Example.ORG.", 1);
    let actions = start(&mut f, &query, 1_000);
    assert_eq!(actions.len(), 1);
    let (upstream, socket, sent) = transmit(&actions[0]);
    // RD, the question in (some) case of the key, an OPT.
    assert_eq!(sent[2], 0x01);
    let sent_question = MessageView::parse(&sent).unwrap().question().unwrap();
    assert!(sent_question.bytes.eq_ignore_ascii_case(&query[12..]));
    let mut actions = Vec::new();
    f.on_response(
        upstream,
        socket,
        &response(&sent, 0, &[&a_record(100)], &[]),
        1_020,
        &mut actions,
    );
    let answers = answers(&actions);
    assert_eq!(answers.len(), 1);
    let answer = &answers[0];
    assert_eq!(&answer[..4], &[0x42, 0x42, 0x81, 0x80], "own ID, QR RD RA");
    assert_eq!(&answer[12..query.len()], &query[12..], "own question bytes");
    assert_eq!(ttls(answer, Section::Answer), [100]);

    // 30 s later, from the cache, another client and case.
    let other = client_query(7, "www.example.org.", 1);
    let mut out = [0u8; 512];
    let len = f
        .answer_from_cache(
            &key_of(&other),
            &other,
            other.len(),
            true,
            false,
            512,
            31_000,
            &mut out,
        )
        .unwrap();
    assert_eq!(&out[..2], &[0, 7]);
    assert_eq!(ttls(&out[..len], Section::Answer), [70]);
    assert!(MessageView::parse(&out[..len])
        .unwrap()
        .edns()
        .unwrap()
        .is_some());
    // Expired: a miss (kept for serve-stale).
    assert_eq!(
        f.answer_from_cache(
            &key_of(&other),
            &other,
            other.len(),
            false,
            false,
            512,
            101_000,
            &mut out
        ),
        None
    );
    assert_eq!(f.peek(&key_of(&other), 101_000), Some((0, 0)));
    let stats = f.stats();
    assert_eq!((stats.cache_hits, stats.cache_misses), (1, 1));
    assert_eq!((stats.upstream_queries, stats.upstream_answers), (1, 1));
}

/// An entry is one extent of the cache's slab: an answer that would store
/// more than [`MAX_FORWARD_ENTRY_LEN`] octets still reaches its client,
/// but is not cached; one just within is.
#[test]
fn answers_longer_than_an_entry_are_forwarded_not_cached() {
    let mut f = forwarder(|_| {});
    for (name, records, cached) in [("big.example.org.", 300, 0), ("fits.example.org.", 200, 1)] {
        let query = client_query(9, name, 1);
        let (upstream, socket, sent) = only_transmit(&start(&mut f, &query, 1_000));
        let record = a_record(60);
        let answer: Vec<&[u8]> = (0..records).map(|_| &record[..]).collect();
        let upstream_answer = response(&sent, 0, &answer, &[]);
        // The name, the records, two octets of TTL offset per record.
        let stored = key_of(&query).name.as_bytes().len() + records * (record.len() + 2);
        assert_eq!(
            stored > MAX_FORWARD_ENTRY_LEN,
            cached == 0,
            "{name}: {stored}"
        );
        let mut actions = Vec::new();
        f.on_response(upstream, socket, &upstream_answer, 1_010, &mut actions);
        let answers = answers(&actions);
        assert_eq!(answers.len(), 1, "{name}");
        assert_eq!(answers[0][2] & 0x02, 0x02, "{name}: TC at 512 octets");
        assert_eq!(f.cached(), cached, "{name}");
    }
}

#[test]
fn negative_answers_are_cached_for_the_soa_minimum_capped() {
    let mut f = forwarder(|config| config.negative_ttl_max = Duration::from_secs(600));
    let query = client_query(1, "nope.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let soa = soa_record("example.org.", 3600, 900);
    let mut actions = Vec::new();
    f.on_response(u, s, &response(&sent, 3, &[], &[&soa]), 10, &mut actions);
    let answer = &answers(&actions)[0];
    assert_eq!(answer[3] & 0x0f, 3);
    assert_eq!(ttls(answer, Section::Authority), [600], "SOA TTL capped");
    assert_eq!(f.peek(&key_of(&query), 10), Some((3, 600)));

    // NODATA with a small MINIMUM: min(SOA TTL, MINIMUM).
    let query = client_query(2, "www.example.org.", 28);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let soa = soa_record("example.org.", 3600, 60);
    f.on_response(u, s, &response(&sent, 0, &[], &[&soa]), 0, &mut actions);
    assert_eq!(f.peek(&key_of(&query), 0), Some((0, 60)));

    // An SOA of an unrelated zone is outside the chain: dropped.
    let query = client_query(3, "x.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let soa = soa_record("attacker.test.", 3600, 60);
    let before = f.stats().upstream_rejected;
    f.on_response(u, s, &response(&sent, 3, &[], &[&soa]), 0, &mut actions);
    assert_eq!(f.stats().upstream_rejected, before + 1);
    assert_eq!(f.peek(&key_of(&query), 0), None);
}

#[test]
fn wrong_ids_are_ignored_and_timeouts_fail_over_then_servfail() {
    let mut f = forwarder(|_| {});
    let query = client_query(9, "a.example.org.", 1);
    let (first, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let mut bad = response(&sent, 0, &[&a_record(60)], &[]);
    bad[0] ^= 0xff;
    let mut actions = Vec::new();
    f.on_response(first, s, &bad, 10, &mut actions);
    // From another upstream's socket: no such query there.
    f.on_response(
        1 - first,
        s,
        &response(&sent, 0, &[&a_record(60)], &[]),
        10,
        &mut actions,
    );
    assert!(actions.is_empty());
    assert_eq!(f.stats().upstream_rejected, 2);

    f.on_timeout(50, &mut actions);
    assert!(actions.is_empty(), "not yet");
    f.on_timeout(100, &mut actions);
    let (second, second_socket, _) = only_transmit(&actions);
    assert_ne!(second, first, "the retry goes to the other upstream");
    assert_ne!(second_socket, s, "on a socket of its own");
    assert_eq!(
        releases(&actions),
        [(first, s)],
        "the timed-out socket closes"
    );
    actions.clear();
    f.on_timeout(200, &mut actions);
    assert_eq!(releases(&actions), [(second, second_socket)]);
    let answer = &answers(&actions)[0];
    assert_eq!(answer[3] & 0x0f, 2, "SERVFAIL");
    let stats = f.stats();
    assert_eq!(stats.upstream_timeouts, 2);
    assert_eq!(stats.servfails, 1);
    assert_eq!(stats.upstreams[first].timeouts, 1);
    assert!(stats.upstreams[first].rtt_micros >= 100_000);
    // The SERVFAIL is cached briefly.
    assert_eq!(f.peek(&key_of(&query), 200), Some((2, 5)));
    assert_eq!(f.in_flight(), 0);
}

#[test]
fn identical_questions_share_one_upstream_query() {
    let mut f = forwarder(|config| config.max_waiters = 3);
    let queries: Vec<Vec<u8>> = [
        "a.example.org.",
        "A.EXAMPLE.org.",
        "a.Example.Org.",
        "a.example.ORG.",
    ]
    .iter()
    .enumerate()
    .map(|(i, name)| client_query(i as u16 + 1, name, 1))
    .collect();
    let mut actions = Vec::new();
    let mut out = [0u8; 512];
    let mut immediate = Vec::new();
    for (i, query) in queries.iter().enumerate() {
        let key = key_of(query);
        let c = client(i as u16 + 1);
        if let Some(len) = f.start(
            key,
            c,
            query,
            query.len(),
            false,
            false,
            512,
            0,
            &mut actions,
            &mut out,
        ) {
            immediate.push(out[..len].to_vec());
        }
    }
    assert_eq!(actions.len(), 1, "one upstream query");
    assert_eq!(immediate.len(), 1, "the fourth is over max-waiters");
    assert_eq!(immediate[0][3] & 0x0f, 2);
    assert_eq!(f.stats().coalesced, 2);
    let (u, s, sent) = transmit(&actions[0]);
    actions.clear();
    f.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(60)], &[]),
        5,
        &mut actions,
    );
    let answers = answers(&actions);
    assert_eq!(answers.len(), 3);
    for (answer, query) in answers.iter().zip(&queries) {
        assert_eq!(&answer[..2], &query[..2]);
        assert_eq!(&answer[12..query.len()], &query[12..]);
    }
}

/// Builds a bad answer to an upstream query.
type MakeAnswer<'a> = Box<dyn Fn(&[u8]) -> Vec<u8> + 'a>;

#[test]
fn hostile_answers_never_reach_clients_or_the_cache() {
    let name = NameBuf::from_text(b"q.example.org.", None).unwrap();
    let cname = |target: &str| {
        let target = NameBuf::from_text(target.as_bytes(), None).unwrap();
        let mut r = vec![0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60];
        r.extend_from_slice(&(target.as_bytes().len() as u16).to_be_bytes());
        r.extend_from_slice(target.as_bytes());
        r
    };
    let owned = |owner: &str, rtype: u16, rdata: &[u8]| {
        let mut r = NameBuf::from_text(owner.as_bytes(), None)
            .unwrap()
            .as_bytes()
            .to_vec();
        r.extend_from_slice(&rtype.to_be_bytes());
        r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        r.extend_from_slice(rdata);
        r
    };
    let b_target = NameBuf::from_text(b"b.example.org.", None).unwrap();
    let cases: Vec<(&str, MakeAnswer<'_>)> = vec![
        (
            "CNAME loop",
            Box::new(|sent: &[u8]| {
                let back = owned("b.example.org.", 5, name.as_bytes());
                response(sent, 0, &[&cname("b.example.org."), &back], &[])
            }),
        ),
        (
            "outside the chain",
            Box::new(|sent: &[u8]| {
                response(
                    sent,
                    0,
                    &[&a_record(60), &owned("victim.test.", 1, &[1, 2, 3, 4])],
                    &[],
                )
            }),
        ),
        (
            "CNAME then unrelated A",
            Box::new(|sent: &[u8]| {
                let _ = b_target;
                response(
                    sent,
                    0,
                    &[
                        &cname("b.example.org."),
                        &owned("c.example.org.", 1, &[1, 2, 3, 4]),
                    ],
                    &[],
                )
            }),
        ),
        (
            "pointer into the header",
            Box::new(|sent: &[u8]| {
                let mut record = a_record(60);
                record[1] = 4;
                response(sent, 0, &[&record], &[])
            }),
        ),
        (
            "runs past the end",
            Box::new(|sent: &[u8]| {
                let mut bytes = response(sent, 0, &[&a_record(60)], &[]);
                bytes.truncate(bytes.len() - 2);
                bytes
            }),
        ),
        (
            "trailing bytes",
            Box::new(|sent: &[u8]| {
                let mut bytes = response(sent, 0, &[&a_record(60)], &[]);
                bytes.push(0);
                bytes
            }),
        ),
        (
            "question in another case",
            Box::new(|sent: &[u8]| {
                let mut bytes = response(sent, 0, &[&a_record(60)], &[]);
                for octet in &mut bytes[13..14] {
                    *octet ^= 0x20;
                }
                bytes
            }),
        ),
        (
            "QR clear",
            Box::new(|sent: &[u8]| {
                let mut bytes = response(sent, 0, &[&a_record(60)], &[]);
                bytes[2] &= 0x7f;
                bytes
            }),
        ),
    ];
    for (what, make) in &cases {
        let mut f = forwarder(|config| config.retries = 0);
        let query = client_query(1, "q.example.org.", 1);
        let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
        let mut actions = Vec::new();
        f.on_response(u, s, &make(&sent), 1, &mut actions);
        assert!(actions.is_empty(), "{what}: nothing sent");
        assert_eq!(f.stats().upstream_rejected, 1, "{what}");
        assert_eq!(f.cached(), 0, "{what}: nothing cached");
        f.on_timeout(100, &mut actions);
        assert_eq!(answers(&actions)[0][3] & 0x0f, 2, "{what}: SERVFAIL");
        assert_eq!(f.peek(&key_of(&query), 100), Some((2, 5)), "{what}");
    }

    // A good CNAME chain is accepted.
    let mut f = forwarder(|_| {});
    let query = client_query(1, "q.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let chain = response(
        &sent,
        0,
        &[
            &cname("b.example.org."),
            &owned("b.example.org.", 1, &[1, 2, 3, 4]),
        ],
        &[],
    );
    let mut actions = Vec::new();
    f.on_response(u, s, &chain, 1, &mut actions);
    assert_eq!(answers(&actions).len(), 1);
    assert_eq!(f.cached(), 1);
}

#[test]
fn cache_memory_stays_bounded_under_a_flood_of_names() {
    let max_bytes = 256 << 10;
    let mut f = forwarder(|config| {
        config.cache = CacheLimits {
            max_entries: 1 << 20,
            max_bytes,
        };
        config.max_in_flight = 4;
    });
    let mut actions = Vec::new();
    for i in 0..20_000u32 {
        let query = client_query(1, &format!("r{i}.flood.example.org."), 1);
        let sent_actions = start(&mut f, &query, u64::from(i));
        let (u, s, sent) = transmit(&sent_actions[0]);
        f.on_response(
            u,
            s,
            &response(&sent, 0, &[&a_record(300)], &[]),
            u64::from(i),
            &mut actions,
        );
        actions.clear();
        assert!(f.cached_bytes() <= max_bytes);
    }
    assert!(f.cached() > 100, "the cache is used: {}", f.cached());
    assert!(f.cached() < 20_000);
    assert_eq!(f.in_flight(), 0);
}

#[test]
fn stale_answers_when_every_upstream_fails() {
    let mut f = forwarder(|config| config.stale_ttl = Duration::from_secs(30));
    let query = client_query(1, "s.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let mut actions = Vec::new();
    f.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(10)], &[]),
        0,
        &mut actions,
    );
    actions.clear();
    // Expired at 10 s; at 20 s both attempts time out.
    start(&mut f, &query, 20_000);
    f.on_timeout(20_100, &mut actions);
    actions.clear();
    f.on_timeout(20_200, &mut actions);
    let answer = &answers(&actions)[0];
    assert_eq!(answer[3] & 0x0f, 0);
    assert_eq!(ttls(answer, Section::Answer), [30]);
    assert_eq!(f.stats().stale_answers, 1);
    // The stale entry stays (no SERVFAIL over it).
    assert_eq!(f.peek(&key_of(&query), 20_200), Some((0, 0)));
}

#[test]
fn popular_entries_are_prefetched_before_expiry() {
    let mut f = forwarder(|_| {});
    let query = client_query(1, "p.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let mut actions = Vec::new();
    f.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(100)], &[]),
        0,
        &mut actions,
    );
    let key = key_of(&query);
    let mut out = [0u8; 512];
    for now in [1_000, 2_000, 3_000] {
        f.answer_from_cache(&key, &query, query.len(), false, false, 512, now, &mut out)
            .unwrap();
    }
    assert!(!f.has_prefetches(), "too early");
    f.answer_from_cache(
        &key,
        &query,
        query.len(),
        false,
        false,
        512,
        95_000,
        &mut out,
    )
    .unwrap();
    assert!(f.has_prefetches());
    actions.clear();
    f.prefetches(95_000, &mut actions);
    let (u, s, sent) = transmit(&actions[0]);
    f.answer_from_cache(
        &key,
        &query,
        query.len(),
        false,
        false,
        512,
        96_000,
        &mut out,
    )
    .unwrap();
    assert!(!f.has_prefetches(), "one prefetch at a time");
    actions.clear();
    f.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(100)], &[]),
        96_000,
        &mut actions,
    );
    assert!(answers(&actions).is_empty(), "no waiter");
    assert_eq!(f.peek(&key, 96_000), Some((0, 100)), "refreshed");
}

#[test]
fn policies_choose_upstreams() {
    let mut round_robin = forwarder(|config| config.policy = Policy::RoundRobin);
    let mut seen = Vec::new();
    for i in 0..4 {
        let query = client_query(1, &format!("rr{i}.example.org."), 1);
        seen.push(transmit(&start(&mut round_robin, &query, 0)[0]).0);
    }
    assert_eq!(seen, [0, 1, 0, 1]);

    let mut race = forwarder(|config| config.policy = Policy::Race);
    let query = client_query(1, "race.example.org.", 1);
    let actions = start(&mut race, &query, 0);
    let mut raced: Vec<usize> = actions.iter().map(|a| transmit(a).0).collect();
    raced.sort_unstable();
    assert_eq!(raced, [0, 1]);
    let (u, s, sent) = transmit(&actions[1]);
    let mut answered = Vec::new();
    race.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(60)], &[]),
        3,
        &mut answered,
    );
    assert_eq!(answers(&answered).len(), 1, "first good answer wins");
    let (loser, loser_socket, _) = transmit(&actions[0]);
    let mut released = releases(&answered);
    released.sort_unstable();
    let mut expected = vec![(u, s), (loser, loser_socket)];
    expected.sort_unstable();
    assert_eq!(released, expected, "both race sockets close");
    let (u, s, sent) = transmit(&actions[0]);
    answered.clear();
    race.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(60)], &[]),
        4,
        &mut answered,
    );
    assert!(answers(&answered).is_empty(), "the loser is ignored");
    assert!(
        answered.is_empty(),
        "its socket was released with the winner's"
    );

    // Fastest: after upstream 1 answers quickly and 0 times out, 1 is
    // chosen (but for the occasional probe).
    let mut fastest = forwarder(|_| {});
    let mut actions = Vec::new();
    let query = client_query(1, "f.example.org.", 1);
    let first = transmit(&start(&mut fastest, &query, 0)[0]).0;
    fastest.on_timeout(100, &mut actions);
    let (u, s, sent) = only_transmit(&actions);
    fastest.on_response(
        u,
        s,
        &response(&sent, 0, &[&a_record(60)], &[]),
        101,
        &mut actions,
    );
    let mut to_other = 0;
    for i in 0..64 {
        let query = client_query(1, &format!("f{i}.example.org."), 1);
        if transmit(&start(&mut fastest, &query, 200)[0]).0 != first {
            to_other += 1;
        }
    }
    assert!(to_other >= 56, "{to_other} of 64 to the faster upstream");
}

#[test]
fn cidr_matching() {
    let net = Cidr::parse("10.1.0.0/16").unwrap();
    assert!(net.contains("10.1.200.3".parse().unwrap()));
    assert!(!net.contains("10.2.0.1".parse().unwrap()));
    assert!(net.contains("::ffff:10.1.0.1".parse().unwrap()));
    assert!(Cidr::parse("0.0.0.0/0")
        .unwrap()
        .contains("192.0.2.1".parse().unwrap()));
    assert!(Cidr::parse("::1").unwrap().contains("::1".parse().unwrap()));
    assert_eq!(Cidr::parse("10.0.0.0/33"), None);
    assert_eq!(Cidr::parse("bogus"), None);
}

/// A DNAME asked for by type is the answer itself (issue 15): accepted and
/// cached. At the question's own name for another type, or at a name
/// outside the chain, it is still refused.
#[test]
fn a_dname_asked_for_by_type_is_the_answer() {
    const DNAME: u16 = 39;
    let dname = |owner: Option<&str>| {
        let mut r = match owner {
            Some(owner) => NameBuf::from_text(owner.as_bytes(), None)
                .unwrap()
                .as_bytes()
                .to_vec(),
            None => vec![0xc0, 12],
        };
        let target = NameBuf::from_text(b"example.net.", None).unwrap();
        r.extend_from_slice(&DNAME.to_be_bytes());
        r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        r.extend_from_slice(&(target.as_bytes().len() as u16).to_be_bytes());
        r.extend_from_slice(target.as_bytes());
        r
    };
    let mut f = forwarder(|_| {});
    let query = client_query(7, "dn.example.org.", DNAME);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let mut actions = Vec::new();
    f.on_response(
        u,
        s,
        &response(&sent, 0, &[&dname(None)], &[]),
        1,
        &mut actions,
    );
    let answer = &answers(&actions)[0];
    let view = MessageView::parse(answer).unwrap();
    assert_eq!(
        (view.header().rcode_bits(), view.header().counts()[1]),
        (0, 1)
    );
    let record = view.section(Section::Answer).next().unwrap().unwrap();
    assert_eq!(record.rtype.0, DNAME);
    assert_eq!(f.stats().upstream_rejected, 0);
    assert_eq!(f.cached(), 1);

    for (qtype, owner, what) in [
        (1, None, "at the question's name, asked for A"),
        (DNAME, Some("other.example.org."), "outside the chain"),
        (
            DNAME,
            Some("sub.dn.example.org."),
            "below the question's name",
        ),
    ] {
        let mut f = forwarder(|config| config.retries = 0);
        let query = client_query(8, "dn.example.org.", qtype);
        let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
        let mut actions = Vec::new();
        f.on_response(
            u,
            s,
            &response(&sent, 0, &[&dname(owner)], &[]),
            1,
            &mut actions,
        );
        assert!(actions.is_empty(), "{what}: nothing sent");
        assert_eq!(f.stats().upstream_rejected, 1, "{what}");
        assert_eq!(f.cached(), 0, "{what}");
    }
}

/// Every transmit of a race leaves on a socket of its own with an ID of
/// its own; IDs and case vary from question to question (CSPRNG).
#[test]
fn each_transmit_has_its_own_socket_and_id() {
    let mut f = Forwarder::new(
        {
            let mut config = ForwardConfig::new(upstreams(8));
            config.policy = Policy::Race;
            config.race = 8;
            config
        },
        1232,
    );
    let mut sockets = std::collections::HashSet::new();
    let mut ids = std::collections::HashSet::new();
    let mut spellings = std::collections::HashSet::new();
    for i in 0..50 {
        let query = client_query(1, &format!("abcdefghijklmnop{i}.example.org."), 1);
        let actions = start(&mut f, &query, 0);
        assert_eq!(actions.len(), 8);
        let mut race_ids = std::collections::HashSet::new();
        for action in &actions {
            let (_, socket, sent) = transmit(action);
            assert!(sockets.insert(socket), "socket {socket} reused");
            let id = u16::from_be_bytes([sent[0], sent[1]]);
            assert!(race_ids.insert(id), "ID {id} twice in one race");
            ids.insert(id);
            // The case of the 16 letters of the first label.
            let question = MessageView::parse(&sent).unwrap().question().unwrap();
            let case: Vec<bool> = question.bytes[1..17]
                .iter()
                .map(u8::is_ascii_uppercase)
                .collect();
            spellings.insert(case);
        }
    }
    // 400 IDs from 16 bits: a handful of repeats at most, never a pattern.
    assert!(ids.len() > 380, "{} distinct IDs of 400", ids.len());
    // One spelling per question (its retries and race share it): 50
    // questions, 16 random case bits each.
    assert!(spellings.len() > 45, "{} spellings of 50", spellings.len());
}

/// RFC 7873 toward upstreams: every query carries our client cookie; once
/// an upstream has returned a server cookie, answers without it (or with
/// another client cookie) are refused, and the server cookie is sent back.
#[test]
fn upstream_cookies_are_sent_learnt_and_required() {
    fn cookie_of(message: &[u8]) -> Option<Vec<u8>> {
        let view = MessageView::parse(message).unwrap();
        let edns = view.edns().unwrap()?;
        edns.options()
            .map(Result::unwrap)
            .find(|(code, _)| *code == tern_wire::edns::OPTION_COOKIE)
            .map(|(_, value)| value.to_vec())
    }
    /// `response` with an OPT carrying `cookie`.
    fn with_cookie_option(mut answer: Vec<u8>, cookie: &[u8]) -> Vec<u8> {
        answer[11] += 1; // ARCOUNT
        answer.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0]);
        answer.extend_from_slice(&(cookie.len() as u16 + 4).to_be_bytes());
        answer.extend_from_slice(&tern_wire::edns::OPTION_COOKIE.to_be_bytes());
        answer.extend_from_slice(&(cookie.len() as u16).to_be_bytes());
        answer.extend_from_slice(cookie);
        answer
    }
    let mut f = forwarder(|config| config.upstreams.truncate(1));
    let query = client_query(1, "c1.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 0)[0]);
    let client = cookie_of(&sent).expect("a client cookie");
    assert_eq!(client.len(), 8);
    let server_cookie = [&client[..], &[0x5a; 16]].concat();
    let mut actions = Vec::new();
    let good = with_cookie_option(response(&sent, 0, &[&a_record(60)], &[]), &server_cookie);
    f.on_response(u, s, &good, 1, &mut actions);
    assert_eq!(answers(&actions).len(), 1);

    // The next query sends the server cookie back.
    let query = client_query(2, "c2.example.org.", 1);
    let (u, s, sent) = transmit(&start(&mut f, &query, 10)[0]);
    assert_eq!(cookie_of(&sent), Some(server_cookie.clone()));
    // Right ID, port and question, but no cookie, or a guessed client
    // cookie: refused; the real answer still wins.
    let mut actions = Vec::new();
    let plain = response(&sent, 0, &[&a_record(60)], &[]);
    f.on_response(u, s, &plain, 11, &mut actions);
    let mut guessed = server_cookie.clone();
    guessed[0] ^= 1;
    f.on_response(
        u,
        s,
        &with_cookie_option(plain.clone(), &guessed),
        11,
        &mut actions,
    );
    assert!(actions.is_empty(), "{actions:?}");
    let stats = f.stats();
    assert_eq!(
        (stats.upstream_rejected, stats.upstream_bad_cookies),
        (2, 2)
    );
    f.on_response(
        u,
        s,
        &with_cookie_option(plain, &server_cookie),
        12,
        &mut actions,
    );
    assert_eq!(answers(&actions).len(), 1);
}

/// The NSID option of an answer's OPT, if any (`None` without an OPT).
fn nsid_of(answer: &[u8]) -> Option<Option<Vec<u8>>> {
    let view = MessageView::parse(answer).unwrap();
    let edns = view.edns().unwrap()?;
    Some(
        edns.options()
            .map(Result::unwrap)
            .find(|&(code, _)| code == tern_wire::edns::OPTION_NSID)
            .map(|(_, value)| value.to_vec()),
    )
}

/// NSID: a client that asked (with EDNS) gets our identifier in the OPT
/// of its answer, from upstream, from the cache, stale or SERVFAIL; others
/// get none; the upstream query never asks for one.
#[test]
fn nsid_goes_to_the_clients_that_ask() {
    let mut f = forwarder(|_| {});
    f.set_nsid(b"\x00\x03\x00\x03fwd");
    let query = client_query(0x4242, "www.example.org.", 1);
    let key = key_of(&query);
    let mut actions = Vec::new();
    let mut out = [0u8; 512];
    // Two waiters on one question: the first asked, the second did not.
    for (port, nsid) in [(1, true), (2, false)] {
        let started = f.start(
            key,
            client(port),
            &query,
            query.len(),
            true,
            nsid,
            512,
            1_000,
            &mut actions,
            &mut out,
        );
        assert_eq!(started, None);
    }
    let (upstream, socket, sent) = only_transmit(&actions);
    assert_eq!(
        nsid_of(&sent),
        Some(None),
        "the upstream query asks for no NSID"
    );
    actions.clear();
    f.on_response(
        upstream,
        socket,
        &response(&sent, 0, &[&a_record(100)], &[]),
        1_020,
        &mut actions,
    );
    let answered: Vec<(Client, Vec<u8>)> = actions
        .iter()
        .filter_map(|action| match action {
            Action::Answer { client, bytes } => Some((*client, bytes.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(answered.len(), 2);
    for (who, bytes) in &answered {
        let expected = (*who == client(1)).then(|| b"fwd".to_vec());
        assert_eq!(nsid_of(bytes), Some(expected), "{who:?}");
    }
    // From the cache: with, without, and without EDNS.
    for (edns, nsid, expected) in [
        (true, true, Some(Some(b"fwd".to_vec()))),
        (true, false, Some(None)),
        (false, true, None),
    ] {
        let len = f
            .answer_from_cache(&key, &query, query.len(), edns, nsid, 512, 2_000, &mut out)
            .unwrap();
        assert_eq!(nsid_of(&out[..len]), expected, "edns {edns} nsid {nsid}");
    }
    // The option counts toward the limit: an answer that fits 512 octets
    // exactly without it is truncated with it.
    let len = f
        .answer_from_cache(&key, &query, query.len(), true, false, 512, 2_000, &mut out)
        .unwrap();
    let limit = len + 3;
    let len = f
        .answer_from_cache(
            &key,
            &query,
            query.len(),
            true,
            true,
            limit,
            2_000,
            &mut out,
        )
        .unwrap();
    let view = MessageView::parse(&out[..len]).unwrap();
    assert!(view.header().tc() && len <= limit, "{len} {limit}");
    assert_eq!(nsid_of(&out[..len]), Some(Some(b"fwd".to_vec())));
}
