//! The only module with `unsafe`: batched UDP system calls and the counting
//! allocator.
//!
//! [`Batch`] wraps `recvmmsg(2)` and `sendmmsg(2)` with `MSG_DONTWAIT`:
//! one system call moves up to [`BATCH`] datagrams. The reactor is only
//! asked whether the socket is readable (`readable().await`) and the
//! datagrams are then moved without it. Measured on this project's
//! machines, that costs about 11.6k instructions per query on the server
//! core against 20k for one io_uring `recv_from`/`send_to` per packet
//! (STYLE 1.3).
//!
//! [`Epoll`] watches the forwarder's upstream sockets of one core as one
//! descriptor, and [`send_now`] sends one datagram without blocking: the
//! forwarder's I/O (`crate::forward`) then needs no reactor object per
//! upstream socket, which monoio allocates.
//!
//! [`TimerFd`] is a `timerfd(2)`, the core's timers (`crate::timer`).
//!
//! [`CountingAllocator`] wraps the system allocator and counts allocations
//! per thread, so that each core can report its own count.
//!
//! Every `unsafe` block states why it is sound (STYLE R10).

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::time::Duration;

/// Datagrams moved per system call. 32 amortizes the system call and the
/// reactor round trip over enough packets that both vanish in the per-query
/// cost (NSD and Knot use 32 and 64), while a batch of answers still fits
/// in L2 next to the zone data.
pub(crate) const BATCH: usize = 32;

//----------- Batch ----------------------------------------------------------

/// The kernel-facing descriptors of one batch: message headers, I/O
/// vectors and peer addresses, allocated once per UDP loop, and the
/// receive buffers, which the batch owns for its life. Answer buffers
/// belong to the caller and are lent for each send.
///
/// Receiving and sending use separate headers and vectors, so that the
/// receive headers and vectors are written once, in [`Batch::new`], and
/// each receive only refreshes what can have changed: the address lengths
/// the kernel overwrote in the previous call. With one datagram per call,
/// rewriting all [`BATCH`] headers cost about 700 instructions per query,
/// pointing the 32 vectors at lent buffers about 130 more.
pub(crate) struct Batch {
    /// Receive headers; each points at its own `recv_vectors` and
    /// `addresses` entry, set once in `new`.
    recv_headers: Box<[libc::mmsghdr; BATCH]>,
    /// Each points at its own buffer of `buffers`, set once in `new`.
    recv_vectors: Box<[libc::iovec; BATCH]>,
    /// The receive buffers: never resized nor lent mutably, so their
    /// memory stays where `recv_vectors` point.
    buffers: Vec<Vec<u8>>,
    send_headers: Box<[libc::mmsghdr; BATCH]>,
    send_vectors: Box<[libc::iovec; BATCH]>,
    addresses: Box<[libc::sockaddr_storage; BATCH]>,
    /// How many receive headers the kernel wrote in the last receive:
    /// their `msg_namelen` (in and out) must be restored before the next.
    /// `msg_len` and `msg_flags` are output only. Until then those headers
    /// are where a datagram's length, cut flag and peer address length are
    /// read ([`Batch::datagram`], [`Batch::peer`], [`Batch::send`]): the
    /// receive copies nothing out of them.
    received: usize,
}

/// The address length a receive header offers the kernel.
const ADDRESS_CAPACITY: libc::socklen_t = size_of::<libc::sockaddr_storage>() as libc::socklen_t;

impl Batch {
    /// Descriptors with every receive header pointing at its own address
    /// slot and I/O vector, and each vector at its own buffer of `buffers`
    /// (the first [`BATCH`]; datagram `i` goes into buffer `i`, its whole
    /// length).
    pub(crate) fn new(mut buffers: Vec<Vec<u8>>) -> Self {
        buffers.truncate(BATCH);
        let mut batch = Batch {
            // SAFETY: mmsghdr, iovec and sockaddr_storage are plain C
            // structs of integers and raw pointers, for which all-zero bytes
            // are a valid value (null pointers, zero lengths).
            recv_headers: Box::new(unsafe { std::mem::zeroed() }),
            // SAFETY: as above.
            recv_vectors: Box::new(unsafe { std::mem::zeroed() }),
            buffers,
            // SAFETY: as above.
            send_headers: Box::new(unsafe { std::mem::zeroed() }),
            // SAFETY: as above.
            send_vectors: Box::new(unsafe { std::mem::zeroed() }),
            // SAFETY: as above.
            addresses: Box::new(unsafe { std::mem::zeroed() }),
            received: 0,
        };
        // The pointers target the boxes' and the buffers' heap memory,
        // which stays put when the `Batch` itself moves and lives as long
        // as the headers.
        for i in 0..BATCH {
            let header = &mut batch.recv_headers[i].msg_hdr;
            header.msg_name = ptr::addr_of_mut!(batch.addresses[i]).cast();
            header.msg_namelen = ADDRESS_CAPACITY;
            header.msg_iov = ptr::addr_of_mut!(batch.recv_vectors[i]);
            header.msg_iovlen = 1;
            // A send header's vector is its own, and it has no control
            // data (null, 0 since the zeroing): only the address, its
            // length and the vector's target change from send to send.
            let header = &mut batch.send_headers[i].msg_hdr;
            header.msg_iov = ptr::addr_of_mut!(batch.send_vectors[i]);
            header.msg_iovlen = 1;
        }
        for (vector, buffer) in batch.recv_vectors.iter_mut().zip(&mut batch.buffers) {
            vector.iov_base = buffer.as_mut_ptr().cast();
            vector.iov_len = buffer.len();
        }
        batch
    }

