//! The heap an IXFR history takes, measured by dhat (one test in this
//! binary: dhat's profiler is global). A zone's history is bounded by
//! `transfer.ixfr-history` in encoded octets ([`Journal::bytes`]); what it
//! holds in memory must stay close to that bound, in octets and in
//! allocations (each costs the allocator's own overhead besides), or a
//! server taking updates grows well past its zone's size (issue 25).

use tern_wire::types::RType;
use tern_xfr::journal::{Difference, Journal, Record};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The bound of the history, as `transfer.ixfr-history: 1M`.
const BOUND: usize = 1 << 20;

/// A name in wire form: `labels` then `example.`.
fn owner(labels: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for label in labels.iter().copied().chain(["example"]) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// The SOA RDATA of `example.` at `serial`.
fn soa(serial: u32) -> (u32, Vec<u8>) {
    let mut rdata = owner(&["ns1"]);
    rdata.extend_from_slice(&owner(&["hostmaster"]));
    for field in [serial, 3600, 900, 604_800, 300] {
        rdata.extend_from_slice(&field.to_be_bytes());
    }
    (3600, rdata)
}

/// What one dynamic update of an ACME client makes: the challenge TXT of
/// host `i` replaced (one record deleted, one added).
fn update(serial: u32) -> Difference {
    let host = format!("host{}", serial % 1000);
    let txt = |token: u32| {
        let text = format!("{token:043}");
        let mut rdata = vec![text.len() as u8];
        rdata.extend_from_slice(text.as_bytes());
        rdata
    };
    let record = |token| Record {
        owner: owner(&["_acme-challenge", &host]),
        rtype: RType::TXT,
        ttl: 60,
        rdata: txt(token),
    };
    Difference {
        from_soa: soa(serial),
        to_soa: soa(serial + 1),
        deleted: vec![record(serial)],
        added: vec![record(serial + 1)],
    }
}

#[test]
fn the_history_in_memory_costs_about_its_encoded_size() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut journal = Journal::new();
    let start = dhat::HeapStats::get();
    // Enough updates to fill the bound and trim from then on.
    let updates = 2 * BOUND as u32 / update(1).encoded_len() as u32;
    for serial in 1..=updates {
        assert!(journal.push(update(serial), BOUND));
    }
    let held = dhat::HeapStats::get();
    let bytes = held.curr_bytes - start.curr_bytes;
    let blocks = held.curr_blocks - start.curr_blocks;
    let kept = journal.differences().count();
    eprintln!(
        "{kept} differences, {} encoded octets: {bytes} octets in {blocks} blocks on the heap \
         ({:.2} per encoded octet, {:.2} blocks per difference)",
        journal.bytes(),
        bytes as f64 / journal.bytes() as f64,
        blocks as f64 / kept as f64,
    );
    assert!(journal.bytes() <= BOUND && journal.bytes() > BOUND - 1000);
    // The history still answers: the condensed chain from its oldest
    // serial, and nothing from before it.
    let oldest = updates - kept as u32 + 1;
    let chain = journal.since(oldest).expect("IXFR from the oldest serial");
    assert_eq!(
        (chain.from_serial(), chain.to_serial()),
        (oldest, updates + 1)
    );
    assert!(journal.since(oldest - 1).is_none());
    assert!(
        bytes * 4 <= journal.bytes() * 5,
        "{bytes} octets held for {} encoded",
        journal.bytes()
    );
    assert!(
        blocks <= kept + 16,
        "{blocks} blocks for {kept} differences"
    );
}
