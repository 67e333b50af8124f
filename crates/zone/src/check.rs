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
//!
//! The NSEC and NSEC3 checks only read the records: a continuous NSEC3
//! chain covers every hash, so a name without a matching NSEC3 (which only
//! hashing would find) is reported by the server's loader, not here.
//!
//! Duplicate records (equal once names are lowercased) count once, as all
//! three servers merge them. Every loop is bounded by the number of records
//! times the label count of a name (at most 128).

use std::collections::{HashMap, HashSet};
use std::fmt;

use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::RType;

use crate::print::canonical_rdata;
use crate::{Location, Record};

//----------- Severity -------------------------------------------------------

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The zone must not be loaded.
    Error,
    /// The zone loads; the operator is told.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

//----------- Diagnostic -----------------------------------------------------

/// One finding of [`check_zone`], located at the record that shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The record the finding is reported at.
    pub location: Location,
    /// What is wrong, starting with the owner name it concerns, e.g.
    /// `email.example.com.: another record exists beside CNAME`.
    pub message: String,
}

impl Diagnostic {
    fn new(severity: Severity, location: Location, owner: Name<'_>, what: &str) -> Self {
        Diagnostic {
            severity,
            location,
            message: format!("{owner}: {what}"),
        }
    }

    /// The diagnostic as `FILE:LINE:COL: error: MESSAGE`, given the name of
    /// the file its location points into.
    pub fn render(&self, file: &str) -> String {
        format!(
            "{file}:{}:{}: {}: {}",
            self.location.line, self.location.col, self.severity, self.message
        )
    }
}

impl fmt::Display for Diagnostic {
    /// `LINE:COL: error: MESSAGE`; see [`Diagnostic::render`] for the form
    /// with the file name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.location.line, self.location.col, self.severity, self.message
        )
    }
}

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
pub fn check_zone(origin: Name<'_>, records: &[Record]) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let zone = Zone::index(origin, records, &mut diagnostics);
    zone.check_apex(&mut diagnostics);
    zone.check_nodes(&mut diagnostics);
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

//----------- Zone -----------------------------------------------------------

/// The in-zone records grouped by lowercased owner.
struct Zone<'r> {
    origin: LowerNameBuf,
    records: &'r [Record],
    /// Record indexes per owner, in file order, duplicates dropped.
    nodes: HashMap<LowerNameBuf, Vec<usize>>,
    /// Every owner and every ancestor of one up to the origin: the nodes
    /// that exist in the zone tree, empty non-terminals included.
    existing: HashSet<LowerNameBuf>,
    /// Owners of a non-apex NS RRset.
    cuts: HashSet<LowerNameBuf>,
}

