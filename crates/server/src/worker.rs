//! The per-core answering state.

use std::sync::Arc;

use tern_authority::{respond, Catalog, Options, Response, Transport};

/// The largest DNS message (TCP's two-octet length prefix).
pub(crate) const MAX_MESSAGE: usize = 65535;

//----------- Worker ---------------------------------------------------------

/// What a receive loop needs to answer: the catalog and the options. The
/// loop owns the buffers and lends them for each answer.
#[derive(Clone)]
pub struct Worker {
    catalog: Arc<Catalog>,
    options: Options,
}

impl Worker {
    /// A worker over a catalog.
    pub fn new(catalog: Arc<Catalog>, options: Options) -> Self {
        Worker { catalog, options }
    }

    /// Answers one query synchronously into `out` (at least
    /// [`MAX_MESSAGE`] bytes); returns the answer's length, or `None` to
    /// drop the query silently.
    pub fn answer(&self, query: &[u8], transport: Transport, out: &mut [u8]) -> Option<usize> {
        match respond(&self.catalog, query, transport, &self.options, out) {
            Response::Send(len) => Some(len),
            Response::Drop => None,
        }
    }
}
