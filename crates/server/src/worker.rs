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
//! TCP query ──────────────────────► tern_authority::respond()      the full UDP size
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

use std::sync::Arc;

use bumpalo::Bump;
use std::net::SocketAddr;
use tern_authority::{respond, Catalog, Options, Response, Transport};

use tern_cache::forward::{Action, Client, ForwardKey, ForwardStats, Forwarder};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::{RClass, RType};

use crate::stats::Counters;

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

//----------- Request --------------------------------------------------------

/// One UDP query's zero-copy views, as the cache path needs them: the
/// parsed message (borrowing the receive buffer), its cache key and its
/// UDP size limit. Lives in the worker's request arena for the synchronous
/// section only.
struct Request<'q> {
    view: MessageView<'q>,
    key: CacheKey,
    limit: usize,
}

//----------- UdpAnswer ------------------------------------------------------

/// What the UDP path (or the TCP path, [`Worker::answer_tcp_from`])
/// decided for one query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpAnswer {
    /// Send the first `len` octets of the output buffer.
    Send(usize),
    /// Send nothing.
    Drop,
    /// Forward upstream: call [`Worker::forward`] (the UDP loop does; the
    /// TCP read half calls `Worker::forward_tcp`).
    Forward,
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

impl<'q> Request<'q> {
    /// The views of a query the cache may answer; `None` sends the query to
    /// `respond` (malformed, not a plain QUERY, EDNS version above 0, a
    /// class other than IN, a zone transfer).
    fn parse(query: &'q [u8], full_udp_size: usize) -> Option<Self> {
        let view = MessageView::parse(query).ok()?;
        let question = view.question()?;
        if question.qclass != RClass::IN || matches!(question.qtype, RType::AXFR | RType::IXFR) {
            return None;
        }
        let edns = view.edns().ok()?;
        let key = CacheKey::from_query(&view, edns.as_ref())?;
        let limit = match edns {
            None => CLASSIC_UDP_SIZE,
            Some(edns) => usize::from(edns.udp_size)
                .max(CLASSIC_UDP_SIZE)
                .min(full_udp_size),
        };
        Some(Request { view, key, limit })
    }
}

//----------- Answering ------------------------------------------------------

/// The worker's read-only answering inputs, borrowed apart from its
/// mutable parts (cache, counters) and its arena.
struct Answering<'w> {
    catalog: &'w Catalog,
    options: &'w Options,
    full_udp_size: usize,
}

impl Answering<'_> {
    /// The cache first, then `respond`; the request's views go in `arena`.
    #[allow(clippy::too_many_arguments)]
    fn udp(
        &self,
        arena: &Bump,
        cache: &mut ResponseCache,
        forwarder: Option<&mut Forwarder>,
        counters: &mut Counters,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        let Some(request) = Request::parse(query, self.full_udp_size) else {
            return respond(self.catalog, query, Transport::Udp, self.options, out).into();
        };
        let request: &Request<'_> = arena.alloc(request);
        debug_assert_eq!(request.view.bytes().len(), query.len());
        // A query to forward names no zone of ours, and the answer cache
        // holds only our zones' answers (respond refuses other names, and
        // refusals are not cached): it would miss. Decide forwarding first
        // (one `catalog.find`) and skip its probe and hash.
        if let Some(answer) =
            self.forwardable(request, forwarder, query, peer, request.limit, now, out)
        {
            return answer;
        }
        if let Some(len) = cache.answer(&request.key, query, request.limit, out) {
            counters.cache_hits += 1;
            return UdpAnswer::Send(len);
        }
        counters.cache_misses += 1;
        let response = respond(self.catalog, query, Transport::Udp, self.options, out);
        // Only an answer written at the full size is what respond writes for
        // every client whose limit it fits; the cache checks the fit.
        let full_size = !request.key.edns || request.limit == self.full_udp_size;
        if let (Response::Send(len), true) = (response, full_size) {
            cache.insert(request.key, &out[..len]);
        }
        response.into()
    }
}