impl<'r> Zone<'r> {
    fn index(origin: Name<'_>, records: &'r [Record], diagnostics: &mut Vec<Diagnostic>) -> Self {
        let origin = origin.to_lower();
        let mut nodes: HashMap<LowerNameBuf, Vec<usize>> = HashMap::new();
        let mut existing = HashSet::new();
        let mut cuts = HashSet::new();
        for (index, record) in records.iter().enumerate() {
            let owner = record.owner.as_name();
            if !owner.ends_with(origin.as_name()) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    record.location,
                    owner,
                    &format!("record is out of zone {}", origin.as_name()),
                ));
                continue;
            }
            let key = owner.to_lower();
            let node = nodes.entry(key).or_default();
            let canonical = canonical_rdata(record.rtype, &record.rdata);
            let duplicate = node.iter().any(|&other| {
                let other = &records[other];
                other.rtype == record.rtype
                    && other.class == record.class
                    && canonical_rdata(other.rtype, &other.rdata) == canonical
            });
            if duplicate {
                continue;
            }
            node.push(index);
            if record.rtype == RType::NS && key != origin {
                cuts.insert(key);
            }
            let mut name = owner;
            while existing.insert(name.to_lower()) && name.len() > origin.as_name().len() {
                match name.parent() {
                    Some(parent) => name = parent,
                    None => break,
                }
            }
        }
        Zone {
            origin,
            records,
            nodes,
            existing,
            cuts,
        }
    }

    fn node(&self, name: Name<'_>) -> &[usize] {
        self.nodes.get(&name.to_lower()).map_or(&[], Vec::as_slice)
    }

    fn first_of(&self, node: &[usize], rtype: RType) -> Option<&'r Record> {
        node.iter()
            .map(|&index| &self.records[index])
            .find(|record| record.rtype == rtype)
    }

    fn has_address(&self, name: Name<'_>) -> bool {
        self.node(name)
            .iter()
            .any(|&index| matches!(self.records[index].rtype, RType::A | RType::AAAA))
    }

    /// Whether a strict ancestor of `name` (below the origin) satisfies `test`.
    fn strict_ancestor(&self, name: Name<'_>, test: impl Fn(&LowerNameBuf) -> bool) -> bool {
        let origin_len = self.origin.as_name().len();
        let mut current = name;
        while current.len() > origin_len {
            let Some(parent) = current.parent() else {
                return false;
            };
            if parent.len() <= origin_len {
                return false;
            }
            if test(&parent.to_lower()) {
                return true;
            }
            current = parent;
        }
        false
    }

    /// One SOA at the apex and none elsewhere; NS at the apex.
    fn check_apex(&self, diagnostics: &mut Vec<Diagnostic>) {
        let origin = self.origin.as_name();
        let apex = self.node(origin);
        let mut soas = apex
            .iter()
            .map(|&index| &self.records[index])
            .filter(|r| r.rtype == RType::SOA);
        match soas.next() {
            None => diagnostics.push(Diagnostic::new(
                Severity::Error,
                self.records
                    .first()
                    .map_or_else(Location::default, |record| record.location),
                origin,
                "missing SOA at the zone apex",
            )),
            Some(_) => {
                if let Some(second) = soas.next() {
                    diagnostics.push(Diagnostic::new(
                        Severity::Error,
                        second.location,
                        origin,
                        "multiple SOA records",
                    ));
                }
            }
        }
        if self.first_of(apex, RType::NS).is_none() {
            let location = self.first_of(apex, RType::SOA).map_or_else(
                || {
                    self.records
                        .first()
                        .map_or_else(Location::default, |record| record.location)
                },
                |soa| soa.location,
            );
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                location,
                origin,
                "missing NS at the zone apex",
            ));
        }
        for (name, node) in &self.nodes {
            if *name == self.origin {
                continue;
            }
            if let Some(soa) = self.first_of(node, RType::SOA) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    soa.location,
                    soa.owner.as_name(),
                    "SOA record not at the zone apex",
                ));
            }
        }
    }

    /// CNAME beside other data, several CNAMEs, several DNAMEs.
    fn check_nodes(&self, diagnostics: &mut Vec<Diagnostic>) {
        for node in self.nodes.values() {
            let records = node.iter().map(|&index| (index, &self.records[index]));
            let cnames: Vec<(usize, &Record)> = records
                .clone()
                .filter(|(_, r)| r.rtype == RType::CNAME)
                .collect();
            let dnames: Vec<(usize, &Record)> = records
                .clone()
                .filter(|(_, r)| r.rtype == RType::DNAME)
                .collect();
            if let Some(&(_, second)) = cnames.get(1) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    second.location,
                    second.owner.as_name(),
                    "multiple CNAME records",
                ));
            }
            if let Some(&(_, second)) = dnames.get(1) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    second.location,
                    second.owner.as_name(),
                    "multiple DNAME records",
                ));
            }
            let Some(&(cname_index, cname)) = cnames.first() else {
                continue;
            };
            let other = records
                .clone()
                .find(|(_, r)| !matches!(r.rtype, RType::CNAME | RType::RRSIG | RType::NSEC));
            if let Some((other_index, other)) = other {
                // Reported at whichever of the two came second in the file.
                let later = if other_index > cname_index {
                    other
                } else {
                    cname
                };
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    later.location,
                    later.owner.as_name(),
                    "another record exists beside CNAME",
                ));
            }
        }
    }

    /// No records below a DNAME (RFC 6672 section 2.3): one error per DNAME
    /// owner, at its first descendant record.
    fn check_below_dname(&self, diagnostics: &mut Vec<Diagnostic>) {
        let dname_owners: HashSet<LowerNameBuf> = self
            .nodes
            .iter()
            .filter(|(_, node)| self.first_of(node, RType::DNAME).is_some())
            .map(|(name, _)| *name)
            .collect();
        if dname_owners.is_empty() {
            return;
        }
        let mut first_child: HashMap<LowerNameBuf, usize> = HashMap::new();
        for node in self.nodes.values() {
            for &index in node {
                let owner = self.records[index].owner.as_name();
                let mut current = owner;
                while let Some(parent) = current.parent() {
                    if parent.len() < self.origin.as_name().len() {
                        break;
                    }
                    let key = parent.to_lower();
                    if dname_owners.contains(&key) {
                        let entry = first_child.entry(key).or_insert(index);
                        *entry = (*entry).min(index);
                    }
                    current = parent;
                }
            }
        }
        for (dname_owner, index) in first_child {
            let record = &self.records[index];
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                record.location,
                dname_owner.as_name(),
                &format!("child record exists under DNAME ({})", record.owner),
            ));
        }
    }

    /// Missing glue for the NS RRsets at the apex and at delegations, as
    /// Knot's `check_delegation` decides it, and occluded data below cuts.
    fn check_delegations(&self, diagnostics: &mut Vec<Diagnostic>) {
        let origin = self.origin.as_name();
        let mut glue_targets: HashSet<LowerNameBuf> = HashSet::new();
        for (name, node) in &self.nodes {
            if *name != self.origin && !self.cuts.contains(name) {
                continue;
            }
            let mut reported = false;
            for &index in node {
                let record = &self.records[index];
                if record.rtype != RType::NS {
                    continue;
                }
                let Ok(target) = Name::from_wire(&record.rdata) else {
                    continue;
                };
                glue_targets.insert(target.to_lower());
                if reported || !target.ends_with(origin) || self.has_glue(name, target) {
                    continue;
                }
                reported = true;
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner.as_name(),
                    &format!("missing glue record ({target} has no A or AAAA)"),
                ));
            }
        }
        for (name, node) in &self.nodes {
            let at_cut = self.cuts.contains(name);
            let below_cut =
                self.strict_ancestor(name.as_name(), |ancestor| self.cuts.contains(ancestor));
            if !at_cut && !below_cut {
                continue;
            }
            let occluded = node
                .iter()
                .map(|&index| &self.records[index])
                .find(|record| {
                    let glue = matches!(record.rtype, RType::A | RType::AAAA)
                        && glue_targets.contains(name);
                    let delegation_data = !below_cut
                        && matches!(
                            record.rtype,
                            RType::NS | RType::DS | RType::RRSIG | RType::NSEC
                        );
                    !glue && !delegation_data
                });
            if let Some(record) = occluded {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner.as_name(),
                    &format!(
                        "{} record below a delegation is not authoritative",
                        record.rtype
                    ),
                ));
            }
        }
    }

    /// Whether the in-zone NS target `target` of the NS RRset at `ns_owner`
    /// has an address: at its own node, or, when the node does not exist,
    /// at the wildcard below its closest encloser. Targets whose closest
    /// encloser is another delegation (or below one) are not checked.
    fn has_glue(&self, ns_owner: &LowerNameBuf, target: Name<'_>) -> bool {
        if self.existing.contains(&target.to_lower()) {
            return self.has_address(target);
        }
        let mut encloser = target;
        while !self.existing.contains(&encloser.to_lower()) {
            match encloser.parent() {
                Some(parent) => encloser = parent,
                None => return true,
            }
        }
        let encloser_key = encloser.to_lower();
        if encloser_key != *ns_owner
            && (self.cuts.contains(&encloser_key)
                || self.strict_ancestor(encloser, |ancestor| self.cuts.contains(ancestor)))
        {
            return true;
        }
        match NameBuf::concat(b"\x01*", encloser) {
            Ok(wildcard) => self.has_address(wildcard.as_name()),
            Err(_) => false,
        }
    }
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
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in label {
        let value = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'v' => c - b'a' + 10,
            b'A'..=b'V' => c - b'A' + 10,
            _ => return None,
        };
        acc = (acc << 5 | u32::from(value)) & 0xfff;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

