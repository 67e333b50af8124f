//! # tern-testkit: helpers shared by tern's tests
//!
//! What several test binaries, examples and unit-test modules used to
//! write for themselves (STYLE §1: a dev-dependency only, never a normal
//! one):
//!
//! - [`zone`] and [`catalog`]: zone-file text to an immutable [`Zone`] or a
//!   one-zone [`Catalog`], the way `tern serve` loads a zone (scan with
//!   tern-zone, no `$INCLUDE`, then every record into a [`ZoneBuilder`]);
//!   [`build`] is the second half, for records scanned some other way;
//! - [`query`] and [`query_with`]: the bytes of a one-question query, with
//!   or without an EDNS OPT record.
//!
//! These are for tests: bad input panics with the error.
//!
//! ```
//! use tern_authority::{respond, summary, Options, Response, Transport};
//! use tern_wire::types::Rcode;
//!
//! let catalog = tern_testkit::catalog(
//!     "example.",
//!     "@ 300 SOA ns hostmaster 1 7200 3600 1209600 300\n@ 300 NS ns\nns 300 A 192.0.2.1\n",
//! );
//! let query = tern_testkit::query(7, "nowhere.example.", 1, Some((1232, false)));
//! let mut out = vec![0; 65535];
//! let Response::Send(len) =
//!     respond(&catalog, &query, Transport::Udp, &Options::default(), &mut out)
//! else {
//!     panic!("a query for a served zone is answered")
//! };
//! assert_eq!(summary(&out[..len]).unwrap().0, Rcode::NXDOMAIN);
//! ```

#![forbid(unsafe_code)]

use std::path::Path;

use tern_authority::{Catalog, Zone, ZoneBuilder};
use tern_wire::name::NameBuf;
use tern_zone::ParsedZone;

//----------- Zones ----------------------------------------------------------

/// `origin` (presentation format, absolute) as a name.
///
/// # Panics
///
/// If `origin` is not a valid absolute name.
fn origin_name(origin: &str) -> NameBuf {
    NameBuf::from_text(origin.as_bytes(), None)
        .unwrap_or_else(|e| panic!("origin {origin:?}: {e:?}"))
}

/// A small zone `example.com.`: SOA (serial 1), NS, `ns1` and `www` A
/// records; the tests that need a zone and nothing particular in it share
/// it.
pub const EXAMPLE_COM_ZONE: &str = "\
$ORIGIN example.com.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.80
";

/// The zone `example.` signed with NSEC3 opt-out by dnssec-signzone 9.18
/// (`-3 - -H 0 -A`), with its RRSIG and DNSKEY records left out except the
/// SOA's (which marks the zone signed; proof selection does not look at
/// them). `insecure` and `a.b.ent` are insecure delegations without NSEC3
/// records of their own; `ent` and `b.ent` are empty non-terminals above
/// one. A random name gets an NXDOMAIN with the closest encloser proof
/// (three NSEC3 records, a SHA-1 of the name per query), a random name
/// under `wild` a wildcard answer with its proof. Used by tern-authority's
/// DNSSEC tests and tern-server's allocation flood.
pub const NSEC3_OPT_OUT_ZONE: &str = r#"
@ 300 IN SOA ns hostmaster 1 3600 900 604800 300
@ 300 IN RRSIG SOA 13 1 300 20491231000000 20240101000000 55026 example. l240a6uDMoxBYv0rTCE8PQTbg5T8tbnhdWqcSv87naJ8DGuOzxxwmO+sNQ1d3QwMXPOy6acvvrLTiKFVDt4J8w==
@ 300 IN NS ns
@ 0 IN NSEC3PARAM 1 0 0 -
044RRQCQPUG5LGJEM8M68PQUNOAFF06B 300 IN NSEC3 1 1 0 - 3msev9usmd4br9s97v51r2tdvmr9iqo1 NS DS RRSIG
3MSEV9USMD4BR9S97V51R2TDVMR9IQO1 300 IN NSEC3 1 1 0 - 8agm2crj5dm2hpi9emkk214ccj3738k9 NS SOA RRSIG DNSKEY NSEC3PARAM
8AGM2CRJ5DM2HPI9EMKK214CCJ3738K9 300 IN NSEC3 1 1 0 - 9kqnrpnekplbct2m3k9jh3cljviok2b5
9KQNRPNEKPLBCT2M3K9JH3CLJVIOK2B5 300 IN NSEC3 1 1 0 - kncb8asp44gj31sjvi5s29d8q49gb30r A RRSIG
a.b.ent 300 IN NS ns.elsewhere.test.
insecure 300 IN NS ns.elsewhere.test.
KNCB8ASP44GJ31SJVI5S29D8Q49GB30R 300 IN NSEC3 1 1 0 - q4900c1cjmipnhp5mnbgmlte8et5nhog A RRSIG
ns 300 IN A 192.0.2.1
Q4900C1CJMIPNHP5MNBGMLTE8ET5NHOG 300 IN NSEC3 1 1 0 - 044rrqcqpug5lgjem8m68pqunoaff06b TXT RRSIG
secure 300 IN NS ns.elsewhere.test.
secure 300 IN DS 12345 13 2 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0
*.wild 300 IN TXT "w"
www 300 IN A 192.0.2.2
"#;

/// The zone `origin` built from already scanned records, every record
/// inserted in order.
///
/// # Panics
///
/// If `origin` is not a valid absolute name, a record is refused or the
/// zone does not build.
pub fn build(origin: &str, parsed: &ParsedZone) -> Zone {
    let origin = origin_name(origin);
    let mut builder = ZoneBuilder::new(origin.as_name());
    for r in &parsed.records {
        builder
            .insert(r.owner.as_name(), r.rtype, r.class, r.ttl, &r.rdata)
            .expect("record accepted");
    }
    builder.finish().expect("zone builds")
}

