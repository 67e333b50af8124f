//! Per-core counters and their snapshots.
//!
//! Each core counts in plain integers that only it touches ([`Counters`]
//! in its worker, [`TcpCounters`] in its connection bookkeeping): no
//! atomics on the query path. On request the core's control task copies
//! them into a [`CoreStats`] and sends that across; sums over cores are
//! made by the caller.

use std::cell::Cell;
use std::fmt;
use std::iter::Sum;

use tern_cache::forward::ForwardStats;
use tern_wire::parse::MessageView;

/// The header rcode mnemonics, by value (RFC 1035, RFC 2136), for
/// [`CoreStats`]'s display.
const RCODE_NAMES: [&str; 16] = [
    "noerror", "formerr", "servfail", "nxdomain", "notimp", "refused", "yxdomain", "yxrrset",
    "nxrrset", "notauth", "notzone", "rcode11", "rcode12", "rcode13", "rcode14", "rcode15",
];

/// Query types counted by name (the common ones, by their mnemonics);
/// the rest count together under [`OTHER_TYPE`].
pub const QUERY_TYPES: [(u16, &str); 24] = [
    (1, "A"),
    (2, "NS"),
    (5, "CNAME"),
    (6, "SOA"),
    (12, "PTR"),
    (13, "HINFO"),
    (15, "MX"),
    (16, "TXT"),
    (28, "AAAA"),
    (33, "SRV"),
    (35, "NAPTR"),
    (39, "DNAME"),
    (43, "DS"),
    (46, "RRSIG"),
    (47, "NSEC"),
    (48, "DNSKEY"),
    (50, "NSEC3"),
    (52, "TLSA"),
    (64, "SVCB"),
    (65, "HTTPS"),
    (251, "IXFR"),
    (252, "AXFR"),
    (255, "ANY"),
    (257, "CAA"),
];

/// The slot of the types not in [`QUERY_TYPES`] (`other`), and of queries
/// whose question could not be read.
pub const OTHER_TYPE: usize = QUERY_TYPES.len();

/// Slots of the query-type counters: one per named type and `other`.
pub const TYPE_SLOTS: usize = QUERY_TYPES.len() + 1;

/// The slot of each type below 256 (CAA, 257, is looked up apart).
static TYPE_SLOT: [u8; 256] = type_slots();

const fn type_slots() -> [u8; 256] {
    let mut slots = [OTHER_TYPE as u8; 256];
    let mut index = 0;
    while index < QUERY_TYPES.len() {
        let qtype = QUERY_TYPES[index].0 as usize;
        if qtype < 256 {
            slots[qtype] = index as u8;
        }
        index += 1;
    }
    slots
}

/// The counter slot of a query type.
pub(crate) fn type_slot(qtype: u16) -> usize {
    match qtype {
        0..=255 => usize::from(TYPE_SLOT[usize::from(qtype)]),
        257 => QUERY_TYPES.len() - 1,
        _ => OTHER_TYPE,
    }
}

/// The transports and IP families queries are counted by:
/// `queries_by_transport[transport * 2 + family]`.
pub const TRANSPORTS: [&str; 4] = ["udp", "tcp", "xdp", "tls"];

/// The slot of UDP over AF_XDP in [`TRANSPORTS`].
pub(crate) const XDP_TRANSPORT: usize = 2;

/// See [`TRANSPORTS`].
pub const FAMILIES: [&str; 2] = ["ipv4", "ipv6"];

/// What became of the DNS COOKIE options of queries (UDP):
/// `cookies[slot]`.
pub const COOKIE_RESULTS: [&str; 4] = ["client-only", "valid", "invalid", "malformed"];

/// Why TCP connections were closed by a timeout: `tcp_timeouts[slot]`.
pub const TCP_TIMEOUTS: [&str; 4] = ["initial", "idle", "message", "write"];

/// Index of [`TCP_TIMEOUTS`].
pub(crate) const TIMEOUT_INITIAL: usize = 0;
/// See [`TIMEOUT_INITIAL`].
pub(crate) const TIMEOUT_IDLE: usize = 1;
/// See [`TIMEOUT_INITIAL`].
pub(crate) const TIMEOUT_MESSAGE: usize = 2;
/// See [`TIMEOUT_INITIAL`].
pub(crate) const TIMEOUT_WRITE: usize = 3;

/// The type of the question of `query`, a message whose header was not
/// read yet; `None` if there is none or it is cut short. Bounded: each
/// label moves on by at least one octet.
fn question_type(query: &[u8]) -> Option<u16> {
    if query.get(4..6)? == [0, 0] {
        return None;
    }
    let mut at = 12;
    loop {
        let len = usize::from(*query.get(at)?);
        if len == 0 {
            break;
        }
        if len & 0xc0 != 0 {
            return None; // a pointer or reserved label type in a question
        }
        at += 1 + len;
    }
    let qtype = query.get(at + 1..at + 3)?;
    Some(u16::from_be_bytes([qtype[0], qtype[1]]))
}

