//! The responder: one query's bytes in, one answer's bytes out.
//!
//! [`respond`] is sans-I/O and allocation-free: it parses the query with
//! `tern-wire` views, plans the answer with [`crate::lookup`] (a fixed-size
//! plan on the stack) and writes it into the caller's buffer: the usual
//! negative answer (the apex SOA alone) and the usual positive one (one
//! RRset owned by the question's name, without names to compress, DNSSEC
//! records or glue) whole, the question and records in one step and the
//! header and OPT after them, without a builder (`Context::negative`,
//! `Context::positive`); any other answer, or one of those that does not
//! fit as it is, the long way, with a `MessageBuilder`, one RRset per
//! transaction, so a truncated answer never carries half an RRset. Both
//! ways write the same octets (the tests compare them).
//!
//! What happens to each kind of query (evidence: Knot 3.2.6 and NSD 4.6.1
//! asked the same bytes on loopback):
//!
//! | query | answer |
//! |---|---|
//! | shorter than 12 octets, or QR=1 | dropped |
//! | QDCOUNT 0 | FORMERR, header only (both) |
//! | QDCOUNT > 1 | FORMERR, header only (NSD; Knot drops) |
//! | question unreadable (bad name, cut short) | dropped (Knot; NSD sends a bare FORMERR) |
//! | bad records, trailing bytes, two OPTs, a misplaced OPT (0005) | FORMERR, question, no OPT |
//! | opcode other than QUERY (checked first) | NOTIMP, opcode and question echoed, only QR set |
//! | EDNS version > 0 | BADVERS, OPT version 0, DO echoed (Knot) |
//! | AXFR or IXFR | NOTIMP over UDP, REFUSED over TCP; RD cleared (both clear it) |
//! | class CH | TXT for version.bind/version.server (`ChaosIdentity::version`) and id.server/hostname.bind (`identity`), any case, AA=0, TTL 0, the owner as asked (both); other names, other types (ANY too: NSD answers it with the TXT) and strings not set: REFUSED without EDE (Knot) |
//! | class ANY (255) | answered as IN, the question echoed with class ANY, records of class IN, AA set (Knot; NSD answers too, without AA) |
//! | other classes | REFUSED |
//! | a name in no loaded zone | REFUSED, AA=0, with EDE 20 "Not Authoritative" in the OPT (both) |
//! | a name in a secondary zone past its EXPIRE | SERVFAIL, AA=0 (Knot) |
//! | a COOKIE option of a bad length (any opcode, any EDNS version) | FORMERR, question, OPT without options (BIND; 0006) |
//! | no question, a well-formed COOKIE, and a cookie to give | NOERROR, header and OPT with the cookie (RFC 7873 section 5.4, BIND) |
//!
//! [`respond_to`] takes a query parsed once ([`Query`]); [`respond`] and
//! [`respond_with`] parse the bytes first, for callers that hold only
//! them. [`respond_to`] adds options such as a COOKIE to the OPT of the
//! answer, [`append_option`] to an answer already written, and
//! [`bad_cookie`] writes a BADCOOKIE answer
//! (`docs/decisions/0006-dns-cookies.md`).
//!
//! NSID (RFC 5001, [`crate::nsid`]): with [`Options::nsid`] set, every
//! answer that carries an OPT (records, NOERROR/NXDOMAIN, REFUSED,
//! SERVFAIL, NOTIMP, FORMERR and BADVERS with an OPT, BADCOOKIE) carries
//! the NSID option too, if the query's OPT held one; before the COOKIE,
//! after our EDE. The option counts toward the UDP size: room is kept for
//! it as for the COOKIE, so records that no longer fit set TC. Without
//! the option in the query, or without `nsid`, nothing changes and the
//! query's options are not even scanned when there are none.
//!
//! Every answer copies the ID and the opcode, and (NOTIMP and transfers
//! excepted) RD and CD (RFC 4035 section 3.1.6; Knot 3.2.6 and NSD 4.6.1
//! clear CD, BIND copies it: `docs/decisions/0004-dnssec-answers.md`). TC,
//! AA, Z, AD and RA of a query are ignored and never copied; AD is never
//! set. Every answer echoes the question bytes exactly as received (0x20
//! case round-trips; owner names equal to the query name compress to
//! offset 12 and so carry the client's case), and carries an OPT iff the
//! query had a readable one, advertising our UDP size, with version 0, DO
//! copied, no other flag and no option of the query's (RFC 6891 and RFC
//! 8906; `docs/decisions/0005-malformed-and-edns.md`).
//!
//! Work per query is bounded whatever its counts claim: each record read
//! consumes at least 11 octets of the message and each name at most
//! `tern_wire::parse::MAX_POINTER_HOPS` pointers, so a 65535-octet
//! message costs at most a few thousand record reads, and a count past the
//! end fails at the first missing record.
//!
//! DNSSEC (DO=1, signed zones only): every RRset goes out with its RRSIGs,
//! in one transaction, so a signed RRset never appears without them; if it
//! does not fit in the answer or authority section, TC is set (RFC 4035
//! section 3.1.1). Negative answers, wildcard expansions and referrals
//! without DS carry the proofs [`crate::lookup`] planned. Additional
//! records are written first and their RRSIGs after, as far as they fit,
//! without TC (Knot; RFC 4035 section 3.1.1 allows it).
//!
//! Size: UDP answers fit min(client's size, raised to 512; our
//! `max_udp_size`), or 512 without EDNS; TCP answers 65535 octets. When an
//! answer or authority RRset does not fit, TC is set and the answer keeps
//! the RRsets already written (both servers do this). Additional records
//! that do not fit are left out without TC (see `write_additional` for
//! referral glue, where Knot and NSD differ).

use core::ptr;

use tern_wire::build::{
    write_question_and_planned, write_question_and_records, MessageBuilder, PlannedAnswer,
};
use tern_wire::edns::Edns;
use tern_wire::hash::HashedName;
use tern_wire::name::Name;
use tern_wire::parse::{Header, Question, Section, HEADER_LEN};
use tern_wire::query::Query;
use tern_wire::types::{Opcode, RClass, RType, Rcode};

use crate::answer::{Answer, Authority, Item, Owner, Proof};
use crate::builder::additional_types;
use crate::catalog::Catalog;
use crate::cookie::{self, CookieOption, Received};
use crate::lookup::{rdata_name, resolve};
use crate::nsid::{self, Nsid};
use crate::zone::{RRset, Zone};

/// The advertised and default UDP payload size: the DNS flag day 2020
/// value, which avoids IP fragmentation on common paths.
pub const DEFAULT_UDP_SIZE: u16 = 1232;

/// The size limit without EDNS (RFC 1035 section 4.2.1), and the smallest
/// EDNS size honoured (RFC 6891 section 6.2.3).
const CLASSIC_UDP_SIZE: usize = 512;

/// The largest message (TCP's two-octet length prefix, RFC 7766).
const MAX_MESSAGE: usize = 65535;

/// An OPT record without options: root owner, type, class, TTL, RDLENGTH.
const OPT_LEN: usize = 11;

/// EDNS option "Extended DNS Error" (RFC 8914), info code 20 "Not
/// Authoritative": what Knot and NSD attach to REFUSED.
const EDE_NOT_AUTHORITATIVE: &[u8] = &[0x00, 0x0f, 0x00, 0x02, 0x00, 0x14];

/// Additional-section RRsets remembered to avoid duplicates. A referral
/// with 13 dual-stack name servers needs 26; past this many the
/// additional section simply ends.
const MAX_ADDITIONAL_RRSETS: usize = 64;

/// The longest CH TXT string served: one character-string.
const MAX_CHAOS_TEXT: usize = 255;

//----------- Transport ------------------------------------------------------

/// The transport a query arrived on; it decides the size limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UDP: the EDNS size (or 512) and our configured maximum apply.
    Udp,
    /// TCP: up to 65535 octets.
    Tcp,
}

//----------- ChaosIdentity --------------------------------------------------

/// Strings for class CH TXT queries (RFC 4892); each `None` means
/// REFUSED. tern's configuration sets them by default (`identity`: the
/// host name, `version`: `tern VERSION`, as Knot does); the `Default`
/// here, and `Options::chaos: None`, refuse both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChaosIdentity {
    /// The answer to `version.bind` and `version.server`.
    pub version: Option<String>,
    /// The answer to `id.server` and `hostname.bind`.
    pub identity: Option<String>,
}

//----------- Options --------------------------------------------------------

/// How to answer; fixed at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The largest UDP answer, also advertised in our OPT.
    pub max_udp_size: u16,
    /// CH TXT answers; `None` (the default) refuses class CH.
    pub chaos: Option<ChaosIdentity>,
    /// The identifier sent to queries that ask for it (RFC 5001); `None`
    /// (the default) sends none.
    pub nsid: Option<Nsid>,
}

impl Options {
    /// The NSID option to add to the answer of a query whose OPT holds
    /// `query_options`: empty unless an identifier is configured and the
    /// query asked for it.
    fn nsid_for(&self, query_options: &[u8]) -> &[u8] {
        match &self.nsid {
            Some(nsid) if !query_options.is_empty() && nsid::requested(query_options) => {
                nsid.as_option()
            }
            _ => &[],
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_udp_size: DEFAULT_UDP_SIZE,
            chaos: None,
            nsid: None,
        }
    }
}

//----------- Response -------------------------------------------------------

/// What to do with a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// Send the first `len` octets of the output buffer. The rcode and TC
    /// can be read back with [`summary`].
    Send(usize),
    /// Send nothing.
    Drop,
}

/// The rcode (header bits only) and TC flag of an answer written by
/// [`respond`], for statistics.
pub fn summary(answer: &[u8]) -> Option<(Rcode, bool)> {
    let header = Header::from_message(answer).ok()?;
    Some((Rcode(u16::from(header.rcode_bits())), header.tc()))
}

//----------- append_option --------------------------------------------------

