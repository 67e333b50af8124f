//! Outgoing zone transfers over TCP (and IXFR over UDP, answered with the
//! SOA alone): who may ask, and the stream of
//! messages (RFC 5936 AXFR; RFC 1995 IXFR answered in full or with the SOA
//! alone). The messages come from `tern_xfr::axfr`; this module decides,
//! signs and counts, and `tcp.rs` queues each message on the connection,
//! waiting for the client to read and letting the core's other tasks run
//! between messages, so that no transfer holds a core for longer than one
//! message takes to write (about 16 KiB of records).
//!
//! A request is checked in this order, as RFC 8945 section 5.2 puts the
//! signature first:
//!
//! | check | failing answer |
//! |---|---|
//! | a TSIG record that does not verify | NOTAUTH with the TSIG error (BADKEY, BADSIG, BADTIME), FORMERR if malformed |
//! | not `transfer.tls-only` (every request here is over plain TCP or UDP) | REFUSED |
//! | the client's address in `transfer.allow` (the zone's own, if it has one) | REFUSED |
//! | signed with `transfer.key` (the zone's own), when one is set | REFUSED |
//! | a zone of ours at exactly the question's name, class IN | NOTAUTH |
//! | fewer than [`MAX_TRANSFERS_OUT`] transfers running on this core | SERVFAIL (the secondary retries) |
//!
//! An IXFR from the current serial gets the SOA alone; from a serial the
//! zone's history (`tern_xfr::journal`) reaches back to, the condensed
//! difference; from any other, the whole zone.
//!
//! Error answers echo the question and are signed when the request was.

use std::cell::Cell;
use std::net::IpAddr;
use std::sync::Arc;

use tern_authority::{Catalog, Zone};
use tern_wire::name::LowerNameBuf;
use tern_wire::query::Query;
use tern_wire::types::{Opcode, RClass, RType, Rcode};
use tern_xfr::axfr::{ixfr_serial, serial_at_or_after, Outgoing, MAX_MESSAGE};
use tern_xfr::tsig::{check_parsed_request, Key, RequestCheck, Session};

use crate::signing::{error_answer, failed_check, unix_time};
use crate::TransferConfig;

/// Transfers out that one core runs at once; one more gets SERVFAIL.
pub const MAX_TRANSFERS_OUT: usize = 8;

//----------- Counters -------------------------------------------------------

/// One core's counts of transfer requests.
#[derive(Debug, Default)]
pub(crate) struct XfrOutCounters {
    /// Transfers started (AXFR, and IXFR in full or SOA-only form).
    pub(crate) started: Cell<u64>,
    /// Transfers whose last message was queued.
    pub(crate) completed: Cell<u64>,
    /// Requests refused: address, key, zone, or too many running.
    pub(crate) refused: Cell<u64>,
    /// Requests whose TSIG did not verify.
    pub(crate) bad_tsig: Cell<u64>,
    /// Transfers that ended early: the client stopped reading or closed,
    /// the core stopped, or a record did not fit a message.
    pub(crate) aborted: Cell<u64>,
    /// Transfers running now.
    pub(crate) running: Cell<u64>,
}

//----------- Request --------------------------------------------------------

/// What to do with a TCP query.
pub(crate) enum Start {
    /// Not a transfer request: answer it as usual.
    NotTransfer,
    /// An error answer of this length was written into the output buffer.
    Answer(usize),
    /// Stream this transfer (boxed: it holds a running HMAC state, and
    /// one allocation per transfer costs nothing next to it).
    Stream(Box<Transfer>),
}

/// A transfer under way: the messages to come and the session that signs
/// them.
pub(crate) struct Transfer {
    outgoing: Outgoing<Arc<Zone>>,
    tsig: Option<Session>,
    /// For the log: the zone, the form of the answer and the client.
    origin: LowerNameBuf,
    kind: &'static str,
    peer: IpAddr,
    started: std::time::Instant,
}

impl Transfer {
    /// Logs how the transfer ended (as Knot logs each transfer out).
    pub(crate) fn log_end(&self, complete: bool) {
        let (messages, records) = self.outgoing.sent();
        let signed = if self.tsig.is_some() { ", signed" } else { "" };
        if complete {
            log::info!(
                "{} {}, outgoing, to {}, serial {}: {messages} messages, {records} records{signed}, \
                 in {:.2} s",
                self.origin.as_name(),
                self.kind,
                self.peer,
                self.outgoing.zone().serial(),
                self.started.elapsed().as_secs_f64()
            );
        } else {
            log::warn!(
                "{} {}, outgoing, to {}: aborted after {messages} messages (the client \
                 stopped reading or closed, or the server is stopping)",
                self.origin.as_name(),
                self.kind,
                self.peer
            );
        }
    }

    /// Writes the next message (signed, if the request was) into `out`;
    /// `Ok(None)` once the transfer is complete, `Err` if it cannot go on.
    pub(crate) fn next(&mut self, out: &mut [u8]) -> Result<Option<usize>, ()> {
        let reserve = self.tsig.as_ref().map_or(0, Session::record_len);
        let limit = MAX_MESSAGE.min(out.len()).saturating_sub(reserve);
        let Some(len) = self.outgoing.next_message(out, limit).map_err(|_| ())? else {
            return Ok(None);
        };
        match &mut self.tsig {
            Some(session) => session
                .sign(out, len, unix_time())
                .map(Some)
                .map_err(|_| ()),
            None => Ok(Some(len)),
        }
    }
}