/// The most zones counted apart on a core (by catalog slot); queries for
/// zones in later slots count under no zone. Each costs a
/// [`ZoneCounters`] (328 octets) per core once the zone is queried on that
/// core: the table is reserved whole and zeroed by the system, so the
/// pages of zones never queried are never made resident.
pub const MAX_COUNTED_ZONES: usize = 1 << 16;

/// The counters of one zone in [`ZoneTable`]: its queries by type, then
/// its answers by rcode.
const ZONE_WORDS: usize = TYPE_SLOTS + 16;

/// [`Counters::zone`] when the query being answered is for no zone of
/// ours (or not known to be); otherwise it is the zone's index plus one
/// (also the tag of the zone's answers in the answer cache).
pub(crate) const NO_ZONE: u32 = 0;

/// The [`Counters::zone`] (and cache tag) of the zone at `index`.
pub(crate) fn zone_tag(index: Option<u32>) -> u32 {
    index.map_or(NO_ZONE, |index| index.saturating_add(1))
}

/// One zone's counters on one core (or summed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Queries answered for the zone, by the type of their question (per
    /// [`QUERY_TYPES`] slot, then [`OTHER_TYPE`]).
    pub queries_by_type: [u64; TYPE_SLOTS],
    /// Answers for the zone by header rcode.
    pub answers_by_rcode: [u64; 16],
}

impl Default for ZoneCounters {
    fn default() -> Self {
        ZoneCounters {
            queries_by_type: [0; TYPE_SLOTS],
            answers_by_rcode: [0; 16],
        }
    }
}

impl ZoneCounters {
    fn add(&mut self, other: &ZoneCounters) {
        add(&mut self.queries_by_type, &other.queries_by_type);
        add(&mut self.answers_by_rcode, &other.answers_by_rcode);
    }
}

//----------- CoreStats ------------------------------------------------------

/// A snapshot of one core's counters (or, from [`CoreStats::sum`] and the
/// [`Sum`] impl, of several: `core` is then `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// The CPU the core is pinned to; `None` for an unpinned core or a sum.
    pub core: Option<usize>,
    /// Queries received (UDP datagrams and TCP messages).
    pub queries: u64,
    /// Queries by the type of their question: per [`QUERY_TYPES`] slot,
    /// then [`OTHER_TYPE`].
    pub queries_by_type: [u64; TYPE_SLOTS],
    /// Queries by transport and IP family (see [`TRANSPORTS`]).
    pub queries_by_transport: [u64; 8],
    /// Queries with a DNS COOKIE option, by [`COOKIE_RESULTS`] (UDP).
    pub cookies: [u64; 4],
    /// TCP connections closed by each timeout of [`TCP_TIMEOUTS`].
    pub tcp_timeouts: [u64; 4],
    /// Per zone (lowercased wire origin), the queries answered for it;
    /// zones with none are left out. Queries of no zone of ours are the
    /// difference from the totals.
    pub zones: Vec<(Vec<u8>, ZoneCounters)>,
    /// Answers written, by the rcode in their header (extended rcodes such
    /// as BADVERS count under their header bits, 0; BADCOOKIE apart, in
    /// `badcookie`). An answer the kernel then refused to send is also
    /// counted in `dropped`.
    pub answers_by_rcode: [u64; 16],
    /// BADCOOKIE answers (extended rcode 23: the rate-limiting slips of
    /// clients that sent a cookie).
    pub badcookie: u64,
    /// UDP answers copied from the core's answer cache.
    pub cache_hits: u64,
    /// UDP queries the cache could have answered but did not.
    pub cache_misses: u64,
    /// Answers sent with TC set.
    pub truncated: u64,
    /// Queries not answered: malformed or responses (dropped on purpose),
    /// rate-limited and not slipped, cut short by the receive buffer, or
    /// whose answer could not be sent.
    pub dropped: u64,
    /// UDP answers limited by response rate limiting: dropped (also
    /// counted in `dropped`) or slipped.
    pub rrl_limited: u64,
    /// Limited answers sent as a slip instead: TC=1, or BADCOOKIE to a
    /// client that sent a cookie (also counted as an answer, under
    /// `truncated` or `badcookie`).
    pub rrl_slipped: u64,
    /// TCP connections accepted and served.
    pub tcp_accepted: u64,
    /// TCP connections open at the time of the snapshot.
    pub tcp_open: u64,
    /// TCP connections closed at once because the core's connection limit
    /// was reached.
    pub tcp_refused: u64,
    /// Heap allocations made by the core's thread so far, if the binary
    /// installed the counting allocator (otherwise 0).
    pub allocations: u64,
    /// The forwarder's counters (all zero and no upstreams when
    /// forwarding is off).
    pub forward: ForwardStats,
    /// dnstap messages of this core whose frame the writer wrote out (0
    /// when dnstap is off).
    pub dnstap_written: u64,
    /// dnstap messages of this core dropped, by
    /// [`tern_dnstap::DNSTAP_DROPPED`]: its buffer was full, the writer
    /// had no reader, or they were lost in the writer's buffer.
    pub dnstap_dropped: [u64; 3],
    /// The AF_XDP path's counters (all zero without `xdp.interfaces`).
    pub xdp: XdpStats,
    /// PROXY protocol headers (all zero without `proxy.listen`).
    pub proxy: ProxyStats,
    /// DNS over TLS (all zero without `tls.listen`).
    pub tls: TlsStats,
    /// Zone transfer requests answered by this server (outgoing
    /// transfers), by transport and outcome.
    pub transfers_out: XfrOutStats,
}

