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

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bumpalo::Bump;
use tern_authority::cookie::{self, CookieCheck, CookieSecret};
use tern_authority::{
    append_option, bad_cookie, respond, respond_with, Catalog, Options, Response, Transport,
};

use tern_cache::forward::{Action, Client, ForwardKey, ForwardStats, Forwarder};
use tern_cache::{CacheKey, CacheLimits, ResponseCache};
use tern_wire::name::Name;
use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::{RClass, RType};

use crate::rrl::{write_slip, Category, RateLimiter, Verdict};
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
    /// The options of the query's OPT (empty without one), for the cookie
    /// check.
    options: &'q [u8],
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
    /// COOKIE option of a bad length, a class other than IN, a zone
    /// transfer).
    fn parse(query: &'q [u8], full_udp_size: usize) -> Option<Self> {
        let view = MessageView::parse(query).ok()?;
        let question = view.question()?;
        if question.qclass != RClass::IN || matches!(question.qtype, RType::AXFR | RType::IXFR) {
            return None;
        }
        let edns = view.edns().ok()?;
        let options = edns.map_or(&[][..], |edns| edns.options);
        if !options.is_empty() && cookie::is_malformed(options) {
            return None;
        }
        let key = CacheKey::from_query(&view, edns.as_ref())?;
        let limit = match edns {
            None => CLASSIC_UDP_SIZE,
            Some(edns) => usize::from(edns.udp_size)
                .max(CLASSIC_UDP_SIZE)
                .min(full_udp_size),
        };
        Some(Request {
            view,
            key,
            limit,
            options,
        })
    }
}

//----------- Answering ------------------------------------------------------

/// The worker's read-only answering inputs, borrowed apart from its
/// mutable parts (cache, counters) and its arena.
struct Answering<'w> {
    catalog: &'w Catalog,
    options: &'w Options,
    full_udp_size: usize,
    cookies: Option<&'w Cookies>,
}

//----------- Cookies --------------------------------------------------------

/// A worker's DNS cookie state: the secret (the same on every core) and
/// the wall clock in Unix seconds, read at most once per UDP batch and per
/// TCP message, by the first query there that carries an option
/// ([`Worker::tick_cookie_clock`] marks it stale), never per query.
struct Cookies {
    secret: CookieSecret,
    /// The clock's last reading.
    now: Cell<u32>,
    /// Whether `now` must be read again before use.
    stale: Cell<bool>,
}

impl Cookies {
    /// The wall clock, read if stale.
    fn now(&self) -> u32 {
        if self.stale.replace(false) {
            self.now.set(unix_seconds());
        }
        self.now.get()
    }
}

//----------- Peer -----------------------------------------------------------

/// The client's address, read (from the receive batch) the first time
/// something needs it: the forwarder, the rate limiter, or a query with
/// EDNS options when cookies are on. Most queries need none of them.
struct Peer<'p> {
    read: &'p dyn Fn() -> Option<SocketAddr>,
    value: Cell<Option<Option<SocketAddr>>>,
}

impl<'p> Peer<'p> {
    fn new(read: &'p dyn Fn() -> Option<SocketAddr>) -> Self {
        Peer {
            read,
            value: Cell::new(None),
        }
    }

    /// The address, read now if not yet.
    fn get(&self) -> Option<SocketAddr> {
        if let Some(value) = self.value.get() {
            return value;
        }
        let value = (self.read)();
        self.value.set(Some(value));
        value
    }
}

/// The wall clock in Unix seconds, as RFC 9018 timestamps count (modulo
/// 2^32, compared in serial-number arithmetic); 0 before 1970.
fn unix_seconds() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as u32)
}