    /// The receive buffers, given back (to their pool).
    pub(crate) fn into_buffers(self) -> Vec<Vec<u8>> {
        self.buffers
    }

    /// Receives up to one datagram per buffer (at most [`BATCH`]) without
    /// blocking. Returns how many arrived; `WouldBlock` if none was
    /// waiting.
    #[inline(always)]
    pub(crate) fn receive(&mut self, fd: RawFd) -> io::Result<usize> {
        let count = self.buffers.len().min(BATCH);
        // Only the headers the kernel wrote last time have a changed
        // `msg_namelen`; the others still hold what `new` or this restored.
        // (Slices of the fixed-size arrays, bounded by BATCH: no
        // per-header bounds check.)
        for header in &mut self.recv_headers[..self.received.min(BATCH)] {
            header.msg_hdr.msg_namelen = ADDRESS_CAPACITY;
        }
        self.received = 0;
        // The system call itself, not glibc's wrapper: that one is a
        // cancellation point, whose two calls around the system call cost
        // about 30 instructions a receive (no thread here is ever
        // cancelled). Same arguments, same result.
        // SAFETY: the first `count` headers point (since `new`) at `count`
        // address slots of `ADDRESS_CAPACITY` bytes and I/O vectors owned by
        // `self`, with `msg_namelen` reset to that capacity above, and each
        // of those vectors (since `new`) at its buffer of `self.buffers`,
        // `iov_len` bytes long: the buffers are never resized, moved out or
        // borrowed mutably, so that memory is theirs, live and unborrowed
        // during the call (`&mut self`). The kernel writes only within those
        // lengths. `fd` is an open socket owned by the caller.
        let received = unsafe {
            mmsg(
                libc::SYS_recvmmsg,
                fd,
                self.recv_headers.as_mut_ptr(),
                count,
            )
        };
        let Ok(received) = received else {
            // Whatever the kernel may have written before failing is
            // restored next time.
            self.received = count;
            return received;
        };
        let received = received.min(count);
        self.received = received;
        Ok(received)
    }

    /// Received datagram `i`, or `None` if it was cut short (or `i` was
    /// not received in the last call).
    pub(crate) fn datagram(&self, i: usize) -> Option<&[u8]> {
        let len = self.length(i)?;
        self.buffers.get(i).map(|buffer| &buffer[..len])
    }

    /// The sender of received datagram `i` (for the forwarding ACL and
    /// for answering it later), if its address is IPv4 or IPv6.
    pub(crate) fn peer(&self, i: usize) -> Option<std::net::SocketAddr> {
        let storage = *self.addresses.get(i)?;
        let length = self.address_length(i)?;
        // SAFETY: `storage` is a copy of a sockaddr_storage the kernel
        // filled in `receive` and `length` the length it reported (at most
        // the storage's size); SockAddr::new requires exactly that pair.
        let address = unsafe { socket2::SockAddr::new(storage, length) };
        address.as_socket()
    }

    /// The length of received datagram `i`, or `None` if it was cut short
    /// (`MSG_TRUNC`: longer than its buffer) or `i` was not received in
    /// the last call.
    pub(crate) fn length(&self, i: usize) -> Option<usize> {
        if i >= self.received {
            return None;
        }
        let header = self.recv_headers.get(i)?;
        if header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            return None;
        }
        // The vector of header `i` holds its buffer's length (since `new`).
        let capacity = self.recv_vectors.get(i)?.iov_len;
        Some((header.msg_len as usize).min(capacity))
    }

    /// The peer address length of received datagram `i`, as the kernel
    /// wrote it into its header (at most the slot's size), until the next
    /// receive restores it.
    fn address_length(&self, i: usize) -> Option<libc::socklen_t> {
        address_length(&self.recv_headers[..], i)
    }

    /// Sends answers without blocking: `answers[k] = (i, len)` sends the
    /// first `len` bytes of `buffers[i]` to the peer of received datagram
    /// `i`. Returns how many of `answers` (from the first) the kernel took;
    /// `WouldBlock` if the socket buffer is full, another error if the
    /// first answer failed.
    pub(crate) fn send(
        &mut self,
        fd: RawFd,
        buffers: &[Vec<u8>],
        answers: &[(usize, usize)],
    ) -> io::Result<usize> {
        let count = answers.len().min(BATCH);
        let slots = self.send_headers[..count]
            .iter_mut()
            .zip(&mut self.send_vectors[..count]);
        for ((header, vector), &(i, len)) in slots.zip(answers) {
            let (Some(buffer), Some(address_length), Some(address)) = (
                buffers.get(i),
                address_length(&self.recv_headers[..], i),
                self.addresses.get_mut(i),
            ) else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            *vector = libc::iovec {
                iov_base: buffer.as_ptr() as *mut libc::c_void,
                iov_len: len.min(buffer.len()),
            };
            // `msg_iov`, `msg_iovlen` and the control fields were set in
            // `new` and are never written (the kernel writes only
            // `msg_len`, output only).
            header.msg_hdr.msg_name = ptr::addr_of_mut!(*address).cast();
            header.msg_hdr.msg_namelen = address_length;
        }
        // As in `receive`: the system call, without the wrapper's
        // cancellation point.
        // SAFETY: the first `count` send headers point at address slots and I/O
        // vectors owned by `self` (their vector since `new`, the address
        // above), with null control data (since `new`), each vector at a live
        // buffer borrowed for this call with a length within it; the kernel
        // only reads them (and writes each header's `msg_len`).
        // `fd` is an open socket owned by the caller.
        let sent = unsafe {
            mmsg(
                libc::SYS_sendmmsg,
                fd,
                self.send_headers.as_mut_ptr(),
                count,
            )
        };
        Ok(sent?.min(count))
    }
}