//----------- XfrOutStats ----------------------------------------------------

/// Outgoing zone transfers: requests by transport
/// ([`crate::xfr_out::TRANSPORTS`]) and outcome
/// ([`crate::xfr_out::OUTCOMES`]), refusals by reason
/// ([`crate::xfr_out::REFUSALS`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XfrOutStats {
    /// By transport, then outcome.
    pub outcomes: [[u64; 5]; 3],
    /// Refusals by reason.
    pub refusals: [u64; 6],
    /// Transfers running at the snapshot.
    pub running: u64,
}

impl XfrOutStats {
    pub(crate) fn add(&mut self, other: &XfrOutStats) {
        for (row, other) in self.outcomes.iter_mut().zip(&other.outcomes) {
            add(row, other);
        }
        add(&mut self.refusals, &other.refusals);
        self.running += other.running;
    }
}

//----------- ProxyStats -----------------------------------------------------

/// The PROXY protocol headers of the `proxy.listen` listeners: UDP
/// datagrams and TCP connections accepted with a header, and dropped by
/// reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Headers accepted.
    pub accepted: u64,
    /// Datagrams and connections dropped, by [`crate::PROXY_REFUSALS`].
    pub refused: [u64; 4],
}

//----------- XdpStats -------------------------------------------------------

/// The AF_XDP path's frames (issue 12): received, answered, and dropped
/// by reason; the queries among them are counted as the socket path's are
/// (`queries_by_transport` under `xdp`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// Frames taken from the AF_XDP sockets' rx rings.
    pub received: u64,
    /// Answer frames queued for sending.
    pub answered: u64,
    /// Frames refused by the frame parser, by
    /// [`tern_wire::frame::Refusal::ALL`].
    pub refused: [u64; 8],
    /// Queries dropped because every answer frame was in flight.
    pub no_frame: u64,
    /// Frames the kernel lost on the way to tern: its rx ring or fill
    /// ring was full or empty, or a descriptor was invalid (read from the
    /// sockets at the snapshot).
    pub kernel_dropped: u64,
    /// Packets for tern's addresses that the XDP program passed to the
    /// kernel, by [`crate::XDP_PASSED`] (counted on the first core only).
    pub passed: [u64; 3],
}

impl XdpStats {
    fn add(&mut self, other: &XdpStats) {
        self.received += other.received;
        self.answered += other.answered;
        add(&mut self.refused, &other.refused);
        self.no_frame += other.no_frame;
        self.kernel_dropped += other.kernel_dropped;
        add(&mut self.passed, &other.passed);
    }
}

impl CoreStats {
    /// The sum of several snapshots, with `core` set to `None`.
    pub fn sum<'a>(stats: impl IntoIterator<Item = &'a CoreStats>) -> CoreStats {
        stats
            .into_iter()
            .fold(CoreStats::default(), |mut total, one| {
                total.queries += one.queries;
                add(&mut total.queries_by_type, &one.queries_by_type);
                add(&mut total.queries_by_transport, &one.queries_by_transport);
                add(&mut total.cookies, &one.cookies);
                add(&mut total.tcp_timeouts, &one.tcp_timeouts);
                add_zones(&mut total.zones, &one.zones);
                for (sum, count) in total.answers_by_rcode.iter_mut().zip(one.answers_by_rcode) {
                    *sum += count;
                }
                total.badcookie += one.badcookie;
                total.cache_hits += one.cache_hits;
                total.cache_misses += one.cache_misses;
                total.truncated += one.truncated;
                total.dropped += one.dropped;
                total.rrl_limited += one.rrl_limited;
                total.rrl_slipped += one.rrl_slipped;
                total.tcp_accepted += one.tcp_accepted;
                total.tcp_open += one.tcp_open;
                total.tcp_refused += one.tcp_refused;
                total.allocations += one.allocations;
                add_forward(&mut total.forward, &one.forward);
                total.dnstap_written += one.dnstap_written;
                for (sum, count) in total.dnstap_dropped.iter_mut().zip(one.dnstap_dropped) {
                    *sum += count;
                }
                total.xdp.add(&one.xdp);
                total.proxy.accepted += one.proxy.accepted;
                add(&mut total.proxy.refused, &one.proxy.refused);
                total.tls.add(&one.tls);
                total.transfers_out.add(&one.transfers_out);
                total
            })
    }

    /// All answers sent.
    pub fn answers(&self) -> u64 {
        self.answers_by_rcode.iter().sum::<u64>() + self.badcookie
    }
}

