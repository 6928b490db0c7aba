//! How the kernels share their work between threads: pieces taken in turn by the calling thread
//! and rayon's workers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Work below this many elements runs on the calling thread: handing it to the thread pool costs
/// more than the work (a pool of one 4 x 4 plane took 17-23 us per call through the thread pool,
/// 0.9-1.6 us without it, on a 2-core machine).
const SEQUENTIAL_ELEMENTS: usize = 1 << 14;

/// Pieces per thread: enough that a thread which starts late still finds work, few enough that
/// taking one costs nothing next to doing it.
const PIECES_PER_THREAD: usize = 4;

/// How many times the calling thread yields its core while the helpers finish their last pieces,
/// before it sleeps until they do.
const WAIT_YIELDS: usize = 1000;

/// Whether work over `elements` elements runs on the calling thread ([`SEQUENTIAL_ELEMENTS`]).
pub(crate) fn runs_sequentially(elements: usize) -> bool {
    elements < SEQUENTIAL_ELEMENTS
}

/// How many of `units` (planes, rows) go in one piece of work that touches `elements` elements in
/// all: every unit in one piece for small work ([`runs_sequentially`]), else
/// [`PIECES_PER_THREAD`] pieces per thread of the pool.
pub(crate) fn units_per_piece(units: usize, elements: usize) -> usize {
    if runs_sequentially(elements) {
        return units.max(1);
    }
    units
        .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
        .max(1)
}

/// Runs `work` on every item of `pieces`, on the calling thread and rayon's workers at once: each
/// takes the next piece until none is left, so every piece runs exactly once.
///
/// The calling thread works from the start. A rayon parallel iterator called from outside the
/// pool instead hands everything to the workers and blocks the caller: each call then waits for a
/// worker to wake, and where the second worker woke late the first did every piece, at one core's
/// speed (the s3 batch-1 forward's "slow mode" in docs/benchmarks.md). A worker that wakes late
/// here finds less left, or nothing. Known cost: the backward into large fresh gradients (SegNet
/// s1 at batch 4) measured 1.3x slower than under rayon's split, cause not found (the same page).
pub(crate) fn for_each_piece<I, F>(pieces: I, work: F)
where
    I: Iterator + Send,
    I::Item: Send,
    F: Fn(I::Item) + Sync,
{
    let (at_least, _) = pieces.size_hint();
    // As many threads at work as the pool has, the caller one of them.
    let helpers = (rayon::current_num_threads() - 1).min(at_least.saturating_sub(1));
    if helpers == 0 {
        pieces.for_each(work);
        return;
    }
    let queue = Mutex::new(pieces);
    // A panic in `work` poisons nothing the queue needs: the iterator is only advanced under the
    // lock, and the scope passes the panic on once every thread has stopped.
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    let take_until_done = || {
        while let Some(piece) = next() {
            work(piece);
        }
    };
    let working_helpers = AtomicUsize::new(helpers);
    // A worker of the pool waits in the scope by running queued jobs (its own helpers, if no one
    // took them), never asleep: only a caller from outside the pool yields.
    let outside_the_pool = rayon::current_thread_index().is_none();
    rayon::in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| {
                take_until_done();
                working_helpers.fetch_sub(1, Ordering::Release);
            });
        }
        take_until_done();
        if !outside_the_pool {
            return;
        }
        // The scope would put the caller to sleep until the helpers finish, and waking it costs
        // more than the last piece takes; it yields its core instead, a bounded number of times.
        for _ in 0..WAIT_YIELDS {
            if working_helpers.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::yield_now();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_runs_exactly_once() {
        for pieces in [0, 1, 2, 3, 8, 257] {
            let runs: Vec<AtomicUsize> = (0..pieces).map(|_| AtomicUsize::new(0)).collect();
            for_each_piece(0..pieces, |piece| {
                runs[piece].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                runs.iter().all(|n| n.load(Ordering::Relaxed) == 1),
                "{pieces} pieces"
            );
        }
    }

    #[test]
    fn pieces_of_mutable_slices_cover_the_buffer() {
        let mut buffer = vec![0u32; 1000];
        for_each_piece(buffer.chunks_mut(7).enumerate(), |(piece, cells)| {
            for (offset, cell) in cells.iter_mut().enumerate() {
                *cell += (piece * 7 + offset) as u32;
            }
        });
        assert!(buffer.iter().enumerate().all(|(i, &v)| v == i as u32));
    }

    #[test]
    fn it_runs_inside_the_pool_too() {
        // Called from a worker (a kernel inside a user's parallel loop), the caller still works.
        let total = AtomicUsize::new(0);
        rayon::scope(|_| {
            for_each_piece(0..100usize, |piece| {
                total.fetch_add(piece, Ordering::Relaxed);
            })
        });
        assert_eq!(total.into_inner(), 4950);
    }

    #[test]
    fn a_panic_in_a_piece_reaches_the_caller() {
        let result = std::panic::catch_unwind(|| {
            for_each_piece(0..64usize, |piece| assert_ne!(piece, 40, "piece 40"));
        });
        assert!(result.is_err());
    }

    #[test]
    fn small_work_is_one_piece_and_large_work_a_few_per_thread() {
        assert_eq!(units_per_piece(10, SEQUENTIAL_ELEMENTS - 1), 10);
        assert_eq!(units_per_piece(0, 0), 1);
        let threads = rayon::current_num_threads();
        for units in [1usize, 7, 256, 10_000] {
            let pieces = units.div_ceil(units_per_piece(units, SEQUENTIAL_ELEMENTS));
            // Every thread finds work where there are units enough, and no thread more than a few
            // pieces' hand-offs.
            assert!(
                pieces >= units.min(threads),
                "{units} units: {pieces} pieces"
            );
            assert!(
                pieces <= threads * PIECES_PER_THREAD,
                "{units} units: {pieces} pieces"
            );
        }
    }

    #[test]
    fn the_caller_takes_pieces_too() {
        // Outside the pool the calling thread works from the start: each piece takes 1 ms, so a
        // worker cannot have taken all 16 before the caller asks for its first.
        let caller = std::thread::current().id();
        let by_caller = AtomicUsize::new(0);
        for_each_piece(0..16usize, |_| {
            if std::thread::current().id() == caller {
                by_caller.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        });
        assert!(by_caller.into_inner() > 0);
    }
}
