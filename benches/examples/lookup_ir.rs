//! Instructions per query for callgrind: loads the `bench.` zone of
//! `lookup.rs` (10,000 hosts, or `HOSTS`) and answers one kind of query COUNT times.
//! Run it with COUNT 0 and COUNT 20000 under
//! `valgrind --tool=callgrind` and divide the difference by 20,000:
//!
//! ```sh
//! cargo build --release -p tern-benches --example lookup_ir
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/lookup_ir exact 20000
//! ```
//!
//! `NSEC3=1` signs the zone's denial with an NSEC3 chain, `NSEC=1` with
//! an NSEC chain (the queries then ask with DO).

use std::hint::black_box;

use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_wire::types::RType;

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "exact".into());
    let count: usize = args.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    // HOSTS (10,000 unless set) hosts; the names as in lookup.rs at
    // 10,000 (host4321, sub432), scaled with HOSTS.
    let hosts: usize = std::env::var("HOSTS")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(10_000);
    let n = hosts * 4321 / 10_000;
    let name = match kind.as_str() {
        "exact" => format!("host{n}.bench."),
        "nxdomain" => format!("nx{n}.bench."),
        "wildcard" => format!("w{n}.wild.bench."),
        "referral" => format!("www.sub{}.bench.", n / 10),
        other => panic!("unknown kind {other}"),
    };
    let text = tern_benches::mixed_zone_text(hosts);
    let zone = if std::env::var_os("NSEC3").is_some() {
        let mut parsed = tern_benches::scan_zone(b"bench.", &text);
        with_nsec3_chain(&mut parsed);
        tern_benches::build_zone(b"bench.", &parsed)
    } else if std::env::var_os("NSEC").is_some() {
        let mut parsed = tern_benches::scan_zone(b"bench.", &text);
        with_nsec_chain(&mut parsed);
        tern_benches::build_zone(b"bench.", &parsed)
    } else {
        tern_benches::load_zone(b"bench.", &text)
    };
    let catalog = Catalog::new([zone]);
    let options = Options::default();
    let mut query = tern_benches::query(name.as_bytes(), RType::A, true);
    if std::env::var_os("NSEC3").is_some() || std::env::var_os("NSEC").is_some() {
        // DO (RFC 3225): the high bit of the OPT record's flags, the
        // fourth octet from the query's end.
        let flags = query.len() - 4;
        query[flags] |= 0x80;
    }
    let mut out = vec![0u8; 65535];
    let mut sent = 0usize;
    for _ in 0..count {
        if let Response::Send(len) = respond(
            black_box(&catalog),
            black_box(&query),
            Transport::Udp,
            &options,
            &mut out,
        ) {
            sent += len;
        }
    }
    println!("{kind} {count} {sent}");
}

/// Adds an NSEC3 chain to the scanned zone: an NSEC3PARAM at the apex and
/// one NSEC3 per name (empty non-terminals too) not below a delegation.
fn with_nsec3_chain(parsed: &mut tern_zone::ParsedZone) {
    use std::collections::BTreeSet;

    use tern_dnssec::nsec3::Nsec3Params;
    use tern_dnssec::nsec3::{hashed_owner, nsec3_hash, nsec3_rdata, nsec3param_rdata};
    use tern_wire::name::Name;

    let apex = parsed.records[0].owner;
    let cuts = delegations(parsed);
    let mut names: BTreeSet<Vec<u8>> = BTreeSet::new();
    for record in &parsed.records {
        let mut at = Some(record.owner.as_name());
        let mut chain: Vec<Vec<u8>> = Vec::new();
        let mut below_cut = false;
        while let Some(name) = at {
            if name.as_bytes() == apex.as_bytes() {
                chain.push(name.as_bytes().to_vec());
                break;
            }
            below_cut |=
                name.as_bytes() != record.owner.as_bytes() && cuts.contains(name.as_bytes());
            chain.push(name.as_bytes().to_vec());
            at = name.parent();
        }
        if !below_cut {
            names.extend(chain);
        }
    }
    let params = Nsec3Params::default();
    let mut hashes: Vec<_> = names
        .iter()
        .map(|owner| {
            let name = Name::from_wire(owner).expect("a scanned name");
            nsec3_hash(name, params.iterations, &params.salt)
        })
        .collect();
    hashes.sort_unstable();
    let template = parsed.records[0].clone();
    for (at, hash) in hashes.iter().enumerate() {
        let next = &hashes[(at + 1) % hashes.len()];
        let mut record = template.clone();
        record.owner = hashed_owner(hash, apex.as_name()).expect("a short apex");
        record.rtype = RType::NSEC3;
        record.ttl = 300;
        record.rdata = nsec3_rdata(&params, next, &[RType::A]);
        parsed.records.push(record);
    }
    let mut param = template.clone();
    param.rtype = RType::NSEC3PARAM;
    param.rdata = nsec3param_rdata(&params);
    parsed.records.push(param);
    push_soa_rrsig(parsed);
}

/// Adds an NSEC chain to the scanned zone: one NSEC per name owning
/// records (delegations too) not below a delegation, in canonical order.
fn with_nsec_chain(parsed: &mut tern_zone::ParsedZone) {
    use tern_dnssec::nsec::nsec_rdata;
    use tern_wire::name::NameBuf;

    let cuts = delegations(parsed);
    let below_cut = |owner: &NameBuf| {
        let mut at = owner.as_name().parent();
        while let Some(name) = at {
            if cuts.contains(name.as_bytes()) {
                return true;
            }
            at = name.parent();
        }
        false
    };
    let mut names: Vec<NameBuf> = parsed
        .records
        .iter()
        .filter(|r| !below_cut(&r.owner))
        .map(|r| r.owner)
        .collect();
    names.sort_by(|a, b| a.as_name().canonical_cmp(b.as_name()));
    names.dedup();
    let template = parsed.records[0].clone();
    for (at, owner) in names.iter().enumerate() {
        let next = &names[(at + 1) % names.len()];
        let mut record = template.clone();
        record.owner = *owner;
        record.rtype = RType::NSEC;
        record.ttl = 300;
        record.rdata = nsec_rdata(next.as_name(), &[RType::A, RType::NSEC]);
        parsed.records.push(record);
    }
    push_soa_rrsig(parsed);
}

/// The owners of NS records below the apex (the zone's first owner).
fn delegations(parsed: &tern_zone::ParsedZone) -> std::collections::BTreeSet<Vec<u8>> {
    let apex = parsed.records[0].owner;
    parsed
        .records
        .iter()
        .filter(|r| r.rtype == RType::NS && r.owner != apex)
        .map(|r| r.owner.as_bytes().to_vec())
        .collect()
}

/// Adds an RRSIG over the apex SOA.
fn push_soa_rrsig(parsed: &mut tern_zone::ParsedZone) {
    let template = parsed.records[0].clone();
    let apex = template.owner;
    // An RRSIG over the SOA: a zone is answered as signed when its apex
    // SOA has one (the signature itself is not checked here).
    let mut rrsig = template;
    rrsig.rtype = RType::RRSIG;
    rrsig.rdata = vec![0, 6, 13, 1, 0, 0, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
    rrsig.rdata.extend_from_slice(apex.as_bytes());
    rrsig.rdata.push(7);
    parsed.records.push(rrsig);
}