/// Adds one core's zone counters to a sum, zone by zone.
fn add_zones(total: &mut Vec<(Vec<u8>, ZoneCounters)>, one: &[(Vec<u8>, ZoneCounters)]) {
    for (origin, counters) in one {
        match total.binary_search_by(|(known, _)| known.as_slice().cmp(origin)) {
            Ok(at) => total[at].1.add(counters),
            Err(at) => total.insert(at, (origin.clone(), counters.clone())),
        }
    }
}

/// Adds counts slot by slot.
fn add(total: &mut [u64], one: &[u64]) {
    for (sum, count) in total.iter_mut().zip(one) {
        *sum += count;
    }
}

/// Adds one core's forward counters to a sum: counts add up; an
/// upstream's RTT in the sum is the largest of the cores' (the cores have
/// the same upstreams in the same order).
fn add_forward(total: &mut ForwardStats, one: &ForwardStats) {
    total.upstream_queries += one.upstream_queries;
    total.upstream_answers += one.upstream_answers;
    total.upstream_timeouts += one.upstream_timeouts;
    total.upstream_rejected += one.upstream_rejected;
    total.upstream_bad_cookies += one.upstream_bad_cookies;
    total.open_sockets += one.open_sockets;
    total.cache_hits += one.cache_hits;
    total.cache_misses += one.cache_misses;
    total.coalesced += one.coalesced;
    total.stale_answers += one.stale_answers;
    total.servfails += one.servfails;
    total.rtt.add(&one.rtt);
    if total.upstreams.len() < one.upstreams.len() {
        total
            .upstreams
            .resize(one.upstreams.len(), Default::default());
    }
    for (sum, upstream) in total.upstreams.iter_mut().zip(&one.upstreams) {
        sum.address = upstream.address;
        sum.queries += upstream.queries;
        sum.answers += upstream.answers;
        sum.timeouts += upstream.timeouts;
        sum.rtt_micros = sum.rtt_micros.max(upstream.rtt_micros);
    }
}

impl<'a> Sum<&'a CoreStats> for CoreStats {
    fn sum<I: Iterator<Item = &'a CoreStats>>(iter: I) -> CoreStats {
        CoreStats::sum(iter)
    }
}

impl fmt::Display for CoreStats {
    /// One line: `core 0: queries 10 answers 9 (noerror 8 nxdomain 1) ...`;
    /// rcodes with no answers are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.core {
            Some(core) => write!(f, "core {core}: ")?,
            None => write!(f, "all cores: ")?,
        }
        write!(f, "queries {} answers {} (", self.queries, self.answers())?;
        let mut first = true;
        for (name, count) in RCODE_NAMES.iter().zip(self.answers_by_rcode) {
            if count == 0 {
                continue;
            }
            if !first {
                write!(f, " ")?;
            }
            write!(f, "{name} {count}")?;
            first = false;
        }
        if self.badcookie > 0 {
            let space = if first { "" } else { " " };
            write!(f, "{space}badcookie {}", self.badcookie)?;
        }
        write!(
            f,
            ") cache hits {} misses {} truncated {} dropped {} \
             tcp accepted {} open {} refused {} rrl limited {} slipped {} allocations {}",
            self.cache_hits,
            self.cache_misses,
            self.truncated,
            self.dropped,
            self.tcp_accepted,
            self.tcp_open,
            self.tcp_refused,
            self.rrl_limited,
            self.rrl_slipped,
            self.allocations
        )?;
        let [buffer, no_reader, lost] = self.dnstap_dropped;
        if self.dnstap_written + buffer + no_reader + lost > 0 {
            write!(
                f,
                " dnstap written {} dropped {} (buffer {buffer} no-reader {no_reader} lost {lost})",
                self.dnstap_written,
                buffer + no_reader + lost
            )?;
        }
        let xdp = &self.xdp;
        if xdp != &XdpStats::default() {
            write!(
                f,
                " xdp received {} answered {} refused {} no-frame {} kernel-dropped {} passed {}",
                xdp.received,
                xdp.answered,
                xdp.refused.iter().sum::<u64>(),
                xdp.no_frame,
                xdp.kernel_dropped,
                xdp.passed.iter().sum::<u64>()
            )?;
        }
        let proxy = &self.proxy;
        if proxy != &ProxyStats::default() {
            write!(f, " proxy accepted {} refused", proxy.accepted)?;
            for (reason, count) in crate::PROXY_REFUSALS.iter().zip(proxy.refused) {
                write!(f, " {reason} {count}")?;
            }
        }
        let tls = &self.tls;
        if tls != &TlsStats::default() {
            write!(
                f,
                " tls accepted {} open {} refused {} handshakes",
                tls.accepted, tls.open, tls.refused
            )?;
            for (outcome, row) in HANDSHAKE_OUTCOMES.iter().zip(tls.handshakes) {
                write!(f, " {outcome} {}", row.iter().sum::<u64>())?;
            }
            // Versions of every handshake that agreed on one.
            for (slot, version) in TLS_VERSIONS.iter().enumerate() {
                if *version != "none" {
                    let count: u64 = tls.handshakes.iter().map(|row| row[slot]).sum();
                    write!(f, " {version} {count}")?;
                }
            }
            write!(f, " resumed {}", tls.resumed)?;
        }
        let forward = &self.forward;
        if forward.upstreams.is_empty() {
            return Ok(());
        }
        write!(
            f,
            " forward queries {} answers {} timeouts {} rejected {} (bad cookie {}) sockets {} \
             cache hits {} misses {} coalesced {} stale {} servfail {}",
            forward.upstream_queries,
            forward.upstream_answers,
            forward.upstream_timeouts,
            forward.upstream_rejected,
            forward.upstream_bad_cookies,
            forward.open_sockets,
            forward.cache_hits,
            forward.cache_misses,
            forward.coalesced,
            forward.stale_answers,
            forward.servfails
        )?;
        for upstream in &forward.upstreams {
            if let Some(address) = upstream.address {
                write!(
                    f,
                    " upstream {address} queries {} answers {} timeouts {} rtt {}us",
                    upstream.queries, upstream.answers, upstream.timeouts, upstream.rtt_micros
                )?;
            }
        }
        Ok(())
    }
}

