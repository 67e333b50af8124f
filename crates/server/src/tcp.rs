//! DNS over TCP (RFC 7766): two-octet length framing, queries answered in
//! order on each connection, idle and per-message timeouts, and a per-core
//! connection limit past which new connections are closed at once.

use std::cell::Cell;
use std::io;
use std::rc::Rc;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use tern_authority::Transport;

use crate::worker::{Worker, MAX_MESSAGE};
use crate::TcpConfig;

/// The smallest message worth reading: a header.
const MIN_MESSAGE: usize = 12;

/// What every connection task of one listener shares on its core.
pub(crate) struct Shared {
    pub(crate) worker: Worker,
    pub(crate) limits: TcpConfig,
    pub(crate) connections: Rc<Cell<usize>>,
}

/// Accepts connections until the listener fails.
pub(crate) async fn serve(listener: TcpListener, shared: Shared) -> io::Result<()> {
    let shared = Rc::new(shared);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors and the like: keep the listener alive.
            Err(_) => continue,
        };
        if shared.connections.get() >= shared.limits.max_connections {
            drop(stream);
            continue;
        }
        shared.connections.set(shared.connections.get() + 1);
        let shared = Rc::clone(&shared);
        monoio::spawn(async move {
            let _ = connection(stream, &shared).await;
            shared.connections.set(shared.connections.get() - 1);
        });
    }
}

/// Serves one connection until the client closes it, a timeout fires or a
/// malformed frame arrives.
async fn connection(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let worker = &shared.worker;
    let mut length: Vec<u8> = Vec::with_capacity(2);
    let mut message: Vec<u8> = Vec::with_capacity(MAX_MESSAGE);
    let mut out: Vec<u8> = vec![0; MAX_MESSAGE + 2];
    let limits = shared.limits;
    loop {
        length.clear();
        let read = monoio::time::timeout(limits.idle_timeout, stream.read_exact(length)).await;
        let Ok((result, buf)) = read else {
            return Ok(());
        };
        length = buf;
        result?;
        let size = usize::from(u16::from_be_bytes([length[0], length[1]]));
        if size < MIN_MESSAGE {
            return Ok(());
        }
        message.clear();
        let read = monoio::time::timeout(
            limits.message_timeout,
            stream.read_exact(message.slice_mut(..size)),
        )
        .await;
        let Ok((result, buf)) = read else {
            return Ok(());
        };
        message = buf.into_inner();
        result?;
        let Some(answer_len) = worker.answer(&message[..size], Transport::Tcp, &mut out[2..])
        else {
            continue;
        };
        out[..2].copy_from_slice(&(answer_len as u16).to_be_bytes());
        let write = monoio::time::timeout(
            limits.write_timeout,
            stream.write_all(out.slice(..answer_len + 2)),
        )
        .await;
        let Ok((result, buf)) = write else {
            return Ok(());
        };
        out = buf.into_inner();
        result?;
    }
}
