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

//----------- CoreStats ------------------------------------------------------

/// A snapshot of one core's counters (or, from [`CoreStats::sum`] and the
/// [`Sum`] impl, of several: `core` is then `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// The CPU the core is pinned to; `None` for an unpinned core or a sum.
    pub core: Option<usize>,
    /// Queries received (UDP datagrams and TCP messages).
    pub queries: u64,
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
}

impl CoreStats {
    /// The sum of several snapshots, with `core` set to `None`.
    pub fn sum<'a>(stats: impl IntoIterator<Item = &'a CoreStats>) -> CoreStats {
        stats
            .into_iter()
            .fold(CoreStats::default(), |mut total, one| {
                total.queries += one.queries;
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
                total
            })
    }

    /// All answers sent.
    pub fn answers(&self) -> u64 {
        self.answers_by_rcode.iter().sum::<u64>() + self.badcookie
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
    /// Counts an answer about to be sent, from its header (and, for the
    /// header rcode of BADCOOKIE, its OPT).
    pub(crate) fn count_answer(&mut self, answer: &[u8]) {
        if let (Some(flags), Some(rcode)) = (answer.get(2), answer.get(3)) {
            let rcode = usize::from(rcode & 0x0f);
            if rcode == BADCOOKIE_HEADER_BITS && is_badcookie(answer) {
                self.badcookie += 1;
            } else {
                self.answers_by_rcode[rcode] += 1;
            }
            if flags & 0x02 != 0 {
                self.truncated += 1;
            }
        }
    }
}

/// The header bits of BADCOOKIE (23): 7, with 1 in the OPT's extended
/// rcode (as YXRRSET, which tern never sends).
const BADCOOKIE_HEADER_BITS: usize = 7;

/// Whether an answer's OPT extends its header rcode to BADCOOKIE.
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
