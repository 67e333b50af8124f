//! Fuzz target bodies, compiled by every build so they cannot rot (the
//! rustls `msgs::fuzzing` pattern). `crates/fuzz` calls them from
//! cargo-fuzz shims; the unit tests below run them over the committed seed
//! corpora. Not a stable API.
//!
//! Each body takes arbitrary bytes, must never panic on its own, and
//! panics (the fuzzer's crash signal) only when an oracle assertion fails:
//!
//! - [`parse_message`]: parsing, every record, EDNS and decompression of
//!   every name never panic, and decompressed names are valid.
//! - [`roundtrip`]: parse, re-encode with [`MessageBuilder`], parse again:
//!   the same header, question, records and EDNS (hickory's oracle), and
//!   re-encoding the re-parsed message gives the same bytes.
//! - [`name_from_text`]: text to name to text to name is the identity, and
//!   so is wire to text to wire.
//! - [`frame`]: the AF_XDP frame parser never panics, a datagram's payload
//!   lies inside the frame, and the reply written for it parses back to a
//!   datagram with the addresses and ports swapped and the same payload.

use std::vec::Vec;

use crate::build::MessageBuilder;
use crate::name::{Name, NameBuf, MAX_NAME_LEN};
use crate::parse::{CompressedName, MessageView, RecordView, Section};
use crate::rdata::{layout, walk};
use crate::types::{RClass, RType};

/// The largest message (two-octet TCP length prefix).
const MAX_MESSAGE: usize = 65535;

//----------- frame ----------------------------------------------------------

/// Parses `data` as an Ethernet frame (the AF_XDP path's parser) and, if it
/// holds a datagram, writes the reply to it and parses that back.
pub fn frame(data: &[u8]) {
    let Ok(datagram) = crate::frame::parse(data) else {
        return;
    };
    let payload = datagram.payload();
    assert!(
        payload.end <= data.len(),
        "the payload lies inside the frame"
    );
    let mut reply = std::vec![0; crate::frame::MAX_HEADERS_LEN + payload.len()];
    let header_len = datagram.reply_header_len();
    reply[header_len..header_len + payload.len()].copy_from_slice(&data[payload.clone()]);
    let len = datagram
        .write_reply(&mut reply, payload.len())
        .expect("a datagram's payload fits a reply");
    let back = crate::frame::parse(&reply[..len]).expect("a reply parses");
    assert_eq!(back.source(), datagram.destination());
    assert_eq!(back.destination(), datagram.source());
    assert_eq!(&reply[back.payload()], &data[payload]);
}

//----------- parse_message --------------------------------------------------

/// Parses `data` as a message and reads all of it.
pub fn parse_message(data: &[u8]) {
    let Ok(message) = MessageView::parse(data) else {
        return;
    };
    if let Some(question) = message.question() {
        let buf = question.name.to_buf();
        assert_eq!(buf.as_bytes(), question.name.as_bytes());
        let _ = question.name.to_string();
    }
    for record in message.records() {
        let Ok(record) = record else { break };
        let owner = record.owner.to_buf();
        assert!(Name::from_wire(owner.as_bytes()).is_ok());
        assert!(owner.as_bytes().len() <= MAX_NAME_LEN);
        let _ = record.owner_is_root();
        let _ = decompress_rdata(data, &record);
    }
    if let Ok(Some(edns)) = message.edns() {
        assert!(edns.udp_size >= crate::edns::MIN_UDP_SIZE);
        for option in edns.options() {
            let _ = option;
        }
    }
}

//----------- roundtrip ------------------------------------------------------

/// One record in a form that survives re-encoding: names decompressed and
/// lowercased (the builder compresses names case-insensitively, so a later
/// `WWW.example.` may come back as a pointer to an earlier `www.example.`).
#[derive(Debug, PartialEq, Eq)]
struct Canonical {
    section: Section,
    owner: NameBuf,
    rtype: RType,
    class: u16,
    ttl: u32,
    rdata: Vec<u8>,
}

/// A message as the round trip compares it.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    /// ID and flags.
    head: [u8; 4],
    question: Option<(NameBuf, RType, RClass)>,
    /// The question's bytes: no earlier name exists, so never compressed.
    question_bytes: Option<Vec<u8>>,
    records: Vec<Canonical>,
    edns: Option<(u16, u8, u8, bool, Vec<u8>)>,
}

