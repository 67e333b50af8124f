//! Response rate limiting (RRL), as in BIND and Knot: UDP answers per
//! client prefix, per kind of answer, per second.
//!
//! An authoritative server answers whoever the source address of a UDP
//! query names, and that address can be forged: without a limit, a flood
//! of small queries "from" a victim turns into a flood of larger answers
//! to the victim. RRL caps the answers one client network gets for one
//! kind of answer, and sends some of the rest as small truncated answers
//! ("slips") so that a real client behind a forged flood can still ask
//! again over TCP, which cannot be forged.
//!
//! Accounting follows BIND (docs/decisions/0007):
//!
//! ```text
//! key = (client prefix /24 or /56, category, name)
//!   Response  NOERROR (answers, NODATA, referrals)  name = lowercased qname + qtype
//!   NxDomain  NXDOMAIN                             name = the zone's apex (any name of a zone)
//!   Error     FORMERR, SERVFAIL, REFUSED, ...      name = none (the prefix alone)
//! balance: starts at `rate`, +rate per elapsed second (at most `rate`), -1 per answer;
//!          below 0 the answer is limited; never below -window*rate (a flood stays limited
//!          until its debt is paid); untouched for longer than `window`: starts afresh
//! ```
//!
//! Each core owns one [`RateLimiter`]: a table allocated once at start,
//! 4-way set-associative (a set is one 64-octet cache line), indexed by a
//! hash keyed with a per-core random key (tern-cache's `KeyedHash`:
//! foldhash under 128 OS-random bits, about 60 instructions where std's
//! SipHash-1-3 took 300), so aiming collisions at one set needs the key.
//! As for the caches, the weaker hash is enough: the table is bounded and
//! evicts, so a collision flood can at worst take slots over, which
//! restarts those keys' accounts. A query costs one hash and one set
//! probe; nothing is allocated, nothing is shared, and a key that finds
//! its set full takes over the least recently used slot.
//! With SO_REUSEPORT the kernel spreads a client's queries over the cores,
//! so each core enforces `ceil(rate / cores)`.

use std::net::IpAddr;

use tern_wire::build::MessageBuilder;
use tern_wire::parse::HEADER_LEN;
use tern_wire::query::Query;
use tern_wire::types::Rcode;

use tern_cache::KeyedHash;

use crate::Cidr;

/// The default answers per second and client prefix (all categories).
pub const DEFAULT_RATE: u32 = 20;

/// The default window: a prefix's debt and history last 15 seconds
/// (BIND's default).
pub const DEFAULT_WINDOW: u32 = 15;

/// The default slip: every second limited answer is sent truncated
/// (BIND's default).
pub const DEFAULT_SLIP: u32 = 2;

/// The default IPv4 prefix length (BIND's).
pub const DEFAULT_IPV4_PREFIX: u8 = 24;

/// The default IPv6 prefix length (BIND's).
pub const DEFAULT_IPV6_PREFIX: u8 = 56;

/// The default slots per core: 1 MiB of table, 65536 prefixes and names
/// tracked at once.
pub const DEFAULT_TABLE_SIZE: usize = 1 << 16;

/// The largest per-second rate (BIND's `DNS_RRL_MAX_RATE`).
pub const MAX_RATE: u32 = 1000;

/// The longest window, in seconds (BIND's `DNS_RRL_MAX_WINDOW`).
pub const MAX_WINDOW: u32 = 3600;

/// The largest slip (BIND's `DNS_RRL_MAX_SLIP`).
pub const MAX_SLIP: u32 = 10;

/// The smallest table: one set.
pub const MIN_TABLE_SIZE: usize = WAYS;

/// The largest table per core: 16 Mi slots, 256 MiB.
pub const MAX_TABLE_SIZE: usize = 1 << 24;

/// Slots per set: 4 slots of 16 octets fill one 64-octet cache line.
const WAYS: usize = 4;

/// The size limit of a slip answer: header, question and OPT fit well
/// within 512.
const SLIP_SIZE: usize = 512;