/// Appends one or more raw EDNS options (`code, length, value` each) to an
/// answer already written, `out[..len]`, whose last record is an OPT
/// without options: an answer of [`respond`] to a query with EDNS, or one
/// copied from the answer cache. This lets cached answers carry a COOKIE.
///
/// Checks that ARCOUNT is not 0 and that the last 11 octets are an empty
/// OPT (root owner, type 41, RDLENGTH 0), then writes the options and sets
/// the RDLENGTH. Returns the new length, or `None`, leaving `out[..len]` as
/// it was, if the answer does not end that way or the result would exceed
/// `limit` (or `out`): then answer with [`respond_to`] instead, which
/// truncates as needed. The caller must know the answer was written for a
/// query with EDNS: an answer without OPT whose last record's RDATA ended
/// in those 11 octets would pass the check.
pub fn append_option(out: &mut [u8], len: usize, limit: usize, option: &[u8]) -> Option<usize> {
    append_options(out, len, limit, &[option])
}

/// [`append_option`] for several pieces of options, written in order (an
/// NSID and a COOKIE, say): all or none.
pub fn append_options(
    out: &mut [u8],
    len: usize,
    limit: usize,
    options: &[&[u8]],
) -> Option<usize> {
    let arcount = out.get(10..12).filter(|_| len <= out.len())?;
    if arcount == [0, 0] {
        return None;
    }
    extend_opt(out, len, limit, 0, options)
}

/// Adds `options`, in order, to the OPT record ending `out[..len]` whose
/// RDATA is `rdlen` octets long; the same checks as [`append_option`].
fn extend_opt(
    out: &mut [u8],
    len: usize,
    limit: usize,
    rdlen: usize,
    options: &[&[u8]],
) -> Option<usize> {
    let start = len.checked_sub(OPT_LEN + rdlen)?;
    if start < HEADER_LEN || len > out.len() {
        return None;
    }
    let opt = &out[start..start + OPT_LEN];
    if opt[..3] != [0, 0, 41] || usize::from(u16::from_be_bytes([opt[9], opt[10]])) != rdlen {
        return None;
    }
    let added: usize = options.iter().map(|option| option.len()).sum();
    let new_rdlen = u16::try_from(rdlen + added).ok()?;
    let new_len = len + added;
    if new_len > limit.min(out.len()) {
        return None;
    }
    let mut at = len;
    for option in options {
        out[at..at + option.len()].copy_from_slice(option);
        at += option.len();
    }
    out[start + 9..start + OPT_LEN].copy_from_slice(&new_rdlen.to_be_bytes());
    Some(new_len)
}

//----------- bad_cookie -----------------------------------------------------

/// A BADCOOKIE answer (extended rcode 23, RFC 7873 section 5.2.3) to a UDP
/// query with a well-formed COOKIE option, carrying `cookie` (a fresh
/// server cookie for the client, from [`crate::cookie::check`]): the
/// header (ID, QR, opcode, RD and CD copied, no AA), the question, an OPT
/// with our UDP size, DO copied and the option; no records. It is what
/// BIND sends when it requires a server cookie (flags checked against BIND
/// 9.18), and the "slip" of response rate limiting for clients that sent
/// a cookie, so they retry with a valid one. BADCOOKIE is for UDP: a TCP
/// client has proved its address.
///
/// `Drop` unless the query is a QUERY with one readable question and an
/// OPT of version 0 with a well-formed COOKIE option.
pub fn bad_cookie(
    query: &Query<'_>,
    options: &Options,
    cookie: &CookieOption,
    out: &mut [u8],
) -> Response {
    let Ok(message) = query.message() else {
        return Response::Drop;
    };
    let header = message.header();
    let (Some(question), Ok(Some(edns))) = (message.question(), query.edns()) else {
        return Response::Drop;
    };
    if header.qr()
        || header.opcode() != Opcode::QUERY
        || edns.version > 0
        || !matches!(cookie::received(edns.options), Received::Present { .. })
    {
        return Response::Drop;
    }
    let Ok(mut builder) = MessageBuilder::new(out, CLASSIC_UDP_SIZE) else {
        return Response::Drop;
    };
    start_header(&mut builder, header, true);
    builder.set_rcode(Rcode::BADCOOKIE);
    let size = options.max_udp_size.max(CLASSIC_UDP_SIZE as u16);
    let cookie = cookie.as_bytes();
    if builder.push_question_bytes(question.bytes).is_err()
        || builder
            .push_opt(size, Rcode::BADCOOKIE, edns.dnssec_ok, cookie)
            .is_err()
    {
        return Response::Drop;
    }
    let len = builder.finish();
    // The NSID after the COOKIE, if asked for and it fits in 512 octets.
    let nsid = options.nsid_for(edns.options);
    if nsid.is_empty() {
        return Response::Send(len);
    }
    let extended = extend_opt(out, len, CLASSIC_UDP_SIZE, cookie.len(), &[nsid]);
    Response::Send(extended.unwrap_or(len))
}

//----------- respond --------------------------------------------------------

/// Answers one query into `out` (65535 octets suffice for any answer):
/// [`respond_to`] without extra options, for a caller that holds the
/// bytes only (a server parses each query once into a [`Query`] and calls
/// [`respond_to`]).
pub fn respond(
    catalog: &Catalog,
    query: &[u8],
    transport: Transport,
    options: &Options,
    out: &mut [u8],
) -> Response {
    respond_to(catalog, &Query::parse(query), transport, options, &[], out)
}

/// [`respond_to`] for a query's bytes: parses them, then answers.
pub fn respond_with(
    catalog: &Catalog,
    query: &[u8],
    transport: Transport,
    options: &Options,
    extra_options: &[u8],
    out: &mut [u8],
) -> Response {
    let query = Query::parse(query);
    respond_to(catalog, &query, transport, options, extra_options, out)
}

/// Answers one query into `out`, adding `extra_options` (raw EDNS options,
/// `code, length, value` each, such as a [`CookieOption`]) to the OPT of
/// the answer, if it has one, after any option of ours (EDE). Room is
/// kept for them, so a UDP answer still fits the client's size (TC is set
/// as usual when records do not).
///
/// Which answers carry them follows BIND 9.18's COOKIE: answers of every
/// rcode, REFUSED, NOTIMP, and FORMERR for a query without a question; not
/// BADVERS, nor the FORMERR for a malformed COOKIE option. The NSID of
/// [`Options::nsid`], when the query asks for it, goes in every answer
/// with an OPT, before `extra_options`.
///
/// COOKIE (`docs/decisions/0006-dns-cookies.md`): a COOKIE option of a
/// length RFC 7873 does not allow, anywhere in the OPT, gets FORMERR with
/// the question and an OPT without options (BIND), whatever the opcode or
/// EDNS version; a query without a question but with a COOKIE option is
/// answered NOERROR, header and OPT only, when `extra_options` carry a
/// COOKIE (RFC 7873 section 5.4, BIND).
///
/// The query was parsed once by the caller ([`Query::parse`]); nothing
/// here reads its bytes again.
pub fn respond_to(
    catalog: &Catalog,
    query: &Query<'_>,
    transport: Transport,
    options: &Options,
    extra_options: &[u8],
    out: &mut [u8],
) -> Response {
    let mut zone = None;
    answer_query(
        catalog,
        query,
        None,
        transport,
        options,
        extra_options,
        out,
        &mut zone,
    )
}

/// [`respond_to`], and the catalog slot of the zone the query's name is
/// in ([`Catalog::find_position`] of the lowercased name), found on the
/// way, so that a server counting answers by zone does not walk the
/// catalog again: `None` when the name is in none of our zones, or was
/// not looked up (a query answered before that: malformed, another
/// opcode or class, BADVERS, a transfer; every query a cache key can be
/// made for is looked up).
///
/// `lowered`: the query name already lowercased, with its hash under
/// `NameHasher::process` (the zone index's), if the caller has them (a
/// cache key's name and the answer cache's hash of it), so that it is
/// neither lowercased nor hashed twice; it must be the question's name,
/// lowercased (`None`: lowercased here, and hashed by the look-up).
pub fn respond_to_at(
    catalog: &Catalog,
    query: &Query<'_>,
    lowered: Option<HashedName<'_>>,
    transport: Transport,
    options: &Options,
    extra_options: &[u8],
    out: &mut [u8],
) -> (Response, Option<u32>) {
    let mut zone = None;
    let response = answer_query(
        catalog,
        query,
        lowered,
        transport,
        options,
        extra_options,
        out,
        &mut zone,
    );
    (response, zone)
}

/// [`respond_to_at`] over UDP without extra options, for a query whose
/// parts a server's cache path has read already: the same octets as
/// [`respond_to_at`] gives it, without reading its parts again.
///
/// The caller must hand the query's own parts: `header` and `question`
/// those of `query.message()` (which parsed, with one question), `edns`
/// that of `query.edns_ref()`, whose records read (`query.edns()` is
/// `Ok`: a query whose records do not read is answered FORMERR by
/// [`respond_to_at`], and would be answered here as if it had no OPT),
/// without a COOKIE option of a bad length (`crate::cookie::is_malformed`,
/// answered FORMERR too), and `lowered` its question's name lowercased.
/// These are checked in debug builds only. The rest of respond's checks
/// are made again (a few compares): a query with QR set, of another
/// opcode than QUERY, of a class other than IN and ANY, of type AXFR or
/// IXFR, or with an OPT of version above 0 is answered by
/// [`respond_to_at`]. The cache's miss path under a flood of new names
/// takes this, once per query: inlined there (its frame, its eight
/// arguments and the pair it returns cost about 30 instructions a query).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn respond_vetted(
    catalog: &Catalog,
    query: &Query<'_>,
    header: &Header,
    question: &Question<'_>,
    edns: Option<&Edns<'_>>,
    lowered: HashedName<'_>,
    options: &Options,
    out: &mut [u8],
) -> (Response, Option<u32>) {
    if header.qr()
        || header.opcode() != Opcode::QUERY
        || !matches!(question.qclass, RClass::IN | RClass::ANY)
        || matches!(question.qtype, RType::AXFR | RType::IXFR)
        || edns.is_some_and(|edns| edns.version > 0)
    {
        return respond_to_at(
            catalog,
            query,
            Some(lowered),
            Transport::Udp,
            options,
            &[],
            out,
        );
    }
    debug_assert!(edns.is_none_or(|edns| cookie::received(edns.options) != Received::Malformed));
    debug_assert!(
        query.edns().is_ok() && query.edns_ref().map(ptr::from_ref) == edns.map(ptr::from_ref),
        "respond_vetted: the query's own OPT, whose records read"
    );
    debug_assert!(
        query
            .message()
            .is_ok_and(|message| message.header() == header
                && message
                    .question_ref()
                    .is_some_and(|own| ptr::eq(own.bytes, question.bytes))),
        "respond_vetted: the query's own header and question"
    );
    debug_assert!(lowered.name().eq_ignore_case(question.name));
    let nsid = edns.map_or(&[][..], |edns| options.nsid_for(edns.options));
    let context = Context {
        header,
        question,
        edns,
        options,
        limit: size_limit(Transport::Udp, edns, options),
        nsid,
        extra: &[],
    };
    let mut zone = None;
    let response = answer_in_zones(catalog, &context, Some(lowered), &mut zone, out);
    (response, zone)
}

