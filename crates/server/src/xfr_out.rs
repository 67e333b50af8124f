//! Outgoing zone transfers over TCP, over TLS (XoT, RFC 9103, on the
//! `tls.listen` addresses) and IXFR over UDP (answered with the SOA
//! alone): who may ask, and the stream of
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
//! | over TLS, or not `transfer.tls-only` | REFUSED |
//! | over TLS with `tls.client-ca` set: a client certificate that chained to it | REFUSED |
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
//!
//! Over TLS, everything else is as over TCP: the same checks, the same
//! limit of transfers per core (shared by both), the same streaming (the
//! framing of `tcp.rs` over the decrypted stream). The counters are kept
//! by transport ([`TRANSPORTS`]) and refusals by reason
//! ([`REFUSALS`]).

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

/// Transfers out that one core runs at once (over TCP and TLS together);
/// one more gets SERVFAIL.
pub const MAX_TRANSFERS_OUT: usize = 8;

/// The transports of transfers out, `tern_transfers_out_total{transport}`.
pub const TRANSPORTS: [&str; 3] = ["udp", "tcp", "tls"];
/// The outcomes of transfer requests,
/// `tern_transfers_out_total{outcome}`: started, then completed or
/// aborted; or refused (by [`REFUSALS`]), or a TSIG that did not verify.
pub const OUTCOMES: [&str; 5] = ["started", "completed", "aborted", "refused", "bad-tsig"];
/// Why a request was refused, `tern_transfers_out_refused_total{reason}`:
/// `tls-only` (over plain TCP or UDP with `transfer.tls-only`),
/// `client-certificate` (over TLS without a verified client certificate
/// while `tls.client-ca` is set), `address` (not in `transfer.allow`),
/// `key` (not signed with `transfer.key`), `zone` (not ours), `busy`
/// ([`MAX_TRANSFERS_OUT`] running).
pub const REFUSALS: [&str; 6] = [
    "tls-only",
    "client-certificate",
    "address",
    "key",
    "zone",
    "busy",
];

const STARTED: usize = 0;
const COMPLETED: usize = 1;
const ABORTED: usize = 2;
const REFUSED: usize = 3;
const BAD_TSIG: usize = 4;

const REFUSED_TLS_ONLY: usize = 0;
const REFUSED_CERTIFICATE: usize = 1;
const REFUSED_ADDRESS: usize = 2;
const REFUSED_KEY: usize = 3;
const REFUSED_ZONE: usize = 4;
const REFUSED_BUSY: usize = 5;

//----------- Channel --------------------------------------------------------

/// The transport a transfer request came over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channel {
    /// UDP, with the answer's size limit: an IXFR gets the SOA alone.
    Udp(usize),
    /// Plain TCP.
    Tcp,
    /// TLS (the `tls.listen` addresses).
    Tls(ClientCertificate),
}

impl Channel {
    /// The slot in [`TRANSPORTS`].
    fn slot(self) -> usize {
        match self {
            Channel::Udp(_) => 0,
            Channel::Tcp => 1,
            Channel::Tls(_) => 2,
        }
    }
}

/// What a TLS connection's client proved with a certificate (mutual TLS,
/// RFC 9103 section 9.3.3), as the handshake left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientCertificate {
    /// `tls.client-ca` was not set at the handshake: none asked.
    NotRequired,
    /// A certificate that chained to `tls.client-ca` (rustls verified it).
    Verified,
    /// Asked for and not given: queries are answered, transfers refused.
    Missing,
}

//----------- Counters -------------------------------------------------------

/// One core's counts of transfer requests.
#[derive(Debug, Default)]
pub(crate) struct XfrOutCounters {
    /// By transport ([`TRANSPORTS`]), then outcome ([`OUTCOMES`]).
    pub(crate) outcomes: [[Cell<u64>; 5]; 3],
    /// Refusals by reason ([`REFUSALS`]), whatever the transport.
    pub(crate) refusals: [Cell<u64>; 6],
    /// Transfers running now.
    pub(crate) running: Cell<u64>,
}

impl XfrOutCounters {
    fn count(&self, channel: Channel, outcome: usize) {
        let count = &self.outcomes[channel.slot()][outcome];
        count.set(count.get() + 1);
    }

    fn refuse(&self, channel: Channel, reason: usize) {
        self.count(channel, REFUSED);
        let count = &self.refusals[reason];
        count.set(count.get() + 1);
    }

    /// A copy, for a snapshot.
    pub(crate) fn stats(&self) -> crate::stats::XfrOutStats {
        crate::stats::XfrOutStats {
            outcomes: self
                .outcomes
                .each_ref()
                .map(|row| row.each_ref().map(Cell::get)),
            refusals: self.refusals.each_ref().map(Cell::get),
            running: self.running.get(),
        }
    }

