//! Fuzz target body for incoming transfers and TSIG parsing. Compiled by
//! every build (the rustls `msgs::fuzzing` pattern);
//! `crates/fuzz/fuzz_targets/xfr_incoming.rs` calls it and the unit tests
//! run it over the committed seed corpus. Not a stable API.
//!
//! The input is `[selector, (length u16, message)...]`: the selector's low
//! bit asks for an IXFR from a small zone of serial 7 (else an AXFR with
//! nothing held); each message gets our request's ID written over its
//! first two octets, so that the fuzzer reaches the record checks rather
//! than the ID check. At most [`MAX_MESSAGES`] are fed. Then the whole
//! input is read as one message by `TsigRecord::find` and `check_request`.
//!
//! What must hold, whatever the bytes: no panic; a transfer that completes
//! gives a zone whose SOA is at the origin and whose every record is at or
//! below it, with no more records than the limit.

use std::sync::Arc;

use tern_authority::{RecordCursor, Zone, ZoneBuilder};
use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType};

use crate::incoming::{Incoming, Limits, Outcome};
use crate::tsig::{check_request, Algorithm, Key, TsigRecord};

/// The most messages one input feeds.
pub const MAX_MESSAGES: usize = 64;

/// The request's ID.
const ID: u16 = 0x4242;

/// The clock, in seconds since the epoch.
const NOW: u64 = 1_800_000_000;

/// The records one transfer may bring here: small, so that inputs that
/// repeat records hit the limit.
const RECORDS: usize = 2_000;

fn origin() -> NameBuf {
    NameBuf::from_text(b"example.", None).expect("a valid name")
}

/// `example.` with a SOA of serial 7 and one address.
fn current() -> Arc<Zone> {
    let origin = origin();
    let mut builder = ZoneBuilder::new(origin.as_name());
    let mut soa = b"\x00\x00".to_vec();
    for field in [7u32, 3600, 900, 604_800, 300] {
        soa.extend_from_slice(&field.to_be_bytes());
    }
    builder
        .insert(origin.as_name(), RType::SOA, RClass::IN, 300, &soa)
        .expect("a valid SOA");
    let www = NameBuf::from_text(b"www.example.", None).expect("a valid name");
    builder
        .insert(www.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 1])
        .expect("a valid record");
    Arc::new(builder.finish().expect("a valid zone"))
}

/// The fuzz target body; whether the transfer completed (for the seed
/// test: the corpus must hold real transfers).
pub fn incoming(data: &[u8]) -> bool {
    let Some((&selector, mut rest)) = data.split_first() else {
        return false;
    };
    let origin = origin();
    let held = (selector & 1 != 0).then(current);
    let limits = Limits {
        records: RECORDS,
        bytes: 1 << 20,
    };
    let mut transfer = Incoming::new(origin.as_name(), held, true, ID, None, limits);
    let mut request = [0u8; 512];
    transfer
        .request(&mut request, NOW)
        .expect("the request fits 512 octets");
    let mut completed = false;
    for _ in 0..MAX_MESSAGES {
        let Some(prefix) = rest.get(..2) else { break };
        let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        let body = rest.get(2..2 + len).unwrap_or(&rest[2..]);
        rest = &rest[2 + body.len()..];
        let mut message = body.to_vec();
        if let Some(id) = message.get_mut(..2) {
            id.copy_from_slice(&ID.to_be_bytes());
        }
        match transfer.message(&message, NOW) {
            Ok(None) => continue,
            Ok(Some(Outcome::Zone { zone, .. })) => {
                check_zone(&zone, &origin);
                completed = true;
                break;
            }
            Ok(Some(Outcome::UpToDate { .. })) => {
                completed = true;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = TsigRecord::find(data);
    let name = NameBuf::from_text(b"key.", None).expect("a valid name");
    let keys = [Key::new(name.as_name(), Algorithm::HmacSha256, b"secret")];
    let _ = check_request(&keys, data, NOW);
    completed
}

fn check_zone(zone: &Zone, origin: &NameBuf) {
    let soa = zone.soa_record();
    assert_eq!(soa.rtype, RType::SOA);
    assert!(
        soa.owner.eq_ignore_case(origin.as_name()),
        "the SOA at the origin"
    );
    let mut cursor = RecordCursor::default();
    let mut count = 0;
    while let Some(record) = zone.next_record(&mut cursor) {
        assert!(
            record.owner.ends_with(origin.as_name()),
            "records inside the zone"
        );
        count += 1;
    }
    // The held zone's records may remain after differences.
    assert!(count <= RECORDS + 2, "{count} records");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run_and_some_complete() {
        let seeds = tern_testkit::fuzz_seeds("xfr_incoming");
        assert!(seeds.len() >= 4, "too few seeds");
        let completed = seeds.iter().filter(|seed| incoming(seed)).count();
        // All but the REFUSED one.
        assert_eq!(completed, seeds.len() - 1, "seeds that complete a transfer");
    }

    #[test]
    fn short_and_empty_inputs() {
        incoming(&[]);
        incoming(&[1]);
        incoming(&[0, 0]);
        incoming(&[0, 0, 12, 0]);
        incoming(&[1, 0xff, 0xff, 1, 2, 3]);
    }
}
