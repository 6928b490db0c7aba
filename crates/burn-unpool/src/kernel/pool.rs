//! The CPU max pool with indices: one core for every rank (the last three axes in nested loops,
//! any axes before them as lists of offsets) and every float and integer dtype, parallel over
//! output rows (a few tasks per thread, so that a batch of one still keeps every thread busy).
//!
//! Each window is scanned in row-major order from its first input element; an element replaces
//! the running maximum when it is larger or NaN. So the index is the first maximum, or the last
//! NaN of a window holding NaNs (PyTorch's CPU rule), it always lies inside its own window, and
//! padding never wins, whatever the values (`-inf` included).

use core::mem::MaybeUninit;
use std::ops::Add;

use burn::tensor::{bf16, f16};
use bytemuck::Pod;

use super::buffer::{write_zeros, written_buffer, zeroed_buffer, zeroed_by_the_os};
use super::{Split, for_each_piece};
use crate::error::UnpoolError;
use crate::pool::{AxisWindows, PoolPlan};

/// A value a window compares: the order of `>`, and NaN where the type has it.
pub(crate) trait PoolValue: Copy + Send + Sync + Pod {
    /// Whether `self` replaces the running maximum `max`: larger, or NaN.
    fn beats(self, max: Self) -> bool;
}

macro_rules! float_values {
    ($($float:ty),*) => {$(
        impl PoolValue for $float {
            #[inline(always)]
            #[allow(clippy::float_cmp)]
            fn beats(self, max: Self) -> bool {
                self > max || self.is_nan()
            }
        }
    )*};
}

float_values!(f32, f64, f16, bf16);

macro_rules! integer_values {
    ($($int:ty),*) => {$(
        impl PoolValue for $int {
            #[inline(always)]
            fn beats(self, max: Self) -> bool {
                self > max
            }
        }
    )*};
}

integer_values!(i64, i32, i16, i8, u64, u32, u16, u8);

/// An index dtype the pool writes and reads back: a position inside one plane, or inside the
/// tensor for a plan with global indices.
pub(crate) trait PoolIndex: Copy + Send + Sync + Pod {
    fn from_position(position: usize) -> Self;
    fn position(self) -> usize;
}

macro_rules! pool_indices {
    ($($index:ty),*) => {$(
        impl PoolIndex for $index {
            #[inline(always)]
            fn from_position(position: usize) -> Self {
                // The plan chose a dtype that holds every position of a plane.
                position as $index
            }

            #[inline(always)]
            fn position(self) -> usize {
                self as usize
            }
        }
    )*};
}

pool_indices!(i32, i64, u32, u64);

/// The input elements of every window of one axis: `(first coordinate, count)`, `dilation` apart.
struct AxisTaps {
    taps: Vec<(usize, usize)>,
    dilation: usize,
}

impl AxisTaps {
    fn new(axis: &AxisWindows) -> Self {
        Self {
            taps: (0..axis.outputs).map(|cell| axis.taps(cell)).collect(),
            dilation: axis.dilation,
        }
    }
}

/// The windows of one plane, for any number of spatial axes: the last three are scanned by nested
/// loops (a pool of fewer axes gets leading axes of one element, which change no position); the
/// axes before them, if any, contribute a list of plane offsets per output cell, in scan order.
struct PlaneWindows {
    /// The taps of the last three axes.
    inner: [AxisTaps; 3],
    /// The input sizes of the last two axes (row strides of the inner block).
    inner_input: [usize; 2],
    /// Per output cell of the leading axes (row-major), the plane offset of every input element
    /// of its window on those axes, in row-major order: `[0]` once for a pool of up to three axes.
    outer: Vec<Vec<usize>>,
}

impl PlaneWindows {
    fn new(plan: &PoolPlan) -> Self {
        let unit = AxisWindows::UNIT;
        let axes = plan.axes();
        let lead = axes.len().saturating_sub(3);
        let (outer_axes, inner_axes) = axes.split_at(lead);
        let pad = 3 - inner_axes.len();
        let inner: [AxisWindows; 3] =
            std::array::from_fn(|axis| axis.checked_sub(pad).map_or(unit, |a| inner_axes[a]));
        // Row-major strides of the leading axes inside the plane.
        let mut stride = inner.iter().map(|axis| axis.input).product::<usize>();
        let mut strides = vec![0; lead];
        for axis in (0..lead).rev() {
            strides[axis] = stride;
            stride *= outer_axes[axis].input;
        }
        let mut outer = vec![vec![0usize]];
        for (axis, &stride) in outer_axes.iter().zip(&strides) {
            outer = outer
                .iter()
                .flat_map(|offsets| {
                    (0..axis.outputs).map(move |cell| {
                        let (first, count) = axis.taps(cell);
                        offsets
                            .iter()
                            .flat_map(|&offset| {
                                (0..count)
                                    .map(move |t| offset + (first + t * axis.dilation) * stride)
                            })
                            .collect()
                    })
                })
                .collect();
        }
        Self {
            inner: inner.each_ref().map(AxisTaps::new),
            inner_input: [inner[1].input, inner[2].input],
            outer,
        }
    }
}

