//! The caching forwarder, sans I/O: a [`Forwarder`] decides what to send
//! to which upstream and what to answer each waiting client; the server
//! owns the sockets and the timers and feeds it bytes and the time.
//!
//! ```text
//!   start(key, client, now)        ──► Action::Transmit { upstream, socket, bytes }
//!   on_response(upstream, socket, bytes, now)
//!                                  ──► Action::Answer { client, bytes } per waiter
//!                                  ──► Action::TransmitTcp (TC=1 from upstream)
//!                                  ──► Action::Release { upstream, socket }
//!   on_timeout(now)                ──► retries on the next upstream, or answers
//!                                      from a stale entry, or SERVFAIL
//! ```
//!
//! Off-path forgery (docs/security.md): every UDP transmit names a socket
//! of its own (`socket` is a fresh number), which the server opens on a
//! source port drawn at random and closes on [`Action::Release`], once the
//! transmit is answered, abandoned or timed out; its ID and the 0x20 case
//! of its name come from the thread's CSPRNG (`rand`'s ChaCha12, reseeded
//! from the OS); and each upstream gets a DNS cookie (RFC 7873), whose
//! server part, once the upstream has sent one, every answer from it must
//! carry with our client part.
//!
//! Identical questions in flight (same [`ForwardKey`]) share one upstream
//! query; each waiting client gets its own answer, with its own ID and
//! its own question bytes. An upstream answer is accepted only if it
//! arrives on the connected socket the query left from (the server's
//! business), carries the query's ID, and passes `validate`: the question
//! byte for byte as sent (its 0x20 case too) and the records inside the
//! question's chain. Anything else is counted as rejected and ignored.
//!
//! Time is `now` in milliseconds of any monotonic clock, passed in; the
//! cache uses whole seconds of it.
//!
//! NSID (RFC 5001): a client whose query asked for it (`nsid` of
//! [`Forwarder::start`] and [`Forwarder::answer_from_cache`]) gets our
//! identifier ([`Forwarder::set_nsid`]) in the OPT of its answer, whether
//! from the cache, from upstream, stale or SERVFAIL; the upstream's own
//! NSID is never asked for nor passed on. Cached entries hold no OPT: the
//! option is written per client.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hashbrown::{HashMap, HashTable};
use rand::RngCore;

use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::{RClass, RType};

use crate::hash::KeyedHash;
use crate::response::CacheLimits;

mod cache;
mod cookie;
mod validate;

pub use cache::{FORWARD_ENTRY_OVERHEAD, MAX_FORWARD_ENTRY_LEN, MAX_STALE};
pub use validate::{MAX_CACHE_TTL, MAX_CNAME_CHAIN};

use cache::{write_answer, ClientView, ForwardCache, Parts, Ttls};
use cookie::{CookieCheck, UpstreamCookie};
use validate::{Prepared, Validator, Verdict};

/// The longest NSID option sent: code, length and the 128 octets of
/// `tern_authority::nsid::MAX_NSID_LEN`, so that a truncated answer (the
/// client's header and question, an OPT with the option) still fits in
/// 512 octets.
pub const MAX_NSID_OPTION: usize = 4 + 128;

/// The most upstreams: a query's tried set is a 64-bit mask.
pub const MAX_UPSTREAMS: usize = 64;

/// The EDNS UDP size we advertise to upstreams (DNS Flag Day 2020).
pub const UPSTREAM_UDP_SIZE: u16 = 1232;

/// One in this many `fastest` queries goes to another upstream than the
/// fastest, so that the others' RTTs stay known (and a recovered upstream
/// is noticed).
pub const PROBE_ONE_IN: u64 = 32;

/// An upstream's smoothed RTT before it has answered: 10 ms, so that new
/// upstreams are tried before ones known to be slow.
const INITIAL_RTT_MICROS: u64 = 10_000;

/// A hit on an entry asked at least this often, with at most a tenth of
/// its TTL left (and at least [`PREFETCH_MIN_TTL`] seconds of TTL), sends
/// a query to refresh it before it expires.
pub const PREFETCH_MIN_HITS: u32 = 3;

/// Entries with a shorter TTL are never prefetched.
pub const PREFETCH_MIN_TTL: u32 = 10;

/// The most prefetches queued between two batches; more are skipped (the
/// queue is allocated once, so a hit never allocates).
pub const PREFETCH_QUEUE: usize = 16;

//----------- Policy ---------------------------------------------------------

/// How upstreams are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// The lowest smoothed RTT, with one query in [`PROBE_ONE_IN`] sent
    /// to another upstream.
    #[default]
    Fastest,
    /// Each query to the next upstream in turn.
    RoundRobin,
    /// `race` upstreams at once; the first good answer wins.
    Race,
}

//----------- Cidr -----------------------------------------------------------

/// An address prefix, such as `127.0.0.0/8` or `::1/128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The network address.
    pub address: IpAddr,
    /// The prefix length (0..=32 for IPv4, 0..=128 for IPv6).
    pub prefix: u8,
}

impl Cidr {
    /// Parses `ADDR/LEN` or a bare address (a host prefix).
    pub fn parse(text: &str) -> Option<Cidr> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address.trim().parse().ok()?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix.trim().parse::<u8>().ok().filter(|&p| p <= max)?,
            None => max,
        };
        Some(Cidr { address, prefix })
    }

    /// Whether `ip` is inside the prefix. An IPv4-mapped IPv6 address is
    /// compared as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

//----------- ForwardConfig --------------------------------------------------

/// The forwarder's configuration (the `forward:` section), validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ForwardConfig {
    /// Clients whose recursive queries are forwarded; empty: nobody (so a
    /// default install is not an open resolver).
    pub allow: Vec<Cidr>,
    /// The upstreams, at most [`MAX_UPSTREAMS`].
    pub upstreams: Vec<SocketAddr>,
    /// How upstreams are chosen.
    pub policy: Policy,
    /// Upstreams asked at once under [`Policy::Race`].
    pub race: usize,
    /// How long one attempt waits for an answer.
    pub timeout: Duration,
    /// Attempts after the first, each on the next upstream.
    pub retries: u32,
    /// The TTL of answers served stale (RFC 8767 suggests 30 s).
    pub stale_ttl: Duration,
    /// The cap on the TTL of negative answers (RFC 2308 section 5).
    pub negative_ttl_max: Duration,
    /// How long a SERVFAIL is cached once every upstream failed.
    pub servfail_ttl: Duration,
    /// The per-core forward cache's bounds.
    pub cache: CacheLimits,
    /// Upstream queries in flight per core; past it, new questions get
    /// SERVFAIL (or a stale answer).
    pub max_in_flight: usize,
    /// Clients waiting on one in-flight question; past it, SERVFAIL.
    pub max_waiters: usize,
}

