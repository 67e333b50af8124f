use std::collections::BTreeMap;
use std::sync::Arc;

use tern_wire::parse::{CompressedName, RecordView};

use super::*;
use crate::tsig::{check_request, Algorithm, Key, RequestCheck, Session};

const ZONE: &str = "
@ 300 IN SOA ns hostmaster 7 3600 900 604800 300
@ 300 IN NS ns
@ 300 IN MX 10 mail
ns 300 IN A 192.0.2.53
mail 300 IN A 192.0.2.25
www 300 IN CNAME web
web 300 IN AAAA 2001:db8::80
sub 300 IN NS ns.sub
ns.sub 300 IN A 192.0.2.54
";

fn zone() -> Arc<Zone> {
    let mut text = ZONE.to_string();
    for i in 0..200 {
        text.push_str(&format!("host{i} 60 IN A 192.0.2.{}\n", i % 250));
        text.push_str(&format!("host{i} 60 IN TXT \"record {i}\"\n"));
    }
    Arc::new(tern_testkit::zone("example.", &text))
}

fn query(qtype: RType, authority_soa_serial: Option<u32>) -> Vec<u8> {
    let mut query = vec![0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    query.extend_from_slice(b"\x07Example\x00");
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&[0, 1]);
    if let Some(serial) = authority_soa_serial {
        query[9] = 1; // NSCOUNT
        query.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 22]);
        query.extend_from_slice(&[0, 0]); // mname, rname: the root
        for field in [serial, 1, 2, 3, 4] {
            query.extend_from_slice(&field.to_be_bytes());
        }
    }
    query
}

/// The RDATA of a received record with its names expanded.
fn expand(message: &[u8], record: &RecordView<'_>) -> Vec<u8> {
    let start = record.rdata_offset;
    let end = start + record.rdata.len();
    let Some(layout) = tern_wire::rdata::layout(record.rtype) else {
        return record.rdata.to_vec();
    };
    let mut out = Vec::new();
    let mut copied = start;
    tern_wire::rdata::walk::<()>(
        layout.fields,
        start,
        end,
        |pos| Ok(pos + 1 + usize::from(message[pos])),
        |pos| {
            out.extend_from_slice(&message[copied..pos]);
            let name = CompressedName::parse(message, pos).unwrap();
            // Lowercased: names compress onto the question, in the
            // client's case.
            out.extend_from_slice(&name.to_buf().as_bytes().to_ascii_lowercase());
            copied = pos + name.wire_len();
            Ok(copied)
        },
    )
    .unwrap();
    out.extend_from_slice(&message[copied..end]);
    out
}

/// A record as received: (owner, type, TTL, RDATA with names expanded).
type Received = (Vec<u8>, u16, u32, Vec<u8>);

/// Records -> count.
type Records = BTreeMap<Received, usize>;

/// Runs a transfer to the end: its messages, each checked for the
/// header, and the records they carried, in order.
fn run(transfer: &mut Outgoing<Arc<Zone>>, limit: usize) -> (Vec<Vec<u8>>, Vec<Received>) {
    let mut messages = Vec::new();
    let mut records = Vec::new();
    let mut buf = vec![0u8; MAX_MESSAGE];
    // A transfer of n records ends within n + 2 messages.
    for _ in 0..transfer.zone().record_count() + 2 {
        let Some(len) = transfer.next_message(&mut buf, limit).unwrap() else {
            break;
        };
        assert!(len <= limit);
        let message = buf[..len].to_vec();
        let view = MessageView::parse(&message).unwrap();
        let header = view.header();
        assert_eq!(
            (header.id(), header.qr(), header.aa(), header.rd()),
            (0xabcd, true, true, true)
        );
        assert_eq!(
            view.question().is_some(),
            messages.is_empty(),
            "question in the first only"
        );
        for record in view.records() {
            let record = record.unwrap();
            assert_eq!(record.section, Section::Answer);
            let owner = record.owner.to_buf().as_bytes().to_ascii_lowercase();
            records.push((owner, record.rtype.0, record.ttl, expand(&message, &record)));
        }
        messages.push(message);
    }
    assert!(transfer.is_done());
    assert_eq!(transfer.next_message(&mut buf, limit), Ok(None));
    (messages, records)
}

fn walk(zone: &Zone) -> Records {
    let mut cursor = RecordCursor::default();
    let mut all = Records::new();
    while let Some(r) = zone.next_record(&mut cursor) {
        *all.entry((
            r.owner.as_bytes().to_vec(),
            r.rtype.0,
            r.ttl,
            r.rdata.to_vec(),
        ))
        .or_default() += 1;
    }
    all
}

