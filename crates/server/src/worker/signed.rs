//! The signed-query stage: a query with a TSIG record (RFC 8945), such as
//! the SOA query a secondary sends before it transfers a zone, is checked
//! against the configured keys and its answer signed; one that fails the
//! check gets NOTAUTH with the TSIG error (FORMERR if malformed). Signed
//! queries never come from or go to the answer cache: `Request::from_query`
//! sends every query with an additional record other than OPT here.
//!
//! A signed UDP answer must fit the client's size with its TSIG record;
//! when it does not, the answer is cut to its header and question with TC
//! set, and that is signed (RFC 8945 section 5.3), so the client retries
//! over TCP.

use tern_authority::{respond_to, Response, Transport};
use tern_wire::query::Query;
use tern_xfr::tsig::{check_parsed_request, RequestCheck, TsigRecord};

use super::answering::Answering;
use super::request::UdpAnswer;
use super::{CLASSIC_UDP_SIZE, TCP_SIZE};
use crate::signing::{failed_check, truncated_answer, unix_time};

impl Answering<'_> {
    /// The answer to `query` if it is signed: checked, answered by
    /// `respond` and signed, or the TSIG error answer. `None`: the query
    /// carries no TSIG record (answer it as usual).
    pub(super) fn signed(
        &self,
        query: &Query<'_>,
        transport: Transport,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        // A message that does not parse is not answered here.
        let view = query.message().ok()?;
        if !matches!(TsigRecord::find_in(view), Ok(Some(_)) | Err(_)) {
            return None;
        }
        let now = unix_time();
        let mut session = match check_parsed_request(&self.transfer.keys, view, now) {
            RequestCheck::Unsigned => return None,
            RequestCheck::Signed(session) => session,
            failed => return failed_check(failed, view, now, out).map(UdpAnswer::Send),
        };
        let limit = match transport {
            Transport::Tcp => TCP_SIZE,
            Transport::Udp => query
                .edns()
                .ok()
                .flatten()
                .map_or(CLASSIC_UDP_SIZE, |edns| usize::from(edns.udp_size))
                .clamp(
                    CLASSIC_UDP_SIZE,
                    usize::from(self.options.max_udp_size).max(CLASSIC_UDP_SIZE),
                ),
        };
        let reserve = session.record_len();
        let room = out.len().min(limit).checked_sub(reserve)?;
        let len = match respond_to(
            self.catalog,
            query,
            transport,
            self.options,
            &[],
            &mut out[..room],
        ) {
            Response::Send(len) => len,
            Response::Drop => return Some(UdpAnswer::Drop),
        };
        let len = match session.sign(out, len, now) {
            Ok(len) if len <= limit => len,
            // Too large with the signature: the header and question alone,
            // truncated, signed.
            _ => {
                let len = truncated_answer(view, out)?;
                session.sign(out, len, now).ok()?
            }
        };
        Some(UdpAnswer::Send(len))
    }
}
