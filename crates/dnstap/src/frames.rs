//! Frame Streams (the framing dnstap is carried in): control frames made
//! and read, every octet the reader sends bounded and checked.

use std::io::{self, Read};

/// The Frame Streams content type of dnstap.
pub const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

/// Frame Streams' limit on a control frame's length (fstrm's
/// `FSTRM_CONTROL_FRAME_LENGTH_MAX`); a longer one from the reader ends
/// the connection.
const MAX_CONTROL_FRAME: usize = 512;

/// Frame Streams' limit on a content type field
/// (`FSTRM_CONTROL_FIELD_CONTENT_TYPE_LENGTH_MAX`).
const MAX_CONTENT_TYPE: usize = 256;

/// Frame Streams control frame types.
pub(crate) const CONTROL_ACCEPT: u32 = 1;
pub(crate) const CONTROL_START: u32 = 2;
pub(crate) const CONTROL_STOP: u32 = 3;
pub(crate) const CONTROL_READY: u32 = 4;
pub(crate) const CONTROL_FINISH: u32 = 5;

/// The only control field: a content type.
const FIELD_CONTENT_TYPE: u32 = 1;

/// A control frame of `kind`, with the dnstap content type if `typed`.
pub(crate) fn control_frame(kind: u32, typed: bool) -> Vec<u8> {
    let mut payload = kind.to_be_bytes().to_vec();
    if typed {
        payload.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        payload.extend_from_slice(&(CONTENT_TYPE.len() as u32).to_be_bytes());
        payload.extend_from_slice(CONTENT_TYPE);
    }
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&0u32.to_be_bytes()); // the escape: a zero length
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    frame
}

/// A control frame read from the socket's reader.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Control {
    /// The control frame type (`CONTROL_*`).
    pub(crate) kind: u32,
    /// Whether the frame lists no content type, or lists dnstap's.
    pub(crate) dnstap: bool,
}

/// Reads one control frame. Every octet is the peer's: the length is
/// checked against [`MAX_CONTROL_FRAME`] before anything is read into the
/// fixed buffer, and the fields are walked within it.
pub(crate) fn read_control(reader: &mut impl Read) -> io::Result<Control> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut word = [0u8; 4];
    reader.read_exact(&mut word)?;
    if word != [0; 4] {
        return Err(invalid("a data frame where a control frame was expected"));
    }
    reader.read_exact(&mut word)?;
    let len = u32::from_be_bytes(word) as usize;
    if !(4..=MAX_CONTROL_FRAME).contains(&len) {
        return Err(invalid("a control frame of a bad length"));
    }
    let mut frame = [0u8; MAX_CONTROL_FRAME];
    let frame = &mut frame[..len];
    reader.read_exact(frame)?;
    parse_control(frame).ok_or_else(|| invalid("a malformed control frame"))
}

/// Parses a control frame's payload (after its length); `None` if a field
/// overruns it or a content type is too long. Bounded: each field moves
/// on by at least 8 octets.
fn parse_control(frame: &[u8]) -> Option<Control> {
    let word = |at: usize| -> Option<u32> {
        let bytes = frame.get(at..at.checked_add(4)?)?;
        Some(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let kind = word(0)?;
    let mut at = 4;
    let mut types = 0;
    let mut dnstap = false;
    while at < frame.len() {
        let field = word(at)?;
        let len = word(at + 4)? as usize;
        if len > MAX_CONTENT_TYPE {
            return None;
        }
        let value = frame.get(at + 8..(at + 8).checked_add(len)?)?;
        if field == FIELD_CONTENT_TYPE {
            types += 1;
            dnstap |= value == CONTENT_TYPE;
        }
        at += 8 + len;
    }
    Some(Control {
        kind,
        dnstap: types == 0 || dnstap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_control_frames_are_refused() {
        // A data frame, an oversized control frame, a field that overruns
        // its frame, a content type too long, another content type only.
        let mut data = Vec::new();
        data.extend_from_slice(&5u32.to_be_bytes());
        assert!(read_control(&mut data.as_slice()).is_err());
        let mut huge = vec![0, 0, 0, 0];
        huge.extend_from_slice(&(MAX_CONTROL_FRAME as u32 + 1).to_be_bytes());
        huge.resize(2000, 0);
        assert!(read_control(&mut huge.as_slice()).is_err());
        let mut overrun = CONTROL_ACCEPT.to_be_bytes().to_vec();
        overrun.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 40]);
        overrun.extend_from_slice(b"short");
        assert_eq!(parse_control(&overrun), None);
        let mut long = CONTROL_ACCEPT.to_be_bytes().to_vec();
        long.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        long.extend_from_slice(&(MAX_CONTENT_TYPE as u32 + 1).to_be_bytes());
        long.resize(long.len() + MAX_CONTENT_TYPE + 1, b'x');
        assert_eq!(parse_control(&long), None);
        let mut other = CONTROL_ACCEPT.to_be_bytes().to_vec();
        other.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
        other.extend_from_slice(b"json");
        assert_eq!(
            parse_control(&other),
            Some(Control {
                kind: CONTROL_ACCEPT,
                dnstap: false
            })
        );
        assert_eq!(parse_control(&[0, 0]), None);
        assert_eq!(
            parse_control(&CONTROL_FINISH.to_be_bytes()),
            Some(Control {
                kind: CONTROL_FINISH,
                dnstap: true
            })
        );
    }
}
