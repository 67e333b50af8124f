//! The per-core answering state: the catalog this core serves from, its
//! answer cache and its counters. The transport loops lend it a query and
//! an output buffer and get back the answer's length; everything in
//! between is synchronous and allocation-free once the cache is warm.
//!
//! ```text
//! UDP query ──parse──► CacheKey ──hit──► cache.answer(): header, question, stored tail
//!                          │
//!                          └─miss──► tern_authority::respond() ──► cache.insert() if the
//!                                                                  answer was written at
//! TCP query ──parse────────────────► tern_authority::respond()      the full UDP size
//! ```
//!
//! Only UDP answers go through the cache: TCP answers are never truncated,
//! so their size limit differs, and TCP is a small share of the traffic.
//! Forwarding applies to both: [`Worker::answer_tcp_from`] routes a TCP
//! query as the UDP path does, with a 65535-octet limit.
//!
//! Forwarding (issue 5): a UDP or TCP query that has RD set, comes from a
//! client in `forward.allow` and names no zone of the catalog (decided
//! before the answer cache is probed: it could only miss) is answered
//! from the core's forward cache
//! ([`tern_cache::forward::Forwarder`]) or handed back to the transport
//! as [`UdpAnswer::Forward`], which starts an upstream query
//! (`crate::forward`). A name of our zones is never forwarded: the answer
//! cache only holds our zones' answers, and `catalog.find` decides the
//! rest.
//!
//! Response rate limiting (docs/decisions/0007): with a
//! [`RateLimiter`] set, every UDP answer from the answer cache or
//! `respond` (not forwarded answers, never TCP) is accounted after it is
//! written, by its rcode, under the client's prefix and the query's name
//! (NXDOMAIN: the zone's apex); a limited answer is dropped, or replaced
//! in `out` by a truncated slip answer ([`write_slip`]). Without a
//! limiter this costs one branch.
//!
//! DNS cookies (docs/decisions/0006): with a secret set, a query whose
//! OPT carries a COOKIE option gets the client's cookie and our server
//! cookie in its answer's OPT, over UDP and TCP. The answer cache keeps
//! serving such queries: the cached (or just cached) answer is copied and
//! the option appended to its OPT ([`append_option`]); only when that does
//! not fit is the answer written again by `respond_with`. A valid server
//! cookie exempts the client from rate limiting, and a limited client
//! that sent a cookie gets a BADCOOKIE answer with a fresh server cookie
//! as its slip (as in BIND), so it can retry over UDP with a valid one.
//! Forwarded answers carry no cookie.
//!
//! NSID (RFC 5001): with [`Options::nsid`] set, a query whose OPT asks for
//! it gets it in its answer's OPT on every path. The answer cache keeps
//! NSID-free answers (a miss is written with `fill_options`, which lack
//! it) and the option is appended to the copy with the COOKIE, as above;
//! `respond_with` adds it on the other paths, and the forwarder to
//! forwarded answers. A query without options pays nothing for it: the
//! request stage looks for the option only when the OPT has options.
//!
//! The query comes parsed: each transport parses it once into a
//! [`tern_wire::query::Query`] (the entry points that take bytes,
//! [`Worker::answer_udp_from`], [`Worker::answer_tcp_from`] and
//! [`Worker::forward`], parse it for callers that hold only bytes), and
//! every stage takes that `Query`; none parses the bytes again.
//!
//! The stages, one module each: `request` (what the cache path needs of
//! the query), `answering` (the read-only inputs the stages share),
//! `answer` (the answer cache, `respond`, and the
//! routing of forwardable queries), `signed` (queries with a TSIG record:
//! checked, answered and signed, never cached), `notify` (NOTIFY for
//! secondary zones), `policy` (cookies and rate
//! limiting applied to a written answer); this module holds the
//! [`Worker`] and the entry points the transports call.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Arc;

use bumpalo::Bump;
use tern_authority::cookie::CookieSecret;
use tern_authority::{
    nsid, respond_to, Applied, Catalog, CatalogChange, Options, Response, Transport, Zone,
};
use tern_cache::forward::{Action, Client, ForwardStats, Forwarder};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::parse::HEADER_LEN;
use tern_wire::query::Query;

