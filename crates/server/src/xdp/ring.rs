//! The one other module with `unsafe` (beside `sys`): an AF_XDP socket, its
//! UMEM and its four rings, shared with the kernel through `mmap`.
//!
//! ```text
//!   UMEM: FRAMES frames of FRAME_SIZE octets, mapped once per socket
//!   fill ──► kernel writes a received frame ──► rx ──► answered here
//!    ▲                                                  │ the query's frame goes back to fill
//!    └──────────────────────────────────────────────────┘
//!   free frames ──► answer written ──► tx ──► kernel sends ──► completion ──► free frames
//! ```
//!
//! Half the frames start in the fill ring (for the kernel to receive into)
//! and half in `free` (for answers). A received frame goes back to the fill
//! ring as soon as its query is answered, so the kernel never waits for an
//! answer to be sent; an answer's frame comes back through the completion
//! ring. The rings are single-producer, single-consumer queues whose
//! indices the kernel and this core share: the side that produces writes
//! entries then publishes its index with release ordering, the other reads
//! the index with acquire ordering then the entries (the kernel's
//! `xsk_queue.h` does the same on its side).
//!
//! Every `unsafe` block states why it is sound (STYLE R10).

#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The octets of one UMEM frame: a page. The kernel receives into it
/// after [`XDP_PACKET_HEADROOM`], so a received frame holds at most
/// 3,840 octets: an MTU up to 3,822 behind Ethernet and a VLAN tag.
pub(crate) const FRAME_SIZE: usize = 4096;

/// What the kernel leaves in front of every received frame in the UMEM
/// (`XDP_PACKET_HEADROOM`, include/uapi/linux/bpf.h).
pub(crate) const XDP_PACKET_HEADROOM: usize = 256;

/// Entries of each ring (rx, tx, fill, completion): a power of two, as the
/// kernel requires. 2,048 received frames in flight is several milliseconds
/// at line rate on one core.
pub(crate) const RING_SIZE: u32 = 2048;

/// The frames of one socket's UMEM: one ring's worth for receiving, one
/// for answers (16 MiB per socket).
pub(crate) const FRAMES: usize = 2 * RING_SIZE as usize;

//----------- Mapping --------------------------------------------------------

/// Memory mapped with `mmap`, unmapped on drop.
struct Mapping {
    address: *mut u8,
    len: usize,
}

impl Mapping {
    /// Maps `len` octets of `fd` at `offset` (shared with the kernel), or
    /// anonymous memory with `fd` -1.
    fn new(len: usize, fd: RawFd, offset: libc::off_t) -> io::Result<Mapping> {
        let flags = if fd < 0 {
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE
        } else {
            libc::MAP_SHARED | libc::MAP_POPULATE
        };
        // SAFETY: a new mapping at an address the kernel chooses: nothing
        // existing is aliased or changed. The result is checked below.
        let address = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            address: address.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `address` and `len` are a mapping made in `new` and not
        // unmapped since; nothing borrows it past the owner's life.
        unsafe {
            libc::munmap(self.address.cast(), self.len);
        }
    }
}

//----------- Ring -----------------------------------------------------------

/// One ring shared with the kernel: a producer index, a consumer index,
/// flags and `size` entries of `T` (an `xdp_desc`, or a `u64` frame
/// address for the fill and completion rings).
struct Ring<T> {
    /// Keeps the shared memory mapped; the pointers below point into it.
    _mapping: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
    mask: u32,
    /// This side's copy of the producer index (ours on fill and tx, the
    /// kernel's last read value on rx and completion).
    cached_producer: u32,
    /// This side's copy of the consumer index.
    cached_consumer: u32,
}

