//! Serial number arithmetic (RFC 1982), shared by the outgoing transfers,
//! the journal and the incoming ones.

/// Whether serial `a` is at or after serial `b` in RFC 1982 arithmetic.
/// Serials exactly half the space apart compare as neither.
pub fn serial_at_or_after(a: u32, b: u32) -> bool {
    let diff = a.wrapping_sub(b);
    diff == 0 || (diff < 1 << 31)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_arithmetic() {
        assert!(serial_at_or_after(7, 7));
        assert!(serial_at_or_after(8, 7));
        assert!(!serial_at_or_after(6, 7));
        assert!(serial_at_or_after(0, u32::MAX), "wraps");
        assert!(!serial_at_or_after(u32::MAX, 0));
        assert!(
            !serial_at_or_after(1 << 31, 0),
            "half the space apart: undefined"
        );
        assert!(!serial_at_or_after(0, 1 << 31));
    }
}