impl PlaneWindows {
    /// The output cells of one row: the windows of the last axis.
    fn row_len(&self) -> usize {
        self.inner[2].taps.len()
    }

    /// The output rows of one plane.
    fn rows(&self) -> usize {
        self.outer.len() * self.inner[0].taps.len() * self.inner[1].taps.len()
    }
}

/// Pools output rows `first_row..` (counted over every plane, row-major) of `x` into `values` and
/// `indices`, which hold whole rows. Rows are independent, so any split of them is the same pool.
fn pool_rows<T: PoolValue, I: PoolIndex>(
    x: &[T],
    plan: &PoolPlan,
    windows: &PlaneWindows,
    first_row: usize,
    values: &mut [MaybeUninit<T>],
    indices: &mut [MaybeUninit<I>],
) {
    let [h, w] = windows.inner_input;
    let [axis0, axis1, axis2] = &windows.inner;
    let (in_plane, rows) = (plan.input_plane_len(), windows.rows());
    let row_len = windows.row_len();
    let rows_out = values
        .chunks_exact_mut(row_len)
        .zip(indices.chunks_exact_mut(row_len));
    for (row, (values, indices)) in (first_row..).zip(rows_out) {
        let (plane, cell) = (row / rows, row % rows);
        let x = &x[plane * in_plane..][..in_plane];
        let base = plan.index_base(plane);
        let (cell1, cell) = (cell % axis1.taps.len(), cell / axis1.taps.len());
        let (cell0, outer) = (cell % axis0.taps.len(), cell / axis0.taps.len());
        let outer = &windows.outer[outer];
        let (first0, count0) = axis0.taps[cell0];
        let (first1, count1) = axis1.taps[cell1];
        // Windows of one leading cell, dilation 1, are dense blocks: the common full sizes scan
        // with compile-time bounds (see `scan_block`).
        let dense = outer.len() == 1 && [axis0, axis1, axis2].iter().all(|a| a.dilation == 1);
        for ((value, index), &(first2, count2)) in values.iter_mut().zip(indices).zip(&axis2.taps) {
            let top = outer[0] + (first0 * h + first1) * w + first2;
            let block = match (dense, count0, count1, count2) {
                (false, ..) => None,
                (_, 1, 2, 2) => Some(scan_block::<T, 1, 2, 2>(x, top, h, w)),
                (_, 1, 3, 3) => Some(scan_block::<T, 1, 3, 3>(x, top, h, w)),
                (_, 2, 2, 2) => Some(scan_block::<T, 2, 2, 2>(x, top, h, w)),
                (_, 3, 3, 3) => Some(scan_block::<T, 3, 3, 3>(x, top, h, w)),
                _ => None,
            };
            if let Some((best, best_at)) = block {
                value.write(best);
                index.write(I::from_position(base + best_at));
                continue;
            }
            // The first tap starts the scan; the loop below meets it again and keeps it (a NaN
            // replaces itself, at the same position).
            let mut best_at = top;
            let mut best = x[best_at];
            for &offset in outer {
                for t0 in 0..count0 {
                    let i0 = first0 + t0 * axis0.dilation;
                    for t1 in 0..count1 {
                        let mut at = offset + (i0 * h + first1 + t1 * axis1.dilation) * w + first2;
                        for _ in 0..count2 {
                            let candidate = x[at];
                            if candidate.beats(best) {
                                best = candidate;
                                best_at = at;
                            }
                            at += axis2.dilation;
                        }
                    }
                }
            }
            value.write(best);
            index.write(I::from_position(base + best_at));
        }
    }
}