/// [`respond_to_at`]'s work; `located` is set to the slot, if any, when
/// the name is looked up.
#[allow(clippy::too_many_arguments)]
fn answer_query(
    catalog: &Catalog,
    query: &Query<'_>,
    lowered: Option<HashedName<'_>>,
    transport: Transport,
    options: &Options,
    extra_options: &[u8],
    out: &mut [u8],
    located: &mut Option<u32>,
) -> Response {
    let Some(header) = query.header() else {
        return Response::Drop;
    };
    if header.qr() {
        return Response::Drop;
    }
    if header.opcode() != Opcode::QUERY {
        return not_implemented(&header, query, transport, options, extra_options, out);
    }
    if header.counts()[0] > 1 {
        return error(&header, None, Rcode::FORMERR, true, out);
    }
    let Ok(message) = query.message() else {
        return Response::Drop;
    };
    let question = message.question();
    let Ok(edns) = query.edns() else {
        return error(&header, question.as_ref(), Rcode::FORMERR, true, out);
    };
    let limit = size_limit(transport, edns.as_ref(), options);
    let received = edns
        .as_ref()
        .map_or(Received::Absent, |edns| cookie::received(edns.options));
    // The replies without records below: header, question if any, OPT.
    let nsid = edns
        .as_ref()
        .map_or(&[][..], |edns| options.nsid_for(edns.options));
    let reply = Error {
        header: &header,
        question: question.as_ref(),
        edns: edns.as_ref(),
        limit,
        nsid,
    };
    if matches!(received, Received::Malformed) {
        return reply.write(Rcode::FORMERR, true, &[], out);
    }
    let Some(question) = question.as_ref() else {
        let cookie_only =
            received != Received::Absent && cookie::received(extra_options) != Received::Absent;
        let rcode = if cookie_only {
            Rcode::NOERROR
        } else {
            Rcode::FORMERR
        };
        return reply.write(rcode, true, extra_options, out);
    };
    if edns.as_ref().is_some_and(|edns| edns.version > 0) {
        return reply.write(Rcode::BADVERS, true, &[], out);
    }
    let context = Context {
        header: &header,
        question,
        edns: edns.as_ref(),
        options,
        limit,
        nsid,
        extra: extra_options,
    };

    if matches!(question.qtype, RType::AXFR | RType::IXFR) {
        let rcode = if transport == Transport::Udp {
            Rcode::NOTIMP
        } else {
            Rcode::REFUSED
        };
        return context.short(rcode, false, out);
    }
    if question.qclass == RClass::CH {
        return context.chaos(out);
    }
    // Class ANY is answered as IN (Knot and NSD do; we serve class IN
    // only, so IN is all there is): the question bytes are echoed as asked.
    if question.qclass != RClass::IN && question.qclass != RClass::ANY {
        return context.short(Rcode::REFUSED, true, out);
    }
    answer_in_zones(catalog, &context, lowered, located, out)
}

/// The steps of [`answer_query`] after its checks, shared with
/// [`respond_vetted`]: the name lowercased (unless `lowered` has it),
/// its zone located, the walk and the answer's writing. Inlined always in
/// both: a call and its frame cost more than the few steps it saves.
#[inline(always)]
fn answer_in_zones(
    catalog: &Catalog,
    context: &Context<'_>,
    lowered: Option<HashedName<'_>>,
    located: &mut Option<u32>,
    out: &mut [u8],
) -> Response {
    let question = context.question;
    let lowered_here;
    let (qname, qname_hash) = match lowered {
        Some(hashed) => {
            let name = hashed.name();
            debug_assert!(
                name.eq_ignore_case(question.name)
                    && !name.as_bytes().iter().any(u8::is_ascii_uppercase)
            );
            (name, Some(hashed.hash()))
        }
        None => {
            lowered_here = question.name.to_lower();
            (lowered_here.as_name(), None)
        }
    };
    // The zone of the name, walked once: DS, answered from the parent's
    // side of a cut, looks again from one label up.
    let position = catalog.locate(qname);
    *located = position.map(|(slot, _)| slot);
    // Where the zone's origin starts in the name, when the zone is the
    // one located (not DS's parent side).
    let (zone, origin_at) = if question.qtype == RType::DS {
        (catalog.find_for_query(qname, question.qtype), None)
    } else {
        match position {
            Some((slot, at)) => (catalog.zone_at(slot).map(|zone| &**zone), Some(at)),
            None => (None, None),
        }
    };
    let Some(zone) = zone else {
        return context.short(Rcode::REFUSED, true, out);
    };
    if zone.expired {
        return context.short(Rcode::SERVFAIL, true, out);
    }
    // DNSSEC records go out with DO=1 from signed zones only (Knot and NSD
    // add no DS to referrals from an unsigned zone).
    let dnssec = zone.signed && context.edns.is_some_and(|edns| edns.dnssec_ok);
    let mut answer = Answer::new(dnssec);
    // The origin read once, for the walk and the SOA: the name's octets
    // from where the catalog found it (both lowercased), or the zone's
    // (its arena read: about 30 instructions).
    let origin = origin_at
        .and_then(|at| qname.as_bytes().get(at..))
        .map_or_else(|| zone.origin(), Name::from_validated);
    debug_assert_eq!(origin.as_bytes(), zone.origin().as_bytes());
    resolve(
        zone,
        origin,
        (qname, origin_at),
        qname_hash,
        question.qtype,
        &mut answer,
    );
    // The usual negative answer is written here, whole, without the
    // call of `Context::answer` and its frame (a builder's room).
    if long_way() {
        return context.answer(zone, origin, &answer, origin_at.is_some(), out);
    }
    if origin_at.is_some() {
        if let Some(len) = context.negative(zone, origin, &answer, out) {
            written_whole();
            // Most queries carry neither NSID nor options to add: no call.
            if context.nsid.is_empty() && context.extra.is_empty() {
                return Response::Send(len);
            }
            return context.extend(out, Response::Send(len), &[]);
        }
    }
    if let Some(len) = context.positive(zone, &answer, out) {
        written_whole();
        if context.nsid.is_empty() && context.extra.is_empty() {
            return Response::Send(len);
        }
        return context.extend(out, Response::Send(len), &[]);
    }
    context.answer(zone, origin, &answer, origin_at.is_some(), out)
}

/// Whether answers are written the long way only, never whole (tests
/// compare the two ways' octets).
#[cfg(not(test))]
#[inline(always)]
const fn long_way() -> bool {
    false
}

#[cfg(test)]
thread_local! {
    /// Set by a test to write every answer the long way.
    static LONG_WAY: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

#[cfg(test)]
fn long_way() -> bool {
    LONG_WAY.with(core::cell::Cell::get)
}

/// Counts an answer written whole (tests: that the answers of the usual
/// shapes are, not only that their octets are right).
#[cfg(not(test))]
#[inline(always)]
const fn written_whole() {}

#[cfg(test)]
thread_local! {
    /// The answers written whole on this thread so far.
    static WRITTEN_WHOLE: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

#[cfg(test)]
fn written_whole() {
    WRITTEN_WHOLE.with(|count| count.set(count.get() + 1));
}

/// The size limit of an answer: 65535 over TCP; over UDP the client's
/// EDNS size (raised to 512) capped by ours, or 512 without EDNS.
fn size_limit(transport: Transport, edns: Option<&Edns<'_>>, options: &Options) -> usize {
    match (transport, edns) {
        (Transport::Tcp, _) => MAX_MESSAGE,
        (Transport::Udp, None) => CLASSIC_UDP_SIZE,
        (Transport::Udp, Some(edns)) => usize::from(edns.udp_size)
            .max(CLASSIC_UDP_SIZE)
            .min(usize::from(options.max_udp_size).max(CLASSIC_UDP_SIZE)),
    }
}

/// NOTIMP for an opcode other than QUERY, decided before anything but the
/// header is read: genreport's `opcode` checks send a bare header (QDCOUNT
/// 0), which would otherwise be a FORMERR. The opcode is echoed and QR is
/// the only flag set (RD, CD, AA, TC, AD, Z of the query are not copied:
/// they are defined for QUERY only, and genreport's `opcodeflg` counts a
/// copied one as a fault). The question is echoed when the message holds
/// exactly one readable question (Knot), the OPT (with the extra options)
/// when the whole message reads well; otherwise the answer is the bare
/// header. A malformed COOKIE option makes it a FORMERR, as in BIND.
fn not_implemented(
    header: &Header,
    query: &Query<'_>,
    transport: Transport,
    options: &Options,
    extra_options: &[u8],
    out: &mut [u8],
) -> Response {
    let question = query.question();
    let edns = query.edns().ok().flatten();
    let error = Error {
        header,
        question: question.as_ref(),
        edns: edns.as_ref(),
        limit: size_limit(transport, edns.as_ref(), options),
        nsid: edns
            .as_ref()
            .map_or(&[][..], |edns| options.nsid_for(edns.options)),
    };
    if edns.is_some_and(|edns| cookie::received(edns.options) == Received::Malformed) {
        return error.write(Rcode::FORMERR, false, &[], out);
    }
    error.write(Rcode::NOTIMP, false, extra_options, out)
}

/// A reply without the normal context and without an OPT (FORMERR for a
/// message that does not read well): header and, if given, question. RD
/// and CD are copied if `copy_flags`.
fn error(
    header: &Header,
    question: Option<&Question<'_>>,
    rcode: Rcode,
    copy_flags: bool,
    out: &mut [u8],
) -> Response {
    let error = Error {
        header,
        question,
        edns: None,
        limit: MAX_MESSAGE,
        nsid: &[],
    };
    error.write(rcode, copy_flags, &[], out)
}

//----------- Error ----------------------------------------------------------

/// What a reply without records needs.
struct Error<'a> {
    header: &'a Header,
    question: Option<&'a Question<'a>>,
    edns: Option<&'a Edns<'a>>,
    limit: usize,
    /// The NSID option to send (empty: none).
    nsid: &'a [u8],
}

impl Error<'_> {
    /// Header, question if any, OPT if the query had one (with the NSID
    /// and `extra_options` when they fit the limit). RD and CD are copied
    /// if `copy_flags`.
    fn write(
        &self,
        rcode: Rcode,
        copy_flags: bool,
        extra_options: &[u8],
        out: &mut [u8],
    ) -> Response {
        let len = {
            let Ok(mut builder) = MessageBuilder::new(out, MAX_MESSAGE) else {
                return Response::Drop;
            };
            start_header(&mut builder, self.header, copy_flags);
            builder.set_rcode(rcode);
            if let Some(question) = self.question {
                if builder.push_question_bytes(question.bytes).is_err() {
                    return Response::Drop;
                }
            }
            if let Some(edns) = self.edns {
                if builder
                    .push_opt(DEFAULT_UDP_SIZE, rcode, edns.dnssec_ok, &[])
                    .is_err()
                {
                    return Response::Drop;
                }
            }
            builder.finish()
        };
        if self.edns.is_none() || (extra_options.is_empty() && self.nsid.is_empty()) {
            return Response::Send(len);
        }
        // Without the options if they do not fit (nothing else could go).
        let limit = self.limit.max(len);
        let extended = extend_opt(out, len, limit, 0, &[self.nsid, extra_options]);
        Response::Send(extended.unwrap_or(len))
    }
}