impl ForwardConfig {
    /// Defaults for everything but the upstreams.
    pub fn new(upstreams: Vec<SocketAddr>) -> Self {
        ForwardConfig {
            allow: Vec::new(),
            upstreams,
            policy: Policy::Fastest,
            race: 2,
            timeout: Duration::from_millis(800),
            retries: 2,
            stale_ttl: Duration::from_secs(30),
            negative_ttl_max: Duration::from_secs(3600),
            servfail_ttl: Duration::from_secs(5),
            cache: CacheLimits::default(),
            max_in_flight: 1024,
            max_waiters: 64,
        }
    }

    /// Whether `ip` may have its queries forwarded.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allow.iter().any(|cidr| cidr.contains(ip))
    }
}

//----------- ForwardKey -----------------------------------------------------

/// What decides a forwarded answer: the lowercased name, type, class, DO
/// and CD. (EDNS presence is not part of it: the upstream's OPT is never
/// stored, each client gets its own.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ForwardKey {
    /// The query name, lowercased.
    pub name: LowerNameBuf,
    /// The query type.
    pub qtype: RType,
    /// The query class.
    pub qclass: RClass,
    /// The DO bit.
    pub dnssec_ok: bool,
    /// The CD bit.
    pub checking_disabled: bool,
}

impl ForwardKey {
    fn bits(&self) -> u8 {
        u8::from(self.dnssec_ok) | u8::from(self.checking_disabled) << 1
    }
}

//----------- Client ---------------------------------------------------------

/// Where a waiting client's answer goes: opaque to the forwarder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// A UDP client: the answer is sent to `address` from a listening
    /// socket.
    Udp {
        /// The server's listening socket the query arrived on.
        listener: usize,
        /// The client's address.
        address: SocketAddr,
        /// The client a PROXY v2 header named, when the datagram came
        /// through a proxy at `address`: the answer still goes to
        /// `address`, logs (dnstap) name this one.
        behind: Option<SocketAddr>,
    },
    /// A TCP connection: the answer joins that connection's queue, if it
    /// is still open.
    Tcp {
        /// The connection's slot in the core's table of open connections.
        slot: u32,
        /// The core's number for the connection, unique on the core, so
        /// that an answer for a closed connection never reaches a later
        /// one in the same slot.
        connection: u64,
    },
}

//----------- Action ---------------------------------------------------------

/// Something the server must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Open a new UDP socket on a random source port, connected to
    /// upstream `upstream`, and send `bytes` on it; its answers go to
    /// [`Forwarder::on_response`] with `socket`, until
    /// [`Action::Release`] closes it.
    Transmit {
        /// The upstream's index in [`ForwardConfig::upstreams`].
        upstream: usize,
        /// The new socket's number, never the number of a socket still
        /// open.
        socket: usize,
        /// The query.
        bytes: Vec<u8>,
    },
    /// Close the socket of an earlier [`Action::Transmit`]: its query was
    /// answered, abandoned or timed out.
    Release {
        /// The upstream's index.
        upstream: usize,
        /// The socket's number.
        socket: usize,
    },
    /// Ask `upstream` over TCP; hand the answer (or `None` on any failure)
    /// to [`Forwarder::on_tcp_response`] with `token`.
    TransmitTcp {
        /// The upstream's index.
        upstream: usize,
        /// Identifies the query.
        token: TcpToken,
        /// The query (without the length prefix).
        bytes: Vec<u8>,
    },
    /// Send `bytes` to `client`.
    Answer {
        /// The client.
        client: Client,
        /// Its whole answer.
        bytes: Vec<u8>,
    },
}

/// Identifies a query's TCP attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpToken {
    slot: u32,
    id: u16,
    upstream: u16,
}

//----------- Stats ----------------------------------------------------------

/// The forwarder's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardStats {
    /// Queries sent upstream (UDP and TCP).
    pub upstream_queries: u64,
    /// Upstream answers accepted.
    pub upstream_answers: u64,
    /// Upstream attempts that timed out.
    pub upstream_timeouts: u64,
    /// Upstream answers dropped: unknown ID, mismatched question,
    /// malformed, outside the question's chain, a wrong or missing DNS
    /// cookie.
    pub upstream_rejected: u64,
    /// Of those, answers refused for their DNS cookie.
    pub upstream_bad_cookies: u64,
    /// Upstream UDP sockets open (one per transmit awaiting its answer);
    /// filled in by the server, which owns them.
    pub open_sockets: u64,
    /// Forwardable queries answered from the forward cache.
    pub cache_hits: u64,
    /// Forwardable queries the forward cache could not answer.
    pub cache_misses: u64,
    /// Queries that joined a question already in flight.
    pub coalesced: u64,
    /// Answers served stale after every upstream failed.
    pub stale_answers: u64,
    /// Clients answered SERVFAIL by the forwarder.
    pub servfails: u64,
    /// Round-trip times of accepted upstream answers.
    pub rtt: RttHistogram,
    /// Per upstream, in configuration order.
    pub upstreams: Vec<UpstreamStats>,
}

/// The upper bounds, in milliseconds, of [`RttHistogram`]'s buckets (the
/// forwarder's clock counts milliseconds); a last bucket takes the rest.
pub const RTT_BUCKETS_MS: [u64; 12] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/// Round-trip times of upstream answers: how many fell in each bucket of
/// [`RTT_BUCKETS_MS`] (not cumulative; the last slot counts those above
/// the last bound), and their sum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RttHistogram {
    /// Per bucket, then one for the rest.
    pub buckets: [u64; RTT_BUCKETS_MS.len() + 1],
    /// The sum of the samples in milliseconds.
    pub sum_ms: u64,
}

impl RttHistogram {
    /// Counts one sample of `ms` milliseconds.
    fn record(&mut self, ms: u64) {
        let bucket = RTT_BUCKETS_MS.partition_point(|&bound| bound < ms);
        self.buckets[bucket] += 1;
        self.sum_ms = self.sum_ms.saturating_add(ms);
    }

    /// Adds another histogram's counts (a sum over cores).
    pub fn add(&mut self, other: &RttHistogram) {
        for (sum, count) in self.buckets.iter_mut().zip(other.buckets) {
            *sum += count;
        }
        self.sum_ms = self.sum_ms.saturating_add(other.sum_ms);
    }

