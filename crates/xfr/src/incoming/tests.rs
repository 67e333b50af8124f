use std::collections::BTreeSet;

use tern_wire::name::NameBuf;

use super::*;
use crate::axfr::Outgoing;
use crate::tsig::{check_request, Algorithm, Key, RequestCheck};

const ZONE: &str = "
@ 300 IN SOA ns hostmaster 7 3600 900 604800 300
@ 300 IN NS ns
ns 300 IN A 192.0.2.53
www 300 IN A 192.0.2.80
mail 300 IN MX 10 mx.example.
sub 300 IN NS ns.sub
ns.sub 300 IN A 192.0.2.54
";

const NOW: u64 = 1_800_000_000;
const ID: u16 = 0x3131;

fn zone(extra: usize) -> Arc<Zone> {
    let mut text = ZONE.to_string();
    for i in 0..extra {
        text.push_str(&format!("h{i} 60 IN TXT \"{i}\"\n"));
    }
    Arc::new(tern_testkit::zone("example.", &text))
}

fn origin() -> NameBuf {
    NameBuf::from_text(b"example.", None).unwrap()
}

fn incoming(current: Option<&Arc<Zone>>, tsig: Option<&Key>, limits: Limits) -> Incoming {
    Incoming::new(
        origin().as_name(),
        current.cloned(),
        true,
        ID,
        tsig.map(Session::new),
        limits,
    )
}

/// A record as tests compare them: (owner, type, TTL, RDATA).
type Rec = (Vec<u8>, u16, u32, Vec<u8>);

/// Every record of a zone.
fn records(zone: &Zone) -> BTreeSet<Rec> {
    let mut cursor = RecordCursor::default();
    let mut all = BTreeSet::new();
    while let Some(r) = zone.next_record(&mut cursor) {
        all.insert((
            r.owner.as_bytes().to_vec(),
            r.rtype.0,
            r.ttl,
            r.rdata.to_vec(),
        ));
    }
    all
}

/// The messages a primary answers `request` with, from `zone`.
fn answers(zone: &Arc<Zone>, request: &[u8], soa_only: bool, target: usize) -> Vec<Vec<u8>> {
    let view = MessageView::parse(request).unwrap();
    let mut out = if soa_only {
        Outgoing::soa_only(Arc::clone(zone), &view)
    } else {
        Outgoing::full(Arc::clone(zone), &view)
    }
    .with_target(target);
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut messages = Vec::new();
    while let Some(len) = out.next_message(&mut buf, MAX_MESSAGE).unwrap() {
        messages.push(buf[..len].to_vec());
    }
    messages
}

fn request(incoming: &mut Incoming) -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let len = incoming.request(&mut buf, NOW).unwrap();
    buf.truncate(len);
    buf
}

/// Feeds every message; the outcome of the last, or the first error.
fn feed(incoming: &mut Incoming, messages: &[Vec<u8>]) -> Result<Outcome, XfrError> {
    for (i, message) in messages.iter().enumerate() {
        if let Some(outcome) = incoming.message(message, NOW)? {
            assert_eq!(i + 1, messages.len(), "complete only at the last message");
            return Ok(outcome);
        }
    }
    Err(XfrError::Malformed("the test ran out of messages"))
}

/// A message of an answer with `records` (owner text, type, TTL, RDATA).
fn message(id: u16, question: Option<RType>, records: &[(&str, RType, u32, Vec<u8>)]) -> Vec<u8> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut builder = MessageBuilder::new(&mut buf, MAX_MESSAGE).unwrap();
    builder.set_id(id);
    builder.set_qr(true);
    builder.set_aa(true);
    if let Some(qtype) = question {
        builder
            .push_question(origin().as_name(), qtype, RClass::IN)
            .unwrap();
    }
    builder.set_section(Section::Answer);
    for (owner, rtype, ttl, rdata) in records {
        let owner = NameBuf::from_text(owner.as_bytes(), None).unwrap();
        builder
            .push_record(owner.as_name(), *rtype, RClass::IN, *ttl, rdata)
            .unwrap();
    }
    let len = builder.finish();
    buf.truncate(len);
    buf
}

