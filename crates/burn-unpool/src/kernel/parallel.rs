//! How the kernels share their work between threads: small work on the calling thread, medium
//! work in pieces taken in turn by the calling thread and rayon's workers, large work split by
//! rayon among its workers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Work below this many elements runs on the calling thread: handing it to the thread pool costs
/// more than the work (a pool of one 4 x 4 plane took 17-23 us per call through the thread pool,
/// 0.9-1.6 us without it, on a 2-core machine).
const SEQUENTIAL_ELEMENTS: usize = 1 << 14;

/// Work of at least this many elements is split by rayon among its workers ([`Split`]): past it,
/// a worker that wakes late still finds half the work to steal, and rayon's split measured faster
/// than the shared queue (docs/benchmarks.md, "Backward at large fresh gradients").
const RAYON_SPLIT_ELEMENTS: usize = 1 << 23;

/// Pieces per thread in the shared queue: enough that a thread which starts late still finds work,
/// few enough that taking one costs nothing next to doing it.
const PIECES_PER_THREAD: usize = 4;

/// Pieces per thread in rayon's split, at most: one per plane at SegNet's s1 on two threads, as
/// the kernels had before the shared queue (rayon groups them as it splits).
const RAYON_PIECES_PER_THREAD: usize = 128;

/// How many times the calling thread yields its core while the helpers finish their last pieces,
/// before it sleeps until they do.
const WAIT_YIELDS: usize = 1000;

/// Whether work over `elements` elements runs on the calling thread ([`SEQUENTIAL_ELEMENTS`]).
pub(crate) fn runs_sequentially(elements: usize) -> bool {
    elements < SEQUENTIAL_ELEMENTS
}

/// How a kernel's work is cut into pieces and who runs them, decided by its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// How many units (planes, rows) go in one piece.
    pub units_per_piece: usize,
    /// Whether rayon splits the pieces among its workers, rather than the shared queue.
    pub by_rayon: bool,
}

impl Split {
    /// The split of `units` (planes, rows) of work that touches `elements` elements in all: every
    /// unit in one piece for small work ([`runs_sequentially`]); [`PIECES_PER_THREAD`] pieces per
    /// thread of the pool in the shared queue for medium work; up to [`RAYON_PIECES_PER_THREAD`]
    /// split by rayon from [`RAYON_SPLIT_ELEMENTS`]. For the unpooling kernels.
    pub(crate) fn of(units: usize, elements: usize) -> Self {
        if elements >= RAYON_SPLIT_ELEMENTS {
            let pieces = rayon::current_num_threads() * RAYON_PIECES_PER_THREAD;
            return Self::cut(units, pieces, true);
        }
        Self::queued(units, elements)
    }

    /// The split of `units` as [`Split::of`] makes it, but in the shared queue whatever the size:
    /// for the pools' kernels, whose large shapes measured no faster under rayon's split (forward +
    /// backward 0.91-0.97x at SegNet's s1 and s2, batch 4; docs/benchmarks.md).
    pub(crate) fn queued(units: usize, elements: usize) -> Self {
        let pieces = if runs_sequentially(elements) {
            1
        } else {
            rayon::current_num_threads() * PIECES_PER_THREAD
        };
        Self::cut(units, pieces, false)
    }

    /// `units` in at most `pieces` pieces, at least one unit each.
    fn cut(units: usize, pieces: usize, by_rayon: bool) -> Self {
        Self {
            units_per_piece: units.div_ceil(pieces).max(1),
            by_rayon,
        }
    }
}