    /// A transfer of `transfer` ended: completed, or not.
    pub(crate) fn finish(&self, transfer: &Transfer, complete: bool) {
        transfer.log_end(complete);
        self.running.set(self.running.get().saturating_sub(1));
        let outcome = if complete { COMPLETED } else { ABORTED };
        self.count(transfer.channel, outcome);
    }

    /// A transfer starts streaming.
    pub(crate) fn begin(&self) {
        self.running.set(self.running.get() + 1);
    }
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
    channel: Channel,
}

impl Transfer {
    /// Logs how the transfer ended (as Knot logs each transfer out).
    pub(crate) fn log_end(&self, complete: bool) {
        let (messages, records) = self.outgoing.sent();
        let signed = if self.tsig.is_some() { ", signed" } else { "" };
        let over = TRANSPORTS[self.channel.slot()];
        if complete {
            log::info!(
                "{} {}, outgoing, to {}, serial {}: {messages} messages, {records} records{signed}, \
                 in {:.2} s, over {over}",
                self.origin.as_name(),
                self.kind,
                self.peer,
                self.outgoing.zone().serial(),
                self.started.elapsed().as_secs_f64()
            );
        } else {
            log::warn!(
                "{} {}, outgoing, to {}, over {over}: aborted after {messages} messages (the client \
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

/// Decides what to do with a query from `peer` over `channel`: not a
/// transfer request, an error answer (written into `out`), or a transfer
/// to stream. Over UDP, AXFR is not taken (it stays NOTIMP) and an IXFR
/// that passes the checks is answered with the SOA alone, whatever its
/// serial (RFC 1995 section 4: the client then asks over TCP if it needs
/// more).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start(
    catalog: &Catalog,
    config: &TransferConfig,
    journals: Option<&crate::SharedJournals>,
    counters: &XfrOutCounters,
    query: &Query<'_>,
    peer: IpAddr,
    channel: Channel,
    out: &mut [u8],
) -> Start {
    let Ok(view) = query.message().copied() else {
        return Start::NotTransfer;
    };
    let header = view.header();
    let Some(question) = view.question() else {
        return Start::NotTransfer;
    };
    let taken = match channel {
        Channel::Udp(_) => question.qtype == RType::IXFR,
        Channel::Tcp | Channel::Tls(_) => matches!(question.qtype, RType::AXFR | RType::IXFR),
    };
    if header.qr() || header.opcode() != Opcode::QUERY || !taken {
        return Start::NotTransfer;
    }
    let now = unix_time();
    let session = match check_parsed_request(&config.keys, &view, now) {
        RequestCheck::Unsigned => None,
        RequestCheck::Signed(session) => Some(session),
        failed => {
            counters.count(channel, BAD_TSIG);
            return Start::Answer(failed_check(failed, &view, now, out).unwrap_or(0));
        }
    };
    let refuse = |rcode: Rcode, reason: usize, session: Option<Session>, out: &mut [u8]| {
        counters.refuse(channel, reason);
        let Some(len) = error_answer(&view, rcode, out) else {
            return Start::Answer(0);
        };
        match session {
            Some(mut session) => Start::Answer(session.sign(out, len, now).unwrap_or(len)),
            None => Start::Answer(len),
        }
    };
    // With `tls-only`, nothing over plain TCP or UDP is served (REFUSED,
    // as BIND answers a request its `allow-transfer ... transport tls`
    // does not match).
    match channel {
        Channel::Udp(_) | Channel::Tcp if config.tls_only => {
            return refuse(Rcode::REFUSED, REFUSED_TLS_ONLY, session, out);
        }
        Channel::Tls(ClientCertificate::Missing) => {
            return refuse(Rcode::REFUSED, REFUSED_CERTIFICATE, session, out);
        }
        _ => {}
    }
    let origin = LowerNameBuf::from_name(question.name);
    let (allow, required) = config.for_zone(origin);
    if !allow.iter().any(|prefix| prefix.contains(peer)) {
        return refuse(Rcode::REFUSED, REFUSED_ADDRESS, session, out);
    }
    if let Some(required) = required {
        if !session
            .as_ref()
            .is_some_and(|s| same_key(s.key(), required))
        {
            return refuse(Rcode::REFUSED, REFUSED_KEY, session, out);
        }
    }
    let zone = match catalog.get(origin.as_name()) {
        Some(zone) if question.qclass == RClass::IN => Arc::clone(zone),
        _ => return refuse(Rcode::NOTAUTH, REFUSED_ZONE, session, out),
    };
    if let Channel::Udp(limit) = channel {
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
        return refuse(Rcode::SERVFAIL, REFUSED_BUSY, session, out);
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
    counters.count(channel, STARTED);
    Start::Stream(Box::new(Transfer {
        outgoing,
        tsig: session,
        origin,
        kind,
        peer,
        started: std::time::Instant::now(),
        channel,
    }))
}

fn same_key(a: &Key, b: &Key) -> bool {
    a.lower_name().as_bytes() == b.lower_name().as_bytes() && a.algorithm() == b.algorithm()
}
