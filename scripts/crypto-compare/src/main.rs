//! `crypto-compare [SIGNATURES] [ring|aws|both]`: signs a 100-octet
//! message SIGNATURES times (100,000 by default) with one ECDSA P-256 key,
//! by ring and by aws-lc-rs, each with its own `SystemRandom`, and prints
//! the signatures per second of this thread's CPU time (wall time means
//! little on a shared machine). Run each library in its own process under
//! `strace -c -e trace=getrandom` to count the system calls for the nonces.

use std::time::Duration;

/// This thread's CPU time (user and system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("/proc is mounted");
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

fn report(library: &str, count: usize, spent: Duration) {
    let seconds = spent.as_secs_f64();
    println!(
        "{library}: {count} signatures in {seconds:.2} CPU-s = {:.0} per CPU-second",
        count as f64 / seconds
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let which = args.next().unwrap_or_else(|| "both".into());
    let message = [0x5au8; 100];
    if which == "both" || which == "ring" {
        use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING as ALG};
        let random = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ALG, &random).expect("a key");
        let key = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref(), &random).expect("a key");
        let start = cpu_time();
        for _ in 0..count {
            std::hint::black_box(key.sign(&random, std::hint::black_box(&message)).expect("signs"));
        }
        report("ring", count, cpu_time() - start);
    }
    if which == "both" || which == "aws" {
        use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING as ALG};
        let random = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ALG, &random).expect("a key");
        let key = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref()).expect("a key");
        let start = cpu_time();
        for _ in 0..count {
            std::hint::black_box(key.sign(&random, std::hint::black_box(&message)).expect("signs"));
        }
        report("aws-lc-rs", count, cpu_time() - start);
    }
}
