//! What the UPDATE stage (`update.rs`) leaves for the transport: the
//! checked request ([`PendingUpdate`]) and the worker's slot for it
//! ([`UpdateStage`]). A module of its own so that `answering` can hold the
//! stage without importing the stage's code.

use std::net::SocketAddr;

use tern_wire::name::LowerNameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::Rcode;
use tern_xfr::tsig::Session;

use crate::signing::{error_answer, unix_time};

//----------- PendingUpdate --------------------------------------------------

/// An UPDATE checked by the core, to be handed off by the transport that
/// read it (`Worker::take_update`).
#[derive(Debug)]
pub struct PendingUpdate {
    /// The zone, lowercased.
    pub(crate) origin: LowerNameBuf,
    /// The whole request (the answer echoes its head).
    pub(crate) message: Vec<u8>,
    /// The verified key's name.
    pub(crate) key: Option<LowerNameBuf>,
    /// The client (the one a PROXY header named, if any).
    pub(crate) client: SocketAddr,
    /// Signs the answer, when the request was signed.
    pub(super) session: Option<Session>,
}

impl PendingUpdate {
    /// The answer with `rcode` into `out`, signed if the request was; its
    /// length (`None` if `out` cannot hold it).
    pub(crate) fn answer(&mut self, rcode: Rcode, out: &mut [u8]) -> Option<usize> {
        let view = MessageView::parse(&self.message).ok()?;
        let len = error_answer(&view, rcode, out)?;
        match &mut self.session {
            Some(session) => Some(session.sign(out, len, unix_time()).unwrap_or(len)),
            None => Some(len),
        }
    }
}

//----------- UpdateStage ----------------------------------------------------

/// A worker's updates: where they go, and the one just checked, until the
/// transport takes it.
#[derive(Debug)]
pub(crate) struct UpdateStage {
    pub(crate) config: crate::update_in::UpdateIn,
    pub(crate) pending: std::cell::RefCell<Option<PendingUpdate>>,
}