use crate::rrl::RateLimiter;
use crate::stats::{zone_tag, Counters};

/// The UDP size limit without EDNS (RFC 1035 section 4.2.1), which is
/// also the smallest EDNS limit honoured (RFC 6891 section 6.2.3).
const CLASSIC_UDP_SIZE: usize = 512;

/// The size limit of a TCP answer: its length prefix is 16 bits (RFC 1035
/// section 4.2.2). TCP answers are never truncated below it.
const TCP_SIZE: usize = 65535;

/// The request arena's chunk, allocated once per worker: one request's
/// views (a `Request`, a few hundred octets) fit many times over, so the
/// arena never grows and `reset` never frees or allocates.
const REQUEST_ARENA: usize = 4096;

mod answer;
mod answering;
mod notify;
mod pending;
mod policy;
mod request;
mod signed;
mod update;

use answering::{Answering, Cookies, Peer};
pub use pending::PendingUpdate;
pub(crate) use request::Forwarding;
pub use request::UdpAnswer;

/// The worker's mutable parts, borrowed apart from its inputs.
struct Parts<'w> {
    arena: &'w Bump,
    key: &'w mut CacheKey,
    cache: &'w mut ResponseCache,
    forwarder: Option<&'w mut Forwarder>,
    limiter: Option<&'w mut RateLimiter>,
    counters: &'w mut Counters,
}

//----------- Worker ---------------------------------------------------------

/// One core's answering state. Not shared: each core owns one, with its
/// own copy of the catalog (the zones in it are shared, read-only, behind
/// `Arc`s cloned once per core and per new version, never per query).
#[doc(hidden)]
pub struct Worker {
    catalog: Catalog,
    options: Options,
    /// `options` without the NSID, for the answers the cache keeps
    /// (NSID-free; the option is appended per query, as the COOKIE).
    fill_options: Options,
    /// The UDP limit of a client that asks for at least our maximum:
    /// answers written at this limit (or without EDNS, at 512) are what
    /// `respond` writes for every client whose limit they fit, so only
    /// they are cached.
    full_udp_size: usize,
    cache: ResponseCache,
    counters: Counters,
    /// Per-request scratch, reset after every query that allocated in it
    /// (docs/decisions/0003).
    arena: Bump,
    /// The arena's chunk capacity when empty (`Bump::chunk_capacity` at
    /// start): what [`Worker::reset_arena`] compares with.
    arena_capacity: usize,
    /// The UDP path's cache key, written in place by each query (not made
    /// anew: a new key's name is 256 octets zeroed, about 17 instructions
    /// a query).
    key: CacheKey,
    /// The forwarder, when `forward` is configured.
    forwarder: Option<Forwarder>,
    /// Response rate limiting of UDP answers, when configured.
    limiter: Option<RateLimiter>,
    /// DNS cookies, when on.
    cookies: Option<Cookies>,
    /// Who may transfer our zones, and the TSIG keys signed queries are
    /// checked against.
    transfer: crate::TransferConfig,
    /// The core's counts of transfer requests (IXFR over UDP counts here).
    xfr_out: crate::xfr_out::XfrOutCounters,
    /// NOTIFY for secondary zones, when there are any.
    notify: Option<crate::NotifyIn>,
    /// UPDATE for primary zones, when any takes it.
    update: Option<pending::UpdateStage>,
}

impl Worker {
    /// A worker over a copy of `catalog`, answering with `options`,
    /// caching within `cache`.
    pub fn new(catalog: Arc<Catalog>, options: Options, cache: CacheLimits) -> Self {
        let full_udp_size = usize::from(options.max_udp_size).max(CLASSIC_UDP_SIZE);
        let catalog = Arc::unwrap_or_clone(catalog);
        let counters = Counters::new();
        let fill_options = Options {
            nsid: None,
            ..options.clone()
        };
        let arena = Bump::with_capacity(REQUEST_ARENA);
        let arena_capacity = arena.chunk_capacity();
        Worker {
            catalog,
            options,
            fill_options,
            full_udp_size,
            cache: ResponseCache::new(cache),
            counters,
            arena,
            arena_capacity,
            key: CacheKey::root(),
            forwarder: None,
            limiter: None,
            cookies: None,
            transfer: crate::TransferConfig::default(),
            xfr_out: crate::xfr_out::XfrOutCounters::default(),
            notify: None,
            update: None,
        }
    }

