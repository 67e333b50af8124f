//! Packet parsing: [`MessageView::parse`] and the [`MessageView::edns`]
//! walk, the first thing `respond` does with every query.
//!
//! Inputs: a plain query, a query with an OPT record, one with an OPT
//! record carrying a client cookie (what resolvers send), and a referral
//! answer (NS in authority, glue and OPT in additional), whose EDNS walk
//! has to step over every record.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_wire::build::MessageBuilder;
use tern_wire::edns::OPTION_COOKIE;
use tern_wire::name::NameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::{RClass, RType, Rcode};

/// A query for `name` A with an OPT record holding an 8-octet client cookie.
fn query_with_cookie(name: &[u8]) -> Vec<u8> {
    let name = NameBuf::from_text(name, None).expect("a valid name");
    let mut buf = [0u8; 512];
    let mut builder = MessageBuilder::new(&mut buf, 512).expect("room for a header");
    builder.set_id(0x1234);
    builder
        .push_question(name.as_name(), RType::A, RClass::IN)
        .expect("room");
    let mut option = Vec::new();
    option.extend_from_slice(&OPTION_COOKIE.to_be_bytes());
    option.extend_from_slice(&8u16.to_be_bytes());
    option.extend_from_slice(&[0x24, 0x64, 0xc4, 0xab, 0xcf, 0x10, 0xc9, 0x57]);
    builder
        .push_opt(tern_benches::QUERY_UDP_SIZE, Rcode::NOERROR, false, &option)
        .expect("room");
    let len = builder.finish();
    buf[..len].to_vec()
}

/// The answer to a referral query, from the benchmark zone.
fn referral_answer() -> Vec<u8> {
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(100));
    let catalog = Catalog::new([zone]);
    let query = tern_benches::query(b"www.sub1.bench.", RType::A, true);
    let mut out = vec![0; 65535];
    let Response::Send(len) = respond(
        &catalog,
        &query,
        Transport::Udp,
        &Options::default(),
        &mut out,
    ) else {
        panic!("the referral query is answered");
    };
    out.truncate(len);
    out
}

fn parse(c: &mut Criterion) {
    let inputs = [
        (
            "query",
            tern_benches::query(b"host1234.bench.", RType::A, false),
        ),
        (
            "query-edns",
            tern_benches::query(b"host1234.bench.", RType::A, true),
        ),
        ("query-edns-cookie", query_with_cookie(b"host1234.bench.")),
        ("referral-answer", referral_answer()),
    ];
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(1));
    for (label, message) in &inputs {
        group.bench_function(*label, |b| {
            b.iter(|| {
                let view = MessageView::parse(black_box(message)).expect("parses");
                black_box(view.edns().expect("valid EDNS"))
            })
        });
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    parse(&mut criterion);
    criterion.final_summary();
}
