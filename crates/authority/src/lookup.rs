//! The RFC 1034 section 4.3.2 algorithm: from a query name to an answer
//! plan.
//!
//! `resolve` walks one zone and returns an `Answer`: the RRsets of the
//! answer section in order (as references into the zone, plus CNAMEs
//! synthesized from DNAMEs), what goes into the authority section, the
//! rcode and AA. It writes nothing; [`crate::respond`] encodes the plan.
//! The plan has fixed capacity and lives on the stack.
//!
//! The steps mirror Knot 3.2 (`knot/nameserver/internet.c`, `solve_name`),
//! which the differential suite compares against:
//!
//! - a name at or below a zone cut is a referral, except DS at the cut
//!   itself, answered from the parent side;
//! - an exact match answers its RRset, follows its CNAME (unless QTYPE is
//!   CNAME, ANY, RRSIG or NSEC), or is NODATA; ANY answers the one RRset
//!   with the lowest type (RFC 8482; Knot's "put one RRset, not all");
//! - otherwise the closest encloser's `*` child answers as if it were the
//!   name (RFC 4592), else a DNAME at the closest encloser is followed
//!   (RFC 6672), else NXDOMAIN;
//! - chains stay inside the zone that answers the query (as Knot does; NSD
//!   also follows into other loaded zones) and stop after
//!   [`CNAME_CHAIN_MAX`] CNAME or DNAME steps, or when a CNAME RRset
//!   repeats (a loop), leaving a NOERROR answer with what was collected.

use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::{RType, Rcode};

use crate::answer::{Answer, Authority, Item, Owner};
use crate::proof;
use crate::zone::Zone;

pub use crate::answer::CNAME_CHAIN_MAX;

/// YXDOMAIN (RFC 2136 section 2.2), the rcode of an overlong DNAME
/// substitution.
pub(crate) const YXDOMAIN: Rcode = Rcode(6);

//----------- Outcome --------------------------------------------------------

/// How one step of the walk ended.
enum Step {
    /// Continue with this name (a CNAME or synthesized CNAME target).
    Follow(Owner),
    /// A positive answer (or a chain that left the zone or was cut short).
    Hit,
    /// The name exists without the type: at this node, or at this
    /// wildcard node standing for it (with the closest encloser).
    NoData { node: u32, wildcard: Option<u32> },
    /// The name does not exist; the closest encloser.
    NxDomain { encloser: u32 },
    /// The name is at or below a zone cut.
    Delegation(u32),
    /// A DNAME substitution overflowed 255 octets (RFC 6672 section 2.2).
    YxDomain,
}

//----------- resolve --------------------------------------------------------

/// Answers `qname` (lowercased, inside `zone`) for `qtype` into `answer`,
/// a new plan ([`Answer::new`]) whose `dnssec` plans the proofs DO=1
/// asks for. The plan is filled in place: it is about 1.5 KiB, which a
/// return by value copied once more per query.
pub(crate) fn resolve(zone: &Zone, qname: Name<'_>, qtype: RType, answer: &mut Answer) {
    debug_assert!(!qname.as_bytes().iter().any(u8::is_ascii_uppercase));
    let dnssec = answer.dnssec;
    // The name of each step: the query name (lowercased by the caller),
    // then each CNAME or DNAME target, lowercased here.
    let mut followed: Option<LowerNameBuf> = None;
    let mut owner = Owner::Qname;
    let mut steps = 0;
    let mut first = true;
    // Bound: every Follow consumes one of CNAME_CHAIN_MAX steps (checked in
    // `follow_cname` and `follow_dname`), so the loop runs at most
    // CNAME_CHAIN_MAX + 1 times.
    loop {
        let sname = followed.as_ref().map_or(qname, LowerNameBuf::as_name);
        let step = solve(zone, answer, sname, owner, qtype, &mut steps);
        if first && matches!(step, Step::Delegation(_)) {
            answer.authoritative = false;
        }
        first = false;
        match step {
            Step::Follow(next) => {
                let name = match next {
                    Owner::Rdata(at) => rdata_name(zone, at),
                    Owner::Synth(index) => answer.synth(index),
                    // Follow steps only produce RDATA or synthesized names.
                    Owner::Qname | Owner::Node(_) => break,
                };
                followed = Some(name.to_lower());
                owner = next;
            }
            Step::Hit => break,
            Step::NoData { node, wildcard } => {
                answer.authority = Authority::Soa;
                answer.place_soa();
                if dnssec {
                    proof::no_data(zone, answer, sname, node, wildcard);
                }
                break;
            }
            Step::NxDomain { encloser } => {
                answer.rcode = Rcode::NXDOMAIN;
                answer.authority = Authority::Soa;
                if dnssec {
                    proof::nx_domain(zone, answer, sname, encloser);
                }
                break;
            }
            Step::Delegation(cut) => {
                if let Some(set) = zone.rrset_index(cut, RType::NS) {
                    answer.authority = Authority::Delegation { cut, set };
                    if dnssec {
                        proof::referral(zone, answer, cut);
                    }
                }
                break;
            }
            Step::YxDomain => {
                answer.rcode = YXDOMAIN;
                break;
            }
        }
    }
}

/// The zone's apex node: the origin is node 0 (`crate::zone`).
const APEX: u32 = 0;

