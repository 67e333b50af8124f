//! Work split in numbered batches, done on a few threads, handed on in
//! order: how [`crate::zone`] signs one zone's RRsets on
//! `dnssec.signing-threads` threads and still writes them in canonical
//! order, as one thread would.
//!
//! The threads are plain `std` scoped threads, named `tern-sign`, started
//! by the thread that signs (the loader's, never a serving core: only the
//! cores' own threads are pinned) and joined before it returns. Each takes
//! the next batch number, does it, and sends the result to the calling
//! thread, which hands results on strictly in batch order. At most
//! [`WINDOW_PER_THREAD`] batches per thread are done ahead of the one
//! handed on last, so what waits in memory is bounded whatever the
//! zone's size; a thread that would go further waits.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex, PoisonError};

/// The most threads one zone is signed on (`dnssec.signing-threads` is
/// at most 256 in the configuration).
pub const MAX_THREADS: usize = 256;

/// Batches a thread may finish ahead of the one handed on last.
pub const WINDOW_PER_THREAD: usize = 4;

/// How far the batches have been handed on, shared with the threads.
struct Progress {
    /// Batches handed on (all those numbered below).
    handed: usize,
    /// Set when the caller stops early (an error): threads take no more.
    stop: bool,
}

/// Does `work(0..count)` on `threads` threads (1: on the caller's, with
/// no thread started) and gives each result to `emit` in batch order.
/// The first error, from `work` (the lowest-numbered failing batch among
/// those done) or from `emit`, stops the run and is returned; batches
/// after it are not handed on. Bound: `count` calls of each; at most
/// `threads * WINDOW_PER_THREAD` results held at once.
pub fn run_batches<T: Send, E: Send>(
    threads: usize,
    count: usize,
    work: &(dyn Fn(usize) -> Result<T, E> + Sync),
    emit: &mut dyn FnMut(T) -> Result<(), E>,
) -> Result<(), E> {
    let threads = threads.clamp(1, MAX_THREADS).min(count);
    if threads <= 1 {
        for batch in 0..count {
            emit(work(batch)?)?;
        }
        return Ok(());
    }
    let window = threads * WINDOW_PER_THREAD;
    let next = AtomicUsize::new(0);
    let progress = Mutex::new(Progress {
        handed: 0,
        stop: false,
    });
    let room = Condvar::new();
    std::thread::scope(|scope| {
        let (results, received) = mpsc::channel::<(usize, Result<T, E>)>();
        let mut started = 0;
        for _ in 0..threads {
            let results = results.clone();
            let (next, progress, room) = (&next, &progress, &room);
            let body = move || loop {
                let batch = next.fetch_add(1, Ordering::Relaxed);
                if batch >= count {
                    break;
                }
                {
                    let mut state = progress.lock().unwrap_or_else(PoisonError::into_inner);
                    while !state.stop && batch >= state.handed + window {
                        state = room.wait(state).unwrap_or_else(PoisonError::into_inner);
                    }
                    if state.stop {
                        break;
                    }
                }
                if results.send((batch, work(batch))).is_err() {
                    break;
                }
            };
            let spawned = std::thread::Builder::new()
                .name("tern-sign".to_string())
                .spawn_scoped(scope, body);
            if spawned.is_ok() {
                started += 1;
            }
        }
        drop(results);
        let stop = |progress: &Mutex<Progress>| {
            progress.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
            room.notify_all();
        };
        if started == 0 {
            // No thread could be started: the work is done here. Batches
            // are taken from the same counter (none was taken).
            stop(&progress);
            for batch in 0..count {
                emit(work(batch)?)?;
            }
            return Ok(());
        }
        let mut done: BTreeMap<usize, T> = BTreeMap::new();
        let mut handed = 0;
        let mut outcome = Ok(());
        'receive: for (batch, result) in received.iter() {
            match result {
                Ok(value) => {
                    done.insert(batch, value);
                }
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
            while let Some(value) = done.remove(&handed) {
                if let Err(error) = emit(value) {
                    outcome = Err(error);
                    break 'receive;
                }
                handed += 1;
                progress
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .handed = handed;
                room.notify_all();
            }
        }
        stop(&progress);
        drop(received);
        if outcome.is_ok() && handed < count {
            // Every thread ended without doing every batch: only a thread
            // that died could leave one undone (a panic aborts in release
            // builds); do the rest here.
            for batch in handed..count {
                emit(work(batch)?)?;
            }
        }
        outcome
    })
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// Results come out in batch order on any number of threads, each
    /// once; the work of each batch is done once.
    #[test]
    fn in_order_on_any_threads() {
        for threads in [1, 2, 3, 8] {
            let calls = AtomicUsize::new(0);
            let mut seen = Vec::new();
            run_batches::<usize, ()>(
                threads,
                100,
                &|batch| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    // Uneven work, so that batches finish out of order.
                    let spin = (batch * 7919) % 13;
                    Ok((0..spin * 1000).fold(batch, |acc, _| std::hint::black_box(acc)))
                },
                &mut |value| {
                    seen.push(value);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..100).collect::<Vec<_>>(), "{threads} threads");
            assert_eq!(calls.load(Ordering::Relaxed), 100);
        }
    }

    /// Memory: the results waiting to be handed on do not grow with the
    /// number of batches. Behind a slow hand-on, the threads get at most
    /// `threads * WINDOW_PER_THREAD` batches ahead, at 100 batches as at
    /// 2,000 (without the window they would run to the end).
    #[test]
    fn results_held_do_not_grow_with_the_batches() {
        let most_ahead = |count| {
            let handed = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            run_batches::<usize, ()>(
                2,
                count,
                &|batch| {
                    let ahead = batch.saturating_sub(handed.load(Ordering::SeqCst));
                    most.fetch_max(ahead, Ordering::SeqCst);
                    Ok(batch)
                },
                &mut |value| {
                    std::hint::black_box(
                        (0..20_000).fold(value, |acc, _| std::hint::black_box(acc)),
                    );
                    handed.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
            )
            .unwrap();
            most.load(Ordering::SeqCst)
        };
        let (small, large) = (most_ahead(100), most_ahead(2000));
        eprintln!("most batches ahead: {small} of 100, {large} of 2000");
        assert!(small <= 2 * WINDOW_PER_THREAD, "{small} of 100");
        assert!(large <= 2 * WINDOW_PER_THREAD, "{large} of 2000");
    }

    /// An error from the work or from the hand-on stops the run: nothing
    /// after the failing batch is handed on.
    #[test]
    fn errors_stop_the_run() {
        for threads in [1, 2, 4] {
            let mut seen = Vec::new();
            let result = run_batches(
                threads,
                50,
                &|batch| if batch == 20 { Err(batch) } else { Ok(batch) },
                &mut |value| {
                    seen.push(value);
                    Ok(())
                },
            );
            assert_eq!(result, Err(20));
            assert!(seen.iter().all(|&batch| batch < 20));
            assert!(seen.windows(2).all(|pair| pair[1] == pair[0] + 1));

            let result = run_batches(threads, 50, &|batch| Ok(batch), &mut |value| {
                if value == 7 {
                    Err(value)
                } else {
                    Ok(())
                }
            });
            assert_eq!(result, Err(7));
        }
    }
}
