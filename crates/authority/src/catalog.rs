//! The set of zones a server answers for.
//!
//! [`Catalog::find`] returns the deepest zone that contains a name: it tries
//! the name itself, then each parent, against a hash index of the origins,
//! so a child zone loaded under its parent's delegation answers for its own
//! names. Each step hashes a borrowed suffix of the one query-name buffer;
//! nothing is built per label (hickory's `base_name()` per label is the
//! pattern avoided, see `docs/style.md`).

use std::sync::Arc;

use tern_wire::name::Name;
use tern_wire::types::RType;

use crate::index::NameIndex;
use crate::zone::Zone;

//----------- Catalog --------------------------------------------------------

/// All loaded zones, immutable and shareable across threads. Zones are
/// reference-counted so that a reload can build a new catalog that keeps
/// the previous version of a zone that failed to load.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    zones: Vec<Arc<Zone>>,
    index: NameIndex,
}

impl Catalog {
    /// A catalog over `zones`. If two zones have the same origin, the first
    /// one is kept.
    pub fn new<Z: Into<Arc<Zone>>>(zones: impl IntoIterator<Item = Z>) -> Catalog {
        let zones = zones.into_iter();
        let mut kept: Vec<Arc<Zone>> = Vec::with_capacity(zones.size_hint().0);
        let mut index = NameIndex::with_capacity(zones.size_hint().0);
        for zone in zones {
            let zone: Arc<Zone> = zone.into();
            if index
                .find(zone.origin().as_bytes(), |i| {
                    kept[i as usize].origin().as_bytes()
                })
                .is_some()
            {
                continue;
            }
            let id = kept.len() as u32;
            let origin = zone.origin;
            kept.push(zone);
            index.insert(origin.as_bytes(), id, |i| {
                kept[i as usize].origin().as_bytes()
            });
        }
        Catalog { zones: kept, index }
    }

    /// The zones, in load order.
    pub fn zones(&self) -> &[Arc<Zone>] {
        &self.zones
    }

    /// The zone whose origin is exactly `origin_lower` (lowercased), as a
    /// zone transfer asks for it.
    pub fn get(&self, origin_lower: Name<'_>) -> Option<&Arc<Zone>> {
        let id = self.position(origin_lower)?;
        Some(&self.zones[id as usize])
    }

    /// The index in [`Catalog::zones`] of the zone whose origin is exactly
    /// `origin_lower` (lowercased).
    pub fn position(&self, origin_lower: Name<'_>) -> Option<u32> {
        self.index.find(origin_lower.as_bytes(), |i| {
            self.zones[i as usize].origin().as_bytes()
        })
    }

    /// The index in [`Catalog::zones`] of [`Catalog::find`]'s zone.
    pub fn find_position(&self, qname_lower: Name<'_>) -> Option<u32> {
        let mut suffix = Some(qname_lower);
        while let Some(name) = suffix {
            if let Some(id) = self.position(name) {
                return Some(id);
            }
            suffix = name.parent();
        }
        None
    }

    /// The deepest zone whose origin is `qname_lower` or one of its
    /// ancestors. The name must already be lowercased. Bound: one hash
    /// look-up per label; no allocation.
    pub fn find(&self, qname_lower: Name<'_>) -> Option<&Zone> {
        let id = self.find_position(qname_lower)?;
        Some(&self.zones[id as usize])
    }

    /// The zone that answers a query: DS records live on the parent side
    /// of a cut, so for DS the search starts one label up (as Knot's
    /// `answer_zone_find` does), falling back to the name itself for the
    /// root or when no parent zone is loaded.
    pub(crate) fn find_for_query(&self, qname_lower: Name<'_>, qtype: RType) -> Option<&Zone> {
        if qtype == RType::DS {
            if let Some(zone) = qname_lower.parent().and_then(|parent| self.find(parent)) {
                return Some(zone);
            }
        }
        self.find(qname_lower)
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use super::*;
    use crate::ZoneBuilder;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    fn zone(origin: &str) -> Zone {
        let origin = name(origin);
        let mut soa = b"\x00\x00".to_vec();
        soa.extend_from_slice(&[0; 20]);
        let mut b = ZoneBuilder::new(origin.as_name());
        b.insert(origin.as_name(), RType::SOA, RClass::IN, 1, &soa)
            .unwrap();
        b.finish().unwrap()
    }

    #[test]
    fn get_finds_only_an_exact_origin() {
        let catalog = Catalog::new(vec![zone("example.com."), zone("sub.example.com.")]);
        let got = |text: &str| {
            catalog
                .get(name(text).as_name())
                .map(|z| z.origin().to_string())
        };
        assert_eq!(got("example.com.").as_deref(), Some("example.com."));
        assert_eq!(got("sub.example.com.").as_deref(), Some("sub.example.com."));
        assert_eq!(got("www.example.com."), None);
        assert_eq!(got("com."), None);
    }

    #[test]
    fn deepest_zone_wins() {
        let catalog = Catalog::new(vec![
            zone("example.com."),
            zone("sub.example.com."),
            zone("com."),
        ]);
        let origin = |q: &str| {
            catalog
                .find(name(q).as_name())
                .map(|z| z.origin().to_string())
        };
        assert_eq!(
            origin("www.sub.example.com.").as_deref(),
            Some("sub.example.com.")
        );
        assert_eq!(
            origin("sub.example.com.").as_deref(),
            Some("sub.example.com.")
        );
        assert_eq!(origin("www.example.com.").as_deref(), Some("example.com."));
        assert_eq!(origin("xexample.com.").as_deref(), Some("com."));
        assert_eq!(origin("example.org."), None);
        assert_eq!(origin("."), None);
        let ds = catalog.find_for_query(name("sub.example.com.").as_name(), RType::DS);
        assert_eq!(ds.unwrap().origin().to_string(), "example.com.");
        let ds = catalog.find_for_query(name("com.").as_name(), RType::DS);
        assert_eq!(ds.unwrap().origin().to_string(), "com.");
    }

    #[test]
    fn duplicate_origins_keep_the_first() {
        let catalog = Catalog::new(vec![zone("example."), zone("EXAMPLE.")]);
        assert_eq!(catalog.zones().len(), 1);
    }
}
