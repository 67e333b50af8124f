//! The slab against a model: extents never overlap, what is written in one
//! survives the others' churn, free neighbours are always merged, and
//! freeing everything gives the whole arena back as wilderness.

use std::collections::BTreeMap;

use super::*;

/// A pattern for the extent at `at` of `size` granules.
fn fill(slab: &mut Slab, at: u32, size: u32) {
    let byte = (at as u8) ^ (size as u8).rotate_left(3);
    slab.get_mut(at, size as usize * GRANULE).fill(byte);
}

fn filled(slab: &Slab, at: u32, size: u32) -> bool {
    let byte = (at as u8) ^ (size as u8).rotate_left(3);
    let bytes = slab.get(at, size as usize * GRANULE);
    bytes.len() == size as usize * GRANULE && bytes.iter().all(|&b| b == byte)
}

#[test]
fn allocates_from_the_wilderness_then_reuses_and_merges() {
    let mut slab = Slab::new(64 * GRANULE);
    assert_eq!(slab.capacity(), 64 * GRANULE);
    let a = slab.allocate(3).unwrap();
    let b = slab.allocate(5).unwrap();
    let c = slab.allocate(2).unwrap();
    assert_eq!((a, b, c, slab.top), (0, 3, 8, 10));
    // A hole of 5 between a and c is reused exactly.
    slab.free(b, 5);
    assert_eq!(slab.allocate(5), Some(3));
    // Or split: 2 then 3.
    slab.free(3, 5);
    assert_eq!(slab.allocate(2), Some(3));
    assert_eq!(slab.allocate(3), Some(5));
    assert_eq!(slab.top, 10);
    // Freeing a, then its neighbour, merges them into one extent of 5.
    slab.free(0, 3);
    slab.free(3, 2);
    let live = BTreeMap::from([(5, 3), (8, 2)]);
    slab.assert_consistent(&live);
    assert_eq!(slab.header(0).0, 5);
    // The last extent goes back to the wilderness, and with it the free
    // extents it touches.
    slab.free(8, 2);
    assert_eq!(slab.top, 8);
    slab.free(5, 3);
    assert_eq!(slab.top, 0);
    assert_eq!(slab.nonempty, 0);
    slab.assert_consistent(&BTreeMap::new());
}

#[test]
fn refuses_what_does_not_fit() {
    let mut slab = Slab::new(10 * GRANULE + GRANULE - 1);
    assert_eq!(slab.capacity(), 10 * GRANULE);
    assert_eq!(slab.allocate(0), None);
    assert_eq!(slab.allocate(MAX_EXTENT + 1), None);
    assert_eq!(slab.allocate(11), None);
    assert_eq!(slab.allocate(10), Some(0));
    assert_eq!(slab.allocate(1), None);
    // Two free extents of 2, not adjacent: 3 does not fit.
    slab.free(0, 10);
    for at in [0, 2, 4, 6, 8] {
        assert_eq!(slab.allocate(2), Some(at));
    }
    slab.free(0, 2);
    slab.free(4, 2);
    assert_eq!(slab.allocate(3), None);
    slab.free(2, 2);
    assert_eq!(slab.allocate(6), Some(0));
    assert_eq!(Slab::new(0).allocate(1), None);
    assert_eq!(Slab::new(GRANULE - 1).capacity(), 0);
}

#[test]
fn the_largest_list_serves_any_extent() {
    let mut slab = Slab::new(4 * MAX_ALLOCATION);
    let first = slab.allocate(MAX_EXTENT).unwrap();
    let second = slab.allocate(MAX_EXTENT).unwrap();
    let _third = slab.allocate(1).unwrap();
    slab.free(first, MAX_EXTENT);
    slab.free(second, MAX_EXTENT);
    // One free extent of 256 granules, on the last list.
    assert_eq!(slab.heads[CLASSES - 1], 0);
    assert_eq!(slab.header(0).0, 2 * MAX_EXTENT as u32);
    assert_eq!(slab.allocate(MAX_EXTENT), Some(0));
    assert_eq!(slab.allocate(7), Some(MAX_EXTENT as u32));
    let live = BTreeMap::from([
        (0, MAX_EXTENT as u32),
        (MAX_EXTENT as u32, 7),
        (2 * MAX_EXTENT as u32, 1),
    ]);
    slab.assert_consistent(&live);
}

/// Random allocations and frees of random sizes, checked against a model
/// after each step; the bytes written in each live extent stay intact.
#[test]
fn random_churn_keeps_every_invariant() {
    const GRANULES: usize = 2048;
    let mut slab = Slab::new(GRANULES * GRANULE);
    let mut live: BTreeMap<u32, u32> = BTreeMap::new();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut refused = 0;
    for step in 0..40_000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Mostly small extents, sometimes the largest.
        let size = match rng % 16 {
            0 => MAX_EXTENT as u32,
            1..=3 => (rng >> 8) as u32 % 40 + 1,
            _ => (rng >> 8) as u32 % 6 + 1,
        };
        let free = !live.is_empty() && (rng >> 32) % 100 < 48;
        if free {
            let nth = (rng >> 40) as usize % live.len();
            let (&at, &size) = live.iter().nth(nth).unwrap();
            assert!(filled(&slab, at, size), "extent {at} overwritten");
            live.remove(&at);
            slab.free(at, size as usize);
        } else {
            match slab.allocate(size as usize) {
                Some(at) => {
                    fill(&mut slab, at, size);
                    live.insert(at, size);
                }
                None => refused += 1,
            }
        }
        if step % 97 == 0 || step > 39_900 {
            slab.assert_consistent(&live);
        }
    }
    assert!(refused > 0, "the arena filled up at times");
    for (&at, &size) in &live {
        assert!(filled(&slab, at, size), "extent {at} overwritten");
    }
    for (at, size) in std::mem::take(&mut live) {
        slab.free(at, size as usize);
    }
    slab.assert_consistent(&live);
    assert_eq!((slab.top, slab.nonempty), (0, 0));
    // And the whole arena is one allocation away.
    for i in 0..GRANULES / MAX_EXTENT {
        assert_eq!(slab.allocate(MAX_EXTENT), Some((i * MAX_EXTENT) as u32));
    }
}

#[test]
fn clear_gives_everything_back_and_never_allocates_again() {
    let mut slab = Slab::new(1 << 20);
    let reserved = slab.bytes.capacity();
    for round in 0..3 {
        let mut at = Vec::new();
        while let Some(extent) = slab.allocate(3 + round) {
            at.push(extent);
        }
        for extent in at.iter().step_by(2) {
            slab.free(*extent, 3 + round);
        }
        slab.clear();
        slab.assert_consistent(&BTreeMap::new());
        assert_eq!(slab.bytes.capacity(), reserved, "never reallocated");
    }
    assert_eq!(slab.bytes.len(), 1 << 20, "written as far as used");
}

#[test]
fn pages_are_written_as_the_wilderness_is_used() {
    let mut slab = Slab::new(1 << 20);
    assert_eq!(slab.bytes.len(), 0);
    slab.allocate(1).unwrap();
    assert_eq!(slab.bytes.len(), GROW_STEP);
    for _ in 0..GROW_STEP / GRANULE {
        slab.allocate(1).unwrap();
    }
    assert_eq!(slab.bytes.len(), 2 * GROW_STEP);
}
