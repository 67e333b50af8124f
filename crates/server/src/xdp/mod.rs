//! The AF_XDP path (issue 12, docs/decisions/0012-af-xdp.md): UDP queries
//! taken from the network interface before the kernel's IP and UDP code,
//! answered by the same worker as the socket path, and sent back as whole
//! frames.
//!
//! ```text
//!   NIC queue q ─► tern_xdp.c: UDP to a listen address and port? ─► XSK of queue q (core q % cores)
//!                          └─ anything else (ARP, ICMP, TCP, fragments, options) ─► kernel
//!   core: readable().await ─► rx (64) ─► frame::parse ─► Worker::answer_udp_lazy ─┐
//!         tx ◄─ frame::write_reply (addresses swapped, checksums) ◄── answer in a UMEM frame
//! ```
//!
//! - `program`: loads and attaches the XDP program (aya), one instance per
//!   interface, and plans which core serves which queue;
//! - `ring`: the AF_XDP socket, its UMEM and rings (the `unsafe`);
//! - this module: the per-core loop.
//!
//! Each core polls its sockets inside its own monoio reactor, beside its
//! UDP and TCP sockets: it waits for readability (io_uring's poll, or
//! epoll), then drains the rx ring in batches, answering each query
//! synchronously straight into a frame of the UMEM (the only copy of the
//! answer), and kicks the kernel to send. Nothing is allocated per packet:
//! the UMEM, rings and free list are made when the core starts.
//!
//! What the socket path does applies unchanged, because the same
//! `Worker::answer_udp_lazy` answers: the answer cache, `respond`, EDNS
//! sizes and truncation (a TC answer sends the client to TCP, which the
//! program passes to the kernel), cookies, RRL, NSID and the counters.
//! Queries to forward are handed to the forwarder with the UDP listener of
//! the same family as the client's way back, exactly as a query read from
//! that socket would be: their answers leave through the kernel.
//!
//! Frames refused by [`tern_wire::frame::parse`] are dropped and counted by
//! reason (`tern_xdp_dropped_total{reason}`).
//!
//! An UPDATE is taken as over the socket path: checked by the same worker,
//! handed to the update thread ([`crate::update::answer_udp`]) after the
//! batch, and answered, once the update thread has answered, from the UDP
//! listener it was sent to (through the kernel, as forwarded answers): its
//! answer cannot wait in the batch's frame. Knot answers SERVFAIL to DDNS
//! over XDP (`update_process_query`, "DDNS over XDP not supported");
//! docs/decisions/0015 says why tern takes it.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;

use monoio::net::udp::UdpSocket;
use tern_cache::forward::Client;
use tern_wire::frame;
use tern_wire::query::Query;

use crate::core::Core;
use crate::forward;
use crate::signal::yield_now;
use crate::worker::{PendingUpdate, UdpAnswer};

mod program;
mod ring;

pub(crate) use program::{Attachment, Local, QueuePlan};
pub use program::{MAX_XDP_ADDRESSES, MAX_XDP_QUEUES, XDP_PASSED};
pub(crate) use ring::Xsk;
use ring::{CopyMode, Exchange};

/// Frames taken from the rx ring per batch: as many as a batch of the
/// socket path's (`recvmmsg`) and then some, since no system call is
/// saved by more.
const BATCH: u32 = 64;

/// Full batches answered back to back before the loop lets the core's
/// other tasks run (as the UDP loop's `BATCHES_BEFORE_YIELD`).
const BATCHES_BEFORE_YIELD: usize = 16;

/// `sendto` calls per batch to push the tx ring out in copy mode (the
/// kernel sends at most 32 frames per call; a batch is at most 64).
const KICKS: usize = 4;

/// How soon the loop tries again when answers are still in the tx ring or
/// receive frames still wait for room in the fill ring, with nothing
/// received meanwhile.
const LEFTOVER_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

//----------- open -----------------------------------------------------------

/// Opens this core's AF_XDP sockets, one per planned queue, and puts each
/// in its interface's socket map, so the program starts redirecting that
/// queue's queries to it.
pub(crate) fn open(plans: &[QueuePlan]) -> io::Result<Vec<(Xsk, Local)>> {
    let mut sockets = Vec::with_capacity(plans.len());
    for plan in plans {
        let fail = |err: io::Error| {
            io::Error::new(
                err.kind(),
                format!("xdp: {} queue {}: {err}", plan.interface, plan.queue),
            )
        };
        let xsk = Xsk::open(plan.index, plan.queue).map_err(fail)?;
        let mode = match xsk.mode() {
            CopyMode::Copy => "copy",
            CopyMode::ZeroCopy => "zero-copy",
        };
        log::info!(
            "xdp: {} queue {}: AF_XDP socket in {mode} mode",
            plan.interface,
            plan.queue
        );
        plan.sockets
            .lock()
            .map_err(|_| fail(io::Error::other("the socket map's lock is poisoned")))?
            .set(plan.queue, xsk.fd(), 0)
            .map_err(|err| {
                fail(io::Error::other(format!(
                    "cannot register the socket: {err}"
                )))
            })?;
        sockets.push((xsk, plan.local.clone()));
    }
    Ok(sockets)
}

