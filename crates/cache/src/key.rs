//! The cache key: what decides an authoritative answer besides the zone data.

use tern_wire::edns::Edns;
use tern_wire::name::LowerNameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::{Opcode, RClass, RType};

/// Bit of [`CacheKey::bits`]: the query carried an OPT record.
pub(crate) const BIT_EDNS: u8 = 0x01;
/// Bit of [`CacheKey::bits`]: the query's DO bit.
pub(crate) const BIT_DO: u8 = 0x02;

//----------- CacheKey -------------------------------------------------------

/// What decides an authoritative answer besides the zone data.
///
/// The name is lowercased once, at ingress (STYLE R5); the client's own
/// spelling is never stored: a cache hit copies it from the query.
///
/// Everything else that `tern_authority::respond` looks at is either
/// copied from the query on a hit (ID, RD), fixed for the server's life
/// (the advertised UDP size, the CH identity strings: the server clears the
/// cache when they change), never cached (opcodes other than QUERY, EDNS
/// versions other than 0, TC answers), or decided per query by the size
/// check of [`ResponseCache::answer`](crate::ResponseCache::answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheKey {
    /// The query name, lowercased.
    pub name: LowerNameBuf,
    /// The query type.
    pub qtype: RType,
    /// The query class.
    pub qclass: RClass,
    /// The query's DO bit (RFC 3225); false without EDNS.
    pub dnssec_ok: bool,
    /// The query carried an OPT record: the answer then carries one too.
    pub edns: bool,
}

impl CacheKey {
    /// The key of a parsed query, or `None` if the query cannot be answered
    /// from the cache: no question, QR set, an opcode other than QUERY, an
    /// EDNS version other than 0 (all of which `respond` answers with an
    /// error or drops, so the slow path must see them), or a record in the
    /// additional section other than the OPT (a TSIG: the answer must be
    /// signed).
    ///
    /// `edns` must be the `Ok` result of [`MessageView::edns`] for the
    /// same query; when that call fails the query is FORMERR and must not
    /// be looked up. Cost: one copy and lowercasing of the name (at most
    /// 255 octets); no allocation.
    #[inline]
    pub fn from_query(view: &MessageView<'_>, edns: Option<&Edns<'_>>) -> Option<CacheKey> {
        let mut key = CacheKey::root();
        key.set_from_query(view, edns).then_some(key)
    }

    /// A key of the root, type and class 0, without EDNS: a place for
    /// [`CacheKey::set_from_query`] to write to, made where it is called
    /// (see [`LowerNameBuf::root`]).
    #[inline]
    pub fn root() -> CacheKey {
        CacheKey {
            name: LowerNameBuf::root(),
            qtype: RType(0),
            qclass: RClass(0),
            dnssec_ok: false,
            edns: false,
        }
    }

    /// [`CacheKey::from_query`] written in place: the key of the query,
    /// and true; false (the key then unspecified) where `from_query` gives
    /// `None`. For a caller that keeps the key where it uses it: the
    /// name's 256 octets are then not moved (a copy of about 30
    /// instructions a query).
    #[inline]
    pub fn set_from_query(&mut self, view: &MessageView<'_>, edns: Option<&Edns<'_>>) -> bool {
        let header = view.header();
        if header.qr() || header.opcode() != Opcode::QUERY {
            return false;
        }
        if edns.is_some_and(|edns| edns.version != 0) {
            return false;
        }
        // A record in the additional section other than the OPT (a TSIG,
        // typically): the answer depends on more than the key.
        if header.counts()[3] > u16::from(edns.is_some()) {
            return false;
        }
        let Some(question) = view.question() else {
            return false;
        };
        self.name.set_lower(question.name);
        self.qtype = question.qtype;
        self.qclass = question.qclass;
        self.dnssec_ok = edns.is_some_and(|edns| edns.dnssec_ok);
        self.edns = edns.is_some();
        true
    }

    /// The two flags packed as [`BIT_EDNS`] and [`BIT_DO`].
    pub(crate) fn bits(&self) -> u8 {
        (if self.edns { BIT_EDNS } else { 0 }) | (if self.dnssec_ok { BIT_DO } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query for `WwW.Example.` A with the given header flags octet and
    /// optional OPT (version, DO).
    fn query(flags: u8, edns: Option<(u8, bool)>) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, flags, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03WwW\x07Example\x00\x00\x01\x00\x01");
        if let Some((version, dnssec_ok)) = edns {
            q[11] = 1;
            q.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, version]);
            q.extend_from_slice(&[if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
        }
        q
    }

    fn key_of(bytes: &[u8]) -> Option<CacheKey> {
        let view = MessageView::parse(bytes).unwrap();
        let edns = view.edns().unwrap();
        CacheKey::from_query(&view, edns.as_ref())
    }

    #[test]
    fn lowercases_and_reads_edns() {
        let key = key_of(&query(0x01, Some((0, true)))).unwrap();
        assert_eq!(key.name.as_bytes(), b"\x03www\x07example\x00");
        assert_eq!((key.qtype, key.qclass), (RType::A, RClass::IN));
        assert!(key.edns && key.dnssec_ok);
        assert_eq!(key.bits(), BIT_EDNS | BIT_DO);

        let plain = key_of(&query(0x00, None)).unwrap();
        assert!(!plain.edns && !plain.dnssec_ok);
        assert_eq!(plain.bits(), 0);
        assert_ne!(plain, key);
    }

    #[test]
    fn refuses_what_the_slow_path_must_see() {
        // QR set, opcode NOTIFY (4), EDNS version 1.
        assert_eq!(key_of(&query(0x80, None)), None);
        assert_eq!(key_of(&query(4 << 3, None)), None);
        assert_eq!(key_of(&query(0, Some((1, false)))), None);
        // No question.
        let header_only = [0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(key_of(&header_only), None);
        // A record beside the OPT (a TSIG's place), or one without an OPT:
        // the answer must be signed, not copied.
        let extra = b"\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00";
        for edns in [Some((0, false)), None] {
            let mut with_extra = query(0, edns);
            with_extra[11] += 1;
            with_extra.extend_from_slice(extra);
            assert_eq!(key_of(&with_extra), None, "{edns:?}");
            assert!(key_of(&query(0, edns)).is_some(), "the control {edns:?}");
        }
    }
}
