//! # tern-benches: inputs shared by the criterion benchmarks
//!
//! The benchmarks themselves are the `[[bench]]` targets next to this
//! crate's manifest (`parse.rs`, `names.rs`, `lookup.rs`, `encode.rs`,
//! `cache_hit.rs`, `zone_load.rs`); this library builds what they measure
//! against, deterministically, so every run and every machine sees the same
//! bytes:
//!
//! - [`mixed_zone_text`]: the zone `bench.` of `scripts/gen-bench-zone.py`
//!   (hosts with A and some AAAA, CNAME aliases, delegations with glue, a
//!   wildcard), the zone that `scripts/bench-peers.sh` serves;
//! - [`big_zone_text`]: the zone `big.` of A records, for the zone-load
//!   bench;
//! - [`load_zone`]: text to an immutable [`Zone`] the way `tern serve` does
//!   it (scan with tern-zone, then [`ZoneBuilder`]);
//! - [`query`]: one query message, as a client sends it.
//! - [`versions`]: the zones, patches and UPDATEs of the benches of a
//!   zone's new version (`patch.rs`, `update.rs`).
//!
//! ```
//! use tern_authority::{respond, summary, Catalog, Options, Response, Transport};
//! use tern_wire::types::{RType, Rcode};
//!
//! let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(100));
//! let catalog = Catalog::new([zone]);
//! let query = tern_benches::query(b"nx1.bench.", RType::A, false);
//! let mut out = vec![0; 65535];
//! let Response::Send(len) = respond(&catalog, &query, Transport::Udp, &Options::default(), &mut out)
//! else { panic!("a query for a served zone is answered") };
//! assert_eq!(summary(&out[..len]).unwrap().0, Rcode::NXDOMAIN);
//! ```

#![forbid(unsafe_code)]

use std::fmt::Write;
use std::path::Path;

use tern_authority::{Zone, ZoneBuilder};
use tern_wire::build::MessageBuilder;
use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType, Rcode};

pub mod versions;

/// The UDP size our EDNS queries announce (the DNS flag day 2020 value).
pub const QUERY_UDP_SIZE: u16 = 1232;

/// Room for any query [`query`] writes: a header, a 255-octet name, type,
/// class and an OPT record.
const QUERY_BUFFER: usize = 512;

//----------- Zone text ------------------------------------------------------

