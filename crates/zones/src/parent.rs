//! The parent check (issue 24; RFC 7583's Tsbm to Tret): asks the
//! servers of a policy's `parent.servers` for the zone's DS RRset, and
//! says whether every one of them shows the DS of a key awaited. A small
//! blocking DNS client over UDP, run on the `tern-resign` thread (never a
//! core), each exchange bounded by [`QUERY_TIMEOUT`]; an answer is read
//! as hostile input (parsed by `tern-wire`, only DS records of the zone's
//! own name in the answer section taken, at most [`MAX_DS`]).

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use tern_wire::build::MessageBuilder;
use tern_wire::name::{Name, NameBuf};
use tern_wire::parse::{MessageView, Section};
use tern_wire::types::{Opcode, RClass, RType};

use crate::keys;
use crate::rollover::{self, DsSeen};

/// How long one server gets to answer.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// The most datagrams read while waiting for one answer (others are
/// stray or forged and dropped).
const MAX_DATAGRAMS: usize = 16;

/// The most DS records taken from one answer.
pub const MAX_DS: usize = 64;

/// The most servers asked per check.
pub const MAX_SERVERS: usize = 16;

/// The largest answer read (UDP without EDNS: 512 octets; more is room).
const MAX_ANSWER: usize = 4096;

/// A DS RRset: its RDATA and TTL (0 when empty).
pub type DsSet = (Vec<Vec<u8>>, u32);

/// One server's DS RRset for `origin`.
pub fn query_ds(server: SocketAddr, origin: Name<'_>) -> Result<DsSet, String> {
    let bind: SocketAddr = if server.is_ipv6() {
        "[::]:0".parse().map_err(|_| "bad bind address")?
    } else {
        "0.0.0.0:0".parse().map_err(|_| "bad bind address")?
    };
    let socket = UdpSocket::bind(bind).map_err(|err| format!("binding a socket: {err}"))?;
    socket
        .connect(server)
        .map_err(|err| format!("connecting: {err}"))?;
    let id: u16 = rand::random();
    let mut query = [0u8; 512];
    let mut builder = MessageBuilder::new(&mut query, 512).map_err(|_| "query too long")?;
    builder.set_id(id);
    builder.set_opcode(Opcode::QUERY.0);
    builder
        .push_question(origin, RType::DS, RClass::IN)
        .map_err(|_| "query too long")?;
    let len = builder.finish();
    socket
        .send(&query[..len])
        .map_err(|err| format!("sending: {err}"))?;
    let deadline = Instant::now() + QUERY_TIMEOUT;
    let mut answer = vec![0u8; MAX_ANSWER];
    for _ in 0..MAX_DATAGRAMS {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        socket
            .set_read_timeout(Some(left))
            .map_err(|err| format!("setting a timeout: {err}"))?;
        let received = match socket.recv(&mut answer) {
            Ok(received) => received,
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(err) => return Err(format!("receiving: {err}")),
        };
        if let Some(result) = read_answer(&answer[..received], id, origin) {
            return result;
        }
    }
    Err(format!("no answer within {} s", QUERY_TIMEOUT.as_secs()))
}

/// The DS RRset of an answer to query `id` for `origin`'s DS; `None` if
/// the datagram is not that answer.
fn read_answer(message: &[u8], id: u16, origin: Name<'_>) -> Option<Result<DsSet, String>> {
    let view = MessageView::parse(message).ok()?;
    let header = view.header();
    let question = view.question()?;
    if !header.qr() || header.id() != id || question.qtype != RType::DS {
        return None;
    }
    if !question.name.eq_ignore_case(origin) {
        return None;
    }
    if header.tc() {
        return Some(Err("the answer is truncated".to_string()));
    }
    match header.rcode_bits() {
        0 => {}
        rcode => return Some(Err(format!("answered rcode {rcode}"))),
    }
    let mut set = Vec::new();
    let mut ttl = u32::MAX;
    for record in view.section(Section::Answer) {
        let Ok(record) = record else {
            return Some(Err("a malformed answer".to_string()));
        };
        let owner: NameBuf = record.owner.to_buf();
        if record.rtype != RType::DS || !owner.as_name().eq_ignore_case(origin) {
            continue;
        }
        if set.len() == MAX_DS {
            break;
        }
        ttl = ttl.min(record.ttl);
        set.push(record.rdata.to_vec());
    }
    let ttl = if set.is_empty() { 0 } else { ttl };
    Some(Ok((set, ttl)))
}

