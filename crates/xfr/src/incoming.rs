//! An incoming zone transfer: the request a secondary sends and the
//! checks and assembly of the messages that come back (RFC 5936 AXFR;
//! RFC 1995 IXFR in its three answer forms).
//!
//! [`Incoming`] is fed one message at a time and says when the transfer is
//! complete. Every message and every record is checked; the first failure
//! ends the transfer with an [`XfrError`], and nothing of it reaches a zone
//! (the caller keeps serving its previous version):
//!
//! - the header: our ID, QR, opcode QUERY, NOERROR, not truncated; the
//!   question, where present, ours;
//! - TSIG, when the request was signed: every signed message verifies, at
//!   most 99 unsigned ones in a row, the last message signed;
//! - the records: class IN, no meta types, owners at or below the zone's
//!   origin, names decompressed within the message; the first record the
//!   zone's SOA and the last the same SOA, nothing after it;
//! - the size: at most [`Limits::records`] records and [`Limits::bytes`]
//!   octets of owners and RDATA.
//!
//! An IXFR answer is the SOA alone (the zone is current), the whole zone in
//! AXFR form, or differences: for each step the old SOA, the records
//! deleted, the new SOA, the records added. Differences are applied to the
//! zone the secondary has, in order; a deletion of a record that is not
//! there is an error, as Knot and BIND treat it.

use core::fmt;
use std::collections::HashMap;
use std::sync::Arc;

use tern_authority::{BuildError, RecordCursor, Zone, ZoneBuilder};
use tern_wire::build::MessageBuilder;
use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::parse::{MessageView, Section};
use tern_wire::types::{Opcode, RClass, RType};
use tern_wire::TruncationError;

use crate::axfr::MAX_MESSAGE;
use crate::serial::serial_at_or_after;
use crate::tsig::{Session, TsigError, TsigRecord};

/// The default most records one transfer may bring (`Limits::records`).
pub const DEFAULT_MAX_RECORDS: usize = 50_000_000;

/// The default most octets of owner names and RDATA one transfer may bring
/// (`Limits::bytes`), about what a 50-million-record zone needs.
pub const DEFAULT_MAX_BYTES: usize = 4 << 30;

/// How large a transfer may grow before it is abandoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Records, deletions and additions of an IXFR included.
    pub records: usize,
    /// Octets of owner names and RDATA, uncompressed.
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            records: DEFAULT_MAX_RECORDS,
            bytes: DEFAULT_MAX_BYTES,
        }
    }
}

//----------- XfrError -------------------------------------------------------

/// Why an incoming transfer was abandoned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XfrError {
    /// A message or record that does not parse, or breaks the transfer's
    /// form; the text says which.
    Malformed(&'static str),
    /// The primary answered with this rcode.
    Rcode(u8),
    /// The signature of a message failed.
    Tsig(TsigError),
    /// A record whose owner is not at or below the zone's origin.
    OutOfZone(String),
    /// More records or octets than the limits allow.
    TooLarge,
    /// The records do not make a zone tern can serve.
    Build(String),
}

impl fmt::Display for XfrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XfrError::Malformed(what) => write!(f, "malformed transfer: {what}"),
            XfrError::Rcode(rcode) => write!(f, "the primary answered rcode {rcode}"),
            XfrError::Tsig(error) => write!(f, "TSIG: {error}"),
            XfrError::OutOfZone(owner) => write!(f, "record outside the zone: {owner}"),
            XfrError::TooLarge => f.write_str("the zone exceeds the size limits"),
            XfrError::Build(error) => write!(f, "the zone does not build: {error}"),
        }
    }
}

impl From<TsigError> for XfrError {
    fn from(error: TsigError) -> Self {
        XfrError::Tsig(error)
    }
}

impl From<BuildError> for XfrError {
    fn from(error: BuildError) -> Self {
        XfrError::Build(error.to_string())
    }
}

//----------- Outcome --------------------------------------------------------

/// What a complete transfer brought.
#[derive(Debug)]
pub enum Outcome {
    /// The zone is current (an IXFR answered with the SOA alone).
    UpToDate {
        /// The primary's serial.
        serial: u32,
    },
    /// A new version of the zone.
    Zone {
        /// The zone (boxed: a `Zone` is a dozen tables' headers).
        zone: Box<Zone>,
        /// Whether it came as differences (IXFR) rather than in full.
        incremental: bool,
    },
}

//----------- Incoming -------------------------------------------------------

/// Where the transfer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the first record, the new SOA.
    First,
    /// After the first SOA, waiting for the second record, which says the
    /// answer's form.
    Second,
    /// A full transfer: records until the SOA again.
    Full,
    /// Differences: records deleted until the step's new SOA.
    Deleting,
    /// Differences: records added until the next step's old SOA, or the
    /// final SOA.
    Adding,
    /// Complete.
    Done,
}