fn base32hex_text(octets: &[u8]) -> String {
    const DIGITS: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut out = String::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &octet in octets {
        acc = (acc << 8 | u32::from(octet)) & 0xfff;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(DIGITS[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(DIGITS[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

impl Zone<'_> {
    /// The records of one type in the zone, by location (file order).
    fn all_of(&self, rtype: RType) -> Vec<&Record> {
        let mut found: Vec<&Record> = self
            .nodes
            .values()
            .flatten()
            .map(|&index| &self.records[index])
            .filter(|record| record.rtype == rtype)
            .collect();
        found.sort_by_key(|record| {
            (
                record.location.file,
                record.location.line,
                record.location.col,
            )
        });
        found
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
        let param = self.first_of(self.node(origin), RType::NSEC3PARAM);
        let params = param
            .and_then(|record| nsec3_params(&record.rdata))
            .map(|(p, _)| p);
        let records = self.all_of(RType::NSEC3);
        let Some(params) = params else {
            if let Some(first) = records.first() {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    first.location,
                    first.owner.as_name(),
                    "NSEC3 records without an NSEC3PARAM at the apex",
                ));
            }
            return;
        };
        // (owner hash, next hashed owner, record) of the chain.
        let mut chain: Vec<(Vec<u8>, &[u8], &Record)> = Vec::new();
        for record in records {
            let owner = record.owner.as_name();
            let Some((own, rest)) = nsec3_params(&record.rdata) else {
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
                    record.owner.as_name(),
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
            .first_of(self.node(self.origin.as_name()), RType::NSEC)
            .is_none()
        {
            return;
        }
        let mut chain: Vec<(&Record, Name<'_>)> = self
            .all_of(RType::NSEC)
            .into_iter()
            .filter_map(|record| Some((record, Name::parse_prefix(&record.rdata).ok()?.0)))
            .collect();
        if chain.is_empty() {
            return;
        }
        chain.sort_by(|a, b| a.0.owner.as_name().canonical_cmp(b.0.owner.as_name()));
        for (index, (record, next)) in chain.iter().enumerate() {
            let expected = chain[(index + 1) % chain.len()].0.owner.as_name();
            if !next.eq_ignore_case(expected) {
                diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner.as_name(),
                    &format!(
                        "NSEC chain broken: next name {next} is not the next NSEC owner \
                         ({expected})"
                    ),
                ));
            }
        }
        // Every authoritative name with data needs its NSEC (RFC 4035
        // section 2.3): delegation points too, names below a cut not.
        for node in self.nodes.values() {
            let Some(&first) = node.first() else { continue };
            let record = &self.records[first];
            let owner = record.owner.as_name();
            if self.first_of(node, RType::NSEC).is_some()
                || self.strict_ancestor(owner, |name| self.cuts.contains(name))
            {
                continue;
            }
            diagnostics.push(Diagnostic::new(
                Severity::Warning,
                record.location,
                owner,
                "name has no NSEC record: the NSEC chain does not cover it",
            ));
        }
    }
}

fn hex(octets: &[u8]) -> String {
    if octets.is_empty() {
        return "-".to_string();
    }
    octets.iter().map(|b| format!("{b:02X}")).collect()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::types::RClass;

    use super::*;

    /// Builds records from `owner TYPE rdata` lines, with a tiny reader for
    /// the handful of types these tests use (the real scanner is tested in
    /// its own modules). Line numbers are the 1-based index in `lines`.
    fn zone(lines: &[&str]) -> Vec<Record> {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                let fields: Vec<&str> = line.split_whitespace().collect();
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
                    RType::RRSIG => [
                        vec![0, 5, 8, 1, 0, 0, 0, 1],
                        vec![0; 10],
                        name("example."),
                        vec![1],
                    ]
                    .concat(),
                    _ => name(fields[2]),
                };
                Record {
                    owner,
                    class: RClass::IN,
                    ttl: 300,
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
