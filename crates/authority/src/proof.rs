//! Which NSEC or NSEC3 RRsets prove a denial (DO=1 answers).
//!
//! The selection follows RFC 4035 section 3.1.3 (NSEC) and RFC 5155
//! section 7.2 (NSEC3) the way Knot 3.2 does (`nameserver/nsec_proofs.c`);
//! NSD 4.6 agrees except where `docs/decisions/0004-dnssec-answers.md`
//! says. A zone with an NSEC3PARAM at its apex is answered with its NSEC3
//! chain, else with its NSEC records, else (unsigned) with nothing.
//!
//! | case | NSEC | NSEC3 |
//! |---|---|---|
//! | wildcard expansion of a name | NSEC covering the name | NSEC3 covering the next closer name |
//! | NODATA | NSEC of the name (an empty non-terminal: the NSEC covering it) | NSEC3 matching the name, else the closest provable encloser proof |
//! | NODATA from a wildcard | the above, and the wildcard's NSEC | closest encloser proof, and the NSEC3 matching the wildcard |
//! | NXDOMAIN | NSEC covering the name, NSEC covering `*.<closest encloser>` | closest provable encloser proof, NSEC3 covering `*.<that encloser>` |
//! | referral without DS | the cut's NSEC | NSEC3 matching the cut, else the closest provable encloser proof (opt-out) |
//!
//! "Closest provable encloser proof" (RFC 5155 section 7.2.1): the NSEC3
//! matching the nearest ancestor that has one, and the NSEC3 covering the
//! next closer name (that ancestor plus one more label of the name). The
//! next closer name is the only thing hashed per query; every existing
//! name and every `*.<name>` was hashed at load.

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::RType;

use crate::answer::{Answer, Proof};
use crate::nsec3::{Chain, Link};
use crate::zone::{Zone, NO_PARENT};

/// A name that exists only through the wildcard child of `encloser`.
pub(crate) fn wildcard_answer(zone: &Zone, answer: &mut Answer, sname: Name<'_>, encloser: u32) {
    if let Some(chain) = &zone.nsec3 {
        next_closer(zone, chain, answer, sname, encloser);
    } else {
        covering_nsec(zone, answer, sname);
    }
}

/// `sname` exists at `node` (or through the wildcard `node`, child of
/// `wildcard`) without the type asked for.
pub(crate) fn no_data(
    zone: &Zone,
    answer: &mut Answer,
    sname: Name<'_>,
    node: u32,
    wildcard: Option<u32>,
) {
    if let Some(chain) = &zone.nsec3 {
        if let Some(encloser) = wildcard {
            // RFC 5155 section 7.2.5; the next closer was added with the
            // wildcard expansion.
            matching(chain, answer, encloser);
            next_closer(zone, chain, answer, sname, encloser);
            matching(chain, answer, node);
        } else if let Some(link) = chain.matching(node) {
            add_link(answer, Some(link));
        } else {
            // No NSEC3 for the name (opt-out, RFC 5155 section 7.2.4).
            provable_encloser(zone, chain, answer, sname, node);
        }
        return;
    }
    match zone.rrset_index(node, RType::NSEC) {
        Some(set) => answer.add_proof(Proof { node, set }),
        None => covering_nsec(zone, answer, sname),
    }
    if wildcard.is_some() {
        covering_nsec(zone, answer, sname);
    }
}

/// `sname` does not exist; `encloser` is its closest encloser.
pub(crate) fn nx_domain(zone: &Zone, answer: &mut Answer, sname: Name<'_>, encloser: u32) {
    if let Some(chain) = &zone.nsec3 {
        let provable = provable_encloser(zone, chain, answer, sname, encloser);
        add_link(answer, chain.wildcard(provable));
        return;
    }
    covering_nsec(zone, answer, sname);
    if let Ok(wildcard) = NameBuf::concat(b"\x01*", zone.node_name(encloser)) {
        covering_nsec(zone, answer, wildcard.as_name());
    }
}

/// A referral to `cut`: its DS RRset, or the proof that it has none.
pub(crate) fn referral(zone: &Zone, answer: &mut Answer, cut: u32) {
    if let Some(set) = zone.rrset_index(cut, RType::DS) {
        answer.ds = Some(set);
        return;
    }
    if let Some(chain) = &zone.nsec3 {
        if let Some(link) = chain.matching(cut) {
            add_link(answer, Some(link));
        } else {
            let name = zone.node_name(cut);
            provable_encloser(zone, chain, answer, name, cut);
        }
    } else if let Some(set) = zone.rrset_index(cut, RType::NSEC) {
        answer.add_proof(Proof { node: cut, set });
    }
}

//----------- Helpers --------------------------------------------------------

/// The NSEC that matches or covers a name.
fn covering_nsec(zone: &Zone, answer: &mut Answer, name: Name<'_>) {
    if let Some(node) = zone.nsec_covering(name) {
        if let Some(set) = zone.rrset_index(node, RType::NSEC) {
            answer.add_proof(Proof { node, set });
        }
    }
}

fn add_link(answer: &mut Answer, link: Option<&Link>) {
    if let Some(link) = link {
        answer.add_proof(Proof {
            node: link.node,
            set: link.set,
        });
    }
}

/// The NSEC3 matching a node's name, if there is one.
fn matching(chain: &Chain, answer: &mut Answer, node: u32) {
    add_link(answer, chain.matching(node));
}

/// The NSEC3 covering the next closer name of `sname` below `encloser`
/// (one hash per call). Nothing if `sname` is not below `encloser`.
fn next_closer(zone: &Zone, chain: &Chain, answer: &mut Answer, sname: Name<'_>, encloser: u32) {
    let depth = zone.node_name(encloser).label_count() + 1;
    if sname.label_count() < depth {
        return;
    }
    let name = sname.suffix(depth);
    if let Some((link, _)) = chain.find(&chain.params.hash(name)) {
        add_link(answer, Some(link));
    }
}

/// The closest provable encloser proof for `sname`, starting the search
/// at `node` (an existing ancestor of `sname`, or `sname`'s own node):
/// the NSEC3 matching the nearest node at or above it that has one, and
/// the NSEC3 covering the next closer name. Returns that encloser. Bound:
/// one step per ancestor, parent ids strictly decrease.
fn provable_encloser(
    zone: &Zone,
    chain: &Chain,
    answer: &mut Answer,
    sname: Name<'_>,
    node: u32,
) -> u32 {
    let mut encloser = node;
    // A name's own node cannot prove it does not exist; start above it
    // when the search begins at the name itself.
    if zone.node_name(encloser).len() == sname.len() {
        encloser = zone.node(encloser).parent;
    }
    // Each step one search of the chain (the node's link is found from
    // its hash).
    let link = loop {
        if encloser == NO_PARENT {
            return 0;
        }
        if let Some(link) = chain.matching(encloser) {
            break link;
        }
        encloser = zone.node(encloser).parent;
    };
    add_link(answer, Some(link));
    next_closer(zone, chain, answer, sname, encloser);
    encloser
}
