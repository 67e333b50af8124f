//! Zone-level semantic checks, as kzonecheck does them.
//!
//! The scanner checks each record on its own; this module checks the zone
//! as a whole, over the records of one zone and its origin. What is an
//! error (the zone is rejected) and what is a warning (reported, the zone
//! loads) follows the reference servers, Knot DNS 3.2 (`kzonecheck`, whose
//! wording the messages reuse), NSD 4.6 and BIND 9.18 (`named-checkzone`):
//!
//! | check | severity | Knot | NSD | BIND |
//! |---|---|---|---|---|
//! | record out of zone | error | drops it | error | drops it |
//! | no SOA at the apex, or SOA below it | error | error | error | error |
//! | second, different SOA at the apex | error | keeps one | error | error |
//! | no NS at the apex | error | error | loads | error |
//! | CNAME beside other data (RRSIG, NSEC allowed) | error | error | error | error |
//! | several CNAMEs, or several DNAMEs, at one name | error | error | error | error |
//! | records below a DNAME (RFC 6672 section 2.3) | error | error | error | loads |
//! | NS target in the zone with no A/AAAA ("missing glue") | warning | warning | loads | warning (error at the apex) |
//! | data below a delegation that is not glue (occluded) | warning | silent | silent | silent |
//! | NSEC3 record whose hash parameters differ from the apex NSEC3PARAM, or NSEC3 without NSEC3PARAM | warning | warning | loads | warning |
//! | NSEC3 chain broken (a next hashed owner that is not the next NSEC3 of the chain) | warning | warning | loads | warning |
//! | NSEC chain broken (a next name that is not the next NSEC owner), or an authoritative name without NSEC | warning | warning | loads | warning |
//! | records of one RRset with different TTLs (RRSIGs grouped by type covered) | warning, BIND's TTL served (`crate::ttl`) | silent, serves the last | warning, serves each record's own | warning within a group, serves the first of the last group |
//!
//! The NSEC and NSEC3 checks only read the records: a continuous NSEC3
//! chain covers every hash, so a name without a matching NSEC3 (which only
//! hashing would find) is reported by the server's loader, not here.
//!
//! Duplicate records (equal once names are lowercased) count once, as all
//! three servers merge them. Every loop is bounded by the number of records
//! times the label count of a name (at most 128).
//!
//! The records are grouped by lowercased owner in flat tables (a name
//! arena, a hash index of node ids, one array of record indexes), so a zone
//! of a million records is checked in tens of megabytes and without an
//! allocation per record; any [`RecordList`] can be checked, the compact
//! [`crate::Records`] as well as a `Vec<Record>`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};
use tern_wire::name::{LowerNameBuf, Name, NameBuf, MAX_LABELS, MAX_NAME_LEN};
use tern_wire::types::{RClass, RType};

use crate::print::canonical_rdata;
use crate::records::{RecordList, RecordRef};
use crate::Location;

pub use crate::diagnostic::{Diagnostic, Severity};

/// Whether any diagnostic is an error, that is, whether the zone is rejected.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error)
}

//----------- check_zone -----------------------------------------------------

/// Runs every zone-level check over the records of the zone `origin` and
/// returns the findings sorted by location. `records` must be in file order
/// (the order the scanner produces): a conflict is reported at the record
/// that completes it, as BIND and NSD do.
pub fn check_zone<R: RecordList + ?Sized>(origin: Name<'_>, records: &R) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let zone = Zone::index(origin, records, &mut diagnostics);
    zone.check_apex(&mut diagnostics);
    zone.check_nodes(&mut diagnostics);
    // One TTL per RRset (RFC 2181 section 5.2), read as BIND reads it.
    diagnostics.extend_from_slice(crate::ttl::RrsetTtls::of(records).diagnostics());
    zone.check_below_dname(&mut diagnostics);
    zone.check_delegations(&mut diagnostics);
    zone.check_denial(&mut diagnostics);
    diagnostics.sort_by_key(|diagnostic| {
        let location = diagnostic.location;
        (
            location.file,
            location.line,
            location.col,
            diagnostic.severity,
        )
    });
    diagnostics
}

//----------- Node -----------------------------------------------------------

/// No node: the parent of the apex, or the node of an out-of-zone record.
const NO_NODE: u32 = u32::MAX;

/// One name of the zone tree: an owner, or an ancestor of one up to the
/// origin (an empty non-terminal then, with no members).
#[derive(Clone, Copy, Debug)]
struct Node {
    /// The lowercased name in [`Zone::names`].
    name_start: u32,
    name_len: u8,
    /// A zone cut: an NS RRset below the origin.
    cut: bool,
    /// A strict ancestor below the origin is a cut.
    below_cut: bool,
    /// The parent's id, always smaller than this node's ([`NO_NODE`] for
    /// the apex).
    parent: u32,
    /// The node's records: a range of [`Zone::members`].
    members_start: u32,
    members_len: u32,
}

//----------- Zone -----------------------------------------------------------

/// The in-zone records grouped by lowercased owner, in flat tables: names
/// in one byte arena, a hash index of node ids over it, and the record
/// indexes of every node in one array. Nothing is allocated per record.
struct Zone<'r, R: RecordList + ?Sized> {
    origin: LowerNameBuf,
    records: &'r R,
    names: Vec<u8>,
    /// Every owner and every ancestor of one up to the origin; parents
    /// before children.
    nodes: Vec<Node>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// Record indexes per node, each node's in file order, duplicates
    /// dropped.
    members: Vec<u32>,
}

