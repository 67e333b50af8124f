//! The caches' keyed hash: foldhash with a per-process random key.
//!
//! Query names are chosen by whoever sends packets, so the hash must be
//! keyed: with a secret key, nobody can pick names that collide in the
//! index. Both caches used std's SipHash-1-3 (per-process OS-random key)
//! for that, at about 250 instructions a lookup for `www.example.` A;
//! foldhash (hashbrown's default, [`hashbrown::DefaultHashBuilder`]) costs
//! about 40, which is a twentieth of a forwarded cache hit.
//!
//! Why the weaker hash is enough here. foldhash's authors call it only
//! "minimally DoS-resistant": a long-running process hashing attacker
//! input may, in principle, leak enough through timing for its seeds to be
//! guessed. But both caches are bounded in entries and bytes and evict
//! (SIEVE, CLOCK): a collision flood cannot grow memory, and the worst it
//! can do is lengthen probe sequences in the index of one core's cache,
//! which the flood itself keeps evicting. The cores keep their own caches,
//! so even that slows one core, not the server.
//!
//! The key. hashbrown builds foldhash without `std`, so foldhash's own
//! per-process seed comes from address-space layout randomization alone.
//! [`NameHasher`] (`tern-wire`) adds 128 bits drawn from the operating
//! system (std's `RandomState` is seeded by it), folded into the state
//! before any name byte: one multiplication more per hash. The answer
//! cache uses the process's key ([`KeyedHash::process`]), which the zone
//! index uses too, so that one hash of a query's name serves both; the
//! forward cache and the rate limiter a key of their own.

use core::hash::Hasher;

use tern_wire::hash::NameHasher;

/// A keyed hash of a cache key's parts; one per cache (and one per core's
/// rate limiter, `tern-server`'s `rrl`, which hashes a client prefix with a
/// name under the same argument: its table is bounded and evicts too).
///
/// The answer cache's is [`KeyedHash::process`]: its name hashes are the
/// zone index's ([`NameHasher::process`]), so that the server hashes a
/// query's name once for both (`KeyHash::name`).
#[derive(Clone)]
pub struct KeyedHash {
    names: NameHasher,
}

impl KeyedHash {
    /// A hash under a fresh random key.
    pub fn new() -> Self {
        KeyedHash {
            names: NameHasher::new(),
        }
    }

    /// The hash under the process's key: `KeyedHash::name_hash` is
    /// [`NameHasher::process`]'s hash, the zone index's.
    pub fn process() -> Self {
        KeyedHash {
            names: NameHasher::process(),
        }
    }

    /// The hash of a lowercased name (self-delimiting, so no length prefix
    /// is needed), then type, class and flag bits in one word.
    pub(crate) fn hash(&self, name: &[u8], qtype: u16, qclass: u16, bits: u8) -> u64 {
        self.hashes(name, qtype, qclass, bits).1
    }

    /// [`KeyedHash::name_hash`] of `name` and [`KeyedHash::hash`] of the
    /// key, for the price of the second: the key's hash passes through
    /// the name's. Inlined into the answer cache's `key_hash`, once per
    /// query: a call of its own cost about 20 instructions more.
    #[inline(always)]
    pub(crate) fn hashes(&self, name: &[u8], qtype: u16, qclass: u16, bits: u8) -> (u64, u64) {
        let mut state = self.names.state(name);
        let name_hash = state.finish();
        state.write_u64(u64::from(qtype) << 24 | u64::from(qclass) << 8 | u64::from(bits));
        (name_hash, state.finish())
    }

    /// The hash of a lowercased name alone.
    pub(crate) fn name_hash(&self, name: &[u8]) -> u64 {
        self.names.hash(name)
    }

    /// The hash of a 128-bit `prefix`, a lowercased name and a word of
    /// small fields, for keys that are not a cache's.
    pub fn hash_prefixed(&self, prefix: u128, name: &[u8], word: u64) -> u64 {
        let mut state = self.names.keyed();
        state.write_u128(prefix);
        state.write(name);
        state.write_u64(word);
        state.finish()
    }
}

impl Default for KeyedHash {
    fn default() -> Self {
        KeyedHash::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_depend_on_every_part_and_on_the_key() {
        let hash = KeyedHash::new();
        let name = b"\x03www\x07example\x00";
        let base = hash.hash(name, 1, 1, 0);
        assert_eq!(base, hash.clone().hash(name, 1, 1, 0));
        assert_ne!(base, hash.hash(b"\x03wwx\x07example\x00", 1, 1, 0));
        assert_ne!(base, hash.hash(name, 28, 1, 0));
        assert_ne!(base, hash.hash(name, 1, 3, 0));
        assert_ne!(base, hash.hash(name, 1, 1, 1));
        // Another cache, another key: the same parts hash elsewhere.
        assert_ne!(base, KeyedHash::new().hash(name, 1, 1, 0));
        // The process's: its name hash is the zone index's.
        let process = KeyedHash::process();
        assert_eq!(
            process.hashes(name, 1, 1, 0).0,
            NameHasher::process().hash(name)
        );
        assert_eq!(process.name_hash(name), NameHasher::process().hash(name));
        assert_ne!(process.name_hash(name), hash.name_hash(name));
        // The name's own hash is the one the key's passes through.
        assert_eq!(hash.hashes(name, 1, 1, 0), (hash.name_hash(name), base));
        assert_ne!(
            hash.name_hash(name),
            hash.name_hash(b"\x03wwx\x07example\x00")
        );
        let prefixed = hash.hash_prefixed(0xc000_0200, name, 1);
        assert_eq!(prefixed, hash.hash_prefixed(0xc000_0200, name, 1));
        assert_ne!(prefixed, hash.hash_prefixed(0xc000_0300, name, 1));
        assert_ne!(prefixed, hash.hash_prefixed(0xc000_0200, b"\x00", 1));
        assert_ne!(prefixed, hash.hash_prefixed(0xc000_0200, name, 2));
    }
}