/// The maximum and its position in a dense `D x R x W` block of `x` (dilation 1) whose first
/// element is `top`, in `h x w` planes: the general scan's order and rule, with constant bounds so
/// that the compiler unrolls it (the nested loops of the general scan cost more than the taps).
#[inline(always)]
fn scan_block<T: PoolValue, const D: usize, const R: usize, const W: usize>(
    x: &[T],
    top: usize,
    h: usize,
    w: usize,
) -> (T, usize) {
    // The first tap starts the scan and meets itself again, as in the general scan.
    let (mut best, mut best_at) = (x[top], top);
    for d in 0..D {
        for r in 0..R {
            let row = top + (d * h + r) * w;
            for (c, &candidate) in x[row..row + W].iter().enumerate() {
                if candidate.beats(best) {
                    best = candidate;
                    best_at = row + c;
                }
            }
        }
    }
    (best, best_at)
}

/// The pooled values and their indices (per plane, or global where the plan says), for every
/// plane of `x`.
pub(crate) fn max_pool<T: PoolValue, I: PoolIndex>(
    x: &[T],
    plan: &PoolPlan,
) -> Result<(Vec<T>, Vec<I>), UnpoolError> {
    let windows = PlaneWindows::new(plan);
    let shape = plan.output_shape();
    let row_len = windows.row_len();
    let total_rows = plan.planes() * windows.rows();
    let window_len: usize = plan.axes().iter().map(|axis| axis.kernel).product();
    let reads = total_rows
        .saturating_mul(row_len)
        .saturating_mul(window_len);
    // Whole planes when there are many, else slices of planes, so that a batch of one or a few
    // channels still keeps every thread busy.
    let split = Split::queued(total_rows, reads);
    let chunk = split.units_per_piece * row_len;
    let mut indices = Vec::new();
    // Every element of both buffers is written: each output row is one task's (the rows of all
    // tasks cover the output), and each cell of a row gets its window's maximum.
    let values = written_buffer(shape, |values| {
        indices = written_buffer(shape, |indices| {
            if chunk > 0 {
                let pieces = values.chunks_mut(chunk).zip(indices.chunks_mut(chunk));
                for_each_piece(split, pieces.enumerate(), |(piece, (values, indices))| {
                    let first_row = piece * (chunk / row_len);
                    pool_rows(x, plan, &windows, first_row, values, indices)
                });
            }
            Ok(())
        })?;
        Ok(())
    })?;
    Ok((values, indices))
}

/// The gradient of `x`: each window's gradient added at its index into zeros, plane by plane in
/// window order (so the sums are the same on every run). Disjoint windows add into each element
/// once; even then the sum is kept, as PyTorch's CPU does: an upstream `-0.0` becomes `+0.0`.
pub(crate) fn max_pool_backward<T: PoolValue + Add<Output = T>, I: PoolIndex>(
    grad: &[T],
    indices: &[I],
    plan: &PoolPlan,
) -> Result<Vec<T>, UnpoolError> {
    let shape = plan.input_shape();
    let bytes = (plan.planes() * plan.input_plane_len()).saturating_mul(size_of::<T>());
    if zeroed_by_the_os(bytes) {
        let mut dx = zeroed_buffer::<T>(shape)?;
        add_windows(grad, indices, plan, &mut dx, |zeros| zeros);
        return Ok(dx);
    }
    // Every element is written: each plane of `dx` is zeroed by the task that adds into it, and
    // `add_windows` gives every plane to a task (or zeroes them all when there is no gradient).
    written_buffer(shape, |dx| {
        add_windows(grad, indices, plan, dx, write_zeros);
        Ok(())
    })
}