//----------- listener_for ---------------------------------------------------

/// The UDP listener a query sent to `destination` would have been read
/// from: the listen address equal to it, else the wildcard address of its
/// family and port.
fn listener_for(listen: &[SocketAddr], destination: SocketAddr) -> Option<usize> {
    listen
        .iter()
        .position(|&address| address == destination)
        .or_else(|| {
            listen.iter().position(|address| {
                address.ip().is_unspecified()
                    && address.is_ipv6() == destination.is_ipv6()
                    && address.port() == destination.port()
            })
        })
}

//----------- Local ----------------------------------------------------------

impl Local {
    /// Refuses a parsed datagram that the kernel would have dropped for
    /// this interface: sent to another host's Ethernet address (`Link`),
    /// or from one of its IPv4 broadcast addresses (`Source`).
    fn check(&self, datagram: frame::Datagram) -> Result<frame::Datagram, frame::Refusal> {
        if datagram.link_destination() != self.mac {
            return Err(frame::Refusal::Link);
        }
        if let std::net::IpAddr::V4(source) = datagram.source().ip() {
            if self.broadcasts.contains(&source.octets()) {
                return Err(frame::Refusal::Source);
            }
        }
        Ok(datagram)
    }
}

//----------- serve ----------------------------------------------------------

/// Serves one AF_XDP socket until the core stops; `udp` are the core's UDP
/// listeners, in the order of `core.listen` (the way back of UPDATE
/// answers).
pub(crate) async fn serve(
    xsk: Rc<RefCell<Xsk>>,
    local: Local,
    core: Rc<Core>,
    udp: Rc<[Rc<UdpSocket>]>,
) -> io::Result<()> {
    let readiness = xsk.borrow().readiness()?;
    // The retry's timer (LEFTOVER_RETRY), the loop's own; without one (no
    // descriptor left), the core's shared one (`deadline::timeout`) rather
    // than no AF_XDP at all.
    let retry = crate::timer::Timer::new().ok();
    let stop = core.stop.listener();
    'serve: loop {
        // Readiness errors are not expected on a bound socket; the rings
        // below tell the socket's real state. With answers still in the tx
        // ring (the device was busy) or receive frames not yet back in the
        // fill ring, no arriving frame may prompt the next pass: come back
        // after LEFTOVER_RETRY at the latest.
        let leftovers = xsk.borrow_mut().has_leftovers();
        let waited = if leftovers {
            let ready = readiness.readable(false);
            let waited = match &retry {
                Some(retry) => stop.or(retry.within(LEFTOVER_RETRY, ready)).await,
                None => {
                    let ready = pin!(ready);
                    let ready = crate::tcp::deadline::timeout(LEFTOVER_RETRY, ready);
                    stop.or(async { Ok(ready.await.ok()) }).await
                }
            };
            match waited {
                // The retry's timer failed (not expected): an error, as a
                // failing socket's, rather than a spin.
                Some(Err(err)) => return Err(err),
                Some(Ok(_)) => Some(()),
                None => None,
            }
        } else {
            stop.or(readiness.readable(false)).await.map(|_| ())
        };
        if waited.is_none() {
            break;
        }
        for batches in 1.. {
            let received = {
                let mut xsk = xsk.borrow_mut();
                let received = xsk.received(BATCH);
                if received > 0 {
                    answer_batch(&core, &local, &mut xsk, received, &udp);
                    xsk.recycle(received);
                }
                // Also sends what an earlier batch left in the tx ring.
                xsk.flush(KICKS);
                received
            };
            if received < BATCH {
                break;
            }
            if stop.fired() {
                break 'serve;
            }
            if batches % BATCHES_BEFORE_YIELD == 0 {
                yield_now().await;
            }
        }
    }
    Ok(())
}