/// ID, QR, opcode and (optionally) RD and CD of the query; every other flag
/// clear, so TC, AA, Z, AD and RA set in a query never reach the answer.
/// CD is copied as RFC 4035 section 3.1.6 asks of a security-aware server
/// (Knot 3.2 and NSD 4.6 clear it; see docs/decisions/0001).
#[inline]
fn start_header(builder: &mut MessageBuilder<'_>, header: &Header, copy_flags: bool) {
    builder.set_id(header.id());
    builder.set_qr(true);
    builder.set_opcode(header.opcode().0);
    builder.set_rd(copy_flags && header.rd());
    builder.set_cd(copy_flags && header.cd());
}

//----------- Context --------------------------------------------------------

/// What every reply to a well-formed query needs.
struct Context<'a> {
    header: &'a Header,
    question: &'a Question<'a>,
    edns: Option<&'a Edns<'a>>,
    options: &'a Options,
    limit: usize,
    /// The NSID option, added after ours (empty: none).
    nsid: &'a [u8],
    /// Options added after ours and the NSID to the OPT (see
    /// [`respond_to`]).
    extra: &'a [u8],
}

impl Context<'_> {
    /// Starts a reply: header, question, room for the OPT with
    /// `opt_options`, the NSID and the extra options.
    #[inline]
    fn begin<'b>(
        &self,
        out: &'b mut [u8],
        copy_flags: bool,
        opt_options: &[u8],
    ) -> Option<MessageBuilder<'b>> {
        let mut builder = MessageBuilder::new(out, self.limit).ok()?;
        self.start(&mut builder, copy_flags, opt_options)?;
        Some(builder)
    }

    /// [`Context::begin`] on a builder the caller made, which is then not
    /// moved (a builder is a couple of hundred octets: its compression
    /// table; each move is a copy).
    #[inline]
    fn start(
        &self,
        builder: &mut MessageBuilder<'_>,
        copy_flags: bool,
        opt_options: &[u8],
    ) -> Option<()> {
        start_header(builder, self.header, copy_flags);
        builder.push_parsed_question(self.question).ok()?;
        if self.edns.is_some() {
            builder
                .reserve(OPT_LEN + opt_options.len() + self.nsid.len() + self.extra.len())
                .ok()?;
        }
        Some(())
    }

    /// Finishes a reply: the OPT (if the query had one) with `opt_options`,
    /// the counts. The room for the NSID and the extra options stays
    /// reserved: see [`Context::extend`].
    fn end(&self, builder: &mut MessageBuilder<'_>, rcode: Rcode, opt_options: &[u8]) -> Response {
        builder.set_rcode(rcode);
        if let Some(edns) = self.edns {
            builder.release(OPT_LEN + opt_options.len());
            let size = self.options.max_udp_size.max(CLASSIC_UDP_SIZE as u16);
            if builder
                .push_opt(size, rcode, edns.dnssec_ok, opt_options)
                .is_err()
            {
                return Response::Drop;
            }
        }
        Response::Send(builder.finish_in_place())
    }

    /// Adds the NSID and the extra options to the OPT that
    /// [`Context::end`] wrote with `opt_options`, in the room
    /// [`Context::begin`] kept.
    fn extend(&self, out: &mut [u8], response: Response, opt_options: &[u8]) -> Response {
        let added = [self.nsid, self.extra];
        match response {
            Response::Send(len)
                if self.edns.is_some() && !(self.extra.is_empty() && self.nsid.is_empty()) =>
            {
                match extend_opt(out, len, self.limit, opt_options.len(), &added) {
                    Some(len) => Response::Send(len),
                    None => Response::Drop,
                }
            }
            response => response,
        }
    }

    /// A reply with no records: REFUSED (with EDE 20), NOTIMP, SERVFAIL.
    fn short(&self, rcode: Rcode, copy_flags: bool, out: &mut [u8]) -> Response {
        let options = if rcode == Rcode::REFUSED {
            EDE_NOT_AUTHORITATIVE
        } else {
            &[][..]
        };
        self.bare(rcode, copy_flags, options, out)
    }

    /// A reply with no records and `options` (ours) in its OPT.
    fn bare(&self, rcode: Rcode, copy_flags: bool, options: &[u8], out: &mut [u8]) -> Response {
        let response = match self.begin(out, copy_flags, options) {
            Some(mut builder) => self.end(&mut builder, rcode, options),
            None => Response::Drop,
        };
        self.extend(out, response, options)
    }

    /// Class CH (RFC 4892): the configured identity strings as TXT, TTL 0,
    /// AA clear; any other name or type (ANY included), or a string not
    /// configured, REFUSED without an EDE option (Knot 3.2 on each).
    fn chaos(&self, out: &mut [u8]) -> Response {
        let name = self.question.name.to_lower();
        let chaos = self.options.chaos.as_ref();
        let text = match name.as_bytes() {
            b"\x07version\x04bind\x00" | b"\x07version\x06server\x00" => {
                chaos.and_then(|c| c.version.as_deref())
            }
            b"\x02id\x06server\x00" | b"\x08hostname\x04bind\x00" => {
                chaos.and_then(|c| c.identity.as_deref())
            }
            _ => None,
        };
        let Some(text) = text.filter(|_| self.question.qtype == RType::TXT) else {
            return self.bare(Rcode::REFUSED, true, &[], out);
        };
        let Some(mut builder) = self.begin(out, true, &[]) else {
            return Response::Drop;
        };
        let text = &text.as_bytes()[..text.len().min(MAX_CHAOS_TEXT)];
        let mut rdata = [0u8; MAX_CHAOS_TEXT + 1];
        rdata[0] = text.len() as u8;
        rdata[1..=text.len()].copy_from_slice(text);
        builder.set_section(Section::Answer);
        if builder
            .push_record(
                self.question.name,
                RType::TXT,
                RClass::CH,
                0,
                &rdata[..=text.len()],
            )
            .is_err()
        {
            builder.set_tc(true);
        }
        let response = self.end(&mut builder, Rcode::NOERROR, &[]);
        self.extend(out, response, &[])
    }

    /// Encodes a planned answer on a builder, the records one by one;
    /// `in_zone`: the question's name is known to be `origin` or below it
    /// (the zone was found by it). Out of line: its frame (the builder's
    /// room) is not paid by the usual negative answer, written whole by
    /// [`Context::negative`] before it.
    #[inline(never)]
    fn answer(
        &self,
        zone: &Zone,
        origin: Name<'_>,
        answer: &Answer,
        in_zone: bool,
        out: &mut [u8],
    ) -> Response {
        let Ok(mut builder) = MessageBuilder::new(out, self.limit) else {
            return Response::Drop;
        };
        if self.start(&mut builder, true, &[]).is_none() {
            return Response::Drop;
        }
        builder.set_aa(answer.authoritative);
        // The builder is lent, not moved: it holds its compression table.
        let mut writer = Writer {
            zone,
            origin,
            answer,
            qname: self.question.name,
            in_zone,
            builder: &mut builder,
        };
        writer.write_all();
        let response = self.end(&mut builder, answer.rcode, &[]);
        self.extend(out, response, &[])
    }
}

