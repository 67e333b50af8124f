//! Lookup: [`tern_authority::respond`] on the benchmark zone of 10 000
//! hosts (about 12 000 names), one query at a time into a reused buffer:
//! parse, find the zone, walk the tree, encode. The sans-I/O cost of an
//! authoritative answer, per kind of answer in the `bench-peers.sh` mix.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use tern_authority::{respond, summary, Catalog, Options, Response, Transport};
use tern_wire::types::{RType, Rcode};

/// Hosts in the zone, as in `scripts/bench-peers.sh`.
const HOSTS: usize = 10_000;

fn lookup(c: &mut Criterion) {
    let zone = tern_benches::load_zone(b"bench.", &tern_benches::mixed_zone_text(HOSTS));
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let cases: [(&str, &[u8], RType, Rcode); 7] = [
        ("exact", b"host4321.bench.", RType::A, Rcode::NOERROR),
        (
            "exact-mixed-case",
            b"HoSt4321.BeNcH.",
            RType::A,
            Rcode::NOERROR,
        ),
        ("nodata", b"host4321.bench.", RType::AAAA, Rcode::NOERROR),
        ("nxdomain", b"nx4321.bench.", RType::A, Rcode::NXDOMAIN),
        ("wildcard", b"w4321.wild.bench.", RType::A, Rcode::NOERROR),
        ("cname", b"alias432.bench.", RType::A, Rcode::NOERROR),
        ("referral", b"www.sub432.bench.", RType::A, Rcode::NOERROR),
    ];
    let mut out = vec![0u8; 65535];
    let mut group = c.benchmark_group("lookup");
    group.throughput(Throughput::Elements(1));
    for (label, name, rtype, rcode) in cases {
        let query = tern_benches::query(name, rtype, true);
        // Check the answer once, so the bench measures what it says.
        match respond(&catalog, &query, Transport::Udp, &options, &mut out) {
            Response::Send(len) => {
                assert_eq!(summary(&out[..len]), Some((rcode, false)), "{label}")
            }
            Response::Drop => panic!("{label}: dropped"),
        }
        group.bench_function(label, |b| {
            b.iter(|| {
                respond(
                    black_box(&catalog),
                    black_box(&query),
                    Transport::Udp,
                    &options,
                    &mut out,
                )
            })
        });
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    lookup(&mut criterion);
    criterion.final_summary();
}