/// The peer address length the kernel wrote into receive header `i` of
/// `headers` (at most a slot's size): [`Batch::address_length`], as a
/// function of the headers alone so that [`Batch::send`] can read it while
/// it writes the send headers.
fn address_length(headers: &[libc::mmsghdr], i: usize) -> Option<libc::socklen_t> {
    Some(headers.get(i)?.msg_hdr.msg_namelen.min(ADDRESS_CAPACITY))
}

/// `recvmmsg(2)` or `sendmmsg(2)` (`number`) of `count` headers from
/// `headers` on socket `fd`, with `MSG_DONTWAIT` (and no timeout): the
/// number of messages, or the error. On x86-64 the system call
/// instruction itself, inline: glibc's `syscall` function costs about 11
/// instructions a call of its own (two calls a wake-up of the UDP loop);
/// elsewhere that function.
///
/// # Safety
///
/// The system call's: `headers` points at `count` headers whose name and
/// I/O vector pointers are valid for the call (writable for a receive),
/// and `fd` is open.
#[inline(always)]
unsafe fn mmsg(
    number: libc::c_long,
    fd: RawFd,
    headers: *mut libc::mmsghdr,
    count: usize,
) -> io::Result<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let result: isize;
        // SAFETY: the caller's guarantees, which are the call's. The x86-64
        // Linux convention: the number in rax, the arguments in rdi, rsi,
        // rdx, r10 and r8 (recvmmsg's null timeout; sendmmsg, of four
        // arguments, ignores it), the result in rax, rcx and r11
        // overwritten by the instruction; the stack is not touched, and an
        // `asm!` without `nomem` may read and write any memory, as the
        // kernel does through the pointers. `fd` and the flags are `int`s
        // and `count` an `unsigned int` for the kernel, which reads only
        // those low halves (`count` is at most BATCH anyway).
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") number as isize => result,
                in("rdi") fd as isize,
                in("rsi") headers,
                in("rdx") count,
                in("r10") libc::MSG_DONTWAIT as isize,
                in("r8") 0usize,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        // -4095..=-1: an error number, negated; anything else a count.
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result as i32));
        }
        Ok(result as usize)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: as above; `syscall` is variadic: `fd`, `count` and the
        // flags go as 32-bit values whose register's upper half is
        // unspecified, which the kernel ignores (its entry casts each to
        // the declared `int` or `unsigned int`); the pointers and the null
        // timeout go whole.
        let result = unsafe {
            libc::syscall(
                number,
                fd,
                headers,
                count as libc::c_uint,
                libc::MSG_DONTWAIT,
                ptr::null_mut::<libc::timespec>(),
            )
        };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(result as usize)
    }
}

/// Shuts socket `fd` for reading (`shutdown(2)`, `SHUT_RD`), which wakes
/// every wait for its readiness and leaves it readable from then on: the
/// core's stop reaches its UDP loops this way ([`crate::signal::Stop`]).
/// Sending is not affected. On an unconnected UDP socket Linux reports
/// `ENOTCONN` but shuts it and wakes its waiters all the same (a test below
/// checks that): that error is not one.
pub(crate) fn shut_reading(fd: RawFd) -> io::Result<()> {
    // SAFETY: shutdown takes no pointer; `fd` is an open socket of the
    // caller.
    if unsafe { libc::shutdown(fd, libc::SHUT_RD) } < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ENOTCONN) {
            return Err(err);
        }
    }
    Ok(())
}

//----------- Epoll ----------------------------------------------------------

/// A level-triggered epoll instance and room for the events of one wait.
/// Descriptors are added with a token, which each wait reports for those
/// readable; a descriptor leaves the set when it is closed. The instance
/// is itself a descriptor that polls readable while any member is, so
/// the reactor waits for all of them at once ([`Epoll::readiness`]).
pub(crate) struct Epoll {
    fd: OwnedFd,
    events: Box<[libc::epoll_event]>,
    /// How many of `events` the last wait filled.
    ready: usize,
}