impl<'r, R: RecordList + ?Sized> Zone<'r, R> {
    fn index(origin: Name<'_>, records: &'r R, diagnostics: &mut Vec<Diagnostic>) -> Self {
        let mut zone = Zone {
            origin: origin.to_lower(),
            records,
            names: Vec::new(),
            nodes: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            members: Vec::new(),
        };
        let origin = zone.origin;
        // Most zones have about one owner per record.
        zone.nodes.reserve(records.len());
        let (hasher, names, nodes) = (&zone.hasher, &zone.names, &zone.nodes);
        zone.index.reserve(records.len(), |&other| {
            hasher.hash_one(node_name(names, nodes, other))
        });
        // The node of each record, in file order.
        let mut node_of: Vec<u32> = Vec::with_capacity(records.len());
        let mut lower = [0u8; MAX_NAME_LEN];
        let mut last = NO_NODE;
        for index in 0..records.len() {
            let record = records.record(index);
            let owner = record.owner;
            if last != NO_NODE && zone.name_bytes(last).eq_ignore_ascii_case(owner.as_bytes()) {
                node_of.push(last);
                continue;
            }
            if !owner.ends_with(origin.as_name()) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    record.location,
                    owner,
                    &format!("record is out of zone {}", origin.as_name()),
                ));
                node_of.push(NO_NODE);
                continue;
            }
            last = zone.ensure_node(lowercase(owner, &mut lower));
            node_of.push(last);
        }
        zone.group(&node_of);
        zone.flag_cuts();
        zone
    }

    //--- Building

    fn hash(&self, lower: &[u8]) -> u64 {
        self.hasher.hash_one(lower)
    }

    /// The node named `lower` (lowercased wire bytes).
    fn find(&self, lower: &[u8]) -> Option<u32> {
        self.index
            .find(self.hash(lower), |&id| self.name_bytes(id) == lower)
            .copied()
    }

    /// The id of the node named `lower` (lowercased, at or below the
    /// origin), created with its missing ancestors. Bound: one step per
    /// label, at most [`MAX_LABELS`].
    fn ensure_node(&mut self, lower: &[u8]) -> u32 {
        let origin_len = self.origin.as_bytes().len();
        // Where the missing suffixes start in `lower`, deepest first.
        let mut missing = [0u8; MAX_LABELS];
        let mut count = 0;
        let mut parent = NO_NODE;
        let mut at = 0;
        while count < MAX_LABELS {
            let suffix = &lower[at..];
            if let Some(found) = self.find(suffix) {
                parent = found;
                break;
            }
            // A wire name is at most 255 octets.
            missing[count] = at as u8;
            count += 1;
            if suffix.len() <= origin_len {
                break;
            }
            at += 1 + usize::from(lower[at]);
        }
        for &at in missing[..count].iter().rev() {
            let name = &lower[usize::from(at)..];
            let id = self.nodes.len() as u32;
            self.nodes.push(Node {
                name_start: self.names.len() as u32,
                name_len: name.len() as u8,
                cut: false,
                below_cut: false,
                parent,
                members_start: 0,
                members_len: 0,
            });
            self.names.extend_from_slice(name);
            let hash = self.hash(name);
            let (hasher, names, nodes) = (&self.hasher, &self.names, &self.nodes);
            self.index.insert_unique(hash, id, |&other| {
                hasher.hash_one(node_name(names, nodes, other))
            });
            parent = id;
        }
        parent
    }

    /// Fills `members` from the node of each record: a counting sort, so
    /// each node's records stay in file order; then drops duplicates
    /// (equal once names are lowercased), keeping the first.
    fn group(&mut self, node_of: &[u32]) {
        let mut starts = vec![0u32; self.nodes.len() + 1];
        for &node in node_of.iter().filter(|&&node| node != NO_NODE) {
            starts[node as usize + 1] += 1;
        }
        for index in 1..starts.len() {
            starts[index] += starts[index - 1];
        }
        let mut grouped = vec![0u32; starts[self.nodes.len()] as usize];
        let mut next = starts.clone();
        for (index, &node) in node_of.iter().enumerate() {
            if node != NO_NODE {
                grouped[next[node as usize] as usize] = index as u32;
                next[node as usize] += 1;
            }
        }
        let records = self.records;
        let mut members = Vec::with_capacity(grouped.len());
        let mut keyed: Vec<(RType, RClass, Cow<'r, [u8]>, u32)> = Vec::new();
        for (id, node) in self.nodes.iter_mut().enumerate() {
            let group = &grouped[starts[id] as usize..starts[id + 1] as usize];
            node.members_start = members.len() as u32;
            if group.len() > 1 {
                keyed.clear();
                keyed.extend(group.iter().map(|&index| {
                    let record = records.record(index as usize);
                    let canonical = canonical_rdata(record.rtype, record.rdata);
                    (record.rtype, record.class, canonical, index)
                }));
                keyed.sort_unstable();
                let mut duplicates: Vec<u32> = keyed
                    .windows(2)
                    .filter(|pair| {
                        pair[0].0 == pair[1].0 && pair[0].1 == pair[1].1 && pair[0].2 == pair[1].2
                    })
                    .map(|pair| pair[1].3)
                    .collect();
                duplicates.sort_unstable();
                members.extend(
                    group
                        .iter()
                        .filter(|index| duplicates.binary_search(index).is_err()),
                );
            } else {
                members.extend_from_slice(group);
            }
            node.members_len = members.len() as u32 - node.members_start;
        }
        self.members = members;
    }

    /// Marks the cuts (non-apex NS owners), then the nodes below one, in
    /// one forward pass (parents come first).
    fn flag_cuts(&mut self) {
        for id in 0..self.nodes.len() {
            let node = self.nodes[id];
            let below_cut = node.parent != NO_NODE && {
                let parent = &self.nodes[node.parent as usize];
                parent.cut || parent.below_cut
            };
            let cut = node.parent != NO_NODE && self.first_of(id as u32, RType::NS).is_some();
            let node = &mut self.nodes[id];
            node.cut = cut;
            node.below_cut = below_cut;
        }
    }

    //--- Reading

    fn name_bytes(&self, node: u32) -> &[u8] {
        node_name(&self.names, &self.nodes, node)
    }

    fn name(&self, node: u32) -> Name<'_> {
        Name::from_wire(self.name_bytes(node)).expect("node names are lowercased valid names")
    }

    fn apex(&self) -> Option<u32> {
        self.find(self.origin.as_bytes())
    }

    /// The indexes of a node's records, in file order.
    fn members(&self, node: u32) -> &[u32] {
        let node = &self.nodes[node as usize];
        let start = node.members_start as usize;
        &self.members[start..start + node.members_len as usize]
    }

    /// The nodes that own records, with their records.
    fn owners(&self) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        (0..self.nodes.len() as u32)
            .map(|node| (node, self.members(node)))
            .filter(|(_, members)| !members.is_empty())
    }

    /// The `n`th (from 0) record of a type at a node.
    fn nth_of(&self, node: u32, rtype: RType, n: usize) -> Option<usize> {
        self.members(node)
            .iter()
            .map(|&index| index as usize)
            .filter(|&index| self.records.rtype(index) == rtype)
            .nth(n)
    }

    fn first_of(&self, node: u32, rtype: RType) -> Option<usize> {
        self.nth_of(node, rtype, 0)
    }

    fn has_address(&self, node: u32) -> bool {
        self.members(node)
            .iter()
            .any(|&index| matches!(self.records.rtype(index as usize), RType::A | RType::AAAA))
    }

    /// The location of the first record of the file, where findings about
    /// what is missing are reported.
    fn first_location(&self) -> Location {
        if self.records.is_empty() {
            return Location::default();
        }
        self.records.record(0).location
    }

    //--- Checks

    /// One SOA at the apex and none elsewhere; NS at the apex.
    fn check_apex(&self, diagnostics: &mut Vec<Diagnostic>) {
        let origin = self.origin.as_name();
        let apex = self.apex();
        let apex_nth = |rtype, n| apex.and_then(|apex| self.nth_of(apex, rtype, n));
        match apex_nth(RType::SOA, 0) {
            None => diagnostics.push(Diagnostic::new(
                Severity::Error,
                self.first_location(),
                origin,
                "missing SOA at the zone apex",
            )),
            Some(_) => {
                if let Some(second) = apex_nth(RType::SOA, 1) {
                    diagnostics.push(Diagnostic::new(
                        Severity::Error,
                        self.records.record(second).location,
                        origin,
                        "multiple SOA records",
                    ));
                }
            }
        }
        if apex_nth(RType::NS, 0).is_none() {
            let location = apex_nth(RType::SOA, 0).map_or_else(
                || self.first_location(),
                |soa| self.records.record(soa).location,
            );
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                location,
                origin,
                "missing NS at the zone apex",
            ));
        }
        for (node, _) in self.owners() {
            if Some(node) == apex {
                continue;
            }
            if let Some(soa) = self.first_of(node, RType::SOA) {
                let soa = self.records.record(soa);
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    soa.location,
                    soa.owner,
                    "SOA record not at the zone apex",
                ));
            }
        }
    }

    /// CNAME beside other data, several CNAMEs, several DNAMEs.
    fn check_nodes(&self, diagnostics: &mut Vec<Diagnostic>) {
        for (node, members) in self.owners() {
            for (rtype, what) in [
                (RType::CNAME, "multiple CNAME records"),
                (RType::DNAME, "multiple DNAME records"),
            ] {
                if let Some(second) = self.nth_of(node, rtype, 1) {
                    let second = self.records.record(second);
                    diagnostics.push(Diagnostic::new(
                        Severity::Error,
                        second.location,
                        second.owner,
                        what,
                    ));
                }
            }
            let Some(cname_index) = self.first_of(node, RType::CNAME) else {
                continue;
            };
            let other = members.iter().map(|&index| index as usize).find(|&index| {
                !matches!(
                    self.records.rtype(index),
                    RType::CNAME | RType::RRSIG | RType::NSEC
                )
            });
            if let Some(other_index) = other {
                // Reported at whichever of the two came second in the file.
                let later = self.records.record(other_index.max(cname_index));
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    later.location,
                    later.owner,
                    "another record exists beside CNAME",
                ));
            }
        }
    }

    /// No records below a DNAME (RFC 6672 section 2.3): one error per DNAME
    /// owner, at its first descendant record.
    fn check_below_dname(&self, diagnostics: &mut Vec<Diagnostic>) {
        let has_dname: Vec<bool> = (0..self.nodes.len() as u32)
            .map(|node| self.first_of(node, RType::DNAME).is_some())
            .collect();
        if !has_dname.contains(&true) {
            return;
        }
        // DNAME owner -> its first descendant record.
        let mut first_child: HashMap<u32, u32> = HashMap::new();
        for (node, members) in self.owners() {
            let first = members[0];
            // Parent ids strictly decrease, so this walk ends.
            let mut ancestor = self.nodes[node as usize].parent;
            while ancestor != NO_NODE {
                if has_dname[ancestor as usize] {
                    let entry = first_child.entry(ancestor).or_insert(first);
                    *entry = (*entry).min(first);
                }
                ancestor = self.nodes[ancestor as usize].parent;
            }
        }
        for (dname_owner, index) in first_child {
            let record = self.records.record(index as usize);
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                record.location,
                self.name(dname_owner),
                &format!("child record exists under DNAME ({})", record.owner),
            ));
        }
    }

    /// Missing glue for the NS RRsets at the apex and at delegations, as
    /// Knot's `check_delegation` decides it, and occluded data below cuts.
    fn check_delegations(&self, diagnostics: &mut Vec<Diagnostic>) {
        let origin = self.origin.as_name();
        let apex = self.apex();
        let mut glue_targets: Vec<u32> = Vec::new();
        let mut lower = [0u8; MAX_NAME_LEN];
        for (node, members) in self.owners() {
            if Some(node) != apex && !self.nodes[node as usize].cut {
                continue;
            }
            let mut reported = false;
            for &index in members {
                if self.records.rtype(index as usize) != RType::NS {
                    continue;
                }
                let record = self.records.record(index as usize);
                let Ok(target) = Name::from_wire(record.rdata) else {
                    continue;
                };
                let target_lower = lowercase(target, &mut lower);
                if let Some(target_node) = self.find(target_lower) {
                    glue_targets.push(target_node);
                }
                if reported || !target.ends_with(origin) || self.has_glue(node, target_lower) {
                    continue;
                }
                reported = true;
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &format!("missing glue record ({target} has no A or AAAA)"),
                ));
            }
        }
        glue_targets.sort_unstable();
        glue_targets.dedup();
        for (node, members) in self.owners() {
            let Node { cut, below_cut, .. } = self.nodes[node as usize];
            if !cut && !below_cut {
                continue;
            }
            let glue_target = glue_targets.binary_search(&node).is_ok();
            let occluded = members.iter().map(|&index| index as usize).find(|&index| {
                let rtype = self.records.rtype(index);
                let glue = matches!(rtype, RType::A | RType::AAAA) && glue_target;
                let delegation_data = !below_cut
                    && matches!(rtype, RType::NS | RType::DS | RType::RRSIG | RType::NSEC);
                !glue && !delegation_data
            });
            if let Some(index) = occluded {
                let record = self.records.record(index);
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &format!(
                        "{} record below a delegation is not authoritative",
                        record.rtype
                    ),
                ));
            }
        }
    }

    /// Whether the in-zone NS target `target` (lowercased) of the NS RRset
    /// at `ns_owner` has an address: at its own node, or, when the node
    /// does not exist, at the wildcard below its closest encloser. Targets
    /// whose closest encloser is another delegation (or below one) are not
    /// checked.
    fn has_glue(&self, ns_owner: u32, target: &[u8]) -> bool {
        let mut at = 0;
        let encloser = loop {
            if let Some(node) = self.find(&target[at..]) {
                break node;
            }
            match target[at] {
                0 => return true,
                len => at += 1 + usize::from(len),
            }
        };
        if at == 0 {
            return self.has_address(encloser);
        }
        let Node { cut, below_cut, .. } = self.nodes[encloser as usize];
        if encloser != ns_owner && (cut || below_cut) {
            return true;
        }
        match NameBuf::concat(b"\x01*", self.name(encloser)) {
            Ok(wildcard) => self
                .find(wildcard.as_bytes())
                .is_some_and(|node| self.has_address(node)),
            Err(_) => false,
        }
    }
}