/// SOA RDATA with `serial`, names at the root.
fn bare_soa(serial: u32) -> Vec<u8> {
    let mut rdata = b"\x00\x00".to_vec();
    for field in [serial, 1, 1, 1, 1] {
        rdata.extend_from_slice(&field.to_be_bytes());
    }
    rdata
}

#[test]
fn a_full_transfer_rebuilds_the_zone_record_for_record() {
    let primary = zone(300);
    for target in [MAX_MESSAGE, 400] {
        let mut incoming = incoming(None, None, Limits::default());
        assert!(!incoming.is_ixfr(), "without a zone, IXFR is AXFR");
        let request = request(&mut incoming);
        let messages = answers(&primary, &request, false, target);
        let Outcome::Zone { zone, incremental } = feed(&mut incoming, &messages).unwrap() else {
            panic!("a zone");
        };
        assert!(!incremental);
        assert_eq!(records(&zone), records(&primary), "target {target}");
        assert_eq!(incoming.received().0, messages.len() as u64);
    }
}

#[test]
fn signed_transfers_verify_every_message_and_need_the_last_signed() {
    let primary = zone(300);
    let name = NameBuf::from_text(b"k.", None).unwrap();
    let key = Key::new(name.as_name(), Algorithm::HmacSha512, b"secret");
    let keys = [key.clone()];
    let mut signed_in = incoming(None, Some(&key), Limits::default());
    let request = request(&mut signed_in);
    let RequestCheck::Signed(mut server) = check_request(&keys, &request, NOW) else {
        panic!("the request is signed");
    };
    let mut messages = answers(&primary, &request, false, 500);
    assert!(messages.len() > 3);
    let mut signed: Vec<Vec<u8>> = messages
        .iter()
        .map(|m| {
            let mut buf = m.clone();
            let len = buf.len();
            buf.resize(len + server.record_len(), 0);
            let len = server.sign(&mut buf, len, NOW).unwrap();
            buf.truncate(len);
            buf
        })
        .collect();
    assert!(matches!(
        feed(&mut signed_in, &signed).unwrap(),
        Outcome::Zone { .. }
    ));

    // The same answer unsigned: refused at the first message.
    let mut unsigned = incoming(None, Some(&key), Limits::default());
    self::request(&mut unsigned);
    assert_eq!(
        feed(&mut unsigned, &messages).unwrap_err(),
        XfrError::Tsig(TsigError::Unsigned)
    );
    // A changed octet in the last signed message.
    let mut tampered = incoming(None, Some(&key), Limits::default());
    self::request(&mut tampered);
    let last = signed.len() - 1;
    let octet = signed[last].len() / 2;
    signed[last][octet] ^= 1;
    assert!(feed(&mut tampered, &signed).is_err());
    // A signed answer to an unsigned request.
    let mut plain = incoming(None, None, Limits::default());
    self::request(&mut plain);
    messages[0] = signed[0].clone();
    assert_eq!(
        feed(&mut plain, &messages).unwrap_err(),
        XfrError::Malformed("a signed answer to an unsigned request")
    );
}

