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

/// How a request was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answered {
    /// The core writes (and signs) the answer with this RCODE.
    Rcode(Rcode),
    /// Another server's whole answer, relayed as it is (a secondary
    /// zone's UPDATE forwarded to its primary).
    Relayed(Vec<u8>),
}

/// A core's list of completed replies and its wake-up end.
#[derive(Debug)]
pub(crate) struct Sink {
    pub(crate) done: Mutex<Vec<(u64, Answered)>>,
    pub(crate) wake: UnixDatagram,
}

impl UpdateReply {
    /// Completes the request with `rcode` (from any thread).
    pub fn send(mut self, rcode: Rcode) {
        self.complete(Answered::Rcode(rcode));
    }

    /// Completes the request with `answer`, a whole DNS message sent to
    /// the client as it is (the primary's answer to a forwarded UPDATE,
    /// the client's ID already in it).
    pub fn relay(mut self, answer: Vec<u8>) {
        self.complete(Answered::Relayed(answer));
    }

    fn complete(&mut self, answer: Answered) {
        if self.sent {
            return;
        }
        self.sent = true;
        self.sink
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.id, answer));
        // A full socket means a wake-up is pending: the list is read then.
        let _ = self.sink.wake.send(&[1]);
    }
}

impl Drop for UpdateReply {
    fn drop(&mut self) {
        self.complete(Answered::Rcode(Rcode::SERVFAIL));
    }
}
