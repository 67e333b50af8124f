use std::sync::Arc;

use tern_wire::name::NameBuf;
use tern_wire::parse::MessageView;

use super::*;
use crate::axfr::{Outgoing, MAX_MESSAGE};
use crate::incoming::{Incoming, Limits, Outcome};

/// `example.` at `serial` with the given extra lines.
fn version(serial: u32, lines: &str) -> Arc<Zone> {
    let text = format!(
        "@ 300 IN SOA ns hostmaster {serial} 3600 900 604800 300\n@ 300 IN NS ns\nns 300 IN A 192.0.2.53\n{lines}"
    );
    Arc::new(tern_testkit::zone("example.", &text))
}

fn all(zone: &Zone) -> BTreeSet<Record> {
    let mut set = records_but_soa(zone);
    let soa = zone.soa_record();
    set.insert(Record {
        owner: soa.owner.as_bytes().to_vec(),
        rtype: RType::SOA,
        ttl: soa.ttl,
        rdata: soa.rdata.to_vec(),
    });
    set
}

fn v7() -> Arc<Zone> {
    version(7, "www 300 IN A 192.0.2.80\nold 60 IN TXT \"old\"\n")
}

fn v8() -> Arc<Zone> {
    version(
        8,
        "www 300 IN A 192.0.2.81\nold 60 IN TXT \"old\"\nbrief 60 IN TXT \"brief\"\n",
    )
}

fn v9() -> Arc<Zone> {
    version(9, "www 300 IN A 192.0.2.81\nnew 120 IN TXT \"new\"\n")
}

#[test]
fn a_difference_lists_what_changed_and_a_ttl_change_is_both() {
    let d = Difference::between(&v7(), &v8());
    assert_eq!((d.from_serial(), d.to_serial()), (7, 8));
    let owners = |list: &[Record]| -> Vec<String> {
        list.iter()
            .map(|r| format!("{} {}", Name::from_wire(&r.owner).unwrap(), r.rtype.0))
            .collect()
    };
    assert_eq!(owners(&d.deleted), ["www.example. 1"]);
    // In wire order of the owners (length octet first).
    assert_eq!(owners(&d.added), ["www.example. 1", "brief.example. 16"]);
    let ttl = Difference::between(
        &v9(),
        &version(10, "www 60 IN A 192.0.2.81\nnew 120 IN TXT \"new\"\n"),
    );
    assert_eq!((ttl.deleted.len(), ttl.added.len()), (1, 1));
    assert_eq!((ttl.deleted[0].ttl, ttl.added[0].ttl), (300, 60));
    assert!(Difference::between(
        &v7(),
        &version(8, "www 300 IN A 192.0.2.80\nold 60 IN TXT \"old\"\n")
    )
    .is_empty());
}

#[test]
fn the_chain_from_a_serial_is_condensed() {
    let mut journal = Journal::new();
    journal.push(Difference::between(&v7(), &v8()), usize::MAX);
    journal.push(Difference::between(&v8(), &v9()), usize::MAX);
    assert!(journal.ends_at(9));
    // 7 -> 9 in one: "brief" came and went, so it is in neither list.
    let condensed = journal.since(7).unwrap();
    assert_eq!(condensed, Difference::between(&v7(), &v9()));
    assert_eq!(journal.since(8).unwrap(), Difference::between(&v8(), &v9()));
    assert_eq!(journal.since(6), None);
    assert_eq!(journal.since(9), None, "current: no difference to send");
}

#[test]
fn the_bound_drops_the_oldest_and_a_gap_starts_afresh() {
    let first = Difference::between(&v7(), &v8());
    let second = Difference::between(&v8(), &v9());
    let mut journal = Journal::new();
    journal.push(first.clone(), usize::MAX);
    journal.push(second.clone(), second.encoded_len());
    assert_eq!(journal.differences().count(), 1);
    assert_eq!(journal.bytes(), second.encoded_len());
    assert_eq!(journal.since(7), None);
    assert!(journal.since(8).is_some());

    // A difference that does not start at 9: the chain restarts.
    let mut journal = Journal::new();
    journal.push(first.clone(), usize::MAX);
    journal.push(Difference::between(&v9(), &version(10, "")), usize::MAX);
    assert_eq!(journal.differences().count(), 1);
    assert_eq!(journal.since(7), None);
}