impl Context<'_> {
    /// The usual negative answer (NXDOMAIN or NODATA without DNSSEC
    /// records: the apex SOA alone in the authority section) written whole
    /// into `out`, without a builder: the question and the SOA from the
    /// zone's precompressed plan in one step
    /// ([`tern_wire::build::write_question_and_planned`]), then the header
    /// and the OPT (its options but the NSID and the extra ones, which
    /// [`Context::extend`] adds in the room kept for them), the same
    /// octets as [`Writer::write_all`] and [`Context::end`] write. Called
    /// only where `origin` is the question's name's own suffix, where the
    /// catalog found the zone (not for DS, whose zone is looked up again
    /// from one label up). Its length; `None` for any other
    /// answer or when the step declines (octets past the header may have
    /// been written): the caller writes it the long way, from the header
    /// on. A builder's setting up (its compression table), its header
    /// written a bit at a time and its counts one by one cost more than
    /// these octets (about 100 instructions a negative answer). Inlined
    /// always into the answering (`#[inline]` was not followed: a call and
    /// its frame of about 25 instructions).
    #[inline(always)]
    fn negative(
        &self,
        zone: &Zone,
        origin: Name<'_>,
        answer: &Answer,
        out: &mut [u8],
    ) -> Option<usize> {
        if answer.authority != Authority::Soa
            || answer.dnssec
            || !answer.items().is_empty()
            || !answer.proofs().is_empty()
        {
            return None;
        }
        let plan = zone.soa_plan.as_ref()?;
        // The SOA's one record, read where `rdata_iter` would read it
        // (its length, then the RDATA) without making the iterator.
        let soa = zone.rrset(zone.soa);
        let arena = zone.rdata_at(soa.rdata_start);
        let rdata = arena.get(..2).filter(|_| soa.count > 0).and_then(|len| {
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            arena.get(2..2 + len)
        })?;
        debug_assert_eq!(Some(rdata), zone.rdata_iter(soa).next());
        let limit = self.whole_limit(out)?;
        let origin_at = self.question.name.len().checked_sub(origin.len())?;
        let planned = PlannedAnswer {
            question: self.question,
            origin_at,
            rtype: RType::SOA,
            ttl: zone.negative_ttl,
            rdata,
            plan,
        };
        let end = write_question_and_planned(out, limit, &planned)?;
        self.finish_whole(out, end, answer, [0, 1])
    }

    /// The usual positive answer (one RRset owned by the question's name,
    /// of a type whose RDATA has no names to compress, without DNSSEC
    /// records, authority or additional records: an A, AAAA or TXT,
    /// found or from a wildcard) written whole into `out`, without a
    /// builder ([`tern_wire::build::write_question_and_records`]), the same
    /// octets as [`Context::answer`] writes; `None` for any other answer
    /// or when it does not fit as it is (octets past the header may have
    /// been written): the caller writes it the long way.
    #[inline(always)]
    fn positive(&self, zone: &Zone, answer: &Answer, out: &mut [u8]) -> Option<usize> {
        let [Item::RRset {
            owner: Owner::Qname,
            set,
        }] = *answer.items()
        else {
            return None;
        };
        if answer.authority != Authority::None || answer.dnssec || !answer.proofs().is_empty() {
            return None;
        }
        let rrset = zone.rrset(set);
        // Glue: the additional section's targets.
        if rrset.glue_count > 0 {
            return None;
        }
        let limit = self.whole_limit(out)?;
        let records = zone.rdata_iter(rrset);
        let (end, count) = write_question_and_records(
            out,
            limit,
            self.question,
            (rrset.rtype, rrset.ttl),
            records,
        )?;
        self.finish_whole(out, end, answer, [count, 0])
    }

    /// The limit of an answer written whole: the builder's (the message
    /// within the limit and the buffer), less the room `start` keeps for
    /// the OPT (with the NSID and the extra options) after the question;
    /// `None` where a header does not fit in front of that room.
    #[inline(always)]
    fn whole_limit(&self, out: &[u8]) -> Option<usize> {
        let room = match self.edns {
            Some(_) => OPT_LEN + self.nsid.len() + self.extra.len(),
            None => 0,
        };
        self.limit
            .min(out.len())
            .checked_sub(room)
            .filter(|&limit| limit >= HEADER_LEN)
    }

    /// Ends an answer written whole up to `end` with `counts` answer and
    /// authority records: the header and the OPT, what `start_header`,
    /// `set_aa`, `end` and `finish_in_place` write (ID, QR, the opcode,
    /// AA, RD and CD, the rcode; one question, the counts, the OPT if the
    /// query had one, without the NSID and the extra options, which
    /// [`Context::extend`] adds in the room kept for them). Its length.
    #[inline(always)]
    fn finish_whole(
        &self,
        out: &mut [u8],
        end: usize,
        answer: &Answer,
        [answers, authority]: [u16; 2],
    ) -> Option<usize> {
        let header = self.header;
        let rcode = answer.rcode;
        let flags = 0x80
            | (header.opcode().0 & 0x0f) << 3
            | if answer.authoritative { 0x04 } else { 0 }
            | u8::from(header.rd());
        let flags2 = if header.cd() { 0x10 } else { 0 } | rcode.header_bits();
        let [id0, id1] = header.id().to_be_bytes();
        let additional = u8::from(self.edns.is_some());
        let [an0, an1] = answers.to_be_bytes();
        let [ns0, ns1] = authority.to_be_bytes();
        let head: [u8; HEADER_LEN] = [
            id0, id1, flags, flags2, 0, 1, an0, an1, ns0, ns1, 0, additional,
        ];
        out.get_mut(..HEADER_LEN)?.copy_from_slice(&head);
        let Some(edns) = self.edns else {
            return Some(end);
        };
        // The OPT, as `MessageBuilder::push_opt` writes it without options.
        let size = self.options.max_udp_size.max(CLASSIC_UDP_SIZE as u16);
        let ttl = u32::from(rcode.extended_bits()) << 24 | if edns.dnssec_ok { 0x8000 } else { 0 };
        let opt = out.get_mut(end..end + OPT_LEN)?;
        opt[..3].copy_from_slice(&[0, 0, 41]);
        opt[3..5].copy_from_slice(&size.to_be_bytes());
        opt[5..9].copy_from_slice(&ttl.to_be_bytes());
        opt[9..].copy_from_slice(&[0, 0]);
        Some(end + OPT_LEN)
    }
}

//----------- Seen ----------------------------------------------------------

/// The additional RRsets written so far, to write each once: (node,
/// type, arena offset of the owner name).
struct Seen {
    entries: [(u32, RType, u32); MAX_ADDITIONAL_RRSETS],
    count: usize,
    last_failed: bool,
}

//----------- Writer ---------------------------------------------------------

/// Writes an answer plan's sections.
struct Writer<'a, 'w, 'b> {
    zone: &'a Zone,
    /// The zone's origin: the query name's octets from where
    /// [`Catalog::locate`] found it, or `zone.origin()`.
    origin: Name<'a>,
    answer: &'a Answer,
    qname: Name<'a>,
    /// Whether `qname` is known to be `origin` or below it: the
    /// precompressed SOA does not compare the origin again. Only true for
    /// the zone [`Catalog::locate`] returned for `qname`.
    in_zone: bool,
    builder: &'w mut MessageBuilder<'b>,
}

impl<'a> Writer<'a, '_, '_> {
    fn write_all(&mut self) {
        self.builder.set_section(Section::Answer);
        for item in self.answer.items() {
            let written = match *item {
                Item::RRset { owner, set } => {
                    let owner = self.owner(owner);
                    let rrset = *self.zone.rrset(set);
                    self.write_rrset(owner, &rrset, rrset.ttl)
                }
                Item::SynthCname { owner, target, ttl } => {
                    let owner = self.owner(owner);
                    let answer: &'a Answer = self.answer;
                    let target = answer.synth(target);
                    self.builder
                        .push_record(owner, RType::CNAME, RClass::IN, ttl, target.as_bytes())
                        .is_ok()
                }
            };
            if !written {
                self.builder.set_tc(true);
                return;
            }
        }

        self.builder.set_section(Section::Authority);
        if !self.write_authority() {
            self.builder.set_tc(true);
            return;
        }

        self.builder.set_section(Section::Additional);
        self.write_additional();
    }

    /// The authority section: the NS of a referral and (DO=1) its DS, or
    /// the SOA of a negative answer, and (DO=1) the NSEC or NSEC3 proofs,
    /// each RRset with its RRSIGs. The order is NSD's: the proofs of
    /// wildcard expansions and of an NXDOMAIN before the SOA, those of a
    /// NODATA after it (when they do not all fit, TC is set and what
    /// precedes stays, as in NSD). False if something did not fit.
    fn write_authority(&mut self) -> bool {
        let answer: &'a Answer = self.answer;
        let (before, after) = answer
            .proofs()
            .split_at(answer.soa_at().min(answer.proofs().len()));
        let proofs = |writer: &mut Self, proofs: &[Proof]| {
            proofs.iter().all(|proof| {
                let rrset = *writer.zone.rrset(proof.set);
                writer.write_rrset(writer.zone.node_name(proof.node), &rrset, rrset.ttl)
            })
        };
        match answer.authority {
            Authority::None => proofs(self, answer.proofs()),
            Authority::Soa => proofs(self, before) && self.write_soa() && proofs(self, after),
            Authority::Delegation { cut, set } => {
                let rrset = *self.zone.rrset(set);
                let owner = self.zone.node_name(cut);
                self.write_rrset(owner, &rrset, rrset.ttl)
                    && answer.ds.is_none_or(|ds| {
                        let ds = *self.zone.rrset(ds);
                        self.write_rrset(owner, &ds, ds.ttl)
                    })
                    && proofs(self, answer.proofs())
            }
        }
    }

    /// Writes one RRset and, with DO=1, the RRSIGs covering it (with the
    /// same owner and TTL), all or nothing: signatures are never dropped
    /// to make an answer fit (RFC 4035 section 3.1.1 asks for TC instead).
    fn write_rrset(&mut self, owner: Name<'_>, rrset: &RRset, ttl: u32) -> bool {
        self.write_records(owner, rrset, ttl, self.answer.dnssec)
    }

    /// The apex SOA of a negative answer, with the negative TTL, and with
    /// DO=1 its RRSIGs, all or nothing: the record from the zone's
    /// precompressed plan (the same octets as `write_rrset` gives, without
    /// the compression look-ups, when it follows the question directly).
    fn write_soa(&mut self) -> bool {
        let zone = self.zone;
        let soa = *zone.rrset(zone.soa);
        let (Some(plan), Some(rdata)) = (&zone.soa_plan, zone.rdata_iter(&soa).next()) else {
            return self.write_rrset(self.origin, &soa, zone.negative_ttl);
        };
        let mark = self.builder.mark();
        let ttl = zone.negative_ttl;
        if self
            .builder
            .push_precompressed_in(
                self.origin,
                RType::SOA,
                RClass::IN,
                ttl,
                rdata,
                plan,
                self.in_zone,
            )
            .is_err()
        {
            return false;
        }
        if self.answer.dnssec && !self.write_signatures(self.origin, &soa, ttl) {
            self.builder.rollback(mark);
            return false;
        }
        true
    }

    /// Writes the records of an RRset, and its RRSIGs if `signed`, all or
    /// nothing.
    fn write_records(&mut self, owner: Name<'_>, rrset: &RRset, ttl: u32, signed: bool) -> bool {
        let mark = self.builder.mark();
        let records = self
            .zone
            .rdata_iter(rrset)
            .map(|rdata| (rrset.rtype, rdata));
        let sigs = self
            .zone
            .sigs(rrset)
            .filter(|_| signed)
            .map(|rdata| (RType::RRSIG, rdata));
        // The query name's records (most answers): the owner points at the
        // question without a compression search.
        let question = self.is_qname(owner);
        for (rtype, rdata) in records.chain(sigs) {
            let pushed = if question {
                self.builder
                    .push_record_owned_by_question(owner, rtype, RClass::IN, ttl, rdata)
            } else {
                self.builder
                    .push_record(owner, rtype, RClass::IN, ttl, rdata)
            };
            if pushed.is_err() {
                self.builder.rollback(mark);
                return false;
            }
        }
        true
    }