impl Answering<'_> {
    /// The cache first, then `respond`; the request's views go in `arena`.
    #[allow(clippy::too_many_arguments)]
    fn udp(
        &self,
        arena: &Bump,
        cache: &mut ResponseCache,
        forwarder: Option<&mut Forwarder>,
        limiter: Option<&mut RateLimiter>,
        counters: &mut Counters,
        query: &[u8],
        peer: &Peer<'_>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        let Some(request) = Request::parse(query, self.full_udp_size) else {
            let check = self.cookie_of(query, peer);
            let extra = check
                .reply_option()
                .map_or(&[][..], |option| option.as_bytes());
            let answer = respond_with(
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
        let answer = if let Some(len) = cache.answer(&request.key, query, request.limit, out) {
            counters.cache_hits += 1;
            UdpAnswer::Send(len)
        } else {
            counters.cache_misses += 1;
            let response = respond(self.catalog, query, Transport::Udp, self.options, out);
            // Only an answer written at the full size is what respond writes
            // for every client whose limit it fits; the cache checks the fit.
            let full_size = !request.key.edns || request.limit == self.full_udp_size;
            if let (Response::Send(len), true) = (response, full_size) {
                cache.insert(request.key, &out[..len]);
            }
            response.into()
        };
        // Most queries carry no option: one branch.
        let check = if request.options.is_empty() {
            CookieCheck::None
        } else {
            self.cookie(request.options, peer)
        };
        let answer = match check {
            CookieCheck::None => answer,
            _ => self.with_cookie(&check, query, request.limit, answer, out),
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

    /// The cookie check of a query whose OPT has `options`, from `peer`:
    /// [`CookieCheck::None`] when cookies are off, there are no options or
    /// the peer is unknown.
    fn cookie(&self, options: &[u8], peer: &Peer<'_>) -> CookieCheck {
        let Some(cookies) = self.cookies.filter(|_| !options.is_empty()) else {
            return CookieCheck::None;
        };
        match peer.get() {
            Some(peer) => cookie::check_options(options, &cookies.secret, peer.ip(), cookies.now()),
            None => CookieCheck::None,
        }
    }

    /// [`Answering::cookie`] for a query not parsed yet (the paths that
    /// do not go through [`Request`]).
    fn cookie_of(&self, query: &[u8], peer: &Peer<'_>) -> CookieCheck {
        if self.cookies.is_none() {
            return CookieCheck::None;
        }
        let edns = MessageView::parse(query)
            .ok()
            .and_then(|view| view.edns().ok().flatten());
        self.cookie(edns.map_or(&[][..], |edns| edns.options), peer)
    }

    /// Adds the COOKIE option of `check`, if any, to a UDP answer for one
    /// of our zones written into `out` without it (from the cache or by
    /// `respond`): appended to its OPT, or, where that would not fit
    /// within `limit` (or the OPT has options of ours), the answer written
    /// again by `respond_with`, which keeps room for it.
    fn with_cookie(
        &self,
        check: &CookieCheck,
        query: &[u8],
        limit: usize,
        answer: UdpAnswer,
        out: &mut [u8],
    ) -> UdpAnswer {
        let (UdpAnswer::Send(len), Some(option)) = (answer, check.reply_option()) else {
            return answer;
        };
        let option = option.as_bytes();
        match append_option(out, len, limit, option) {
            Some(len) => UdpAnswer::Send(len),
            None => respond_with(
                self.catalog,
                query,
                Transport::Udp,
                self.options,
                option,
                out,
            )
            .into(),
        }
    }

    /// Rate limiting of an answer written into `out` for `query` (whose
    /// lowercased name and type are `question`, and whose cookie is
    /// `check`) to `ip` at `now` (milliseconds): the answer,
    /// [`UdpAnswer::Drop`], or a slip written over it. Counts limited and
    /// slipped answers.
    #[allow(clippy::too_many_arguments)]
    fn limit(
        &self,
        limiter: &mut RateLimiter,
        counters: &mut Counters,
        (query, check): (&[u8], &CookieCheck),
        question: Option<(Name<'_>, RType)>,
        ip: IpAddr,
        now: u64,
        answer: UdpAnswer,
        out: &mut [u8],
    ) -> UdpAnswer {
        let UdpAnswer::Send(len) = answer else {
            return answer;
        };
        // A valid server cookie proves the address: exempt, like the
        // exempt list.
        if len < HEADER_LEN || check.is_verified() || limiter.is_exempt(ip) {
            return answer;
        }
        let flags = [out[2], out[3]];
        let category = Category::of_rcode(flags[1]);
        let (name, qtype): (&[u8], u16) = match (category, question) {
            (Category::Response, Some((name, qtype))) => (name.as_bytes(), qtype.0),
            // As BIND: every NXDOMAIN of a zone is one account, so that
            // random names do not each get a fresh limit.
            (Category::NxDomain, Some((name, _))) => (
                self.catalog
                    .find(name)
                    .map_or(&[][..], |zone| zone.origin().as_bytes()),
                0,
            ),
            _ => (&[], 0),
        };
        let second = (now / 1000) as u32;
        match limiter.account(ip, category, name, qtype, second) {
            Verdict::Send => answer,
            Verdict::Drop => {
                counters.rrl_limited += 1;
                UdpAnswer::Drop
            }
            Verdict::Slip => {
                counters.rrl_limited += 1;
                // A client that sent a cookie (not a valid one: that is
                // exempt) gets BADCOOKIE with a fresh server cookie, as in
                // BIND: it retries over UDP with it and is then exempt.
                // Others, and queries BADCOOKIE does not answer (another
                // opcode or EDNS version, no question), get TC=1 and retry
                // over TCP.
                let badcookie = check
                    .reply_option()
                    .map(|option| bad_cookie(query, self.options, option, out));
                let len = match badcookie {
                    Some(Response::Send(len)) => len,
                    Some(Response::Drop) | None => {
                        let udp_size = u16::try_from(self.full_udp_size).unwrap_or(u16::MAX);
                        write_slip(query, flags, udp_size, out)
                    }
                };
                if len == 0 {
                    return UdpAnswer::Drop;
                }
                counters.rrl_slipped += 1;
                UdpAnswer::Send(len)
            }
        }
    }

    /// [`Answering::limit`] for a query the cache path could not parse
    /// (another class or opcode, a malformed or EDNS-version error): its
    /// question, if readable, is parsed and lowercased here.
    #[allow(clippy::too_many_arguments)]
    fn limit_unparsed(
        &self,
        limiter: &mut RateLimiter,
        counters: &mut Counters,
        query: &[u8],
        check: &CookieCheck,
        peer: &Peer<'_>,
        now: u64,
        answer: UdpAnswer,
        out: &mut [u8],
    ) -> UdpAnswer {
        if !matches!(answer, UdpAnswer::Send(_)) {
            return answer;
        }
        let Some(ip) = peer.get().map(|peer| peer.ip()) else {
            return answer;
        };
        let question = MessageView::parse(query)
            .ok()
            .and_then(|view| view.question())
            .map(|question| (question.name.to_lower(), question.qtype));
        let question = question
            .as_ref()
            .map(|(name, qtype)| (name.as_name(), *qtype));
        self.limit(
            limiter,
            counters,
            (query, check),
            question,
            ip,
            now,
            answer,
            out,
        )
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
        let read = || peer;
        let peer = Peer::new(&read);
        if forwarder.is_some() && peer.get().is_some() {
            if let Some(request) = Request::parse(query, TCP_SIZE) {
                let request: &Request<'_> = arena.alloc(request);
                if let Some(answer) =
                    self.forwardable(request, forwarder, query, &peer, TCP_SIZE, now, out)
                {
                    return answer;
                }
            }
        }
        let check = self.cookie_of(query, &peer);
        let extra = check
            .reply_option()
            .map_or(&[][..], |option| option.as_bytes());
        respond_with(
            self.catalog,
            query,
            Transport::Tcp,
            self.options,
            extra,
            out,
        )
        .into()
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
        peer: &Peer<'_>,
        limit: usize,
        now: u64,
        out: &mut [u8],
    ) -> Option<UdpAnswer> {
        let forwarder = forwarder?;
        let peer = peer.get()?;
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
    /// Response rate limiting of UDP answers, when configured.
    limiter: Option<RateLimiter>,
    /// DNS cookies, when on.
    cookies: Option<Cookies>,
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
            limiter: None,
            cookies: None,
        }
    }

    /// The catalog this worker answers from (replaced on reload).
    pub(crate) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
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
    /// [`UdpAnswer::Forward`], and, with a rate limiter, answers to `peer`
    /// are limited (dropped, or replaced by a slip). Counts the query and
    /// the answer.
    pub fn answer_udp_from(
        &mut self,
        query: &[u8],
        peer: Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.answer_udp_lazy(query, &|| peer, now, out)
    }

    /// [`Worker::answer_udp_from`] with the client's address read by
    /// `peer` only if needed (the UDP loop's path: the address is copied
    /// out of the receive batch only for forwarding, rate limiting and
    /// queries with EDNS options when cookies are on).
    pub(crate) fn answer_udp_lazy(
        &mut self,
        query: &[u8],
        peer: &dyn Fn() -> Option<SocketAddr>,
        now: u64,
        out: &mut [u8],
    ) -> UdpAnswer {
        self.counters.queries += 1;
        let peer = Peer::new(peer);
        let answering = Answering {
            catalog: &self.catalog,
            options: &self.options,
            full_udp_size: self.full_udp_size,
            cookies: self.cookies.as_ref(),
        };
        let answer = answering.udp(
            &self.arena,
            &mut self.cache,
            self.forwarder.as_mut(),
            self.limiter.as_mut(),
            &mut self.counters,
            query,
            &peer,
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
            cookies: self.cookies.as_ref(),
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
            cookies: self.cookies.as_ref(),
        };
        let answer = answering.udp(
            &self.arena,
            &mut self.cache,
            None,
            None,
            &mut self.counters,
            query,
            &Peer::new(&|| None),
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

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rrl::RateLimitConfig;
    use crate::Cidr;

    const ZONE: &str = "\
$ORIGIN example.com.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.80
";

    /// The per-core rate of responses in these tests.
    const RATE: u32 = 5;

    fn catalog() -> Arc<Catalog> {
        Arc::new(tern_testkit::catalog("example.com.", ZONE))
    }

    /// A query (RD set), with an OPT announcing 4096 octets if `edns`.
    fn query(id: u16, name: &str, qtype: u16, edns: bool) -> Vec<u8> {
        tern_testkit::query(id, name, qtype, edns.then_some((4096, false)))
    }

    fn worker(config: RateLimitConfig) -> Worker {
        let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
        worker.set_rate_limiter(RateLimiter::new(&config, 1));
        worker
    }

    fn config() -> RateLimitConfig {
        RateLimitConfig {
            responses_per_second: RATE,
            exempt: vec![Cidr::parse("127.0.0.0/8").unwrap()],
            ..RateLimitConfig::default()
        }
    }

    fn peer(text: &str) -> Option<SocketAddr> {
        Some(text.parse().unwrap())
    }

    /// What `count` queries (IDs from 0) from `from` at `now` ms got:
    /// (full answers, slips, dropped).
    fn burst(
        worker: &mut Worker,
        from: &str,
        name: impl Fn(usize) -> String,
        qtype: u16,
        count: usize,
        now: u64,
    ) -> (usize, usize, usize) {
        let mut out = [0u8; 1232];
        let (mut full, mut slipped, mut dropped) = (0, 0, 0);
        for i in 0..count {
            let query = query(i as u16, &name(i), qtype, i % 2 == 0);
            match worker.answer_udp_from(&query, peer(from), now, &mut out) {
                UdpAnswer::Send(len) => {
                    let view = MessageView::parse(&out[..len]).unwrap();
                    assert_eq!(view.header().id(), i as u16);
                    assert_eq!(
                        view.question().unwrap().bytes,
                        MessageView::parse(&query)
                            .unwrap()
                            .question()
                            .unwrap()
                            .bytes
                    );
                    if view.header().tc() {
                        assert_eq!(view.header().counts()[..3], [1, 0, 0]);
                        // The OPT only if the query had one.
                        assert_eq!(view.edns().unwrap().is_some(), i % 2 == 0);
                        slipped += 1;
                    } else {
                        full += 1;
                    }
                }
                UdpAnswer::Drop => dropped += 1,
                UdpAnswer::Forward => panic!("nothing is forwarded"),
            }
        }
        (full, slipped, dropped)
    }

    fn www(_: usize) -> String {
        "WwW.example.com.".to_string()
    }

    #[test]
    fn a_burst_gets_the_rate_and_every_second_limited_answer_slips() {
        let mut worker = worker(config());
        let count = 10 * RATE as usize;
        let second = 1_000_000;
        let (full, slipped, dropped) = burst(&mut worker, "192.0.2.1:5300", www, 1, count, second);
        let limited = count - RATE as usize;
        assert_eq!(full, RATE as usize);
        // slip 2: the first limited answer slips, then every other one.
        assert_eq!(slipped, limited.div_ceil(2));
        assert_eq!(dropped, limited / 2);
        let counters = worker.counters();
        assert_eq!(counters.queries, count as u64);
        assert_eq!(counters.rrl_limited, limited as u64);
        assert_eq!(counters.rrl_slipped, slipped as u64);
        assert_eq!(counters.truncated, slipped as u64);
        assert_eq!(counters.dropped, dropped as u64);
        assert_eq!(counters.answers_by_rcode[0], (full + slipped) as u64);
        // Another client of the same /24 shares the account; another /24
        // does not.
        assert_eq!(
            burst(&mut worker, "192.0.2.99:53", www, 1, 1, second + 500),
            (0, 0, 1)
        );
        assert_eq!(
            burst(&mut worker, "192.0.3.1:53", www, 1, 3, second + 500),
            (3, 0, 0)
        );
        // The debt: 5 - 50 - 1 = -46; nine seconds later -1, still limited
        // (and one more in debt); a second more pays it.
        assert_eq!(
            burst(&mut worker, "192.0.2.1:5300", www, 1, 1, second + 9_000),
            (0, 1, 0)
        );
        assert_eq!(
            burst(&mut worker, "192.0.2.1:5300", www, 1, 1, second + 10_000),
            (1, 0, 0)
        );
    }

    #[test]
    fn exempt_clients_and_tcp_are_not_limited() {
        let mut worker = worker(config());
        let count = 10 * RATE as usize;
        assert_eq!(
            burst(&mut worker, "127.0.0.1:5300", www, 1, count, 0),
            (count, 0, 0)
        );
        assert_eq!(
            burst(&mut worker, "192.0.2.1:5300", www, 1, count, 0).0,
            RATE as usize
        );
        let mut out = vec![0u8; TCP_SIZE];
        for id in 0..count as u16 {
            let query = query(id, "www.example.com.", 1, false);
            let answer = worker.answer_tcp_from(&query, peer("192.0.2.1:5300"), 0, &mut out);
            let UdpAnswer::Send(len) = answer else {
                panic!("TCP answers are never limited: {answer:?}");
            };
            assert!(!MessageView::parse(&out[..len]).unwrap().header().tc());
        }
        // Without a client address (the plain `answer`) nothing is limited.
        let mut out = [0u8; 1232];
        for id in 0..count as u16 {
            let query = query(id, "www.example.com.", 1, false);
            assert!(worker.answer(&query, Transport::Udp, &mut out).is_some());
        }
        assert_eq!(
            worker.counters().rrl_limited,
            (count - RATE as usize) as u64
        );
    }

    #[test]
    fn nxdomain_and_errors_have_their_own_accounts() {
        let mut worker = worker(RateLimitConfig {
            responses_per_second: 100,
            nxdomains_per_second: 2,
            errors_per_second: 3,
            slip: 0,
            ..RateLimitConfig::default()
        });
        let client = "198.51.100.7:1000";
        // Random names of one zone share the zone's NXDOMAIN account.
        let random = |i: usize| format!("r{i}.example.com.");
        assert_eq!(burst(&mut worker, client, random, 1, 10, 0), (2, 0, 8));
        // REFUSED (not our zone), whatever the name: the error account.
        let elsewhere = |i: usize| format!("r{i}.example.org.");
        assert_eq!(burst(&mut worker, client, elsewhere, 1, 10, 0), (3, 0, 7));
        // NOTIMP (a malformed-path answer) shares the error account.
        let mut notify = query(1, "www.example.com.", 6, false);
        notify[2] = 0x20; // opcode NOTIFY
        let mut out = [0u8; 1232];
        assert_eq!(
            worker.answer_udp_from(&notify, peer(client), 0, &mut out),
            UdpAnswer::Drop
        );
        // The responses account is untouched: NOERROR answers and NODATA.
        assert_eq!(burst(&mut worker, client, www, 1, 10, 0), (10, 0, 0));
        assert_eq!(burst(&mut worker, client, www, 16, 10, 0), (10, 0, 0));
        let counters = worker.counters();
        assert_eq!(counters.answers_by_rcode[3], 2);
        assert_eq!(counters.answers_by_rcode[5], 3);
        assert_eq!(counters.rrl_limited, 8 + 7 + 1);
        assert_eq!(counters.rrl_slipped, 0);
        assert_eq!(counters.dropped, 16);
    }

    //----------- Cookies ----------------------------------------------------

    const SECRET: [u8; 16] = [7; 16];
    const CLIENT_COOKIE: [u8; 8] = *b"tern-cli";
    /// The cookies' clock in these tests (Unix seconds).
    const NOW: u32 = 1_800_000_000;

    /// A query for `name` A with an OPT carrying `cookie` (the COOKIE
    /// option's value).
    fn cookie_query(id: u16, name: &str, cookie: &[u8]) -> Vec<u8> {
        let mut q = query(id, name, 1, true);
        let opt = q.len() - 11;
        let mut option = vec![0, 10];
        option.extend_from_slice(&(cookie.len() as u16).to_be_bytes());
        option.extend_from_slice(cookie);
        q[opt + 9..opt + 11].copy_from_slice(&(option.len() as u16).to_be_bytes());
        q.extend_from_slice(&option);
        q
    }

    fn cookie_worker() -> Worker {
        let mut worker = Worker::new(catalog(), Options::default(), CacheLimits::default());
        worker.set_cookie_secret(CookieSecret::new(SECRET));
        worker.set_cookie_clock(NOW);
        worker
    }

    /// [`cookie_worker`] with rate limiting by `config` (one core).
    fn limited_cookie_worker(config: RateLimitConfig) -> Worker {
        let mut worker = cookie_worker();
        worker.set_rate_limiter(RateLimiter::new(&config, 1));
        worker
    }

    /// The COOKIE option's value in an answer, and the answer's full rcode
    /// (header bits and the OPT's upper bits).
    fn answer_cookie(answer: &[u8]) -> (Option<Vec<u8>>, u16) {
        let view = MessageView::parse(answer).unwrap();
        let edns = view.edns().unwrap().expect("an OPT");
        let rcode = u16::from(edns.extended_rcode) << 4 | u16::from(view.header().rcode_bits());
        let cookie = edns
            .options()
            .map(Result::unwrap)
            .find(|(code, _)| *code == 10)
            .map(|(_, value)| value.to_vec());
        (cookie, rcode)
    }

    fn server_cookie_for(ip: &str, now: u32) -> [u8; 16] {
        let secret = CookieSecret::new(SECRET);
        cookie::server_cookie(&secret, &CLIENT_COOKIE, ip.parse().unwrap(), now)
    }

    #[test]
    fn answers_carry_a_server_cookie_from_the_cache_too() {
        let mut worker = cookie_worker();
        let client = "192.0.2.7:5300";
        let asked = cookie_query(1, "WwW.example.com.", &CLIENT_COOKIE);
        let mut expected = CLIENT_COOKIE.to_vec();
        expected.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
        // What respond_with writes with that option: the reference.
        let option =
            cookie::CookieOption::new(&CLIENT_COOKIE, &server_cookie_for("192.0.2.7", NOW));
        let mut reference = [0u8; 1232];
        let Response::Send(reference_len) = respond_with(
            &catalog(),
            &asked,
            Transport::Udp,
            &Options::default(),
            option.as_bytes(),
            &mut reference,
        ) else {
            panic!("respond_with answers");
        };
        let mut out = [0u8; 1232];
        for round in 0..3 {
            let UdpAnswer::Send(len) = worker.answer_udp_from(&asked, peer(client), 0, &mut out)
            else {
                panic!("an answer");
            };
            assert_eq!(answer_cookie(&out[..len]), (Some(expected.clone()), 0));
            assert_eq!(&out[..len], &reference[..reference_len], "round {round}");
        }
        // One miss, then hits: the cached answer got the option appended.
        let counters = worker.counters();
        assert_eq!((counters.cache_misses, counters.cache_hits), (1, 2));
        // The cache holds the answer without the cookie: a query without
        // one gets none.
        let plain = query(2, "www.example.com.", 1, true);
        let UdpAnswer::Send(len) = worker.answer_udp_from(&plain, peer(client), 0, &mut out) else {
            panic!("an answer");
        };
        assert_eq!(answer_cookie(&out[..len]), (None, 0));
        // Over TCP, the same option.
        let UdpAnswer::Send(len) = worker.answer_tcp_from(&asked, peer(client), 0, &mut out) else {
            panic!("an answer");
        };
        assert_eq!(answer_cookie(&out[..len]), (Some(expected.clone()), 0));
        // A refusal (EDE already in the OPT) is written again with it.
        let refused = cookie_query(3, "www.example.org.", &CLIENT_COOKIE);
        let UdpAnswer::Send(len) = worker.answer_udp_from(&refused, peer(client), 0, &mut out)
        else {
            panic!("an answer");
        };
        assert_eq!(answer_cookie(&out[..len]), (Some(expected), 5));
    }

    #[test]
    fn a_valid_server_cookie_is_echoed_and_a_bad_one_replaced() {
        let mut worker = cookie_worker();
        let mut out = [0u8; 1232];
        let mut ask = |worker: &mut Worker, from: &str, server: &[u8]| {
            let mut value = CLIENT_COOKIE.to_vec();
            value.extend_from_slice(server);
            let query = cookie_query(4, "www.example.com.", &value);
            let UdpAnswer::Send(len) = worker.answer_udp_from(&query, peer(from), 0, &mut out)
            else {
                panic!("an answer");
            };
            let (cookie, rcode) = answer_cookie(&out[..len]);
            assert_eq!(rcode, 0);
            let cookie = cookie.expect("a cookie");
            assert_eq!(cookie[..8], CLIENT_COOKIE);
            cookie[8..].to_vec()
        };
        // Minted 100 s ago for this address: echoed as it is.
        let young = server_cookie_for("192.0.2.7", NOW - 100);
        assert_eq!(ask(&mut worker, "192.0.2.7:1", &young), young);
        // Minted 2000 s ago: still valid, renewed.
        let old = server_cookie_for("192.0.2.7", NOW - 2000);
        assert_eq!(
            ask(&mut worker, "192.0.2.7:1", &old),
            server_cookie_for("192.0.2.7", NOW)
        );
        // For another address, or altered: a fresh one for this address.
        assert_eq!(
            ask(&mut worker, "192.0.2.8:1", &young),
            server_cookie_for("192.0.2.8", NOW)
        );
        let mut altered = young;
        altered[15] ^= 1;
        assert_eq!(
            ask(&mut worker, "192.0.2.7:1", &altered),
            server_cookie_for("192.0.2.7", NOW)
        );
    }

    #[test]
    fn a_malformed_cookie_is_a_formerr_on_every_path() {
        let mut out = [0u8; 1232];
        for cookies in [false, true] {
            let mut worker = if cookies {
                cookie_worker()
            } else {
                Worker::new(catalog(), Options::default(), CacheLimits::default())
            };
            // Warm the cache for the name first.
            let plain = query(5, "www.example.com.", 1, true);
            worker.answer_udp_from(&plain, peer("192.0.2.7:1"), 0, &mut out);
            for bad in [&b"short"[..], &[1; 9], &[1; 15], &[1; 41]] {
                let query = cookie_query(6, "www.example.com.", bad);
                let UdpAnswer::Send(len) =
                    worker.answer_udp_from(&query, peer("192.0.2.7:1"), 0, &mut out)
                else {
                    panic!("an answer");
                };
                assert_eq!(answer_cookie(&out[..len]), (None, 1), "{bad:?}");
                let UdpAnswer::Send(len) =
                    worker.answer_tcp_from(&query, peer("192.0.2.7:1"), 0, &mut out)
                else {
                    panic!("an answer");
                };
                assert_eq!(answer_cookie(&out[..len]), (None, 1), "{bad:?}");
            }
        }
    }

    #[test]
    fn cookies_off_or_absent_leave_answers_as_they_were() {
        let mut with = cookie_worker();
        let mut without = Worker::new(catalog(), Options::default(), CacheLimits::default());
        let mut a = [0u8; 1232];
        let mut b = [0u8; 1232];
        // No COOKIE option: the same answers with cookies on or off.
        for asked in [
            query(7, "www.example.com.", 1, true),
            query(8, "nope.example.com.", 1, false),
        ] {
            let first = without.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut a);
            let UdpAnswer::Send(len) = first else {
                panic!("an answer");
            };
            let second = with.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut b);
            assert_eq!(second, first);
            assert_eq!(a[..len], b[..len]);
        }
        // Cookies off: a COOKIE option is ignored, as before cookies.
        let asked = cookie_query(9, "www.example.com.", &CLIENT_COOKIE);
        let UdpAnswer::Send(len) = without.answer_udp_from(&asked, peer("192.0.2.7:1"), 0, &mut a)
        else {
            panic!("an answer");
        };
        assert_eq!(answer_cookie(&a[..len]), (None, 0));
    }

    #[test]
    fn rate_limiting_exempts_valid_cookies_and_slips_badcookie() {
        let mut worker = limited_cookie_worker(RateLimitConfig {
            responses_per_second: RATE,
            slip: 1,
            ..RateLimitConfig::default()
        });
        let mut out = [0u8; 1232];
        let count = 4 * RATE as usize;
        // A client cookie only: RATE answers, then BADCOOKIE slips with a
        // fresh server cookie.
        let asked = cookie_query(10, "www.example.com.", &CLIENT_COOKIE);
        let mut rcodes = Vec::new();
        for _ in 0..count {
            let UdpAnswer::Send(len) =
                worker.answer_udp_from(&asked, peer("192.0.2.7:1"), 5_000, &mut out)
            else {
                panic!("slip 1 answers every query");
            };
            let (cookie, rcode) = answer_cookie(&out[..len]);
            let mut expected = CLIENT_COOKIE.to_vec();
            expected.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
            assert_eq!(cookie, Some(expected));
            rcodes.push(rcode);
        }
        assert_eq!(
            rcodes.iter().filter(|&&rcode| rcode == 0).count(),
            RATE as usize
        );
        assert_eq!(
            rcodes.iter().filter(|&&rcode| rcode == 23).count(),
            count - RATE as usize
        );
        // With the server cookie it got: never limited.
        let mut value = CLIENT_COOKIE.to_vec();
        value.extend_from_slice(&server_cookie_for("192.0.2.7", NOW));
        let valid = cookie_query(11, "www.example.com.", &value);
        for _ in 0..count {
            let UdpAnswer::Send(len) =
                worker.answer_udp_from(&valid, peer("192.0.2.7:1"), 5_000, &mut out)
            else {
                panic!("an answer");
            };
            let view = MessageView::parse(&out[..len]).unwrap();
            assert!(!view.header().tc());
            assert_eq!(
                (view.header().counts()[1], answer_cookie(&out[..len]).1),
                (1, 0)
            );
        }
        // Without a cookie, the same /24 is still limited: TC=1 slips.
        let plain = query(12, "www.example.com.", 1, true);
        let UdpAnswer::Send(len) =
            worker.answer_udp_from(&plain, peer("192.0.2.9:1"), 5_000, &mut out)
        else {
            panic!("slip 1 answers every query");
        };
        assert!(MessageView::parse(&out[..len]).unwrap().header().tc());
        let counters = worker.counters();
        assert_eq!(counters.rrl_slipped, count as u64 - u64::from(RATE) + 1);
        assert_eq!(counters.badcookie, count as u64 - u64::from(RATE));
        assert_eq!(counters.answers_by_rcode[7], 0);
        assert_eq!(counters.rrl_limited, counters.rrl_slipped);
    }

    #[test]
    fn queries_badcookie_does_not_answer_slip_as_tc() {
        let mut worker = limited_cookie_worker(RateLimitConfig {
            errors_per_second: RATE,
            slip: 1,
            ..RateLimitConfig::default()
        });
        let mut out = [0u8; 1232];
        // A NOTIFY with a client cookie: NOTIMP, an error answer; when
        // limited, BADCOOKIE does not answer another opcode, so it slips
        // as TC=1.
        let mut notify = cookie_query(13, "www.example.com.", &CLIENT_COOKIE);
        notify[2] = 0x20;
        let count = 3 * RATE as usize;
        let mut kinds = Vec::new();
        for _ in 0..count {
            let UdpAnswer::Send(len) =
                worker.answer_udp_from(&notify, peer("192.0.2.7:1"), 5_000, &mut out)
            else {
                panic!("slip 1 answers every query");
            };
            let view = MessageView::parse(&out[..len]).unwrap();
            kinds.push((view.header().tc(), view.header().rcode_bits()));
        }
        let notimp = kinds.iter().filter(|kind| **kind == (false, 4)).count();
        let slips = kinds.iter().filter(|kind| kind.0).count();
        assert_eq!((notimp, slips), (RATE as usize, count - RATE as usize));
        let counters = worker.counters();
        assert_eq!(counters.rrl_slipped, counters.rrl_limited);
        assert_eq!(counters.rrl_slipped, (count - RATE as usize) as u64);
        assert_eq!(counters.truncated, counters.rrl_slipped);
        assert_eq!(counters.dropped, 0);
    }
}