/// The zone `origin` read from zone-file `text` (no `$INCLUDE`, default
/// scanner options; errors name the file `test.zone`).
///
/// # Panics
///
/// If `origin` is not a valid absolute name, the text does not scan, a
/// record is refused or the zone does not build.
pub fn zone(origin: &str, text: &str) -> Zone {
    let name = origin_name(origin);
    let parsed = tern_zone::parse_bytes(
        text.as_bytes(),
        Path::new("test.zone"),
        name.as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    build(origin, &parsed)
}

/// A catalog of the one zone [`zone`] reads (wrap it in an `Arc` where a
/// shared catalog is wanted).
///
/// # Panics
///
/// As [`zone`].
pub fn catalog(origin: &str, text: &str) -> Catalog {
    Catalog::new([zone(origin, text)])
}

//----------- Queries --------------------------------------------------------

/// A standard query: header ID `id`, RD set, one question for `name`
/// (presentation format, absolute, case kept) with type `qtype` and class
/// IN, and if `edns` is `Some((udp_size, dnssec_ok))` an OPT record of
/// EDNS version 0 announcing `udp_size`, with the DO bit if `dnssec_ok`.
///
/// # Panics
///
/// If `name` is not a valid absolute name.
pub fn query(id: u16, name: &str, qtype: u16, edns: Option<(u16, bool)>) -> Vec<u8> {
    query_with(
        id,
        true,
        name,
        qtype,
        edns.map(|(udp_size, dnssec_ok)| (udp_size, dnssec_ok, 0)),
    )
}

/// [`query`] with RD set only if `rd`, and with the EDNS version too:
/// `edns` is `Some((udp_size, dnssec_ok, version))`. The OPT record, if
/// any, is the message's last 11 octets, with no options.
///
/// # Panics
///
/// If `name` is not a valid absolute name.
pub fn query_with(
    id: u16,
    rd: bool,
    name: &str,
    qtype: u16,
    edns: Option<(u16, bool, u8)>,
) -> Vec<u8> {
    let name = NameBuf::from_text(name.as_bytes(), None)
        .unwrap_or_else(|e| panic!("query name {name:?}: {e:?}"));
    let mut q = id.to_be_bytes().to_vec();
    // Flags (RD only), QDCOUNT 1, ANCOUNT 0, NSCOUNT 0, ARCOUNT.
    q.extend_from_slice(&[u8::from(rd), 0, 0, 1, 0, 0, 0, 0, 0]);
    q.push(u8::from(edns.is_some()));
    q.extend_from_slice(name.as_bytes());
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    if let Some((udp_size, dnssec_ok, version)) = edns {
        // Root owner, type OPT (41), class = UDP size, TTL = extended
        // RCODE 0, version, flags (DO is the top bit), RDLENGTH 0.
        q.extend_from_slice(&[0, 0, 41]);
        q.extend_from_slice(&udp_size.to_be_bytes());
        q.extend_from_slice(&[0, version, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
    }
    q
}

/// `query` with a COOKIE option (RFC 7873) of `value` added to its OPT,
/// which must be its last 11 octets, as [`query`] writes it; a query
/// without additional records is returned as it is.
pub fn with_cookie(mut query: Vec<u8>, value: &[u8]) -> Vec<u8> {
    if query[11] == 0 {
        return query;
    }
    let rdlen = query.len() - 2;
    query[rdlen..].copy_from_slice(&(4 + value.len() as u16).to_be_bytes());
    query.extend_from_slice(&[0, 10]);
    query.extend_from_slice(&(value.len() as u16).to_be_bytes());
    query.extend_from_slice(value);
    query
}

//----------- Fuzz seeds -----------------------------------------------------

/// The committed seed inputs of fuzz target `target`
/// (`crates/fuzz/corpus/TARGET/`), sorted, for the unit tests that run
/// every seed through the target's body.
///
/// # Panics
///
/// If the directory or a file in it cannot be read.
pub fn fuzz_seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .collect();
    seeds.sort();
    seeds
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::parse::MessageView;
    use tern_wire::types::RType;

    use super::*;

    #[test]
    fn zone_holds_every_record_of_the_text() {
        let zone = zone("example.com.", EXAMPLE_COM_ZONE);
        assert_eq!(zone.record_count(), 4);
        assert_eq!(zone.origin().to_string(), "example.com.");
    }

    #[test]
    #[should_panic(expected = "test.zone")]
    fn bad_text_panics_with_the_scanner_error() {
        zone("example.com.", "www A 192.0.2.300\n");
    }

    #[test]
    fn query_bytes_are_exact() {
        let plain = query(0x1234, "wWw.example.", 28, None);
        let mut expected = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(b"\x03wWw\x07example\x00\x00\x1c\x00\x01");
        assert_eq!(plain, expected);

        let with_opt = query_with(0x4242, false, "wWw.example.", 28, Some((1232, true, 1)));
        let mut expected = vec![0x42, 0x42, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        expected.extend_from_slice(b"\x03wWw\x07example\x00\x00\x1c\x00\x01");
        expected.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 1, 0x80, 0, 0, 0]);
        assert_eq!(with_opt, expected);
    }

    #[test]
    fn query_parses_with_its_edns() {
        let q = query(9, "www.example.", 1, Some((4096, false)));
        let view = MessageView::parse(&q).unwrap();
        assert!(view.header().rd());
        assert_eq!(view.question().unwrap().qtype, RType::A);
        let edns = view.edns().unwrap().unwrap();
        assert_eq!(edns.udp_size, 4096);
    }
}
