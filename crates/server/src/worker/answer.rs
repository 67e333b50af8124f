//! The answer stage: the answer cache, then `respond`, over UDP and TCP,
//! and the routing of forwardable queries to the forwarder.

use std::net::SocketAddr;

use bumpalo::Bump;
use tern_authority::cookie::CookieCheck;
use tern_authority::{respond_to, respond_vetted, Response, Transport};
use tern_cache::forward::Forwarder;
use tern_cache::{CacheKey, ResponseCache};

use super::answering::{Answering, Peer};
use super::request::{cache_key, forward_key, head_len, Request, UdpAnswer};
use super::{CLASSIC_UDP_SIZE, TCP_SIZE};
use crate::rrl::RateLimiter;
use crate::stats::{zone_tag, Counters};
use tern_wire::hash::HashedName;
use tern_wire::query::Query;
use tern_wire::types::{RClass, RType};

impl Answering<'_> {
    /// The cache first, then `respond`; the request's views go in `arena`,
    /// its cache key in `key` (the worker's, written in place each query).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn udp(
        &self,
        _arena: &Bump,
        key: &mut CacheKey,
        cache: &mut ResponseCache,
        forwarder: Option<&mut Forwarder>,
        limiter: Option<&mut RateLimiter>,
        counters: &mut Counters,
        query: &Query<'_>,
        peer: &Peer<'_>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        // The key is the worker's, kept from query to query and written in
        // place: its name's 256 octets are neither moved nor zeroed again
        // (the octets past a name are read by nothing). A `Request` (with
        // the key borrowed) stays on the stack, where it is made.
        let keyed = cache_key(query, key);
        let key = &*key;
        let made = Request::from_query(query, keyed.then_some(key), self.full_udp_size);
        let Some(request) = made.as_ref() else {
            counters.set_type_of(query);
            if let Some(answer) = self.ixfr_over_udp(query, peer, out) {
                return answer;
            }
            // NOTIFY, with or without secondary zones (the peer is read
            // only for a NOTIFY to one of them).
            if let Some(answer) = self.notify(query, peer, out) {
                return answer;
            }
            if let Some(answer) = self.update(query, peer, out) {
                return answer;
            }
            if let Some(answer) = self.signed(query, Transport::Udp, out) {
                return answer;
            }
            let check = self.cookie_of(query, peer);
            counters.count_cookie(&check);
            let extra = check
                .reply_option()
                .map_or(&[][..], |option| option.as_bytes());
            let answer = respond_to(
                self.catalog,
                query,
                Transport::Udp,
                self.options,
                extra,
                out,
            )
            .into();
            return match (limiter, peer) {
                (Some(limiter), peer) => {
                    self.limit_unparsed(limiter, counters, query, &check, peer, now, answer, out)
                }
                (None, _) => answer,
            };
        };
        counters.set_type(request.key.qtype.0);
        let bytes = query.bytes();
        // A query to forward names no zone of ours, and the answer cache
        // holds only our zones' answers (respond refuses other names, and
        // refusals are not cached): it would miss. Decide forwarding first
        // (one `catalog.find`) and skip its probe and hash. Without a
        // forwarder (a server of zones only), not even the call.
        if forwarder.is_some() {
            if let Some(answer) =
                self.forwardable(request, forwarder, bytes, peer, request.limit, now, out)
            {
                return answer;
            }
        }
        // One hash of the key for the probe and, on a miss, the insert.
        let hash = cache.key_hash(request.key);
        let answer = if let Some((len, zone)) =
            cache.answer_hashed(request.key, hash, bytes, request.limit, out)
        {
            counters.cache_hits += 1;
            counters.zone = zone;
            UdpAnswer::Send(len)
        } else {
            counters.cache_misses += 1;
            // The zone's counters: found by respond on a miss (a cache
            // key's query is always looked up); the cache keeps it with the
            // answer for the hits.
            // The name's hash made for the cache's key is the zone
            // index's (the answer cache hashes under the process's key):
            // the look-up of the name hashes nothing. The query's checks
            // are the request's: respond does not make them again.
            let lowered = HashedName::with_hash(request.key.name.as_name(), hash.name());
            let (response, zone) = respond_vetted(
                self.catalog,
                query,
                request.view.header(),
                request.question,
                query.edns_ref(),
                lowered,
                self.fill_options,
                out,
            );
            let zone = zone_tag(zone);
            counters.zone = zone;
            // Only an answer written at the full size is what respond writes
            // for every client whose limit it fits; the cache checks the fit.
            // Written just now for this key's query: not parsed again.
            let full_size = !request.key.edns || request.limit == self.full_udp_size;
            if let (Response::Send(len), true) = (response, full_size) {
                cache.insert_written(request.key, hash, &out[..len], head_len(request), zone);
            }
            response.into()
        };
        // Most queries carry no option: one branch.
        let (check, answer) = if request.options.is_empty() {
            (CookieCheck::None, answer)
        } else {
            let check = self.cookie(request.options, peer);
            counters.count_cookie(&check);
            let answer = self.with_options(request.nsid, &check, query, request.limit, answer, out);
            (check, answer)
        };
        let Some(limiter) = limiter else {
            return answer;
        };
        match peer.get() {
            Some(peer) => {
                let question = Some((request.key.name.as_name(), request.key.qtype));
                self.limit(
                    limiter,
                    counters,
                    (query, &check),
                    question,
                    peer.ip(),
                    now,
                    answer,
                    out,
                )
            }
            _ => answer,
        }
    }
}