impl Epoll {
    /// An empty set; each wait reports up to `capacity` readable members.
    pub(crate) fn new(capacity: usize) -> io::Result<Self> {
        // SAFETY: epoll_create1 takes no pointer; it returns a new
        // descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)]
                .into_boxed_slice(),
            ready: 0,
        })
    }

    /// Adds `fd`, level-triggered for reading, reported as `token`.
    pub(crate) fn add(&self, fd: &impl AsRawFd, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `event` is a valid epoll_event the kernel only reads
        // during the call; both descriptors are open (borrowed).
        let result = unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut event,
            )
        };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Collects the members readable now, without waiting; returns how
    /// many ([`Epoll::token`] tells which).
    pub(crate) fn poll(&mut self) -> io::Result<usize> {
        self.ready = 0;
        let capacity = self.events.len().min(i32::MAX as usize) as libc::c_int;
        // SAFETY: the kernel writes at most `capacity` events into
        // `self.events`, which holds that many and is borrowed mutably for
        // the call; a timeout of 0 never blocks.
        let count =
            unsafe { libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), capacity, 0) };
        if count < 0 {
            return Err(io::Error::last_os_error());
        }
        self.ready = (count as usize).min(self.events.len());
        Ok(self.ready)
    }

    /// The token of readable member `i` of the last [`Epoll::poll`].
    pub(crate) fn token(&self, i: usize) -> Option<u64> {
        let event = self.events.get(..self.ready)?.get(i)?;
        // A copy: the field of a packed struct is read by value.
        let token = event.u64;
        Some(token)
    }

    /// A duplicate of the instance's descriptor as a monoio datagram
    /// socket, used only to wait until a member is readable (io_uring's
    /// poll, or epoll): nothing is ever sent or received through it.
    pub(crate) fn readiness(&self) -> io::Result<monoio::net::unix::UnixDatagram> {
        readiness(&self.fd)
    }
}

/// A duplicate of `fd` as a monoio datagram socket, for the reactor to
/// wait on until `fd` polls readable (io_uring's poll, or epoll): nothing
/// is ever sent or received through it. ([`Epoll::readiness`],
/// [`TimerFd::readiness`].)
fn readiness(fd: &OwnedFd) -> io::Result<monoio::net::unix::UnixDatagram> {
    let duplicate = fd.try_clone()?;
    monoio::net::unix::UnixDatagram::from_std(std::os::unix::net::UnixDatagram::from(duplicate))
}

//----------- TimerFd --------------------------------------------------------

/// A `timerfd(2)` on the monotonic clock (the clock of `std::time::Instant`
/// on Linux), non-blocking: it polls readable once it has expired, until
/// [`TimerFd::expired`] reads it.
pub(crate) struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// A disarmed timer.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: timerfd_create takes no pointer; it returns a new
        // descriptor or -1.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Arms the timer to expire once, `after` from now (at once, within a
    /// nanosecond, for a zero wait: a zero value would disarm it). An
    /// earlier setting is replaced, and an expiry not yet read is cleared.
    pub(crate) fn set(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let value = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `value` is a valid itimerspec the kernel only reads
        // during the call; the old value is not asked for (null); the
        // descriptor is open (owned).
        let result =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &value, ptr::null_mut()) };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether the timer has expired since it was set: reads (and so
    /// clears) its expiry count; `false` if it has not expired.
    pub(crate) fn expired(&self) -> bool {
        let mut count = 0u64;
        // SAFETY: `count` is eight writable octets borrowed for the call,
        // the size of a timerfd's expiry count; the descriptor is open and
        // non-blocking.
        let read = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                ptr::addr_of_mut!(count).cast(),
                size_of::<u64>(),
            )
        };
        read == size_of::<u64>() as isize && count > 0
    }

    /// A duplicate of the timer's descriptor as a monoio datagram socket,
    /// used only to wait until the timer has expired (io_uring's poll, or
    /// epoll), as [`Epoll::readiness`].
    pub(crate) fn readiness(&self) -> io::Result<monoio::net::unix::UnixDatagram> {
        readiness(&self.fd)
    }
}

//----------- send_now -------------------------------------------------------