    /// The number of samples.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// One upstream's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpstreamStats {
    /// Its address.
    pub address: Option<SocketAddr>,
    /// Queries sent to it.
    pub queries: u64,
    /// Answers accepted from it.
    pub answers: u64,
    /// Attempts on it that timed out.
    pub timeouts: u64,
    /// Its smoothed RTT in microseconds.
    pub rtt_micros: u64,
}

//----------- Forwarder ------------------------------------------------------

/// In-flight records made with the forwarder: `max-in-flight` of them, but
/// no more than this many (a record with its lists is some hundreds of
/// octets, which a forwarder that never has so many in flight would
/// waste). Past it, the array grows, once, to the most in flight at once.
const RESERVED_IN_FLIGHT: usize = 1024;

/// In-flight records and action buffers made with the forwarder, ready
/// for use: as many as one batch of a UDP loop can need at once (the
/// server receives up to 32 datagrams at a time, each of which may start
/// a question), so that how many a batch starts, which depends on timing,
/// makes no allocation. More are made, and kept, when more are needed at
/// once.
pub const READY_AT_START: usize = 32;

/// The longest header and question of a client's query.
const MAX_HEAD: usize = HEADER_LEN + 255 + 4;

/// Waiters, transmits and upstreams of an attempt that a new in-flight
/// record has room for before its lists grow.
const RECORD_ROOM: usize = 4;

/// The most entries the transmits' table is made for; past it, it grows
/// once to the most transmits open at once.
const RESERVED_TRANSMITS: usize = 1 << 16;

/// Spare buffers kept for the bytes of [`Action`]s (see
/// [`Forwarder::recycle`]); more are freed.
pub const SPARE_BUFFERS: usize = 256;

/// The capacity of a new buffer for an action's bytes, at least: the
/// largest UDP answer most clients take (the forwarder's own UDP size, if
/// larger). Upstream queries, at most 326 octets, fit as well. A buffer
/// that had to grow past it (a forwarded answer over TCP) is not kept.
pub const BUFFER_LEN: usize = 4096;

/// Waiters whose lists an in-flight record keeps for a later question;
/// lists grown for more (a burst of clients asking the same question) are
/// freed when their question ends, so that the kept memory stays at about
/// this many headers and questions per record.
const KEPT_WAITERS: usize = 16;

/// The longest upstream query before its COOKIE option: header, name,
/// type and class, an OPT without options.
const MAX_WIRE: usize = HEADER_LEN + 255 + 4 + 11;

// An upstream query with its COOKIE option fits a new buffer.
const _: () = assert!(MAX_WIRE + cookie::MAX_OPTION_LEN <= BUFFER_LEN);

/// A client waiting for an in-flight question.
#[derive(Clone, Copy)]
struct Waiter {
    client: Client,
    /// Where the client's header and question are in its question's
    /// `heads`.
    head_start: usize,
    head_len: usize,
    edns: bool,
    /// The client asked for our NSID.
    nsid: bool,
    limit: usize,
}

/// A question in flight upstream; or, `active` false, a record kept for
/// a later question, with the memory of its lists.
struct Query {
    active: bool,
    key: ForwardKey,
    /// The upstream query (its ID is rewritten per attempt).
    wire: Vec<u8>,
    waiters: Vec<Waiter>,
    /// The waiters' headers and questions, one after the other.
    heads: Vec<u8>,
    /// Attempts made so far.
    attempts: u32,
    /// Upstreams tried (bit per index).
    tried: u64,
    /// Every UDP transmit whose socket is open.
    outstanding: Vec<Transmit>,
    /// The upstreams of the latest attempt and when it left.
    latest: Vec<u16>,
    sent_at: u64,
    deadline: u64,
    tcp: Option<TcpToken>,
}

impl Query {
    /// A record for no question yet, its lists made: room for the
    /// upstream query, one waiter's header and question, and
    /// [`RECORD_ROOM`] waiters and transmits.
    fn idle() -> Query {
        Query {
            active: false,
            key: ForwardKey {
                name: Name::ROOT.to_lower(),
                qtype: RType(0),
                qclass: RClass(0),
                dnssec_ok: false,
                checking_disabled: false,
            },
            wire: Vec::with_capacity(MAX_WIRE),
            waiters: Vec::with_capacity(RECORD_ROOM),
            heads: Vec::with_capacity(MAX_HEAD),
            attempts: 0,
            tried: 0,
            outstanding: Vec::with_capacity(RECORD_ROOM),
            latest: Vec::with_capacity(RECORD_ROOM),
            sent_at: 0,
            deadline: 0,
            tcp: None,
        }
    }
}

/// The question in flight in `slot`, if any.
fn active(slots: &[Query], slot: u32) -> Option<&Query> {
    slots.get(slot as usize).filter(|query| query.active)
}

/// [`active`], writable.
fn active_mut(slots: &mut [Query], slot: u32) -> Option<&mut Query> {
    slots.get_mut(slot as usize).filter(|query| query.active)
}

/// `waiter`'s header and question in `heads`.
fn head_of<'h>(heads: &'h [u8], waiter: &Waiter) -> &'h [u8] {
    heads
        .get(waiter.head_start..waiter.head_start + waiter.head_len)
        .unwrap_or(&[])
}

/// A UDP transmit: `(upstream, socket, id)`.
type Transmit = (u16, u32, u16);

/// The upstreams an attempt goes to, in order.
struct Chosen {
    upstreams: [u16; MAX_UPSTREAMS],
    len: usize,
}

impl Chosen {
    fn as_slice(&self) -> &[u16] {
        &self.upstreams[..self.len]
    }
}