/// The name of `node` in a names arena.
fn node_name<'n>(names: &'n [u8], nodes: &[Node], node: u32) -> &'n [u8] {
    let node = &nodes[node as usize];
    let start = node.name_start as usize;
    &names[start..start + usize::from(node.name_len)]
}

/// `name` with ASCII letters lowercased, in `buffer`.
fn lowercase<'b>(name: Name<'_>, buffer: &'b mut [u8; MAX_NAME_LEN]) -> &'b [u8] {
    let lower = &mut buffer[..name.len()];
    lower.copy_from_slice(name.as_bytes());
    lower.make_ascii_lowercase();
    lower
}

//----------- Denial of existence --------------------------------------------

/// Hash algorithm, iterations and salt of NSEC3 or NSEC3PARAM RDATA.
type Nsec3Params<'a> = (u8, u16, &'a [u8]);

/// The parameters at the start of NSEC3 or NSEC3PARAM RDATA, and the rest
/// of the RDATA.
fn nsec3_params(rdata: &[u8]) -> Option<(Nsec3Params<'_>, &[u8])> {
    let iterations = u16::from_be_bytes([*rdata.get(2)?, *rdata.get(3)?]);
    let salt_len = usize::from(*rdata.get(4)?);
    let salt = rdata.get(5..5 + salt_len)?;
    Some(((rdata[0], iterations, salt), &rdata[5 + salt_len..]))
}

