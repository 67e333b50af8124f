//! A count of the zones visited by the work off the cores (loading,
//! reloading, serving changes), kept in test builds only: the tests that
//! prove a reload of N zones costs N, not N squared (issue 22), count
//! what the code does instead of timing it. Each place that looks at one
//! zone's entry, compares two zones or sends one change to the cores
//! calls [`visit`]; in a normal build that is nothing.

#[cfg(test)]
thread_local! {
    static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `count` visits on this thread (test builds only).
#[inline]
pub(crate) fn visit(count: usize) {
    #[cfg(test)]
    VISITS.with(|visits| visits.set(visits.get() + count as u64));
    #[cfg(not(test))]
    let _ = count;
}

/// The visits counted on this thread since the last call.
#[cfg(test)]
pub(crate) fn take() -> u64 {
    VISITS.with(|visits| visits.replace(0))
}
