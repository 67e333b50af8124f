//! A zone's new version by patch (tern-authority's public API: `Zone::patch`
//! with `ZoneChanges`) against the whole build it replaces (`ZoneBuilder`
//! insert + finish), at 10,000 and 100,000 names (the zone of
//! `tern_benches::versions::glue_model`: hosts with an A record, every
//! tenth owning an MX naming the next host). Two patches, each with the
//! apex's new SOA:
//!
//! - `new-name`: a TXT at a new name added, then the name removed;
//! - `address`: the address of `h1`, which `h0`'s MX names, removed, then
//!   added back (the patch resolves that MX's glue again: what the
//!   `#[ignore]`d test `address_patch_timing` measured).
//!
//! Each iteration patches the version the one before made, alternating the
//! change and its reverse so that the zone does not grow. Only the patch is
//! timed: the previous version is dropped outside the timed part, and a
//! version whose tables' unused space passes an eighth of them is replaced
//! by the built zone outside it too (tern-zones builds such a version whole
//! at a quarter, `MAX_GARBAGE_SHARE`: that compaction is the `build`
//! figure, spread over the updates that made the garbage).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use tern_authority::Zone;
use tern_benches::versions::{build_model, glue_model, patches, PatchKind, SIZES};

fn patch(c: &mut Criterion) {
    let mut group = c.benchmark_group("patch");
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    for hosts in SIZES {
        let model = glue_model(hosts);
        let built = build_model(&model);
        for (label, kind) in [
            ("new-name", PatchKind::NewName),
            ("address", PatchKind::Address),
        ] {
            let steps = patches(&model, kind);
            group.sample_size(50);
            group.measurement_time(Duration::from_secs(1));
            // Made here, once: criterion calls the closure for the
            // warm-up and for each sample, each call going on from the
            // version the one before left.
            let mut current: Zone = built.clone();
            let mut step = 0usize;
            group.bench_function(BenchmarkId::new(label, hosts), |b| {
                b.iter_custom(|iterations| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iterations {
                        if step.is_multiple_of(2)
                            && current.garbage_bytes() * 8 > current.table_bytes()
                        {
                            current = built.clone();
                        }
                        let started = Instant::now();
                        let patched = current.patch(black_box(&steps[step % 2]));
                        spent += started.elapsed();
                        current = patched.expect("the bench's patches apply").zone;
                        step += 1;
                    }
                    spent
                });
            });
        }
        // The whole build: slow at 100,000 names, so few samples.
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(if hosts > 10_000 { 3 } else { 1 }));
        group.bench_function(BenchmarkId::new("build", hosts), |b| {
            b.iter_with_large_drop(|| build_model(black_box(&model)))
        });
    }
    group.finish();
}

fn main() {
    // What criterion_group!/criterion_main! expand to, without the
    // undocumented public function they generate.
    let mut criterion = Criterion::default().configure_from_args();
    patch(&mut criterion);
    criterion.final_summary();
}
