//! # tern-xfr: zone transfers, sans-I/O
//!
//! What a primary and a secondary say to each other, without the sockets:
//! the server (`tern-server`) owns connections and timers, the `tern` crate
//! the configuration and the state directory (STYLE.md section 1.5).
//!
//! | module | what it does |
//! |---|---|
//! | [`axfr`] | the messages of an outgoing transfer: AXFR, and IXFR answered in full or with the SOA alone |
//! | [`incoming`] | the request of a secondary and the checks and assembly of the answer: AXFR, and IXFR current, full or as differences |
//! | [`journal`] | the differences between versions of a zone and the bounded history IXFR answers from |
//! | [`notify`] | who may send a NOTIFY for a secondary zone |
//! | [`tsig`] | RFC 8945 transaction signatures: signing and checking messages and multi-message streams |
//!
//! Every input is hostile: a peer's message is parsed through `tern-wire`'s
//! bounded views, and a check that fails returns the RFC's error, never
//! panics.

#![forbid(unsafe_code)]

pub mod axfr;
#[doc(hidden)]
pub mod fuzzing;
pub mod incoming;
pub mod journal;
pub mod notify;
mod reader;
mod serial;
pub mod tsig;