    /// The catalog this worker answers from (changed by
    /// [`Worker::apply`]).
    pub(crate) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Who may transfer our zones (IXFR over UDP), and the TSIG keys
    /// that signed queries are checked against (a signed query is
    /// answered, and its answer signed, only with one of them).
    pub fn set_transfer(&mut self, transfer: crate::TransferConfig) {
        self.transfer = transfer;
    }

    /// Takes NOTIFY for the secondary zones of `notify`.
    pub fn set_notify(&mut self, notify: crate::NotifyIn) {
        self.notify = Some(notify);
    }

    /// Turns response rate limiting of UDP answers on with `limiter`.
    pub fn set_rate_limiter(&mut self, limiter: RateLimiter) {
        self.limiter = Some(limiter);
    }

    /// Whether UDP answers are rate limited (the UDP loop then reads the
    /// clock once per batch).
    pub fn rate_limiting(&self) -> bool {
        self.limiter.is_some()
    }

    /// Turns DNS cookies on with `secret` (the wall clock is read when the
    /// first query with an option arrives, then once per batch).
    pub fn set_cookie_secret(&mut self, secret: CookieSecret) {
        self.cookies = Some(Cookies {
            secret,
            now: Cell::new(0),
            stale: Cell::new(true),
        });
    }

    /// Marks the cookies' clock stale: the next query with a cookie reads
    /// it (called once per UDP batch or TCP message; nothing when cookies
    /// are off).
    pub fn tick_cookie_clock(&mut self) {
        if let Some(cookies) = &self.cookies {
            cookies.stale.set(true);
        }
    }

    /// Sets the cookies' clock to `unix_seconds` until the next tick
    /// (tests).
    #[doc(hidden)]
    pub fn set_cookie_clock(&mut self, unix_seconds: u32) {
        if let Some(cookies) = &self.cookies {
            cookies.now.set(unix_seconds);
            cookies.stale.set(false);
        }
    }

    /// Turns forwarding on with `forwarder`, which sends our NSID, if
    /// any, to the clients that ask for it.
    pub fn set_forwarder(&mut self, mut forwarder: Forwarder) {
        if let Some(nsid) = &self.options.nsid {
            forwarder.set_nsid(nsid.as_option());
        }
        self.forwarder = Some(forwarder);
    }

    /// The forwarder, if forwarding is on.
    pub fn forwarder(&mut self) -> Option<&mut Forwarder> {
        self.forwarder.as_mut()
    }

    /// Answers one UDP query from `peer` at `now` (milliseconds of the
    /// core's clock) into `out`. Like [`Worker::answer`], but forwardable
    /// queries are answered from the forward cache or come back as
    /// [`UdpAnswer::Forward`], and, with a rate limiter, answers to `peer`
    /// are limited (dropped, or replaced by a slip). Counts the query and
    /// the answer. For callers that hold the bytes only (tests): the
    /// transports parse each query once and call `answer_udp_lazy`.
    pub fn answer_udp_from(
        &mut self,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.answer_udp_lazy(&Query::parse(query), &|| peer, now, out)
    }

    /// [`Worker::answer_udp_from`] with the client's address read by
    /// `peer` only if needed (the UDP loop's path: the address is copied
    /// out of the receive batch only for forwarding, rate limiting and
    /// queries with EDNS options when cookies are on).
    /// The query was parsed once, by the transport; every stage takes it.
    #[inline]
    pub(crate) fn answer_udp_lazy(
        &mut self,
        query: &Query<'_>,
        peer: &dyn Fn() -> Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.counters.count_query();
        let peer = Peer::new(peer);
        let (answering, parts) = self.split();
        let answer = answering.udp(
            parts.arena,
            parts.key,
            parts.cache,
            parts.forwarder,
            parts.limiter,
            parts.counters,
            query,
            &peer,
            now,
            out,
        );
        self.reset_arena();
        self.count(answer, out)
    }

