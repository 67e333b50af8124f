//! The plan of an answer: what [`crate::lookup`] decides (the answer-section
//! RRsets, the authority section, rcode and AA), the denial proofs
//! [`crate::proof`] adds to it, and what [`crate::respond`](mod@crate::respond) writes. It
//! holds references into one zone, has fixed capacity and lives on the
//! stack; it imports neither the walk that fills it nor the writer.

use smallvec::SmallVec;
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::Rcode;

/// The most CNAME or DNAME steps followed for one query. Knot 3.2 uses 5
/// (`CNAME_CHAIN_MAX`, checked: a 24-link chain yields 5 CNAMEs); NSD
/// follows longer chains. Past the limit the answer ends with the last
/// CNAME, NOERROR and no authority, as in Knot.
pub const CNAME_CHAIN_MAX: usize = 5;

/// Answer-section items: each step adds at most a DNAME and a synthesized
/// CNAME, and the final RRset one more.
pub(crate) const MAX_ANSWER_ITEMS: usize = 2 * CNAME_CHAIN_MAX + 1;

/// Denial-of-existence RRsets (NSEC or NSEC3) in one answer. An NXDOMAIN
/// needs at most 3 (RFC 5155 section 7.2.2), a wildcard NODATA 3; each
/// wildcard step of a CNAME chain adds 1 (NSEC) or 1 (NSEC3 next closer).
/// With [`CNAME_CHAIN_MAX`] steps that is at most 5 + 3 = 8; past the
/// capacity further proofs are dropped (the answer is then not
/// validatable, never malformed).
pub(crate) const MAX_PROOFS: usize = 16;

//----------- Owner ----------------------------------------------------------

/// Where the owner name of an answer record comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The query name as the client wrote it.
    Qname,
    /// A name inside the zone's RDATA arena (a CNAME or glue target).
    Rdata(u32),
    /// A CNAME target synthesized from a DNAME (index into the plan).
    Synth(u8),
    /// A node's own (lowercased) name.
    Node(u32),
}

//----------- Item -----------------------------------------------------------

/// One RRset of the answer section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A zone RRset (index into the zone's RRsets), under `owner`.
    RRset { owner: Owner, set: u32 },
    /// A CNAME synthesized from a DNAME (RFC 6672 section 3.1): its target
    /// is the plan's synthesized name `target`; TTL is the DNAME's.
    SynthCname { owner: Owner, target: u8, ttl: u32 },
}

//----------- Authority ------------------------------------------------------

/// What goes into the authority section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Authority {
    /// Nothing (positive answers: Knot adds no apex NS, see the crate docs).
    None,
    /// The apex SOA with the negative TTL (NODATA, NXDOMAIN).
    Soa,
    /// The NS RRset of a delegation point (a referral).
    Delegation { cut: u32, set: u32 },
}

//----------- Proof ----------------------------------------------------------

/// An NSEC or NSEC3 RRset for the authority section: the node that owns it
/// and its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Proof {
    pub(crate) node: u32,
    pub(crate) set: u32,
}

//----------- Answer ---------------------------------------------------------

/// The plan of an answer: references into one zone, fixed capacity.
pub(crate) struct Answer {
    pub(crate) rcode: Rcode,
    pub(crate) authoritative: bool,
    pub(crate) authority: Authority,
    /// DNSSEC requested (DO=1): RRSIGs with every RRset, proofs planned.
    pub(crate) dnssec: bool,
    /// The DS RRset at the cut of a referral (DO=1 only).
    pub(crate) ds: Option<u32>,
    /// The answer-section items, at most [`MAX_ANSWER_ITEMS`] (never
    /// spilled to the heap: [`Answer::push`] refuses more). Kept in a
    /// `SmallVec` rather than an array with a count so that a new plan
    /// writes its length alone, not the items' and proofs' 300 octets of
    /// zeros (about 20 stores a query).
    items: SmallVec<[Item; MAX_ANSWER_ITEMS]>,
    /// The synthesized names, `None` until kept: a plan is made per
    /// query, and `None`s are written as their tags alone where root
    /// names would each be 256 octets zeroed.
    synth: [Option<NameBuf>; CNAME_CHAIN_MAX],
    synth_count: usize,
    /// The proofs, at most [`MAX_PROOFS`] (never spilled:
    /// [`Answer::add_proof`] refuses more).
    proofs: SmallVec<[Proof; MAX_PROOFS]>,
    /// How many proofs precede the SOA of a negative answer.
    soa_at: usize,
}