/// One core's forwarding state: the forward cache, the questions in
/// flight, the upstreams' RTTs and the counters. See the module docs.
///
/// Memory. A forwarded miss allocates nothing once the forwarder has
/// seen as many questions in flight as it ever will (its tables are made
/// for `max-in-flight`, room for up to 1024 in-flight records is
/// reserved, and [`READY_AT_START`] records and buffers are made ready):
/// the in-flight records are reused with their lists, the cache takes
/// entries from its slab, answers are checked in memory reserved once,
/// and the bytes of every [`Action`] are written into a spare buffer that
/// the server hands back with [`Forwarder::recycle`] once it has sent
/// them.
pub struct Forwarder {
    config: ForwardConfig,
    udp_size: u16,
    cache: ForwardCache,
    slots: Vec<Query>,
    free: Vec<u32>,
    in_flight: usize,
    /// The key's hash -> the slot of its question in flight. Made for
    /// twice `max-in-flight`: never grows.
    by_key: HashTable<u32>,
    /// Hashes `by_key`'s keys: foldhash under a per-process random key,
    /// as the caches (the table is bounded by `max-in-flight`).
    hasher: KeyedHash,
    /// A transmit -> the slot of its question. Made for twice the
    /// transmits that can be open (up to [`RESERVED_TRANSMITS`]).
    /// hashbrown's foldhash, seeded at random per table: the keys are our
    /// socket numbers and IDs; an answer chooses only the ID it carries,
    /// and only from the upstream's address and port.
    by_wire: HashMap<Transmit, u32>,
    rtt: Vec<u64>,
    /// The next socket number.
    next_socket: u32,
    /// Per upstream, its DNS cookies.
    cookies: Vec<UpstreamCookie>,
    next_round_robin: usize,
    prefetch: Vec<ForwardKey>,
    /// The prefetches being started (swapped with `prefetch`).
    prefetching: Vec<ForwardKey>,
    /// Checks upstream answers; holds the last good one, cut up.
    validator: Validator,
    /// Spare buffers for the actions' bytes.
    buffers: Vec<Vec<u8>>,
    /// The capacity of a new buffer.
    buffer_len: usize,
    stats: ForwardStats,
    /// Our NSID option (code, length, value), empty when none.
    nsid: Box<[u8]>,
}

impl Forwarder {
    /// A forwarder for `config` (upstreams beyond [`MAX_UPSTREAMS`] are
    /// ignored) that advertises `udp_size` to its clients.
    pub fn new(mut config: ForwardConfig, udp_size: u16) -> Self {
        config.upstreams.truncate(MAX_UPSTREAMS);
        config.race = config.race.max(1);
        let cookies = config
            .upstreams
            .iter()
            .map(|_| UpstreamCookie::new(random()))
            .collect();
        let upstreams = config
            .upstreams
            .iter()
            .map(|&address| UpstreamStats {
                address: Some(address),
                rtt_micros: INITIAL_RTT_MICROS,
                ..UpstreamStats::default()
            })
            .collect();
        let records = config.max_in_flight.min(RESERVED_IN_FLIGHT);
        let ready = config.max_in_flight.min(READY_AT_START);
        let buffer_len = BUFFER_LEN.max(usize::from(udp_size));
        let mut slots = Vec::with_capacity(records);
        slots.extend((0..ready).map(|_| Query::idle()));
        let mut free = Vec::with_capacity(records);
        free.extend((0..ready as u32).rev());
        let mut buffers = Vec::with_capacity(SPARE_BUFFERS);
        buffers.extend((0..READY_AT_START).map(|_| Vec::with_capacity(buffer_len)));
        let per_question = if config.policy == Policy::Race {
            config.race.min(config.upstreams.len()).max(1)
        } else {
            1
        };
        let transmits = config
            .max_in_flight
            .saturating_mul(per_question)
            .saturating_mul(2)
            .min(RESERVED_TRANSMITS);
        Forwarder {
            cache: ForwardCache::new(config.cache),
            rtt: vec![INITIAL_RTT_MICROS; config.upstreams.len()],
            udp_size,
            slots,
            free,
            in_flight: 0,
            by_key: HashTable::with_capacity(config.max_in_flight.saturating_mul(2)),
            hasher: KeyedHash::new(),
            by_wire: HashMap::with_capacity(transmits),
            next_socket: 0,
            cookies,
            next_round_robin: 0,
            prefetch: Vec::with_capacity(PREFETCH_QUEUE),
            prefetching: Vec::with_capacity(PREFETCH_QUEUE),
            validator: Validator::new(usize::from(UPSTREAM_UDP_SIZE)),
            buffers,
            buffer_len,
            stats: ForwardStats {
                upstreams,
                ..ForwardStats::default()
            },
            nsid: Box::default(),
            config,
        }
    }

    /// Sends `option`, a whole NSID option (`code, length, value`, as
    /// `tern_authority::nsid::Nsid::as_option` encodes it), to clients
    /// that ask for it; an empty `option`, or one longer than
    /// [`MAX_NSID_OPTION`], sends none (the default).
    pub fn set_nsid(&mut self, option: &[u8]) {
        self.nsid = if option.len() <= MAX_NSID_OPTION {
            option.into()
        } else {
            Box::default()
        };
    }

    /// The configuration.
    pub fn config(&self) -> &ForwardConfig {
        &self.config
    }

    /// The counters (RTTs as of now).
    pub fn stats(&self) -> ForwardStats {
        let mut stats = self.stats.clone();
        for (upstream, rtt) in stats.upstreams.iter_mut().zip(&self.rtt) {
            upstream.rtt_micros = *rtt;
        }
        stats
    }

    /// Entries in the forward cache.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Bytes charged to the forward cache's entries.
    pub fn cached_bytes(&self) -> usize {
        self.cache.bytes()
    }

