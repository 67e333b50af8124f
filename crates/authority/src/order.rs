//! Every live name of a signed zone in canonical order (RFC 4034 section
//! 6.1), for [`Zone::names_below`]: the update thread's signer lists the
//! names below a delegation or a DNAME made or removed (they turn into
//! glue or out of it) without a pass over the zone (docs/decisions/0026).
//!
//! The list holds the node ids of the tree's live names, empty
//! non-terminals included (the owners of NSEC3 records, outside the tree,
//! and the names patches removed left out), in parts shared between
//! versions (`crate::parts`), as the NSEC owners' list: canonical order
//! keeps the names below a name together, right after it, so they are a
//! range found by two binary searches. [`Zone::patch`] adds the names that
//! came and removes those that went, copying their parts.
//!
//! Only a signed zone (its apex SOA has an RRSIG, [`Zone`]'s `signed`,
//! whoever signed it: zones others sign, which tern's signer never reads,
//! keep it too, docs/decisions/0026) keeps the list: 4 octets a name in
//! its parts (and per part, of 128 names after a build and 32 to 256
//! after patches, a key, two pointers and the blocks' headers), which an
//! unsigned zone, never signed as a window, does not pay. A patch that makes an
//! unsigned zone signed makes the list whole (a pass over the nodes, as
//! the builder's); one that makes it unsigned drops it.
//!
//! The builder makes the list by the tree, not by comparing whole names:
//! each node's children sorted by their first label, then a walk from the
//! apex, each name followed by the names below it (a name's canonical
//! place is its parent's, then its label among its siblings'). The NSEC
//! owners' list of a signed zone is this list's NSEC owners.

use core::cmp::Ordering;

use tern_wire::name::{Name, MAX_LABELS};

use crate::arena::Work;
use crate::parts::Parts;
use crate::zone::{CanonicalName, Zone, FLAG_DEAD, FLAG_NSEC3_OWNER, NO_PARENT};

/// The names in canonical order (see the module documentation).
pub(crate) type Order = Parts<u32>;

/// Whether node `id` is a live name of the tree.
#[inline]
fn in_tree(zone: &Zone, id: u32) -> bool {
    zone.node(id).flags & (FLAG_DEAD | FLAG_NSEC3_OWNER) == 0
}

/// The first label of a node's name (none for the root).
#[inline]
fn first_label(zone: &Zone, id: u32) -> &[u8] {
    let bytes = zone.node_name_bytes(id);
    let len = usize::from(bytes.first().copied().unwrap_or(0));
    bytes.get(1..1 + len).unwrap_or_default()
}

/// Four octets of a label from `offset` as a big-endian number (zeros past
/// its end): labels equal before `offset` whose numbers differ compare as
/// their numbers do.
#[inline]
fn label_quad(label: &[u8], offset: usize) -> u64 {
    let mut octets = [0u8; 4];
    let rest = label.get(offset..).unwrap_or_default();
    let take = rest.len().min(4);
    octets[..take].copy_from_slice(&rest[..take]);
    u64::from(u32::from_be_bytes(octets))
}

/// The longest label (RFC 1035): past it, [`sort_by_labels`] compares
/// whole labels.
const MAX_LABEL: usize = 63;

/// Sorts `group` (each entry a node id in its low half, and in its high
/// half [`label_quad`] of the node's first label at `offset`, the labels
/// all equal before it) by the nodes' first labels: by the numbers, then
/// each run of equal numbers again by the next four octets (read once an
/// entry), and past [`MAX_LABEL`] octets (labels that differ only by
/// trailing zero octets) by whole labels. Bound: at most
/// `MAX_LABEL / 4 + 1` levels, each an integer sort of the run and a
/// label read an entry; no allocation.
fn sort_by_labels(zone: &Zone, group: &mut [u64], offset: usize) {
    group.sort_unstable();
    let mut run = 0;
    while run < group.len() {
        let quad = group[run] >> 32;
        let len = group[run..]
            .iter()
            .take_while(|&&key| key >> 32 == quad)
            .count();
        let same = &mut group[run..run + len];
        run += len;
        if len < 2 {
            continue;
        }
        let next = offset + 4;
        if next > MAX_LABEL {
            same.sort_unstable_by(|&a, &b| {
                first_label(zone, a as u32).cmp(first_label(zone, b as u32))
            });
            continue;
        }
        for key in same.iter_mut() {
            let id = *key as u32;
            *key = label_quad(first_label(zone, id), next) << 32 | u64::from(id);
        }
        sort_by_labels(zone, same, next);
    }
}