/// One record received: owner and RDATA in the arena.
#[derive(Clone, Copy, Debug)]
struct Received {
    start: u32,
    owner_len: u8,
    rtype: RType,
    ttl: u32,
    rdata_len: u16,
    /// For differences: an addition (else a deletion).
    add: bool,
}

/// One incoming transfer of one zone.
pub struct Incoming {
    origin: LowerNameBuf,
    qtype: RType,
    id: u16,
    /// The zone we have: differences apply to it.
    current: Option<Arc<Zone>>,
    /// Its serial, SOA RDATA and SOA TTL (an IXFR asks from it).
    ours: Option<(u32, Vec<u8>, u32)>,
    /// The answer came as differences.
    differences: bool,
    tsig: Option<Session>,
    /// Whether the last message carried a verified signature.
    last_signed: bool,
    limits: Limits,
    state: State,
    /// The new SOA: TTL, RDATA, serial.
    soa: Option<(u32, Vec<u8>, u32)>,
    arena: Vec<u8>,
    records: Vec<Received>,
    messages: u64,
    now: u64,
}

impl fmt::Debug for Incoming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Incoming")
            .field("origin", &self.origin.as_name().to_string())
            .field("qtype", &self.qtype)
            .field("state", &self.state)
            .field("records", &self.records.len())
            .finish_non_exhaustive()
    }
}

impl Incoming {
    /// A transfer of the zone `origin` by AXFR, or by IXFR from `current`
    /// (then the differences are applied to it). `id` is the request's ID;
    /// `tsig` signs the request and checks the answers.
    pub fn new(
        origin: Name<'_>,
        current: Option<Arc<Zone>>,
        ixfr: bool,
        id: u16,
        tsig: Option<Session>,
        limits: Limits,
    ) -> Self {
        let ours = current.as_ref().map(|zone| {
            let soa = zone.soa_record();
            (zone.serial(), soa.rdata.to_vec(), soa.ttl)
        });
        Incoming {
            origin: LowerNameBuf::from_name(origin),
            qtype: if ixfr && ours.is_some() {
                RType::IXFR
            } else {
                RType::AXFR
            },
            id,
            current,
            ours,
            differences: false,
            tsig,
            last_signed: false,
            limits,
            state: State::First,
            soa: None,
            arena: Vec::new(),
            records: Vec::new(),
            messages: 0,
            now: 0,
        }
    }

    /// Whether the request is an IXFR.
    pub fn is_ixfr(&self) -> bool {
        self.qtype == RType::IXFR
    }

    /// Messages and records received so far.
    pub fn received(&self) -> (u64, usize) {
        (self.messages, self.records.len())
    }

    /// Writes the request into `buf` (signed, if a key was given) at time
    /// `now` (seconds since the epoch); returns its length.
    pub fn request(&mut self, buf: &mut [u8], now: u64) -> Result<usize, TruncationError> {
        let reserve = self.tsig.as_ref().map_or(0, Session::record_len);
        let limit = buf.len().min(MAX_MESSAGE).saturating_sub(reserve);
        let mut builder = MessageBuilder::new(buf, limit)?;
        builder.set_id(self.id);
        builder.set_opcode(Opcode::QUERY.0);
        builder.push_question(self.origin.as_name(), self.qtype, RClass::IN)?;
        if self.qtype == RType::IXFR {
            if let Some((_, rdata, ttl)) = &self.ours {
                builder.set_section(Section::Authority);
                builder.push_record(self.origin.as_name(), RType::SOA, RClass::IN, *ttl, rdata)?;
            }
        }
        let len = builder.finish();
        self.now = now;
        match &mut self.tsig {
            Some(session) => session.sign(buf, len, now),
            None => Ok(len),
        }
    }

