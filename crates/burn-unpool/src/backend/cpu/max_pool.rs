//! The CPU max pool with indices: one core for every rank and dtype, parallel over output rows.
//! Windows are scanned in row-major order; an element replaces the maximum when larger or NaN, so
//! the index is the first maximum or the last NaN (PyTorch's CPU rule), and padding never wins.

use core::mem::MaybeUninit;
use std::ops::Add;

use burn::tensor::{bf16, f16};
use bytemuck::Pod;

use super::buffer::{write_zeros, written_buffer, zeroed_buffer, zeroed_by_the_os};
use super::{Split, for_each_piece};
use crate::error::UnpoolError;
use crate::plan::PoolPlan;

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

/// An index dtype the pool writes: a position in the plane, or in the tensor for global indices.
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
    input: usize,
}

impl AxisTaps {
    fn new(plan: &PoolPlan, axis: usize) -> Self {
        Self {
            taps: (0..plan.outputs(axis))
                .map(|cell| plan.taps(axis, cell))
                .collect(),
            dilation: plan.geometry().dilation[axis],
            input: plan.input(axis),
        }
    }

    /// An axis of one element with one window of it: it changes no position.
    fn unit() -> Self {
        Self {
            taps: vec![(0, 1)],
            dilation: 1,
            input: 1,
        }
    }
}

/// The windows of one plane, any rank: the last three axes are scanned by nested loops (fewer
/// get leading unit axes); the axes before them give a list of plane offsets per output cell.
struct PlaneWindows {
    inner: [AxisTaps; 3],
    inner_input: [usize; 2],
    /// Per output cell of the leading axes, its window's plane offsets there (`[[0]]` for <= 3 axes).
    outer: Vec<Vec<usize>>,
}

impl PlaneWindows {
    fn new(plan: &PoolPlan) -> Self {
        let dims = plan.dims();
        let lead = dims.saturating_sub(3);
        let inner: [AxisTaps; 3] = std::array::from_fn(|slot| match (slot + dims).checked_sub(3) {
            Some(axis) if axis >= lead => AxisTaps::new(plan, axis),
            _ => AxisTaps::unit(),
        });
        let mut stride = inner.iter().map(|axis| axis.input).product::<usize>();
        let mut strides = vec![0; lead];
        for axis in (0..lead).rev() {
            strides[axis] = stride;
            stride *= plan.input(axis);
        }
        let mut outer = vec![vec![0usize]];
        for (axis, &stride) in strides.iter().enumerate() {
            let dilation = plan.geometry().dilation[axis];
            outer = outer
                .iter()
                .flat_map(|offsets| {
                    (0..plan.outputs(axis)).map(move |cell| {
                        let (first, count) = plan.taps(axis, cell);
                        offsets
                            .iter()
                            .flat_map(|&offset| {
                                (0..count).map(move |t| offset + (first + t * dilation) * stride)
                            })
                            .collect()
                    })
                })
                .collect();
        }
        let inner_input = [inner[1].input, inner[2].input];
        Self {
            inner,
            inner_input,
            outer,
        }
    }

    fn row_len(&self) -> usize {
        self.inner[2].taps.len()
    }

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
        // Dense windows (one leading cell, dilation 1) of common sizes scan with constant bounds.
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
            // The first tap starts the scan; meeting it again keeps it (a NaN replaces itself).
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

/// The general scan on a dense `D x R x W` block from `top`, with constant bounds to unroll it.
#[inline(always)]
fn scan_block<T: PoolValue, const D: usize, const R: usize, const W: usize>(
    x: &[T],
    top: usize,
    h: usize,
    w: usize,
) -> (T, usize) {
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

/// The pooled values and their indices (per plane, or global where the plan says).
pub(crate) fn max_pool<T: PoolValue, I: PoolIndex>(
    x: &[T],
    plan: &PoolPlan,
) -> Result<(Vec<T>, Vec<I>), UnpoolError> {
    let windows = PlaneWindows::new(plan);
    let shape = plan.output_shape();
    let row_len = windows.row_len();
    let total_rows = plan.planes() * windows.rows();
    let window_len: usize = plan.geometry().kernel_size.iter().product();
    let reads = total_rows
        .saturating_mul(row_len)
        .saturating_mul(window_len);
    let split = Split::queued(total_rows, reads);
    let chunk = split.units_per_piece * row_len;
    let mut indices = Vec::new();
    // Every element of both buffers is written: the pieces' rows cover the output, every cell.
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

/// The gradient of `x`: each window's gradient added at its index into zeros, in window order
/// (the same sums on every run); like PyTorch's CPU, an upstream `-0.0` becomes `+0.0`.
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
    // Every element is written: `add_windows` zeroes every plane, in its task or all at once.
    written_buffer(shape, |dx| {
        add_windows(grad, indices, plan, dx, write_zeros);
        Ok(())
    })
}

/// Adds each window's gradient at its index into `dx`, per plane; `zeroed` gives a plane as zeros.
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
    use crate::backend::cpu::parallel::runs_sequentially;
    use crate::plan::PoolPlan;

    #[test]
    fn junk_comes_out_zero_where_no_window_chose() {
        let pool = MaxPoolOptions::new([2, 2]).with_stride([2, 2]);
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

    #[test]
    fn the_parallel_split_gives_what_each_plane_gives_alone() {
        let pool = MaxPoolOptions::new([3, 3]).with_stride([2, 2]);
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