/// Asks every server of `servers` (at most [`MAX_SERVERS`]) for the DS
/// RRset of the zone `origin` whose keys are in `dir`, and records as seen
/// each key awaited at `now` that every one of them shows (its SHA-256
/// DS, with the highest TTL seen). Returns the tags newly seen; an error
/// of a server is logged and counts as not seen.
pub fn check(dir: &Path, origin: Name<'_>, servers: &[SocketAddr], now: u64) -> Vec<u16> {
    let awaited: Vec<(u16, Vec<u8>)> = {
        let _lock = keys::lock();
        let stored = match keys::read_keys(dir) {
            Ok(stored) => stored,
            Err(err) => {
                log::warn!("zone {origin}: parent check: {err}");
                return Vec::new();
            }
        };
        let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
        let awaiting = rollover::awaiting_ds(&metas, now);
        stored
            .iter()
            .filter(|key| awaiting.iter().any(|meta| meta.key_tag == key.meta.key_tag))
            .map(|key| (key.meta.key_tag, key.key.ds_rdata(origin)))
            .collect()
    };
    if awaited.is_empty() || servers.is_empty() {
        return Vec::new();
    }
    let mut seen_everywhere: Vec<Option<u32>> = vec![Some(0); awaited.len()];
    for &server in servers.iter().take(MAX_SERVERS) {
        match query_ds(server, origin) {
            Ok((set, ttl)) => {
                for ((_, ds), seen) in awaited.iter().zip(&mut seen_everywhere) {
                    let here = set.iter().any(|rdata| ds_equal(rdata, ds));
                    *seen = seen.filter(|_| here).map(|most| most.max(ttl));
                }
            }
            Err(err) => {
                log::info!("zone {origin}: parent check: DS query to {server}: {err}");
                seen_everywhere.iter_mut().for_each(|seen| *seen = None);
            }
        }
    }
    let mut newly = Vec::new();
    for ((tag, _), seen) in awaited.iter().zip(seen_everywhere) {
        let Some(ttl) = seen else {
            continue;
        };
        match rollover::ds_seen(dir, *tag, Some(ttl), now) {
            Ok(DsSeen::Recorded) => {
                log::info!(
                    "zone {origin}: the parent's DS set includes key {tag} at every server \
                     asked (TTL {ttl})"
                );
                newly.push(*tag);
            }
            Ok(DsSeen::Already) => {}
            Err(err) => log::warn!("zone {origin}: parent check: key {tag}: {err}"),
        }
    }
    newly
}

/// Whether two DS RDATA are the same: key tag, algorithm, digest type
/// and digest (the digest's hexadecimal case is no matter on the wire).
fn ds_equal(a: &[u8], b: &[u8]) -> bool {
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer is taken only for its query: the ID, the question and
    /// QR must match; DS records of other owners are left out; the TTL
    /// is the lowest; NODATA is an empty set, an error rcode an error.
    #[test]
    fn answers_are_matched_and_read() {
        let origin = NameBuf::from_text(b"Child.Test.", None).unwrap();
        let answer = |id: u16, rcode: u8, records: &[(&[u8], u32, &[u8])]| -> Vec<u8> {
            let mut buf = [0u8; 512];
            let mut builder = MessageBuilder::new(&mut buf, 512).unwrap();
            builder.set_id(id);
            builder.set_qr(true);
            builder.set_rcode(tern_wire::types::Rcode(rcode.into()));
            let lower = NameBuf::from_text(b"child.test.", None).unwrap();
            builder
                .push_question(lower.as_name(), RType::DS, RClass::IN)
                .unwrap();
            builder.set_section(Section::Answer);
            for (owner, ttl, rdata) in records {
                let owner = NameBuf::from_text(owner, None).unwrap();
                builder
                    .push_record(owner.as_name(), RType::DS, RClass::IN, *ttl, rdata)
                    .unwrap();
            }
            let len = builder.finish();
            buf[..len].to_vec()
        };
        let ds: &[u8] = &[1, 2, 13, 2, 0xaa];
        let message = answer(7, 0, &[(b"child.test.", 300, ds), (b"other.test.", 5, ds)]);
        assert!(read_answer(&message, 8, origin.as_name()).is_none());
        let (set, ttl) = read_answer(&message, 7, origin.as_name()).unwrap().unwrap();
        assert_eq!((set, ttl), (vec![ds.to_vec()], 300));
        let nodata = answer(7, 0, &[]);
        let (set, ttl) = read_answer(&nodata, 7, origin.as_name()).unwrap().unwrap();
        assert!(set.is_empty() && ttl == 0);
        let refused = answer(7, 5, &[]);
        assert!(read_answer(&refused, 7, origin.as_name()).unwrap().is_err());
        assert!(read_answer(&message[..20], 7, origin.as_name()).is_none());
    }
}
