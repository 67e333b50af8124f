//! Reloads of a zone signed with NSEC that edit delegations: made (at a
//! new name and at a leaf that owned an address), glue added in a later
//! reload, made secure by a DS and insecure again, removed with the glue
//! below them; each signed as a window, as a whole signing signs the file.

use tern_wire::types::RType;

use super::*;

/// A policy that signs with NSEC.
fn nsec_policy() -> crate::signing::Policy {
    crate::signing::Policy::new("p".to_string())
}

/// The types `zone` holds at the name `text` (lowercase, presentation
/// form), the types its RRSIGs cover, and its NSEC's type bitmap (none
/// when it has no NSEC), each sorted.
fn types_at(zone: &Zone, text: &str) -> (Vec<RType>, Vec<RType>, Option<Vec<RType>>) {
    let owner = tern_wire::name::NameBuf::from_text(text.as_bytes(), None).unwrap();
    let records = zone.owner_records(owner.as_name());
    let mut types: Vec<RType> = records.iter().map(|record| record.rtype).collect();
    types.sort_unstable();
    types.dedup();
    let mut covered: Vec<RType> = records
        .iter()
        .filter(|record| record.rtype == RType::RRSIG)
        .map(|record| RType(u16::from_be_bytes([record.rdata[0], record.rdata[1]])))
        .collect();
    covered.sort_unstable();
    covered.dedup();
    let bitmap = records
        .iter()
        .find(|record| record.rtype == RType::NSEC)
        .map(|record| {
            // The next owner (uncompressed), then the windows.
            let rdata = record.rdata;
            let mut at = 0;
            while rdata[at] != 0 {
                at += 1 + usize::from(rdata[at]);
            }
            at += 1;
            let mut bitmap = Vec::new();
            while at < rdata.len() {
                let (window, length) = (u16::from(rdata[at]), usize::from(rdata[at + 1]));
                for (octet, bits) in rdata[at + 2..at + 2 + length].iter().enumerate() {
                    for bit in 0..8 {
                        if bits & (0x80 >> bit) != 0 {
                            bitmap.push(RType(window * 256 + octet as u16 * 8 + bit));
                        }
                    }
                }
                at += 2 + length;
            }
            bitmap
        });
    (types, covered, bitmap)
}

/// What `zone` holds at the delegation point `text`: its NSEC's bitmap
/// is NS, RRSIG, NSEC and DS when `ds`; only its NSEC and DS are signed.
fn assert_delegation(zone: &Zone, text: &str, ds: bool, round: usize) {
    let (_, covered, bitmap) = types_at(zone, text);
    let mut expected = vec![RType::NS, RType::RRSIG, RType::NSEC];
    let mut signed = vec![RType::NSEC];
    if ds {
        expected.push(RType::DS);
        signed.push(RType::DS);
    }
    expected.sort_unstable();
    signed.sort_unstable();
    assert_eq!(
        bitmap,
        Some(expected),
        "round {round}: {text}'s NSEC bitmap"
    );
    assert_eq!(covered, signed, "round {round}: {text}'s RRSIGs cover");
}

/// Glue (or what a cut hides): neither signed nor in the NSEC chain.
fn assert_glue(zone: &Zone, text: &str, round: usize) {
    let (types, covered, bitmap) = types_at(zone, text);
    assert!(!types.is_empty(), "round {round}: {text} held");
    assert!(
        covered.is_empty(),
        "round {round}: {text} signed: {covered:?}"
    );
    assert_eq!(bitmap, None, "round {round}: {text} in the chain");
}

