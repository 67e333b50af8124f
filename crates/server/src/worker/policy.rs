//! The policy stage: DNS cookies (docs/decisions/0006) and response rate
//! limiting (docs/decisions/0007) applied to an answer once it is written.

use std::net::IpAddr;

use tern_authority::cookie::{self, CookieCheck};
use tern_authority::{append_options, bad_cookie, respond_to, Response, Transport};

use tern_wire::name::Name;
use tern_wire::parse::HEADER_LEN;
use tern_wire::query::Query;
use tern_wire::types::RType;

use super::answering::{Answering, Peer};
use super::request::UdpAnswer;
use crate::rrl::{write_slip, Category, RateLimiter, Verdict};
use crate::stats::Counters;

impl Answering<'_> {
    /// The cookie check of a query whose OPT has `options`, from `peer`:
    /// [`CookieCheck::None`] when cookies are off, there are no options or
    /// the peer is unknown.
    pub(super) fn cookie(&self, options: &[u8], peer: &Peer<'_>) -> CookieCheck {
        let Some(cookies) = self.cookies.filter(|_| !options.is_empty()) else {
            return CookieCheck::None;
        };
        match peer.get() {
            Some(peer) => cookie::check_options(options, &cookies.secret, peer.ip(), cookies.now()),
            None => CookieCheck::None,
        }
    }

    /// [`Answering::cookie`] for a query that did not go through
    /// [`Request`]: the options of its OPT, if it has a readable one.
    pub(super) fn cookie_of(&self, query: &Query<'_>, peer: &Peer<'_>) -> CookieCheck {
        if self.cookies.is_none() {
            return CookieCheck::None;
        }
        self.cookie(query.edns_options(), peer)
    }

    /// Adds our NSID (if `nsid`, the query asked, and one is configured)
    /// and the COOKIE option of `check`, if any, to a UDP answer for one
    /// of our zones written into `out` without them (from the cache or by
    /// `respond` with the NSID-free options): appended to its OPT, or,
    /// where that would not fit within `limit` (or the OPT has options of
    /// ours), the answer written again by `respond_with`, which keeps room
    /// for them (and adds the NSID itself).
    pub(super) fn with_options(
        &self,
        nsid: bool,
        check: &CookieCheck,
        query: &Query<'_>,
        limit: usize,
        answer: UdpAnswer,
        out: &mut [u8],
    ) -> UdpAnswer {
        let UdpAnswer::Send(len) = answer else {
            return answer;
        };
        let nsid = match &self.options.nsid {
            Some(option) if nsid => option.as_option(),
            _ => &[],
        };
        let cookie = check
            .reply_option()
            .map_or(&[][..], |option| option.as_bytes());
        if nsid.is_empty() && cookie.is_empty() {
            return answer;
        }
        match append_options(out, len, limit, &[nsid, cookie]) {
            Some(len) => UdpAnswer::Send(len),
            None => respond_to(
                self.catalog,
                query,
                Transport::Udp,
                self.options,
                cookie,
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
    pub(super) fn limit(
        &self,
        limiter: &mut RateLimiter,
        counters: &mut Counters,
        (query, check): (&Query<'_>, &CookieCheck),
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

    /// [`Answering::limit`] for a query the cache path did not take
    /// (another class or opcode, a malformed or EDNS-version error): its
    /// question, if it has one, is lowercased here.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn limit_unparsed(
        &self,
        limiter: &mut RateLimiter,
        counters: &mut Counters,
        query: &Query<'_>,
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
        let question = query
            .question()
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