    /// Resets the request arena if the query allocated in it
    /// (docs/decisions/0003): the UDP path allocates nothing there, and a
    /// reset that finds nothing to free still cost a call of about 13
    /// instructions a query. Empty, the arena's one chunk has the capacity
    /// it had when made (`arena_capacity`); anything allocated
    /// lowers it.
    #[inline(always)]
    fn reset_arena(&mut self) {
        if self.arena.chunk_capacity() != self.arena_capacity {
            self.arena.reset();
        }
    }

    /// Answers one TCP query from `peer` at `now` into `out` (65535
    /// octets): like [`Worker::answer_udp_from`], forwardable queries are
    /// answered from the forward cache or come back as
    /// [`UdpAnswer::Forward`] (then call `Worker::forward_tcp`); anything
    /// else is answered by `respond`. `peer: None` forwards nothing.
    /// Counts the query and the answer. For callers that hold the bytes
    /// only (tests): the TCP loop parses each query once and calls
    /// `answer_tcp`.
    pub fn answer_tcp_from(
        &mut self,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.answer_tcp(&Query::parse(query), peer, now, out)
    }

    /// [`Worker::answer_tcp_from`] for a query parsed once.
    pub(crate) fn answer_tcp(
        &mut self,
        query: &Query<'_>,
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.counters.count_query();
        let mut key = tern_cache::CacheKey::root();
        let keyed = request::cache_key(query, &mut key);
        let request = request::Request::from_query(query, keyed.then_some(&key), TCP_SIZE);
        let (answering, parts) = self.split();
        let answer = answering.tcp(parts.forwarder, query, request.as_ref(), peer, now, out);
        match &request {
            Some(request) => {
                let zone = self.catalog.find_position(request.key.name.as_name());
                self.counters.zone = zone_tag(zone);
                self.counters.set_type(request.key.qtype.0);
            }
            None => self.counters.set_type_of(query),
        }
        self.count(answer, out)
    }

    /// The read-only answering inputs and the mutable parts, borrowed
    /// apart so that a stage can read the one and change the other.
    fn split(&mut self) -> (Answering<'_>, Parts<'_>) {
        let Worker {
            catalog,
            options,
            fill_options,
            full_udp_size,
            cache,
            counters,
            arena,
            arena_capacity: _,
            key,
            forwarder,
            limiter,
            cookies,
            transfer,
            xfr_out,
            notify,
            update,
        } = self;
        let answering = Answering {
            catalog,
            options,
            fill_options,
            full_udp_size: *full_udp_size,
            cookies: cookies.as_ref(),
            transfer,
            xfr_out,
            notify: notify.as_ref(),
            update: update.as_ref(),
        };
        let parts = Parts {
            arena,
            key,
            cache,
            forwarder: forwarder.as_mut(),
            limiter: limiter.as_mut(),
            counters,
        };
        (answering, parts)
    }

    /// Counts an answer written now or a dropped query, and hands the
    /// outcome back; a forwarded query's answer is counted when it arrives.
    /// Inlined always: with [`Counters::count_answer`](crate::stats::Counters::count_answer)
    /// inlined in it, the compiler no longer did (asked with `#[inline]`
    /// either), and the call and its frame cost what the inlining saved.
    #[inline(always)]
    fn count(&mut self, answer: UdpAnswer, out: &[u8]) -> UdpAnswer {
        self.counters.count_type();
        match answer {
            UdpAnswer::Send(len) => self.counters.count_answer(&out[..len]),
            UdpAnswer::Drop => self.counters.dropped += 1,
            UdpAnswer::Forward | UdpAnswer::Update => {}
        }
        answer
    }