/// Parses a message completely; `None` if any part is malformed or the
/// RDATA of a type with compressible names does not hold those names.
fn decode(data: &[u8]) -> Option<Decoded> {
    let message = MessageView::parse(data).ok()?;
    let edns = message.edns().ok()?;
    let mut records = Vec::new();
    for record in message.records() {
        let record = record.ok()?;
        let mut owner = record.owner.to_buf();
        owner.make_lowercase();
        records.push(Canonical {
            section: record.section,
            owner,
            rtype: record.rtype,
            class: record.class,
            ttl: record.ttl,
            rdata: decompress_rdata(data, &record)?,
        });
    }
    Some(Decoded {
        head: [data[0], data[1], data[2], data[3]],
        question: message
            .question()
            .map(|q| (q.name.to_buf(), q.qtype, q.qclass)),
        question_bytes: message.question().map(|q| q.bytes.to_vec()),
        records,
        edns: edns.map(|e| {
            (
                e.udp_size,
                e.extended_rcode,
                e.version,
                e.dnssec_ok,
                e.options.to_vec(),
            )
        }),
    })
}

/// Writes a decoded message with [`MessageBuilder`] into `out`; `None` if
/// it does not fit in 65535 octets (decompression can grow a message).
fn encode(decoded: &Decoded, out: &mut [u8]) -> Option<usize> {
    let mut builder = MessageBuilder::new(out, MAX_MESSAGE).ok()?;
    builder.header_mut()[..4].copy_from_slice(&decoded.head);
    if let Some((name, qtype, qclass)) = &decoded.question {
        builder
            .push_question(name.as_name(), *qtype, *qclass)
            .ok()?;
    }
    for record in &decoded.records {
        builder.set_section(record.section);
        builder
            .push_record(
                record.owner.as_name(),
                record.rtype,
                RClass(record.class),
                record.ttl,
                &record.rdata,
            )
            .ok()?;
    }
    Some(builder.finish())
}

/// Parse, encode, parse: the two parses must agree, and encoding the second
/// gives the bytes of the first encoding.
pub fn roundtrip(data: &[u8]) {
    let Some(first) = decode(data) else {
        return;
    };
    let mut buf = std::vec![0u8; MAX_MESSAGE];
    let Some(len) = encode(&first, &mut buf) else {
        return;
    };
    let encoded = &buf[..len];
    let second = decode(encoded).expect("a message the builder wrote parses");
    assert_eq!(first, second, "re-encoded message differs");
    let mut again = std::vec![0u8; MAX_MESSAGE];
    let len2 = encode(&second, &mut again).expect("it fitted once");
    assert_eq!(encoded, &again[..len2], "encoding is not stable");
}

/// The RDATA of a record with the names of the types the builder
/// compresses (RFC 3597 section 4) decompressed and lowercased; other
/// RDATA as is. `None` if such a type's names do not parse inside the
/// RDATA.
fn decompress_rdata(message: &[u8], record: &RecordView<'_>) -> Option<Vec<u8>> {
    let fields = match layout(record.rtype) {
        Some(layout) if layout.compressible => layout.fields,
        _ => return Some(record.rdata.to_vec()),
    };
    let message_end = record.rdata_offset + record.rdata.len();
    // Parse against the message cut at the RDATA's end, so a name may
    // point backwards anywhere but not run past its record.
    let within = message.get(..message_end)?;
    let mut out = Vec::with_capacity(record.rdata.len());
    let mut copied = 0;
    walk(
        fields,
        0,
        record.rdata.len(),
        |pos| Ok::<_, ()>(pos + 1 + usize::from(*record.rdata.get(pos).ok_or(())?)),
        |pos| {
            out.extend_from_slice(record.rdata.get(copied..pos).ok_or(())?);
            let name = CompressedName::parse(within, record.rdata_offset + pos).map_err(|_| ())?;
            let mut buf = name.to_buf();
            buf.make_lowercase();
            out.extend_from_slice(buf.as_bytes());
            copied = pos + name.wire_len();
            Ok(copied)
        },
    )
    .ok()?;
    out.extend_from_slice(record.rdata.get(copied..)?);
    Some(out)
}

