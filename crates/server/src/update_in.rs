//! What the cores and whoever applies updates share (`crate::update`):
//! [`UpdateIn`], the request handed off, and the reply's sending end.

use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex};

use tern_wire::name::LowerNameBuf;
use tern_wire::types::Rcode;

//----------- UpdateIn -------------------------------------------------------

/// Whether a zone (lowercased wire origin) takes updates.
pub type Takes = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Dynamic updates taken for primary zones: which zones take them, and
/// where a checked UPDATE goes.
#[derive(Clone)]
pub struct UpdateIn {
    /// Whether the zone (lowercased wire origin) has `update:` rules.
    pub takes: Takes,
    /// Hands a request on (a channel send: called on the core). Its reply
    /// must be sent once, from any thread.
    pub submit: Arc<dyn Fn(UpdateRequest) + Send + Sync>,
}

impl std::fmt::Debug for UpdateIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateIn").finish_non_exhaustive()
    }
}

/// One UPDATE, checked by a core.
#[derive(Debug)]
pub struct UpdateRequest {
    /// The zone, lowercased.
    pub origin: LowerNameBuf,
    /// The whole message.
    pub message: Vec<u8>,
    /// The TSIG key that signed it (verified), lowercased.
    pub key: Option<LowerNameBuf>,
    /// The client.
    pub client: SocketAddr,
    /// Where the RCODE goes.
    pub reply: UpdateReply,
}

//----------- UpdateReply ----------------------------------------------------

/// The owner's end of one request's oneshot: send the RCODE once. Dropped
/// unsent, it answers SERVFAIL.
#[derive(Debug)]
pub struct UpdateReply {
    pub(crate) sink: Arc<Sink>,
    pub(crate) id: u64,
    pub(crate) sent: bool,
}

/// A core's list of completed replies and its wake-up end.
#[derive(Debug)]
pub(crate) struct Sink {
    pub(crate) done: Mutex<Vec<(u64, Rcode)>>,
    pub(crate) wake: UnixDatagram,
}

impl UpdateReply {
    /// Completes the request with `rcode` (from any thread).
    pub fn send(mut self, rcode: Rcode) {
        self.complete(rcode);
    }

    fn complete(&mut self, rcode: Rcode) {
        if self.sent {
            return;
        }
        self.sent = true;
        self.sink
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.id, rcode));
        // A full socket means a wake-up is pending: the list is read then.
        let _ = self.sink.wake.send(&[1]);
    }
}

impl Drop for UpdateReply {
    fn drop(&mut self) {
        self.complete(Rcode::SERVFAIL);
    }
}
