//! What happens to a zone, as its producers report it to the owner
//! (docs/decisions/0013): every new version and every fact about a zone
//! reaches [`crate::owner::Zones::apply`] as one [`Event`].

use std::net::SocketAddr;
use std::sync::Arc;

use tern_authority::Zone;
use tern_wire::name::LowerNameBuf;

use crate::load::{Origin, Stamp};

//----------- Timers ---------------------------------------------------------

/// A secondary zone's timers, in seconds since the epoch (0: never). Saved
/// with the zone, so that a restart keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    /// The last successful refresh (a transfer or a SOA not newer).
    pub last_refresh: u64,
    /// When the next refresh is due.
    pub next_refresh: u64,
    /// When the zone expires unless refreshed (0: no zone yet).
    pub expires: u64,
    /// When the last transfer completed.
    pub last_transfer: u64,
}

//----------- Event ----------------------------------------------------------

/// One thing that happened to one or more zones; the owner commits it for
/// the zones it names, and only them.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// From the loader (a start, SIGHUP, `tern reload [ZONE]`): new versions
    /// of zones loaded from files, each with what it was loaded from, and
    /// the zones loaded before that the configuration no longer names.
    Loaded {
        /// The zones built, new or changed.
        zones: Vec<(Arc<Zone>, Stamp)>,
        /// The zones no longer configured.
        unloaded: Vec<Origin>,
    },
    /// From the refresh thread: a transfer brought a new version.
    Received {
        /// The zone.
        zone: Arc<Zone>,
        /// Its timers now.
        timers: Timers,
        /// It came as IXFR differences.
        incremental: bool,
        /// The primary it came from.
        primary: SocketAddr,
    },
    /// From the refresh thread: a refresh found the zone current, or a
    /// refresh failed; the timers changed, the zone did not.
    Refreshed {
        /// The zone's origin.
        origin: LowerNameBuf,
        /// Its timers now.
        timers: Timers,
        /// Why the refresh failed, if it did.
        failure: Option<String>,
    },
    /// From the refresh thread: the zone was not refreshed within its
    /// SOA's EXPIRE.
    Expired {
        /// The zone's origin.
        origin: LowerNameBuf,
    },
    /// From the control socket (`tern notify ZONE`): NOTIFY the serial
    /// served now to the zone's secondaries.
    NotifyAsked {
        /// The zone's origin.
        origin: LowerNameBuf,
    },
}
