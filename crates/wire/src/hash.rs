//! The process's keyed hash of lowercased names, [`NameHasher`]: one
//! function that the zone index (`tern-authority`) and the answer cache
//! (`tern-cache`) share, so that a query's name is hashed once, where the
//! request is read, and the cache's probe and the zone's look-up of the
//! name both use that hash ([`HashedName`]).
//!
//! foldhash (hashbrown's default hasher), under a 128-bit key drawn from
//! the operating system (std's `RandomState` is seeded by it) folded into
//! the state before any name octet, as `tern-cache`'s `KeyedHash` did for
//! each cache, so that names cannot be chosen to collide without the key.
//! foldhash is fast rather than a keyed PRF (SipHash): the tables it serves
//! are bounded (the cache evicts; a zone's names are its operator's), which
//! is what keeps a found collision set cheap. One key for the process rather
//! than one per table: a hash made for one table is valid in every other;
//! the price is that a collision set learned from one core holds on all
//! for the process's life.

use core::hash::{BuildHasher, Hasher};
use std::collections::hash_map::RandomState;
use std::sync::OnceLock;

use hashbrown::DefaultHashBuilder;

use crate::name::Name;

/// The hasher state type: foldhash's.
pub type NameState = <DefaultHashBuilder as BuildHasher>::Hasher;

//----------- NameHasher -----------------------------------------------------

/// A keyed hash of lowercased wire names; [`NameHasher::process`] is the
/// one the zone index and the answer cache use. Copied into each table that
/// uses it (two words), so that a hash reads no global.
#[derive(Clone, Copy)]
pub struct NameHasher {
    builder: DefaultHashBuilder,
    key: u128,
}

impl NameHasher {
    /// A hasher under a fresh random key (for tables whose hashes are
    /// never shared: the forward cache, the rate limiter).
    pub fn new() -> Self {
        let random = RandomState::new();
        let low = random.hash_one(0x7465_726e_u64);
        let high = random.hash_one(!0x7465_726e_u64);
        NameHasher {
            builder: DefaultHashBuilder::default(),
            key: u128::from(high) << 64 | u128::from(low),
        }
    }

    /// The process's hasher: made once, under a random key, and the same
    /// for every caller after.
    pub fn process() -> Self {
        static PROCESS: OnceLock<NameHasher> = OnceLock::new();
        *PROCESS.get_or_init(NameHasher::new)
    }

    /// The hasher's state after the key alone, for hashes of other parts.
    #[inline(always)]
    pub fn keyed(&self) -> NameState {
        let mut state = self.builder.build_hasher();
        // write_u128 folds into foldhash's state at once (write_u64 would
        // wait in its buffer until `finish`), so what follows is hashed
        // under the key.
        state.write_u128(self.key);
        state
    }

    /// The state after the key and a lowercased name (self-delimiting, so
    /// no length prefix is needed): where [`NameHasher::hash`] ends and a
    /// hash of the name with more parts goes on.
    #[inline(always)]
    pub fn state(&self, lower: &[u8]) -> NameState {
        let mut state = self.keyed();
        state.write(lower);
        state
    }

    /// The hash of a lowercased name's wire octets.
    #[inline]
    pub fn hash(&self, lower: &[u8]) -> u64 {
        self.state(lower).finish()
    }

    /// `lower`, a lowercased name, with its [`NameHasher::process`] hash.
    pub fn hashed(lower: Name<'_>) -> HashedName<'_> {
        HashedName {
            name: lower,
            hash: NameHasher::process().hash(lower.as_bytes()),
        }
    }
}

impl Default for NameHasher {
    /// [`NameHasher::new`]: a fresh key.
    fn default() -> Self {
        NameHasher::new()
    }
}

impl core::fmt::Debug for NameHasher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The key is a secret: not shown.
        f.debug_struct("NameHasher").finish_non_exhaustive()
    }
}

//----------- HashedName -----------------------------------------------------

/// A lowercased name with its [`NameHasher::process`] hash, made once per
/// query where the request is read and handed to the look-ups.
#[derive(Clone, Copy, Debug)]
pub struct HashedName<'a> {
    name: Name<'a>,
    hash: u64,
}

impl<'a> HashedName<'a> {
    /// `lower` with `hash`, which must be `NameHasher::process().hash` of
    /// its octets (as a cache that hashes with [`NameHasher::process`]
    /// made it); checked in debug builds.
    ///
    /// Public because its user is another crate: the server makes one from
    /// the answer cache's key hash (`tern_cache::KeyHash::name`) on a miss,
    /// so that the zone's look-up hashes the name no second time (and
    /// tern-cache's tests check that answer against one looked up
    /// without it). A wrong hash is no memory or panic hazard in a
    /// release build: the look-ups that take it miss (the name answered as
    /// absent), which is why the check is kept in debug builds.
    #[inline]
    pub fn with_hash(lower: Name<'a>, hash: u64) -> Self {
        debug_assert_eq!(hash, NameHasher::process().hash(lower.as_bytes()));
        HashedName { name: lower, hash }
    }

    /// The lowercased name.
    #[inline]
    pub fn name(&self) -> Name<'a> {
        self.name
    }

    /// Its hash under [`NameHasher::process`].
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_hash_is_one_function_and_keyed() {
        let name = b"\x03www\x07example\x00";
        let process = NameHasher::process();
        assert_eq!(process.hash(name), NameHasher::process().hash(name));
        assert_ne!(process.hash(name), process.hash(b"\x03wwx\x07example\x00"));
        // Another key, another function.
        assert_ne!(process.hash(name), NameHasher::new().hash(name));
        // The state goes on from the name's hash.
        assert_eq!(process.state(name).finish(), process.hash(name));
        let view = Name::from_wire(name).unwrap();
        let hashed = NameHasher::hashed(view);
        assert_eq!(hashed.hash(), process.hash(name));
        assert_eq!(hashed.name(), view);
        let again = HashedName::with_hash(view, hashed.hash());
        assert_eq!(again.hash(), hashed.hash());
    }
}