/// The live names of the tree in canonical order: the nodes grouped by
/// parent (a counting pass), each group sorted by first label, then a walk
/// from the apex. Bound: two passes over the nodes, a sort of each node's
/// children by one label each ([`sort_by_labels`]: integer sorts of four
/// octets of the labels at a time, each label read once a level), a walk
/// of at most [`MAX_LABELS`] levels (a name has at most that many labels
/// below the apex). Memory: 16 octets a name while it
/// runs (the groups' start, the keyed children, the result).
pub(crate) fn canonical_nodes(zone: &Zone) -> Vec<u32> {
    let end = zone.nodes.end() as usize;
    let live_child = |id: u32| {
        let parent = zone.node(id).parent;
        (parent != NO_PARENT && in_tree(zone, id)).then_some(parent as usize)
    };
    // Counted two places up, summed, then filled one place up: the
    // children of node `p` end at `starts[p + 1]`, and start at
    // `starts[p]`.
    let mut starts = vec![0u32; end + 2];
    for id in 1..end as u32 {
        if let Some(parent) = live_child(id) {
            starts[parent + 2] += 1;
        }
    }
    for at in 1..starts.len() {
        starts[at] += starts[at - 1];
    }
    // Each child as its label's first octets (high half) and its id.
    let mut children = vec![0u64; starts[end + 1] as usize];
    for id in 1..end as u32 {
        if let Some(parent) = live_child(id) {
            let at = &mut starts[parent + 1];
            children[*at as usize] = label_quad(first_label(zone, id), 0) << 32 | u64::from(id);
            *at += 1;
        }
    }
    let id_of = |key: u64| key as u32;
    for parent in 0..end {
        let group = &mut children[starts[parent] as usize..starts[parent + 1] as usize];
        if group.len() > 1 {
            sort_by_labels(zone, group, 0);
        }
    }
    // Pre-order from the apex: each name, then the names below it.
    let mut out = Vec::with_capacity(children.len() + 1);
    if end == 0 || !in_tree(zone, 0) {
        return out;
    }
    out.push(0);
    // (the next child to visit, the end of the group)
    let mut stack: Vec<(u32, u32)> = Vec::with_capacity(MAX_LABELS + 1);
    stack.push((starts[0], starts[1]));
    while let Some(top) = stack.last_mut() {
        if top.0 == top.1 {
            stack.pop();
            continue;
        }
        let id = id_of(children[top.0 as usize]);
        top.0 += 1;
        out.push(id);
        let (first, last) = (starts[id as usize], starts[id as usize + 1]);
        // Parent ids are below their children's, so the walk meets each
        // node once; the depth is a name's label count.
        if first < last && stack.len() <= MAX_LABELS {
            stack.push((first, last));
        }
    }
    out
}

/// The order list of a zone built whole (none for an unsigned zone), and
/// the NSEC owners' list in canonical order taken from it (`None` for an
/// unsigned zone: the builder sorts its NSEC owners itself).
pub(crate) fn build(zone: &Zone) -> (Order, Option<Vec<u32>>) {
    if !zone.signed {
        return (Order::default(), None);
    }
    let sorted = canonical_nodes(zone);
    let nsec = sorted
        .iter()
        .copied()
        .filter(|&id| {
            zone.rrset_index(id, tern_wire::types::RType::NSEC)
                .is_some()
        })
        .collect();
    (Order::from_sorted(&sorted), Some(nsec))
}

/// The order of node ids of `zone` against node `id`'s name.
fn order_of(zone: &Zone, id: u32) -> impl Fn(&u32) -> Ordering + '_ {
    let name = CanonicalName::of(zone.node_name(id));
    move |&other| name.order_of(zone.node_name(other))
}

/// The order list of a patched zone (`zone`, with `list` taken out of
/// it, as the version patched kept it): each node of `changes` (a node, it
/// was live, it is live) that came added, each that went removed, copying
/// their parts (counted in `work`). A zone that became signed gets its
/// list made whole; one that is no longer signed, none.
pub(crate) fn patch(
    zone: &Zone,
    mut list: Order,
    was_signed: bool,
    changes: impl IntoIterator<Item = (u32, bool, bool)>,
    work: &mut Work,
) -> Order {
    if !zone.signed {
        return Order::default();
    }
    if !was_signed {
        let sorted = canonical_nodes(zone);
        work.nsec_moved += sorted.len();
        work.bytes_copied += sorted.len() * core::mem::size_of::<u32>();
        return Order::from_sorted(&sorted);
    }
    list.apply(changes, |&id| order_of(zone, id), work);
    list
}

impl Zone {
    /// The names strictly below `name` (any case) that the zone holds,
    /// in canonical order (RFC 4034 section 6.1), each with whether it
    /// owns records (an empty non-terminal does not): owners of data,
    /// glue and occluded names below a cut alike, not the owners of NSEC3
    /// records (outside the name tree). `None` when the zone does not keep
    /// the order of its names: it is not signed (its apex SOA has no
    /// RRSIG). The caller bounds the walk by what it takes.
    ///
    /// Bound: two binary searches to the first (at most
    /// `log2(names)` name comparisons), then a step and a name comparison
    /// with `name` per name taken.
    pub fn names_below(&self, name: Name<'_>) -> Option<impl Iterator<Item = (Name<'_>, bool)>> {
        if !self.keeps_name_order() {
            return None;
        }
        let sought = tern_wire::name::NameBuf::from_name(name.to_lower().as_name());
        // Split once for the binary searches.
        let start = {
            let split = CanonicalName::of(sought.as_name());
            self.order
                .start_of(|&other| split.order_of(self.node_name(other)))
        };
        let first = self.order.iter_at(start);
        Some(
            first
                .map(move |&id| (self.node_name(id), id))
                .skip_while(move |(name, _)| name.as_bytes() == sought.as_bytes())
                .take_while(move |(name, _)| {
                    name.len() > sought.as_name().len() && name.ends_with(sought.as_name())
                })
                .map(|(name, id)| (name, self.node(id).rrset_count > 0)),
        )
    }

    /// Whether the zone keeps the order of its names: it is signed (its
    /// apex SOA has an RRSIG), and [`Zone::names_below`] lists the names
    /// below any name.
    pub fn keeps_name_order(&self) -> bool {
        self.signed
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests;