impl<T: Copy> Ring<T> {
    /// Maps the ring of `fd` at `page_offset`, laid out as `offsets` say.
    fn map(fd: RawFd, offsets: &libc::xdp_ring_offset, page_offset: u64) -> io::Result<Ring<T>> {
        let len = offsets.desc as usize + RING_SIZE as usize * size_of::<T>();
        let mapping = Mapping::new(len, fd, page_offset as libc::off_t)?;
        let at = |offset: u64| {
            // SAFETY: the kernel's offsets lie inside the mapping it sized
            // (`desc` + the entries is its length, the indices and flags
            // come before `desc`).
            unsafe { mapping.address.add(offset as usize) }
        };
        let producer = at(offsets.producer).cast::<AtomicU32>();
        let consumer = at(offsets.consumer).cast::<AtomicU32>();
        let flags = at(offsets.flags).cast::<AtomicU32>();
        let entries = at(offsets.desc).cast::<T>();
        // SAFETY: the indices are aligned u32s in the mapping that the
        // kernel also accesses atomically; reading them is how a ring is
        // joined.
        let (cached_producer, cached_consumer) = unsafe {
            (
                (*producer).load(Ordering::Acquire),
                (*consumer).load(Ordering::Acquire),
            )
        };
        Ok(Ring {
            _mapping: mapping,
            producer,
            consumer,
            flags,
            entries,
            mask: RING_SIZE - 1,
            cached_producer,
            cached_consumer,
        })
    }

    /// Consumer side: how many entries the kernel has produced and this
    /// side not yet released.
    fn available(&mut self) -> u32 {
        // SAFETY: `producer` points at the ring's producer index in the
        // mapping this ring owns (see `map`).
        self.cached_producer = unsafe { (*self.producer).load(Ordering::Acquire) };
        // At most a ring's worth, whatever the kernel's index says.
        self.cached_producer
            .wrapping_sub(self.cached_consumer)
            .min(RING_SIZE)
    }

    /// Consumer side: the `index`-th entry not yet released (`index` below
    /// [`Ring::available`]).
    fn read(&self, index: u32) -> T {
        let slot = (self.cached_consumer.wrapping_add(index) & self.mask) as usize;
        // SAFETY: `slot` is masked into the ring's entries, and the entry
        // was published by the kernel before the producer index read with
        // acquire ordering in `available`.
        unsafe { ptr::read_volatile(self.entries.add(slot)) }
    }

    /// Consumer side: hands `count` read entries back to the kernel.
    fn release(&mut self, count: u32) {
        self.cached_consumer = self.cached_consumer.wrapping_add(count);
        // SAFETY: as in `available`, for the consumer index, which this
        // side alone writes on a consumer ring.
        unsafe { (*self.consumer).store(self.cached_consumer, Ordering::Release) }
    }

    /// Producer side: how many entries may be written.
    fn room(&mut self) -> u32 {
        // SAFETY: as in `available`, for the consumer index.
        self.cached_consumer = unsafe { (*self.consumer).load(Ordering::Acquire) };
        // Saturating: a consumer index ahead of ours (which a correct
        // kernel never shows) reads as a full ring, not a panic.
        RING_SIZE.saturating_sub(self.cached_producer.wrapping_sub(self.cached_consumer))
    }

    /// Producer side: writes the `index`-th entry after the last submitted
    /// one (`index` below [`Ring::room`]).
    fn write(&mut self, index: u32, entry: T) {
        let slot = (self.cached_producer.wrapping_add(index) & self.mask) as usize;
        // SAFETY: `slot` is masked into the ring's entries; the kernel
        // does not read it until the producer index passes it (`submit`).
        unsafe { ptr::write_volatile(self.entries.add(slot), entry) }
    }

    /// Producer side: publishes `count` written entries.
    fn submit(&mut self, count: u32) {
        self.cached_producer = self.cached_producer.wrapping_add(count);
        // SAFETY: as in `available`; this side alone writes the producer
        // index of a producer ring, after the entries (release ordering).
        unsafe { (*self.producer).store(self.cached_producer, Ordering::Release) }
    }