/// Runs `work` on every item of `pieces` (cut by `split`) once, in parallel.
///
/// Medium work goes through a shared queue: the calling thread and rayon's workers each take the
/// next piece until none is left, the caller from the start. A rayon parallel iterator called from
/// outside the pool instead hands everything to the workers and blocks the caller: each call then
/// waits for a worker to wake, and where the second worker woke late the first did every piece,
/// at one core's speed (the s3 batch-1 forward's "slow mode" in docs/benchmarks.md); here a worker
/// that wakes late finds less left, or nothing. Large work, where a late worker still finds half
/// to steal, goes to rayon's split, which measured 6-9% faster there (the same page).
pub(crate) fn for_each_piece<I, F>(split: Split, pieces: I, work: F)
where
    I: Iterator + Send,
    I::Item: Send,
    F: Fn(I::Item) + Sync,
{
    if split.by_rayon {
        use rayon::prelude::*;
        let pieces: Vec<I::Item> = pieces.collect();
        pieces.into_par_iter().for_each(&work);
        return;
    }
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

    /// Both ways of running pieces, whatever the work's size.
    const SPLITS: [Split; 2] = [
        Split {
            units_per_piece: 1,
            by_rayon: false,
        },
        Split {
            units_per_piece: 1,
            by_rayon: true,
        },
    ];

    #[test]
    fn every_piece_runs_exactly_once() {
        for split in SPLITS {
            for pieces in [0, 1, 2, 3, 8, 257] {
                let runs: Vec<AtomicUsize> = (0..pieces).map(|_| AtomicUsize::new(0)).collect();
                for_each_piece(split, 0..pieces, |piece| {
                    runs[piece].fetch_add(1, Ordering::Relaxed);
                });
                assert!(
                    runs.iter().all(|n| n.load(Ordering::Relaxed) == 1),
                    "{pieces} pieces, {split:?}"
                );
            }
        }
    }

    #[test]
    fn pieces_of_mutable_slices_cover_the_buffer() {
        for split in SPLITS {
            let mut buffer = vec![0u32; 1000];
            for_each_piece(split, buffer.chunks_mut(7).enumerate(), |(piece, cells)| {
                for (offset, cell) in cells.iter_mut().enumerate() {
                    *cell += (piece * 7 + offset) as u32;
                }
            });
            assert!(buffer.iter().enumerate().all(|(i, &v)| v == i as u32));
        }
    }

    #[test]
    fn it_runs_inside_the_pool_too() {
        // Called from a worker (a kernel inside a user's parallel loop), the caller still works.
        for split in SPLITS {
            let total = AtomicUsize::new(0);
            rayon::scope(|_| {
                for_each_piece(split, 0..100usize, |piece| {
                    total.fetch_add(piece, Ordering::Relaxed);
                })
            });
            assert_eq!(total.into_inner(), 4950);
        }
    }

    #[test]
    fn a_panic_in_a_piece_reaches_the_caller() {
        for split in SPLITS {
            let result = std::panic::catch_unwind(|| {
                for_each_piece(split, 0..64usize, |piece| assert_ne!(piece, 40, "piece 40"));
            });
            assert!(result.is_err(), "{split:?}");
        }
    }

    #[test]
    fn small_work_is_one_piece_and_larger_work_a_few_or_many_per_thread() {
        assert_eq!(Split::of(10, SEQUENTIAL_ELEMENTS - 1).units_per_piece, 10);
        assert_eq!(Split::of(0, 0).units_per_piece, 1);
        let threads = rayon::current_num_threads();
        for (elements, by_rayon, per_thread) in [
            (SEQUENTIAL_ELEMENTS, false, PIECES_PER_THREAD),
            (RAYON_SPLIT_ELEMENTS - 1, false, PIECES_PER_THREAD),
            (RAYON_SPLIT_ELEMENTS, true, RAYON_PIECES_PER_THREAD),
        ] {
            assert!(!Split::queued(256, elements).by_rayon);
            for units in [1usize, 7, 256, 10_000] {
                let split = Split::of(units, elements);
                assert_eq!(split.by_rayon, by_rayon, "{elements} elements");
                let pieces = units.div_ceil(split.units_per_piece);
                // Every thread finds work where there are units enough, and no thread more than
                // a few pieces' hand-offs (the queue) or enough for stealing to even out (rayon).
                assert!(
                    pieces >= units.min(threads),
                    "{units} units: {pieces} pieces"
                );
                assert!(
                    pieces <= threads * per_thread,
                    "{units} units: {pieces} pieces"
                );
            }
        }
    }

    #[test]
    fn the_caller_takes_pieces_too() {
        // Outside the pool the calling thread works from the start in the queue: each piece takes
        // 1 ms, so a worker cannot have taken all 16 before the caller asks for its first.
        let caller = std::thread::current().id();
        let by_caller = AtomicUsize::new(0);
        for_each_piece(SPLITS[0], 0..16usize, |_| {
            if std::thread::current().id() == caller {
                by_caller.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        });
        assert!(by_caller.into_inner() > 0);
    }
}