/// TC in the third header octet.
const TC: u8 = 0x02;

//----------- RateLimitConfig ------------------------------------------------

/// The `rate-limit:` section, validated: the server-wide rates (each core
/// enforces its share, [`RateLimiter::new`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// NOERROR answers (with records, NODATA, referrals) per second for
    /// one prefix, name and type; 0: unlimited.
    pub responses_per_second: u32,
    /// NXDOMAIN answers per second for one prefix and zone; 0: unlimited.
    pub nxdomains_per_second: u32,
    /// Error answers (FORMERR, SERVFAIL, REFUSED, NOTIMP, ...) per second
    /// for one prefix; 0: unlimited.
    pub errors_per_second: u32,
    /// Seconds of history: the debt limit is `window * rate`, and a slot
    /// untouched for longer starts afresh. 1..=[`MAX_WINDOW`].
    pub window: u32,
    /// 0: drop every limited answer; N: send every Nth limited answer (the
    /// first of each N) as a truncated answer, drop the others.
    pub slip: u32,
    /// IPv4 clients are grouped by this prefix length (0..=32).
    pub ipv4_prefix_length: u8,
    /// IPv6 clients are grouped by this prefix length (0..=128).
    pub ipv6_prefix_length: u8,
    /// Clients never limited.
    pub exempt: Vec<Cidr>,
    /// Slots per core; rounded up to a power of two, at least
    /// [`MIN_TABLE_SIZE`], at most [`MAX_TABLE_SIZE`].
    pub table_size: usize,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            responses_per_second: DEFAULT_RATE,
            nxdomains_per_second: DEFAULT_RATE,
            errors_per_second: DEFAULT_RATE,
            window: DEFAULT_WINDOW,
            slip: DEFAULT_SLIP,
            ipv4_prefix_length: DEFAULT_IPV4_PREFIX,
            ipv6_prefix_length: DEFAULT_IPV6_PREFIX,
            exempt: Vec::new(),
            table_size: DEFAULT_TABLE_SIZE,
        }
    }
}

//----------- Category -------------------------------------------------------

/// The kinds of answers that are limited separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// NOERROR: answers with records, NODATA, referrals.
    Response = 0,
    /// NXDOMAIN.
    NxDomain = 1,
    /// Any other rcode.
    Error = 2,
}

impl Category {
    /// The category of an answer with the header rcode `rcode` (the low
    /// four bits of the fourth header octet).
    pub fn of_rcode(rcode: u8) -> Category {
        match u16::from(rcode & 0x0f) {
            code if code == Rcode::NOERROR.0 => Category::Response,
            code if code == Rcode::NXDOMAIN.0 => Category::NxDomain,
            _ => Category::Error,
        }
    }
}

//----------- Verdict --------------------------------------------------------

/// What to do with one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the limit: send the answer.
    Send,
    /// Limited: send nothing.
    Drop,
    /// Limited, but this one is sent truncated ([`write_slip`]).
    Slip,
}

//----------- RateLimiter ----------------------------------------------------

/// One core's rate limiter: its share of the rates and its table.
pub struct RateLimiter {
    /// Per-core rates by [`Category`].
    rates: [u32; 3],
    window: u32,
    slip: u32,
    ipv4_prefix: u8,
    ipv6_prefix: u8,
    exempt: Box<[Cidr]>,
    /// The keyed hash (foldhash under an OS-random key).
    hasher: KeyedHash,
    sets: Box<[Set]>,
    /// `sets.len() - 1` (a power of two less one).
    mask: usize,
}

/// One set of slots: a cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Set([Slot; WAYS]);

/// One key's account.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// High bits of the key's hash, with the lowest bit set; 0: empty.
    tag: u32,
    /// Answers left this second (negative: debt).
    balance: i32,
    /// The second of the last update.
    second: u32,
    /// Limited answers since the last slip, modulo `slip`.
    slips: u32,
}