    /// Whether the kernel asks to be woken up (`XDP_USE_NEED_WAKEUP`).
    fn needs_wakeup(&self) -> bool {
        // The producer index stored just before (`submit`) must be visible
        // before the flags are read, or a kernel that set the flag after
        // seeing an empty ring would not be woken (a store then a load:
        // only a full fence orders them).
        std::sync::atomic::fence(Ordering::SeqCst);
        // SAFETY: as in `available`, for the flags word.
        let flags = unsafe { (*self.flags).load(Ordering::Relaxed) };
        flags & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

//----------- Xsk ------------------------------------------------------------

/// How an AF_XDP socket moves frames (the driver decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyMode {
    /// The kernel copies frames between the driver's buffers and the UMEM.
    Copy,
    /// The driver receives into and sends from the UMEM itself.
    ZeroCopy,
}

/// The flags of the socket's one bind: neither `XDP_ZEROCOPY` nor
/// `XDP_COPY`, so the kernel tries zero-copy and falls back to copy mode
/// by itself when the driver has none (`xp_assign_dev`: "fallback to copy
/// mode"); [`options`] then says which it chose. Forcing zero-copy and
/// binding again with `XDP_COPY` after a refusal would take the kernel's
/// error path of a failed bind, which on some kernels leaks a reference to
/// the device (issue 22), and then bind a socket whose first bind failed.
const BIND_FLAGS: u16 = libc::XDP_USE_NEED_WAKEUP;

/// How many times a socket whose bind answered EBUSY is opened again,
/// [`BIND_BUSY_PAUSE`] apart (3 s in all): the kernel frees a dead process's
/// socket on the queue shortly after the process is gone.
const BIND_BUSY_TRIES: u32 = 150;

/// The pause between two tries while the queue is busy.
const BIND_BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// The mode the kernel chose at bind, from the socket's `XDP_OPTIONS`.
fn mode_of(options: libc::xdp_options) -> CopyMode {
    if options.flags & libc::XDP_OPTIONS_ZEROCOPY != 0 {
        CopyMode::ZeroCopy
    } else {
        CopyMode::Copy
    }
}

/// One AF_XDP socket bound to one queue of one interface, with its own UMEM.
pub(crate) struct Xsk {
    fd: OwnedFd,
    umem: Mapping,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    completion: Ring<u64>,
    /// Frames in no ring: taken for answers. Allocated once, at
    /// [`FRAMES`] capacity; never grows past it.
    free: Vec<u64>,
    /// Answers written into tx entries but not yet published.
    queued: u32,
    /// Received frames released from rx but not yet back in the fill
    /// ring: the kernel publishes its fill consumer index after its rx
    /// producer index, so the fill ring can briefly look fuller than it
    /// is. Made once at [`RING_SIZE`] capacity; handed back at the next
    /// [`Xsk::recycle`].
    unfilled: Vec<u64>,
    mode: CopyMode,
}

/// What became of one received frame (see [`Xsk::answer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exchange {
    /// An answer is queued.
    Queued,
    /// Nothing to send (dropped, forwarded, refused).
    Unanswered,
    /// Every answer frame is in flight: the query is dropped.
    NoFrame,
    /// The kernel handed a descriptor outside the UMEM.
    Invalid,
}

impl Xsk {
    /// Opens a socket on queue `queue` of interface `interface` (an index),
    /// zero-copy where the driver allows it, copy mode otherwise.
    ///
    /// A socket of a process that just died (SIGKILL, a crash) is released
    /// by the kernel after the process is gone, and its queue answers EBUSY
    /// until then: a new socket is opened and bound again, a bounded number
    /// of times (never a second bind on a socket whose bind failed).
    pub(crate) fn open(interface: u32, queue: u32) -> io::Result<Xsk> {
        let mut tries = 0;
        loop {
            match Xsk::open_once(interface, queue) {
                // EBUSY (kept as the error's kind) comes from the bind only:
                // nothing before it in `open_once` asks for the queue.
                Err(err)
                    if err.kind() == io::ErrorKind::ResourceBusy && tries < BIND_BUSY_TRIES =>
                {
                    tries += 1;
                    std::thread::sleep(BIND_BUSY_PAUSE);
                }
                Err(err) if tries > 0 => {
                    let waited = BIND_BUSY_PAUSE * tries;
                    return Err(io::Error::new(
                        err.kind(),
                        format!("{err} (after {} tries over {waited:?})", tries + 1),
                    ));
                }
                result => return result,
            }
        }
    }