/// Sends `bytes` to `to` from socket `fd` without blocking (`sendto(2)`
/// with `MSG_DONTWAIT`); `WouldBlock` if its buffer is full.
pub(crate) fn send_now(fd: RawFd, bytes: &[u8], to: SocketAddr) -> io::Result<usize> {
    let address = socket2::SockAddr::from(to);
    // SAFETY: `bytes` is a live buffer of `bytes.len()` octets and
    // `address` a valid socket address of `address.len()` octets, both
    // borrowed for the call, which only reads them; `fd` is an open
    // socket of the caller.
    let sent = unsafe {
        libc::sendto(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT,
            address.as_ptr().cast(),
            address.len(),
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}

//----------- receive_now ----------------------------------------------------

/// Receives what stream socket `fd` holds now into `buffer`'s spare
/// capacity, at most `max` octets, without waiting (`recv(2)` with
/// `MSG_DONTWAIT`): the octets appended; `Ok(0)` at the end of the
/// stream; `WouldBlock` if nothing is there, or if there is no room.
pub(crate) fn receive_now(fd: RawFd, buffer: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    let spare = buffer.spare_capacity_mut();
    let room = spare.len().min(max);
    if room == 0 {
        // `recv` of 0 octets returns 0, which would read as the end of
        // the stream.
        return Err(io::ErrorKind::WouldBlock.into());
    }
    // SAFETY: `spare` is the vector's allocated, unused capacity, at least
    // `room` octets, borrowed for the call, which writes at most `room`
    // octets into it; `fd` is an open socket of the caller.
    let received = unsafe { libc::recv(fd, spare.as_mut_ptr().cast(), room, libc::MSG_DONTWAIT) };
    if received < 0 {
        return Err(io::Error::last_os_error());
    }
    let received = received as usize;
    // SAFETY: the kernel initialized the first `received` (at most `room`)
    // octets past the vector's length.
    unsafe { buffer.set_len(buffer.len() + received) };
    Ok(received)
}

//----------- interface_addresses --------------------------------------------

/// The addresses of one interface, as `getifaddrs(3)` lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct InterfaceAddresses {
    /// Its IPv4 addresses.
    pub(crate) v4: Vec<[u8; 4]>,
    /// Its IPv6 addresses.
    pub(crate) v6: Vec<[u8; 16]>,
    /// Its IPv4 broadcast addresses: for each address the one it names,
    /// and the all-ones host of its prefix (shorter than /31), which the
    /// kernel's routing treats as broadcast whatever was configured.
    pub(crate) broadcasts: Vec<[u8; 4]>,
}

/// The addresses of interface `name` (the AF_XDP path matches wildcard
/// listen addresses against them and drops queries "from" its broadcast
/// addresses, as the kernel does).
pub(crate) fn interface_addresses(name: &str) -> io::Result<InterfaceAddresses> {
    let mut list: *mut libc::ifaddrs = ptr::null_mut();
    // SAFETY: `getifaddrs` writes a list it allocated into `list`; it is
    // freed below with `freeifaddrs`, after the last read.
    if unsafe { libc::getifaddrs(&mut list) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = InterfaceAddresses::default();
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list `getifaddrs` returned, not
        // yet freed; its name is a NUL-terminated string and its address
        // pointers are null or point at sockaddrs of the family they
        // give (`ifa_ifu` is the broadcast address with IFF_BROADCAST).
        let (same, address, v6, netmask, broadcast, next) = unsafe {
            let node = &*entry;
            let same = !node.ifa_name.is_null()
                && std::ffi::CStr::from_ptr(node.ifa_name).to_bytes() == name.as_bytes();
            let family = |address: *const libc::sockaddr| {
                if address.is_null() {
                    0
                } else {
                    i32::from((*address).sa_family)
                }
            };
            let ipv4 = |address: *const libc::sockaddr| {
                (family(address) == libc::AF_INET).then(|| {
                    (*address.cast::<libc::sockaddr_in>())
                        .sin_addr
                        .s_addr
                        .to_ne_bytes()
                })
            };
            let v6 = (family(node.ifa_addr) == libc::AF_INET6).then(|| {
                (*node.ifa_addr.cast::<libc::sockaddr_in6>())
                    .sin6_addr
                    .s6_addr
            });
            let broadcast = if node.ifa_flags & libc::IFF_BROADCAST as libc::c_uint != 0 {
                ipv4(node.ifa_ifu)
            } else {
                None
            };
            (
                same,
                ipv4(node.ifa_addr),
                v6,
                ipv4(node.ifa_netmask),
                broadcast,
                node.ifa_next,
            )
        };
        if same {
            if let Some(v6) = v6 {
                found.v6.push(v6);
            }
            if let Some(address) = address {
                found.v4.push(address);
                if let Some(broadcast) = broadcast.filter(|broadcast| *broadcast != [0; 4]) {
                    found.broadcasts.push(broadcast);
                }
                if let Some(netmask) = netmask {
                    let mask = u32::from_be_bytes(netmask);
                    if mask.count_ones() < 31 {
                        let all_ones = u32::from_be_bytes(address) | !mask;
                        found.broadcasts.push(all_ones.to_be_bytes());
                    }
                }
            }
        }
        entry = next;
    }
    // SAFETY: `list` came from `getifaddrs` and is freed once; nothing
    // read from it is kept (the addresses were copied).
    unsafe { libc::freeifaddrs(list) };
    for list in [&mut found.v4, &mut found.broadcasts] {
        list.sort_unstable();
        list.dedup();
    }
    found.v6.sort_unstable();
    found.v6.dedup();
    Ok(found)
}

//----------- interface_features ---------------------------------------------

/// The most features an interface may report: `netdev_features_t` is 64
/// bits today; the buffers below are sized for this many names (8 KiB).
const MAX_FEATURES: usize = 256;

/// Octets of one feature name (`ETH_GSTRING_LEN`, include/uapi/linux/ethtool.h).
const ETH_GSTRING_LEN: usize = 32;

/// `SIOCETHTOOL` commands and the string set of feature names
/// (include/uapi/linux/ethtool.h).
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETH_SS_FEATURES: u32 = 4;

/// One feature of an interface, as `ethtool -k` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Feature {
    /// It is on.
    pub(crate) active: bool,
    /// `ethtool -K` can change it (`ethtool -k` marks the others `[fixed]`).
    pub(crate) changeable: bool,
}

