//! The crypto's limit for full signing (issue 24): COUNT ECDSA P-256
//! signatures made by `SigningKey::sign` (ring) alone, on THREADS
//! threads, each over a message the size of an A RRset's signed data
//! (about 60 octets) that differs from one signature to the next.
//! `scripts/bench-sign.sh` runs it under `/usr/bin/time -v` beside the
//! signers (SIGNERS="crypto"): its CPU seconds are what the signatures
//! alone cost on this machine in the same hour.
//!
//!     cargo run --release -p tern-dnssec --example crypto -- 2000006 2

use std::hint::black_box;

use tern_dnssec::{Algorithm, KeyRole, SigningKey};

/// The most signatures one run makes.
const MAX_COUNT: u64 = 100_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let count: u64 = args
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(100_000)
        .min(MAX_COUNT);
    let threads: u64 = args
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1)
        .clamp(1, 256);
    let (key, _) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk)
        .expect("ring makes a P-256 key");
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let key = &key;
            let share = count / threads + u64::from(thread < count % threads);
            scope.spawn(move || {
                let mut message = [0x5au8; 60];
                for at in 0..share {
                    message[..8].copy_from_slice(&at.to_be_bytes());
                    message[8] = thread as u8;
                    black_box(key.sign(black_box(&message)).expect("ring signs"));
                }
            });
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "{count} P-256 signatures on {threads} thread(s) in {seconds:.2} s wall ({:.0} per second)",
        count as f64 / seconds
    );
}
