//! The names the additional-section targets of a zone's RRsets name (NS,
//! MX, SRV, SVCB, HTTPS: `crate::builder::additional_types`), each with the node that
//! owns the RRset naming it: what [`crate::Zone::patch`] reads to resolve
//! again only the RRsets whose glue a change can alter, not every RRset
//! with targets.
//!
//! An entry is the place of the target's name in the RDATA arena and the
//! node (8 octets), one per name and node, for the names inside the zone
//! (a name outside it never resolves to glue). The list is sorted by the
//! name in canonical order (RFC 4034 section 6.1, case folded), then by
//! node, in parts shared between versions (`crate::parts`): a patch that
//! changes a node's targets removes and adds its entries, copying their
//! parts, not the list. Canonical order keeps the names at or below a
//! name together, right after it: the targets a wildcard can answer for
//! (the names below its parent) and those below a cut made or removed are
//! a range of the list, found by two binary searches.
//!
//! A name in the RDATA arena stays where it is while versions are patched
//! (the arena only grows; an RRset written again leaves its old RDATA as
//! garbage), so an entry of an earlier version still reads its name; a
//! whole build makes the list again.
//!
//! The zone is read through [`TargetZone`] (implemented in `crate::patch`),
//! so that this module, which the zone holds, imports neither the zone nor
//! its builder.

use core::cmp::Ordering;
use std::collections::BTreeSet;

use tern_wire::name::Name;
use tern_wire::types::RType;

use crate::arena::Work;
use crate::parts::{Keyed, Parts};

/// What the index reads of a zone.
pub(crate) trait TargetZone {
    /// The RDATA arena from offset `at` to its chunk's end.
    fn rdata_from(&self, at: u32) -> &[u8];

    /// The zone's origin.
    fn origin_name(&self) -> Name<'_>;

    /// Calls `visit` with each record of the live node `node` that can
    /// have an additional-section target: its type, the offset of its
    /// RDATA in the arena and the RDATA (nothing for a dead node or an id
    /// past the zone's nodes).
    fn target_records(&self, node: u32, visit: &mut dyn FnMut(RType, usize, &[u8]));
}

/// One target of an RRset: where its name sits in the RDATA arena, and
/// the node that owns the RRset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) name_at: u32,
    pub(crate) source: u32,
}

/// A target is its own key, ordered by the name it reads in the zone.
impl Keyed for Target {
    type Key = Target;

    #[inline]
    fn key(&self) -> Target {
        *self
    }
}

/// The targets of a zone (see the module documentation).
pub(crate) type Targets = Parts<Target>;

/// Which targets [`sources_naming`] finds, against a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The name itself.
    Exact,
    /// The name and every name below it.
    AtOrBelow,
    /// The names strictly below it.
    Below,
}

/// The target name at `at` in the zone's RDATA arena (read when the RRset
/// was written: `tern_wire::rdata::additional_target` parsed it).
fn target_name(zone: &impl TargetZone, at: u32) -> Name<'_> {
    Name::parse_prefix(zone.rdata_from(at)).map_or(Name::ROOT, |(name, _)| name)
}

/// The order of a target against `name` at `source`.
fn order<'a>(
    zone: &'a impl TargetZone,
    name: Name<'a>,
    source: u32,
) -> impl Fn(&Target) -> Ordering + 'a {
    move |key: &Target| {
        target_name(zone, key.name_at)
            .canonical_cmp(name)
            .then(key.source.cmp(&source))
    }
}

/// The targets inside the zone of the RRsets of `node` (none when it is
/// dead or past the zone's nodes) into `out`, sorted by name, one a name.
/// Bound: the node's records.
pub(crate) fn targets_of(zone: &impl TargetZone, node: u32, out: &mut Vec<Target>) {
    out.clear();
    let origin = zone.origin_name();
    zone.target_records(node, &mut |rtype, at, rdata| {
        let Some((offset, name)) = tern_wire::rdata::additional_target(rtype, rdata) else {
            return;
        };
        let Ok(name_at) = u32::try_from(at + offset) else {
            return;
        };
        if name.ends_with(origin) {
            out.push(Target {
                name_at,
                source: node,
            });
        }
    });
    let name = |target: &Target| target_name(zone, target.name_at);
    out.sort_by(|a, b| name(a).canonical_cmp(name(b)));
    out.dedup_by(|a, b| name(a).canonical_cmp(name(b)) == Ordering::Equal);
}

/// The targets of the RRsets of `sources` (the nodes owning RRsets with
/// additional-section targets, ascending), built whole. Bound: the sources' records, and a sort
/// of their targets.
pub(crate) fn index<'s>(zone: &impl TargetZone, sources: impl Iterator<Item = &'s u32>) -> Targets {
    let mut all = Vec::new();
    let mut one = Vec::new();
    for &source in sources {
        targets_of(zone, source, &mut one);
        all.extend_from_slice(&one);
    }
    // Stable: the sources, ascending, stay so under each name.
    let name = |target: &Target| target_name(zone, target.name_at);
    all.sort_by(|a, b| name(a).canonical_cmp(name(b)));
    Parts::from_sorted(&all)
}