/// Adds each window's gradient at its index into `dx`, plane by plane in parallel; `zeroed`
/// turns a task's plane of `dx` into zeros it can add into (a no-op where `dx` holds zeros).
fn add_windows<C, T, I>(
    grad: &[T],
    indices: &[I],
    plan: &PoolPlan,
    dx: &mut [C],
    zeroed: impl Fn(&mut [C]) -> &mut [T] + Sync,
) where
    C: Copy + Send + bytemuck::Zeroable,
    T: PoolValue + Add<Output = T>,
    I: PoolIndex,
{
    let (planes, in_plane, out_plane) = (
        plan.planes(),
        plan.input_plane_len(),
        plan.output_plane_len(),
    );
    // Every plane of `dx` meets its gradient and indices below, so each is zeroed.
    assert_eq!(
        (dx.len(), grad.len(), indices.len()),
        (planes * in_plane, planes * out_plane, planes * out_plane),
        "max_pool_backward: buffers of the wrong length for the plan"
    );
    if dx.is_empty() || out_plane == 0 {
        dx.fill(C::zeroed());
        return;
    }
    let split = Split::queued(planes, dx.len() + grad.len());
    let per_piece = split.units_per_piece;
    let pieces = dx
        .chunks_mut(in_plane * per_piece)
        .zip(grad.chunks(out_plane * per_piece))
        .zip(indices.chunks(out_plane * per_piece));
    for_each_piece(
        split,
        pieces.enumerate(),
        |(piece, ((dx, grad), indices))| {
            let planes = dx
                .chunks_mut(in_plane)
                .zip(grad.chunks(out_plane))
                .zip(indices.chunks(out_plane));
            for (plane, ((dx, grad), indices)) in (piece * per_piece..).zip(planes) {
                let dx = zeroed(dx);
                let base = plan.index_base(plane);
                for (&g, &index) in grad.iter().zip(indices) {
                    // The pool wrote `base + position`; a foreign index panics here (checked).
                    let cell = &mut dx[index.position().wrapping_sub(base)];
                    *cell = *cell + g;
                }
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use burn::tensor::DType;
    use burn::tensor::ops::MaxPoolOptions;

    use super::{max_pool, max_pool_backward};
    use crate::kernel::parallel::runs_sequentially;
    use crate::pool::{PoolPlan, PoolSpec};

    /// The gradient's planes are zeroed by the tasks that add into them: whatever the memory
    /// held (cells of junk here, initialised so that reading them back is defined), the
    /// positions no window chose are zero; the backward itself gives the same.
    #[test]
    fn junk_comes_out_zero_where_no_window_chose() {
        let pool = PoolSpec::from_pool(&MaxPoolOptions::new([2, 2]).with_stride([2, 2]));
        let shape = [2, 4, 64, 64];
        let plan = PoolPlan::new(&shape, &pool, DType::I64).unwrap();
        let len: usize = shape.iter().product();
        assert!(!runs_sequentially(len));
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % 1009) as f32).collect();
        let (values, indices) = max_pool::<f32, i64>(&x, &plan).unwrap();
        let grad = vec![1.0f32; values.len()];
        let mut cells = vec![core::mem::MaybeUninit::new(f32::NAN); len];
        super::add_windows(&grad, &indices, &plan, &mut cells, super::write_zeros);
        // SAFETY: every cell was initialised above, and the op writes only `f32`s into them.
        let dx: Vec<f32> = cells
            .iter()
            .map(|cell| unsafe { cell.assume_init() })
            .collect();
        assert_eq!(dx.iter().filter(|&&g| g == 1.0).count(), values.len());
        assert_eq!(dx.iter().filter(|&&g| g == 0.0).count(), len - values.len());
        drop(vec![f32::NAN; len]);
        let backward = max_pool_backward::<f32, i64>(&grad, &indices, &plan).unwrap();
        assert_eq!(backward, dx);
    }

    /// A tensor large enough for the thread pool gives, plane by plane, what each plane gives
    /// alone on the calling thread: the split of the work changes no value, index or gradient.
    #[test]
    fn the_parallel_split_gives_what_each_plane_gives_alone() {
        let pool = PoolSpec::from_pool(&MaxPoolOptions::new([3, 3]).with_stride([2, 2]));
        let (planes, plane) = (6, [45, 61]);
        let plane_len = plane[0] * plane[1];
        let x: Vec<f32> = (0..planes * plane_len)
            .map(|i| ((i * 7919) % 1009) as f32 - ((i % 3) as f32) * 0.5)
            .collect();
        let whole = PoolPlan::new(&[2, 3, plane[0], plane[1]], &pool, DType::I64).unwrap();
        let single = PoolPlan::new(&[1, 1, plane[0], plane[1]], &pool, DType::I64).unwrap();
        assert!(!runs_sequentially(x.len()) && runs_sequentially(plane_len));
        let (values, indices) = max_pool::<f32, i64>(&x, &whole).unwrap();
        let grad: Vec<f32> = (0..values.len()).map(|i| (i % 5) as f32 - 2.0).collect();
        let dx = max_pool_backward::<f32, i64>(&grad, &indices, &whole).unwrap();
        let out_len = single.output_plane_len();
        for p in 0..planes {
            let x = &x[p * plane_len..][..plane_len];
            let (v, i) = max_pool::<f32, i64>(x, &single).unwrap();
            assert_eq!(v, values[p * out_len..][..out_len], "values of plane {p}");
            assert_eq!(i, indices[p * out_len..][..out_len], "indices of plane {p}");
            let g = max_pool_backward::<f32, i64>(&grad[p * out_len..][..out_len], &i, &single);
            assert_eq!(
                g.unwrap(),
                dx[p * plane_len..][..plane_len],
                "gradient of plane {p}"
            );
        }
    }
}
