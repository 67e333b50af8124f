//! One UPDATE from a parsed message to a new zone version or an RCODE, in
//! the order of RFC 2136 section 3.
//!
//! 1. The zone section names this zone (else NOTAUTH).
//! 2. Some update rule is for the requester at all (else REFUSED), before
//!    anything of the zone is revealed through prerequisites.
//! 3. The prerequisites hold (section 3.2, `prereq`).
//! 4. The prescan (section 3.4.1): each update record's owner is in the
//!    zone (else NOTZONE), its class, type, TTL and RDATA make sense (else
//!    FORMERR), a rule allows it (else REFUSED, section 3.3), and in a
//!    signed zone it is not an RRSIG, NSEC or NSEC3 (else REFUSED: the
//!    signer makes those, as BIND refuses them in a secure zone). The
//!    first record that fails answers.
//! 5. The updates are applied in order (section 3.4.2, `apply`). If
//!    nothing changed, NOERROR and no new version (as Knot and BIND).
//!    Otherwise, the serial: the update's SOA if it set a higher one,
//!    else the current one plus one (RFC 1982). A zone that would grow
//!    past `max_zone_records` is REFUSED, and so is an NSEC3PARAM below
//!    the apex: the zone is then left exactly as it was.

use tern_wire::types::{RClass, RType, Rcode};

use crate::apply::{apply_updates, Difference, Transaction};
use crate::message::{UpdateMessage, UpdateRecord};
use crate::policy::{record_allowed, requester_allowed, Requester, UpdateRule};
use crate::prereq::{check_prerequisites_signed, SignerRrsets, Unsigned};
use crate::store::ZoneRecords;

//----------- UpdateOptions, Access ------------------------------------------

/// The zone's settings an update is checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateOptions {
    /// The most records the zone may hold after an update that grows it
    /// (the configuration's `transfer.max-zone-records`).
    pub max_zone_records: usize,
    /// The zone is signed by tern: RRSIG, NSEC and NSEC3 are the signer's.
    pub signed: bool,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions {
            max_zone_records: usize::MAX,
            signed: false,
        }
    }
}

/// Who asks, and the zone's rules.
#[derive(Clone, Copy, Debug)]
pub struct Access<'a> {
    /// The zone's update rules.
    pub rules: &'a [UpdateRule],
    /// The request's checked TSIG key and address.
    pub requester: Requester<'a>,
}

//----------- update ---------------------------------------------------------

/// Processes `message` against `zone`: `Ok(Some(difference))` with the zone
/// changed to the new version, `Ok(None)` (NOERROR) with nothing changed,
/// or the RCODE with nothing changed. Bound: the prerequisites' and
/// updates' records (at most [`crate::MAX_UPDATE_RECORDS`]), each costing
/// the names it touches.
pub fn update(
    zone: &mut ZoneRecords,
    message: &UpdateMessage,
    access: &Access<'_>,
    options: &UpdateOptions,
) -> Result<Option<Difference>, Rcode> {
    update_signed(zone, message, access, options, &Unsigned)
}

/// [`update`] of a zone tern signs, whose records are its unsigned ones:
/// prerequisites on the RRsets `signer` makes (the apex's DNSKEY, say) see
/// them as served ([`crate::prereq::SignerRrsets`]).
pub fn update_signed(
    zone: &mut ZoneRecords,
    message: &UpdateMessage,
    access: &Access<'_>,
    options: &UpdateOptions,
    signer: &dyn SignerRrsets,
) -> Result<Option<Difference>, Rcode> {
    if message.zone() != zone.origin() {
        return Err(Rcode::NOTAUTH);
    }
    if !requester_allowed(access.rules, &access.requester) {
        return Err(Rcode::REFUSED);
    }
    check_prerequisites_signed(zone, &message.prerequisites, signer)?;
    for record in &message.updates {
        prescan(zone, record, access, options)?;
    }
    let records_before = zone.len();
    let from_soa = zone.soa();
    let mut transaction = Transaction::new(zone);
    if let Err(rcode) = apply_updates(&mut transaction, &message.updates) {
        transaction.rollback();
        return Err(rcode);
    }
    if !transaction.changed() {
        return Ok(None);
    }
    if !transaction.soa_replaced() {
        transaction.increment_serial();
    }
    let records = transaction.zone().len();
    if records > options.max_zone_records && records > records_before {
        transaction.rollback();
        return Err(Rcode::REFUSED);
    }
    let (deleted, added) = transaction.changes();
    let to_soa = transaction.zone().soa();
    Ok(Some(Difference {
        from_soa,
        to_soa,
        deleted,
        added,
    }))
}

/// RFC 2136 section 3.4.1, and the rules, for one update record.
fn prescan(
    zone: &ZoneRecords,
    record: &UpdateRecord,
    access: &Access<'_>,
    options: &UpdateOptions,
) -> Result<(), Rcode> {
    if !record.owner().ends_with(zone.origin()) {
        return Err(Rcode::NOTZONE);
    }
    let meta = record.rtype.is_meta();
    let well_formed = match record.class {
        RClass::IN => !meta,
        RClass::ANY => {
            record.ttl == 0 && record.rdata.is_empty() && (!meta || record.rtype == RType::ANY)
        }
        RClass::NONE => record.ttl == 0 && !meta,
        _ => false,
    };
    if !well_formed {
        return Err(Rcode::FORMERR);
    }
    if !record_allowed(access.rules, &access.requester, zone.origin(), record) {
        return Err(Rcode::REFUSED);
    }
    if options.signed && matches!(record.rtype, RType::RRSIG | RType::NSEC | RType::NSEC3) {
        return Err(Rcode::REFUSED);
    }
    Ok(())
}
