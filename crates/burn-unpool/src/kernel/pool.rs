//! The CPU max pool with indices: one core for every rank (the last three axes in nested loops,
//! any axes before them as lists of offsets) and every float dtype, parallel over `(n, c)` planes.
//!
//! Each window is scanned in row-major order from its first input element; an element replaces
//! the running maximum when it is larger or NaN. So the index is the first maximum, or the last
//! NaN of a window holding NaNs (PyTorch's CPU rule), it always lies inside its own window, and
//! padding never wins, whatever the values (`-inf` included).

use std::ops::Add;

use burn::tensor::{DType, TensorData, bf16, f16};
use bytemuck::Pod;
use rayon::prelude::*;

use super::host::HostTensor;
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

/// An index dtype the pool writes and reads back: a position inside one plane.
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

/// Pools one plane of `x` into `values` and `indices`, windows in row-major order.
fn pool_plane<T: PoolValue, I: PoolIndex>(
    x: &[T],
    windows: &PlaneWindows,
    values: &mut [T],
    indices: &mut [I],
) {
    let [h, w] = windows.inner_input;
    let [axis0, axis1, axis2] = &windows.inner;
    let mut out = 0;
    for outer in &windows.outer {
        for &(first0, count0) in &axis0.taps {
            for &(first1, count1) in &axis1.taps {
                for &(first2, count2) in &axis2.taps {
                    let mut best_at = outer[0] + (first0 * h + first1) * w + first2;
                    let mut best = x[best_at];
                    for &base in outer {
                        for t0 in 0..count0 {
                            let i0 = first0 + t0 * axis0.dilation;
                            for t1 in 0..count1 {
                                let row = base + (i0 * h + first1 + t1 * axis1.dilation) * w;
                                let mut at = row + first2;
                                for _ in 0..count2 {
                                    let value = x[at];
                                    if value.beats(best) {
                                        best = value;
                                        best_at = at;
                                    }
                                    at += axis2.dilation;
                                }
                            }
                        }
                    }
                    values[out] = best;
                    indices[out] = I::from_position(best_at);
                    out += 1;
                }
            }
        }
    }
}

/// The pooled values and their per-plane indices, for every plane of `x`.
fn max_pool<T: PoolValue, I: PoolIndex>(x: &[T], plan: &PoolPlan) -> (Vec<T>, Vec<I>) {
    let windows = PlaneWindows::new(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let len = plan.planes() * out_plane;
    let mut values = vec![T::zeroed(); len];
    let mut indices = vec![I::zeroed(); len];
    if len == 0 {
        return (values, indices);
    }
    values
        .par_chunks_mut(out_plane)
        .zip(indices.par_chunks_mut(out_plane))
        .zip(x.par_chunks(in_plane))
        .for_each(|((values, indices), x)| pool_plane(x, &windows, values, indices));
    (values, indices)
}

/// The gradient of `x`: each window's gradient added at its index into zeros, plane by plane in
/// window order (so the sums are the same on every run). Disjoint windows add into each element
/// once; even then the sum is kept, as PyTorch's CPU does: an upstream `-0.0` becomes `+0.0`.
fn max_pool_backward<T: PoolValue + Add<Output = T>, I: PoolIndex>(
    grad: &[T],
    indices: &[I],
    plan: &PoolPlan,
) -> Vec<T> {
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let mut dx = vec![T::zeroed(); plan.planes() * in_plane];
    if dx.is_empty() || out_plane == 0 {
        return dx;
    }
    dx.par_chunks_mut(in_plane)
        .zip(grad.par_chunks(out_plane))
        .zip(indices.par_chunks(out_plane))
        .for_each(|((dx, grad), indices)| {
            for (&g, &index) in grad.iter().zip(indices) {
                let cell = &mut dx[index.position()];
                *cell = *cell + g;
            }
        });
    dx
}

/// Binds `$T` to the type listed for `$dtype` and evaluates `$body`; other dtypes panic, naming
/// `$what` and the dtypes `$op` takes.
macro_rules! with_type {
    ($dtype:expr, $op:literal, $what:literal, |$T:ident| $body:expr, [$($variant:ident => $ty:ty),*]) => {
        match $dtype {
            $(DType::$variant => {
                type $T = $ty;
                $body
            })*
            dtype => panic!(
                concat!("{}: ", $what, " must be of dtype ", $(stringify!($variant), " "),* , "got {:?}"),
                $op, dtype
            ),
        }
    };
}

/// Binds `$T` to the float type of `$dtype` and evaluates `$body`.
macro_rules! with_float_type {
    ($dtype:expr, $op:literal, |$T:ident| $body:expr) => {
        with_type!($dtype, $op, "values", |$T| $body, [F32 => f32, F64 => f64, F16 => f16, BF16 => bf16])
    };
}

/// Binds `$I` to the index type of `$dtype` and evaluates `$body`.
macro_rules! with_pool_index_type {
    ($dtype:expr, $op:literal, |$I:ident| $body:expr) => {
        with_type!($dtype, $op, "indices", |$I| $body, [I32 => i32, I64 => i64, U32 => u32, U64 => u64])
    };
}

/// The pool of `x` on the host: the values and the indices (of `plan.index_dtype()`).
pub(crate) fn run_pool(x: HostTensor<'_>, plan: &PoolPlan) -> (TensorData, TensorData) {
    let shape = plan.output_shape().to_vec();
    with_float_type!(x.dtype, "max_pool", |T| {
        with_pool_index_type!(plan.index_dtype(), "max_pool", |I| {
            let (values, indices) = max_pool::<T, I>(&x.elements::<T>(), plan);
            (
                TensorData::new(values, shape.clone()),
                TensorData::new(indices, shape),
            )
        })
    })
}

/// The gradient of the pool's `x` on the host, for the pooled tensor's gradient `grad`.
pub(crate) fn run_pool_backward(
    grad: HostTensor<'_>,
    indices: HostTensor<'_>,
    plan: &PoolPlan,
) -> TensorData {
    with_float_type!(grad.dtype, "max_pool_backward", |T| {
        with_pool_index_type!(indices.dtype, "max_pool_backward", |I| {
            let dx =
                max_pool_backward::<T, I>(&grad.elements::<T>(), &indices.elements::<I>(), plan);
            TensorData::new(dx, plan.input_shape().to_vec())
        })
    })
}
