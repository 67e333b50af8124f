//! The messages of an outgoing zone transfer: AXFR (RFC 5936) and the
//! full and up-to-date forms of an IXFR answer (RFC 1995 section 4).
//!
//! An [`Outgoing`] transfer holds the zone (an `Arc<Zone>` in the server,
//! so that a reload during the transfer does not change what it sends)
//! and a [`RecordCursor`]; each [`Outgoing::next_message`] writes one
//! message of about [`MESSAGE_TARGET`] octets, so that the server can let
//! other work run between messages and wait for the client to read.
//!
//! ```text
//!   first message:  question, SOA, records...
//!   later messages: records...
//!   last message:   records..., SOA
//! ```
//!
//! Every message echoes the query's ID, sets QR and AA and copies RD
//! (RFC 5936 section 2.2.1); the question is in the first message only, as
//! BIND and Knot send it. Names are compressed within each message.

use core::ops::Deref;

use tern_authority::{RecordCursor, Zone, ZoneRecord};
use tern_wire::build::MessageBuilder;
use tern_wire::parse::{MessageView, Section};
use tern_wire::types::{RClass, RType};
use tern_wire::TruncationError;

use crate::journal::Difference;

// tern-server takes serial arithmetic from here, as before it had a module.
pub use crate::serial::serial_at_or_after;

/// A transfer message is closed once it holds this many octets (NSD and
/// Knot send messages of 16 to 64 KiB); one record larger than the rest
/// of the message still goes in, up to the 65,535 octets TCP can frame.
pub const MESSAGE_TARGET: usize = 16 * 1024;

/// The largest message TCP can frame.
pub const MAX_MESSAGE: usize = 65_535;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing sent yet: the question and the SOA come next.
    Start,
    /// Records next, then the closing SOA.
    Records,
    /// Only the closing SOA is left (it did not fit the last message).
    ClosingSoa,
    /// Everything was sent.
    Done,
}

/// One outgoing transfer of a zone.
#[derive(Debug)]
pub struct Outgoing<Z> {
    zone: Z,
    id: u16,
    rd: bool,
    question: Vec<u8>,
    cursor: RecordCursor,
    state: State,
    /// The whole zone, or only its SOA (an IXFR from an up-to-date serial).
    soa_only: bool,
    target: usize,
    messages: u64,
    records: u64,
    /// An incremental answer: the difference and the next item of
    /// `SOA(new) SOA(old) deletions SOA(new) additions SOA(new)`.
    incremental: Option<(Difference, usize)>,
}

impl<Z: Deref<Target = Zone>> Outgoing<Z> {
    /// The whole zone, answering `query` (an AXFR, or an IXFR answered in
    /// full).
    pub fn full(zone: Z, query: &MessageView<'_>) -> Self {
        Self::new(zone, query, false)
    }

    /// The zone's SOA alone: the answer to an IXFR whose serial is not
    /// older than the zone's (RFC 1995 section 2).
    pub fn soa_only(zone: Z, query: &MessageView<'_>) -> Self {
        Self::new(zone, query, true)
    }

    /// An IXFR answered with `difference` (condensed, from the client's
    /// serial to the zone's), in the form of RFC 1995 section 4.
    pub fn incremental(zone: Z, query: &MessageView<'_>, difference: Difference) -> Self {
        let mut outgoing = Self::new(zone, query, false);
        outgoing.incremental = Some((difference, 0));
        outgoing
    }

    fn new(zone: Z, query: &MessageView<'_>, soa_only: bool) -> Self {
        Outgoing {
            zone,
            id: query.header().id(),
            rd: query.header().rd(),
            question: query.question().map_or_else(Vec::new, |q| q.bytes.to_vec()),
            cursor: RecordCursor::default(),
            state: State::Start,
            soa_only,
            target: MESSAGE_TARGET,
            messages: 0,
            records: 0,
            incremental: None,
        }
    }

    /// Closes messages at `target` octets instead of [`MESSAGE_TARGET`]
    /// (tests use small ones to see many messages).
    pub fn with_target(mut self, target: usize) -> Self {
        self.target = target;
        self
    }

    /// The zone being sent.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    /// Whether the last message has been written.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Messages and records written so far.
    pub fn sent(&self) -> (u64, u64) {
        (self.messages, self.records)
    }