/// The next hashed owner field of NSEC3 RDATA after the salt.
fn nsec3_next(rest: &[u8]) -> Option<&[u8]> {
    let len = usize::from(*rest.first()?);
    rest.get(1..1 + len)
}

/// base32hex (RFC 4648 section 7, no padding, either case) to octets.
fn base32hex(label: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(label.len() * 5 / 8);
    crate::rdata::text::decode_base32hex(label, &mut out).ok()?;
    Some(out)
}

/// base32hex in lower case, as owner names are written.
fn base32hex_text(octets: &[u8]) -> String {
    data_encoding::BASE32HEX_NOPAD
        .encode(octets)
        .to_ascii_lowercase()
}

impl<R: RecordList + ?Sized> Zone<'_, R> {
    /// The indexes of the records of one type in the zone, by location
    /// (file order).
    fn all_of(&self, rtype: RType) -> Vec<usize> {
        let mut found: Vec<(Location, usize)> = self
            .members
            .iter()
            .map(|&index| index as usize)
            .filter(|&index| self.records.rtype(index) == rtype)
            .map(|index| (self.records.record(index).location, index))
            .collect();
        found.sort_by_key(|(location, _)| (location.file, location.line, location.col));
        found.into_iter().map(|(_, index)| index).collect()
    }

    /// NSEC3 records against the apex NSEC3PARAM and against each other,
    /// and the NSEC chain against the names of the zone. All warnings: the
    /// zone still loads, but validators will reject some of its answers.
    fn check_denial(&self, diagnostics: &mut Vec<Diagnostic>) {
        self.check_nsec3(diagnostics);
        self.check_nsec(diagnostics);
    }

    fn check_nsec3(&self, diagnostics: &mut Vec<Diagnostic>) {
        let origin = self.origin.as_name();
        let param = self
            .apex()
            .and_then(|apex| self.first_of(apex, RType::NSEC3PARAM))
            .map(|index| self.records.record(index));
        let params = param
            .and_then(|record| nsec3_params(record.rdata))
            .map(|(p, _)| p);
        let records = self.all_of(RType::NSEC3);
        let Some(params) = params else {
            if let Some(&first) = records.first() {
                let first = self.records.record(first);
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    first.location,
                    first.owner,
                    "NSEC3 records without an NSEC3PARAM at the apex",
                ));
            }
            return;
        };
        // (owner hash, next hashed owner, record) of the chain.
        let mut chain: Vec<(Vec<u8>, &[u8], RecordRef<'_>)> = Vec::new();
        for index in records {
            let record = self.records.record(index);
            let owner = record.owner;
            let Some((own, rest)) = nsec3_params(record.rdata) else {
                continue;
            };
            if own != params {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    owner,
                    &format!(
                        "NSEC3 parameters (algorithm {}, {} iterations, salt {}) differ from \
                         the NSEC3PARAM's (algorithm {}, {} iterations, salt {})",
                        own.0,
                        own.1,
                        hex(own.2),
                        params.0,
                        params.1,
                        hex(params.2)
                    ),
                ));
                continue;
            }
            let (Some(hash), Some(next)) = (base32hex(owner.first_label()), nsec3_next(rest))
            else {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    owner,
                    "NSEC3 owner is not a base32hex hash",
                ));
                continue;
            };
            chain.push((hash, next, record));
        }
        if chain.is_empty() {
            if let Some(param) = param {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    param.location,
                    origin,
                    "NSEC3PARAM without an NSEC3 chain with its parameters",
                ));
            }
            return;
        }
        chain.sort_by(|a, b| a.0.cmp(&b.0));
        for (index, (_, next, record)) in chain.iter().enumerate() {
            let expected = &chain[(index + 1) % chain.len()].0;
            if *next != expected.as_slice() {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &format!(
                        "NSEC3 chain broken: next hashed owner {} is not the next NSEC3 of the \
                         chain ({})",
                        base32hex_text(next),
                        base32hex_text(expected)
                    ),
                ));
            }
        }
    }

    /// Only for zones with an NSEC chain, which starts at the apex (a lone
    /// NSEC record elsewhere is just data).
    fn check_nsec(&self, diagnostics: &mut Vec<Diagnostic>) {
        if self
            .apex()
            .and_then(|apex| self.first_of(apex, RType::NSEC))
            .is_none()
        {
            return;
        }
        let mut chain: Vec<(RecordRef<'_>, Name<'_>)> = self
            .all_of(RType::NSEC)
            .into_iter()
            .map(|index| self.records.record(index))
            .filter_map(|record| Some((record, Name::parse_prefix(record.rdata).ok()?.0)))
            .collect();
        if chain.is_empty() {
            return;
        }
        chain.sort_by(|a, b| a.0.owner.canonical_cmp(b.0.owner));
        for (index, (record, next)) in chain.iter().enumerate() {
            let expected = chain[(index + 1) % chain.len()].0.owner;
            if !next.eq_ignore_case(expected) {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &format!(
                        "NSEC chain broken: next name {next} is not the next NSEC owner \
                         ({expected})"
                    ),
                ));
            }
        }
        // Every authoritative name with data needs its NSEC (RFC 4035
        // section 2.3): delegation points too, names below a cut not.
        for (node, members) in self.owners() {
            if self.first_of(node, RType::NSEC).is_some() || self.nodes[node as usize].below_cut {
                continue;
            }
            let record = self.records.record(members[0] as usize);
            diagnostics.push(Diagnostic::new(
                Severity::Warning,
                record.location,
                record.owner,
                "name has no NSEC record: the NSEC chain does not cover it",
            ));
        }
    }
}