//----------- Counters -------------------------------------------------------

/// The answering counters of one core, owned by its worker.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) queries: u64,
    pub(crate) queries_by_type: [u64; TYPE_SLOTS],
    pub(crate) queries_by_transport: [u64; 8],
    pub(crate) cookies: [u64; 4],
    /// Per zone of the catalog (by slot, at most [`MAX_COUNTED_ZONES`]).
    pub(crate) zones: ZoneTable,
    /// The zone of the query being answered, as [`zone_tag`] makes it
    /// ([`NO_ZONE`] until the answering stage knows it), and its type's
    /// slot: the answer is counted under them.
    pub(crate) zone: u32,
    type_slot: u8,
    pub(crate) answers_by_rcode: [u64; 16],
    pub(crate) badcookie: u64,
    pub(crate) cache_hits: u64,
    pub(crate) cache_misses: u64,
    pub(crate) truncated: u64,
    pub(crate) dropped: u64,
    pub(crate) rrl_limited: u64,
    pub(crate) rrl_slipped: u64,
}

impl Counters {
    /// Counters at zero, with a table for [`MAX_COUNTED_ZONES`] zones.
    pub(crate) fn new() -> Self {
        Counters {
            zones: ZoneTable::new(),
            ..Counters::default()
        }
    }

    /// Counts a query; its type is counted by [`Counters::count_type`]
    /// once the answering stage has read it ([`Counters::set_type`]).
    pub(crate) fn count_query(&mut self) {
        self.queries += 1;
        self.type_slot = OTHER_TYPE as u8;
        self.zone = NO_ZONE;
    }

    /// The type of the question of the query being answered.
    pub(crate) fn set_type(&mut self, qtype: u16) {
        self.type_slot = type_slot(qtype) as u8;
    }

    /// [`Counters::set_type`] for a query the cache path did not take:
    /// its question's type, if it has one. A message whose question could
    /// not be parsed (two questions, say) is counted by its first
    /// question's type, read here, if that much of it reads.
    pub(crate) fn set_type_of(&mut self, query: &tern_wire::query::Query<'_>) {
        let qtype = match query.message() {
            Ok(message) => message.question().map(|question| question.qtype.0),
            Err(_) => question_type(query.bytes()),
        };
        self.type_slot = qtype.map_or(OTHER_TYPE, type_slot) as u8;
    }

    /// Counts the query being answered by its type (once, however it was
    /// answered, dropped or forwarded).
    pub(crate) fn count_type(&mut self) {
        self.queries_by_type[usize::from(self.type_slot)] += 1;
    }

    /// The zone counters that are not zero, by origin (`origin(slot)`),
    /// among the first `slots` slots.
    pub(crate) fn zone_snapshot(
        &self,
        slots: usize,
        origin: impl Fn(u32) -> Option<Vec<u8>>,
    ) -> Vec<(Vec<u8>, ZoneCounters)> {
        let mut zones: Vec<_> = (0..slots.min(self.zones.len()))
            .filter(|&slot| !self.zones.is_zero(slot))
            .filter_map(|slot| Some((origin(slot as u32)?, self.zones.get(slot)?)))
            .collect();
        zones.sort_by(|a, b| a.0.cmp(&b.0));
        zones
    }