/// Delegations edited by reloads of a zone signed with NSEC: `del7` made
/// (its NS target out of the zone), its glue `g.del7` added in the next
/// reload with a DS (made secure), the DS removed (insecure again) while
/// the leaf `h9` (an address) becomes a delegation, then `del7` removed
/// with its glue and `h9` a leaf again; the delegation `both7` and its
/// glue `ns.both7` added in one reload (round 1), removed in one (round
/// 5); then the secure delegation `sec7`
/// removed with its glue `ns.sec7`; then a delegation made at the empty
/// non-terminal `up7` above names the reload does not edit (`x.up7`,
/// `y.up7`, `a.b.up7` below the empty non-terminal `b.up7`, and the
/// delegation `d.up7` with its glue `ns.d.up7`: all become glue or
/// occluded), the glue `x.up7` changed in place (alone), and `up7`
/// removed (the names below it signed again, `d.up7` a delegation
/// again). Each reload is signed as a window, as a whole signing signs
/// the file, and costs as much at 5,000 names as at 50,000. Before, each
/// signed the whole zone (`sign_edits` declined a delegation changed in
/// an NSEC zone; then, until the names below a cut made or removed were
/// made edited owners, the rounds of `up7`; until glue changed in place
/// went to the window and glue that differs had only the NS records
/// naming it checked with it, rounds 1 and 7).
#[test]
fn a_signed_nsec_reload_editing_delegations_costs_the_change() {
    let extra = |round: usize| {
        let mut text = format!(
            "x.up7 A 192.0.2.{}\ny.up7 A 192.0.2.72\na.b.up7 A 192.0.2.73\n\
             d.up7 NS ns.d.up7\nns.d.up7 A 192.0.2.74\n",
            if round == 7 { 79 } else { 71 }
        );
        if round < 5 {
            text.push_str(
                "sec7 NS ns.sec7\nsec7 DS 12345 13 2 \
                 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
                 ns.sec7 A 192.0.2.70\n",
            );
        }
        if (1..=3).contains(&round) {
            text.push_str("del7 NS ns.example.net.\n");
        }
        if (1..=4).contains(&round) {
            text.push_str("both7 NS ns.both7\nns.both7 A 192.0.2.80\n");
        }
        if (2..=3).contains(&round) {
            text.push_str("g.del7 A 192.0.2.77\n");
        }
        if round == 2 {
            text.push_str(
                "del7 DS 54321 13 2 \
                 fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n",
            );
        }
        if round == 3 {
            text.push_str("h9 NS ns.example.net.\n");
        }
        if (6..=7).contains(&round) {
            text.push_str("up7 NS x.up7\n");
        }
        text
    };
    let check = |round: usize, zone: &Zone| {
        if (1..=3).contains(&round) {
            assert_delegation(zone, "del7.example.", round == 2, round);
        } else {
            assert!(
                types_at(zone, "del7.example.").0.is_empty(),
                "round {round}: del7 gone"
            );
        }
        if (1..=4).contains(&round) {
            assert_delegation(zone, "both7.example.", false, round);
            assert_glue(zone, "ns.both7.example.", round);
        } else {
            assert!(
                types_at(zone, "ns.both7.example.").0.is_empty(),
                "round {round}: ns.both7 gone"
            );
        }
        if (2..=3).contains(&round) {
            assert_glue(zone, "g.del7.example.", round);
        } else {
            assert!(
                types_at(zone, "g.del7.example.").0.is_empty(),
                "round {round}: g.del7"
            );
        }
        if round < 5 {
            assert_delegation(zone, "sec7.example.", true, round);
            assert_glue(zone, "ns.sec7.example.", round);
        } else {
            assert!(
                types_at(zone, "ns.sec7.example.").0.is_empty(),
                "round {round}: ns.sec7"
            );
        }
        if round == 3 {
            assert_delegation(zone, "h9.example.", false, round);
        } else {
            let (_, covered, bitmap) = types_at(zone, "h9.example.");
            assert_eq!(
                covered,
                vec![RType::A, RType::NSEC],
                "round {round}: h9 signed"
            );
            assert_eq!(bitmap.map(|types| types.contains(&RType::A)), Some(true));
        }
        if (6..=7).contains(&round) {
            assert_delegation(zone, "up7.example.", false, round);
            for glue in ["x.up7", "y.up7", "a.b.up7", "d.up7", "ns.d.up7"] {
                assert_glue(zone, &format!("{glue}.example."), round);
            }
        } else {
            for name in ["x.up7", "y.up7", "a.b.up7"] {
                let (_, covered, _) = types_at(zone, &format!("{name}.example."));
                assert_eq!(
                    covered,
                    vec![RType::A, RType::NSEC],
                    "round {round}: {name} signed"
                );
            }
            assert_delegation(zone, "d.up7.example.", false, round);
            assert_glue(zone, "ns.d.up7.example.", round);
        }
    };
    let costs = super::nsec3::reloads_with(
        "tern-zones-nsecdeleg",
        8,
        &nsec_policy,
        &extra,
        &check,
        &|_| false,
    );
    eprintln!("(visited, signatures) per reload at 5,000 and 50,000 names: {costs:?}");
    // `reloads_with` requires each round patched, not built whole, and
    // costs them.
    assert_eq!(costs[0], costs[1], "as much at both sizes");
}
