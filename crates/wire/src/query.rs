//! A received query, parsed once for every stage of a server.
//!
//! A server's stages (the answer cache, the responder, TSIG, cookies,
//! NOTIFY, transfers, rate limiting, forwarding) each need some of the
//! query: its header, its question, its OPT. [`Query::parse`] reads them
//! once, when the query arrives, and every stage takes the [`Query`]
//! instead of the bytes, as Knot's `knot_pkt_t` and NSD's `struct query`
//! are parsed once and handed on. A query that does not parse is a
//! [`Query`] too: it keeps the reason ([`Query::message`] is the
//! [`ParseError`]) and what of the header can still be echoed
//! ([`Query::header`]), so the stage that answers it (FORMERR, or
//! nothing) does not read it again.
//!
//! The work is what [`MessageView::parse`] and [`MessageView::edns`] do
//! (header and question, then one walk over the records for the OPT),
//! bounded as they are; nothing allocates.
//!
//! ```
//! use tern_wire::query::Query;
//! use tern_wire::types::RType;
//! let bytes = [
//!     0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
//!     3, b'w', b'w', b'w', 0, 0x00, 0x01, 0x00, 0x01, // www. A IN
//! ];
//! let query = Query::parse(&bytes);
//! assert_eq!(query.question().unwrap().qtype, RType::A);
//! assert_eq!(query.edns(), Ok(None));
//! assert!(Query::parse(&bytes[..20]).message().is_err());
//! assert_eq!(Query::parse(&bytes[..20]).header().unwrap().id(), 0x1234);
//! ```

use crate::edns::Edns;
use crate::error::ParseError;
use crate::parse::{Header, MessageView, Question};

//----------- Query ----------------------------------------------------------

/// One received query, parsed once: the message's view (or why it could
/// not be read) and its OPT (or why the records could not be read).
/// Borrows the received bytes.
#[derive(Clone, Copy, Debug)]
pub struct Query<'a> {
    bytes: &'a [u8],
    message: Result<MessageView<'a>, ParseError>,
    /// The OPT, from one walk over the records; the message's error when
    /// it did not parse.
    edns: Result<Option<Edns<'a>>, ParseError>,
}

impl<'a> Query<'a> {
    /// Parses `bytes`: the header and question, then the records for the
    /// OPT. Never fails: a query that does not read keeps its error.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Self {
        let message = MessageView::parse_inlined(bytes);
        let edns = match &message {
            Ok(message) => message.edns(),
            Err(error) => Err(*error),
        };
        Query {
            bytes,
            message,
            edns,
        }
    }

    /// The received bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The parsed message, or why its header or question could not be
    /// read (shorter than a header, more than one question, a question
    /// cut short or with a bad name).
    pub fn message(&self) -> Result<&MessageView<'a>, ParseError> {
        self.message.as_ref().map_err(|error| *error)
    }

    /// The header: the parsed message's, or the first 12 octets of one
    /// whose question could not be read; `None` only when the message is
    /// shorter than a header. (A copy of 12 octets, not a parse.)
    pub fn header(&self) -> Option<Header> {
        match &self.message {
            Ok(message) => Some(*message.header()),
            Err(_) => Header::from_message(self.bytes).ok(),
        }
    }

    /// The question, if the message parsed with one.
    pub fn question(&self) -> Option<Question<'a>> {
        self.message.as_ref().ok().and_then(MessageView::question)
    }

    /// The OPT, as [`MessageView::edns`] reads it; the message's own error
    /// when it did not parse.
    pub fn edns(&self) -> Result<Option<Edns<'a>>, ParseError> {
        self.edns
    }

    /// The OPT of a query whose records read, borrowed (`None` without
    /// one, or when they do not read: [`Query::edns`] tells which).
    pub fn edns_ref(&self) -> Option<&Edns<'a>> {
        self.edns.as_ref().ok().and_then(Option::as_ref)
    }

    /// The options of a readable OPT; empty without one (or when the
    /// records do not read).
    pub fn edns_options(&self) -> &'a [u8] {
        match self.edns {
            Ok(Some(edns)) => edns.options,
            _ => &[],
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::count;

    const QUERY: &[u8] = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01\
        \x03www\x07example\x03com\x00\x00\x01\x00\x01\
        \x00\x00\x29\x04\xd0\x00\x00\x80\x00\x00\x04\x00\x03\x00\x00";

    #[test]
    fn a_query_is_parsed_once_with_its_opt() {
        let bytes = QUERY;
        count::watch(bytes);
        let query = Query::parse(bytes);
        let edns = query.edns().unwrap().unwrap();
        assert_eq!((edns.udp_size, edns.dnssec_ok), (1232, true));
        assert_eq!(query.edns_options(), &[0, 3, 0, 0]);
        assert_eq!(
            query.question().unwrap().name.to_string(),
            "www.example.com."
        );
        assert_eq!(query.header().unwrap().id(), 0x1234);
        assert_eq!(query.bytes(), QUERY);
        assert_eq!(count::parses(), 1);
    }

    #[test]
    fn a_query_that_does_not_parse_keeps_its_error_and_header() {
        let short = Query::parse(&QUERY[..11]);
        assert!(short.header().is_none() && short.message().is_err());
        let cut = Query::parse(&QUERY[..20]);
        assert_eq!(cut.header().unwrap().id(), 0x1234);
        assert_eq!(cut.edns(), Err(cut.message().unwrap_err()));
        assert!(cut.question().is_none());
        assert_eq!(cut.edns_options(), &[] as &[u8]);
        let mut trailing = QUERY.to_vec();
        trailing.push(0);
        let trailing = Query::parse(&trailing);
        assert!(trailing.question().is_some() && trailing.edns().is_err());
    }
}
