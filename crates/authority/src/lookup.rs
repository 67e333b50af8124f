//! The RFC 1034 section 4.3.2 algorithm: from a query name to an answer
//! plan.
//!
//! `resolve` walks one zone and returns an `Answer`: the RRsets of the
//! answer section in order (as references into the zone, plus CNAMEs
//! synthesized from DNAMEs), what goes into the authority section, the
//! rcode and AA. It writes nothing; [`crate::respond`](fn@crate::respond) encodes the plan.
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

use tern_wire::name::{LowerNameBuf, Name, NameBuf, MAX_LABELS};
use tern_wire::types::{RType, Rcode};

use crate::answer::{Answer, Authority, Item, Owner};
use crate::proof;
use crate::zone::{Zone, FLAG_DELEG, FLAG_DNAME, FLAG_NONAUTH, FLAG_WILDCARD_CHILD};

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
/// return by value copied once more per query. `origin` is
/// `zone.origin()`, read once by the caller for the whole answer (about
/// 25 instructions a reading).
///
/// `qname_hash`: `NameHasher::process().hash` of `qname`, if the caller
/// has it (the server's answer cache made it), for the zone index's
/// look-up of the name itself (`None`: hashed there).
///
/// `origin_at`: where `origin` starts in `qname`, if the caller knows
/// that it is `qname`'s octets from there and that a label starts there
/// (the catalog found the zone so: `Catalog::locate`), so that the walk
/// does not compare the origin again (`None`: compared here).
///
/// Inlined always into its one caller (`respond`'s answering, itself in
/// two entries): the call's frame and its arguments' moves cost about 20
/// instructions a query.
#[inline(always)]
pub(crate) fn resolve(
    zone: &Zone,
    origin: Name<'_>,
    (qname, origin_at): (Name<'_>, Option<usize>),
    qname_hash: Option<u64>,
    qtype: RType,
    answer: &mut Answer,
) {
    debug_assert_eq!(origin.as_bytes(), zone.origin().as_bytes());
    debug_assert!(!qname.as_bytes().iter().any(u8::is_ascii_uppercase));
    // The query name's step here; a chain (a CNAME or DNAME target, each
    // lowercased into a buffer of its own) in `follow_chain`, so that the
    // answers without one (most) set up no buffer.
    let mut steps = 0;
    let step = solve(
        zone,
        origin,
        answer,
        (qname, qname_hash, origin_at),
        Owner::Qname,
        qtype,
        &mut steps,
    );
    if matches!(step, Step::Delegation(_)) {
        answer.authoritative = false;
    }
    if let Some(next) = conclude(zone, answer, qname, step) {
        follow_chain(zone, origin, qtype, answer, next, steps);
    }
}

/// The steps after the first, from the target `next` names: one per
/// CNAME or DNAME followed. Bound: every Follow consumes one of
/// CNAME_CHAIN_MAX steps (checked in `follow_cname` and `follow_dname`),
/// so the loop runs at most CNAME_CHAIN_MAX times.
#[inline(never)]
fn follow_chain(
    zone: &Zone,
    origin: Name<'_>,
    qtype: RType,
    answer: &mut Answer,
    next: Owner,
    mut steps: usize,
) {
    let mut owner = next;
    loop {
        let name = match owner {
            Owner::Rdata(at) => rdata_name(zone, at),
            Owner::Synth(index) => answer.synth(index),
            // Follow steps only produce RDATA or synthesized names.
            Owner::Qname | Owner::Node(_) => return,
        };
        let followed: LowerNameBuf = name.to_lower();
        let sname = followed.as_name();
        let step = solve(
            zone,
            origin,
            answer,
            (sname, None, None),
            owner,
            qtype,
            &mut steps,
        );
        match conclude(zone, answer, sname, step) {
            Some(next) => owner = next,
            None => return,
        }
    }
}

/// Ends the plan for a step that ends it (the authority section, the
/// rcode, with DO=1 the proofs), or gives the owner to follow next.
#[inline(always)]
fn conclude(zone: &Zone, answer: &mut Answer, sname: Name<'_>, step: Step) -> Option<Owner> {
    let dnssec = answer.dnssec;
    match step {
        Step::Follow(next) => return Some(next),
        Step::Hit => {}
        Step::NoData { node, wildcard } => {
            answer.authority = Authority::Soa;
            answer.place_soa();
            if dnssec {
                proof::no_data(zone, answer, sname, node, wildcard);
            }
        }
        Step::NxDomain { encloser } => {
            answer.rcode = Rcode::NXDOMAIN;
            answer.authority = Authority::Soa;
            if dnssec {
                proof::nx_domain(zone, answer, sname, encloser);
            }
        }
        Step::Delegation(cut) => {
            if let Some(set) = zone.rrset_index(cut, RType::NS) {
                answer.authority = Authority::Delegation { cut, set };
                if dnssec {
                    proof::referral(zone, answer, cut);
                }
            }
        }
        Step::YxDomain => {
            answer.rcode = YXDOMAIN;
        }
    }
    None
}

/// Up to this many RRsets, a node's are searched in one pass by
/// [`found`] rather than by binary searches.
const FEW_RRSETS: usize = 8;

/// The zone's apex node: the origin is node 0 (`crate::zone`).
const APEX: u32 = 0;

/// [`Zone::closest_encloser`] of `sname` (lowercased): the deepest node
/// that equals or contains it, and whether it is `sname` itself; `None` if
/// `sname` is not in the zone (a chain that left it). The origin is read
/// once and compared once, as the name's last octets at a label boundary
/// found by one walk over the labels above it; then hashed look-ups of
/// the name's parent first (see below), then of the name and the names
/// above, deepest first, and none for the apex, which always exists. A
/// name one label below the origin, as most names of a random-subdomain
/// flood are, costs one look-up; a name under a node whose only name
/// below is its `*` (a wildcard's parent) or that has none, one too;
/// without the suffix walks and origin reads of `Zone::closest_encloser`
/// (about 180 instructions fewer there).
///
/// `sname_hash`, if given, is `NameHasher::process().hash` of `sname`: the
/// look-up of the name itself takes it and hashes nothing. `origin_at`, if
/// given, is where `origin` starts in `sname` at a label boundary (see
/// [`resolve`]): the origin is not compared again. Inlined always into
/// `solve`: once a step, where its call and frame cost about 15
/// instructions.
#[inline(always)]
fn closest_encloser(
    zone: &Zone,
    origin: Name<'_>,
    sname: Name<'_>,
    sname_hash: Option<u64>,
    origin_at: Option<usize>,
) -> Option<(u32, bool)> {
    let origin = origin.as_bytes();
    let name = sname.as_bytes();
    let find_name = || match sname_hash {
        Some(hash) => zone.find_node_hashed(name, hash),
        None => zone.find_node(name),
    };
    let depth = match origin_at {
        Some(depth) => {
            debug_assert_eq!(name.get(depth..), Some(origin));
            // One compare keeps the label walk below in the name even if
            // a caller's position were wrong.
            name.get(depth..)?;
            depth
        }
        None => {
            let depth = name.len().checked_sub(origin.len())?;
            if name[depth..] != *origin {
                return None;
            }
            depth
        }
    };
    // How many labels are above the origin, and where the second starts
    // (the parent's name); the look-ups below walk the labels again
    // rather than keep every start (an array of MAX_LABELS set per query,
    // about 10 instructions). Bound: each step moves past one label of a
    // valid name, at most MAX_LABELS of them.
    let mut count = 0;
    let mut second = 0;
    let mut at = 0;
    while at < depth && count < MAX_LABELS {
        if count == 1 {
            second = at;
        }
        count += 1;
        at += 1 + usize::from(name[at]);
    }
    if at != depth {
        return None; // the origin's octets, but not at a label boundary
    }
    debug_assert_eq!(zone.find_node(origin), Some(APEX));
    // Two labels or more above the origin: the parent first. Missing, it
    // has nothing below it, the name included; found with no name below
    // it, or only its `*` child and the name is not that child, it is the
    // closest encloser without a look-up of the name (one look-up fewer
    // for a name under a wildcard of its own, as `w1.wild.bench.`, or
    // below a leaf). Else the name is looked up, as it would have been
    // first: one look-up more only for a name two labels or more below
    // the origin whose parent has other names below it.
    let mut first = 0;
    if count >= 2 {
        let parent = &name[second..];
        if let Some(node) = zone.find_node(parent) {
            let children = zone.extra.get(node).children;
            let only_wildcard = children == 1
                && zone.node(node).flags & FLAG_WILDCARD_CHILD != 0
                && !name.starts_with(b"\x01*");
            if children == 0 || only_wildcard {
                return Some((node, false));
            }
            return Some(match find_name() {
                Some(exact) => (exact, true),
                None => (node, false),
            });
        }
        first = 2;
    }
    // The names from the first not tried yet, deepest first: the labels
    // walked again from the name's start. Bound: `count` labels, each
    // starting before `depth` (inside the name).
    let mut start = 0;
    for index in 0..count {
        if index >= first {
            let found = if index == 0 {
                find_name()
            } else {
                zone.find_node(&name[start..])
            };
            if let Some(node) = found {
                return Some((node, index == 0));
            }
        }
        start += 1 + usize::from(name[start]);
    }
    Some((APEX, count == 0))
}

/// The name at an RDATA arena offset (validated when the zone was built).
pub(crate) fn rdata_name(zone: &Zone, at: u32) -> Name<'_> {
    Name::parse_prefix(zone.rdata_at(at)).map_or(Name::ROOT, |(name, _)| name)
}