/// The state of each feature of `names` (the kernel's names, as
/// `ethtool -k` shows them with `--show-features`: `rx-vlan-hw-parse`, not
/// `rxvlan`) on interface `name`: `None` for a name this kernel does not
/// have. Read with `SIOCETHTOOL` (`ETHTOOL_GSSET_INFO`, `ETHTOOL_GSTRINGS`,
/// `ETHTOOL_GFEATURES`), as `ethtool -k` does; works for every interface,
/// since the features are the kernel's, not the driver's.
pub(crate) fn interface_features<const N: usize>(
    name: &str,
    names: [&str; N],
) -> io::Result<[Option<Feature>; N]> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not an interface name",
        ));
    }
    // SAFETY: a plain system call creating a new descriptor; the result is
    // checked and owned below. Any socket carries SIOCETHTOOL.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let socket = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);

    // How many feature names there are.
    let mut info = [0u32; 5];
    info[0] = ETHTOOL_GSSET_INFO;
    // The u64 `sset_mask` at octet 8, in the machine's order.
    let mask = (1u64 << ETH_SS_FEATURES).to_ne_bytes();
    info[2] = u32::from_ne_bytes([mask[0], mask[1], mask[2], mask[3]]);
    info[3] = u32::from_ne_bytes([mask[4], mask[5], mask[6], mask[7]]);
    ethtool(fd, name, &mut info)?;
    let count = info[4] as usize;
    if count > MAX_FEATURES {
        return Err(io::Error::other(format!(
            "the kernel reports {count} interface features, more than {MAX_FEATURES}"
        )));
    }

    // Their names: 32 octets each, after a 12-octet header.
    let mut strings = vec![0u32; 3 + MAX_FEATURES * ETH_GSTRING_LEN / 4];
    strings[0] = ETHTOOL_GSTRINGS;
    strings[1] = ETH_SS_FEATURES;
    strings[2] = count as u32;
    ethtool(fd, name, &mut strings)?;
    let count = (strings[2] as usize).min(count);
    let octets: Vec<u8> = strings[3..]
        .iter()
        .flat_map(|word| word.to_ne_bytes())
        .collect();

    // Their states: blocks of 32 features (available, requested, active,
    // never changed), after an 8-octet header.
    let blocks = count.div_ceil(32);
    let mut features = vec![0u32; 2 + 4 * blocks];
    features[0] = ETHTOOL_GFEATURES;
    features[1] = blocks as u32;
    ethtool(fd, name, &mut features)?;

    let mut found = [None; N];
    for (index, entry) in octets.chunks_exact(ETH_GSTRING_LEN).take(count).enumerate() {
        let text = entry.split(|&octet| octet == 0).next().unwrap_or(entry);
        let Some(at) = names.iter().position(|wanted| wanted.as_bytes() == text) else {
            continue;
        };
        let block = &features[2 + 4 * (index / 32)..][..4];
        let bit = 1u32 << (index % 32);
        found[at] = Some(Feature {
            active: block[2] & bit != 0,
            changeable: block[0] & bit != 0,
        });
    }
    Ok(found)
}

/// `SIOCETHTOOL` on interface `name` (checked: shorter than `IFNAMSIZ`,
/// no NUL) with `command`, an ethtool command structure whose first word
/// is its command and that is large enough for what the kernel writes
/// back (the callers size it from the header they fill).
fn ethtool(fd: RawFd, name: &str, command: &mut [u32]) -> io::Result<()> {
    // SAFETY: ifreq is a C struct of a byte array and a union of integers
    // and pointers, for which all-zero bytes are a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, &octet) in request.ifr_name.iter_mut().zip(name.as_bytes()) {
        *slot = octet as libc::c_char;
    }
    request.ifr_ifru.ifru_data = command.as_mut_ptr().cast();
    // SAFETY: `request` names the interface (NUL-terminated: the name is
    // shorter than the zeroed array) and points at `command`, which lives
    // past the call. Each command's kernel handler writes at most what its
    // header announces: the feature blocks asked for (GFEATURES), one
    // count per set in the mask (GSSET_INFO), or the names of the set,
    // whose number the caller checked against the buffer (GSTRINGS).
    let result = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL as _, ptr::from_mut(&mut request)) };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

//----------- CountingAllocator ----------------------------------------------

