//! A small zone's heap: what one of a million hosted zones costs (the
//! zones of `scripts/gen-zones.py`: SOA, two NS, A and AAAA at the apex,
//! `www` a CNAME, an MX). The zone's sorted lists (the NSEC owners, none
//! here, and the glue target names inside the zone, none here: its NS and
//! MX name names outside it) are a shared slice each when short: an empty
//! one allocates nothing, one of a few entries is one block. 11 blocks and
//! 644 octets a zone; 12 and 668 with the list of glue owners the index
//! replaced (the apex, one entry, one block), which
//! [`MAX_BLOCKS_PER_ZONE`] fails. Each list in parts (`Arc<Parts>`: a
//! list of first keys, a list of parts, each part an `Arc<Vec>`) held 18
//! blocks and 852 octets; the `Arc<[u32]>`s, the empty one allocated, 13
//! blocks and 684 octets: both fail [`MAX_BLOCKS_PER_ZONE`], the first
//! [`MAX_BYTES_PER_ZONE`] too.
//!
//! Measured by dhat's heap statistics (requested bytes, without malloc's
//! headers); one test in its own binary, with its own `main`, as dhat's
//! profiler is global.

use tern_authority::ZoneBuilder;
use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Zones built and kept alive.
const ZONES: usize = 2_000;

/// The most heap blocks a small zone holds.
const MAX_BLOCKS_PER_ZONE: f64 = 11.0;

/// The most heap octets a small zone holds.
const MAX_BYTES_PER_ZONE: f64 = 700.0;

fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut soa = name("ns1.example.net.").as_bytes().to_vec();
    soa.extend_from_slice(name("hostmaster.example.").as_bytes());
    for value in [1u32, 3600, 900, 604_800, 300] {
        soa.extend_from_slice(&value.to_be_bytes());
    }
    let ns1 = name("ns1.example.net.");
    let ns2 = name("ns2.example.net.");
    let mut mx = 10u16.to_be_bytes().to_vec();
    mx.extend_from_slice(name("mail.example.net.").as_bytes());
    let before = dhat::HeapStats::get();
    let mut zones = Vec::with_capacity(ZONES);
    for index in 0..ZONES {
        let origin = name(&format!("z{index}.example."));
        let www = name(&format!("www.z{index}.example."));
        let mut builder = ZoneBuilder::new(origin.as_name());
        let mut insert = |owner: &NameBuf, rtype: RType, rdata: &[u8]| {
            builder
                .insert(owner.as_name(), rtype, RClass::IN, 3600, rdata)
                .unwrap();
        };
        let a = (index % 250 + 1) as u8;
        insert(&origin, RType::SOA, &soa);
        insert(&origin, RType::NS, ns1.as_bytes());
        insert(&origin, RType::NS, ns2.as_bytes());
        insert(&origin, RType::A, &[192, 0, 2, a]);
        let mut aaaa = [0u8; 16];
        aaaa[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        aaaa[15] = a;
        insert(&origin, RType::AAAA, &aaaa);
        insert(&www, RType::CNAME, origin.as_bytes());
        insert(&origin, RType::MX, &mx);
        zones.push(builder.finish().unwrap());
    }
    let after = dhat::HeapStats::get();
    // The Vec of zones itself: one block of a pointer a zone.
    let blocks = (after.curr_blocks - before.curr_blocks - 1) as f64 / ZONES as f64;
    let bytes = (after.curr_bytes - before.curr_bytes - ZONES * core::mem::size_of_val(&zones[0]))
        as f64
        / ZONES as f64;
    println!("a small zone holds {blocks:.2} heap blocks, {bytes:.1} octets");
    assert!(
        blocks <= MAX_BLOCKS_PER_ZONE,
        "a small zone holds {blocks:.2} heap blocks, more than {MAX_BLOCKS_PER_ZONE}"
    );
    assert!(
        bytes <= MAX_BYTES_PER_ZONE,
        "a small zone holds {bytes:.1} heap octets, more than {MAX_BYTES_PER_ZONE}"
    );
    drop(zones);
    println!("a_small_zone_costs_what_it_did: 1 passed, 0 failed");
}