/// Answers the first `received` frames of the rx ring into tx frames;
/// hands UPDATEs off, to be answered from `udp`.
fn answer_batch(
    core: &Rc<Core>,
    local: &Local,
    xsk: &mut Xsk,
    received: u32,
    udp: &[Rc<UdpSocket>],
) {
    let mut worker = core.worker.borrow_mut();
    let mut counters = core.xdp.borrow_mut();
    let now = core.now(worker.rate_limiting());
    worker.tick_cookie_clock();
    let tap = core.dnstap.as_ref().map(|tap| (tap, tern_dnstap::now()));
    // Allocates only when a query is forwarded or an UPDATE handed off (as
    // the UDP loop).
    let mut actions = Vec::new();
    let mut updates: Vec<(PendingUpdate, SocketAddr, usize)> = Vec::new();
    counters.received += u64::from(received);
    for index in 0..received {
        let exchange = xsk.answer(index, |frame, out| {
            let datagram = match frame::parse(frame).and_then(|datagram| local.check(datagram)) {
                Ok(datagram) => datagram,
                Err(refusal) => {
                    counters.refused[refusal.index()] += 1;
                    return None;
                }
            };
            let family = usize::from(datagram.is_ipv6());
            worker.count_transport(crate::stats::XDP_TRANSPORT * 2 + family, 1);
            let query = &frame[datagram.payload()];
            let header_len = datagram.reply_header_len();
            let answer = &mut out[header_len..];
            let client = datagram.source();
            // Parsed once: every stage of the worker takes it.
            let parsed = Query::parse(query);
            let outcome = worker.answer_udp_lazy(&parsed, &|| Some(client), now, answer);
            let forwarded = matches!(outcome, UdpAnswer::Forward);
            // The listener the query would have come through: the way back
            // of a forwarded answer, and dnstap's local address. Looked up
            // only for those.
            let listener = if forwarded || tap.is_some() {
                listener_for(&core.listen, datagram.destination())
            } else {
                None
            };
            let len = match outcome {
                UdpAnswer::Send(len) => Some(len),
                UdpAnswer::Drop => None,
                // An UPDATE: handed off after the batch, answered from the
                // listener it was sent to (none: dropped, as a query the
                // kernel would have had no socket for).
                UdpAnswer::Update => {
                    let update = worker.take_update();
                    let to = listener_for(&core.listen, datagram.destination());
                    if let (Some(update), Some(to)) = (update, to) {
                        updates.push((update, client, to));
                    }
                    None
                }
                UdpAnswer::Forward => listener.and_then(|listener| {
                    let client = Client::Udp {
                        listener,
                        address: client,
                        behind: None,
                    };
                    worker.forward_query(&parsed, client, now, &mut actions, answer)
                }),
            };
            if let Some((tap, time)) = tap {
                let logged = len.map(|len| &answer[..len]);
                crate::udp::log_exchange(
                    tap,
                    time,
                    Some(client),
                    listener.unwrap_or(0),
                    forwarded,
                    query,
                    logged,
                );
            }
            datagram.write_reply(out, len?)
        });
        match exchange {
            Exchange::Queued => counters.answered += 1,
            Exchange::Unanswered => {}
            Exchange::NoFrame | Exchange::Invalid => {
                counters.no_frame += 1;
                worker.count_dropped(1, 0);
            }
        }
    }
    if let Some(forwarder) = worker.forwarder() {
        if forwarder.has_prefetches() {
            forwarder.prefetches(now, &mut actions);
        }
    }
    drop(counters);
    drop(worker);
    if !actions.is_empty() {
        forward::dispatch(core, &mut actions);
    }
    for (update, client, listener) in updates {
        hand_off(core.updates.as_ref(), udp, listener, update, client);
    }
}

/// Hands `update` to the update thread; its answer goes to `client` from
/// UDP listener `listener` (none such: nothing is answered).
fn hand_off(
    replies: Option<&Rc<crate::update::Replies>>,
    udp: &[Rc<UdpSocket>],
    listener: usize,
    update: PendingUpdate,
    client: SocketAddr,
) {
    if let Some(socket) = udp.get(listener) {
        crate::update::answer_udp(replies, socket, &mut vec![(update, client)]);
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_queries_go_back_through_the_listener_they_were_sent_to() {
        let listen: Vec<SocketAddr> = [
            "192.0.2.1:53",
            "192.0.2.2:53",
            "0.0.0.0:5353",
            "[2001:db8::1]:53",
            "[::]:53",
        ]
        .iter()
        .map(|text| text.parse().unwrap())
        .collect();
        let to = |text: &str| listener_for(&listen, text.parse().unwrap());
        assert_eq!(to("192.0.2.2:53"), Some(1));
        assert_eq!(to("192.0.2.1:53"), Some(0));
        assert_eq!(to("198.51.100.7:5353"), Some(2));
        assert_eq!(to("[2001:db8::1]:53"), Some(3));
        assert_eq!(to("[2001:db8::9]:53"), Some(4));
        assert_eq!(to("198.51.100.7:53"), None);
    }
}
