//! Entry points for `crates/fuzz` (rustls's pattern): each takes the
//! fuzzer's bytes and checks what must hold for any input. Compiled and
//! unit-tested with the library, so a fuzz target is only a shim.

use std::net::SocketAddr;

use tern_cache::forward::Cidr;

use crate::proxy::{self, Parsed, FIXED_LEN, MAX_HEADER};

/// The PROXY protocol v2 parser on `data`, as a stream's start and as a
/// datagram from an allowed proxy: never panics; a header accepted lies
/// within the input and the limit, and the message after it is the rest
/// of the datagram; a stream is told to wait only for more than it has,
/// up to the limit.
pub fn proxy_header(data: &[u8]) {
    match proxy::parse(data) {
        Parsed::Header(header) => {
            assert!(header.len >= FIXED_LEN && header.len <= MAX_HEADER.min(data.len()));
        }
        Parsed::Incomplete(needed) => assert!(needed > data.len() && needed <= MAX_HEADER),
        Parsed::Refused(_) => {}
    }
    let source: SocketAddr = ([127, 0, 0, 1], 4000).into();
    let allow = [Cidr::parse("127.0.0.0/8").expect("a valid prefix")];
    if let Ok((_, message)) = proxy::datagram(&allow, Some(source), data) {
        assert!(data.ends_with(message) && message.len() + FIXED_LEN <= data.len());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn proxy_header_takes_any_input() {
        let mut header = ppp::v2::PROTOCOL_PREFIX.to_vec();
        header.extend_from_slice(&[0x21, 0x12, 0, 12, 192, 0, 2, 1, 127, 0, 0, 1, 0, 1, 0, 53]);
        header.extend_from_slice(b"query");
        for cut in 0..=header.len() {
            super::proxy_header(&header[..cut]);
        }
        super::proxy_header(b"PROXY TCP4 ...");
        super::proxy_header(&[0xff; 40]);
    }
}
