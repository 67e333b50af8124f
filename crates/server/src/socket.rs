//! Socket creation. Each core creates its own sockets on its own thread,
//! with SO_REUSEPORT set *before* bind so that every core joins the same
//! reuse group and the kernel spreads queries over them.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

/// Receive buffer asked of the kernel for UDP sockets: room for bursts at
/// high query rates (the kernel caps it at net.core.rmem_max).
const UDP_RECV_BUFFER: usize = 4 << 20;

/// Pending-connection queue length for TCP listeners.
const TCP_BACKLOG: i32 = 1024;

fn new_socket(addr: SocketAddr, kind: Type, protocol: Protocol) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// A UDP socket bound to `addr`, registered with this thread's reactor.
pub(crate) fn bind_udp(addr: SocketAddr) -> io::Result<monoio::net::udp::UdpSocket> {
    let socket = new_socket(addr, Type::DGRAM, Protocol::UDP)?;
    // A smaller buffer only costs drops under bursts; not fatal.
    let _ = socket.set_recv_buffer_size(UDP_RECV_BUFFER);
    socket.bind(&addr.into())?;
    monoio::net::udp::UdpSocket::from_std(socket.into())
}

/// A TCP listener bound to `addr`, registered with this thread's reactor.
pub(crate) fn bind_tcp(addr: SocketAddr) -> io::Result<monoio::net::TcpListener> {
    let socket = new_socket(addr, Type::STREAM, Protocol::TCP)?;
    socket.set_nodelay(true)?;
    socket.bind(&addr.into())?;
    socket.listen(TCP_BACKLOG)?;
    monoio::net::TcpListener::from_std(socket.into())
}
