//! The core's I/O buffers: a thread-local pool of `Vec<u8>` of fixed
//! capacity, taken by a loop or a connection and put back when it is done
//! (STYLE R12).
//!
//! Buffers are zero-filled once, when the pool creates them, and their
//! length always equals their capacity when they are in the pool, so a
//! taker can lend `&mut buffer[..]` to the answer code or hand the buffer
//! to the kernel without initializing it again. A buffer never shrinks or
//! grows: the answer code writes within its length, and monoio's rent
//! model gives it back by value after each I/O.
//!
//! Two sizes exist. [`Size::Datagram`] holds a UDP query or answer; the
//! UDP loops take theirs at start-up and keep them. [`Size::Stream`] holds
//! a whole TCP frame (two-octet length and up to 65535 octets); a
//! connection takes three (read, pending answers, answers being written)
//! and puts them back when it closes, so the pool grows to the most
//! connections open at once and no further: the per-core connection limit
//! bounds it.

use std::cell::RefCell;

/// The largest TCP frame: the two-octet length and a 65535-octet message.
pub(crate) const STREAM_BUFFER: usize = 2 + 65535;

//----------- Size -----------------------------------------------------------

/// The buffer sizes the pool holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// A UDP datagram: [`Pool::datagram_capacity`] octets.
    Datagram,
    /// A TCP frame: [`STREAM_BUFFER`] octets.
    Stream,
}

//----------- Pool -----------------------------------------------------------

/// Free buffers of each size.
struct Pool {
    datagram_capacity: usize,
    datagrams: Vec<Vec<u8>>,
    streams: Vec<Vec<u8>>,
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool { datagram_capacity: 0, datagrams: Vec::new(), streams: Vec::new() })
    };
}

/// Sets up this thread's pool: `datagrams` buffers of `datagram_capacity`
/// octets and `streams` TCP buffers, allocated now.
pub(crate) fn init(datagram_capacity: usize, datagrams: usize, streams: usize) {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        pool.datagram_capacity = datagram_capacity;
        pool.datagrams = (0..datagrams).map(|_| vec![0; datagram_capacity]).collect();
        pool.streams = (0..streams).map(|_| vec![0; STREAM_BUFFER]).collect();
        // Room to take every buffer back without the free lists growing.
        pool.datagrams.reserve(datagrams);
        pool.streams.reserve(streams);
    });
}

/// A buffer of `size`, its length equal to its capacity. Taken from the
/// free list, or created if the list is empty (start-up and a new
/// high-water mark of connections, never per query).
pub(crate) fn take(size: Size) -> Vec<u8> {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let capacity = match size {
            Size::Datagram => pool.datagram_capacity,
            Size::Stream => STREAM_BUFFER,
        };
        let list = match size {
            Size::Datagram => &mut pool.datagrams,
            Size::Stream => &mut pool.streams,
        };
        list.pop().unwrap_or_else(|| vec![0; capacity])
    })
}

/// Gives a buffer back. A buffer of a size the pool does not hold (the
/// taker broke the fixed-capacity rule) is freed instead.
pub(crate) fn put(mut buffer: Vec<u8>) {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        // Length back to capacity; the bytes stay initialized from before.
        buffer.resize(buffer.capacity(), 0);
        if buffer.capacity() == STREAM_BUFFER {
            pool.streams.push(buffer);
        } else if buffer.capacity() == pool.datagram_capacity {
            pool.datagrams.push(buffer);
        }
    })
}

/// Free buffers of each size, for tests.
#[cfg(test)]
pub(crate) fn free() -> (usize, usize) {
    POOL.with(|pool| {
        let pool = pool.borrow();
        (pool.datagrams.len(), pool.streams.len())
    })
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_go_round() {
        init(512, 2, 1);
        assert_eq!(free(), (2, 1));
        let a = take(Size::Datagram);
        let b = take(Size::Datagram);
        assert_eq!((a.len(), a.capacity()), (512, 512));
        assert_eq!(free(), (0, 1));
        let mut s = take(Size::Stream);
        assert_eq!(s.len(), STREAM_BUFFER);
        s.truncate(10); // as a read buffer does
        put(s);
        put(a);
        put(b);
        assert_eq!(free(), (2, 1));
        let s = take(Size::Stream);
        assert_eq!(s.len(), STREAM_BUFFER, "length restored to capacity");
        // Past the pre-allocated ones, take still serves.
        let extra = take(Size::Stream);
        assert_eq!(extra.capacity(), STREAM_BUFFER);
        put(s);
        put(extra);
        assert_eq!(free(), (2, 2));
        put(vec![0; 7]);
        assert_eq!(free(), (2, 2), "foreign sizes are not kept");
    }
}