    /// One try of [`Xsk::open`].
    fn open_once(interface: u32, queue: u32) -> io::Result<Xsk> {
        // SAFETY: a plain system call creating a new descriptor; the
        // result is checked and owned below.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let err = io::Error::last_os_error();
            let what = match err.raw_os_error() {
                Some(libc::EAFNOSUPPORT) => {
                    "the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)".to_string()
                }
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    "opening an AF_XDP socket needs CAP_NET_RAW (run tern as root)".to_string()
                }
                _ => format!("cannot open an AF_XDP socket: {err}"),
            };
            return Err(io::Error::new(err.kind(), what));
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        let umem = Mapping::new(FRAMES * FRAME_SIZE, -1, 0)?;
        let registration = libc::xdp_umem_reg {
            addr: umem.address as u64,
            len: (FRAMES * FRAME_SIZE) as u64,
            chunk_size: FRAME_SIZE as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set_option(raw, libc::XDP_UMEM_REG, &registration)?;
        for ring in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            set_option(raw, ring, &RING_SIZE)?;
        }
        let offsets = mmap_offsets(raw)?;
        let rx = Ring::map(raw, &offsets.rx, libc::XDP_PGOFF_RX_RING as u64)?;
        let tx = Ring::map(raw, &offsets.tx, libc::XDP_PGOFF_TX_RING as u64)?;
        let fill = Ring::map(raw, &offsets.fr, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let completion = Ring::map(raw, &offsets.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let mut xsk = Xsk {
            fd,
            umem,
            rx,
            tx,
            fill,
            completion,
            free: Vec::with_capacity(FRAMES),
            queued: 0,
            unfilled: Vec::with_capacity(RING_SIZE as usize),
            mode: CopyMode::Copy,
        };
        // Frames 0..RING_SIZE to the fill ring, the rest for answers.
        let receiving = RING_SIZE as usize;
        for (index, frame) in (0..receiving).enumerate() {
            xsk.fill.write(index as u32, (frame * FRAME_SIZE) as u64);
        }
        xsk.fill.submit(RING_SIZE);
        xsk.free
            .extend((receiving..FRAMES).map(|frame| (frame * FRAME_SIZE) as u64));
        let address = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: BIND_FLAGS,
            sxdp_ifindex: interface,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `address` is a valid sockaddr_xdp of the size given,
        // read by the kernel during the call only.
        let result = unsafe {
            libc::bind(
                raw,
                ptr::from_ref(&address).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if result < 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("cannot bind an AF_XDP socket to queue {queue}: {err}"),
            ));
        }
        xsk.mode = mode_of(options(raw)?);
        Ok(xsk)
    }

    /// Whether the driver copies frames or lends its own.
    pub(crate) fn mode(&self) -> CopyMode {
        self.mode
    }

    /// The socket's descriptor (for the XSKMAP and readiness).
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// How many received frames wait in the rx ring, at most `max`: the
    /// indices [`Xsk::answer`] takes, until [`Xsk::recycle`].
    pub(crate) fn received(&mut self, max: u32) -> u32 {
        self.rx.available().min(max)
    }

    /// Answers received frame `index` (below [`Xsk::received`]): `write`
    /// gets the query's frame and a free frame (its whole [`FRAME_SIZE`])
    /// and returns the answer frame's length, or `None` to send nothing.
    /// The answer is queued for [`Xsk::flush`].
    pub(crate) fn answer(
        &mut self,
        index: u32,
        write: impl FnOnce(&[u8], &mut [u8]) -> Option<usize>,
    ) -> Exchange {
        let descriptor = self.rx.read(index);
        let Some((start, len)) = self.frame_bounds(descriptor.addr, descriptor.len as usize) else {
            return Exchange::Invalid;
        };
        if self.free.is_empty() {
            self.complete();
        }
        // Room in tx beyond the answers queued in this batch: with a free
        // frame in hand there always is (the answer frames are as many as
        // the ring's entries), but the kernel's index is not trusted.
        if self.tx.room() <= self.queued {
            return Exchange::NoFrame;
        }
        let Some(address) = self.free.pop() else {
            return Exchange::NoFrame;
        };
        // SAFETY: `start..start + len` lies inside the UMEM (checked by
        // `frame_bounds`) in a frame the kernel handed over through rx and
        // does not write until it is back in the fill ring (`recycle`).
        // `address` is a whole frame inside the UMEM (the free list holds
        // only frame starts made in `open` or checked in `complete`), in
        // no ring, so the kernel does not touch it, and it is a different
        // frame from the query's (a frame is either free or receiving).
        // The two slices therefore never overlap, and neither outlives
        // this call.
        let (query, frame) = unsafe {
            (
                std::slice::from_raw_parts(self.umem.address.add(start), len),
                std::slice::from_raw_parts_mut(self.umem.address.add(address as usize), FRAME_SIZE),
            )
        };
        match write(query, frame) {
            Some(len) if len <= FRAME_SIZE => {
                self.tx.write(
                    self.queued,
                    libc::xdp_desc {
                        addr: address,
                        len: len as u32,
                        options: 0,
                    },
                );
                self.queued += 1;
                Exchange::Queued
            }
            _ => {
                self.free.push(address);
                Exchange::Unanswered
            }
        }
    }

