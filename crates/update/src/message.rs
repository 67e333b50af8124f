//! An UPDATE message (RFC 2136 section 2) read from the wire, every octet
//! checked before anything is decided.
//!
//! ```text
//!  header     ID, QR=0, OPCODE=5, ZOCOUNT=1, PRCOUNT, UPCOUNT, ADCOUNT
//!  zone       ZNAME  ZTYPE=SOA  ZCLASS=IN
//!  prerequisites (the answer section)      PRCOUNT records
//!  updates       (the authority section)   UPCOUNT records
//!  additional                              OPT, and TSIG last
//! ```
//!
//! [`UpdateMessage::parse`] gives the message or the RCODE to answer:
//! FORMERR for a message that is not a well-formed UPDATE (a response, not
//! exactly one zone, a zone type other than SOA, a record that does not
//! parse or whose RDATA does not fit its type, octets after the last
//! record, a TSIG that is not the last record); NOTAUTH for a zone class
//! other than IN (tern serves no other class); REFUSED past the named
//! limits ([`crate::MAX_UPDATE_MESSAGE_LEN`], [`crate::MAX_UPDATE_RECORDS`]).
//! What the records mean (classes ANY and NONE, TTLs, types) is checked in
//! order by the prerequisite and update stages, as RFC 2136 section 3 says.
//!
//! TSIG is checked elsewhere (tern-xfr's `check_request`, over the same
//! bytes): this module only finds the record, which must be the last one
//! (RFC 8945 section 5.1), and hands its key name and offset on
//! ([`TsigHook`]) for the caller to check and to pass to the update rules.

use tern_wire::name::Name;
use tern_wire::parse::{MessageView, RecordView, Section, HEADER_LEN};
use tern_wire::rdata::expand;
use tern_wire::types::{Opcode, RClass, RType, Rcode};

use crate::rdata::check_shape;
use crate::{MAX_UPDATE_MESSAGE_LEN, MAX_UPDATE_RECORDS};

//----------- UpdateRecord ---------------------------------------------------

/// One record of the prerequisite or update section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateRecord {
    /// The owner, lowercased, in wire form.
    owner: Box<[u8]>,
    /// The type.
    pub rtype: RType,
    /// The class: the zone's (IN), ANY or NONE give the record its meaning.
    pub class: RClass,
    /// The TTL.
    pub ttl: u32,
    /// The RDATA: uncompressed and checked for the zone's class (and for
    /// NONE in the update section); as sent for the other classes, whose
    /// RDATA must be empty.
    pub rdata: Box<[u8]>,
}

impl UpdateRecord {
    /// A record from its parts (`owner` is lowercased): for tests and for
    /// callers that build updates themselves.
    pub fn new(owner: Name<'_>, rtype: RType, class: RClass, ttl: u32, rdata: &[u8]) -> Self {
        UpdateRecord {
            owner: owner.to_lower().as_bytes().into(),
            rtype,
            class,
            ttl,
            rdata: rdata.into(),
        }
    }

    /// The owner, lowercased.
    pub fn owner(&self) -> Name<'_> {
        Name::from_validated(&self.owner)
    }
}

//----------- TsigHook -------------------------------------------------------

/// Where the message's TSIG record is, for the caller that checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TsigHook {
    /// The key name, lowercased, in wire form.
    key: Box<[u8]>,
    /// The offset of the TSIG record (its owner) in the message.
    pub offset: usize,
}

impl TsigHook {
    /// The key name the message says it is signed with (not yet checked).
    pub fn key(&self) -> Name<'_> {
        Name::from_validated(&self.key)
    }
}

//----------- UpdateMessage --------------------------------------------------

/// A parsed UPDATE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateMessage {
    /// The message ID.
    pub id: u16,
    /// The zone name, lowercased, in wire form.
    zone: Box<[u8]>,
    /// The prerequisites, in order.
    pub prerequisites: Vec<UpdateRecord>,
    /// The updates, in order.
    pub updates: Vec<UpdateRecord>,
    /// The TSIG record, if the message has one.
    pub tsig: Option<TsigHook>,
}

