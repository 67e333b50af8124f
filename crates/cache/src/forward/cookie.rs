//! DNS cookies toward upstreams (RFC 7873 sections 5.1 and 5.3), the
//! client's side: each upstream gets a client cookie of its own, drawn from
//! the CSPRNG, on every query; once an upstream has returned a server
//! cookie, it is sent back, and an answer from that upstream is accepted
//! only if it echoes our client cookie and carries a server cookie. An
//! off-path forger sees neither, so even a forger who guesses ID, port and
//! case is refused by an upstream that speaks cookies.

use tern_wire::edns::OPTION_COOKIE as COOKIE;
use tern_wire::parse::MessageView;

/// The client cookie's length (RFC 7873 section 4.1).
pub(crate) const CLIENT_COOKIE_LEN: usize = 8;

/// The shortest and longest server cookie (RFC 7873 section 4.2).
const SERVER_COOKIE_MIN: usize = 8;
const SERVER_COOKIE_MAX: usize = 32;

/// The longest COOKIE option we send: its header, the client cookie and
/// the longest server cookie.
pub(crate) const MAX_OPTION_LEN: usize = 4 + CLIENT_COOKIE_LEN + SERVER_COOKIE_MAX;

/// The extended rcode BADCOOKIE (RFC 7873 section 8).
pub(crate) const BADCOOKIE: u16 = 23;

/// What an answer's COOKIE option says, for [`UpstreamCookie::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CookieCheck {
    /// Acceptable (and the upstream's server cookie is stored, if it sent
    /// one).
    Good,
    /// BADCOOKIE with our client cookie and a fresh server cookie, now
    /// stored: ask again with it.
    Retry,
    /// Refused: the reason.
    Bad(&'static str),
}

/// One upstream's cookies on one core.
#[derive(Clone, Debug)]
pub(crate) struct UpstreamCookie {
    client: [u8; CLIENT_COOKIE_LEN],
    server: [u8; SERVER_COOKIE_MAX],
    /// The server cookie's length; 0 until the upstream has sent one.
    server_len: usize,
}

impl UpstreamCookie {
    /// A fresh client cookie from `random` (a CSPRNG), no server cookie.
    pub(crate) fn new(random: u64) -> Self {
        UpstreamCookie {
            client: random.to_be_bytes(),
            server: [0; SERVER_COOKIE_MAX],
            server_len: 0,
        }
    }

    /// Whether the upstream has returned a server cookie.
    pub(crate) fn speaks_cookies(&self) -> bool {
        self.server_len > 0
    }

    /// Appends the COOKIE option to `query`, whose last record is an OPT
    /// with no options, and raises that OPT's RDLENGTH.
    pub(crate) fn append_to(&self, query: &mut Vec<u8>) {
        let value_len = CLIENT_COOKIE_LEN + self.server_len;
        let rdlength_at = query.len() - 2;
        query.extend_from_slice(&COOKIE.to_be_bytes());
        query.extend_from_slice(&(value_len as u16).to_be_bytes());
        query.extend_from_slice(&self.client);
        query.extend_from_slice(&self.server[..self.server_len]);
        let option_len = (4 + value_len) as u16;
        query[rdlength_at..rdlength_at + 2].copy_from_slice(&option_len.to_be_bytes());
    }