    /// Hands the first `count` received frames back to the fill ring (with
    /// any that did not fit last time).
    pub(crate) fn recycle(&mut self, count: u32) {
        for index in 0..count {
            let address = self.rx.read(index).addr & !(FRAME_SIZE as u64 - 1);
            // Never more than the RING_SIZE receive frames exist.
            if self.unfilled.len() < self.unfilled.capacity() {
                self.unfilled.push(address);
            }
        }
        self.rx.release(count);
        self.refill();
    }

    /// Puts the frames waiting in `unfilled` into the fill ring, as many as
    /// it has room for (all of them, unless the kernel has not yet
    /// published its consumer index: the rest go at the next call).
    fn refill(&mut self) {
        if self.unfilled.is_empty() {
            return;
        }
        let back = (self.unfilled.len() as u32).min(self.fill.room());
        let first = self.unfilled.len() - back as usize;
        for (index, &address) in self.unfilled[first..].iter().enumerate() {
            self.fill.write(index as u32, address);
        }
        self.unfilled.truncate(first);
        self.fill.submit(back);
        if self.fill.needs_wakeup() {
            self.wake_receive();
        }
    }

    /// Whether work is left that no received frame will prompt: answers
    /// in the tx ring, or frames not yet back in the fill ring.
    pub(crate) fn has_leftovers(&mut self) -> bool {
        !self.unfilled.is_empty() || self.tx.room() < RING_SIZE
    }

    /// Where frame `address` (a descriptor's address, which may point past
    /// the frame's start) is in the UMEM, `len` long; `None` if it is not
    /// inside one frame of the UMEM (the kernel does not do that).
    fn frame_bounds(&self, address: u64, len: usize) -> Option<(usize, usize)> {
        let start = usize::try_from(address).ok()?;
        let end = start.checked_add(len)?;
        let frame_end = (start / FRAME_SIZE)
            .checked_add(1)?
            .checked_mul(FRAME_SIZE)?;
        if end > frame_end || end > self.umem.len {
            return None;
        }
        Some((start, len))
    }

    /// Publishes the answers queued by [`Xsk::answer`] and asks the kernel
    /// to send what the tx ring holds, at most `kicks` times (copy mode
    /// sends a bounded batch per call), then takes back the frames it
    /// finished. Returns how many frames still wait to be sent.
    pub(crate) fn flush(&mut self, kicks: usize) -> u32 {
        self.tx.submit(self.queued);
        self.queued = 0;
        self.refill();
        for _ in 0..kicks {
            let waiting = RING_SIZE - self.tx.room();
            if waiting == 0 {
                break;
            }
            if self.mode == CopyMode::ZeroCopy && !self.tx.needs_wakeup() {
                break;
            }
            // SAFETY: a send of no data on our own descriptor: the kernel
            // reads no buffer (length 0, no address) and transmits from
            // the tx ring.
            let result = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    ptr::null(),
                    0,
                )
            };
            if result < 0 {
                let err = io::Error::last_os_error().raw_os_error();
                // EAGAIN: more left than one call sends; EBUSY/ENOBUFS: the
                // device is busy, try again; anything else: stop.
                if !matches!(err, Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS)) {
                    break;
                }
            }
        }
        self.complete();
        RING_SIZE - self.tx.room()
    }

    /// Moves finished frames from the completion ring to the free list.
    fn complete(&mut self) {
        let count = self.completion.available();
        for index in 0..count {
            let address = self.completion.read(index) & !(FRAME_SIZE as u64 - 1);
            if (address as usize) < self.umem.len && self.free.len() < self.free.capacity() {
                self.free.push(address);
            }
        }
        self.completion.release(count);
    }

    /// Wakes the kernel to refill its receive buffers from the fill ring.
    fn wake_receive(&self) {
        // SAFETY: a receive of no data on our own descriptor (no buffer, no
        // address): the kernel only services the socket's rings.
        unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                ptr::null_mut(),
                ptr::null_mut(),
            );
        }
    }

    /// The kernel's counts of frames this socket lost: dropped for lack of
    /// room in rx or of frames in the fill ring, and invalid descriptors.
    pub(crate) fn kernel_drops(&self) -> u64 {
        let mut statistics: libc::xdp_statistics = zeroed_statistics();
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `statistics` is writable for `len` octets, the size the
        // kernel is told; it writes at most that much and sets `len`.
        let result = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                ptr::from_mut(&mut statistics).cast(),
                &mut len,
            )
        };
        if result < 0 {
            return 0;
        }
        statistics.rx_dropped
            + statistics.rx_invalid_descs
            + statistics.tx_invalid_descs
            + statistics.rx_ring_full
    }

    /// A duplicate of the socket's descriptor as a monoio datagram socket,
    /// used only to wait for readability (io_uring's poll, or epoll): no
    /// datagram is ever sent or received through it.
    pub(crate) fn readiness(&self) -> io::Result<monoio::net::unix::UnixDatagram> {
        let duplicate = self.fd.try_clone()?;
        // SAFETY: `from_raw_fd` takes ownership of a descriptor that is
        // ours alone (the duplicate made above). The type only wraps the
        // descriptor; `readable` polls it, which any socket supports.
        let socket = unsafe {
            std::os::unix::net::UnixDatagram::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(
                duplicate,
            ))
        };
        monoio::net::unix::UnixDatagram::from_std(socket)
    }
}