thread_local! {
    /// Allocations made by this thread. `const` initialization: reading it
    /// allocates nothing and registers no destructor, which an allocator
    /// requires (it would otherwise recurse into itself).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations (and reallocations) per
/// thread. Install it in a binary and pass [`thread_allocations`] as
/// `ServerConfig::allocations`: each core then reports its own count in
/// its statistics.
///
/// ```
/// use tern_server::{thread_allocations, CountingAllocator};
///
/// #[global_allocator]
/// static ALLOCATOR: CountingAllocator = CountingAllocator;
///
/// let before = thread_allocations();
/// let boxed = Box::new([0u8; 64]);
/// assert_eq!(thread_allocations(), before + 1);
/// drop(boxed);
/// // Each thread counts its own.
/// let counted = std::thread::spawn(|| {
///     let start = thread_allocations();
///     let list = vec![1u8; 8];
///     thread_allocations() - start + u64::from(list[0] - 1)
/// });
/// assert_eq!(counted.join().unwrap(), 1);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingAllocator;

/// Counts one allocation on the current thread (not at all while the
/// thread is being torn down).
fn count_allocation() {
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get().wrapping_add(1)));
}

/// The allocations made so far by the calling thread through
/// [`CountingAllocator`]; always 0 if it is not the global allocator.
pub fn thread_allocations() -> u64 {
    ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every method forwards to `System` with the arguments it received,
// so `System`'s guarantees are ours; counting touches only a const
// thread-local `Cell`, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`,
        // with `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract, and
        // `ptr` came from `System` through this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The size from which the C allocator (glibc's malloc, behind `System`)
/// serves a block by a mapping of its own, returned to the system as soon
/// as it is freed: glibc's default, made fixed.
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Fixes the C allocator's mapping threshold at `MMAP_THRESHOLD`. By
/// default glibc raises it to the size of each mapped block freed, so that
/// after the first reload of 100,000 zones its listings (a few MiB, freed
/// at once) come from the heap instead, where they stay resident under the
/// zones allocated after them: PSS grew by 10 to 20 MiB at the first
/// reload and stayed (issue 22). Fixed, a large block that is freed goes
/// back to the system. Call it once, first thing in `main`; without glibc
/// it does nothing.
pub fn fix_allocator_threshold() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt takes two integers and changes only malloc's own
    // tuning; it allocates nothing we hold, and is called before any other
    // thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Has the C allocator give back to the system the free memory it keeps
/// in whole pages, in every arena (glibc's `malloc_trim(0)`): for a thread
/// that has just let much go at once and will not soon need it again (the
/// update thread after a zone's whole build, issue 25). Costs a walk of
/// the arenas' free lists; without glibc it does nothing.
pub fn give_back_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes an integer and only returns free pages of
    // malloc's own arenas to the system; it touches no block in use, and
    // may be called from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn interface_features_as_ethtool_shows_them() {
        // The loopback device is "loopback: on [fixed]" everywhere.
        let [loopback, vlan, unknown] =
            interface_features("lo", ["loopback", "rx-vlan-hw-parse", "no-such-feature"]).unwrap();
        assert_eq!(
            loopback,
            Some(Feature {
                active: true,
                changeable: false
            })
        );
        assert!(vlan.is_some());
        assert_eq!(unknown, None);
        assert!(interface_features("no-such-if0", ["loopback"]).is_err());
        assert!(interface_features("a-name-far-too-long", ["loopback"]).is_err());
    }

    #[test]
    fn batch_receives_and_answers_each_peer() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let address = server.local_addr().unwrap();
        let clients: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for (n, client) in clients.iter().enumerate() {
            client.send_to(&[n as u8; 5], address).unwrap();
        }
        let mut batch = Batch::new(vec![vec![0u8; 64]; BATCH]);
        // Loopback delivers at once: all three arrive in one call.
        let received = batch.receive(server.as_raw_fd()).unwrap();
        assert_eq!(received, 3);
        let mut answers = Vec::new();
        let mut buffers = vec![vec![0u8; 64]; BATCH];
        for (i, buffer) in buffers.iter_mut().take(3).enumerate() {
            assert_eq!(batch.length(i), Some(5));
            buffer[..5].copy_from_slice(batch.datagram(i).unwrap());
            buffer[5] = 0xaa;
            answers.push((i, 6));
        }
        assert_eq!(batch.datagram(3), None, "not received");
        assert_eq!(
            batch.send(server.as_raw_fd(), &buffers, &answers).unwrap(),
            3
        );
        for (n, client) in clients.iter().enumerate() {
            client
                .set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let mut buf = [0u8; 16];
            let (len, from) = client.recv_from(&mut buf).unwrap();
            assert_eq!(from, address);
            assert_eq!(
                &buf[..len],
                &[n as u8, n as u8, n as u8, n as u8, n as u8, 0xaa]
            );
        }
    }

    #[test]
    fn the_set_reports_readable_members_until_they_close() {
        let mut set = Epoll::new(4).unwrap();
        let quiet = UdpSocket::bind("127.0.0.1:0").unwrap();
        let busy = UdpSocket::bind("127.0.0.1:0").unwrap();
        set.add(&quiet, 7).unwrap();
        set.add(&busy, 9).unwrap();
        assert_eq!(set.poll().unwrap(), 0);
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .send_to(&[1, 2, 3], busy.local_addr().unwrap())
            .unwrap();
        // Loopback delivers at once; level-triggered: reported until read.
        for _ in 0..2 {
            assert_eq!(set.poll().unwrap(), 1);
            assert_eq!((set.token(0), set.token(1)), (Some(9), None));
        }
        // A member leaves the set when it closes, data and all.
        drop(busy);
        assert_eq!(set.poll().unwrap(), 0);
        // `send_now` reaches the quiet one.
        let sent = send_now(client.as_raw_fd(), &[4, 5], quiet.local_addr().unwrap()).unwrap();
        assert_eq!(sent, 2);
        assert_eq!(set.poll().unwrap(), 1);
        assert_eq!(set.token(0), Some(7));
        let mut buffer = [0u8; 8];
        assert_eq!(quiet.recv(&mut buffer).unwrap(), 2);
        assert_eq!(set.poll().unwrap(), 0);
    }

    /// What the core's stop relies on (`crate::signal::Stop::shut_on_fire`):
    /// an unconnected UDP socket shut for reading polls readable (and
    /// receives nothing) from then on, and still sends. (That it wakes a
    /// wait in progress, on either driver, is `crate::signal`'s test.)
    #[test]
    fn a_socket_shut_for_reading_polls_readable_and_still_sends() {
        let mut set = Epoll::new(2).unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        set.add(&socket, 3).unwrap();
        assert_eq!(set.poll().unwrap(), 0);
        shut_reading(socket.as_raw_fd()).unwrap();
        for _ in 0..2 {
            assert_eq!(set.poll().unwrap(), 1);
            assert_eq!(set.token(0), Some(3));
        }
        let mut batch = Batch::new(vec![vec![0u8; 16]; 2]);
        assert!(batch.receive(socket.as_raw_fd()).is_err());
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sent = send_now(socket.as_raw_fd(), &[7], peer.local_addr().unwrap()).unwrap();
        assert_eq!(sent, 1);
        let mut buffer = [0u8; 4];
        assert_eq!(peer.recv(&mut buffer).unwrap(), 1);
    }

    #[test]
    fn batch_reports_would_block_and_cut_datagrams() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut batch = Batch::new(vec![vec![0u8; 4]; 2]);
        let err = batch.receive(server.as_raw_fd()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .send_to(&[1; 10], server.local_addr().unwrap())
            .unwrap();
        assert_eq!(batch.receive(server.as_raw_fd()).unwrap(), 1);
        assert_eq!(
            batch.length(0),
            None,
            "a 10-byte datagram in 4 bytes is cut"
        );
        assert_eq!(batch.datagram(0), None);
    }

    #[test]
    fn batch_restores_address_lengths() {
        use std::os::unix::net::UnixDatagram;
        // Unix socket addresses vary in length with the path: a short
        // sender first, then a longer one, must not see its address cut to
        // the first one's length.
        let dir = std::env::temp_dir().join(format!("tern-sys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let server_path = dir.join("s");
        let _ = std::fs::remove_file(&server_path);
        let server = UnixDatagram::bind(&server_path).unwrap();
        let short = dir.join("a");
        let long = dir.join("a-much-longer-client-socket-name");
        for path in [&short, &long] {
            let _ = std::fs::remove_file(path);
        }
        let mut batch = Batch::new(vec![vec![0u8; 16]; BATCH]);
        let first = UnixDatagram::bind(&short).unwrap();
        first.send_to(&[1; 3], &server_path).unwrap();
        assert_eq!(batch.receive(server.as_raw_fd()).unwrap(), 1);
        let short_len = batch.address_length(0).unwrap();
        assert_eq!(batch.datagram(0), Some(&[1; 3][..]));

        // The same buffer again: the new datagram replaces the old one.
        let second = UnixDatagram::bind(&long).unwrap();
        second.send_to(&[2; 4], &server_path).unwrap();
        assert_eq!(batch.receive(server.as_raw_fd()).unwrap(), 1);
        assert_eq!(batch.datagram(0), Some(&[2; 4][..]));
        let long_len = batch.address_length(0).unwrap();
        let extra = long.as_os_str().len() - short.as_os_str().len();
        assert_eq!(long_len as usize, short_len as usize + extra);
        // The kernel reports the full length even when it cut the address
        // to the offered one: the path itself must be whole.
        let storage = &batch.addresses[0];
        // SAFETY: sockaddr_storage is plain bytes, at least as large as
        // sockaddr_un, and outlives the slice.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                ptr::addr_of!(*storage).cast::<u8>(),
                size_of::<libc::sockaddr_storage>(),
            )
        };
        let path = long.as_os_str().as_encoded_bytes();
        let offset = std::mem::offset_of!(libc::sockaddr_un, sun_path);
        assert_eq!(&bytes[offset..offset + path.len()], path);
        for path in [&short, &long, &server_path] {
            let _ = std::fs::remove_file(path);
        }
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn thread_allocations_is_zero_without_the_global_allocator() {
        // The test binary does not install CountingAllocator.
        let _ = vec![1u8; 100];
        assert_eq!(thread_allocations(), 0);
    }
}