/// In `index`, the targets of `node` in `old` replaced by its targets in
/// `zone` (a version patched from `old`) when they name other names;
/// `was` and `now` are scratch. Bound: the node's records in both
/// versions, and a part of the list copied an entry removed or added
/// (counted in `work`).
pub(crate) fn replace(
    old: &impl TargetZone,
    zone: &impl TargetZone,
    node: u32,
    index: &mut Targets,
    work: &mut Work,
    was: &mut Vec<Target>,
    now: &mut Vec<Target>,
) {
    targets_of(old, node, was);
    targets_of(zone, node, now);
    let same = was.len() == now.len()
        && was.iter().zip(now.iter()).all(|(a, b)| {
            target_name(old, a.name_at).canonical_cmp(target_name(zone, b.name_at))
                == Ordering::Equal
        });
    if same {
        return;
    }
    // The old entries' names are in `zone`'s arena too, where they were.
    for target in was.iter() {
        let name = target_name(zone, target.name_at);
        index.remove(order(zone, name, node), work);
    }
    for &target in now.iter() {
        let name = target_name(zone, target.name_at);
        index.insert(target, order(zone, name, node), work);
    }
}

/// Adds to `out` the node of each target of `index` (the zone's) that
/// `reach` takes against `name`. Bound: two binary searches, then one
/// step a target taken.
pub(crate) fn sources_naming(
    zone: &impl TargetZone,
    index: &Targets,
    name: Name<'_>,
    reach: Reach,
    out: &mut BTreeSet<u32>,
) {
    // Every target of `name` compares `Equal` (they differ in their
    // owners), and may span parts: `iter_from` starts at the first.
    let from = |key: &Target| target_name(zone, key.name_at).canonical_cmp(name);
    for target in index.iter_from(from) {
        let found = target_name(zone, target.name_at);
        let taken = match reach {
            Reach::Exact => found.eq_ignore_case(name),
            Reach::AtOrBelow | Reach::Below => found.ends_with(name),
        };
        if !taken {
            break;
        }
        if reach == Reach::Below && found.len() == name.len() {
            continue;
        }
        out.insert(target.source);
    }
}

/// The targets of `index` as (lowercased target, source's name) pairs,
/// sorted: what a patched version and a whole build of the same records
/// must both hold.
#[cfg(test)]
pub(crate) fn pairs(zone: &crate::zone::Zone, index: &Targets) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = index
        .iter()
        .map(|target| {
            (
                target_name(zone, target.name_at)
                    .to_lower()
                    .as_name()
                    .to_string(),
                zone.node_name(target.source).to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

/// Whether the targets of `index` are in canonical order of their names,
/// then ascending nodes, with no name twice at a node.
#[cfg(test)]
pub(crate) fn is_sorted(zone: &crate::zone::Zone, index: &Targets) -> bool {
    let entries: Vec<&Target> = index.iter().collect();
    entries.windows(2).all(|pair| {
        target_name(zone, pair[0].name_at)
            .canonical_cmp(target_name(zone, pair[1].name_at))
            .then(pair[0].source.cmp(&pair[1].source))
            == Ordering::Less
    })
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use crate::ZoneBuilder;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// An entry is two `u32`s, and only the targets inside the zone are
    /// entries, one a name and owner (case folded): a zone whose RRsets
    /// name only names outside it (most hosted zones: NS and MX at their
    /// provider) holds an empty index, which allocates nothing.
    #[test]
    fn only_targets_inside_the_zone_are_entries() {
        assert_eq!(core::mem::size_of::<Target>(), 8);
        let origin = name("example.");
        let mut soa = name("ns.example.net.").as_bytes().to_vec();
        soa.extend_from_slice(name("host.example.net.").as_bytes());
        soa.extend_from_slice(&[0; 20]);
        let mut builder = ZoneBuilder::new(origin.as_name());
        let mut insert = |owner: &str, rtype: RType, rdata: &[u8]| {
            builder
                .insert(name(owner).as_name(), rtype, RClass::IN, 300, rdata)
                .unwrap();
        };
        insert("example.", RType::SOA, &soa);
        insert("example.", RType::NS, name("ns1.example.net.").as_bytes());
        let mut mx = vec![0, 10];
        mx.extend_from_slice(name("mail.example.net.").as_bytes());
        insert("example.", RType::MX, &mx);
        let outside = builder.finish().unwrap();
        assert!(outside.targets.is_empty());
        assert!(matches!(&outside.targets, Parts::Flat(slice) if slice.is_empty()));

        let mut builder = ZoneBuilder::new(origin.as_name());
        let mut insert = |owner: &str, rtype: RType, rdata: &[u8]| {
            builder
                .insert(name(owner).as_name(), rtype, RClass::IN, 300, rdata)
                .unwrap();
        };
        insert("example.", RType::SOA, &soa);
        insert("example.", RType::NS, name("ns1.example.net.").as_bytes());
        insert("example.", RType::NS, name("NS2.example.").as_bytes());
        let mut mx = vec![0, 10];
        mx.extend_from_slice(name("ns2.Example.").as_bytes());
        insert("example.", RType::MX, &mx);
        insert("a.example.", RType::NS, name("ns.a.example.").as_bytes());
        let inside = builder.finish().unwrap();
        assert_eq!(
            pairs(&inside, &inside.targets),
            [
                ("ns.a.example.".to_string(), "a.example.".to_string()),
                ("ns2.example.".to_string(), "example.".to_string()),
            ]
        );
    }
}