    /// Questions in flight upstream.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Gives back the bytes of an [`Action`] the server has carried out,
    /// for the bytes of a later one: with every buffer given back, the
    /// forwarder allocates none for its actions. Kept only while fewer
    /// than [`SPARE_BUFFERS`] are, and if no larger than a new buffer
    /// (one grown for a long answer over TCP is freed).
    pub fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.buffers.len() < SPARE_BUFFERS && bytes.capacity() <= self.buffer_len {
            bytes.clear();
            self.buffers.push(bytes);
        }
    }

    /// The cached answer for `key` as `(rcode, remaining TTL)`, fresh or
    /// stale; for tests and diagnostics.
    pub fn peek(&self, key: &ForwardKey, now: u64) -> Option<(u8, u32)> {
        let now = seconds(now);
        let entry = self.cache.stale(key, now)?;
        Some((entry.parts().flags[1] & 0x0f, entry.remaining(now)))
    }

    /// The forward key of a parsed query (`dnssec_ok` from its OPT).
    pub fn key(view: &MessageView<'_>, dnssec_ok: bool) -> Option<ForwardKey> {
        let question = view.question()?;
        Some(ForwardKey {
            name: question.name.to_lower(),
            qtype: question.qtype,
            qclass: question.qclass,
            dnssec_ok,
            checking_disabled: view.header().cd(),
        })
    }

    /// On a fresh cache hit, writes the answer for `query` (whose header
    /// and question end at `head_len`; with an OPT if `edns`, holding our
    /// NSID if `nsid`) into `out` and returns its length.
    /// No allocation; may queue a prefetch (see [`Forwarder::prefetches`]).
    #[allow(clippy::too_many_arguments)]
    pub fn answer_from_cache(
        &mut self,
        key: &ForwardKey,
        query: &[u8],
        head_len: usize,
        edns: bool,
        nsid: bool,
        limit: usize,
        now: u64,
        out: &mut [u8],
    ) -> Option<usize> {
        let now_seconds = seconds(now);
        let udp_size = self.udp_size;
        let Some((index, entry)) = self.cache.fresh(key, now_seconds) else {
            self.stats.cache_misses += 1;
            return None;
        };
        let client = ClientView {
            head: query.get(..head_len)?,
            edns,
            dnssec_ok: key.dnssec_ok,
            limit,
            udp_size,
            nsid: if nsid { &self.nsid } else { &[] },
        };
        let len = write_answer(
            entry.parts(),
            Ttls::Elapsed(entry.elapsed(now_seconds)),
            client,
            out,
        )?;
        let remaining = entry.remaining(now_seconds);
        let prefetch = entry.hits() >= PREFETCH_MIN_HITS
            && entry.ttl() >= PREFETCH_MIN_TTL
            && remaining <= entry.ttl() / 10
            && !entry.prefetching()
            && self.prefetch.len() < PREFETCH_QUEUE;
        if prefetch {
            self.cache.start_prefetch(index);
            self.prefetch.push(*key);
        }
        self.stats.cache_hits += 1;
        Some(len)
    }

    /// Whether hits have queued prefetches.
    pub fn has_prefetches(&self) -> bool {
        !self.prefetch.is_empty()
    }

    /// Starts the queued prefetches: questions with no waiting client,
    /// whose answers refresh the cache.
    pub fn prefetches(&mut self, now: u64, actions: &mut Vec<Action>) {
        // The queue and its spare swap: neither is allocated again.
        let spare = std::mem::take(&mut self.prefetching);
        let mut keys = std::mem::replace(&mut self.prefetch, spare);
        for key in keys.drain(..) {
            if self.in_flight_slot(&key).is_some() || self.in_flight >= self.config.max_in_flight {
                self.cache.prefetch_done(&key);
                continue;
            }
            self.launch(key, None, now, actions);
        }
        self.prefetching = keys;
    }

    /// A query the cache could not answer: joins the same question in
    /// flight, or sends a new one. `query` is the client's whole query,
    /// its header and question ending at `head_len`. If the question
    /// cannot be taken (too many in flight or waiting), the client is
    /// answered at once into `out` (a stale answer or SERVFAIL) and the
    /// length returned.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        key: ForwardKey,
        client: Client,
        query: &[u8],
        head_len: usize,
        edns: bool,
        nsid: bool,
        limit: usize,
        now: u64,
        actions: &mut Vec<Action>,
        out: &mut [u8],
    ) -> Option<usize> {
        let head = query.get(..head_len)?;
        if head.len() < HEADER_LEN {
            return None;
        }
        let waiter = Waiter {
            client,
            head_start: 0,
            head_len: head.len(),
            edns,
            nsid,
            limit,
        };
        if let Some(slot) = self.in_flight_slot(&key) {
            let max_waiters = self.config.max_waiters;
            if let Some(query) = active_mut(&mut self.slots, slot) {
                if query.waiters.len() < max_waiters {
                    query.waiters.push(Waiter {
                        head_start: query.heads.len(),
                        ..waiter
                    });
                    query.heads.extend_from_slice(head);
                    self.stats.coalesced += 1;
                    return None;
                }
            }
            return self.answer_now(&key, head, &waiter, now, out);
        }
        if self.in_flight >= self.config.max_in_flight || self.config.upstreams.is_empty() {
            return self.answer_now(&key, head, &waiter, now, out);
        }
        self.launch(key, Some((waiter, head)), now, actions);
        None
    }

    /// A stale answer or SERVFAIL, written at once.
    fn answer_now(
        &mut self,
        key: &ForwardKey,
        head: &[u8],
        waiter: &Waiter,
        now: u64,
        out: &mut [u8],
    ) -> Option<usize> {
        let client = client_view(key, head, waiter, self.udp_size, &self.nsid);
        if let Some(entry) = self.cache.stale(key, seconds(now)) {
            self.stats.stale_answers += 1;
            let ttl = self.config.stale_ttl.as_secs() as u32;
            return write_answer(entry.parts(), Ttls::Fixed(ttl), client, out);
        }
        self.stats.servfails += 1;
        let servfail = Prepared::servfail(0);
        write_answer(Parts::of(&servfail), Ttls::Elapsed(0), client, out)
    }

    /// The hash of `key` in `by_key`.
    fn key_hash(&self, key: &ForwardKey) -> u64 {
        key_hash(&self.hasher, key)
    }

    /// The slot of `key`'s question in flight, if any.
    fn in_flight_slot(&self, key: &ForwardKey) -> Option<u32> {
        let hash = self.key_hash(key);
        let slots = &self.slots;
        self.by_key
            .find(hash, |&i| {
                active(slots, i).is_some_and(|query| query.key == *key)
            })
            .copied()
    }

    /// Creates the in-flight question, in a kept record if there is one,
    /// and sends its first attempt.
    fn launch(
        &mut self,
        key: ForwardKey,
        waiter: Option<(Waiter, &[u8])>,
        now: u64,
        actions: &mut Vec<Action>,
    ) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Query::idle());
                (self.slots.len() - 1) as u32
            }
        };
        let Some(query) = self.slots.get_mut(slot as usize) else {
            return;
        };
        query.active = true;
        query.key = key;
        write_upstream_query(&key, &mut query.wire);
        query.waiters.clear();
        query.heads.clear();
        if let Some((waiter, head)) = waiter {
            query.waiters.push(Waiter {
                head_start: 0,
                ..waiter
            });
            query.heads.extend_from_slice(head);
        }
        query.attempts = 0;
        query.tried = 0;
        query.outstanding.clear();
        query.latest.clear();
        query.sent_at = now;
        query.deadline = now;
        query.tcp = None;
        self.in_flight += 1;
        let hash = self.key_hash(&key);
        let Self {
            by_key,
            slots,
            hasher,
            ..
        } = self;
        // Never grows: made for twice the questions that can be in flight.
        by_key.insert_unique(hash, slot, |&i| {
            slots
                .get(i as usize)
                .map_or(0, |query| key_hash(hasher, &query.key))
        });
        self.attempt(slot, now, actions);
    }

    /// Sends the next attempt of `slot`'s question: one upstream, or
    /// `race` of them, preferring upstreams not tried yet.
    fn attempt(&mut self, slot: u32, now: u64, actions: &mut Vec<Action>) {
        let count = self.config.upstreams.len();
        let wanted = if self.config.policy == Policy::Race {
            self.config.race.min(count)
        } else {
            1
        };
        let Some(query) = active(&self.slots, slot) else {
            return;
        };
        let mut tried = query.tried;
        if tried.count_ones() as usize + wanted > count {
            tried = 0;
        }
        let chosen = self.choose(tried, wanted);
        let timeout = self.config.timeout.as_millis() as u64;
        // Each transmit: a socket of its own and an ID of its own, distinct
        // from the race's others (so that no answer fits two of them).
        let mut transmits: [Transmit; MAX_UPSTREAMS] = [(0, 0, 0); MAX_UPSTREAMS];
        let mut made = 0;
        for &upstream in chosen.as_slice() {
            let socket = self.new_socket();
            let mut id = random() as u16;
            // Bounded: at most MAX_UPSTREAMS - 1 IDs are taken.
            while transmits[..made].iter().any(|&(_, _, taken)| taken == id) {
                id = id.wrapping_add(1);
            }
            transmits[made] = (upstream, socket, id);
            made += 1;
        }
        let transmits = &transmits[..made];
        let Some(query) = active_mut(&mut self.slots, slot) else {
            return;
        };
        query.attempts += 1;
        query.tried = tried;
        query.latest.clear();
        query.sent_at = now;
        query.deadline = now + timeout;
        for &(upstream, socket, id) in transmits {
            query.tried |= 1 << upstream;
            query.latest.push(upstream);
            query.outstanding.push((upstream, socket, id));
            let mut bytes = take_buffer(&mut self.buffers, self.buffer_len);
            with_cookie(
                &query.wire,
                id,
                &self.cookies[usize::from(upstream)],
                &mut bytes,
            );
            actions.push(Action::Transmit {
                upstream: usize::from(upstream),
                socket: socket as usize,
                bytes,
            });
        }
        for &(upstream, socket, id) in transmits {
            self.by_wire.insert((upstream, socket, id), slot);
            self.stats.upstream_queries += 1;
            self.stats.upstreams[usize::from(upstream)].queries += 1;
        }
    }

    /// `wanted` upstreams not in `tried`, by the policy.
    fn choose(&mut self, tried: u64, wanted: usize) -> Chosen {
        let count = self.config.upstreams.len().min(MAX_UPSTREAMS);
        let mut chosen = Chosen {
            upstreams: [0; MAX_UPSTREAMS],
            len: 0,
        };
        for upstream in 0..count as u16 {
            if tried & (1 << upstream) == 0 {
                chosen.upstreams[chosen.len] = upstream;
                chosen.len += 1;
            }
        }
        let candidates = &mut chosen.upstreams[..chosen.len];
        match self.config.policy {
            Policy::RoundRobin => {
                let start = self.next_round_robin;
                self.next_round_robin = self.next_round_robin.wrapping_add(1);
                // Distinct keys: the order is that of a stable sort.
                candidates
                    .sort_unstable_by_key(|&u| (usize::from(u) + count - start % count) % count);
            }
            Policy::Fastest | Policy::Race => {
                let rtt = &self.rtt;
                // Ties by index: the order is that of a stable sort.
                candidates.sort_unstable_by_key(|&u| (rtt[usize::from(u)], u));
                if candidates.len() > 1 && random().is_multiple_of(PROBE_ONE_IN) {
                    let pick = 1 + (random() as usize) % (candidates.len() - 1);
                    candidates.swap(0, pick);
                }
            }
        }
        chosen.len = chosen.len.min(wanted);
        chosen
    }

    /// An answer that arrived on connected socket `socket` of upstream
    /// `upstream` (so its source address and port are the upstream's).
    pub fn on_response(
        &mut self,
        upstream: usize,
        socket: usize,
        bytes: &[u8],
        now: u64,
        actions: &mut Vec<Action>,
    ) {
        let (Ok(upstream), Ok(socket)) = (u16::try_from(upstream), u32::try_from(socket)) else {
            return;
        };
        let Some(id) = bytes.get(..2).map(|id| u16::from_be_bytes([id[0], id[1]])) else {
            self.stats.upstream_rejected += 1;
            return;
        };
        let Some(&slot) = self.by_wire.get(&(upstream, socket, id)) else {
            self.stats.upstream_rejected += 1;
            return;
        };
        let Some(query) = active(&self.slots, slot) else {
            return;
        };
        match self.cookies[usize::from(upstream)].check(bytes) {
            CookieCheck::Good => {}
            CookieCheck::Bad(_) => {
                self.stats.upstream_rejected += 1;
                self.stats.upstream_bad_cookies += 1;
                return;
            }
            CookieCheck::Retry => {
                // BADCOOKIE: the new server cookie is stored; ask again.
                self.forget_transmit(slot, (upstream, socket, id), actions);
                let Some(query) = active(&self.slots, slot) else {
                    return;
                };
                if query.outstanding.is_empty() && query.tcp.is_none() {
                    self.next_attempt(slot, now, actions);
                }
                return;
            }
        }
        let question = &query.wire[HEADER_LEN..query.wire.len() - 11];
        let negative_max = self.config.negative_ttl_max.as_secs() as u32;
        match self.validator.check(question, bytes, negative_max) {
            Verdict::Bad(_) => self.stats.upstream_rejected += 1,
            Verdict::Good => {
                self.learn_rtt(upstream, slot, now);
                self.stats.upstream_answers += 1;
                self.stats.upstreams[usize::from(upstream)].answers += 1;
                self.complete(slot, true, now, actions);
            }
            Verdict::Truncated => {
                self.learn_rtt(upstream, slot, now);
                self.forget_transmit(slot, (upstream, socket, id), actions);
                let timeout = self.config.timeout.as_millis() as u64;
                let Some(query) = active_mut(&mut self.slots, slot) else {
                    return;
                };
                if query.tcp.is_some() {
                    return;
                }
                let token = TcpToken { slot, id, upstream };
                query.tcp = Some(token);
                // TCP needs a handshake first: two timeouts.
                query.deadline = now + 2 * timeout;
                let mut bytes = take_buffer(&mut self.buffers, self.buffer_len);
                with_cookie(
                    &query.wire,
                    id,
                    &self.cookies[usize::from(upstream)],
                    &mut bytes,
                );
                self.stats.upstream_queries += 1;
                self.stats.upstreams[usize::from(upstream)].queries += 1;
                actions.push(Action::TransmitTcp {
                    upstream: usize::from(upstream),
                    token,
                    bytes,
                });
            }
            Verdict::Failure => {
                self.stats.upstreams[usize::from(upstream)].answers += 1;
                self.forget_transmit(slot, (upstream, socket, id), actions);
                let Some(query) = active(&self.slots, slot) else {
                    return;
                };
                if query.outstanding.is_empty() && query.tcp.is_none() {
                    self.next_attempt(slot, now, actions);
                }
            }
        }
    }

    /// The end of a TCP attempt: the answer, or `None` if the connection
    /// failed.
    pub fn on_tcp_response(
        &mut self,
        token: TcpToken,
        bytes: Option<&[u8]>,
        now: u64,
        actions: &mut Vec<Action>,
    ) {
        let slot = token.slot;
        let Some(query) = active_mut(&mut self.slots, slot) else {
            return;
        };
        if query.tcp != Some(token) {
            return;
        }
        query.tcp = None;
        let question = &query.wire[HEADER_LEN..query.wire.len() - 11];
        let verdict = match bytes {
            Some(bytes) if bytes.get(..2) == Some(&token.id.to_be_bytes()[..]) => {
                match self.cookies[usize::from(token.upstream)].check(bytes) {
                    CookieCheck::Good => {
                        let negative_max = self.config.negative_ttl_max.as_secs() as u32;
                        self.validator.check(question, bytes, negative_max)
                    }
                    CookieCheck::Bad(reason) => {
                        self.stats.upstream_bad_cookies += 1;
                        Verdict::Bad(reason)
                    }
                    CookieCheck::Retry => Verdict::Failure,
                }
            }
            Some(_) => Verdict::Bad("wrong ID"),
            None => Verdict::Failure,
        };
        match verdict {
            Verdict::Good => {
                self.stats.upstream_answers += 1;
                self.stats.upstreams[usize::from(token.upstream)].answers += 1;
                self.complete(slot, true, now, actions);
            }
            Verdict::Bad(_) | Verdict::Truncated => {
                self.stats.upstream_rejected += 1;
                self.next_attempt(slot, now, actions);
            }
            Verdict::Failure => self.next_attempt(slot, now, actions),
        }
    }

    /// Handles every question whose attempt timed out by `now`: a retry on
    /// the next upstream, or the end (stale answer or SERVFAIL).
    pub fn on_timeout(&mut self, now: u64, actions: &mut Vec<Action>) {
        let timeout_micros = self.config.timeout.as_micros() as u64;
        for slot in 0..self.slots.len() as u32 {
            let Some(query) = active_mut(&mut self.slots, slot) else {
                continue;
            };
            if query.deadline > now {
                continue;
            }
            query.tcp = None;
            // Taken for the loops below and given back, memory and all.
            let mut latest = std::mem::take(&mut query.latest);
            let mut outstanding = std::mem::take(&mut query.outstanding);
            // The timed-out transmits' sockets close: a late answer is
            // not waited for on a port that stays open.
            for transmit in outstanding.drain(..) {
                self.by_wire.remove(&transmit);
                actions.push(release(transmit));
            }
            for upstream in latest.drain(..) {
                self.stats.upstream_timeouts += 1;
                self.stats.upstreams[usize::from(upstream)].timeouts += 1;
                let rtt = &mut self.rtt[usize::from(upstream)];
                *rtt = (*rtt * 2).max(timeout_micros);
            }
            if let Some(query) = self.slots.get_mut(slot as usize) {
                query.latest = latest;
                query.outstanding = outstanding;
            }
            self.next_attempt(slot, now, actions);
        }
    }

    /// The earliest deadline of a question in flight, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|query| query.active)
            .map(|query| query.deadline)
            .min()
    }

    /// Retries if attempts remain, else ends the question unanswered.
    fn next_attempt(&mut self, slot: u32, now: u64, actions: &mut Vec<Action>) {
        let Some(query) = active(&self.slots, slot) else {
            return;
        };
        if query.attempts <= self.config.retries {
            self.attempt(slot, now, actions);
        } else {
            self.complete(slot, false, now, actions);
        }
    }

    /// Ends a transmit: its socket is released.
    fn forget_transmit(&mut self, slot: u32, transmit: Transmit, actions: &mut Vec<Action>) {
        self.by_wire.remove(&transmit);
        if let Some(query) = active_mut(&mut self.slots, slot) {
            query.outstanding.retain(|&t| t != transmit);
        }
        actions.push(release(transmit));
    }

    /// A socket number for a new transmit. Numbers wrap after 2^32
    /// transmits, and a socket is released within its question's life (a
    /// few timeouts), so no number is given while its socket is open.
    fn new_socket(&mut self) -> u32 {
        let socket = self.next_socket;
        self.next_socket = self.next_socket.wrapping_add(1);
        socket
    }

    fn learn_rtt(&mut self, upstream: u16, slot: u32, now: u64) {
        let Some(query) = active(&self.slots, slot) else {
            return;
        };
        let elapsed_ms = now.saturating_sub(query.sent_at);
        self.stats.rtt.record(elapsed_ms);
        let sample = elapsed_ms.saturating_mul(1000).max(1);
        let rtt = &mut self.rtt[usize::from(upstream)];
        *rtt = (*rtt * 7 + sample) / 8;
    }

    /// Ends a question: answers every waiter from the validator's
    /// prepared answer if `good` (and caches it), or else from a stale
    /// entry or with SERVFAIL (cached for `servfail-ttl`). The record
    /// stays in its slot, its lists' memory kept for a later question.
    fn complete(&mut self, slot: u32, good: bool, now: u64, actions: &mut Vec<Action>) {
        let Some(query) = active_mut(&mut self.slots, slot) else {
            return;
        };
        query.active = false;
        let key = query.key;
        // Taken for the loops below and given back, memory and all.
        let mut waiters = std::mem::take(&mut query.waiters);
        let mut heads = std::mem::take(&mut query.heads);
        let mut outstanding = std::mem::take(&mut query.outstanding);
        self.free.push(slot);
        self.in_flight -= 1;
        let hash = self.key_hash(&key);
        if let Ok(entry) = self.by_key.find_entry(hash, |&i| i == slot) {
            entry.remove();
        }
        for transmit in outstanding.drain(..) {
            self.by_wire.remove(&transmit);
            actions.push(release(transmit));
        }
        let now_seconds = seconds(now);
        let stale_ttl = self.config.stale_ttl.as_secs() as u32;
        // Taken for the loops below, which count into `self.stats` and
        // take buffers; given back after.
        let nsid = std::mem::take(&mut self.nsid);
        let udp_size = self.udp_size;
        if good {
            let prepared = std::mem::take(&mut self.validator.prepared);
            for waiter in &waiters {
                let client = client_view(&key, head_of(&heads, waiter), waiter, udp_size, &nsid);
                let mut bytes = take_buffer(&mut self.buffers, self.buffer_len);
                match write_into(Parts::of(&prepared), Ttls::Elapsed(0), client, &mut bytes) {
                    Some(()) => actions.push(Action::Answer {
                        client: waiter.client,
                        bytes,
                    }),
                    None => self.recycle(bytes),
                }
            }
            self.cache.insert(&key, &prepared, now_seconds);
            self.validator.prepared = prepared;
        } else {
            let stale = self.cache.stale(&key, now_seconds).is_some();
            let servfail = Prepared::servfail(self.config.servfail_ttl.as_secs() as u32);
            for waiter in &waiters {
                let client = client_view(&key, head_of(&heads, waiter), waiter, udp_size, &nsid);
                let mut bytes = take_buffer(&mut self.buffers, self.buffer_len);
                let written = match self.cache.stale(&key, now_seconds) {
                    Some(entry) => {
                        self.stats.stale_answers += 1;
                        write_into(entry.parts(), Ttls::Fixed(stale_ttl), client, &mut bytes)
                    }
                    None => {
                        self.stats.servfails += 1;
                        write_into(Parts::of(&servfail), Ttls::Elapsed(0), client, &mut bytes)
                    }
                };
                match written {
                    Some(()) => actions.push(Action::Answer {
                        client: waiter.client,
                        bytes,
                    }),
                    None => self.recycle(bytes),
                }
            }
            if !stale {
                self.cache.insert(&key, &servfail, now_seconds);
            }
        }
        self.cache.prefetch_done(&key);
        self.nsid = nsid;
        waiters.clear();
        heads.clear();
        if waiters.capacity() > KEPT_WAITERS {
            // Grown by a burst of coalesced clients: not kept.
            waiters = Vec::new();
            heads = Vec::new();
        }
        if let Some(query) = self.slots.get_mut(slot as usize) {
            query.waiters = waiters;
            query.heads = heads;
            query.outstanding = outstanding;
        }
    }
}