impl RateLimiter {
    /// A limiter for one of `cores` cores: each rate becomes
    /// `ceil(rate / cores)` (at least 1; 0 stays unlimited), because
    /// SO_REUSEPORT spreads one client's queries over every core. The
    /// table is allocated here, once.
    pub fn new(config: &RateLimitConfig, cores: usize) -> RateLimiter {
        let cores = u32::try_from(cores.max(1)).unwrap_or(u32::MAX);
        let share = |rate: u32| {
            if rate == 0 {
                0
            } else {
                rate.min(MAX_RATE).div_ceil(cores).max(1)
            }
        };
        let slots = config
            .table_size
            .clamp(MIN_TABLE_SIZE, MAX_TABLE_SIZE)
            .next_power_of_two();
        let sets = slots / WAYS;
        RateLimiter {
            rates: [
                share(config.responses_per_second),
                share(config.nxdomains_per_second),
                share(config.errors_per_second),
            ],
            window: config.window.clamp(1, MAX_WINDOW),
            slip: config.slip,
            ipv4_prefix: config.ipv4_prefix_length.min(32),
            ipv6_prefix: config.ipv6_prefix_length.min(128),
            exempt: config.exempt.clone().into_boxed_slice(),
            hasher: KeyedHash::new(),
            sets: vec![Set::default(); sets].into_boxed_slice(),
            mask: sets - 1,
        }
    }

    /// This core's rate for `category` (0: unlimited).
    pub fn rate(&self, category: Category) -> u32 {
        self.rates[category as usize]
    }

    /// Whether `ip` is in the exempt list.
    pub fn is_exempt(&self, ip: IpAddr) -> bool {
        self.exempt.iter().any(|cidr| cidr.contains(ip))
    }

    /// The verdict for one answer of `category` to `ip` at `now` (seconds
    /// of any clock that counts up; it may wrap, and a step back is taken
    /// as no time passing). `name` is the lowercased wire-format name the
    /// answer is accounted under (the qname for [`Category::Response`],
    /// the zone's apex for [`Category::NxDomain`], empty for
    /// [`Category::Error`]) and `qtype` its type (0 where unused).
    /// Exempt clients are always [`Verdict::Send`].
    pub fn check(
        &mut self,
        ip: IpAddr,
        category: Category,
        name: &[u8],
        qtype: u16,
        now: u32,
    ) -> Verdict {
        if self.is_exempt(ip) {
            return Verdict::Send;
        }
        self.account(ip, category, name, qtype, now)
    }

    /// [`RateLimiter::check`] without the exempt list (for a caller that
    /// has checked it already). Cost: one keyed hash of the prefix and
    /// name, and one set of four slots.
    pub fn account(
        &mut self,
        ip: IpAddr,
        category: Category,
        name: &[u8],
        qtype: u16,
        now: u32,
    ) -> Verdict {
        let rate = self.rates[category as usize];
        if rate == 0 {
            return Verdict::Send;
        }
        let (family, prefix) = self.prefix(ip);
        let word = u64::from(family) << 32 | (category as u64) << 16 | u64::from(qtype);
        let hash = self.hasher.hash_prefixed(prefix, name, word);
        let tag = (hash >> 32) as u32 | 1;
        let set = &mut self.sets[hash as usize & self.mask];
        let rate = i64::from(rate);
        let window = self.window;
        let way = match set.0.iter().position(|slot| slot.tag == tag) {
            Some(way) => way,
            None => {
                // An empty slot, else the least recently updated one.
                let way = set
                    .0
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, slot)| match slot.tag {
                        0 => u64::MAX,
                        _ => u64::from(age(now, slot.second)),
                    })
                    .map_or(0, |(way, _)| way);
                set.0[way] = Slot {
                    tag,
                    balance: rate as i32,
                    second: now,
                    slips: 0,
                };
                way
            }
        };
        let slot = &mut set.0[way];
        let elapsed = age(now, slot.second);
        let mut balance = i64::from(slot.balance);
        if elapsed > window {
            balance = rate;
            slot.slips = 0;
        } else {
            balance = (balance + i64::from(elapsed) * rate).min(rate);
        }
        if elapsed > 0 {
            slot.second = now;
        }
        let floor = -(i64::from(window) * rate);
        balance = (balance - 1).max(floor);
        // In i32: |floor| <= MAX_WINDOW * MAX_RATE = 3.6 million.
        slot.balance = balance as i32;
        if balance >= 0 {
            return Verdict::Send;
        }
        if self.slip == 0 {
            return Verdict::Drop;
        }
        // As BIND: the first limited answer of every `slip` slips.
        let count = slot.slips;
        slot.slips = (count + 1) % self.slip;
        if count == 0 {
            Verdict::Slip
        } else {
            Verdict::Drop
        }
    }

    /// The address family and the client's prefix (an IPv4-mapped IPv6
    /// address counts as IPv4).
    fn prefix(&self, ip: IpAddr) -> (u8, u128) {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match ip {
            IpAddr::V4(v4) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.ipv4_prefix))
                    .unwrap_or(0);
                (4, u128::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.ipv6_prefix))
                    .unwrap_or(0);
                (6, u128::from(v6) & mask)
            }
        }
    }
}

