//! Who may send a NOTIFY (RFC 1996) for a secondary zone: what the cores
//! check an incoming NOTIFY against, kept up to date by the zones' owner
//! as catalog members come and go. Shared here, by the two crates that
//! use it, so that neither knows the other.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use crate::tsig::Key;

/// Where NOTIFYs for one secondary zone may come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifySource {
    /// The zone's primaries: a NOTIFY from another address is REFUSED.
    pub primaries: Vec<SocketAddr>,
    /// The key a NOTIFY must be signed with, if any.
    pub key: Option<Key>,
}

/// The secondary zones whose NOTIFYs the cores take, by lowercased wire
/// origin: a NOTIFY looks its zone up, whatever the number of zones.
pub type NotifyZones = Arc<RwLock<HashMap<Box<[u8]>, NotifySource>>>;
