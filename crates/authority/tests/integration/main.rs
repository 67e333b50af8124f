//! Integration tests of tern-authority: zones loaded from text or from the
//! shared corpora with tern-zone, queries as bytes through `respond`, and
//! every section of the answer asserted.

mod behaviour;
mod cookies;
mod dnssec;
mod malformed;
mod nsid;
mod records;
mod rfc1034;
mod rfc4592;
mod support;
