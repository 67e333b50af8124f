//! The answering stages' shared inputs: [`Answering`], the worker's
//! read-only parts every stage reads, with the cookie state ([`Cookies`])
//! and the lazily read client address ([`Peer`]) it lends them. A module
//! of its own so that the stages (`answer`, `policy`, `signed`, `notify`)
//! each import it and none imports another's types.

use std::cell::Cell;
use std::net::SocketAddr;

use tern_authority::cookie::CookieSecret;
use tern_authority::{Catalog, Options};
use tern_wire::parse::MessageView;
use tern_wire::query::Query;
use tern_wire::types::Opcode;

//----------- Answering ------------------------------------------------------

/// The worker's read-only answering inputs, borrowed apart from its
/// mutable parts (cache, counters) and its arena.
pub(super) struct Answering<'w> {
    pub(super) catalog: &'w Catalog,
    pub(super) options: &'w Options,
    /// `options` without the NSID: answers to be cached are written with
    /// these, and the NSID appended to a copy (as the COOKIE is).
    pub(super) fill_options: &'w Options,
    pub(super) full_udp_size: usize,
    pub(super) cookies: Option<&'w Cookies>,
    pub(super) transfer: &'w crate::TransferConfig,
    pub(super) xfr_out: &'w crate::xfr_out::XfrOutCounters,
    pub(super) notify: Option<&'w crate::NotifyIn>,
    /// UPDATE for primary zones, when any has `update:` rules.
    pub(super) update: Option<&'w super::pending::UpdateStage>,
}

//----------- Cookies --------------------------------------------------------

/// A worker's DNS cookie state: the secret (the same on every core) and
/// the wall clock in Unix seconds, read at most once per UDP batch and per
/// TCP message, by the first query there that carries an option
/// ([`Worker::tick_cookie_clock`] marks it stale), never per query.
pub(super) struct Cookies {
    pub(super) secret: CookieSecret,
    /// The clock's last reading.
    pub(super) now: Cell<u32>,
    /// Whether `now` must be read again before use.
    pub(super) stale: Cell<bool>,
}

impl Cookies {
    /// The wall clock, read if stale.
    pub(super) fn now(&self) -> u32 {
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
pub(super) struct Peer<'p> {
    pub(super) read: &'p dyn Fn() -> Option<SocketAddr>,
    pub(super) value: Cell<Option<Option<SocketAddr>>>,
}

impl<'p> Peer<'p> {
    pub(super) fn new(read: &'p dyn Fn() -> Option<SocketAddr>) -> Self {
        Peer {
            read,
            value: Cell::new(None),
        }
    }

    /// The address, read now if not yet.
    pub(super) fn get(&self) -> Option<SocketAddr> {
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
pub(super) fn unix_seconds() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as u32)
}

/// `query`'s message if it is a request (QR clear) with `opcode`, as
/// NOTIFY and UPDATE are taken: the header's third octet looked at first,
/// so that a query of another opcode costs one comparison.
pub(super) fn request_of<'q, 'a>(
    query: &'q Query<'a>,
    opcode: Opcode,
) -> Option<&'q MessageView<'a>> {
    // QR clear and the opcode: the top five bits of the third octet.
    if query
        .bytes()
        .get(2)
        .is_none_or(|&flags| flags & 0xf8 != opcode.0 << 3)
    {
        return None;
    }
    let view = query.message().ok()?;
    let header = view.header();
    (header.opcode() == opcode && !header.qr()).then_some(view)
}