#[test]
fn ixfr_current_full_and_as_differences() {
    let ours = zone(3);
    // Current: the SOA alone.
    let mut current = incoming(Some(&ours), None, Limits::default());
    assert!(current.is_ixfr());
    let request = request(&mut current);
    let view = MessageView::parse(&request).unwrap();
    assert_eq!(
        crate::axfr::ixfr_serial(&view),
        Some(7),
        "the request carries our SOA"
    );
    let messages = answers(&ours, &request, true, MAX_MESSAGE);
    assert!(matches!(
        feed(&mut current, &messages).unwrap(),
        Outcome::UpToDate { serial: 7 }
    ));

    // A newer zone sent in full, in answer to an IXFR.
    let newer = Arc::new(tern_testkit::zone(
        "example.",
        &ZONE.replace(" 7 3600", " 8 3600"),
    ));
    let mut full = incoming(Some(&ours), None, Limits::default());
    let request = self::request(&mut full);
    let messages = answers(&newer, &request, false, MAX_MESSAGE);
    let Outcome::Zone { zone, incremental } = feed(&mut full, &messages).unwrap() else {
        panic!("a zone");
    };
    assert!(!incremental);
    assert_eq!(records(&zone), records(&newer));

    // Differences 7 -> 8 -> 9: www's address changes, then h0 goes and a
    // new name comes; applied in order to our zone.
    let soa = |serial: u32| -> Vec<u8> {
        let mut rdata = b"\x02ns\x07example\x00\x0ahostmaster\x07example\x00".to_vec();
        for field in [serial, 3600, 900, 604800, 300] {
            rdata.extend_from_slice(&field.to_be_bytes());
        }
        rdata
    };
    let aaaa = vec![0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let steps: Vec<(&str, RType, u32, Vec<u8>)> = vec![
        ("example.", RType::SOA, 300, soa(9)),
        ("example.", RType::SOA, 300, soa(7)),
        ("www.example.", RType::A, 300, vec![192, 0, 2, 80]),
        ("example.", RType::SOA, 300, soa(8)),
        ("www.example.", RType::A, 300, vec![192, 0, 2, 81]),
        ("example.", RType::SOA, 300, soa(8)),
        ("h0.example.", RType::TXT, 60, b"\x010".to_vec()),
        ("example.", RType::SOA, 300, soa(9)),
        ("new.example.", RType::AAAA, 60, aaaa.clone()),
        ("example.", RType::SOA, 300, soa(9)),
    ];
    let mut differences = incoming(Some(&ours), None, Limits::default());
    self::request(&mut differences);
    // Split over two messages, the question in the first only.
    let messages = vec![
        message(ID, Some(RType::IXFR), &steps[..4]),
        message(ID, None, &steps[4..]),
    ];
    let Outcome::Zone { zone, incremental } = feed(&mut differences, &messages).unwrap() else {
        panic!("a zone");
    };
    assert!(incremental);
    assert_eq!(zone.serial(), 9);
    let www = b"\x03www\x07example\x00".to_vec();
    let mut expected = records(&ours);
    expected.retain(|r| r.1 != RType::SOA.0);
    expected.remove(&(www.clone(), 1, 300, vec![192, 0, 2, 80]));
    expected.insert((www, 1, 300, vec![192, 0, 2, 81]));
    expected.remove(&(b"\x02h0\x07example\x00".to_vec(), 16, 60, b"\x010".to_vec()));
    expected.insert((b"\x03new\x07example\x00".to_vec(), 28, 60, aaaa));
    expected.insert((b"\x07example\x00".to_vec(), 6, 300, soa(9)));
    assert_eq!(records(&zone), expected);

    // Deleting a record we do not have: refused (the caller falls back to
    // AXFR).
    let mut missing = incoming(Some(&ours), None, Limits::default());
    self::request(&mut missing);
    let mut bad = steps.clone();
    bad[2].3 = vec![192, 0, 2, 99];
    assert_eq!(
        feed(&mut missing, &[message(ID, Some(RType::IXFR), &bad)]).unwrap_err(),
        XfrError::Malformed("a deletion of a record the zone does not have")
    );
    // Differences from another serial than ours.
    let mut other = incoming(Some(&ours), None, Limits::default());
    self::request(&mut other);
    let mut from_six = steps.clone();
    from_six[1].3 = soa(6);
    assert_eq!(
        feed(&mut other, &[message(ID, Some(RType::IXFR), &from_six)]).unwrap_err(),
        XfrError::Malformed("differences that do not start from our serial")
    );
}

#[test]
fn broken_and_hostile_answers_are_refused() {
    let soa = bare_soa(5);
    let a = vec![192, 0, 2, 1];
    let axfr = Some(RType::AXFR);
    let first = ("example.", RType::SOA, 60, soa.clone());
    let cases: Vec<(Vec<u8>, XfrError)> = vec![
        (
            message(ID, axfr, &[("www.example.", RType::A, 60, a.clone())]),
            XfrError::Malformed("the first record is not the zone's SOA"),
        ),
        (
            message(
                ID,
                axfr,
                &[first.clone(), ("www.example.org.", RType::A, 60, a.clone())],
            ),
            XfrError::OutOfZone("www.example.org.".to_string()),
        ),
        (
            message(
                ID,
                axfr,
                &[
                    first.clone(),
                    ("www.example.", RType::A, 60, a.clone()),
                    first.clone(),
                    ("late.example.", RType::A, 60, a.clone()),
                ],
            ),
            XfrError::Malformed("records after the last SOA"),
        ),
        (
            message(0x9999, axfr, std::slice::from_ref(&first)),
            XfrError::Malformed("not an answer to our request"),
        ),
        (
            message(ID, Some(RType::IXFR), std::slice::from_ref(&first)),
            XfrError::Malformed("the question is not ours"),
        ),
        (
            message(ID, None, std::slice::from_ref(&first)),
            XfrError::Malformed("no question in the first message"),
        ),
        (
            message(
                ID,
                axfr,
                &[first.clone(), ("sub.example.", RType::SOA, 60, soa.clone())],
            ),
            XfrError::Malformed("a SOA record below the apex"),
        ),
        (
            message(
                ID,
                axfr,
                &[first.clone(), ("x.example.", RType::OPT, 60, vec![])],
            ),
            XfrError::Malformed("a meta type in the answer"),
        ),
        (
            message(
                ID,
                axfr,
                &[
                    first.clone(),
                    ("www.example.", RType::A, 60, a.clone()),
                    ("example.", RType::SOA, 60, bare_soa(6)),
                ],
            ),
            XfrError::Malformed("a different SOA in the transfer"),
        ),
    ];
    for (i, (message, expected)) in cases.into_iter().enumerate() {
        let mut incoming = incoming(None, None, Limits::default());
        request(&mut incoming);
        assert_eq!(
            feed(&mut incoming, &[message]).unwrap_err(),
            expected,
            "case {i}"
        );
    }
    // The control: a zone of its SOA alone is a complete transfer.
    let mut control = incoming(None, None, Limits::default());
    request(&mut control);
    assert!(feed(
        &mut control,
        &[message(ID, axfr, &[first.clone(), first.clone()])]
    )
    .is_ok());

    // The rcode and TC.
    let mut refused = message(ID, axfr, &[]);
    refused[3] |= 5;
    let mut truncated = message(ID, axfr, std::slice::from_ref(&first));
    truncated[2] |= 0x02;
    for (message, expected) in [
        (refused, XfrError::Rcode(5)),
        (truncated, XfrError::Malformed("a truncated answer")),
    ] {
        let mut incoming = incoming(None, None, Limits::default());
        request(&mut incoming);
        assert_eq!(incoming.message(&message, NOW).unwrap_err(), expected);
    }
    // The limits, in records and in octets.
    let primary = zone(100);
    for limits in [
        Limits {
            records: 50,
            bytes: usize::MAX,
        },
        Limits {
            records: usize::MAX,
            bytes: 1000,
        },
    ] {
        let mut incoming = incoming(None, None, limits);
        let request = request(&mut incoming);
        let messages = answers(&primary, &request, false, MAX_MESSAGE);
        assert_eq!(
            feed(&mut incoming, &messages).unwrap_err(),
            XfrError::TooLarge
        );
    }
    // A message after the transfer ended.
    let mut ended = incoming(None, None, Limits::default());
    let request = request(&mut ended);
    let messages = answers(&primary, &request, false, MAX_MESSAGE);
    feed(&mut ended, &messages).unwrap();
    assert_eq!(
        ended.message(&messages[0], NOW).unwrap_err(),
        XfrError::Malformed("a message after the last")
    );
}
