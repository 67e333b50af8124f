//! The record model the patch and order tests share (test builds only): a
//! zone's records by lowercased owner, the whole build of them, and the
//! changes that bring a version to them.

use std::collections::BTreeMap;

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};

use crate::{BuildError, Zone, ZoneBuilder, ZoneChanges};

pub(crate) fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

/// The zone's records as the model keeps them: by lowercased owner, in the
/// order they were added (a builder is given them in that order).
pub(crate) type Model = BTreeMap<Vec<u8>, Vec<(RType, u32, Vec<u8>)>>;

/// The SOA RDATA of `example.` at `serial`.
pub(crate) fn soa(serial: u32) -> Vec<u8> {
    let mut rdata = name("ns.example.").as_bytes().to_vec();
    rdata.extend_from_slice(name("host.example.").as_bytes());
    for value in [serial, 3600, 900, 604800, 300] {
        rdata.extend_from_slice(&value.to_be_bytes());
    }
    rdata
}

/// The whole build of `example.` from the model's records.
pub(crate) fn build(model: &Model) -> Result<Zone, BuildError> {
    let mut builder = ZoneBuilder::new(name("example.").as_name());
    for (owner, records) in model {
        for (rtype, ttl, rdata) in records {
            builder.insert(
                Name::from_wire(owner).unwrap(),
                *rtype,
                RClass::IN,
                *ttl,
                rdata,
            )?;
        }
    }
    builder.finish()
}

/// The changes that give each `touched` owner the model's records (none:
/// the owner's records removed).
pub(crate) fn changes_of(model: &Model, touched: &[Vec<u8>]) -> ZoneChanges {
    let mut changes = ZoneChanges::new();
    for owner in touched {
        let records = model.get(owner).map(Vec::as_slice).unwrap_or(&[]);
        changes.set(
            Name::from_wire(owner).unwrap(),
            records.iter().map(|(t, ttl, r)| (*t, *ttl, &r[..])),
        );
    }
    changes
}
