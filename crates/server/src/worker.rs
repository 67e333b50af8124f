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

use std::sync::Arc;

use bumpalo::Bump;
use tern_authority::{respond, Catalog, Options, Response, Transport};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::parse::MessageView;
use tern_wire::types::{RClass, RType};

use crate::stats::Counters;

/// The UDP size limit without EDNS (RFC 1035 section 4.2.1), which is
/// also the smallest EDNS limit honoured (RFC 6891 section 6.2.3).
const CLASSIC_UDP_SIZE: usize = 512;

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
    fn udp(
        &self,
        arena: &Bump,
        cache: &mut ResponseCache,
        counters: &mut Counters,
        query: &[u8],
        out: &mut [u8],
    ) -> Response {
        let Some(request) = Request::parse(query, self.full_udp_size) else {
            return respond(self.catalog, query, Transport::Udp, self.options, out);
        };
        let request: &Request<'_> = arena.alloc(request);
        debug_assert_eq!(request.view.bytes().len(), query.len());
        if let Some(len) = cache.answer(&request.key, query, request.limit, out) {
            counters.cache_hits += 1;
            return Response::Send(len);
        }
        counters.cache_misses += 1;
        let response = respond(self.catalog, query, Transport::Udp, self.options, out);
        // Only an answer written at the full size is what respond writes for
        // every client whose limit it fits; the cache checks the fit.
        let full_size = !request.key.edns || request.limit == self.full_udp_size;
        if let (Response::Send(len), true) = (response, full_size) {
            cache.insert(request.key, &out[..len]);
        }
        response
    }
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
        }
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
        let response = answering.udp(&self.arena, &mut self.cache, &mut self.counters, query, out);
        self.arena.reset();
        response
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