    /// Checks an upstream answer's cookie and learns its server cookie.
    pub(crate) fn check(&mut self, answer: &[u8]) -> CookieCheck {
        let Ok(view) = MessageView::parse(answer) else {
            return CookieCheck::Bad("malformed");
        };
        let Ok(edns) = view.edns() else {
            return CookieCheck::Bad("malformed OPT");
        };
        let mut cookie = None;
        let mut rcode = u16::from(view.header().rcode_bits());
        if let Some(edns) = edns {
            rcode |= u16::from(edns.extended_rcode) << 4;
            for option in edns.options() {
                let Ok((code, value)) = option else {
                    return CookieCheck::Bad("malformed OPT");
                };
                if code == COOKIE {
                    if cookie.is_some() {
                        return CookieCheck::Bad("two COOKIE options");
                    }
                    cookie = Some(value);
                }
            }
        }
        let Some(cookie) = cookie else {
            return if self.speaks_cookies() {
                CookieCheck::Bad("no cookie from an upstream that sent one before")
            } else {
                CookieCheck::Good
            };
        };
        if cookie.len() < CLIENT_COOKIE_LEN || cookie[..CLIENT_COOKIE_LEN] != self.client {
            return CookieCheck::Bad("not our client cookie");
        }
        let server = &cookie[CLIENT_COOKIE_LEN..];
        if server.is_empty() {
            return if self.speaks_cookies() {
                CookieCheck::Bad("no server cookie from an upstream that sent one before")
            } else {
                CookieCheck::Good
            };
        }
        if !(SERVER_COOKIE_MIN..=SERVER_COOKIE_MAX).contains(&server.len()) {
            return CookieCheck::Bad("malformed server cookie");
        }
        self.server[..server.len()].copy_from_slice(server);
        self.server_len = server.len();
        if rcode == BADCOOKIE {
            CookieCheck::Retry
        } else {
            CookieCheck::Good
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response header, a root question, and an OPT carrying `options`
    /// with extended rcode bits `extended`.
    fn answer(rcode: u8, extended: u8, options: &[u8]) -> Vec<u8> {
        let mut a = vec![0, 1, 0x81, 0x80 | rcode, 0, 1, 0, 0, 0, 0, 0, 1];
        a.extend_from_slice(&[0, 0, 1, 0, 1]);
        a.extend_from_slice(&[0, 0, 41, 4, 0xd0, extended, 0, 0, 0]);
        a.extend_from_slice(&(options.len() as u16).to_be_bytes());
        a.extend_from_slice(options);
        a
    }

    fn cookie_option(value: &[u8]) -> Vec<u8> {
        let mut o = COOKIE.to_be_bytes().to_vec();
        o.extend_from_slice(&(value.len() as u16).to_be_bytes());
        o.extend_from_slice(value);
        o
    }

    #[test]
    fn learns_the_server_cookie_then_requires_it() {
        let mut cookie = UpstreamCookie::new(0x0102_0304_0506_0708);
        let client = [1, 2, 3, 4, 5, 6, 7, 8];
        // No cookie from an upstream that never sent one: accepted.
        assert_eq!(cookie.check(&answer(0, 0, &[])), CookieCheck::Good);
        // Our query carries the client cookie alone.
        let mut query = answer(0, 0, &[]);
        cookie.append_to(&mut query);
        let view = MessageView::parse(&query).unwrap();
        let edns = view.edns().unwrap().unwrap();
        let options: Vec<_> = edns.options().map(Result::unwrap).collect();
        assert_eq!(options, vec![(COOKIE, &client[..])]);

        // Another client cookie: refused, nothing learnt.
        let mut wrong = client;
        wrong[0] ^= 1;
        let forged = [&wrong[..], &[9; 8]].concat();
        assert!(matches!(
            cookie.check(&answer(0, 0, &cookie_option(&forged))),
            CookieCheck::Bad(_)
        ));
        assert!(!cookie.speaks_cookies());

        // Ours with a server cookie: learnt, and sent from now on.
        let good = [&client[..], &[9; 16]].concat();
        assert_eq!(
            cookie.check(&answer(0, 0, &cookie_option(&good))),
            CookieCheck::Good
        );
        assert!(cookie.speaks_cookies());
        let mut query = answer(0, 0, &[]);
        cookie.append_to(&mut query);
        let view = MessageView::parse(&query).unwrap();
        let edns = view.edns().unwrap().unwrap();
        let options: Vec<_> = edns.options().map(Result::unwrap).collect();
        assert_eq!(options, vec![(COOKIE, &good[..])]);

        // From now on an answer without a cookie, with our client cookie
        // alone, or with a malformed server cookie is refused.
        for options in [
            Vec::new(),
            cookie_option(&client),
            cookie_option(&[&client[..], &[9; 5]].concat()),
            cookie_option(&[&client[..], &[9; 33]].concat()),
            [cookie_option(&good), cookie_option(&good)].concat(),
        ] {
            assert!(
                matches!(cookie.check(&answer(0, 0, &options)), CookieCheck::Bad(_)),
                "{options:?}"
            );
        }
        // BADCOOKIE (23: rcode 7, extended 1) with a new server cookie:
        // learnt, ask again.
        let fresh = [&client[..], &[7; 8]].concat();
        assert_eq!(
            cookie.check(&answer(7, 1, &cookie_option(&fresh))),
            CookieCheck::Retry
        );
        let mut query = answer(0, 0, &[]);
        cookie.append_to(&mut query);
        assert!(query.ends_with(&fresh));
    }
}