#[test]
fn axfr_sends_soa_every_record_once_and_soa_again() {
    let zone = zone();
    let query = query(RType::AXFR, None);
    let view = MessageView::parse(&query).unwrap();
    for target in [MESSAGE_TARGET, 1000, 1] {
        let mut transfer = Outgoing::full(Arc::clone(&zone), &view).with_target(target);
        let (messages, records) = run(&mut transfer, MAX_MESSAGE);
        let soa = zone.soa_record();
        let soa_key = (
            soa.owner.as_bytes().to_vec(),
            RType::SOA.0,
            soa.ttl,
            soa.rdata.to_vec(),
        );
        assert_eq!(records.first(), Some(&soa_key), "SOA first");
        assert_eq!(records.last(), Some(&soa_key), "SOA last");
        let mut body = Records::new();
        for record in &records[..records.len() - 1] {
            *body.entry(record.clone()).or_default() += 1;
        }
        assert_eq!(body, walk(&zone), "every record once (target {target})");
        assert_eq!(
            transfer.sent(),
            (messages.len() as u64, records.len() as u64)
        );
        if target == 1 {
            // One record per message.
            assert_eq!(messages.len(), records.len());
        } else if target == 1000 {
            assert!(messages.len() >= 8, "{} messages", messages.len());
            assert!(messages.iter().all(|m| m.len() < 1000 + 300));
        } else {
            assert_eq!(messages.len(), 1);
        }
    }
}

#[test]
fn names_are_compressed_within_each_message() {
    let zone = zone();
    let query = query(RType::AXFR, None);
    let view = MessageView::parse(&query).unwrap();
    let mut transfer = Outgoing::full(Arc::clone(&zone), &view);
    let (messages, records) = run(&mut transfer, MAX_MESSAGE);
    let uncompressed: usize = records
        .iter()
        .map(|(owner, _, _, rdata)| owner.len() + 10 + rdata.len())
        .sum();
    let sent: usize = messages.iter().map(|m| m.len()).sum();
    // Each owner once in full and then as a pointer: about three quarters
    // of the uncompressed size for this zone of short records.
    assert!(
        sent * 10 < uncompressed * 8,
        "{sent} octets sent for {uncompressed} uncompressed"
    );
}

#[test]
fn an_up_to_date_ixfr_gets_the_soa_alone() {
    let zone = zone();
    let query = query(RType::IXFR, Some(7));
    let view = MessageView::parse(&query).unwrap();
    assert_eq!(ixfr_serial(&view), Some(7));
    let mut transfer = Outgoing::soa_only(Arc::clone(&zone), &view);
    let (messages, records) = run(&mut transfer, MAX_MESSAGE);
    assert_eq!((messages.len(), records.len()), (1, 1));
    assert_eq!(records[0].1, RType::SOA.0);
    assert_eq!(
        ixfr_serial(&MessageView::parse(&self::query(RType::AXFR, None)).unwrap()),
        None
    );
}

#[test]
fn a_record_larger_than_a_message_ends_the_transfer_with_an_error() {
    let zone = zone();
    let query = query(RType::AXFR, None);
    let view = MessageView::parse(&query).unwrap();
    let mut transfer = Outgoing::full(Arc::clone(&zone), &view);
    let mut buf = vec![0u8; MAX_MESSAGE];
    // Room for the header and the question, not for the SOA.
    assert_eq!(
        transfer.next_message(&mut buf, 12 + 13 + 20),
        Err(TruncationError)
    );
}

#[test]
fn every_message_is_signed_and_verifies_in_order() {
    let zone = zone();
    let name = tern_wire::name::NameBuf::from_text(b"transfer-key.", None).unwrap();
    let key = Key::new(name.as_name(), Algorithm::HmacSha256, b"0123456789abcdef");
    let keys = [key.clone()];
    let now = 1_800_000_000;

    let mut client = Session::new(&key);
    let mut signed_query = query(RType::AXFR, None);
    let len = signed_query.len();
    signed_query.resize(len + client.record_len(), 0);
    client.sign(&mut signed_query, len, now).unwrap();

    let RequestCheck::Signed(mut server) = check_request(&keys, &signed_query, now) else {
        panic!("the query verifies");
    };
    let view = MessageView::parse(&signed_query).unwrap();
    let mut transfer = Outgoing::full(Arc::clone(&zone), &view).with_target(500);
    let mut buf = vec![0u8; MAX_MESSAGE];
    let limit = MAX_MESSAGE - server.record_len();
    let mut messages = 0;
    while let Some(len) = transfer.next_message(&mut buf, limit).unwrap() {
        let len = server.sign(&mut buf, len, now).unwrap();
        assert_eq!(
            client.verify(&buf[..len], now + 1),
            Ok(true),
            "message {messages}"
        );
        messages += 1;
    }
    assert!(messages > 5);
}