    /// Takes the next message of the answer, received at `now`. `Ok(None)`:
    /// more messages are to come; `Ok(Some(_))`: the transfer is complete.
    pub fn message(&mut self, message: &[u8], now: u64) -> Result<Option<Outcome>, XfrError> {
        if self.state == State::Done {
            return Err(XfrError::Malformed("a message after the last"));
        }
        self.messages += 1;
        let view = MessageView::parse(message).map_err(|e| XfrError::Malformed(e.what))?;
        let header = view.header();
        if header.id() != self.id || !header.qr() || header.opcode() != Opcode::QUERY {
            return Err(XfrError::Malformed("not an answer to our request"));
        }
        if let Some(session) = &mut self.tsig {
            self.last_signed = session.verify(message, now)?;
        } else if TsigRecord::find(message).map_err(XfrError::Tsig)?.is_some() {
            return Err(XfrError::Malformed(
                "a signed answer to an unsigned request",
            ));
        }
        let rcode = header.rcode_bits();
        if rcode != 0 {
            return Err(XfrError::Rcode(rcode));
        }
        if header.tc() {
            return Err(XfrError::Malformed("a truncated answer"));
        }
        if let Some(question) = view.question() {
            if !question.name.eq_ignore_case(self.origin.as_name())
                || question.qtype != self.qtype
                || question.qclass != RClass::IN
            {
                return Err(XfrError::Malformed("the question is not ours"));
            }
        } else if self.messages == 1 {
            return Err(XfrError::Malformed("no question in the first message"));
        }
        for record in view.section(Section::Answer) {
            let record = record.map_err(|e| XfrError::Malformed(e.what))?;
            if self.state == State::Done {
                return Err(XfrError::Malformed("records after the last SOA"));
            }
            self.record(message, &record)?;
        }
        // An IXFR answered with the SOA alone: current (RFC 1995 section 2).
        if self.state == State::Second && self.qtype == RType::IXFR {
            let serial = self.soa.as_ref().map_or(0, |soa| soa.2);
            if self
                .ours
                .as_ref()
                .is_some_and(|ours| serial_at_or_after(ours.0, serial))
            {
                self.state = State::Done;
                self.check_signed()?;
                return Ok(Some(Outcome::UpToDate { serial }));
            }
        }
        if self.state != State::Done {
            return Ok(None);
        }
        self.check_signed()?;
        self.finish().map(Some)
    }

    fn check_signed(&self) -> Result<(), XfrError> {
        if self.tsig.is_some() && !self.last_signed {
            return Err(XfrError::Tsig(TsigError::Unsigned));
        }
        Ok(())
    }

    /// One answer record.
    fn record(
        &mut self,
        message: &[u8],
        record: &tern_wire::parse::RecordView<'_>,
    ) -> Result<(), XfrError> {
        if record.class != RClass::IN.0 {
            return Err(XfrError::Malformed("a record of another class"));
        }
        if record.rtype.is_meta() {
            return Err(XfrError::Malformed("a meta type in the answer"));
        }
        let owner = LowerNameBuf::from_name(record.owner.to_buf().as_name());
        if !owner.as_name().ends_with(self.origin.as_name()) {
            return Err(XfrError::OutOfZone(owner.as_name().to_string()));
        }
        let start = self.arena.len();
        self.arena.extend_from_slice(owner.as_bytes());
        let rdata_start = self.arena.len();
        let end = record.rdata_offset + record.rdata.len();
        tern_wire::rdata::expand(
            message,
            record.rtype,
            record.rdata_offset,
            end,
            &mut self.arena,
        )
        .map_err(|e| XfrError::Malformed(e.what))?;
        let rdata_len = u16::try_from(self.arena.len() - rdata_start)
            .map_err(|_| XfrError::Malformed("RDATA over 65535 octets"))?;
        if self.records.len() >= self.limits.records || self.arena.len() > self.limits.bytes {
            return Err(XfrError::TooLarge);
        }
        let is_apex_soa = record.rtype == RType::SOA && owner.as_bytes() == self.origin.as_bytes();
        if record.rtype == RType::SOA && !is_apex_soa {
            return Err(XfrError::Malformed("a SOA record below the apex"));
        }
        let rdata = &self.arena[rdata_start..];
        let serial = if is_apex_soa {
            Some(soa_serial(rdata).ok_or(XfrError::Malformed("a malformed SOA"))?)
        } else {
            None
        };
        let same_as_new = is_apex_soa && self.soa.as_ref().is_some_and(|soa| soa.1 == rdata);
        let received = Received {
            start: start as u32,
            owner_len: owner.as_bytes().len() as u8,
            rtype: record.rtype,
            ttl: record.ttl,
            rdata_len,
            add: self.state == State::Adding,
        };
        match self.state {
            State::First => {
                let Some(serial) = serial else {
                    return Err(XfrError::Malformed(
                        "the first record is not the zone's SOA",
                    ));
                };
                self.soa = Some((record.ttl, rdata.to_vec(), serial));
                self.arena.truncate(start);
                self.state = State::Second;
            }
            State::Second => {
                let new_serial = self.soa.as_ref().map_or(0, |soa| soa.2);
                match serial {
                    Some(_) if same_as_new => {
                        // A zone of its SOA alone.
                        self.arena.truncate(start);
                        self.state = State::Done;
                    }
                    Some(old) if self.qtype == RType::IXFR && old != new_serial => {
                        if self.ours.as_ref().map(|ours| ours.0) != Some(old) {
                            return Err(XfrError::Malformed(
                                "differences that do not start from our serial",
                            ));
                        }
                        self.arena.truncate(start);
                        self.state = State::Deleting;
                        self.differences = true;
                    }
                    Some(_) => return Err(XfrError::Malformed("a second, different SOA")),
                    None => {
                        self.records.push(received);
                        self.state = State::Full;
                    }
                }
            }
            State::Full => {
                if serial.is_some() {
                    if !same_as_new {
                        return Err(XfrError::Malformed("a different SOA in the transfer"));
                    }
                    self.arena.truncate(start);
                    self.state = State::Done;
                } else {
                    self.records.push(received);
                }
            }
            State::Deleting => {
                if serial.is_some() {
                    // The step's new SOA: additions follow.
                    self.arena.truncate(start);
                    self.state = State::Adding;
                } else {
                    self.records.push(received);
                }
            }
            State::Adding => {
                if serial.is_some() {
                    self.arena.truncate(start);
                    // The final SOA, or the next step's old SOA.
                    self.state = if same_as_new {
                        State::Done
                    } else {
                        State::Deleting
                    };
                } else {
                    self.records.push(received);
                }
            }
            State::Done => return Err(XfrError::Malformed("records after the last SOA")),
        }
        Ok(())
    }

