//! The UDP loop: receive one datagram, answer it synchronously, send.
//!
//! Both buffers are allocated once per loop and handed to the kernel by
//! value (monoio's rent model), so the loop allocates nothing per query.

use std::io;

use monoio::buf::IoBuf;
use monoio::net::udp::UdpSocket;
use tern_authority::Transport;

use crate::worker::{Worker, MAX_MESSAGE};

/// Serves one UDP socket until it fails.
pub(crate) async fn serve(socket: UdpSocket, worker: Worker) -> io::Result<()> {
    let mut recv_buf: Vec<u8> = Vec::with_capacity(MAX_MESSAGE);
    let mut send_buf: Vec<u8> = vec![0; MAX_MESSAGE];
    loop {
        recv_buf.clear();
        let (result, buf) = socket.recv_from(recv_buf).await;
        recv_buf = buf;
        let (len, peer) = match result {
            Ok(received) => received,
            // ICMP errors reported on the socket and the like: keep serving.
            Err(_) => continue,
        };
        let Some(answer_len) = worker.answer(&recv_buf[..len], Transport::Udp, &mut send_buf)
        else {
            continue;
        };
        let (result, slice) = socket.send_to(send_buf.slice(..answer_len), peer).await;
        send_buf = slice.into_inner();
        // A failed send loses one answer; the client retries.
        let _ = result;
    }
}