impl Answer {
    pub(crate) fn new(dnssec: bool) -> Self {
        Answer {
            rcode: Rcode::NOERROR,
            authoritative: true,
            authority: Authority::None,
            dnssec,
            ds: None,
            proofs: SmallVec::new(),
            soa_at: MAX_PROOFS,
            items: SmallVec::new(),
            synth: [None; CNAME_CHAIN_MAX],
            synth_count: 0,
        }
    }

    /// The answer-section RRsets, in order.
    pub(crate) fn items(&self) -> &[Item] {
        &self.items
    }

    /// The denial-of-existence RRsets, in the order planned.
    pub(crate) fn proofs(&self) -> &[Proof] {
        &self.proofs
    }

    /// How many proofs are written before the SOA of a negative answer:
    /// those planned before the NODATA was found (wildcard expansions), or
    /// all of them for an NXDOMAIN.
    pub(crate) fn soa_at(&self) -> usize {
        self.soa_at
    }

    /// Adds a proof unless it is already planned or the plan is full.
    pub(crate) fn add_proof(&mut self, proof: Proof) {
        if self.proofs.len() < MAX_PROOFS && !self.proofs().contains(&proof) {
            self.proofs.push(proof);
        }
    }

    /// Places the SOA of a negative answer after the proofs planned so far.
    pub(crate) fn place_soa(&mut self) {
        self.soa_at = self.proofs.len();
    }

    /// A synthesized CNAME target.
    pub(crate) fn synth(&self, index: u8) -> Name<'_> {
        self.synth[usize::from(index)]
            .as_ref()
            .map_or(Name::ROOT, NameBuf::as_name)
    }

    /// Keeps a CNAME target synthesized from a DNAME and returns its index;
    /// `None` if the plan holds [`CNAME_CHAIN_MAX`] already.
    pub(crate) fn add_synth(&mut self, name: NameBuf) -> Option<u8> {
        if self.synth_count == CNAME_CHAIN_MAX {
            return None;
        }
        let index = self.synth_count as u8;
        self.synth[self.synth_count] = Some(name);
        self.synth_count += 1;
        Some(index)
    }

    /// Appends an item; false if the plan is full (it cannot be: the chain
    /// limit bounds the items).
    pub(crate) fn push(&mut self, item: Item) -> bool {
        if self.items.len() >= MAX_ANSWER_ITEMS {
            return false;
        }
        self.items.push(item);
        true
    }

    pub(crate) fn contains_set(&self, set: u32) -> bool {
        self.items()
            .iter()
            .any(|item| matches!(item, Item::RRset { set: s, .. } if *s == set))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's items and proofs never leave their inline room (a spill
    /// would allocate on the answer path): `push` and `add_proof` refuse
    /// past the capacities, and what was kept reads back in order.
    #[test]
    fn a_full_plan_refuses_more_and_never_spills() {
        let mut answer = Answer::new(true);
        for set in 0..MAX_ANSWER_ITEMS as u32 + 3 {
            let kept = answer.push(Item::RRset {
                owner: Owner::Qname,
                set,
            });
            assert_eq!(kept, (set as usize) < MAX_ANSWER_ITEMS, "item {set}");
        }
        assert_eq!(answer.items().len(), MAX_ANSWER_ITEMS);
        assert!(answer.contains_set(MAX_ANSWER_ITEMS as u32 - 1));
        assert!(!answer.contains_set(MAX_ANSWER_ITEMS as u32));
        assert!(!answer.items.spilled());
        for node in 0..MAX_PROOFS as u32 + 3 {
            answer.add_proof(Proof { node, set: 1 });
            // A proof planned already is not planned twice.
            answer.add_proof(Proof { node, set: 1 });
        }
        let nodes: Vec<u32> = answer.proofs().iter().map(|proof| proof.node).collect();
        assert_eq!(nodes, (0..MAX_PROOFS as u32).collect::<Vec<_>>());
        assert!(!answer.proofs.spilled());
        answer.place_soa();
        assert_eq!(answer.soa_at(), MAX_PROOFS);
        assert!(Answer::new(false).items().is_empty() && Answer::new(false).proofs().is_empty());
    }
}
