//! Canonical form and order (RFC 4034 section 6): what a signature covers.
//!
//! - Names: canonical order compares labels from the right as lowercased
//!   octet strings (section 6.1; `Name::canonical_cmp` in tern-wire).
//! - RDATA: the names inside the RDATA of the types section 6.2 lists (as
//!   amended by RFC 6840 section 5.1: not NSEC's) are lowercased; the
//!   table is tern-wire's `rdata::layout`, read through
//!   `tern_zone::print::canonical_rdata`.
//! - RRs of one RRset: sorted by their canonical RDATA as left-justified
//!   unsigned octet sequences, a shorter sequence first when it is a
//!   prefix of the other, and duplicates removed (section 6.3).

use std::borrow::Cow;

use tern_wire::name::Name;
use tern_wire::types::RType;

/// The RDATA of one RRset in canonical form and canonical order, each
/// once (RFC 4034 sections 6.2 and 6.3). Bound: a sort of the RRset.
pub fn canonical_rrset<'a>(rtype: RType, rdata: &[&'a [u8]]) -> Vec<Cow<'a, [u8]>> {
    let mut canonical: Vec<Cow<'a, [u8]>> = rdata
        .iter()
        .map(|rdata| tern_zone::print::canonical_rdata(rtype, rdata))
        .collect();
    canonical.sort_unstable();
    canonical.dedup();
    canonical
}

/// The RRSIG labels field for an RRset at `owner`: its labels without the
/// root and without a leading `*` (RFC 4034 section 3.1.3), so a
/// validator can tell a wildcard expansion.
pub fn rrsig_labels(owner: Name<'_>) -> u8 {
    let count = owner.label_count() - usize::from(owner.is_wildcard());
    // A name has at most 127 labels.
    count as u8
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use tern_wire::name::NameBuf;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// RFC 4034 section 6.1's list of names is in canonical order, and
    /// each name sorts after the one before it whatever its case.
    #[test]
    fn names_in_rfc4034_order() {
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        for pair in names.windows(2) {
            let (before, after) = (name(pair[0]), name(pair[1]));
            assert_eq!(
                before.as_name().canonical_cmp(after.as_name()),
                Ordering::Less,
                "{} before {}",
                pair[0],
                pair[1]
            );
        }
    }

    /// RDATA sorts as unsigned octet strings (a prefix first), duplicates
    /// go, and the names of section 6.2's types are lowercased first, so
    /// `MX 10 B.example.` and `MX 10 b.example.` are one record and sort
    /// before `MX 10 a.example.` only by their octets.
    #[test]
    fn rrset_in_canonical_order() {
        let a: [&[u8]; 5] = [
            &[192, 0, 2, 10],
            &[10, 0, 0, 1],
            &[192, 0, 2, 9],
            &[10, 0, 0, 1],
            &[192, 0, 2, 200],
        ];
        let sorted = canonical_rrset(RType::A, &a);
        let octets: Vec<&[u8]> = sorted.iter().map(|rdata| &rdata[..]).collect();
        assert_eq!(
            octets,
            [
                &[10, 0, 0, 1][..],
                &[192, 0, 2, 9],
                &[192, 0, 2, 10],
                &[192, 0, 2, 200]
            ]
        );

        let txt: [&[u8]; 3] = [b"\x02ab", b"\x01a", b"\x02aa"];
        let sorted = canonical_rrset(RType::TXT, &txt);
        let octets: Vec<&[u8]> = sorted.iter().map(|rdata| &rdata[..]).collect();
        assert_eq!(octets, [&b"\x01a"[..], b"\x02aa", b"\x02ab"]);

        let mx: [&[u8]; 3] = [
            b"\x00\x0a\x01B\x07example\x00",
            b"\x00\x0a\x01a\x07example\x00",
            b"\x00\x0a\x01b\x07EXAMPLE\x00",
        ];
        let sorted = canonical_rrset(RType::MX, &mx);
        let octets: Vec<&[u8]> = sorted.iter().map(|rdata| &rdata[..]).collect();
        assert_eq!(
            octets,
            [
                &b"\x00\x0a\x01a\x07example\x00"[..],
                b"\x00\x0a\x01b\x07example\x00"
            ]
        );

        // NSEC's next name keeps its case (RFC 6840 section 5.1).
        let nsec: [&[u8]; 1] = [b"\x01B\x07example\x00\x00\x01\x40"];
        assert_eq!(&canonical_rrset(RType::NSEC, &nsec)[0][..], nsec[0]);
    }

    /// The labels field does not count the root or a leading `*`.
    #[test]
    fn labels_field() {
        assert_eq!(rrsig_labels(name("example.").as_name()), 1);
        assert_eq!(rrsig_labels(name("www.example.com.").as_name()), 3);
        assert_eq!(rrsig_labels(name("*.example.com.").as_name()), 2);
        assert_eq!(rrsig_labels(name("a.*.example.com.").as_name()), 4);
        assert_eq!(rrsig_labels(Name::ROOT), 0);
    }
}