/// The hash of `key` under `hasher`.
fn key_hash(hasher: &KeyedHash, key: &ForwardKey) -> u64 {
    hasher.hash(key.name.as_bytes(), key.qtype.0, key.qclass.0, key.bits())
}

/// A spare buffer from `buffers`, or a new one of `len` octets' capacity.
fn take_buffer(buffers: &mut Vec<Vec<u8>>, len: usize) -> Vec<u8> {
    buffers.pop().unwrap_or_else(|| Vec::with_capacity(len))
}

/// [`write_answer`] into `bytes`, made exactly as long as the answer:
/// within its capacity for any answer up to the client's limit (a longer
/// one is sent empty with TC set).
fn write_into(
    parts: Parts<'_>,
    ttls: Ttls,
    client: ClientView<'_>,
    bytes: &mut Vec<u8>,
) -> Option<()> {
    let opt = if client.edns {
        cache::OPT_LEN + client.nsid.len()
    } else {
        0
    };
    let full = client.head.len() + parts.tail.len() + opt;
    // Room for the whole answer if it is within the limit, else for the
    // truncated one: `write_answer` decides the same way.
    let room = full.min(client.limit.max(client.head.len() + opt));
    bytes.clear();
    bytes.resize(room, 0);
    let len = write_answer(parts, ttls, client, bytes)?;
    bytes.truncate(len);
    Some(())
}