    /// Writes the RRSIGs covering an RRset, all or nothing.
    fn write_signatures(&mut self, owner: Name<'_>, rrset: &RRset, ttl: u32) -> bool {
        let mark = self.builder.mark();
        for rdata in self.zone.sigs(rrset) {
            if self
                .builder
                .push_record(owner, RType::RRSIG, RClass::IN, ttl, rdata)
                .is_err()
            {
                self.builder.rollback(mark);
                return false;
            }
        }
        true
    }

    /// Whether `owner` is the question's name itself (the very bytes
    /// [`Writer::owner`] gives for [`Owner::Qname`]), not a name equal to it.
    fn is_qname(&self, owner: Name<'_>) -> bool {
        core::ptr::eq(owner.as_bytes(), self.qname.as_bytes())
    }

    fn owner(&self, owner: Owner) -> Name<'a> {
        match owner {
            Owner::Qname => self.qname,
            Owner::Rdata(at) => rdata_name(self.zone, at),
            Owner::Synth(index) => self.answer.synth(index),
            Owner::Node(node) => self.zone.node_name(node),
        }
    }

    /// A/AAAA (and SVCB/HTTPS) of the targets of the NS, MX, SRV, SVCB and
    /// HTTPS RRsets written. Each (node, type) is written once.
    ///
    /// Answers follow Knot's `put_additional`: RRsets in the order written,
    /// per target A then AAAA, required glue first; what does not fit is
    /// skipped. Referrals follow NSD 4.6: the A records of every glue
    /// target, then the AAAA records, skipping what does not fit, without
    /// TC. Knot instead sets TC when required glue does not fit (RFC 9471),
    /// but where it cuts depends on its own name compression, which is less
    /// compact than ours; NSD's rule depends only on the order, so it can
    /// be matched exactly and it keeps IPv4 glue for every name server.
    fn write_additional(&mut self) {
        // Most answers have no targets (negative answers, A, AAAA, TXT):
        // they skip the table of what was written (768 octets to clear).
        if !self.has_targets() {
            return;
        }
        let mut seen = Seen {
            entries: [(0, RType(0), 0); MAX_ADDITIONAL_RRSETS],
            count: 0,
            last_failed: false,
        };
        self.write_additional_records(&mut seen);
        if self.answer.dnssec {
            self.write_additional_signatures(&seen);
        }
    }

    /// Whether the answer has RRsets whose targets may go into the
    /// additional section: a referral's NS, or answer RRsets with glue.
    fn has_targets(&self) -> bool {
        match self.answer.authority {
            Authority::Delegation { .. } => true,
            _ => self.answer.items().iter().any(|item| match item {
                Item::RRset { set, .. } => self.zone.rrset(*set).glue_count > 0,
                Item::SynthCname { .. } => false,
            }),
        }
    }

    fn write_additional_records(&mut self, seen: &mut Seen) {
        if let Authority::Delegation { set, .. } = self.answer.authority {
            let rrset = *self.zone.rrset(set);
            for rtype in [RType::A, RType::AAAA] {
                for glue in self.zone.glue(&rrset) {
                    if !self.write_glue(glue.node, glue.target, rtype, seen) {
                        return;
                    }
                }
            }
            return;
        }
        let sets = self.answer.items().iter().filter_map(|item| match item {
            Item::RRset { set, .. } => Some(*set),
            Item::SynthCname { .. } => None,
        });
        for set in sets {
            let rrset = *self.zone.rrset(set);
            for glue in self.zone.glue(&rrset) {
                for &rtype in additional_types(rrset.rtype) {
                    if !self.write_glue(glue.node, glue.target, rtype, seen) {
                        return;
                    }
                    if seen.last_failed {
                        break; // a smaller record of the next target may fit
                    }
                }
            }
        }
    }

    /// DO=1: the RRSIGs of the additional RRsets written, in their order,
    /// each RRset's signatures all or none, until one does not fit. This is
    /// Knot's order (records first, then signatures); RFC 4035 section
    /// 3.1.1 lets additional-section RRSIGs be left out without TC.
    fn write_additional_signatures(&mut self, seen: &Seen) {
        for &(node, rtype, target) in &seen.entries[..seen.count] {
            let Some(index) = self.zone.rrset_index(node, rtype) else {
                continue;
            };
            let rrset = *self.zone.rrset(index);
            let owner = rdata_name(self.zone, target);
            if !self.write_signatures(owner, &rrset, rrset.ttl) {
                return;
            }
        }
    }

    /// Writes one additional RRset unless already written. Returns false
    /// when no more additional records may be written.
    fn write_glue(&mut self, node: u32, target: u32, rtype: RType, seen: &mut Seen) -> bool {
        seen.last_failed = false;
        let Some(index) = self.zone.rrset_index(node, rtype) else {
            return true;
        };
        if seen.entries[..seen.count]
            .iter()
            .any(|&(n, t, _)| (n, t) == (node, rtype))
        {
            return true;
        }
        if seen.count == MAX_ADDITIONAL_RRSETS {
            return false;
        }
        let owner = rdata_name(self.zone, target);
        let additional = *self.zone.rrset(index);
        if self.write_records(owner, &additional, additional.ttl, false) {
            seen.entries[seen.count] = (node, rtype, target);
            seen.count += 1;
        } else {
            seen.last_failed = true;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use core::cell::Cell;

    use tern_wire::name::NameBuf;

    use super::*;
    use crate::ZoneBuilder;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// `example.`, its SOA's MNAME a long name outside it (the SOA record
    /// is 224 octets in an answer); with its precompressed plan or, for
    /// the long way, without.
    fn zone(planned: bool) -> Catalog {
        let origin = name("example.");
        let mut builder = ZoneBuilder::new(origin.as_name());
        let mname = format!("{}net.", "abcdefghi.".repeat(18));
        let mut soa = name(&mname).as_bytes().to_vec();
        soa.extend_from_slice(name("host.example.").as_bytes());
        for value in [1u32, 3600, 900, 604800, 300] {
            soa.extend_from_slice(&value.to_be_bytes());
        }
        builder
            .insert(origin.as_name(), RType::SOA, RClass::IN, 3600, &soa)
            .unwrap();
        builder
            .insert(
                name("www.example.").as_name(),
                RType::A,
                RClass::IN,
                60,
                &[192, 0, 2, 1],
            )
            .unwrap();
        let mut zone = builder.finish().unwrap();
        assert!(zone.soa_plan.is_some());
        if !planned {
            zone.soa_plan = None;
        }
        Catalog::new([zone])
    }

    /// A query of `qname` and `qtype` with an OPT of UDP size 512.
    fn query(qname: &str, qtype: RType) -> Vec<u8> {
        let mut q = vec![0x42, 0x42, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        q.extend_from_slice(name(qname).as_bytes());
        q.extend_from_slice(&qtype.0.to_be_bytes());
        q.extend_from_slice(&RClass::IN.0.to_be_bytes());
        q.extend_from_slice(&[0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0]);
        q
    }

    /// The usual negative answer when the room kept for the OPT and the
    /// options added after it (here a server cookie's place, `extra`) is
    /// all that makes it not fit: `Context::whole_limit` takes that room
    /// off the limit, `write_question_and_planned` declines on it, and the
    /// long way (which keeps the room once, in `Context::start`) writes
    /// what it writes without the plan (the question alone, TC), byte for
    /// byte; for every size of the extra options from none to more than
    /// the 512 octets hold, NXDOMAIN and NODATA, each way into its own
    /// garbage. An answer that is not truncated is written whole (counted),
    /// at every size: the one that fits to the octet too. Had the whole
    /// way kept the room twice, the answers where the question fits once
    /// with it but not twice would be dropped.
    #[test]
    fn a_negative_answer_that_fits_only_without_the_opt_room_is_written_the_long_way() {
        let planned = zone(true);
        let long_way = zone(false);
        let mut truncated_after_decline = 0;
        let mut whole = 0;
        for qname in ["nx.example.", "www.example."] {
            let q = query(qname, RType::TXT);
            let question = q.len() - 11;
            for extra_len in 4..=520usize {
                let mut extra = vec![0xfd, 0xe9];
                extra.extend_from_slice(&((extra_len - 4) as u16).to_be_bytes());
                extra.resize(extra_len, 0);
                let room = OPT_LEN + extra_len;
                let mut answers = Vec::new();
                let before = WRITTEN_WHOLE.with(Cell::get);
                for (catalog, garbage) in [(&planned, 0xa5), (&long_way, 0x5a)] {
                    let mut out = vec![garbage; 65535];
                    let response = respond_with(
                        catalog,
                        &q,
                        Transport::Udp,
                        &Options::default(),
                        &extra,
                        &mut out,
                    );
                    answers.push(match response {
                        Response::Send(len) => Some(out[..len].to_vec()),
                        Response::Drop => None,
                    });
                }
                assert_eq!(answers[0], answers[1], "{qname} extra {extra_len}");
                let Some(answer) = &answers[0] else {
                    // The question and the room do not fit even once.
                    assert!(
                        question + room > CLASSIC_UDP_SIZE,
                        "{qname} extra {extra_len}"
                    );
                    continue;
                };
                let tc = answer[2] & 0x02 != 0;
                let authority = u16::from_be_bytes([answer[8], answer[9]]);
                if tc {
                    assert_eq!(authority, 0);
                    if question + 2 * room > CLASSIC_UDP_SIZE {
                        truncated_after_decline += 1;
                    }
                } else {
                    assert_eq!(authority, 1, "{qname} extra {extra_len}");
                    whole += 1;
                }
                // The planned catalog's answer, if it is not truncated, is
                // written whole (an octet of the limit lost sends the ones
                // that fit exactly the long way).
                let written = WRITTEN_WHOLE.with(Cell::get) - before;
                assert_eq!(written, usize::from(!tc), "{qname} extra {extra_len}");
            }
        }
        assert!(
            whole > 0 && truncated_after_decline > 0,
            "{whole} {truncated_after_decline}"
        );
    }

    /// `respond_vetted` given a query whose records do not read (an OPT
    /// cut short) would answer it as if it had no OPT, where
    /// `respond_to_at` answers FORMERR: its precondition, checked in debug
    /// builds.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the query's own OPT, whose records read")]
    fn a_query_whose_records_do_not_read_is_not_vetted() {
        use tern_wire::hash::NameHasher;
        let catalog = zone(true);
        let mut q = query("nx.example.", RType::A);
        q.truncate(q.len() - 3);
        let query = Query::parse(&q);
        assert!(query.edns().is_err());
        let message = query.message().unwrap();
        let question = message.question_ref().unwrap();
        let lower = question.name.to_lower();
        let hash = NameHasher::process().hash(lower.as_bytes());
        let mut out = vec![0; 512];
        respond_vetted(
            &catalog,
            &query,
            message.header(),
            question,
            query.edns_ref(),
            HashedName::with_hash(lower.as_name(), hash),
            &Options::default(),
            &mut out,
        );
    }

    /// `respond_vetted` writes what `respond_to_at` writes, octet for
    /// octet, and finds the same zone, for queries of every kind a server's
    /// cache path hands it (and a few it must pass on: another class, a
    /// transfer, QR set, another opcode, EDNS version 1): names in the
    /// zone and not (mixed case, missing, the apex, below a name), types
    /// with and without records, every header flag set or clear, without
    /// EDNS and with it (DO, an unknown option), at sizes from 512 octets
    /// to 4096 and in a buffer of 20 octets; with the zone's plan (the
    /// negative answers written whole, without a builder) and without.
    #[test]
    fn a_vetted_query_is_answered_as_respond_to_at_answers_it() {
        use tern_wire::hash::NameHasher;
        let mut compared = 0;
        let mut negative = 0;
        for planned in [true, false] {
            let catalog = zone(planned);
            for qname in [
                "nx.example.",
                "WwW.Example.",
                "example.",
                "a.b.www.example.",
                "other.",
            ] {
                for qtype in [RType::A, RType::TXT, RType::SOA, RType::DS, RType::AXFR] {
                    for qclass in [RClass::IN, RClass::ANY, RClass::CH] {
                        for (flags, flags2) in [
                            (0x00, 0x00),
                            (0x01, 0x10),
                            (0x87, 0xf0),
                            (0x80, 0),
                            (0x28, 0),
                        ] {
                            for edns in [
                                None,
                                Some((512u16, false, 0u8, &[][..])),
                                Some((4096, true, 0, &[0xfd, 0xe9, 0, 1, 7][..])),
                                Some((1232, false, 1, &[][..])),
                            ] {
                                let mut q = vec![0x42, 0x43, flags, flags2, 0, 1, 0, 0, 0, 0, 0, 0];
                                q.extend_from_slice(name(qname).as_bytes());
                                q.extend_from_slice(&qtype.0.to_be_bytes());
                                q.extend_from_slice(&qclass.0.to_be_bytes());
                                if let Some((size, dnssec_ok, version, options)) = edns {
                                    q[11] = 1;
                                    q.extend_from_slice(&[0, 0, 41]);
                                    q.extend_from_slice(&size.to_be_bytes());
                                    q.extend_from_slice(&[
                                        0,
                                        version,
                                        if dnssec_ok { 0x80 } else { 0 },
                                        0,
                                    ]);
                                    q.extend_from_slice(&(options.len() as u16).to_be_bytes());
                                    q.extend_from_slice(options);
                                }
                                let query = Query::parse(&q);
                                let message = query.message().unwrap();
                                let question = message.question_ref().unwrap();
                                let lower = question.name.to_lower();
                                let hash = NameHasher::process().hash(lower.as_bytes());
                                let lowered = HashedName::with_hash(lower.as_name(), hash);
                                for size in [65535, 20] {
                                    // Each its own garbage: an octet left unwritten differs.
                                    let (mut want, mut got) =
                                        (vec![0xa5u8; size], vec![0x5au8; size]);
                                    let options = Options::default();
                                    let expected = respond_to_at(
                                        &catalog,
                                        &query,
                                        Some(lowered),
                                        Transport::Udp,
                                        &options,
                                        &[],
                                        &mut want,
                                    );
                                    let vetted = respond_vetted(
                                        &catalog,
                                        &query,
                                        message.header(),
                                        question,
                                        query.edns_ref(),
                                        lowered,
                                        &options,
                                        &mut got,
                                    );
                                    assert_eq!(
                                        vetted, expected,
                                        "{qname} {qtype:?} {qclass:?} {flags:x} {edns:?} {size}"
                                    );
                                    if let (Response::Send(len), _) = expected {
                                        assert_eq!(got[..len], want[..len], "{qname} {qtype:?} {qclass:?} {flags:x} {edns:?} {size}");
                                        let nxdomain = want[3] & 0x0f == 3;
                                        negative += usize::from(nxdomain && planned);
                                    }
                                    compared += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 2 * 5 * 5 * 3 * 5 * 4 * 2);
        assert!(negative > 50, "{negative}");
    }

    /// Where the records after the question end and their types, for the
    /// first `count` records from `at` (names skipped as written: labels
    /// up to the root or a pointer).
    fn record_types(message: &[u8], mut at: usize, count: usize) -> Vec<RType> {
        let mut types = Vec::new();
        for _ in 0..count {
            loop {
                let octet = message[at];
                if octet == 0 {
                    at += 1;
                    break;
                }
                if octet & 0xc0 == 0xc0 {
                    at += 2;
                    break;
                }
                at += 1 + usize::from(octet);
            }
            types.push(RType(u16::from_be_bytes([message[at], message[at + 1]])));
            let rdlen = usize::from(u16::from_be_bytes([message[at + 8], message[at + 9]]));
            at += 10 + rdlen;
        }
        types
    }

    /// A signature's RDATA covering `covered`, by `signer` (what makes a
    /// zone signed and its RRsets go out with RRSIGs under DO=1).
    fn rrsig(covered: RType, signer: &str) -> Vec<u8> {
        let mut rdata = covered.0.to_be_bytes().to_vec();
        rdata.extend_from_slice(&[13, 1, 0, 0, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]);
        rdata.extend_from_slice(name(signer).as_bytes());
        rdata.extend_from_slice(&[7; 64]);
        rdata
    }

    /// The answers written whole (the usual negative answer, the usual
    /// positive one) are the octets the long way writes, for queries of
    /// every kind: names found, missing, under a wildcard, at and below a
    /// delegation, DS from the parent's side, a CNAME, types of one record
    /// and several, with names to compress (MX) and without, SRV and SVCB
    /// with targets in the zone (glue: the long way) and out of it, names
    /// of 255 octets (long labels, one-octet labels: the plan declines,
    /// the positive answer's pointer), mixed case, class IN and ANY, every
    /// header flag pair and two IDs, with and without EDNS (DO, NSID asked
    /// of a server with one, an extra option), signed zones (with NSEC and
    /// without proofs) queried with DO=0 (written whole) and DO=1 (never),
    /// over UDP and TCP, answers that fit, that fit only without the room
    /// for the options, that must be truncated, in buffers from 20 octets
    /// up, of the answer's own length and one octet short. Each way writes into a
    /// buffer of its own garbage (0xA5 or 0x5A, or the answer before):
    /// an octet either way leaves unwritten differs. And every answer of
    /// the usual shapes (see `whole_shaped`) is counted as written whole,
    /// no other: the test fails if the whole path is lost (a limit off by
    /// one) or taken where it must not be.
    #[test]
    fn answers_written_whole_are_the_long_ways_octets() {
        let origin = name("example.");
        let mut builder = ZoneBuilder::new(origin.as_name());
        let soa = crate::test_model::soa(1);
        let srv =
            |target: &str| [&[0u8, 1, 0, 2, 0x13, 0xc4][..], name(target).as_bytes()].concat();
        let svcb = |target: &str| [&[0u8, 1][..], name(target).as_bytes()].concat();
        let records: Vec<(&str, RType, Vec<u8>)> = vec![
            ("example.", RType::SOA, soa),
            (
                "example.",
                RType::NS,
                name("ns.example.").as_bytes().to_vec(),
            ),
            ("ns.example.", RType::A, vec![192, 0, 2, 53]),
            ("www.example.", RType::A, vec![192, 0, 2, 1]),
            ("www.example.", RType::A, vec![192, 0, 2, 2]),
            (
                "www.example.",
                RType::AAAA,
                vec![0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            ),
            (
                "txt.example.",
                RType::TXT,
                [&[200u8][..], &[b'x'; 200][..]].concat(),
            ),
            (
                "txt.example.",
                RType::TXT,
                [&[250u8][..], &[b'y'; 250][..]].concat(),
            ),
            (
                "txt.example.",
                RType::TXT,
                [&[255u8][..], &[b'z'; 255][..]].concat(),
            ),
            ("*.wild.example.", RType::A, vec![192, 0, 2, 7]),
            ("*.wild.example.", RType::TXT, vec![3, b'a', b'b', b'c']),
            (
                "mx.example.",
                RType::MX,
                [&[0u8, 10][..], name("mail.mx.example.").as_bytes()].concat(),
            ),
            ("mail.mx.example.", RType::A, vec![192, 0, 2, 25]),
            (
                "alias.example.",
                RType::CNAME,
                name("www.example.").as_bytes().to_vec(),
            ),
            (
                "sub.example.",
                RType::NS,
                name("ns.sub.example.").as_bytes().to_vec(),
            ),
            (
                "sub.example.",
                RType::DS,
                vec![0x30, 0x39, 13, 2, 0xab, 0xcd],
            ),
            ("ns.sub.example.", RType::A, vec![192, 0, 2, 54]),
            ("srv.example.", RType::SRV, srv("target.example.")),
            ("svc.example.", RType::SVCB, svcb("target.example.")),
            ("target.example.", RType::A, vec![192, 0, 2, 80]),
            (
                "target.example.",
                RType::AAAA,
                [0x20, 1, 0xd, 0xb8].repeat(4),
            ),
            ("far.example.", RType::SRV, srv("target.far.")),
            ("far.example.", RType::SVCB, svcb("target.far.")),
        ];
        for (owner, rtype, rdata) in &records {
            builder
                .insert(name(owner).as_name(), *rtype, RClass::IN, 300, rdata)
                .unwrap();
        }
        // `signed.`: its RRsets with their RRSIGs, NSEC proofs.
        let signed_origin = name("signed.");
        let mut signed = ZoneBuilder::new(signed_origin.as_name());
        let mut signed_soa = name("ns.signed.").as_bytes().to_vec();
        signed_soa.extend_from_slice(name("host.signed.").as_bytes());
        for value in [1u32, 3600, 900, 604800, 300] {
            signed_soa.extend_from_slice(&value.to_be_bytes());
        }
        let nsec =
            |next: &str| [name(next).as_bytes(), &[0, 7, 0x62, 0, 0, 0, 0, 0, 3][..]].concat();
        let signed_records: Vec<(&str, RType, Vec<u8>)> = vec![
            ("signed.", RType::SOA, signed_soa),
            ("signed.", RType::RRSIG, rrsig(RType::SOA, "signed.")),
            ("signed.", RType::NSEC, nsec("www.signed.")),
            ("signed.", RType::RRSIG, rrsig(RType::NSEC, "signed.")),
            ("www.signed.", RType::A, vec![192, 0, 2, 9]),
            ("www.signed.", RType::RRSIG, rrsig(RType::A, "signed.")),
            ("www.signed.", RType::NSEC, nsec("signed.")),
            ("www.signed.", RType::RRSIG, rrsig(RType::NSEC, "signed.")),
        ];
        for (owner, rtype, rdata) in &signed_records {
            signed
                .insert(name(owner).as_name(), *rtype, RClass::IN, 300, rdata)
                .unwrap();
        }
        let signed = signed.finish().unwrap();
        assert!(signed.signed);
        // `nonsec.`: signed, without proofs to give (DO=1 sends the
        // SOA's RRSIG alone).
        let nonsec_origin = name("nonsec.");
        let mut nonsec = ZoneBuilder::new(nonsec_origin.as_name());
        for (rtype, rdata) in [
            (RType::SOA, signed_records[0].2.clone()),
            (RType::RRSIG, rrsig(RType::SOA, "nonsec.")),
        ] {
            nonsec
                .insert(nonsec_origin.as_name(), rtype, RClass::IN, 300, &rdata)
                .unwrap();
        }
        nonsec
            .insert(
                name("www.nonsec.").as_name(),
                RType::A,
                RClass::IN,
                300,
                &[192, 0, 2, 10],
            )
            .unwrap();
        nonsec
            .insert(
                name("www.nonsec.").as_name(),
                RType::RRSIG,
                RClass::IN,
                300,
                &rrsig(RType::A, "nonsec."),
            )
            .unwrap();
        let nonsec = nonsec.finish().unwrap();
        assert!(nonsec.signed);
        let catalog = Catalog::new([builder.finish().unwrap(), signed, nonsec]);
        let options = Options {
            max_udp_size: 1232,
            ..Options::default()
        };
        let with_nsid = Options {
            nsid: Some(Nsid::new(b"core-1").unwrap()),
            ..Options::default()
        };
        // Names of 255 octets: long labels, and one-octet labels (more
        // than the compression table holds).
        let long = format!(
            "{}.{}.{}.{}.example.",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(53)
        );
        let many = format!("{}example.", "a.".repeat(123));
        let long_wild = format!(
            "{}.{}.{}.{}.wild.example.",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(48)
        );
        for text in [&long, &many, &long_wild] {
            assert_eq!(name(text).as_bytes().len(), 255, "{text}");
        }
        // Whether an answer is of a shape written whole: not truncated,
        // authoritative, NOERROR or NXDOMAIN, no additional record but the
        // OPT; and either no answer and one authority record (the SOA: a
        // referral is not authoritative), or one RRset of the question's
        // type (no CNAME, no RRSIG) without names to compress and no
        // authority record. But for the names the plan declines (more
        // labels than the compression table holds, as the longest names
        // may have), DS's negative answers (the zone looked up again from
        // one label up: no origin in the question to point to) and the
        // RRsets with glue in the zone, which may have been left out
        // where they did not fit.
        let whole_shaped = |answer: &[u8], qname: &str, qtype: RType, edns: bool| {
            let count = |at: usize| usize::from(u16::from_be_bytes([answer[at], answer[at + 1]]));
            let (an, ns, ar) = (count(6), count(8), count(10));
            let rcode = answer[3] & 0x0f;
            if answer[2] & 0x06 != 0x04 || !matches!(rcode, 0 | 3) || ar != usize::from(edns) {
                return false;
            }
            if an == 0 && ns == 1 {
                return qtype != RType::DS && name(qname).as_bytes().len() < 128;
            }
            let question_end = HEADER_LEN + name(qname).as_bytes().len() + 4;
            rcode == 0
                && an > 0
                && ns == 0
                && !matches!(qtype, RType::MX | RType::NS | RType::SOA)
                && !matches!(qname, "srv.example." | "svc.example.")
                && record_types(answer, question_end, an)
                    .iter()
                    .all(|&rtype| rtype == qtype)
        };
        // The vetted test's pairs, and every flag of a query but QR and
        // the opcode (AA, TC, RD; RA, Z, AD, CD) set, and all but RD and CD.
        let flag_pairs = [
            (0x00, 0x00),
            (0x01, 0x10),
            (0x87, 0xf0),
            (0x80, 0),
            (0x28, 0),
            (0x07, 0xf0),
            (0x06, 0xe0),
        ];
        let mut buffers = [vec![0xa5u8; 65535], vec![0x5au8; 65535]];
        let mut whole = [0usize; 2];
        let mut shaped = 0;
        let mut compared = 0;
        let mut by_transport = [0usize; 2];
        for qname in [
            "www.example.",
            "WwW.ExAmPle.",
            "txt.example.",
            "nx.example.",
            "a.b.nx.example.",
            "x.wild.example.",
            "X.Y.wild.example.",
            "mx.example.",
            "alias.example.",
            "sub.example.",
            "a.sub.example.",
            "srv.example.",
            "svc.example.",
            "far.example.",
            "example.",
            "other.",
            &long,
            &many,
            &long_wild,
            "signed.",
            "www.signed.",
            "nx.signed.",
            "nx.nonsec.",
            "www.nonsec.",
        ] {
            for qtype in [
                RType::A,
                RType::AAAA,
                RType::TXT,
                RType::MX,
                RType::NS,
                RType::SOA,
                RType::SRV,
                RType::SVCB,
                RType::DS,
            ] {
                for qclass in [RClass::IN, RClass::ANY] {
                    for edns in [
                        None,
                        Some((512u16, false, &[][..])),
                        Some((4096, true, &[0, 3, 0, 0][..])),
                    ] {
                        for (pair, &(flags, flags2)) in flag_pairs.iter().enumerate() {
                            let mut q = vec![0, 0, flags, flags2, 0, 1, 0, 0, 0, 0, 0, 0];
                            q.extend_from_slice(name(qname).as_bytes());
                            q.extend_from_slice(&qtype.0.to_be_bytes());
                            q.extend_from_slice(&qclass.0.to_be_bytes());
                            if let Some((size, dnssec_ok, opts)) = edns {
                                q[11] = 1;
                                q.extend_from_slice(&[0, 0, 41]);
                                q.extend_from_slice(&size.to_be_bytes());
                                q.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0]);
                                q.extend_from_slice(&(opts.len() as u16).to_be_bytes());
                                q.extend_from_slice(opts);
                            }
                            for (transport, fixed) in [
                                (Transport::Udp, &[20, 60, 100, 300, 512, 65535][..]),
                                (Transport::Tcp, &[20, 300, 65535][..]),
                            ] {
                                for opts in [&options, &with_nsid] {
                                    for extra in [&[][..], &[0xfd, 0xe9, 0, 4, 1, 2, 3, 4][..]] {
                                        // And a buffer of the answer's
                                        // length, one octet short of it
                                        // (a limit off by one).
                                        q[..2].copy_from_slice(&[0, 0]);
                                        let mut out = vec![0; 65535];
                                        let fits = match respond_to(
                                            &catalog,
                                            &Query::parse(&q),
                                            transport,
                                            opts,
                                            extra,
                                            &mut out,
                                        ) {
                                            Response::Send(len) => len,
                                            Response::Drop => 20,
                                        };
                                        let sizes = [fixed, &[fits, fits - 1]].concat();
                                        for (k, &size) in sizes.iter().enumerate() {
                                            // Two IDs, each with every flag pair.
                                            let id: u16 = [0x1234, 0xfedc][(pair + k) % 2];
                                            q[..2].copy_from_slice(&id.to_be_bytes());
                                            let query = Query::parse(&q);
                                            let mut answers = Vec::new();
                                            for (long, out) in buffers.iter_mut().enumerate() {
                                                // Garbage, or the answer before.
                                                if compared % 2 == 0 {
                                                    out.fill([0xa5, 0x5a][long]);
                                                }
                                                LONG_WAY.with(|way| way.set(long == 1));
                                                let before = WRITTEN_WHOLE.with(Cell::get);
                                                let response = respond_to(
                                                    &catalog,
                                                    &query,
                                                    transport,
                                                    opts,
                                                    extra,
                                                    &mut out[..size],
                                                );
                                                whole[long] +=
                                                    WRITTEN_WHOLE.with(Cell::get) - before;
                                                answers.push(match response {
                                                    Response::Send(len) => {
                                                        Some(out[..len].to_vec())
                                                    }
                                                    Response::Drop => None,
                                                });
                                            }
                                            LONG_WAY.with(|way| way.set(false));
                                            let context = format!(
                                                "{qname} {qtype:?} {qclass:?} {flags:x} {flags2:x} \
                                                 {id:x} {edns:?} {transport:?} {extra:?} {size}"
                                            );
                                            assert_eq!(answers[0], answers[1], "{context}");
                                            compared += 1;
                                            by_transport
                                                [usize::from(transport == Transport::Tcp)] += 1;
                                            if let Some(answer) = &answers[0] {
                                                if whole_shaped(
                                                    answer,
                                                    qname,
                                                    qtype,
                                                    edns.is_some(),
                                                ) {
                                                    shaped += 1;
                                                }
                                                assert_eq!(
                                                    whole[0], shaped,
                                                    "written whole or not: {context}"
                                                );
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 24 * 9 * 2 * 3 * 7 * 2 * 2 * (8 + 5));
        assert_eq!(by_transport, [compared / 13 * 8, compared / 13 * 5]);
        // Neither way is the long way's own doing: it writes nothing whole.
        assert_eq!(whole[1], 0);
        assert!(whole[0] > 10_000, "{whole:?}");
    }
}
