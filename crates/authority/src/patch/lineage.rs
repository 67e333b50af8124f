//! What a patched version knows of the version it was patched from: the
//! names that differ ([`crate::Zone::changed_since`]). Apart from
//! `patch.rs` so that the zone can hold it without depending on the patch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The most names a patched version lists as changed (touched nodes, and
/// the parents of touched wildcards): a larger change lists none, and the
/// cores drop every cached answer of the zone.
pub const MAX_CHANGED_NAMES: usize = 256;

/// Numbers patched versions, so that a version can say which one it was
/// patched from; 0 is no version.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

/// A new version's number.
pub(crate) fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// What a patched version knows of the version it was made from: its own
/// number, that version's, and the names that differ. Cloning a zone
/// gives a clone without any (a clone changed by other means must not
/// claim a patch's difference); only `Zone::patch` sets one.
#[derive(Default)]
pub(crate) struct Lineage(pub(crate) Option<Arc<ChangeSet>>);

impl Clone for Lineage {
    fn clone(&self) -> Self {
        Lineage(None)
    }
}

impl std::fmt::Debug for Lineage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Lineage(none)"),
            Some(set) => write!(
                f,
                "Lineage(version {}, from {}, {} names)",
                set.version,
                set.base,
                set.names.as_ref().map_or(0, |names| names.len())
            ),
        }
    }
}

pub(crate) struct ChangeSet {
    /// This version's number.
    pub(crate) version: u64,
    /// The number of the version patched; 0 when that one had none (built
    /// whole).
    pub(crate) base: u64,
    /// Lowercased wire names, each with whether answers for names below
    /// it can have changed too; `None` when the change was too large or
    /// reached other names (see `Zone::changed_since`).
    pub(crate) names: Option<Box<[ChangedName]>>,
    /// This version's serial when its SOA differs from the patched
    /// version's in the serial alone (`Zone::serial_step_since` of the
    /// two), found once when patching rather than by each core.
    pub(crate) serial_step: Option<u32>,
}

/// A changed name (lowercased wire form) and whether answers for names
/// below it can have changed too.
pub(crate) type ChangedName = (Box<[u8]>, bool);

/// The names a patched version changed: `Zone::changed_since`.
#[derive(Clone, Copy, Debug)]
pub struct ChangedNames<'z> {
    pub(crate) names: &'z [ChangedName],
}

impl<'z> ChangedNames<'z> {
    /// Each name whose own answers can differ (lowercased wire form: the
    /// owners changed, the empty non-terminals made or removed with them,
    /// the owners of RRsets whose additional-section glue changed),
    /// with whether answers for the names below it can differ too (the
    /// name came or went, or has or had a DNAME; a wildcard's parent is
    /// listed with `true`). The apex is listed only when more than its SOA
    /// changed there (the SOA and the SOA's RRSIGs, which every update
    /// changes, leave it out; answers that carry the SOA are the caller's
    /// to drop or restamp, see `Zone::changed_since`).
    pub fn iter(&self) -> impl Iterator<Item = (&'z [u8], bool)> + Clone + 'z {
        self.names.iter().map(|(name, below)| (&name[..], *below))
    }

    /// The number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no name changed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