/// Decides what to do with a query from `peer` over TCP (`udp_limit`
/// `None`) or UDP: not a transfer request, an error answer (written into
/// `out`), or a transfer to stream. Over UDP, AXFR is not taken (it stays
/// NOTIMP) and an IXFR that passes the checks is answered with the SOA
/// alone, whatever its serial (RFC 1995 section 4: the client then asks
/// over TCP if it needs more).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start(
    catalog: &Catalog,
    config: &TransferConfig,
    journals: Option<&crate::SharedJournals>,
    counters: &XfrOutCounters,
    query: &Query<'_>,
    peer: IpAddr,
    udp_limit: Option<usize>,
    out: &mut [u8],
) -> Start {
    let Ok(view) = query.message().copied() else {
        return Start::NotTransfer;
    };
    let header = view.header();
    let Some(question) = view.question() else {
        return Start::NotTransfer;
    };
    let taken = match udp_limit {
        None => matches!(question.qtype, RType::AXFR | RType::IXFR),
        Some(_) => question.qtype == RType::IXFR,
    };
    if header.qr() || header.opcode() != Opcode::QUERY || !taken {
        return Start::NotTransfer;
    }
    let now = unix_time();
    let session = match check_parsed_request(&config.keys, &view, now) {
        RequestCheck::Unsigned => None,
        RequestCheck::Signed(session) => Some(session),
        failed => {
            counters.bad_tsig.set(counters.bad_tsig.get() + 1);
            return Start::Answer(failed_check(failed, &view, now, out).unwrap_or(0));
        }
    };
    let refuse = |rcode: Rcode, session: Option<Session>, out: &mut [u8]| {
        counters.refused.set(counters.refused.get() + 1);
        let Some(len) = error_answer(&view, rcode, out) else {
            return Start::Answer(0);
        };
        match session {
            Some(mut session) => Start::Answer(session.sign(out, len, now).unwrap_or(len)),
            None => Start::Answer(len),
        }
    };
    // Every request reaching here came over plain TCP or UDP: with
    // `tls-only`, none is served (REFUSED, as BIND answers a request its
    // `allow-transfer ... transport tls` does not match).
    if config.tls_only {
        return refuse(Rcode::REFUSED, session, out);
    }
    let origin = LowerNameBuf::from_name(question.name);
    let (allow, required) = config.for_zone(origin);
    if !allow.iter().any(|prefix| prefix.contains(peer)) {
        return refuse(Rcode::REFUSED, session, out);
    }
    if let Some(required) = required {
        if !session
            .as_ref()
            .is_some_and(|s| same_key(s.key(), required))
        {
            return refuse(Rcode::REFUSED, session, out);
        }
    }
    let zone = match catalog.get(origin.as_name()) {
        Some(zone) if question.qclass == RClass::IN => Arc::clone(zone),
        _ => return refuse(Rcode::NOTAUTH, session, out),
    };
    if let Some(limit) = udp_limit {
        let mut soa = Outgoing::soa_only(zone, &view);
        let reserve = session.as_ref().map_or(0, Session::record_len);
        let room = limit.min(out.len()).saturating_sub(reserve);
        let Ok(Some(len)) = soa.next_message(out, room) else {
            return Start::Answer(0);
        };
        return Start::Answer(match session {
            Some(mut session) => session.sign(out, len, now).unwrap_or(len),
            None => len,
        });
    }
    if counters.running.get() >= MAX_TRANSFERS_OUT as u64 {
        return refuse(Rcode::SERVFAIL, session, out);
    }
    let client_serial = (question.qtype == RType::IXFR)
        .then(|| ixfr_serial(&view))
        .flatten();
    let up_to_date = client_serial.is_some_and(|serial| serial_at_or_after(serial, zone.serial()));
    // The condensed difference from the client's serial, if the zone's
    // history reaches back to it and forward to the version served.
    let difference = client_serial.filter(|_| !up_to_date).and_then(|serial| {
        let journals = journals?
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let journal = journals.get(origin.as_bytes())?;
        journal
            .ends_at(zone.serial())
            .then(|| journal.since(serial))
            .flatten()
    });
    let (outgoing, kind) = match difference {
        _ if up_to_date => (Outgoing::soa_only(zone, &view), "IXFR (current)"),
        Some(difference) => (Outgoing::incremental(zone, &view, difference), "IXFR"),
        None if question.qtype == RType::IXFR => (Outgoing::full(zone, &view), "IXFR (in full)"),
        None => (Outgoing::full(zone, &view), "AXFR"),
    };
    counters.started.set(counters.started.get() + 1);
    Start::Stream(Box::new(Transfer {
        outgoing,
        tsig: session,
        origin,
        kind,
        peer,
        started: std::time::Instant::now(),
    }))
}

fn same_key(a: &Key, b: &Key) -> bool {
    a.lower_name().as_bytes() == b.lower_name().as_bytes() && a.algorithm() == b.algorithm()
}
