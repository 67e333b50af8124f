//! The request stage: what the cache path needs of a query parsed once
//! (a [`Query`], made by the transport), and what the worker decided for
//! it.

use tern_cache::forward::ForwardKey;
use tern_cache::CacheKey;
use tern_wire::parse::{MessageView, Question, HEADER_LEN};
use tern_wire::query::Query;
use tern_wire::types::{RClass, RType};

use super::CLASSIC_UDP_SIZE;
use tern_authority::{cookie, nsid};

//----------- Request --------------------------------------------------------

/// What the cache path needs of one query, taken from its [`Query`]: the
/// parsed message (borrowed from the query, which borrows the receive
/// buffer), its cache key (borrowed from where the caller made it with
/// [`cache_key`]: a key is a few hundred octets, which a move into the
/// request copied, about 50 instructions a query) and its UDP size limit.
pub(super) struct Request<'q> {
    pub(super) view: &'q MessageView<'q>,
    /// The view's question (a request has one).
    pub(super) question: &'q Question<'q>,
    pub(super) key: &'q CacheKey,
    pub(super) limit: usize,
    /// The options of the query's OPT (empty without one), for the cookie
    /// check.
    pub(super) options: &'q [u8],
    /// The OPT holds an NSID option (RFC 5001): the answer gets ours, if
    /// one is configured. Only looked for when there are options.
    pub(super) nsid: bool,
}

//----------- UdpAnswer ------------------------------------------------------

/// What the UDP path (or the TCP path, `Worker::answer_tcp_from`)
/// decided for one query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpAnswer {
    /// Send the first `len` octets of the output buffer.
    Send(usize),
    /// Send nothing.
    Drop,
    /// Forward upstream: call `Worker::forward` (the UDP loop does; the
    /// TCP read half calls `Worker::forward_tcp`).
    Forward,
    /// An UPDATE to hand off: take it with `Worker::take_update`; its
    /// answer is sent once the zones' owner has answered.
    Update,
}

//----------- Forwarding -----------------------------------------------------

/// What starting a forward did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forwarding {
    /// The client's answer was written at once into the output buffer
    /// (too many questions in flight: a stale answer or SERVFAIL); its
    /// length.
    Answered(usize),
    /// The client waits: its answer comes as an [`Action::Answer`].
    Waiting,
    /// The query could not be forwarded (forwarding is off, or the query
    /// is not one the forwarder takes); nothing will come.
    Dropped,
}

/// The cache key of a query, written into `key`, which the caller keeps
/// (on its stack, where it made it: written in place, its name is not
/// moved) for [`Request::from_query`]; false for a query no key can be made
/// for (malformed, not a plain QUERY, EDNS version above 0, an additional
/// record other than OPT such as a TSIG).
#[inline(always)]
pub(super) fn cache_key(query: &Query<'_>, key: &mut CacheKey) -> bool {
    let (Ok(view), Ok(edns)) = (query.message(), query.edns()) else {
        return false;
    };
    key.set_from_query(view, edns.as_ref())
}

impl<'q> Request<'q> {
    /// What the cache path needs of a query it may answer, with `key`, the
    /// query's [`cache_key`]; `None` sends the query to `respond` (no key,
    /// a COOKIE option of a bad length, a class other than IN or ANY, a
    /// zone transfer). Class ANY, answered as IN, is cached under its own
    /// key: the answer echoes the question's class.
    ///
    /// Reads nothing again: the message and its OPT come from `query`.
    #[inline(always)]
    pub(super) fn from_query(
        query: &'q Query<'q>,
        key: Option<&'q CacheKey>,
        full_udp_size: usize,
    ) -> Option<Self> {
        let key = key?;
        let view = query.message().ok()?;
        let question = view.question_ref()?;
        if !matches!(question.qclass, RClass::IN | RClass::ANY)
            || matches!(question.qtype, RType::AXFR | RType::IXFR)
        {
            return None;
        }
        let edns = query.edns().ok()?;
        let options = edns.map_or(&[][..], |edns| edns.options);
        // Most queries carry no option: one branch.
        let nsid = !options.is_empty() && nsid::requested(options);
        if !options.is_empty() && cookie::is_malformed(options) {
            return None;
        }
        let limit = match edns {
            None => CLASSIC_UDP_SIZE,
            Some(edns) => usize::from(edns.udp_size)
                .max(CLASSIC_UDP_SIZE)
                .min(full_udp_size),
        };
        Some(Request {
            view,
            question,
            key,
            limit,
            options,
            nsid,
        })
    }
}

/// The forward key of a request: its cache key's name, type, class and DO,
/// and the query's CD.
pub(super) fn forward_key(request: &Request<'_>) -> ForwardKey {
    ForwardKey {
        name: request.key.name,
        qtype: request.key.qtype,
        qclass: request.key.qclass,
        dnssec_ok: request.key.dnssec_ok,
        checking_disabled: request.view.header().cd(),
    }
}

/// Where a request's header and question end.
pub(super) fn head_len(request: &Request<'_>) -> usize {
    HEADER_LEN + request.question.bytes.len()
}
