//! EDNS padding (RFC 7830) of answers over TLS (RFC 8467's block-length
//! padding): whether a query asks for it, and the answer padded. A leaf of
//! the TLS module, read by the TCP framing that TLS connections share.

/// The EDNS Padding option (RFC 7830).
pub(crate) const OPTION_PADDING: u16 = 12;

/// Answers to padded queries are padded to a multiple of this (RFC 8467
/// section 4.1, "Block-Length Padding", the recommended 468 for
/// responses).
pub const PADDING_BLOCK: usize = 468;

//----------- pad ------------------------------------------------------------

/// Whether a query's EDNS options (`code, length, value` triples) hold a
/// Padding option.
pub(crate) fn asks_padding(options: &[u8]) -> bool {
    let mut rest = options;
    // Each pass consumes at least one option header or ends.
    while let Some(head) = rest.get(..4) {
        let code = u16::from_be_bytes([head[0], head[1]]);
        if code == OPTION_PADDING {
            return true;
        }
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        rest = rest.get(4 + len..).unwrap_or(&[]);
    }
    false
}

/// Pads the answer `buffer[..len]` to a multiple of [`PADDING_BLOCK`]
/// with a Padding option appended to its OPT record, which must be its
/// last record (an answer without one, or with a TSIG after it, is left
/// as it is: padding goes before the signature). Returns the new length;
/// `len` when the answer is left alone or the padding would not fit in
/// `buffer`.
pub(crate) fn pad(buffer: &mut [u8], len: usize) -> usize {
    let Some(answer) = buffer.get(..len) else {
        return len;
    };
    let Ok(message) = tern_wire::parse::MessageView::parse(answer) else {
        return len;
    };
    let Some(Ok(last)) = message.records().last() else {
        return len;
    };
    if last.rtype != tern_wire::types::RType::OPT
        || !last.owner_is_root()
        || last.rdata_offset + last.rdata.len() != len
    {
        return len;
    }
    let unpadded = len + 4;
    let padded = unpadded.div_ceil(PADDING_BLOCK) * PADDING_BLOCK;
    let zeros = padded - unpadded;
    let rdlen = last.rdata.len() + 4 + zeros;
    if padded > buffer.len() || padded > usize::from(u16::MAX) || rdlen > usize::from(u16::MAX) {
        return len;
    }
    let rdlen_at = last.rdata_offset - 2;
    buffer[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen as u16).to_be_bytes());
    buffer[len..len + 2].copy_from_slice(&OPTION_PADDING.to_be_bytes());
    buffer[len + 2..len + 4].copy_from_slice(&(zeros as u16).to_be_bytes());
    buffer[unpadded..padded].fill(0);
    padded
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// A header, question `a.` IN A, and `additional` records.
    fn answer(additional: &[&[u8]]) -> Vec<u8> {
        let mut message = vec![0, 1, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, additional.len() as u8];
        message.extend_from_slice(&[1, b'a', 0, 0, 1, 0, 1]);
        for record in additional {
            message.extend_from_slice(record);
        }
        message
    }

    const OPT: &[u8] = &[0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0];

    #[test]
    fn padding_is_asked_by_option_12_only() {
        assert!(asks_padding(&[0, 12, 0, 0]));
        assert!(asks_padding(&[0, 10, 0, 2, 1, 2, 0, 12, 0, 3, 0, 0, 0]));
        assert!(!asks_padding(&[0, 10, 0, 2, 1, 2]));
        assert!(!asks_padding(&[0, 10, 0, 9, 1]), "cut short");
        assert!(!asks_padding(&[]));
    }

    /// An answer ending in its OPT is padded to 468 octets with a valid
    /// Padding option; without OPT, or with a record after it, or with
    /// no room, it is left alone.
    #[test]
    fn answers_are_padded_to_the_block() {
        let mut buffer = vec![0xff; 2000];
        let plain = answer(&[OPT]);
        buffer[..plain.len()].copy_from_slice(&plain);
        let len = pad(&mut buffer, plain.len());
        assert_eq!(len, PADDING_BLOCK);
        let message = tern_wire::parse::MessageView::parse(&buffer[..len]).unwrap();
        let edns = message.edns().unwrap().unwrap();
        let options: Vec<_> = edns.options().map(Result::unwrap).collect();
        assert_eq!(options.len(), 1);
        assert_eq!(options[0].0, OPTION_PADDING);
        assert!(options[0].1.iter().all(|&octet| octet == 0));
        assert_eq!(
            pad(&mut buffer, len),
            len + PADDING_BLOCK,
            "a full block more"
        );

        let bare = answer(&[]);
        buffer[..bare.len()].copy_from_slice(&bare);
        assert_eq!(pad(&mut buffer, bare.len()), bare.len());
        let tsig_after: &[u8] = &[0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0];
        let signed = answer(&[OPT, tsig_after]);
        buffer[..signed.len()].copy_from_slice(&signed);
        assert_eq!(pad(&mut buffer, signed.len()), signed.len());
        let mut small = plain.clone();
        small.extend_from_slice(&[0; 10]);
        assert_eq!(pad(&mut small, plain.len()), plain.len(), "no room");
    }
}