//----------- name_from_text -------------------------------------------------

/// Text to name to text to name, relative to no origin and to `fuzz.`; and
/// if `data` is a wire name, wire to text to wire.
pub fn name_from_text(data: &[u8]) {
    let origin = NameBuf::from_text(b"fuzz.", None).expect("a valid literal name");
    for origin in [None, Some(origin.as_name())] {
        if let Ok(name) = NameBuf::from_text(data, origin) {
            assert!(Name::from_wire(name.as_bytes()).is_ok());
            text_roundtrip(&name);
        }
    }
    if let Ok(name) = Name::from_wire(data) {
        text_roundtrip(&name.to_buf());
    }
}

/// Display, then parse the text back: the same octets, case included.
fn text_roundtrip(name: &NameBuf) {
    let text = name.to_string();
    let back = NameBuf::from_text(text.as_bytes(), None)
        .unwrap_or_else(|err| panic!("{text:?} does not parse back: {err:?}"));
    assert_eq!(name.as_bytes(), back.as_bytes(), "{text:?}");
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed corpus of one target, from `crates/fuzz/corpus/<target>/`.
    fn seeds(target: &str) -> Vec<(std::string::String, Vec<u8>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus")
            .join(target);
        let mut seeds: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
            .map(|entry| {
                let path = entry.unwrap().path();
                (path.display().to_string(), std::fs::read(&path).unwrap())
            })
            .collect();
        seeds.sort();
        assert!(seeds.len() >= 5, "{target}: too few seeds");
        seeds
    }

    #[test]
    fn frame_seeds() {
        let mut parsed = 0;
        for (_, data) in seeds("frame") {
            frame(&data);
            parsed += usize::from(crate::frame::parse(&data).is_ok());
        }
        assert!(parsed >= 5, "the corpus holds real frames");
    }

    #[test]
    fn parse_message_seeds() {
        let mut parsed = 0;
        for (_, data) in seeds("parse_message") {
            parse_message(&data);
            parsed += usize::from(MessageView::parse(&data).is_ok());
        }
        assert!(parsed >= 5, "the corpus holds real messages");
    }

    #[test]
    fn roundtrip_seeds() {
        let mut decoded = 0;
        for (_, data) in seeds("roundtrip") {
            roundtrip(&data);
            decoded += usize::from(decode(&data).is_some());
        }
        assert!(decoded >= 5, "the corpus holds well-formed messages");
    }

    #[test]
    fn name_from_text_seeds() {
        for (_, data) in seeds("name_from_text") {
            name_from_text(&data);
        }
    }

    #[test]
    fn roundtrip_compares_case_insensitively_and_decompresses_rdata() {
        // An answer whose CNAME target points at the question.
        let message = b"\x12\x34\x85\x00\x00\x01\x00\x01\x00\x00\x00\x00\
            \x03WWW\x07example\x00\x00\x05\x00\x01\
            \xc0\x0c\x00\x05\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x10";
        let decoded = decode(message).expect("well-formed");
        assert_eq!(decoded.records[0].rdata, b"\x07example\x00");
        assert_eq!(
            decoded.records[0].owner.as_bytes(),
            b"\x03www\x07example\x00"
        );
        roundtrip(message);
    }

    #[test]
    fn rdata_name_may_not_run_past_its_record() {
        // NS RDATA of 1 octet whose name continues into the next bytes.
        let message = b"\x00\x00\x80\x00\x00\x00\x00\x01\x00\x00\x00\x00\
            \x00\x00\x02\x00\x01\x00\x00\x00\x00\x00\x01\x01\x61\x00";
        let parsed = MessageView::parse(message).unwrap();
        let record = parsed.records().next().unwrap().unwrap();
        assert_eq!(decompress_rdata(message, &record), None);
    }

    #[test]
    fn names_round_trip_through_text() {
        for text in [
            &b"a\\.b.example."[..],
            b"\\@.\\$.x.",
            b"\\000\\255.",
            b"relative",
            b"@",
            b".",
        ] {
            name_from_text(text);
        }
        name_from_text(b"\x01.\x01\\\x00");
    }
}