    /// Starts forwarding a query that [`Worker::answer_udp_from`] returned
    /// as [`UdpAnswer::Forward`]: the upstream transmits go to `actions`.
    /// Returns the length of an answer written at once into `out` (too
    /// many questions in flight: a stale answer or SERVFAIL), which the
    /// caller sends like any other. For callers that hold the bytes only
    /// (tests): the transports call `forward_query` with the query they
    /// parsed.
    pub fn forward(
        &mut self,
        query: &[u8],
        client: Client,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Option<usize> {
        self.forward_query(&Query::parse(query), client, now, actions, out)
    }

    /// [`Worker::forward`] for a query parsed once.
    pub(crate) fn forward_query(
        &mut self,
        query: &Query<'_>,
        client: Client,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Option<usize> {
        match self.start_forward(query, client, None, now, actions, out) {
            Forwarding::Answered(len) => Some(len),
            Forwarding::Waiting | Forwarding::Dropped => None,
        }
    }

    /// Starts forwarding a query that [`Worker::answer_tcp_from`] returned
    /// as [`UdpAnswer::Forward`] for a TCP client: as [`Worker::forward`],
    /// but the answer is never truncated below 65535 octets, and whether
    /// the client now waits is told apart from a query not taken.
    pub(crate) fn forward_tcp(
        &mut self,
        query: &Query<'_>,
        client: Client,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Forwarding {
        self.start_forward(query, client, Some(TCP_SIZE), now, actions, out)
    }

    /// Hands a query to the forwarder; `limit`: the answer's size limit,
    /// `None` for the client's UDP limit.
    fn start_forward(
        &mut self,
        query: &Query<'_>,
        client: Client,
        limit: Option<usize>,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Forwarding {
        let Some(forwarder) = self.forwarder.as_mut() else {
            return Forwarding::Dropped;
        };
        let Ok(view) = query.message() else {
            return Forwarding::Dropped;
        };
        let (Ok(edns), Some(question)) = (query.edns(), view.question()) else {
            return Forwarding::Dropped;
        };
        let head_len = HEADER_LEN + question.bytes.len();
        let Some(key) = Forwarder::key(view, edns.is_some_and(|edns| edns.dnssec_ok)) else {
            return Forwarding::Dropped;
        };
        let limit = limit.unwrap_or(match edns {
            None => CLASSIC_UDP_SIZE,
            Some(edns) => usize::from(edns.udp_size)
                .max(CLASSIC_UDP_SIZE)
                .min(self.full_udp_size),
        });
        let nsid = edns.is_some_and(|edns| nsid::requested(edns.options));
        match forwarder.start(
            key,
            client,
            query.bytes(),
            head_len,
            edns.is_some(),
            nsid,
            limit,
            now,
            actions,
            out,
        ) {
            Some(len) => {
                self.counters.count_answer(&out[..len]);
                Forwarding::Answered(len)
            }
            // `start` takes every query whose header and question it can
            // read, and those of a parsed query it always can.
            None => Forwarding::Waiting,
        }
    }

    /// Counts an answer the forwarder wrote for a waiting client.
    pub(crate) fn count_forwarded(&mut self, answer: &[u8]) {
        self.counters.count_answer(answer);
    }

    /// The counts of transfer requests answered here (IXFR over UDP).
    pub(crate) fn transfers_out(&self) -> crate::stats::XfrOutStats {
        self.xfr_out.stats()
    }

    /// The forwarder's counters (empty without forwarding).
    pub(crate) fn forward_stats(&self) -> ForwardStats {
        self.forwarder
            .as_ref()
            .map(Forwarder::stats)
            .unwrap_or_default()
    }

    /// Answers one query into `out`; returns the answer's length, or `None`
    /// to send nothing. `out` must hold the largest answer for the
    /// transport: `max(max_udp_size, 512)` octets for UDP, 65535 for TCP.
    /// Counts the query and the answer.
    pub fn answer(&mut self, query: &[u8], transport: Transport, out: &mut [u8]) -> Option<usize> {
        self.counters.count_query();
        let query = Query::parse(query);
        let response = match transport {
            Transport::Udp => self.answer_udp(&query, out),
            Transport::Tcp => {
                self.counters.set_type_of(&query);
                respond_to(&self.catalog, &query, transport, &self.options, &[], out)
            }
        };
        self.counters.count_type();
        match response {
            Response::Send(len) => {
                self.counters.count_answer(&out[..len]);
                Some(len)
            }
            Response::Drop => {
                self.counters.dropped += 1;
                None
            }
        }
    }

    /// The UDP path: the cache first, then `respond`. The request's views
    /// live in the arena, which is reset before returning.
    fn answer_udp(&mut self, query: &Query<'_>, out: &mut [u8]) -> Response {
        let (answering, parts) = self.split();
        let answer = answering.udp(
            parts.arena,
            parts.key,
            parts.cache,
            None,
            None,
            parts.counters,
            query,
            &Peer::new(&|| None),
            0,
            out,
        );
        self.reset_arena();
        match answer {
            UdpAnswer::Send(len) => Response::Send(len),
            UdpAnswer::Drop | UdpAnswer::Forward | UdpAnswer::Update => Response::Drop,
        }
    }

    /// Applies changes to the catalog, in order, between two batches.
    /// A new version of a zone keeps its slot, its counters, and the
    /// cached answers of every other zone: only its own stop answering
    /// (their tag is invalidated). A version patched from the one this
    /// core serves, that lists the names it changed (a dynamic update,
    /// `Zone::changed_since`), keeps those of its cached answers that
    /// cannot hold them (`ResponseCache::invalidate_update`). A zone added
    /// or removed can move names from one zone to another (a child under
    /// its parent's cut), so it empties the cache, once per call.
    ///
    /// The zones that stop serving (the versions replaced, the zones
    /// removed) go into `retired`, not dropped here: the caller hands them
    /// back to the thread that made the changes, so that when this core
    /// held a version's last reference, freeing the whole version is not
    /// the core's cost (`control::run`; only a reply the handle no longer
    /// waits for, after `UPDATE_TIMEOUT`, leaves them to the core, as does
    /// an outgoing transfer still holding a version). Off the query path, and without
    /// allocating when `retired` has room for one zone a change.
    pub(crate) fn apply(&mut self, changes: &[CatalogChange], retired: &mut Vec<Arc<Zone>>) {
        let mut clear = false;
        for change in changes {
            let (applied, previous) = self.catalog.swap(change.clone());
            match applied {
                Applied::Replaced(slot) => {
                    let tag = zone_tag(Some(slot));
                    let zone = match change {
                        CatalogChange::Serve(zone) => Some(zone),
                        CatalogChange::Remove(_) => None,
                    };
                    match zone.zip(previous.as_ref()) {
                        // What the new version changed since the one this
                        // core served, and its serial if that is all the
                        // SOA changed.
                        Some((zone, previous)) => match zone.changed_since(previous) {
                            Some(names) => self.cache.invalidate_update(
                                tag,
                                names.iter(),
                                zone.serial_step_since(previous),
                            ),
                            None => self.cache.invalidate_tag(tag),
                        },
                        None => self.cache.invalidate_tag(tag),
                    }
                }
                Applied::Added(slot) | Applied::Removed(slot) => {
                    self.counters.zones.reset(slot as usize);
                    clear = true;
                }
                Applied::Nothing => {}
            }
            retired.extend(previous);
        }
        if clear {
            self.cache.clear();
        }
        self.counters.zone = crate::stats::NO_ZONE;
    }

    /// Counts `queries` received over transport and family `slot` (see
    /// [`crate::stats::TRANSPORTS`]).
    pub(crate) fn count_transport(&mut self, slot: usize, queries: u64) {
        if let Some(count) = self.counters.queries_by_transport.get_mut(slot) {
            *count += queries;
        }
    }

    /// Counts a query that never reached [`Worker::answer`] (cut short by
    /// the receive buffer) or whose answer could not be sent.
    pub(crate) fn count_dropped(&mut self, queries: u64, unsent_answers: u64) {
        self.counters.queries += queries;
        self.counters.queries_by_type[crate::stats::OTHER_TYPE] += queries;
        self.counters.dropped += queries + unsent_answers;
    }

    /// The counters so far.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// How many answers the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests;