    /// Counts the DNS COOKIE option of a query.
    pub(crate) fn count_cookie(&mut self, check: &tern_authority::cookie::CookieCheck) {
        use tern_authority::cookie::CookieCheck;
        let slot = match check {
            CookieCheck::None => return,
            CookieCheck::ClientOnly(_) => 0,
            CookieCheck::Valid(_) => 1,
            CookieCheck::Invalid(_) => 2,
            CookieCheck::Malformed => 3,
        };
        self.cookies[slot] += 1;
    }

    /// Counts an answer about to be sent, from its header (and, for the
    /// header rcode of BADCOOKIE, its OPT). Inlined, once an answer: the
    /// OPT's parse is a call apart ([`is_badcookie`]), so the usual answer
    /// needs no frame of its own.
    #[inline]
    pub(crate) fn count_answer(&mut self, answer: &[u8]) {
        if let (Some(flags), Some(rcode)) = (answer.get(2), answer.get(3)) {
            let rcode = usize::from(rcode & 0x0f);
            if rcode == BADCOOKIE_HEADER_BITS && is_badcookie(answer) {
                self.badcookie += 1;
            } else {
                self.answers_by_rcode[rcode] += 1;
                // Counted once: a later answer (forwarded) is of no zone.
                let zone = std::mem::replace(&mut self.zone, NO_ZONE);
                let slot = zone.checked_sub(1).map(|slot| slot as usize);
                if let Some(counters) = slot.and_then(|slot| self.zones.words_mut(slot)) {
                    counters[TYPE_SLOTS + rcode] += 1;
                    counters[usize::from(self.type_slot)] += 1;
                }
            }
            if flags & 0x02 != 0 {
                self.truncated += 1;
            }
        }
    }
}

//----------- ZoneTable ------------------------------------------------------

/// One core's counters of each zone, by catalog slot: [`ZONE_WORDS`]
/// counters a zone in one flat table, made once for [`MAX_COUNTED_ZONES`]
/// zones with memory the system hands out zeroed (`calloc`: untouched
/// pages cost nothing). A slot keeps its counts while its zone is
/// replaced by new versions; a slot given to another zone starts again
/// from zero ([`ZoneTable::reset`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneTable {
    /// Flat, not `Vec<[u64; ZONE_WORDS]>`: a vector of arrays that long
    /// is not asked of the system zeroed, but written.
    words: Vec<u64>,
}

impl ZoneTable {
    /// A table for [`MAX_COUNTED_ZONES`] zones.
    pub(crate) fn new() -> Self {
        ZoneTable {
            words: vec![0; MAX_COUNTED_ZONES * ZONE_WORDS],
        }
    }

    /// How many zones it counts.
    pub(crate) fn len(&self) -> usize {
        self.words.len() / ZONE_WORDS
    }

    /// The counters of the zone in `slot`, if it is counted: an array,
    /// so that an index known to be below [`ZONE_WORDS`] is not checked
    /// again (one check of the slot, where a slice had three).
    #[inline]
    fn words_mut(&mut self, slot: usize) -> Option<&mut [u64; ZONE_WORDS]> {
        let start = slot.checked_mul(ZONE_WORDS)?;
        self.words
            .get_mut(start..start.checked_add(ZONE_WORDS)?)?
            .try_into()
            .ok()
    }

    /// A copy of the counters of the zone in `slot`.
    pub(crate) fn get(&self, slot: usize) -> Option<ZoneCounters> {
        let words = self.words.get(slot * ZONE_WORDS..(slot + 1) * ZONE_WORDS)?;
        let mut counters = ZoneCounters::default();
        counters
            .queries_by_type
            .copy_from_slice(&words[..TYPE_SLOTS]);
        counters
            .answers_by_rcode
            .copy_from_slice(&words[TYPE_SLOTS..]);
        Some(counters)
    }

    /// Whether the zone in `slot` has no queries counted (or is not
    /// counted).
    fn is_zero(&self, slot: usize) -> bool {
        self.words
            .get(slot * ZONE_WORDS..slot * ZONE_WORDS + TYPE_SLOTS)
            .is_none_or(|words| words.iter().all(|&word| word == 0))
    }

    /// Zeroes the counters of `slot` (it now holds another zone).
    pub(crate) fn reset(&mut self, slot: usize) {
        if let Some(words) = self.words_mut(slot) {
            if words.iter().any(|&word| word != 0) {
                words.fill(0);
            }
        }
    }
}

/// The header bits of BADCOOKIE (23): 7, with 1 in the OPT's extended
/// rcode (as YXRRSET, which tern never sends).
const BADCOOKIE_HEADER_BITS: usize = 7;