impl Answering<'_> {
    /// The TCP path: a forwardable query is answered from the forward
    /// cache or comes back as [`UdpAnswer::Forward`], as over UDP but never
    /// truncated below [`TCP_SIZE`]; anything else goes to `respond`. The
    /// answer cache is UDP's only.
    #[allow(clippy::too_many_arguments)]
    fn tcp(
        &self,
        arena: &Bump,
        forwarder: Option<&mut Forwarder>,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        if forwarder.is_some() && peer.is_some() {
            if let Some(request) = Request::parse(query, TCP_SIZE) {
                let request: &Request<'_> = arena.alloc(request);
                if let Some(answer) =
                    self.forwardable(request, forwarder, query, peer, TCP_SIZE, now, out)
                {
                    return answer;
                }
            }
        }
        respond(self.catalog, query, Transport::Tcp, self.options, out).into()
    }

    /// For a query to forward (RD set, the client in `forward.allow`, the
    /// name in none of our zones): the forward cache's answer written at
    /// `limit`, or [`UdpAnswer::Forward`]. `None`: not a query to forward.
    #[allow(clippy::too_many_arguments)]
    fn forwardable(
        &self,
        request: &Request<'_>,
        forwarder: Option<&mut Forwarder>,
        query: &[u8],
        peer: Option<SocketAddr>,
        limit: usize,
        now: u64,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let (forwarder, peer) = (forwarder?, peer?);
        if !request.view.header().rd()
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
    fn serves(&self, request: &Request<'_>) -> bool {
        !self.catalog.zones().is_empty() && self.catalog.find(request.key.name.as_name()).is_some()
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

/// The forward key of a request: its cache key's name, type, class and DO,
/// and the query's CD.
fn forward_key(request: &Request<'_>) -> ForwardKey {
    ForwardKey {
        name: request.key.name,
        qtype: request.key.qtype,
        qclass: request.key.qclass,
        dnssec_ok: request.key.dnssec_ok,
        checking_disabled: request.view.header().cd(),
    }
}

/// Where a request's header and question end.
fn head_len(request: &Request<'_>) -> usize {
    HEADER_LEN
        + request
            .view
            .question()
            .map_or(0, |question| question.bytes.len())
}

//----------- Worker ---------------------------------------------------------

/// One core's answering state. Not shared: each core owns one, and the
/// catalog is the only thing it holds in common with the other cores
/// (read-only, behind an `Arc` cloned once per core and per reload, never
/// per query).
#[doc(hidden)]
pub struct Worker {
    catalog: Arc<Catalog>,
    options: Options,
    /// The UDP limit of a client that asks for at least our maximum:
    /// answers written at this limit (or without EDNS, at 512) are what
    /// `respond` writes for every client whose limit they fit, so only
    /// they are cached.
    full_udp_size: usize,
    cache: ResponseCache,
    counters: Counters,
    /// Per-request scratch, reset after every query (docs/decisions/0003).
    arena: Bump,
    /// The forwarder, when `forward` is configured.
    forwarder: Option<Forwarder>,
}

impl Worker {
    /// A worker over `catalog`, answering with `options`, caching within
    /// `cache`.
    pub fn new(catalog: Arc<Catalog>, options: Options, cache: CacheLimits) -> Self {
        let full_udp_size = usize::from(options.max_udp_size).max(CLASSIC_UDP_SIZE);
        Worker {
            catalog,
            options,
            full_udp_size,
            cache: ResponseCache::new(cache),
            counters: Counters::default(),
            arena: Bump::with_capacity(REQUEST_ARENA),
            forwarder: None,
        }
    }

    /// Turns forwarding on with `forwarder`.
    pub fn set_forwarder(&mut self, forwarder: Forwarder) {
        self.forwarder = Some(forwarder);
    }

    /// The forwarder, if forwarding is on.
    pub fn forwarder(&mut self) -> Option<&mut Forwarder> {
        self.forwarder.as_mut()
    }

    /// Answers one UDP query from `peer` at `now` (milliseconds of the
    /// core's clock) into `out`. Like [`Worker::answer`], but forwardable
    /// queries are answered from the forward cache or come back as
    /// [`UdpAnswer::Forward`]. Counts the query and the answer.
    pub fn answer_udp_from(
        &mut self,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.counters.queries += 1;
        let answering = Answering {
            catalog: &self.catalog,
            options: &self.options,
            full_udp_size: self.full_udp_size,
        };
        let answer = answering.udp(
            &self.arena,
            &mut self.cache,
            self.forwarder.as_mut(),
            &mut self.counters,
            query,
            peer,
            now,
            out,
        );
        self.arena.reset();
        self.count(answer, out)
    }

    /// Answers one TCP query from `peer` at `now` into `out` (65535
    /// octets): like [`Worker::answer_udp_from`], forwardable queries are
    /// answered from the forward cache or come back as
    /// [`UdpAnswer::Forward`] (then call `Worker::forward_tcp`); anything
    /// else is answered by `respond`. `peer: None` forwards nothing.
    /// Counts the query and the answer.
    pub fn answer_tcp_from(
        &mut self,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.counters.queries += 1;
        let answering = Answering {
            catalog: &self.catalog,
            options: &self.options,
            full_udp_size: self.full_udp_size,
        };
        let answer = answering.tcp(&self.arena, self.forwarder.as_mut(), query, peer, now, out);
        self.arena.reset();
        self.count(answer, out)
    }

    /// Counts an answer written now or a dropped query, and hands the
    /// outcome back; a forwarded query's answer is counted when it arrives.
    fn count(&mut self, answer: UdpAnswer, out: &[u8]) -> UdpAnswer {
        match answer {
            UdpAnswer::Send(len) => self.counters.count_answer(&out[..len]),
            UdpAnswer::Drop => self.counters.dropped += 1,
            UdpAnswer::Forward => {}
        }
        answer
    }

    /// Starts forwarding a query that [`Worker::answer_udp_from`] returned
    /// as [`UdpAnswer::Forward`]: the upstream transmits go to `actions`.
    /// Returns the length of an answer written at once into `out` (too
    /// many questions in flight: a stale answer or SERVFAIL), which the
    /// caller sends like any other.
    pub fn forward(
        &mut self,
        query: &[u8],
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
        query: &[u8],
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
        query: &[u8],
        client: Client,
        limit: Option<usize>,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Forwarding {
        let Some(forwarder) = self.forwarder.as_mut() else {
            return Forwarding::Dropped;
        };
        let Ok(view) = MessageView::parse(query) else {
            return Forwarding::Dropped;
        };
        let (Ok(edns), Some(question)) = (view.edns(), view.question()) else {
            return Forwarding::Dropped;
        };
        let head_len = HEADER_LEN + question.bytes.len();
        let Some(key) = Forwarder::key(&view, edns.is_some_and(|edns| edns.dnssec_ok)) else {
            return Forwarding::Dropped;
        };
        let limit = limit.unwrap_or(match edns {
            None => CLASSIC_UDP_SIZE,
            Some(edns) => usize::from(edns.udp_size)
                .max(CLASSIC_UDP_SIZE)
                .min(self.full_udp_size),
        });
        match forwarder.start(
            key,
            client,
            query,
            head_len,
            edns.is_some(),
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
        self.counters.queries += 1;
        let response = match transport {
            Transport::Udp => self.answer_udp(query, out),
            Transport::Tcp => respond(&self.catalog, query, transport, &self.options, out),
        };
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
    fn answer_udp(&mut self, query: &[u8], out: &mut [u8]) -> Response {
        let answering = Answering {
            catalog: &self.catalog,
            options: &self.options,
            full_udp_size: self.full_udp_size,
        };
        let answer = answering.udp(
            &self.arena,
            &mut self.cache,
            None,
            &mut self.counters,
            query,
            None,
            0,
            out,
        );
        self.arena.reset();
        match answer {
            UdpAnswer::Send(len) => Response::Send(len),
            UdpAnswer::Drop | UdpAnswer::Forward => Response::Drop,
        }
    }

    /// Switches to a new catalog and empties the cache, whose answers came
    /// from the old one.
    pub(crate) fn reload(&mut self, catalog: Arc<Catalog>) {
        self.catalog = catalog;
        self.cache.clear();
    }

    /// Counts a query that never reached [`Worker::answer`] (cut short by
    /// the receive buffer) or whose answer could not be sent.
    pub(crate) fn count_dropped(&mut self, queries: u64, unsent_answers: u64) {
        self.counters.queries += queries;
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