impl UpdateMessage {
    /// Reads an UPDATE; see the module documentation for the RCODEs. Bound:
    /// one pass over the records, at most [`MAX_UPDATE_RECORDS`]
    /// prerequisites and updates, each name bounded by tern-wire's views.
    pub fn parse(message: &[u8]) -> Result<UpdateMessage, Rcode> {
        if message.len() > MAX_UPDATE_MESSAGE_LEN {
            return Err(Rcode::REFUSED);
        }
        let view = MessageView::parse(message).map_err(|_| Rcode::FORMERR)?;
        let header = view.header();
        if header.qr() || header.opcode() != Opcode::UPDATE {
            return Err(Rcode::FORMERR);
        }
        let zone = view.question().ok_or(Rcode::FORMERR)?;
        if zone.qtype != RType::SOA {
            return Err(Rcode::FORMERR);
        }
        if zone.qclass != RClass::IN {
            return Err(Rcode::NOTAUTH);
        }
        let [_, prerequisites, updates, additional] = header.counts();
        if usize::from(prerequisites) + usize::from(updates) > MAX_UPDATE_RECORDS {
            return Err(Rcode::REFUSED);
        }
        let mut parsed = UpdateMessage {
            id: header.id(),
            zone: zone.name.to_lower().as_bytes().into(),
            prerequisites: Vec::with_capacity(usize::from(prerequisites)),
            updates: Vec::with_capacity(usize::from(updates)),
            tsig: None,
        };
        let mut additional_seen = 0u16;
        let mut opt_seen = false;
        let mut end = None;
        for record in view.records() {
            let record = record.map_err(|_| Rcode::FORMERR)?;
            end = Some(record.rdata_offset + record.rdata.len());
            if parsed.tsig.is_some() {
                // RFC 8945 section 5.1: the TSIG record is the last.
                return Err(Rcode::FORMERR);
            }
            match record.section {
                Section::Answer => parsed.prerequisites.push(read_record(message, &record)?),
                Section::Authority => parsed.updates.push(read_record(message, &record)?),
                Section::Additional => {
                    additional_seen += 1;
                    match record.rtype {
                        RType::TSIG if additional_seen == additional => {
                            parsed.tsig = Some(tsig_hook(message, &record)?);
                        }
                        RType::OPT if !opt_seen && record.owner_is_root() => opt_seen = true,
                        RType::TSIG | RType::OPT => return Err(Rcode::FORMERR),
                        // Other additional records mean nothing to an
                        // update (RFC 2136 section 2.6): read, not used.
                        _ => {}
                    }
                }
            }
        }
        let records_start = HEADER_LEN + zone.bytes.len();
        if end.unwrap_or(records_start) != message.len() {
            return Err(Rcode::FORMERR);
        }
        Ok(parsed)
    }

    /// The zone name, lowercased.
    pub fn zone(&self) -> Name<'_> {
        Name::from_validated(&self.zone)
    }
}

/// One prerequisite or update record: the owner lowercased, the RDATA
/// uncompressed and its shape checked where it will be stored or compared
/// (class IN, and NONE in the update section, the deletion of one record).
/// Records of the other classes keep their RDATA as sent: ANY's and NONE
/// prerequisites' must be empty, and other classes are FORMERR, which the
/// stages check in their order.
fn read_record(message: &[u8], record: &RecordView<'_>) -> Result<UpdateRecord, Rcode> {
    let owner = record.owner.to_buf();
    let class = RClass(record.class);
    let stored =
        class == RClass::IN || (class == RClass::NONE && record.section == Section::Authority);
    let rdata = if !stored {
        record.rdata.into()
    } else {
        let mut out = Vec::with_capacity(record.rdata.len());
        let end = record.rdata_offset + record.rdata.len();
        expand(message, record.rtype, record.rdata_offset, end, &mut out)
            .map_err(|_| Rcode::FORMERR)?;
        if u16::try_from(out.len()).is_err() {
            return Err(Rcode::FORMERR);
        }
        check_shape(record.rtype, &out).map_err(|_| Rcode::FORMERR)?;
        out.into_boxed_slice()
    };
    Ok(UpdateRecord {
        owner: owner.as_name().to_lower().as_bytes().into(),
        rtype: record.rtype,
        class,
        ttl: record.ttl,
        rdata,
    })
}

/// The TSIG record's key name and offset; its class must be ANY and its
/// TTL 0 (RFC 8945 section 4.2).
fn tsig_hook(message: &[u8], record: &RecordView<'_>) -> Result<TsigHook, Rcode> {
    if record.class != RClass::ANY.0 || record.ttl != 0 {
        return Err(Rcode::FORMERR);
    }
    let key = record.owner.to_buf();
    // The record starts where its owner does: the RDATA's offset less the
    // ten octets of type, class, TTL and length and the owner's octets.
    let offset = record.rdata_offset - 10 - record.owner.wire_len();
    debug_assert!(offset < message.len());
    Ok(TsigHook {
        key: key.as_name().to_lower().as_bytes().into(),
        offset,
    })
}
