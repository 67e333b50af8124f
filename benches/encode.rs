//! Answer encoding: [`MessageBuilder`] writing a typical positive answer
//! with compression: the question copied as received, two A records, the
//! zone's two NS records in authority, their A and AAAA glue in additional
//! and an OPT record: 10 names, each after the question compressed
//! against the ones before it.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use tern_wire::build::MessageBuilder;
use tern_wire::name::NameBuf;
use tern_wire::parse::{MessageView, Section};
use tern_wire::types::{RClass, RType, Rcode};

/// The size limit of the answer (an EDNS client's 1232 octets).
const LIMIT: usize = 1232;

fn name(text: &[u8]) -> NameBuf {
    NameBuf::from_text(text, None).expect("a valid name")
}

fn encode(c: &mut Criterion) {
    let query = tern_benches::query(b"WwW.Example.COM.", RType::A, true);
    let question = MessageView::parse(&query)
        .expect("parses")
        .question()
        .expect("has a question")
        .bytes;
    let www = name(b"www.example.com.");
    let apex = name(b"example.com.");
    let ns1 = name(b"ns1.example.com.");
    let ns2 = name(b"ns2.example.com.");
    let mut buf = vec![0u8; LIMIT];

    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("answer-ns-glue-opt", |b| {
        b.iter(|| {
            let mut builder = MessageBuilder::new(&mut buf, LIMIT).expect("room");
            builder.set_id(0x1234);
            builder.set_qr(true);
            builder.set_aa(true);
            builder.set_rd(true);
            builder
                .push_question_bytes(black_box(question))
                .expect("room");
            builder.set_section(Section::Answer);
            for address in [[192, 0, 2, 1], [192, 0, 2, 2]] {
                builder
                    .push_record(www.as_name(), RType::A, RClass::IN, 300, &address)
                    .expect("room");
            }
            builder.set_section(Section::Authority);
            for target in [&ns1, &ns2] {
                builder
                    .push_record(
                        apex.as_name(),
                        RType::NS,
                        RClass::IN,
                        3600,
                        target.as_bytes(),
                    )
                    .expect("room");
            }
            builder.set_section(Section::Additional);
            for (host, address) in [(&ns1, [192, 0, 2, 53]), (&ns2, [198, 51, 100, 53])] {
                builder
                    .push_record(host.as_name(), RType::A, RClass::IN, 3600, &address)
                    .expect("room");
            }
            let v6 = [
                0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53,
            ];
            builder
                .push_record(ns1.as_name(), RType::AAAA, RClass::IN, 3600, &v6)
                .expect("room");
            builder
                .push_opt(1232, Rcode::NOERROR, false, &[])
                .expect("room");
            black_box(builder.finish())
        })
    });
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    encode(&mut criterion);
    criterion.final_summary();
}