/// One pass of RFC 1034 section 4.3.2 steps 3 and 4 for one name,
/// `sname` with its process hash and its origin's place if known (see
/// [`closest_encloser`]). Inlined always: its frame and the step's
/// return cost about 20 instructions a query, once in `resolve` (most
/// answers) and once in the chain's loop.
#[inline(always)]
fn solve(
    zone: &Zone,
    origin: Name<'_>,
    answer: &mut Answer,
    (sname, sname_hash, origin_at): (Name<'_>, Option<u64>, Option<usize>),
    owner: Owner,
    qtype: RType,
    steps: &mut usize,
) -> Step {
    let Some((node, exact)) = closest_encloser(zone, origin, sname, sname_hash, origin_at) else {
        return Step::Hit; // a chain left the zone
    };
    // The node's flags read once here: a node neither a cut nor below one
    // (most) and one without a `*` child (most closest enclosers) cost no
    // call of `delegation_above` or `wildcard_child` (about 20 and 10
    // instructions a query under the flood).
    let flags = zone.node(node).flags;
    if flags & (FLAG_DELEG | FLAG_NONAUTH) != 0 {
        if let Some(cut) = zone.delegation_above(node) {
            if !(exact && cut == node && qtype == RType::DS) {
                return Step::Delegation(cut);
            }
        }
    }
    if exact {
        return found(zone, answer, node, None, owner, qtype, steps);
    }
    let wildcard = if flags & FLAG_WILDCARD_CHILD != 0 {
        zone.wildcard_child(node)
    } else {
        None
    };
    if let Some(wildcard) = wildcard {
        if answer.dnssec {
            proof::wildcard_answer(zone, answer, sname, node);
        }
        return found(zone, answer, wildcard, Some(node), owner, qtype, steps);
    }
    // The flag first: most closest enclosers own no DNAME, and reading it
    // costs less than searching the node's RRsets for one.
    if flags & FLAG_DNAME != 0 {
        if let Some(set) = zone.rrset_index(node, RType::DNAME) {
            return follow_dname(zone, answer, node, set, sname, owner, qtype, steps);
        }
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
    let follows = !matches!(
        qtype,
        RType::CNAME | RType::ANY | RType::RRSIG | RType::NSEC
    );
    let sets = zone.rrsets(node);
    let start = zone.node(node).rrsets_start;
    let set = if qtype == RType::ANY {
        (!sets.is_empty()).then_some(start)
    } else {
        let (cname, asked) = if sets.len() <= FEW_RRSETS {
            // A node of a few RRsets (most): its CNAME and the type asked
            // for in one pass, where two binary searches cost about 40
            // instructions each. Bound: FEW_RRSETS steps.
            let mut cname = None;
            let mut asked = None;
            for (at, set) in (start..).zip(sets) {
                if set.rtype == RType::CNAME {
                    cname = Some(at);
                }
                if set.rtype == qtype {
                    asked = Some(at);
                }
            }
            (cname, asked)
        } else {
            let cname = follows
                .then(|| zone.rrset_index(node, RType::CNAME))
                .flatten();
            (cname, zone.rrset_index(node, qtype))
        };
        if let (true, Some(set)) = (follows, cname) {
            return follow_cname(zone, answer, set, wildcard.is_some(), owner, steps);
        }
        asked
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

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::hash::NameHasher;
    use tern_wire::types::RClass;

    use crate::ZoneBuilder;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// The search by label offsets finds what `Zone::closest_encloser`
    /// finds, for names at, one, two and three labels below the origin,
    /// names outside, and names whose last octets are the origin's but
    /// not at a label boundary.
    #[test]
    fn closest_encloser_agrees_with_the_zone_walk() {
        let origin = name("example.");
        let mut builder = ZoneBuilder::new(origin.as_name());
        let mut soa = b"\x00\x00".to_vec();
        soa.extend_from_slice(&[0; 20]);
        builder
            .insert(origin.as_name(), RType::SOA, RClass::IN, 1, &soa)
            .unwrap();
        for owner in [
            "a.example.",
            "*.w.example.",
            "x.y.z.example.",
            "*.v.example.",
            "u.v.example.",
            "t.s.example.",
        ] {
            builder
                .insert(
                    name(owner).as_name(),
                    RType::A,
                    RClass::IN,
                    1,
                    &[192, 0, 2, 1],
                )
                .unwrap();
        }
        let zone = std::sync::Arc::new(builder.finish().unwrap());
        // The catalog's place of the origin, as the server's answers give
        // it: the same nodes without the origin compared here.
        let catalog = crate::Catalog::new([zone.clone()]);
        let names: [&[u8]; 21] = [
            // A `*` and another name below `v`; one name below `s`.
            b"\x01q\x01v\x07example\x00",
            b"\x01u\x01v\x07example\x00",
            b"\x01*\x01v\x07example\x00",
            b"\x01r\x01u\x01v\x07example\x00",
            b"\x01t\x01s\x07example\x00",
            b"\x01q\x01s\x07example\x00",
            b"\x01q\x01t\x01s\x07example\x00",
            b"\x07example\x00",
            b"\x01a\x07example\x00",
            b"\x01b\x07example\x00",
            b"\x01q\x01a\x07example\x00",
            b"\x01q\x01w\x07example\x00",
            b"\x01*\x01w\x07example\x00",
            b"\x01q\x01y\x01z\x07example\x00",
            b"\x01x\x01y\x01z\x07example\x00",
            b"\x01p\x01x\x01y\x01z\x07example\x00",
            b"\x01z\x07example\x00",
            b"\x03com\x00",
            b"\x00",
            // One label `a\007example` below the root: the origin's octets
            // end it, but no label of the origin starts there.
            b"\x09a\x07example\x00",
            b"\x0ax\x07example\x00\x00",
        ];
        let mut found = 0;
        for bytes in names {
            let Ok((sname, _)) = Name::parse_prefix(bytes) else {
                panic!("{bytes:?}");
            };
            let expected = zone.closest_encloser(sname);
            let found_here = closest_encloser(&zone, zone.origin(), sname, None, None);
            assert_eq!(found_here, expected, "{sname}");
            match catalog.locate(sname) {
                Some((slot, at)) => {
                    assert_eq!(slot, 0);
                    let located = closest_encloser(&zone, zone.origin(), sname, None, Some(at));
                    assert_eq!(located, expected, "{sname} located");
                }
                None => assert_eq!(expected, None, "{sname} not located"),
            }
            // With the name's hash made outside, as the server's answer
            // cache makes it: the same node (a zone index hashing with
            // another function would miss the name itself).
            let hash = NameHasher::process().hash(sname.as_bytes());
            let hashed = closest_encloser(&zone, zone.origin(), sname, Some(hash), None);
            assert_eq!(hashed, expected, "{sname} hashed");
            found += usize::from(expected.is_some());
        }
        // Not all outside: the test compares found nodes too.
        assert_eq!(found, 17);
    }
}