/// The address of host `i`: 10.x.y.z from the low 24 bits.
fn host_address(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// The zone `bench.` with `names` hosts, as `scripts/gen-bench-zone.py
/// mixed` writes it: `host{i}` A (and AAAA for every 4th), `alias{i}`
/// CNAME `host{i}` for `names / 10` aliases, `sub{i}` delegated to
/// `ns1.sub{i}` with glue for `names / 20` delegations, and `*.wild` A.
pub fn mixed_zone_text(names: usize) -> String {
    let mut text = String::with_capacity(names * 40);
    text.push_str("$ORIGIN bench.\n$TTL 3600\n");
    text.push_str("@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n");
    text.push_str("@ IN NS ns1\n@ IN NS ns2\n");
    text.push_str("ns1 IN A 192.0.2.1\nns2 IN A 192.0.2.2\n");
    text.push_str("*.wild IN A 192.0.2.100\n");
    for i in 0..names {
        let _ = writeln!(text, "host{i} IN A {}", host_address(i));
        if i % 4 == 0 {
            // Two groups past 65,535 (HOSTS of lookup_ir above that).
            let _ = writeln!(
                text,
                "host{i} IN AAAA 2001:db8::{}{:x}",
                if i > 0xffff {
                    format!("{:x}:", i >> 16)
                } else {
                    String::new()
                },
                i & 0xffff
            );
        }
    }
    for i in 0..names / 10 {
        let _ = writeln!(text, "alias{i} IN CNAME host{i}");
    }
    for i in 0..names / 20 {
        let _ = writeln!(text, "sub{i} IN NS ns1.sub{i}");
        let _ = writeln!(
            text,
            "ns1.sub{i} IN A 198.51.{}.{}",
            (i >> 8) & 255,
            i & 255
        );
    }
    text
}

/// The zone `big.`: SOA, NS, the name server's A and `records` A records
/// `h0` .. `h{records-1}` (as `scripts/gen-bench-zone.py big` writes it).
/// The zone holds `records + 3` records.
pub fn big_zone_text(records: usize) -> String {
    let mut text = String::with_capacity(records * 28);
    text.push_str("$ORIGIN big.\n$TTL 3600\n");
    text.push_str("@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n");
    text.push_str("@ IN NS ns1\nns1 IN A 192.0.2.1\n");
    for i in 0..records {
        let _ = writeln!(text, "h{i} IN A {}", host_address(i));
    }
    text
}

//----------- Loading --------------------------------------------------------

/// Scans zone text with tern-zone (no `$INCLUDE`).
///
/// # Panics
///
/// If the text does not scan: the generated zones always do.
pub fn scan_zone(origin: &[u8], text: &str) -> tern_zone::ParsedZone {
    let origin = NameBuf::from_text(origin, None).expect("the origin is a valid name");
    tern_zone::parse_bytes(
        text.as_bytes(),
        Path::new("bench.zone"),
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .expect("the generated zone scans")
}

/// Builds the immutable zone from scanned records, as `tern serve` does.
///
/// # Panics
///
/// If a record is refused or the zone does not build: the generated zones
/// always do.
pub fn build_zone(origin: &[u8], parsed: &tern_zone::ParsedZone) -> Zone {
    let origin = NameBuf::from_text(origin, None).expect("the origin is a valid name");
    let mut builder = ZoneBuilder::new(origin.as_name());
    for record in &parsed.records {
        builder
            .insert(
                record.owner.as_name(),
                record.rtype,
                record.class,
                record.ttl,
                &record.rdata,
            )
            .expect("the generated records are accepted");
    }
    builder.finish().expect("the generated zone builds")
}

/// Scans and builds a zone from text.
pub fn load_zone(origin: &[u8], text: &str) -> Zone {
    build_zone(origin, &scan_zone(origin, text))
}

//----------- Queries --------------------------------------------------------

/// A query for `name` (presentation format, absolute) and `rtype`, class
/// IN, ID 0x1234, RD set, with an OPT record announcing
/// [`QUERY_UDP_SIZE`] if `edns` is set.
///
/// # Panics
///
/// If `name` is not a valid absolute name.
pub fn query(name: &[u8], rtype: RType, edns: bool) -> Vec<u8> {
    let name = NameBuf::from_text(name, None).expect("a valid query name");
    let mut buf = [0u8; QUERY_BUFFER];
    let mut builder = MessageBuilder::new(&mut buf, QUERY_BUFFER).expect("room for a header");
    builder.set_id(0x1234);
    builder.set_rd(true);
    builder
        .push_question(name.as_name(), rtype, RClass::IN)
        .expect("room for one question");
    if edns {
        builder
            .push_opt(QUERY_UDP_SIZE, Rcode::NOERROR, false, &[])
            .expect("room for an OPT record");
    }
    let len = builder.finish();
    buf[..len].to_vec()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_authority::{respond, summary, Catalog, Options, Response, Transport};
    use tern_wire::parse::MessageView;
    use tern_wire::types::{RType, Rcode};

    use super::*;

    fn answer(catalog: &Catalog, name: &[u8], rtype: RType) -> (Rcode, [u16; 4]) {
        let query = query(name, rtype, true);
        let mut out = vec![0; 65535];
        let Response::Send(len) = respond(
            catalog,
            &query,
            Transport::Udp,
            &Options::default(),
            &mut out,
        ) else {
            panic!("no answer for {}", String::from_utf8_lossy(name));
        };
        let (rcode, tc) = summary(&out[..len]).expect("a valid answer");
        assert!(!tc);
        let view = MessageView::parse(&out[..len]).expect("the answer parses");
        (rcode, view.header().counts())
    }

    #[test]
    fn mixed_zone_answers_every_query_kind_of_the_mix() {
        let zone = load_zone(b"bench.", &mixed_zone_text(100));
        // 100 hosts (+25 AAAA), 10 aliases, 5 delegations with glue,
        // SOA, 2 NS, 2 A, the wildcard.
        assert_eq!(zone.record_count(), 100 + 25 + 10 + 10 + 6);
        let catalog = Catalog::new([zone]);
        // exact hit: one A, OPT in additional
        assert_eq!(
            answer(&catalog, b"host42.bench.", RType::A),
            (Rcode::NOERROR, [1, 1, 0, 1])
        );
        // mixed case
        assert_eq!(
            answer(&catalog, b"HoSt42.BENCH.", RType::A),
            (Rcode::NOERROR, [1, 1, 0, 1])
        );
        // NODATA: SOA in authority
        assert_eq!(
            answer(&catalog, b"host1.bench.", RType::AAAA),
            (Rcode::NOERROR, [1, 0, 1, 1])
        );
        assert_eq!(
            answer(&catalog, b"nx7.bench.", RType::A),
            (Rcode::NXDOMAIN, [1, 0, 1, 1])
        );
        assert_eq!(
            answer(&catalog, b"w9.wild.bench.", RType::A),
            (Rcode::NOERROR, [1, 1, 0, 1])
        );
        // CNAME and the target's A
        assert_eq!(
            answer(&catalog, b"alias3.bench.", RType::A),
            (Rcode::NOERROR, [1, 2, 0, 1])
        );
        // referral: NS in authority, glue and OPT in additional
        assert_eq!(
            answer(&catalog, b"www.sub2.bench.", RType::A),
            (Rcode::NOERROR, [1, 0, 1, 2])
        );
    }

    #[test]
    fn big_zone_holds_the_records_asked_for() {
        let parsed = scan_zone(b"big.", &big_zone_text(1000));
        assert_eq!(parsed.records.len(), 1003);
        assert_eq!(parsed.records[1002].owner.to_string(), "h999.big.");
        assert_eq!(parsed.records[1002].rdata, [10, 0, 3, 231]);
        assert_eq!(build_zone(b"big.", &parsed).record_count(), 1003);
    }

    #[test]
    fn query_is_a_parseable_message_with_optional_edns() {
        let plain = query(b"www.example.", RType::AAAA, false);
        assert_eq!(&plain[..4], &[0x12, 0x34, 0x01, 0x00]);
        let view = MessageView::parse(&plain).unwrap();
        assert_eq!(view.question().unwrap().qtype, RType::AAAA);
        assert!(view.edns().unwrap().is_none());
        let with_edns = query(b"www.example.", RType::A, true);
        let edns = MessageView::parse(&with_edns)
            .unwrap()
            .edns()
            .unwrap()
            .unwrap();
        assert_eq!(edns.udp_size, QUERY_UDP_SIZE);
    }
}