impl Answering<'_> {
    /// The TCP path: a forwardable query is answered from the forward
    /// cache or comes back as [`UdpAnswer::Forward`], as over UDP but never
    /// truncated below [`TCP_SIZE`]; anything else goes to `respond`. The
    /// answer cache is UDP's only.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tcp(
        &self,
        forwarder: Option<&mut Forwarder>,
        query: &Query<'_>,
        request: Option<&Request<'_>>,
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        let read = || peer;
        let peer = Peer::new(&read);
        if forwarder.is_some() && peer.get().is_some() {
            if let Some(request) = request {
                if let Some(answer) =
                    self.forwardable(request, forwarder, query.bytes(), &peer, TCP_SIZE, now, out)
                {
                    return answer;
                }
            }
        }
        if let Some(answer) = self.notify(query, &peer, out) {
            return answer;
        }
        if let Some(answer) = self.update(query, &peer, out) {
            return answer;
        }
        if let Some(answer) = self.signed(query, Transport::Tcp, out) {
            return answer;
        }
        let check = self.cookie_of(query, &peer);
        let extra = check
            .reply_option()
            .map_or(&[][..], |option| option.as_bytes());
        respond_to(
            self.catalog,
            query,
            Transport::Tcp,
            self.options,
            extra,
            out,
        )
        .into()
    }

    /// For a query to forward (RD set, class IN, the client in
    /// `forward.allow`, the name in none of our zones): the forward cache's
    /// answer written at `limit`, or [`UdpAnswer::Forward`]. `None`: not a
    /// query to forward. Class ANY, which we answer as IN for our zones, is
    /// not forwarded (what an upstream does with it varies): `respond`
    /// refuses it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn forwardable(
        &self,
        request: &Request<'_>,
        forwarder: Option<&mut Forwarder>,
        query: &[u8],
        peer: &Peer<'_>,
        limit: usize,
        now: u64,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let forwarder = forwarder?;
        let peer = peer.get()?;
        if !request.view.header().rd()
            || request.key.qclass != RClass::IN
            || !forwarder.config().allows(peer.ip())
            || self.serves(request)
        {
            return None;
        }
        let key = forward_key(request);
        let head_len = head_len(request);
        Some(
            match forwarder.answer_from_cache(
                &key,
                query,
                head_len,
                request.key.edns,
                request.nsid,
                limit,
                now,
                out,
            ) {
                Some(len) => UdpAnswer::Send(len),
                None => UdpAnswer::Forward,
            },
        )
    }

    /// Whether the request's name is in one of our zones. A forward-only
    /// server has none: then the suffix walk of `Catalog::find` (about 230
    /// instructions for a name of four labels) is skipped.
    pub(super) fn serves(&self, request: &Request<'_>) -> bool {
        !self.catalog.is_empty() && self.catalog.find(request.key.name.as_name()).is_some()
    }
}

impl Answering<'_> {
    /// An IXFR over UDP: the SOA alone to a client that may transfer the
    /// zone, or the refusal (`crate::xfr_out`); `None` for other queries.
    fn ixfr_over_udp(
        &self,
        query: &Query<'_>,
        peer: &Peer<'_>,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        // Only a QUERY (opcode 0, QR clear) can be one.
        if query.bytes().get(2).is_none_or(|flags| flags & 0xf8 != 0) {
            return None;
        }
        let limit = query
            .question()
            .filter(|question| question.qtype == RType::IXFR)
            .map(|_| {
                query
                    .edns()
                    .ok()
                    .flatten()
                    .map_or(CLASSIC_UDP_SIZE, |edns| usize::from(edns.udp_size))
                    .clamp(CLASSIC_UDP_SIZE, self.full_udp_size)
            })?;
        let peer = peer.get()?.ip();
        match crate::xfr_out::start(
            self.catalog,
            self.transfer,
            None,
            self.xfr_out,
            query,
            peer,
            crate::xfr_out::Channel::Udp(limit),
            out,
        ) {
            crate::xfr_out::Start::Answer(0) => Some(UdpAnswer::Drop),
            crate::xfr_out::Start::Answer(len) => Some(UdpAnswer::Send(len)),
            _ => None,
        }
    }
}

impl From<Response> for UdpAnswer {
    fn from(response: Response) -> Self {
        match response {
            Response::Send(len) => UdpAnswer::Send(len),
            Response::Drop => UdpAnswer::Drop,
        }
    }
}