fn hex(octets: &[u8]) -> String {
    if octets.is_empty() {
        return "-".to_string();
    }
    data_encoding::HEXUPPER.encode(octets)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Record;

    /// Builds records from `owner [TTL] TYPE rdata` lines (TTL 300 when
    /// left out), with a tiny reader for the handful of types these tests
    /// use (the real scanner is tested in its own modules). Line numbers are
    /// the 1-based index in `lines`.
    fn zone(lines: &[&str]) -> Vec<Record> {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                let mut fields: Vec<&str> = line.split_whitespace().collect();
                let ttl = match fields.get(1).and_then(|field| field.parse().ok()) {
                    Some(ttl) => {
                        fields.remove(1);
                        ttl
                    }
                    None => 300,
                };
                let owner =
                    NameBuf::from_text(fields[0].as_bytes(), Some(origin.as_name())).unwrap();
                let rtype = RType::from_text(fields[1].as_bytes()).unwrap();
                let name = |text: &str| {
                    NameBuf::from_text(text.as_bytes(), Some(origin.as_name()))
                        .unwrap()
                        .as_bytes()
                        .to_vec()
                };
                let rdata = match rtype {
                    RType::A => fields[2]
                        .split('.')
                        .map(|octet| octet.parse().unwrap())
                        .collect(),
                    RType::AAAA => [[0u8; 15].as_slice(), &[1]].concat(),
                    RType::SOA => [name("ns"), name("host"), vec![0; 20]].concat(),
                    RType::MX => [vec![0, 10], name(fields[2])].concat(),
                    RType::TXT => {
                        [vec![fields[2].len() as u8], fields[2].as_bytes().to_vec()].concat()
                    }
                    RType::NSEC => [name(fields[2]), vec![0, 1, 0x04]].concat(),
                    // `ITERATIONS` (no salt)
                    RType::NSEC3PARAM => vec![1, 0, 0, fields[2].parse().unwrap(), 0],
                    // `ITERATIONS:NEXT-HASHED-OWNER`
                    RType::NSEC3 => {
                        let (iterations, next) = fields[2].split_once(':').unwrap();
                        let next = base32hex(next.as_bytes()).unwrap();
                        let head = vec![1, 0, 0, iterations.parse().unwrap(), 0];
                        [head, vec![next.len() as u8], next, vec![0, 1, 0x40]].concat()
                    }
                    RType::DS => vec![0, 1, 8, 2, 0xaa],
                    // `[COVERED [SIGNATURE-OCTET]]`, covering CNAME by default
                    RType::RRSIG => [
                        fields
                            .get(2)
                            .map_or(RType::CNAME, |t| RType::from_text(t.as_bytes()).unwrap())
                            .0
                            .to_be_bytes()
                            .to_vec(),
                        vec![8, 1, 0, 0, 0, 1],
                        vec![0; 10],
                        name("example."),
                        vec![fields.get(3).map_or(1, |octet| octet.parse().unwrap())],
                    ]
                    .concat(),
                    _ => name(fields[2]),
                };
                Record {
                    owner,
                    class: RClass::IN,
                    ttl,
                    rtype,
                    rdata,
                    location: Location {
                        file: 0,
                        line: index as u32 + 1,
                        col: 1,
                    },
                }
            })
            .collect()
    }

    const APEX: [&str; 3] = ["@ SOA", "@ NS ns", "ns A 192.0.2.1"];

    fn check(extra: &[&str]) -> Vec<String> {
        let lines: Vec<&str> = APEX.iter().chain(extra).copied().collect();
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        check_zone(origin.as_name(), &zone(&lines))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn clean_zone_has_no_findings() {
        assert_eq!(
            check(&["www A 192.0.2.2", "sub NS ns.sub", "ns.sub A 192.0.2.3"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn apex_soa_and_ns() {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let findings: Vec<String> = check_zone(origin.as_name(), &zone(&["www A 192.0.2.2"]))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            findings,
            [
                "1:1: error: example.: missing SOA at the zone apex",
                "1:1: error: example.: missing NS at the zone apex",
            ]
        );
        let findings = check_zone(origin.as_name(), &zone(&["@ SOA", "www A 192.0.2.2"]));
        assert_eq!(findings.len(), 1);
        assert_eq!(
            findings[0].to_string(),
            "1:1: error: example.: missing NS at the zone apex"
        );
        assert_eq!(
            check(&["www SOA"]),
            ["4:1: error: www.example.: SOA record not at the zone apex"]
        );
    }

    #[test]
    fn second_soa_is_an_error_but_a_duplicate_is_not() {
        assert_eq!(check(&["@ SOA"]), Vec::<String>::new());
        let mut records = zone(&APEX);
        let mut second = records[0].clone();
        if let Some(last) = second.rdata.last_mut() {
            *last = 7;
        }
        second.location.line = 9;
        records.push(second);
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let findings = check_zone(origin.as_name(), &records);
        assert_eq!(
            findings[0].to_string(),
            "9:1: error: example.: multiple SOA records"
        );
        assert!(has_errors(&findings));
    }

    #[test]
    fn cname_conflicts() {
        assert_eq!(
            check(&["email CNAME mail", "email A 192.0.2.2"]),
            ["5:1: error: email.example.: another record exists beside CNAME"]
        );
        assert_eq!(
            check(&["email A 192.0.2.2", "EMAIL CNAME mail"]),
            ["5:1: error: EMAIL.example.: another record exists beside CNAME"]
        );
        assert_eq!(
            check(&["c CNAME a", "c CNAME b"]),
            ["5:1: error: c.example.: multiple CNAME records"]
        );
        assert_eq!(
            check(&["c CNAME a", "c CNAME A"]),
            Vec::<String>::new(),
            "case duplicates merge"
        );
        assert_eq!(
            check(&["c CNAME a", "c RRSIG", "c NSEC d"]),
            Vec::<String>::new()
        );
        assert_eq!(
            check(&["c CNAME a", "c DNAME b"]),
            ["5:1: error: c.example.: another record exists beside CNAME"]
        );
        assert_eq!(
            check(&["@ CNAME foo"]),
            ["4:1: error: example.: another record exists beside CNAME"]
        );
    }

    /// A node's records need not be consecutive in the file, nor spelled
    /// alike; duplicates among them count once.
    #[test]
    fn interleaved_owners_group() {
        assert_eq!(
            check(&["email A 192.0.2.2", "www A 192.0.2.3", "EMAIL CNAME mail"]),
            ["6:1: error: EMAIL.example.: another record exists beside CNAME"]
        );
        assert_eq!(
            check(&[
                "c CNAME a",
                "www A 192.0.2.3",
                "C CNAME A",
                "x TXT x",
                "c CNAME b"
            ]),
            ["8:1: error: c.example.: multiple CNAME records"]
        );
    }

    /// An RRset's records with different TTLs (`crate::ttl`): a warning at
    /// each record whose TTL differs from the first of its RRset in its
    /// group, and at a later group (`WWW` is spelled otherwise: another
    /// group, as in BIND) whose TTL replaces the earlier; RRSIGs are grouped
    /// by the type they cover, and other types and owners do not mix.
    #[test]
    fn differing_ttls_are_a_warning_at_the_record() {
        assert_eq!(
            check(&[
                "www 600 A 192.0.2.1",
                "www 100 A 192.0.2.2",
                "www 600 A 192.0.2.3",
                "WWW 900 A 192.0.2.4",
                "www 100 TXT x",
                "mail 100 A 192.0.2.1",
            ]),
            [
                "5:1: warning: www.example.: TTL 100 differs from the TTL 600 of the A record \
                 at line 4 before it; the RRset is served with TTL 900",
                "7:1: warning: WWW.example.: TTL 900 replaces the TTL 600 of the A records at \
                 line 4, an earlier group of this name (the last group's TTL is kept); the \
                 RRset is served with TTL 900",
            ]
        );
        assert_eq!(
            check(&[
                "www 300 A 192.0.2.1",
                "www 60 TXT x",
                "www 300 RRSIG A",
                "www 60 RRSIG TXT",
            ]),
            Vec::<String>::new()
        );
        assert_eq!(
            check(&[
                "www 300 A 192.0.2.1",
                "www 300 RRSIG A 1",
                "www 30 RRSIG A 2"
            ]),
            [
                "6:1: warning: www.example.: TTL 30 differs from the TTL 300 of the RRSIG record \
                 at line 5 before it; the RRset is served with TTL 300"
            ]
        );
    }

    #[test]
    fn dname_conflicts() {
        assert_eq!(
            check(&["d DNAME a", "d DNAME b"]),
            ["5:1: error: d.example.: multiple DNAME records"]
        );
        assert_eq!(
            check(&["dn DNAME example.net.", "a.b.dn A 192.0.2.9", "x.dn TXT x"]),
            ["5:1: error: dn.example.: child record exists under DNAME (a.b.dn.example.)"]
        );
        assert_eq!(
            check(&["dn DNAME example.net.", "dn TXT x"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn out_of_zone() {
        assert_eq!(
            check(&["other.net. A 1.1.1.1", "example.com. TXT x"]),
            [
                "4:1: error: other.net.: record is out of zone example.",
                "5:1: error: example.com.: record is out of zone example.",
            ]
        );
    }

    #[test]
    fn missing_glue_is_a_warning() {
        let findings = check(&["sub NS ns.sub", "sub NS ns2.sub", "ns2.sub A 192.0.2.5"]);
        assert_eq!(findings, ["4:1: warning: sub.example.: missing glue record (ns.sub.example. has no A or AAAA)"]);
        // Out of bailiwick, covered by a wildcard, inside another delegation.
        assert_eq!(
            check(&[
                "sub NS ns.example.net.",
                "w NS ns.wild",
                "*.wild AAAA",
                "sub2 NS ns.sub3",
                "sub3 NS ns.sub3",
                "ns.sub3 A 192.0.2.6",
            ]),
            Vec::<String>::new()
        );
        // The apex NS counts too (BIND even rejects this one).
        assert_eq!(
            check(&["@ NS ns2"]),
            ["4:1: warning: example.: missing glue record (ns2.example. has no A or AAAA)"]
        );
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let findings = check_zone(
            origin.as_name(),
            &zone(&["@ SOA", "@ NS ns", "sub NS ns.sub"]),
        );
        assert!(!has_errors(&findings));
        assert_eq!(findings.len(), 2);
    }

    #[test]
    fn occluded_data_is_a_warning() {
        assert_eq!(
            check(&[
                "sub NS ns.sub",
                "ns.sub A 192.0.2.5",
                "www.sub A 192.0.2.6",
                "sub TXT x",
                "sub DS"
            ]),
            [
                "6:1: warning: www.sub.example.: A record below a delegation is not authoritative",
                "7:1: warning: sub.example.: TXT record below a delegation is not authoritative",
            ]
        );
        // An address at the cut itself is glue when it is an NS target.
        assert_eq!(
            check(&["sub NS sub", "sub A 192.0.2.7"]),
            Vec::<String>::new()
        );
    }

    /// The semantic negative cases of the shared corpora, each rejected
    /// (or warned about) with the message the reference tools give.
    #[test]
    fn corpus_negative_cases() {
        let corpora =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora");
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "knot/tests__knot__semantic_check_data__cname_extra_01.zone",
                "example.com.",
                "18:",
                "error: email.example.com.: another record exists beside CNAME",
            ),
            (
                "knot/tests__knot__semantic_check_data__cname_multiple.zone",
                "example.com.",
                "15:",
                "error: email.example.com.: multiple CNAME records",
            ),
            (
                "knot/tests__knot__semantic_check_data__soa.multiple",
                "example.com.",
                "5:",
                "error: example.com.: multiple SOA records",
            ),
            (
                "knot/tests__knot__semantic_check_data__ns_apex.missing",
                "example.com.",
                "",
                "error: example.com.: missing NS at the zone apex",
            ),
            (
                "bind9/bin__tests__system__checkzone__zones__bad-cname-and-a.db",
                "example.",
                "6:",
                "error: bad.example.: another record exists beside CNAME",
            ),
        ];
        for (path, origin, line, expected) in cases {
            let origin = NameBuf::from_text(origin.as_bytes(), None).unwrap();
            let zone = crate::parse_file(
                &corpora.join(path),
                origin.as_name(),
                &crate::Options::default(),
            )
            .unwrap_or_else(|errors| {
                panic!("{path} must scan (its problem is semantic): {errors}")
            });
            let findings = check_zone(origin.as_name(), &zone.records);
            assert!(has_errors(&findings), "{path}: {findings:?}");
            let rendered: Vec<String> = findings.iter().map(ToString::to_string).collect();
            assert!(
                rendered
                    .iter()
                    .any(|found| found.starts_with(line) && found.ends_with(expected)),
                "{path}: expected {line}{expected:?} in {rendered:?}"
            );
        }
    }

    #[test]
    fn render_names_the_file() {
        let diagnostic = Diagnostic::new(
            Severity::Warning,
            Location {
                file: 0,
                line: 12,
                col: 7,
            },
            Name::ROOT,
            "missing glue record",
        );
        assert_eq!(
            diagnostic.render("zones/example.zone"),
            "zones/example.zone:12:7: warning: .: missing glue record"
        );
    }

    const H1: &str = "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom";
    const H2: &str = "2t7b4g4vsa5smi47k61mv5bv1a22bojr";
    const H3: &str = "35mthgpgcu1qg68fab165klnsnk3dpvl";

    #[test]
    fn base32hex_round_trip() {
        for text in [H1, H2, H3] {
            let octets = base32hex(text.as_bytes()).unwrap();
            assert_eq!(octets.len(), 20);
            assert_eq!(base32hex_text(&octets), text);
        }
        assert_eq!(base32hex(b"w"), None);
    }

    #[test]
    fn nsec3_chain_checks() {
        let line =
            |owner: &str, iterations: u8, next: &str| format!("{owner} NSEC3 {iterations}:{next}");
        let good = [line(H1, 5, H2), line(H2, 5, H3), line(H3, 5, H1)];
        let mut lines: Vec<&str> = vec!["@ NSEC3PARAM 5"];
        lines.extend(good.iter().map(String::as_str));
        assert_eq!(check(&lines), Vec::<String>::new());

        // One record with other parameters (it leaves the chain, which is
        // then broken at H1), one that skips a link.
        let bad = [line(H1, 5, H3), line(H2, 7, H3), line(H3, 5, H1)];
        let mut lines: Vec<&str> = vec!["@ NSEC3PARAM 5"];
        lines.extend(bad.iter().map(String::as_str));
        let findings = check(&lines);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].contains(
            "warning: 2t7b4g4vsa5smi47k61mv5bv1a22bojr.example.: NSEC3 parameters (algorithm 1, 7 \
             iterations, salt -) differ from the NSEC3PARAM's (algorithm 1, 5 iterations, salt -)"
        ));
        let skipping = [line(H1, 5, H3), line(H2, 5, H3), line(H3, 5, H1)];
        let mut lines: Vec<&str> = vec!["@ NSEC3PARAM 5"];
        lines.extend(skipping.iter().map(String::as_str));
        assert_eq!(
            check(&lines),
            [format!(
                "5:1: warning: {H1}.example.: NSEC3 chain broken: next hashed owner {H3} is not \
                 the next NSEC3 of the chain ({H2})"
            )]
        );

        // NSEC3 without NSEC3PARAM, and NSEC3PARAM without a chain.
        let lone = line(H1, 5, H1);
        assert_eq!(
            check(&[lone.as_str()]),
            [format!(
                "4:1: warning: {H1}.example.: NSEC3 records without an NSEC3PARAM at the apex"
            )]
        );
        assert_eq!(
            check(&["@ NSEC3PARAM 5"]),
            ["4:1: warning: example.: NSEC3PARAM without an NSEC3 chain with its parameters"]
        );
    }

    #[test]
    fn nsec_chain_checks() {
        let good = [
            "@ NSEC ns",
            "ns NSEC www",
            "www A 192.0.2.2",
            "www NSEC example.",
        ];
        assert_eq!(check(&good), Vec::<String>::new());
        // www lost its NSEC: ns's NSEC now points at a name with no NSEC,
        // and www is not covered.
        let broken = [
            "@ NSEC ns",
            "ns NSEC www",
            "www A 192.0.2.2",
            "sub NS ns.sub",
            "sub NSEC example.",
            "ns.sub A 192.0.2.3",
        ];
        assert_eq!(
            check(&broken),
            [
                "5:1: warning: ns.example.: NSEC chain broken: next name www.example. is not the next \
                 NSEC owner (sub.example.)",
                "6:1: warning: www.example.: name has no NSEC record: the NSEC chain does not cover it",
            ]
        );
    }
}
