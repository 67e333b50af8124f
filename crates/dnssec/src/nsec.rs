//! NSEC RDATA: the next owner name and the type bitmap (RFC 4034 section
//! 4.1); the bitmap is NSEC3's too (RFC 5155 section 3.2.1).
//!
//! The bitmap is split into windows of 256 types (the type's high octet);
//! each window present is written as its number, the length of its bitmap
//! (1 to 32 octets, trailing zero octets left out) and the bitmap, where
//! type `window * 256 + n` is bit `n`, most significant bit first.

use tern_wire::name::Name;
use tern_wire::types::RType;

/// The octets of one window's bitmap at most (256 types).
const WINDOW_OCTETS: usize = 32;

/// The NSEC RDATA for `next` (written as given) and the types present at
/// the owner, in any order, duplicates allowed. Bound: see
/// [`push_type_bitmap`].
pub fn nsec_rdata(next: Name<'_>, types: &[RType]) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(next.len() + 2 + WINDOW_OCTETS);
    rdata.extend_from_slice(next.as_bytes());
    push_type_bitmap(types, &mut rdata);
    rdata
}

/// Appends to `rdata` the type bitmap of `types` (any order, duplicates
/// allowed), as NSEC (RFC 4034 section 4.1.2) and NSEC3 (RFC 5155 section
/// 3.2.1) write it. Bound: one pass over `types` after a sort; at most
/// 256 windows of 34 octets.
pub fn push_type_bitmap(types: &[RType], rdata: &mut Vec<u8>) {
    let mut types: Vec<u16> = types.iter().map(|rtype| rtype.0).collect();
    types.sort_unstable();
    types.dedup();
    let mut index = 0;
    while index < types.len() {
        let window = (types[index] >> 8) as u8;
        let mut bitmap = [0u8; WINDOW_OCTETS];
        let mut used = 0;
        while index < types.len() && (types[index] >> 8) as u8 == window {
            let low = usize::from(types[index] as u8);
            bitmap[low / 8] |= 0x80 >> (low % 8);
            used = low / 8 + 1;
            index += 1;
        }
        rdata.push(window);
        // At most 32.
        rdata.push(used as u8);
        rdata.extend_from_slice(&bitmap[..used]);
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;

    use super::*;

    /// RFC 4034 section 4.3: `alfa.example.com. NSEC host.example.com. (A
    /// MX RRSIG NSEC TYPE1234)` is this RDATA.
    #[test]
    fn bitmap_of_rfc4034_example() {
        let next = NameBuf::from_text(b"host.example.com.", None).unwrap();
        let rdata = nsec_rdata(
            next.as_name(),
            &[
                RType::NSEC,
                RType(1234),
                RType::A,
                RType::MX,
                RType::RRSIG,
                RType::A,
            ],
        );
        let mut expected = b"\x04host\x07example\x03com\x00".to_vec();
        expected.extend_from_slice(&[0x00, 0x06, 0x40, 0x01, 0x00, 0x00, 0x00, 0x03]);
        expected.extend_from_slice(&[0x04, 0x1b]);
        expected.extend_from_slice(&[0; 26]);
        expected.push(0x20);
        assert_eq!(rdata, expected);
    }

    /// Types 0 and 65535 stand at the ends of the first and last windows.
    #[test]
    fn bitmap_edges() {
        let rdata = nsec_rdata(Name::ROOT, &[RType(65535), RType(0)]);
        let mut expected = vec![0x00, 0x00, 0x01, 0x80, 0xff, 0x20];
        expected.extend_from_slice(&[0; 32]);
        expected[37] = 0x01;
        assert_eq!(rdata.len(), expected.len());
        assert_eq!(rdata, expected);
    }
}