/// Seconds from `then` to `now` on a wrapping clock; a step back (more
/// than half the range) counts as none.
fn age(now: u32, then: u32) -> u32 {
    let elapsed = now.wrapping_sub(then);
    if elapsed > i32::MAX as u32 {
        0
    } else {
        elapsed
    }
}

//----------- write_slip -----------------------------------------------------

/// Writes the truncated answer sent instead of a limited one into `out`
/// and returns its length: the ID from `query`; QR, opcode, AA, RD, RA,
/// CD and rcode from `answer_flags` (the real answer's header octets 2
/// and 3) with TC set; the query's question as received; no records; and,
/// if the query had a well-formed OPT, an OPT with `udp_size` and the
/// query's DO, without options. (A client that sent a cookie gets
/// `tern_authority::bad_cookie`'s BADCOOKIE answer instead, which carries
/// its cookie.) A query whose question cannot be read gets the header
/// alone. 0 if `out` cannot hold a header.
pub fn write_slip(
    query: &Query<'_>,
    answer_flags: [u8; 2],
    udp_size: u16,
    out: &mut [u8],
) -> usize {
    let Ok(mut builder) = MessageBuilder::new(out, SLIP_SIZE) else {
        return 0;
    };
    if let Some(id) = query.bytes().get(..2) {
        builder.set_id(u16::from_be_bytes([id[0], id[1]]));
    }
    let header = builder.header_mut();
    header[2] = answer_flags[0] | TC;
    header[3] = answer_flags[1];
    let Ok(view) = query.message() else {
        return builder.finish();
    };
    if let Some(question) = view.question() {
        if builder.push_question_bytes(question.bytes).is_err() {
            return builder.finish();
        }
    }
    if let Ok(Some(edns)) = query.edns() {
        // An OPT of 11 octets always fits after a question (at most 259).
        let _ = builder.push_opt(udp_size, Rcode::NOERROR, edns.dnssec_ok, &[]);
    }
    debug_assert!(builder.len() >= HEADER_LEN);
    builder.finish()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use tern_wire::parse::MessageView;

    const NAME: &[u8] = b"\x03www\x07example\x03com\x00";

    fn limiter(rate: u32, window: u32, slip: u32) -> RateLimiter {
        RateLimiter::new(
            &RateLimitConfig {
                responses_per_second: rate,
                nxdomains_per_second: rate,
                errors_per_second: rate,
                window,
                slip,
                ..RateLimitConfig::default()
            },
            1,
        )
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The verdicts of `count` answers to `client` at second `now`.
    fn run(
        limiter: &mut RateLimiter,
        client: &str,
        category: Category,
        count: usize,
        now: u32,
    ) -> Vec<Verdict> {
        (0..count)
            .map(|_| limiter.check(ip(client), category, NAME, 1, now))
            .collect()
    }

    fn sent(verdicts: &[Verdict]) -> usize {
        verdicts.iter().filter(|v| **v == Verdict::Send).count()
    }

    #[test]
    fn refill_is_capped_at_the_rate() {
        let mut rrl = limiter(5, 15, 0);
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 5, 100)),
            5
        );
        // A quiet second refills 5, not more: 5 answers, then limited.
        let verdicts = run(&mut rrl, "192.0.2.1", Category::Response, 8, 101);
        assert_eq!(sent(&verdicts), 5);
        assert!(verdicts[5..].iter().all(|v| *v == Verdict::Drop));
        // Ten quiet seconds are still worth only 5 (balance -3 + 50 capped).
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 9, 111)),
            5
        );
    }

    #[test]
    fn a_flood_stays_limited_until_its_debt_is_paid() {
        let mut rrl = limiter(10, 15, 0);
        // 100 answers in one second: 10 sent, debt 90.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 100, 0)),
            10
        );
        // Eight seconds later the balance is -90 + 80 = -10: still limited.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 1, 8)),
            0
        );
        // That answer cost 1 more (-11); two more seconds: +20 = 9.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 1, 10)),
            1
        );
        // The debt never goes below -window*rate = -150: a huge flood is
        // paid back within the window, and a slot idle for longer than the
        // window starts afresh.
        let mut rrl = limiter(10, 15, 0);
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 10_000, 0)),
            10
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 1, 14)),
            0
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 1, 31)),
            1
        );
        let mut rrl = limiter(10, 3, 0);
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 10_000, 0)),
            10
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 10, 4)),
            10
        );
    }

    #[test]
    fn every_nth_limited_answer_slips() {
        use Verdict::{Drop, Send, Slip};
        for (slip, expected) in [
            (0, [Drop, Drop, Drop, Drop, Drop, Drop]),
            (1, [Slip, Slip, Slip, Slip, Slip, Slip]),
            (2, [Slip, Drop, Slip, Drop, Slip, Drop]),
            (3, [Slip, Drop, Drop, Slip, Drop, Drop]),
        ] {
            let mut rrl = limiter(2, 15, slip);
            let verdicts = run(&mut rrl, "192.0.2.1", Category::Response, 8, 7);
            assert_eq!(verdicts[..2], [Send, Send], "slip {slip}");
            assert_eq!(verdicts[2..], expected, "slip {slip}");
        }
    }

    #[test]
    fn categories_have_their_own_limits_and_keys() {
        let mut rrl = RateLimiter::new(
            &RateLimitConfig {
                responses_per_second: 3,
                nxdomains_per_second: 2,
                errors_per_second: 0,
                slip: 0,
                ..RateLimitConfig::default()
            },
            1,
        );
        let client = ip("192.0.2.1");
        assert_eq!(rrl.rate(Category::NxDomain), 2);
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 10, 0)),
            3
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::NxDomain, 10, 0)),
            2
        );
        // Errors: 0 is unlimited.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Error, 100, 0)),
            100
        );
        // Another name or type is another account.
        assert_eq!(
            rrl.check(client, Category::Response, b"\x01x\x00", 1, 0),
            Verdict::Send
        );
        assert_eq!(
            rrl.check(client, Category::Response, NAME, 28, 0),
            Verdict::Send
        );
        assert_eq!(
            rrl.check(client, Category::Response, NAME, 1, 0),
            Verdict::Drop
        );
    }

    #[test]
    fn clients_are_grouped_by_prefix() {
        let mut rrl = limiter(2, 15, 0);
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 1, 0)),
            1
        );
        // The same /24 shares the account, an IPv4-mapped address too.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.200", Category::Response, 3, 0)),
            1
        );
        assert_eq!(
            sent(&run(&mut rrl, "::ffff:192.0.2.9", Category::Response, 1, 0)),
            0
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.3.1", Category::Response, 3, 0)),
            2
        );
        // IPv6: /56.
        assert_eq!(
            sent(&run(&mut rrl, "2001:db8:0:1::1", Category::Response, 1, 0)),
            1
        );
        assert_eq!(
            sent(&run(&mut rrl, "2001:db8:0:ff::2", Category::Response, 3, 0)),
            1
        );
        assert_eq!(
            sent(&run(
                &mut rrl,
                "2001:db8:0:100::1",
                Category::Response,
                3,
                0
            )),
            2
        );
        // Other prefix lengths.
        let mut rrl = RateLimiter::new(
            &RateLimitConfig {
                responses_per_second: 1,
                ipv4_prefix_length: 32,
                ipv6_prefix_length: 0,
                slip: 0,
                ..RateLimitConfig::default()
            },
            1,
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 2, 0)),
            1
        );
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.2", Category::Response, 2, 0)),
            1
        );
        assert_eq!(
            sent(&run(&mut rrl, "2001:db8::1", Category::Response, 2, 0)),
            1
        );
        assert_eq!(
            sent(&run(&mut rrl, "2001:db9::1", Category::Response, 2, 0)),
            0
        );
    }

    #[test]
    fn exempt_clients_are_never_limited() {
        let mut rrl = RateLimiter::new(
            &RateLimitConfig {
                responses_per_second: 1,
                errors_per_second: 1,
                exempt: vec![
                    Cidr::parse("127.0.0.0/8").unwrap(),
                    Cidr::parse("::1").unwrap(),
                ],
                ..RateLimitConfig::default()
            },
            1,
        );
        assert!(rrl.is_exempt(ip("127.9.9.9")));
        assert!(!rrl.is_exempt(ip("128.0.0.1")));
        assert_eq!(
            sent(&run(&mut rrl, "127.0.0.1", Category::Response, 50, 0)),
            50
        );
        assert_eq!(sent(&run(&mut rrl, "::1", Category::Error, 50, 0)), 50);
        assert_eq!(sent(&run(&mut rrl, "::2", Category::Error, 50, 0)), 1);
    }

    #[test]
    fn per_core_share_rounds_up() {
        let config = RateLimitConfig {
            responses_per_second: 5,
            nxdomains_per_second: 1,
            errors_per_second: 0,
            ..RateLimitConfig::default()
        };
        let rrl = RateLimiter::new(&config, 2);
        assert_eq!(rrl.rate(Category::Response), 3);
        assert_eq!(rrl.rate(Category::NxDomain), 1);
        assert_eq!(rrl.rate(Category::Error), 0);
        assert_eq!(RateLimiter::new(&config, 0).rate(Category::Response), 5);
    }

    #[test]
    fn a_full_set_gives_its_oldest_slot_away() {
        // One set of four slots: every key lands in it.
        let mut rrl = RateLimiter::new(
            &RateLimitConfig {
                responses_per_second: 1,
                table_size: 1,
                slip: 0,
                ..RateLimitConfig::default()
            },
            1,
        );
        assert_eq!(rrl.sets.len(), 1);
        let client = ip("192.0.2.1");
        let names: [&[u8]; 5] = [
            b"\x01a\x00",
            b"\x01b\x00",
            b"\x01c\x00",
            b"\x01d\x00",
            b"\x01e\x00",
        ];
        for (second, name) in names[..4].iter().enumerate() {
            let now = second as u32;
            assert_eq!(
                rrl.check(client, Category::Response, name, 1, now),
                Verdict::Send
            );
            assert_eq!(
                rrl.check(client, Category::Response, name, 1, now),
                Verdict::Drop
            );
        }
        // "a" (second 0) is the oldest; "e" takes its slot...
        assert_eq!(
            rrl.check(client, Category::Response, names[4], 1, 3),
            Verdict::Send
        );
        assert_eq!(
            rrl.check(client, Category::Response, names[4], 1, 3),
            Verdict::Drop
        );
        // ...so "a" starts afresh (its debt was forgotten), and takes the
        // slot of "b", the oldest now; "d" kept its account.
        assert_eq!(
            rrl.check(client, Category::Response, names[0], 1, 3),
            Verdict::Send
        );
        assert_eq!(
            rrl.check(client, Category::Response, names[3], 1, 3),
            Verdict::Drop
        );
    }

    #[test]
    fn the_clock_may_step_back_or_wrap() {
        let mut rrl = limiter(2, 15, 0);
        let start = u32::MAX - 10;
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 5, start)),
            2
        );
        // Back in time: no refill, no panic.
        assert_eq!(
            sent(&run(
                &mut rrl,
                "192.0.2.1",
                Category::Response,
                2,
                start - 100
            )),
            0
        );
        // Forward across the wrap: u32::MAX - 10 to 3 is 14 seconds.
        assert_eq!(
            sent(&run(&mut rrl, "192.0.2.1", Category::Response, 5, 3)),
            2
        );
        // A jump of more than half the range reads as a step back.
        assert_eq!(
            sent(&run(
                &mut rrl,
                "192.0.2.1",
                Category::Response,
                1,
                3 + (1 << 31)
            )),
            0
        );
    }

    #[test]
    fn slips_keep_header_question_and_opt() {
        // ID 0xbeef, RD; www.example.com A; OPT 4096 with DO.
        let mut query = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
        query.extend_from_slice(b"\x03WwW\x07example\x03com\x00\x00\x01\x00\x01");
        query.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
        let mut out = [0u8; 1232];
        // The real answer's flags: QR AA RD; RA, NXDOMAIN.
        let len = write_slip(&Query::parse(&query), [0x85, 0x83], 1232, &mut out);
        let view = MessageView::parse(&out[..len]).unwrap();
        let header = view.header();
        assert_eq!(header.id(), 0xbeef);
        assert!(header.qr() && header.tc() && header.rd() && header.aa() && header.ra());
        assert_eq!(header.rcode_bits(), 3);
        assert_eq!(header.counts(), [1, 0, 0, 1]);
        assert_eq!(
            view.question().unwrap().name.as_bytes(),
            b"\x03WwW\x07example\x03com\x00"
        );
        let edns = view.edns().unwrap().unwrap();
        assert_eq!(edns.udp_size, 1232);
        assert!(edns.dnssec_ok);
        assert!(edns.options.is_empty());
        // Without EDNS: no OPT; an unreadable query: the header alone.
        let plain = &query[..query.len() - 11];
        let mut plain = plain.to_vec();
        plain[11] = 0;
        let len = write_slip(&Query::parse(&plain), [0x84, 0x00], 1232, &mut out);
        let view = MessageView::parse(&out[..len]).unwrap();
        assert_eq!(view.header().counts(), [1, 0, 0, 0]);
        assert!(view.header().tc());
        let len = write_slip(
            &Query::parse(&[0xab, 0xcd, 0xff]),
            [0x80, 0x01],
            1232,
            &mut out,
        );
        assert_eq!(len, HEADER_LEN);
        assert_eq!(&out[..4], &[0xab, 0xcd, 0x82, 0x01]);
        assert_eq!(
            write_slip(&Query::parse(&query), [0x80, 0], 1232, &mut out[..4]),
            0
        );
        // The longest question still leaves room for the OPT.
        let mut long = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
        for _ in 0..4 {
            long.push(62);
            long.extend_from_slice(&[b'a'; 62]);
        }
        long.extend_from_slice(&[1, b'b', 0, 0, 1, 0, 1]);
        long.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
        let len = write_slip(&Query::parse(&long), [0x80, 0], 1232, &mut out);
        assert!(len <= SLIP_SIZE);
        let view = MessageView::parse(&out[..len]).unwrap();
        assert_eq!(view.header().counts(), [1, 0, 0, 1]);
    }

    #[test]
    fn categories_from_rcodes() {
        assert_eq!(Category::of_rcode(0), Category::Response);
        assert_eq!(Category::of_rcode(3), Category::NxDomain);
        assert_eq!(Category::of_rcode(0x83), Category::NxDomain);
        for rcode in [1, 2, 4, 5, 9, 15] {
            assert_eq!(Category::of_rcode(rcode), Category::Error);
        }
    }
}