/// What `waiter`'s answer needs from it: its head, OPT, NSID, limit.
fn client_view<'w>(
    key: &ForwardKey,
    head: &'w [u8],
    waiter: &Waiter,
    udp_size: u16,
    nsid: &'w [u8],
) -> ClientView<'w> {
    ClientView {
        head,
        edns: waiter.edns,
        dnssec_ok: key.dnssec_ok,
        limit: waiter.limit,
        udp_size,
        nsid: if waiter.nsid && waiter.edns {
            nsid
        } else {
            &[]
        },
    }
}

/// 64 bits from this thread's CSPRNG (`rand`'s ChaCha12, seeded from the
/// OS and reseeded after every 64 KiB it gives): query IDs, 0x20 case,
/// client cookies and upstream choice.
fn random() -> u64 {
    rand::rng().next_u64()
}

/// Writes into `bytes` the upstream query `wire` (whose OPT has no
/// options) with ID `id` and the upstream's COOKIE option: at most
/// [`MAX_WIRE`] and `cookie::MAX_OPTION_LEN` octets.
fn with_cookie(wire: &[u8], id: u16, cookie: &UpstreamCookie, bytes: &mut Vec<u8>) {
    bytes.clear();
    bytes.extend_from_slice(wire);
    if let Some(header) = bytes.get_mut(..2) {
        header.copy_from_slice(&id.to_be_bytes());
    }
    cookie.append_to(bytes);
}

