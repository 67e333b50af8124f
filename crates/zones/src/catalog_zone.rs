//! The catalog zone tern produces (RFC 9432, schema version 2): a zone that
//! lists every other zone tern serves, so that secondaries configured with it
//! (Knot's `catalog-role: interpret`, BIND's `catalog-zones`) add and remove
//! member zones as tern's change. It is built with the catalog of served
//! zones, transferable like any zone, and its serial grows with every
//! change of membership.
//!
//! ```text
//! CATALOG.            0 SOA invalid. invalid. SERIAL 3600 600 2147483646 0
//! CATALOG.            0 NS  invalid.
//! version.CATALOG.    0 TXT "2"
//! ID.zones.CATALOG.   0 PTR member.example.
//! ```
//!
//! Each member's ID is the SHA-1 of its lowercased wire name in hex (as Knot
//! and BIND make them): the same zone keeps the same ID, so a consumer sees
//! a zone leave and come back as that, not as a new one.

use sha1::{Digest, Sha1};
use tern_authority::{BuildError, Zone, ZoneBuilder};
use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::{RClass, RType};

/// Why a catalog zone could not be built or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum CatalogError {
    /// The catalog is not of schema version 2 (`version.CATALOG TXT "2"`).
    NotVersion2 {
        /// The catalog's origin.
        catalog: String,
    },
    /// A member's PTR record does not hold a name.
    BadMember {
        /// The catalog's origin.
        catalog: String,
    },
    /// A member's owner name under `zones.CATALOG.` would be too long.
    Name(tern_wire::ParseError),
    /// The catalog zone does not build.
    Build(BuildError),
}

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogError::NotVersion2 { catalog } => write!(
                f,
                "catalog {catalog}: not version 2 (version.{catalog} TXT \"2\")"
            ),
            CatalogError::BadMember { catalog } => {
                write!(f, "catalog {catalog}: a member PTR without a name")
            }
            CatalogError::Name(err) => write!(f, "a member name: {err}"),
            CatalogError::Build(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for CatalogError {}

impl From<BuildError> for CatalogError {
    fn from(err: BuildError) -> Self {
        CatalogError::Build(err)
    }
}

/// Builds the catalog zone `origin` at `serial` listing the zones of
/// `members` (the catalog itself is left out if among them).
pub fn build<'a>(
    origin: Name<'_>,
    serial: u32,
    members: impl IntoIterator<Item = Name<'a>>,
) -> Result<Zone, CatalogError> {
    let invalid = Name::from_wire(b"\x07invalid\x00").expect("a valid name");
    let mut builder = ZoneBuilder::new(origin);
    let mut soa = Vec::new();
    soa.extend_from_slice(invalid.as_bytes());
    soa.extend_from_slice(invalid.as_bytes());
    for field in [serial, 3600, 600, 2_147_483_646, 0] {
        soa.extend_from_slice(&field.to_be_bytes());
    }
    builder.insert(origin, RType::SOA, RClass::IN, 0, &soa)?;
    builder.insert(origin, RType::NS, RClass::IN, 0, invalid.as_bytes())?;
    let version = child(b"version", origin)?;
    builder.insert(version.as_name(), RType::TXT, RClass::IN, 0, b"\x012")?;
    let zones = child(b"zones", origin)?;
    for name in members {
        if name.eq_ignore_case(origin) {
            continue;
        }
        let owner = child(member_id(name).as_bytes(), zones.as_name())?;
        builder.insert(owner.as_name(), RType::PTR, RClass::IN, 0, name.as_bytes())?;
    }
    Ok(builder.finish()?)
}

/// `label.parent`.
fn child(label: &[u8], parent: Name<'_>) -> Result<NameBuf, CatalogError> {
    let mut prefix = vec![label.len() as u8];
    prefix.extend_from_slice(label);
    NameBuf::concat(&prefix, parent).map_err(CatalogError::Name)
}

/// A member's unique ID: the SHA-1 of its lowercased wire name, in hex.
fn member_id(name: Name<'_>) -> String {
    let digest = Sha1::digest(name.to_lower().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The member zones a catalog zone lists (RFC 9432 section 4): the PTR
/// records directly below `zones.` (one label, the member's ID), their
/// targets lowercased, each once (in name order). The catalog must say
/// `version` "2"; anything else is an error and the members are not taken.
/// Bound: a pass over the catalog and a sort of its members.
pub fn members(catalog: &Zone) -> Result<Vec<LowerNameBuf>, CatalogError> {
    let origin = catalog.origin();
    let version = child(b"version", origin)?;
    let zones = child(b"zones", origin)?;
    let mut version_ok = false;
    let mut members = Vec::new();
    let mut cursor = tern_authority::RecordCursor::default();
    while let Some(record) = catalog.next_record(&mut cursor) {
        if record.owner.eq_ignore_case(version.as_name()) && record.rtype == RType::TXT {
            version_ok = record.rdata == b"\x012";
        }
        let below_zones = record
            .owner
            .parent()
            .is_some_and(|parent| parent.eq_ignore_case(zones.as_name()));
        if below_zones && record.rtype == RType::PTR {
            let target = Name::from_wire(record.rdata).map_err(|_| CatalogError::BadMember {
                catalog: origin.to_string(),
            })?;
            members.push(LowerNameBuf::from_name(target));
        }
    }
    if !version_ok {
        return Err(CatalogError::NotVersion2 {
            catalog: origin.to_string(),
        });
    }
    // A member listed under two IDs is taken once.
    members.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    members.dedup();
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    fn zone(origin: &str) -> Arc<Zone> {
        let origin = NameBuf::from_text(origin.as_bytes(), None).unwrap();
        let mut builder = ZoneBuilder::new(origin.as_name());
        let soa = [
            0u8, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
        ];
        builder
            .insert(origin.as_name(), RType::SOA, RClass::IN, 300, &soa)
            .unwrap();
        Arc::new(builder.finish().unwrap())
    }

    #[test]
    fn lists_every_member_but_itself_with_stable_ids() {
        let origin = NameBuf::from_text(b"catalog.tern.", None).unwrap();
        let members = [
            zone("example.com."),
            zone("Example.NET."),
            zone("catalog.tern."),
        ];
        let catalog = build(origin.as_name(), 7, members.iter().map(|z| z.origin())).unwrap();
        assert_eq!(catalog.serial(), 7);
        // SOA, NS, version TXT and two PTRs.
        assert_eq!(catalog.record_count(), 5);
        let again = build(origin.as_name(), 8, members[..1].iter().map(|z| z.origin())).unwrap();
        assert_eq!(again.record_count(), 4);
        let id = member_id(NameBuf::from_text(b"EXAMPLE.com.", None).unwrap().as_name());
        assert_eq!(id.len(), 40);
        assert_eq!(
            id,
            member_id(NameBuf::from_text(b"example.com.", None).unwrap().as_name())
        );
    }

    #[test]
    fn members_of_a_produced_catalog_read_back() {
        let origin = NameBuf::from_text(b"catalog.tern.", None).unwrap();
        let members = [zone("example.com."), zone("Example.NET.")];
        let catalog = build(origin.as_name(), 7, members.iter().map(|z| z.origin())).unwrap();
        let mut listed: Vec<String> = super::members(&catalog)
            .unwrap()
            .iter()
            .map(|name| name.as_name().to_string())
            .collect();
        listed.sort();
        assert_eq!(listed, ["example.com.", "example.net."]);
        // Not version 2: refused.
        let old = zone("catalog.tern.");
        assert!(super::members(&old).is_err());
    }
}
