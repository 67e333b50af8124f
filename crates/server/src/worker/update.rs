//! The UPDATE stage (RFC 2136): what a core checks of an UPDATE before
//! handing it off (`crate::update`), each check cheap and bounded:
//!
//! | UPDATE | answer, at once |
//! |---|---|
//! | longer than [`MAX_UPDATE_MESSAGE_LEN`] | REFUSED |
//! | no zone section, or its type is not SOA | FORMERR |
//! | a TSIG that does not verify with any configured key | NOTAUTH with the TSIG error (FORMERR if malformed) |
//! | a zone not ours (not served here) | NOTAUTH |
//! | a zone of ours without `update:` rules, or a secondary zone without `update: forward` or `notauth` | REFUSED |
//! | a secondary zone with `update: forward` (or `notauth`) | handed off: forwarded to its primary, whose answer is relayed as it is (or NOTAUTH) |
//! | otherwise | handed off: the transport takes it ([`Worker::take_update`]) and answers once the zones' owner has |
//!
//! Every answer echoes the ID, the opcode and the zone section, with QR
//! set, and is signed when the request was. A server without `update:`
//! anywhere answers REFUSED for its zones, as before this stage existed
//! (`respond` refused every opcode but QUERY and NOTIFY).

use tern_wire::name::LowerNameBuf;
use tern_wire::query::Query;
use tern_wire::types::{Opcode, RType, Rcode};
use tern_xfr::tsig::{check_parsed_request, RequestCheck};

use super::answering::{request_of, Answering, Peer};
use super::pending::{PendingUpdate, UpdateStage};
use super::request::UdpAnswer;
use super::Worker;
use crate::signing::{error_answer, failed_check, unix_time};

/// The longest UPDATE taken: tern-update's `MAX_UPDATE_MESSAGE_LEN`, what
/// TCP's length prefix can carry.
const MAX_UPDATE_MESSAGE_LEN: usize = 65_535;

impl Answering<'_> {
    /// The answer to `query` if it is an UPDATE (opcode 5, QR clear) that
    /// is answered at once; [`UdpAnswer::Update`] if it is handed off;
    /// `None` if it is no UPDATE.
    pub(super) fn update(
        &self,
        query: &Query<'_>,
        peer: &Peer<'_>,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let view = request_of(query, Opcode::UPDATE)?;
        let now = unix_time();
        let session = match check_parsed_request(&self.transfer.keys, view, now) {
            RequestCheck::Unsigned => None,
            RequestCheck::Signed(session) => Some(session),
            failed => return failed_check(failed, view, now, out).map(UdpAnswer::Send),
        };
        let rcode = match view.question() {
            _ if query.bytes().len() > MAX_UPDATE_MESSAGE_LEN => Rcode::REFUSED,
            None => Rcode::FORMERR,
            Some(zone) if zone.qtype != RType::SOA => Rcode::FORMERR,
            Some(zone) => {
                let origin = LowerNameBuf::from_name(zone.name);
                match (self.catalog.get(origin.as_name()), self.update, peer.get()) {
                    (None, _, _) => Rcode::NOTAUTH,
                    (Some(_), Some(update), Some(client))
                        if (update.config.takes)(origin.as_bytes()) =>
                    {
                        *update.pending.borrow_mut() = Some(PendingUpdate {
                            origin,
                            message: query.bytes().to_vec(),
                            key: session
                                .as_ref()
                                .map(|session| LowerNameBuf::from_name(session.key().lower_name())),
                            client,
                            session,
                        });
                        return Some(UdpAnswer::Update);
                    }
                    _ => Rcode::REFUSED,
                }
            }
        };
        let len = error_answer(view, rcode, out)?;
        let len = match session {
            Some(mut session) => session.sign(out, len, now).unwrap_or(len),
            None => len,
        };
        Some(UdpAnswer::Send(len))
    }
}

impl Worker {
    /// Takes UPDATE for the zones `update` takes.
    pub fn set_update(&mut self, update: crate::update_in::UpdateIn) {
        self.update = Some(UpdateStage {
            config: update,
            pending: std::cell::RefCell::new(None),
        });
    }

    /// The UPDATE an answer of [`UdpAnswer::Update`] left to hand off.
    pub fn take_update(&mut self) -> Option<PendingUpdate> {
        self.update.as_ref()?.pending.borrow_mut().take()
    }
}