/// Whether an answer's OPT extends its header rcode to BADCOOKIE. Rare
/// (and a parse of the whole answer): kept out of line, out of the way of
/// [`Counters::count_answer`]'s usual path.
#[cold]
#[inline(never)]
fn is_badcookie(answer: &[u8]) -> bool {
    MessageView::parse(answer)
        .ok()
        .and_then(|view| view.edns().ok().flatten())
        .is_some_and(|edns| edns.extended_rcode == 1)
}

//----------- TcpCounters ----------------------------------------------------

/// The TCP counters of one core, shared by its accept loops.
#[derive(Debug, Default)]
pub(crate) struct TcpCounters {
    pub(crate) accepted: Cell<u64>,
    pub(crate) open: Cell<u64>,
    pub(crate) refused: Cell<u64>,
    /// Connections closed by each timeout of [`TCP_TIMEOUTS`].
    pub(crate) timeouts: [Cell<u64>; 4],
}

impl TcpCounters {
    /// Counts a connection closed by timeout `slot` ([`TIMEOUT_IDLE`]...).
    pub(crate) fn timed_out(&self, slot: usize) {
        if let Some(count) = self.timeouts.get(slot) {
            count.set(count.get() + 1);
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_and_display() {
        let mut a = CoreStats {
            core: Some(0),
            queries: 3,
            ..CoreStats::default()
        };
        a.answers_by_rcode[0] = 2;
        let mut b = CoreStats {
            core: Some(1),
            queries: 2,
            cache_hits: 1,
            rrl_limited: 3,
            rrl_slipped: 1,
            ..CoreStats::default()
        };
        b.answers_by_rcode[3] = 1;
        b.answers_by_rcode[0] = 1;
        let total: CoreStats = [a.clone(), b].iter().sum();
        assert_eq!(total.core, None);
        assert_eq!(total.queries, 5);
        assert_eq!(total.answers(), 4);
        assert_eq!(
            total.to_string(),
            "all cores: queries 5 answers 4 (noerror 3 nxdomain 1) cache hits 1 misses 0 \
             truncated 0 dropped 0 tcp accepted 0 open 0 refused 0 rrl limited 3 slipped 1 \
             allocations 0"
        );
        assert!(a
            .to_string()
            .starts_with("core 0: queries 3 answers 2 (noerror 2)"));
    }

    /// The TLS counters show in the text line only when there are any,
    /// handshakes by outcome (all versions) and by version (all outcomes).
    #[test]
    fn tls_counters_in_the_text_line() {
        let quiet = CoreStats::default().to_string();
        assert!(!quiet.contains(" tls "), "{quiet}");
        let mut stats = CoreStats {
            core: Some(0),
            ..CoreStats::default()
        };
        stats.tls.accepted = 7;
        stats.tls.open = 2;
        stats.tls.refused = 1;
        stats.tls.handshakes[0] = [4, 1, 0]; // ok: 4 TLS 1.3, 1 TLS 1.2
        stats.tls.handshakes[1] = [0, 0, 1]; // failed before a version
        stats.tls.handshakes[2] = [0, 0, 1]; // timed out
        stats.tls.resumed = 3;
        let line = stats.to_string();
        assert!(
            line.ends_with(
                " tls accepted 7 open 2 refused 1 handshakes ok 5 failed 1 timeout 1 closed 0 \
                 tls1.3 4 tls1.2 1 resumed 3"
            ),
            "{line}"
        );
    }

    #[test]
    fn query_types_have_their_slots_and_the_rest_is_other() {
        for (slot, (qtype, _)) in QUERY_TYPES.iter().enumerate() {
            assert_eq!(type_slot(*qtype), slot);
        }
        assert_eq!(type_slot(99), OTHER_TYPE);
        assert_eq!(type_slot(256), OTHER_TYPE);
        assert_eq!(type_slot(65535), OTHER_TYPE);
        let query = tern_testkit::query(1, "www.example.com.", 28, None);
        assert_eq!(question_type(&query), Some(28));
        // Cut short, no question, a pointer in the question: unread.
        assert_eq!(question_type(&query[..query.len() - 3]), None);
        let mut none = query.clone();
        none[5] = 0;
        assert_eq!(question_type(&none), None);
        let mut pointer = query[..12].to_vec();
        pointer.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(question_type(&pointer), None);
    }

    #[test]
    fn zone_counters_sum_by_origin() {
        let zone = |count: u64| {
            let mut counters = ZoneCounters::default();
            counters.queries_by_type[0] = count;
            counters
        };
        let a = CoreStats {
            zones: vec![(b"a".to_vec(), zone(1)), (b"c".to_vec(), zone(2))],
            ..CoreStats::default()
        };
        let b = CoreStats {
            zones: vec![(b"b".to_vec(), zone(4)), (b"c".to_vec(), zone(8))],
            ..CoreStats::default()
        };
        let total: CoreStats = [a, b].iter().sum();
        let counts: Vec<(&[u8], u64)> = total
            .zones
            .iter()
            .map(|(origin, counters)| (origin.as_slice(), counters.queries_by_type[0]))
            .collect();
        assert_eq!(counts, [(&b"a"[..], 1), (b"b", 4), (b"c", 10)]);
    }

    #[test]
    fn answers_counted_from_the_header() {
        let mut counters = Counters::default();
        counters.count_answer(&[0, 0, 0x86, 0x03]); // QR AA TC, NXDOMAIN
        counters.count_answer(&[0, 0, 0x84, 0x00]);
        counters.count_answer(&[0, 0]); // too short: not counted
        assert_eq!(counters.answers_by_rcode[3], 1);
        assert_eq!(counters.answers_by_rcode[0], 1);
        assert_eq!(counters.truncated, 1);
        // BADCOOKIE: header bits 7, extended rcode 1 in the OPT.
        let mut badcookie = vec![0, 0, 0x80, 0x07, 0, 0, 0, 0, 0, 0, 0, 1];
        badcookie.extend_from_slice(&[0, 0, 41, 4, 0xd0, 1, 0, 0, 0, 0, 0]);
        counters.count_answer(&badcookie);
        assert_eq!((counters.badcookie, counters.answers_by_rcode[7]), (1, 0));
        // Header bits 7 without that OPT: YXRRSET.
        counters.count_answer(&[0, 0, 0x80, 0x07, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((counters.badcookie, counters.answers_by_rcode[7]), (1, 1));
    }
}

//----------- TlsCounters ----------------------------------------------------

/// The TLS counters of one core.
#[derive(Debug, Default)]
pub(crate) struct TlsCounters {
    /// Connections accepted, open, refused at the limit, timed out (the
    /// timeouts of the stream after the handshake).
    pub(crate) connections: TcpCounters,
    /// Handshakes by outcome and protocol version ([`HANDSHAKE_OUTCOMES`]
    /// and [`TLS_VERSIONS`]).
    pub(crate) handshakes: [[Cell<u64>; 3]; 4],
    /// Handshakes that resumed a session.
    pub(crate) resumed: Cell<u64>,
    /// Connections ended after the handshake by a TLS error.
    pub(crate) protocol_errors: Cell<u64>,
}

impl TlsCounters {
    /// A copy, for a snapshot.
    pub(crate) fn stats(&self) -> TlsStats {
        TlsStats {
            accepted: self.connections.accepted.get(),
            open: self.connections.open.get(),
            refused: self.connections.refused.get(),
            timeouts: self.connections.timeouts.each_ref().map(Cell::get),
            handshakes: self
                .handshakes
                .each_ref()
                .map(|row| row.each_ref().map(Cell::get)),
            resumed: self.resumed.get(),
            protocol_errors: self.protocol_errors.get(),
        }
    }
}

/// The outcomes of TLS handshakes, `tern_tls_handshakes_total{outcome}`
/// (re-exported by `crate::tls`, which counts them).
pub const HANDSHAKE_OUTCOMES: [&str; 4] = ["ok", "failed", "timeout", "closed"];
/// The protocol versions of handshakes,
/// `tern_tls_handshakes_total{version}` ("none": failed before one was
/// agreed).
pub const TLS_VERSIONS: [&str; 3] = ["tls1.3", "tls1.2", "none"];

/// DNS over TLS counters of a core (all zero without `tls.listen`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections open now.
    pub open: u64,
    /// Connections closed at once at the per-core limit.
    pub refused: u64,
    /// Connections closed by a timeout after the handshake, by
    /// [`crate::TCP_TIMEOUTS`].
    pub timeouts: [u64; 4],
    /// Handshakes by outcome, then protocol version ([`HANDSHAKE_OUTCOMES`]
    /// and [`TLS_VERSIONS`]).
    pub handshakes: [[u64; 3]; 4],
    /// Handshakes that resumed a session (ticket or session id).
    pub resumed: u64,
    /// Connections ended after the handshake because rustls refused what
    /// the client sent (a record that does not decrypt; KeyUpdate,
    /// warning-alert or renegotiation requests past rustls's limits).
    pub protocol_errors: u64,
}

impl TlsStats {
    pub(crate) fn add(&mut self, other: &TlsStats) {
        self.accepted += other.accepted;
        self.open += other.open;
        self.refused += other.refused;
        for (sum, count) in self.timeouts.iter_mut().zip(other.timeouts) {
            *sum += count;
        }
        for (row, other) in self.handshakes.iter_mut().zip(other.handshakes) {
            for (sum, count) in row.iter_mut().zip(other) {
                *sum += count;
            }
        }
        self.resumed += other.resumed;
        self.protocol_errors += other.protocol_errors;
    }
}

/// The transport slot of DNS over TLS in [`TRANSPORTS`].
pub(crate) const TRANSPORT_TLS: usize = 3;
