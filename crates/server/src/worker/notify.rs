//! The NOTIFY stage (RFC 1996): a primary's NOTIFY for one of our
//! secondary zones is answered at once and makes the transfer thread
//! refresh that zone (`crate::xfr_in`); the answer does not wait for the
//! refresh.
//!
//! | NOTIFY | answer |
//! |---|---|
//! | for a zone that is not one of our secondaries | NOTAUTH |
//! | from an address that is none of the zone's primaries | REFUSED |
//! | the zone has a key, and the NOTIFY is unsigned or signed with another | REFUSED |
//! | a TSIG that does not verify | NOTAUTH with the TSIG error (FORMERR if malformed) |
//! | otherwise | NOERROR, AA, the question echoed; signed if the NOTIFY was |
//!
//! A flood of NOTIFYs costs a parse and a queued command each; the
//! transfer thread refreshes a zone at most once per pass however many
//! arrive (they only make it due).

use std::net::IpAddr;

use tern_wire::name::LowerNameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::{Opcode, Rcode};
use tern_xfr::tsig::{check_request, RequestCheck};

use super::answer::Answering;
use super::request::UdpAnswer;
use crate::signing::{error_answer, failed_check, unix_time};

impl Answering<'_> {
    /// The answer to `query` if it is a NOTIFY and NOTIFYs are taken (there
    /// are secondary zones); `None` otherwise (answered as usual: NOTIMP).
    pub(super) fn notify(
        &self,
        query: &[u8],
        peer: Option<IpAddr>,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let notify_in = self.notify?;
        let view = MessageView::parse(query).ok()?;
        let header = view.header();
        if header.opcode() != Opcode::NOTIFY || header.qr() {
            return None;
        }
        let question = view.question()?;
        let now = unix_time();
        let session = match check_request(&self.transfer.keys, query, now) {
            RequestCheck::Unsigned => None,
            RequestCheck::Signed(session) => Some(session),
            failed => return failed_check(failed, &view, now, out).map(UdpAnswer::Send),
        };
        let origin = LowerNameBuf::from_name(question.name);
        let zones = notify_in
            .zones
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let zone = zones.get(origin.as_bytes());
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
                notify_in.handle.refresh(origin);
                Rcode::NOERROR
            }
            _ => Rcode::REFUSED,
        };
        let len = error_answer(&view, rcode, out)?;
        if rcode == Rcode::NOERROR {
            out[2] |= 0x04; // AA
        }
        let len = match session {
            Some(mut session) => session.sign(out, len, now).unwrap_or(len),
            None => len,
        };
        Some(UdpAnswer::Send(len))
    }
}