    /// Builds the zone from what was received: the records of a full
    /// transfer, or the current zone with the differences applied in order.
    fn finish(&mut self) -> Result<Outcome, XfrError> {
        let (soa_ttl, soa_rdata, _) = self.soa.take().ok_or(XfrError::Malformed("no SOA"))?;
        let origin = self.origin.as_name();
        let mut builder = ZoneBuilder::new(origin);
        builder.insert(origin, RType::SOA, RClass::IN, soa_ttl, &soa_rdata)?;
        if !self.differences {
            builder.reserve(self.records.len(), self.arena.len());
            for record in &self.records {
                let (owner, rdata) = self.parts(record);
                builder.insert(owner, record.rtype, RClass::IN, record.ttl, rdata)?;
            }
            return Ok(Outcome::Zone {
                zone: Box::new(builder.finish()?),
                incremental: false,
            });
        }
        let current = self.current.as_ref().ok_or(XfrError::Malformed(
            "differences without a zone to apply them to",
        ))?;
        // The current records but the apex SOA, by (owner, type, RDATA),
        // with their TTLs; then each deletion and addition in order.
        let mut records: HashMap<Vec<u8>, u32> = HashMap::with_capacity(current.record_count());
        let mut cursor = RecordCursor::default();
        while let Some(record) = current.next_record(&mut cursor) {
            if record.rtype == RType::SOA && record.owner.as_bytes() == origin.as_bytes() {
                continue;
            }
            records.insert(key(record.owner, record.rtype, record.rdata), record.ttl);
        }
        for record in &self.records {
            let (owner, rdata) = self.parts(record);
            let key = key(owner, record.rtype, rdata);
            if record.add {
                records.insert(key, record.ttl);
            } else if records.remove(&key).is_none() {
                return Err(XfrError::Malformed(
                    "a deletion of a record the zone does not have",
                ));
            }
        }
        let mut sorted: Vec<(Vec<u8>, u32)> = records.into_iter().collect();
        sorted.sort_unstable();
        builder.reserve(sorted.len(), sorted.iter().map(|(key, _)| key.len()).sum());
        for (key, ttl) in &sorted {
            let (owner, used) = Name::parse_prefix(key).map_err(|e| XfrError::Malformed(e.what))?;
            let rtype = RType(u16::from_be_bytes([key[used], key[used + 1]]));
            builder.insert(owner, rtype, RClass::IN, *ttl, &key[used + 2..])?;
        }
        Ok(Outcome::Zone {
            zone: Box::new(builder.finish()?),
            incremental: true,
        })
    }

    /// The owner and RDATA of a received record.
    fn parts(&self, record: &Received) -> (Name<'_>, &[u8]) {
        let start = record.start as usize;
        let owner_end = start + usize::from(record.owner_len);
        let owner = Name::from_wire(&self.arena[start..owner_end]).expect("checked when received");
        let rdata = &self.arena[owner_end..owner_end + usize::from(record.rdata_len)];
        (owner, rdata)
    }
}

/// A record's identity for differences: owner (lowercased), type, RDATA.
fn key(owner: Name<'_>, rtype: RType, rdata: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(owner.len() + 2 + rdata.len());
    key.extend_from_slice(owner.as_bytes());
    key.extend_from_slice(&rtype.0.to_be_bytes());
    key.extend_from_slice(rdata);
    key
}

/// The SERIAL of SOA RDATA (the first of the five fields that end it).
fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let at = rdata.len().checked_sub(20)?;
    let b = rdata.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests;
