//! Helpers: loading zones, building queries, reading answers back as text.

use std::path::{Path, PathBuf};

use tern_authority::{respond, Catalog, Options, Response, Transport, Zone};
use tern_wire::name::NameBuf;
use tern_wire::parse::{CompressedName, MessageView, Section};
use tern_wire::types::RType;

/// `<repo>/../shared/corpora`.
pub(crate) fn corpora() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
}

/// A zone from a corpora file.
pub(crate) fn zone_file(origin: &str, relative: &str) -> Zone {
    let name = NameBuf::from_text(origin.as_bytes(), None).unwrap();
    let path = corpora().join(relative);
    let parsed = tern_zone::parse_file(&path, name.as_name(), &tern_zone::Options::default())
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    tern_testkit::build(origin, &parsed)
}

/// A zone from text.
pub(crate) fn zone_text(origin: &str, text: &str) -> Zone {
    tern_testkit::zone(origin, text)
}

/// How to ask.
#[derive(Clone, Copy)]
pub(crate) struct Ask {
    pub(crate) rd: bool,
    /// EDNS: (UDP size, DO, version).
    pub(crate) edns: Option<(u16, bool, u8)>,
    pub(crate) transport: Transport,
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            rd: false,
            edns: Some((1232, false, 0)),
            transport: Transport::Udp,
        }
    }
}

impl Ask {
    pub(crate) fn no_edns() -> Self {
        Ask {
            edns: None,
            ..Ask::default()
        }
    }
}

/// Query bytes: ID 0x4242.
pub(crate) fn query(qname: &str, qtype: RType, ask: Ask) -> Vec<u8> {
    tern_testkit::query_with(0x4242, ask.rd, qname, qtype.0, ask.edns)
}

/// An answer, read back.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) raw: Vec<u8>,
    pub(crate) rcode: u16,
    pub(crate) aa: bool,
    pub(crate) tc: bool,
    pub(crate) rd: bool,
    pub(crate) answer: Vec<String>,
    pub(crate) authority: Vec<String>,
    pub(crate) additional: Vec<String>,
    /// (UDP size, version, DO).
    pub(crate) opt: Option<(u16, u8, bool)>,
}

/// Sends raw bytes; `None` if dropped.
pub(crate) fn send(
    catalog: &Catalog,
    bytes: &[u8],
    transport: Transport,
    options: &Options,
) -> Option<Reply> {
    let mut out = vec![0u8; 65535];
    match respond(catalog, bytes, transport, options, &mut out) {
        Response::Drop => None,
        Response::Send(len) => Some(read(&out[..len])),
    }
}

/// Asks a question with default options.
pub(crate) fn ask(catalog: &Catalog, qname: &str, qtype: RType, how: Ask) -> Reply {
    send(
        catalog,
        &query(qname, qtype, how),
        how.transport,
        &Options::default(),
    )
    .expect("answered")
}

/// Parses an answer into text sections (names lowercased, RDATA names
/// decompressed).
pub(crate) fn read(message: &[u8]) -> Reply {
    let view = MessageView::parse(message).expect("answer parses");
    let header = view.header();
    let mut reply = Reply {
        raw: message.to_vec(),
        rcode: u16::from(header.rcode_bits()),
        aa: header.aa(),
        tc: header.tc(),
        rd: header.rd(),
        answer: vec![],
        authority: vec![],
        additional: vec![],
        opt: None,
    };
    for record in view.records() {
        let record = record.expect("record parses");
        if record.rtype == RType::OPT {
            reply.rcode |= ((record.ttl >> 24) as u16) << 4;
            reply.opt = Some((
                record.class,
                (record.ttl >> 16) as u8,
                record.ttl & 0x8000 != 0,
            ));
            continue;
        }
        let rdata = decompress(message, record.rtype, record.rdata, record.rdata_offset);
        let mut text = String::new();
        tern_zone::print::write_rdata(record.rtype, &rdata, &mut text);
        let line = format!(
            "{} {} {} {}",
            record.owner.to_buf(),
            record.ttl,
            record.rtype,
            text
        )
        .to_ascii_lowercase();
        match record.section {
            Section::Answer => reply.answer.push(line),
            Section::Authority => reply.authority.push(line),
            Section::Additional => reply.additional.push(line),
        }
    }
    reply
}

/// RDATA with its compressed names expanded.
fn decompress(message: &[u8], rtype: RType, rdata: &[u8], offset: usize) -> Vec<u8> {
    let (skip, names) = match rtype {
        RType::NS | RType::CNAME | RType::PTR => (0, 1),
        RType::MX => (2, 1),
        RType::SOA => (0, 2),
        _ => return rdata.to_vec(),
    };
    let mut out = rdata[..skip].to_vec();
    let mut pos = offset + skip;
    for _ in 0..names {
        let name = CompressedName::parse(message, pos).unwrap();
        out.extend_from_slice(name.to_buf().as_bytes());
        pos += name.wire_len();
    }
    out.extend_from_slice(&message[pos..offset + rdata.len()]);
    out
}

/// Sorted copy, for comparing sections as multisets.
pub(crate) fn sorted(lines: &[String]) -> Vec<String> {
    let mut v = lines.to_vec();
    v.sort();
    v
}

/// Sorted expected lines.
pub(crate) fn lines(expected: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = expected.iter().map(|s| s.to_ascii_lowercase()).collect();
    v.sort();
    v
}

/// The `qname qtype` lines of a derived `.queries` file.
pub(crate) fn corpus_queries(relative: &str) -> Vec<(String, RType)> {
    let text = std::fs::read_to_string(corpora().join(relative)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
        .map(|l| {
            let mut fields = l.split_whitespace();
            let qname = fields.next().unwrap().to_string();
            let qtype = RType::from_text(fields.next().unwrap().as_bytes()).unwrap();
            (qname, qtype)
        })
        .collect()
}

/// `example.` with www and a TXT RRset `big` of about 1300 octets, which is
/// truncated at 1232 and at 512 (the option tests: cookies, NSID).
pub(crate) fn big_catalog() -> Catalog {
    let mut text = String::from(
        "$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n  NS ns1\nns1 A 192.0.2.1\n\
         www A 192.0.2.80\n",
    );
    for i in 0..20 {
        text.push_str(&format!("big TXT \"{i:02} {}\"\n", "b".repeat(60)));
    }
    Catalog::new(vec![zone_text("example.", &text)])
}
