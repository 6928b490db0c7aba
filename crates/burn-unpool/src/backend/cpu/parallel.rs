//! How the kernels share work between threads: small work on the calling thread, medium work in
//! pieces taken in turn by the caller and rayon's workers, large work split by rayon.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Work below this many elements runs on the calling thread: the thread pool costs more.
const SEQUENTIAL_ELEMENTS: usize = 1 << 14;

/// From this many elements rayon splits the work ([`Split`]): a late worker still finds half.
const RAYON_SPLIT_ELEMENTS: usize = 1 << 23;

/// Pieces per thread in the shared queue: a late thread still finds work, taking one is cheap.
const PIECES_PER_THREAD: usize = 4;

/// Pieces per thread in rayon's split, at most (rayon groups them as it splits).
const RAYON_PIECES_PER_THREAD: usize = 128;

/// How often the caller yields its core while helpers finish their last pieces, before sleeping.
const WAIT_YIELDS: usize = 1000;

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
    /// The split of `units` (planes, rows) over `elements` elements, for the unpoolings.
    pub(crate) fn of(units: usize, elements: usize) -> Self {
        if elements >= RAYON_SPLIT_ELEMENTS {
            let pieces = rayon::current_num_threads() * RAYON_PIECES_PER_THREAD;
            return Self::cut(units, pieces, true);
        }
        Self::queued(units, elements)
    }

    /// [`Split::of`] without rayon's split, for the pools (no faster under it: docs/benchmarks.md).
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

/// Runs `work` once on every item of `pieces`, in parallel: through a shared queue the caller takes
/// from too (a late worker then finds less left, not blocking it), or by rayon's split.
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
    // A panic leaves the queue sound (advanced only under the lock); the scope passes it on.
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    let take_until_done = || {
        while let Some(piece) = next() {
            work(piece);
        }
    };
    let working_helpers = AtomicUsize::new(helpers);
    // A pool worker waits in the scope by running queued jobs; only a caller from outside yields.
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
        // Waking a sleeping caller costs more than the last piece: yield up to WAIT_YIELDS times.
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
        // Each piece takes 1 ms: no worker can take all 16 before the caller asks for its first.
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
