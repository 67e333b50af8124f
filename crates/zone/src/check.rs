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
}