#[test]
fn a_journal_reads_back_and_garbage_does_not() {
    let mut journal = Journal::new();
    journal.push(Difference::between(&v7(), &v8()), usize::MAX);
    journal.push(Difference::between(&v8(), &v9()), usize::MAX);
    let bytes = journal.encode();
    assert_eq!(Journal::decode(&bytes), Some(journal.clone()));
    for cut in [0, 7, 8, 12, bytes.len() / 2, bytes.len() - 1] {
        assert_eq!(Journal::decode(&bytes[..cut]), None, "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(Journal::decode(&longer), None);
    let mut wrong_magic = bytes;
    wrong_magic[0] ^= 1;
    assert_eq!(Journal::decode(&wrong_magic), None);
    assert_eq!(
        Journal::decode(&Journal::new().encode()),
        Some(Journal::new())
    );
}

#[test]
fn an_incremental_answer_brings_the_held_version_to_the_new_one() {
    let mut journal = Journal::new();
    journal.push(Difference::between(&v7(), &v8()), usize::MAX);
    journal.push(Difference::between(&v8(), &v9()), usize::MAX);
    let origin = NameBuf::from_text(b"example.", None).unwrap();
    for target in [MESSAGE_TARGET_SMALL, crate::axfr::MESSAGE_TARGET] {
        let mut incoming = Incoming::new(
            origin.as_name(),
            Some(v7()),
            true,
            7,
            None,
            Limits::default(),
        );
        let mut request = vec![0u8; 512];
        let len = incoming.request(&mut request, 0).unwrap();
        let view = MessageView::parse(&request[..len]).unwrap();
        let mut outgoing =
            Outgoing::incremental(v9(), &view, journal.since(7).unwrap()).with_target(target);
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut outcome = None;
        while let Some(len) = outgoing.next_message(&mut buf, MAX_MESSAGE).unwrap() {
            assert!(outcome.is_none(), "complete only at the last message");
            outcome = incoming.message(&buf[..len], 0).unwrap();
        }
        let Some(Outcome::Zone { zone, incremental }) = outcome else {
            panic!("a zone");
        };
        assert!(incremental, "target {target}");
        assert_eq!(all(&zone), all(&v9()), "target {target}");
    }
}

/// One record per message.
const MESSAGE_TARGET_SMALL: usize = 1;

/// A history of `count` differences, serials 1 to `count + 1`.
fn history(count: u32) -> Journal {
    let mut journal = Journal::new();
    for serial in 1..=count {
        let old = version(serial, &format!("a{serial} 60 IN TXT \"{serial}\"\n"));
        let new = version(
            serial + 1,
            &format!("a{} 60 IN TXT \"{}\"\n", serial + 1, serial + 1),
        );
        assert!(journal.push(Difference::between(&old, &new), usize::MAX));
    }
    journal
}

#[test]
fn history_file_appends_and_reads_back() {
    let journal = history(3);
    let mut bytes = history(2).encode_history();
    let appended = bytes.len();
    history_frame(&journal.differences().last().unwrap(), &mut bytes);
    assert_eq!(
        bytes,
        journal.encode_history(),
        "an appended frame is the file"
    );
    assert_eq!(bytes.len(), journal.history_len());
    assert_eq!(
        bytes.len() - appended,
        FRAME_OVERHEAD + journal.differences().last().unwrap().encoded_len()
    );
    assert_eq!(Journal::decode_history(&bytes), Some(journal.clone()));
    // The older one-piece form still reads.
    assert_eq!(Journal::decode_history(&journal.encode()), Some(journal));
    assert_eq!(Journal::decode_history(b"not a history"), None);
}

#[test]
fn history_file_with_a_torn_tail_reads_its_good_prefix() {
    let whole = history(3).encode_history();
    let two = history(2);
    let two_len = two.encode_history().len();
    // Every cut inside the last frame: the first two differences, never a
    // panic; the chain they make ends at serial 3, not 4.
    for cut in two_len..whole.len() {
        let read = Journal::decode_history(&whole[..cut]).unwrap();
        assert_eq!(read, two, "cut at {cut}");
        assert!(read.ends_at(3) && !read.ends_at(4));
    }
    // A tail of zeros (a file extended but not written) or of noise.
    for tail in [[0u8; 40], [0xff; 40]] {
        let mut bytes = two.encode_history();
        bytes.extend_from_slice(&tail);
        assert_eq!(Journal::decode_history(&bytes).unwrap(), two);
    }
    // A damaged octet in the last frame's payload: its check fails.
    let mut damaged = whole.clone();
    let at = two_len + 10;
    damaged[at] ^= 1;
    assert_eq!(Journal::decode_history(&damaged).unwrap(), two);
    // Every cut of the whole file reads without a panic, as a prefix.
    for cut in 0..whole.len() {
        if let Some(read) = Journal::decode_history(&whole[..cut]) {
            assert!(read.differences().count() <= 3);
        }
    }
}

#[test]
fn history_file_stops_at_a_broken_chain() {
    let journal = history(3);
    let mut bytes = journal.encode_history();
    // A frame that does not start at serial 4.
    history_frame(&history(1).differences().next().unwrap(), &mut bytes);
    assert_eq!(Journal::decode_history(&bytes), Some(journal));
}

#[test]
fn a_history_read_back_is_trimmed_to_its_bound() {
    let mut journal = history(4);
    let last = journal.differences().last().unwrap().encoded_len();
    journal.trim(last);
    assert_eq!(journal.differences().count(), 1);
    assert!(journal.ends_at(5));
}
