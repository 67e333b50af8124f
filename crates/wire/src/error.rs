//! Error types of the wire layer: `Copy`, allocation-free, with a static reason.

use core::fmt;

//----------- ParseError -----------------------------------------------------

/// Bytes that do not form what was expected. `what` names the rule broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// A short, static description of the problem.
    pub what: &'static str,
}

impl ParseError {
    /// A parse error with the given reason.
    pub const fn new(what: &'static str) -> Self {
        ParseError { what }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

impl std::error::Error for ParseError {}

//----------- TruncationError ------------------------------------------------

/// The message buffer (or its size limit) has no room for what was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncationError;

impl fmt::Display for TruncationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("message size limit reached")
    }
}

impl std::error::Error for TruncationError {}