/// [`Zone::closest_encloser`] of `sname` (lowercased), with one look-up
/// fewer for a name one label below the origin, as most names of a
/// random-subdomain flood are: its closest encloser is itself if it is a
/// node, else the apex, which needs no look-up.
fn closest_encloser(zone: &Zone, sname: Name<'_>) -> Option<(u32, bool)> {
    if sname.parent().map(Name::as_bytes) == Some(zone.origin().as_bytes()) {
        debug_assert_eq!(zone.find_node(zone.origin().as_bytes()), Some(APEX));
        return Some(match zone.find_node(sname.as_bytes()) {
            Some(node) => (node, true),
            None => (APEX, false),
        });
    }
    zone.closest_encloser(sname)
}

/// The name at an RDATA arena offset (validated when the zone was built).
pub(crate) fn rdata_name(zone: &Zone, at: u32) -> Name<'_> {
    Name::parse_prefix(zone.rdata_at(at)).map_or(Name::ROOT, |(name, _)| name)
}

/// One pass of RFC 1034 section 4.3.2 steps 3 and 4 for one name.
fn solve(
    zone: &Zone,
    answer: &mut Answer,
    sname: Name<'_>,
    owner: Owner,
    qtype: RType,
    steps: &mut usize,
) -> Step {
    let Some((node, exact)) = closest_encloser(zone, sname) else {
        return Step::Hit; // a chain left the zone
    };
    if let Some(cut) = zone.delegation_above(node) {
        if !(exact && cut == node && qtype == RType::DS) {
            return Step::Delegation(cut);
        }
    }
    if exact {
        return found(zone, answer, node, None, owner, qtype, steps);
    }
    if let Some(wildcard) = zone.wildcard_child(node) {
        if answer.dnssec {
            proof::wildcard_answer(zone, answer, sname, node);
        }
        return found(zone, answer, wildcard, Some(node), owner, qtype, steps);
    }
    if let Some(set) = zone.rrset_index(node, RType::DNAME) {
        return follow_dname(zone, answer, node, set, sname, owner, qtype, steps);
    }
    Step::NxDomain { encloser: node }
}

/// The name exists at `node`, or the wildcard `node` stands for it
/// (`wildcard` is then its closest encloser, the wildcard's parent).
fn found(
    zone: &Zone,
    answer: &mut Answer,
    node: u32,
    wildcard: Option<u32>,
    owner: Owner,
    qtype: RType,
    steps: &mut usize,
) -> Step {
    if !matches!(
        qtype,
        RType::CNAME | RType::ANY | RType::RRSIG | RType::NSEC
    ) {
        if let Some(set) = zone.rrset_index(node, RType::CNAME) {
            return follow_cname(zone, answer, set, wildcard.is_some(), owner, steps);
        }
    }
    let set = if qtype == RType::ANY {
        (zone.node(node).rrset_count > 0).then_some(zone.node(node).rrsets_start)
    } else {
        zone.rrset_index(node, qtype)
    };
    match set {
        Some(set) if answer.push(Item::RRset { owner, set }) => Step::Hit,
        Some(_) => Step::Hit,
        None => Step::NoData { node, wildcard },
    }
}

/// Adds a CNAME and continues with its target. A loop ends the chain: an
/// exact CNAME that is already in the answer is not repeated; a wildcard
/// CNAME is written under its new owner and then ends the chain if the
/// wildcard was used before (Knot's `wildcard_has_visited`; NSD agrees).
fn follow_cname(
    zone: &Zone,
    answer: &mut Answer,
    set: u32,
    wildcard: bool,
    owner: Owner,
    steps: &mut usize,
) -> Step {
    *steps += 1;
    if *steps > CNAME_CHAIN_MAX {
        return Step::Hit;
    }
    let seen = answer.contains_set(set);
    if seen && !wildcard {
        return Step::Hit; // an exact CNAME repeats: not written again
    }
    if !answer.push(Item::RRset { owner, set }) || seen {
        return Step::Hit; // a wildcard CNAME repeats: written, then stop
    }
    let rrset = zone.rrset(set);
    let records = zone.rdata_iter(rrset);
    Step::Follow(Owner::Rdata(records.next_offset() as u32))
}

#[allow(clippy::too_many_arguments)]
fn follow_dname(
    zone: &Zone,
    answer: &mut Answer,
    node: u32,
    set: u32,
    sname: Name<'_>,
    owner: Owner,
    qtype: RType,
    steps: &mut usize,
) -> Step {
    *steps += 1;
    if *steps > CNAME_CHAIN_MAX {
        return Step::Hit;
    }
    // A repeated DNAME is not written twice, but its substitution is (Knot
    // checks duplicates for the DNAME record only).
    if !answer.contains_set(set)
        && !answer.push(Item::RRset {
            owner: Owner::Node(node),
            set,
        })
    {
        return Step::Hit;
    }
    let rrset = *zone.rrset(set);
    let records = zone.rdata_iter(&rrset);
    let target = rdata_name(zone, records.next_offset() as u32);
    let prefix = sname.prefix_before(zone.node_name(node)).unwrap_or(&[]);
    let Ok(synthesized) = NameBuf::concat(prefix, target) else {
        return Step::YxDomain;
    };
    let Some(index) = answer.add_synth(synthesized) else {
        return Step::Hit;
    };
    if !answer.push(Item::SynthCname {
        owner,
        target: index,
        ttl: rrset.ttl,
    }) {
        return Step::Hit;
    }
    if qtype == RType::CNAME {
        return Step::Hit; // the synthesized CNAME is the answer (Knot)
    }
    Step::Follow(Owner::Synth(index))
}