/// An all-zero `xdp_statistics` (plain integers: zero is valid).
fn zeroed_statistics() -> libc::xdp_statistics {
    libc::xdp_statistics {
        rx_dropped: 0,
        rx_invalid_descs: 0,
        tx_invalid_descs: 0,
        rx_ring_full: 0,
        rx_fill_ring_empty_descs: 0,
        tx_ring_empty_descs: 0,
    }
}

/// Sets socket option `name` of `SOL_XDP` to `value`.
fn set_option<T>(fd: RawFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a valid `T` of the size given, read by the kernel
    // during the call only.
    let result = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            name,
            ptr::from_ref(value).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The socket's `XDP_OPTIONS` (Linux 5.3 or later): whether it was bound
/// in zero-copy mode.
fn options(fd: RawFd) -> io::Result<libc::xdp_options> {
    let mut options = libc::xdp_options { flags: 0 };
    let mut len = size_of::<libc::xdp_options>() as libc::socklen_t;
    // SAFETY: `options` is writable for `len` octets, the size the kernel
    // is told; it writes at most that much and sets `len`.
    let result = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_OPTIONS,
            ptr::from_mut(&mut options).cast(),
            &mut len,
        )
    };
    if result < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("cannot read the AF_XDP socket's options (Linux 5.3 or later): {err}"),
        ));
    }
    Ok(options)
}

/// Where the rings' indices and entries are in their mappings.
fn mmap_offsets(fd: RawFd) -> io::Result<libc::xdp_mmap_offsets> {
    let zero = libc::xdp_ring_offset {
        producer: 0,
        consumer: 0,
        desc: 0,
        flags: 0,
    };
    let mut offsets = libc::xdp_mmap_offsets {
        rx: zero,
        tx: zero,
        fr: zero,
        cr: zero,
    };
    let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `offsets` is writable for `len` octets, the size the kernel
    // is told.
    let result = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            ptr::from_mut(&mut offsets).cast(),
            &mut len,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != size_of::<libc::xdp_mmap_offsets>() {
        return Err(io::Error::other(
            "the kernel's AF_XDP ring layout predates flags (Linux 5.4 or later is needed)",
        ));
    }
    Ok(offsets)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_chooses_zero_copy_or_copy_in_one_bind() {
        // Neither mode is forced: a driver without zero-copy costs no
        // failed bind (issue 22), the kernel falls back by itself.
        assert_eq!(BIND_FLAGS & (libc::XDP_ZEROCOPY | libc::XDP_COPY), 0);
        assert_ne!(BIND_FLAGS & libc::XDP_USE_NEED_WAKEUP, 0);
        // The mode is what the kernel reports after the bind.
        let zero_copy = libc::xdp_options {
            flags: libc::XDP_OPTIONS_ZEROCOPY,
        };
        assert_eq!(mode_of(zero_copy), CopyMode::ZeroCopy);
        assert_eq!(mode_of(libc::xdp_options { flags: 0 }), CopyMode::Copy);
    }
}