/// Writes into `wire` the upstream query for `key`: RD, the key's CD, the
/// name in random case (0x20: an answer must echo it exactly), an OPT
/// with the key's DO. The ID is set per attempt.
fn write_upstream_query(key: &ForwardKey, wire: &mut Vec<u8>) {
    let name = key.name.as_bytes();
    wire.clear();
    let cd = if key.checking_disabled { 0x10 } else { 0 };
    wire.extend_from_slice(&[0, 0, 0x01, cd, 0, 1, 0, 0, 0, 0, 0, 1]);
    // One fresh random bit per letter: 64 at a time.
    let (mut bits, mut left) = (0u64, 0u32);
    for &octet in name {
        let mut octet = octet;
        if octet.is_ascii_lowercase() {
            if left == 0 {
                (bits, left) = (random(), u64::BITS);
            }
            if bits & 1 == 1 {
                octet = octet.to_ascii_uppercase();
            }
            bits >>= 1;
            left -= 1;
        }
        wire.push(octet);
    }
    wire.extend_from_slice(&key.qtype.0.to_be_bytes());
    wire.extend_from_slice(&key.qclass.0.to_be_bytes());
    wire.extend_from_slice(&[0, 0, 41]);
    wire.extend_from_slice(&UPSTREAM_UDP_SIZE.to_be_bytes());
    wire.extend_from_slice(&[0, 0, if key.dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
}

fn release((upstream, socket, _): Transmit) -> Action {
    Action::Release {
        upstream: usize::from(upstream),
        socket: socket as usize,
    }
}

impl core::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Forwarder")
            .field("upstreams", &self.config.upstreams)
            .field("in_flight", &self.in_flight)
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

/// Whole seconds of a millisecond clock, as the cache counts them.
fn seconds(now_millis: u64) -> u32 {
    (now_millis / 1000).min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests;