    /// Writes the next message into `buf`, at most `limit` octets (leave
    /// room for a TSIG record there); `None` once the transfer is complete.
    /// An error means a record did not fit even an empty message: the
    /// transfer cannot go on.
    pub fn next_message(
        &mut self,
        buf: &mut [u8],
        limit: usize,
    ) -> Result<Option<usize>, TruncationError> {
        if self.state == State::Done {
            return Ok(None);
        }
        let mut builder = MessageBuilder::new(buf, limit.min(MAX_MESSAGE))?;
        builder.set_id(self.id);
        builder.set_qr(true);
        builder.set_aa(true);
        builder.set_rd(self.rd);
        if self.state == State::Start && !self.question.is_empty() {
            builder.push_question_bytes(&self.question)?;
        }
        builder.set_section(Section::Answer);
        if self.incremental.is_some() {
            return self.next_incremental(builder).map(Some);
        }
        let mut written = 0u64;
        let soa = self.zone.soa_record();
        if self.state == State::Start {
            push(&mut builder, &soa)?;
            written += 1;
            self.state = if self.soa_only {
                State::Done
            } else {
                State::Records
            };
        }
        // Every message carries at least one record. Bounded: each pass
        // writes a record or ends the message.
        while self.state == State::Records && (written == 0 || builder.len() < self.target) {
            let before = self.cursor;
            let Some(record) = self.zone.next_record(&mut self.cursor) else {
                self.state = State::ClosingSoa;
                break;
            };
            if record.rtype == RType::SOA && record.owner.as_bytes() == soa.owner.as_bytes() {
                continue; // the apex SOA opens and closes the transfer
            }
            if push(&mut builder, &record).is_err() {
                if written == 0 {
                    return Err(TruncationError);
                }
                self.cursor = before;
                break;
            }
            written += 1;
        }
        if self.state == State::ClosingSoa && (written == 0 || builder.len() < self.target) {
            match push(&mut builder, &soa) {
                Ok(()) => {
                    written += 1;
                    self.state = State::Done;
                }
                Err(err) if written == 0 => return Err(err),
                Err(_) => {}
            }
        }
        self.messages += 1;
        // The closing SOA counts once; the opening one is part of the data.
        self.records += written;
        Ok(Some(builder.finish()))
    }
}

impl<Z: Deref<Target = Zone>> Outgoing<Z> {
    /// One message of an incremental answer.
    fn next_incremental(
        &mut self,
        mut builder: MessageBuilder<'_>,
    ) -> Result<usize, TruncationError> {
        let origin = self.zone.origin();
        let Some((difference, next)) = &mut self.incremental else {
            return Ok(builder.finish());
        };
        let (deleted, added) = (difference.deleted.len(), difference.added.len());
        let total = 4 + deleted + added;
        let mut written = 0u64;
        // Every message carries at least one record; each pass writes one.
        while *next < total && (written == 0 || builder.len() < self.target) {
            let item = *next;
            let result = if item == 1 {
                let (ttl, rdata) = &difference.from_soa;
                builder.push_record(origin, RType::SOA, RClass::IN, *ttl, rdata)
            } else if item == 0 || item == 2 + deleted || item == total - 1 {
                let (ttl, rdata) = &difference.to_soa;
                builder.push_record(origin, RType::SOA, RClass::IN, *ttl, rdata)
            } else {
                let record = if item < 2 + deleted {
                    &difference.deleted[item - 2]
                } else {
                    &difference.added[item - 3 - deleted]
                };
                let owner =
                    tern_wire::name::Name::from_wire(&record.owner).map_err(|_| TruncationError)?;
                builder.push_record(owner, record.rtype, RClass::IN, record.ttl, &record.rdata)
            };
            match result {
                Ok(()) => {
                    written += 1;
                    *next += 1;
                }
                Err(err) if written == 0 => return Err(err),
                Err(_) => break,
            }
        }
        if *next == total {
            self.state = State::Done;
        }
        self.messages += 1;
        self.records += written;
        Ok(builder.finish())
    }
}

fn push(builder: &mut MessageBuilder<'_>, record: &ZoneRecord<'_>) -> Result<(), TruncationError> {
    builder.push_record(
        record.owner,
        record.rtype,
        RClass::IN,
        record.ttl,
        record.rdata,
    )
}

/// The serial of the SOA record in an IXFR query's authority section
/// (RFC 1995 section 3), if there is one.
pub fn ixfr_serial(query: &MessageView<'_>) -> Option<u32> {
    query
        .section(Section::Authority)
        .flatten()
        .find(|record| record.rtype == RType::SOA)
        .and_then(|record| {
            // SERIAL is the first of the five 32-bit fields that end the
            // RDATA, whatever the (possibly compressed) names before them.
            let at = record.rdata.len().checked_sub(20)?;
            let b = record.rdata.get(at..at + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        })
}

#[cfg(test)]
mod tests;
