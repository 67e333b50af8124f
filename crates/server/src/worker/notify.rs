//! The NOTIFY stage (RFC 1996): a primary's NOTIFY for one of our
//! secondary zones is answered at once and makes the transfer thread
//! refresh that zone (`crate::xfr_in`); the answer does not wait for the
//! refresh.
//!
//! | NOTIFY | answer |
//! |---|---|
//! | for a zone that is not one of our secondaries (a primary zone, an unknown one, or any zone of a server without secondary zones) | NOTAUTH (Knot) |
//! | from an address that is none of the zone's primaries | REFUSED |
//! | the zone has a key, and the NOTIFY is unsigned or signed with another | REFUSED |
//! | a TSIG that does not verify | NOTAUTH with the TSIG error (FORMERR if malformed) |
//! | otherwise | NOERROR, AA, the question echoed; signed if the NOTIFY was |
//!
//! Every answer echoes the ID, the opcode NOTIFY and the question, with QR
//! set (RD copied; AA only on NOERROR). A server without secondary zones
//! answers NOTIFY too, NOTAUTH as for any zone not one of its
//! secondaries (Knot answers NOTAUTH, NSD REFUSED; NOTIMP would claim that
//! NOTIFY is not implemented: docs/decisions/0001).
//!
//! A flood of NOTIFYs costs a parse and a queued command each; the
//! transfer thread refreshes a zone at most once per pass however many
//! arrive (they only make it due). Other opcodes cost one test of the
//! header's third octet.

use tern_wire::name::LowerNameBuf;
use tern_wire::parse::MessageView;
use tern_wire::query::Query;
use tern_wire::types::{Opcode, Rcode};
use tern_xfr::tsig::{check_parsed_request, RequestCheck, Session};

use super::answering::{request_of, Answering, Peer};
use super::request::UdpAnswer;
use crate::signing::{error_answer, failed_check, unix_time};

impl Answering<'_> {
    /// The answer to `query` if it is a NOTIFY (opcode NOTIFY, QR clear,
    /// one readable question); `None` otherwise (answered as usual).
    pub(super) fn notify(
        &self,
        query: &Query<'_>,
        peer: &Peer<'_>,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let view = request_of(query, Opcode::NOTIFY)?;
        let question = view.question()?;
        let now = unix_time();
        let session = match check_parsed_request(&self.transfer.keys, view, now) {
            RequestCheck::Unsigned => None,
            RequestCheck::Signed(session) => Some(session),
            failed => return failed_check(failed, view, now, out).map(UdpAnswer::Send),
        };
        let origin = LowerNameBuf::from_name(question.name);
        // Without secondary zones, no zone is one of ours to refresh.
        let Some(notify_in) = self.notify else {
            return answer(view, Rcode::NOTAUTH, session, now, out);
        };
        let zones = notify_in
            .zones
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let zone = zones.get(origin.as_bytes());
        let peer = zone.and_then(|_| peer.get()).map(|peer| peer.ip());
        let rcode = match (zone, peer) {
            (None, _) => Rcode::NOTAUTH,
            (Some(zone), Some(peer))
                if zone.primaries.iter().any(|primary| primary.ip() == peer)
                    && zone.key.as_ref().is_none_or(|key| {
                        session.as_ref().is_some_and(|session| {
                            session.key().lower_name().as_bytes() == key.lower_name().as_bytes()
                                && session.key().algorithm() == key.algorithm()
                        })
                    }) =>
            {
                (notify_in.refresh)(origin);
                Rcode::NOERROR
            }
            _ => Rcode::REFUSED,
        };
        answer(view, rcode, session, now, out)
    }
}

/// The answer to a NOTIFY: ID, opcode, RD and question echoed, QR set, AA
/// on NOERROR; signed if the NOTIFY was.
fn answer(
    view: &MessageView<'_>,
    rcode: Rcode,
    session: Option<Session>,
    now: u64,
    out: &mut [u8],
) -> Option<UdpAnswer> {
    let len = error_answer(view, rcode, out)?;
    if rcode == Rcode::NOERROR {
        out[2] |= 0x04; // AA
    }
    let len = match session {
        Some(mut session) => session.sign(out, len, now).unwrap_or(len),
        None => len,
    };
    Some(UdpAnswer::Send(len))
}
