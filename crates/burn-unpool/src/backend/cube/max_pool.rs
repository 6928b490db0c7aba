//! The max pool with indices on CubeCL devices: windows scanned like the CPU kernel (the same
//! indices everywhere), and a backward summing in window order: no atomics, the same bits.

// Kernel code rounds up by hand: `usize::div_ceil` has no CubeCL expansion.
#![allow(clippy::manual_div_ceil)]

use burn::backend::TensorMetadata;
use burn::tensor::{DType, Shape};
use burn_cubecl::tensor::CubeTensor;
use cubecl::ir::dialect::math::IsNanOp;
use cubecl::prelude::*;
use cubecl::std::FastDivmod;

use super::{
    DIVIDEND_LIMIT, contiguous, empty, launch_grid, record_launch, storage_type, vector_size,
};
use crate::backend::composition::{self, shift_by_planes};
use crate::plan::PoolPlan;
use burn_cubecl::CubeBackend;

/// The pool's windows over three axes (leading ones of size 1), divisors also as [`FastDivmod`]s.
#[derive(CubeLaunch, CubeType)]
pub(super) struct PoolWindows {
    in_len: usize,
    out_len: usize,
    in_plane: usize,
    out_plane: usize,
    in_plane_div: FastDivmod<usize>,
    out_plane_div: FastDivmod<usize>,
    input: Sequence<usize>,
    /// The number of windows on each axis.
    output: Sequence<usize>,
    input_div: Sequence<FastDivmod<usize>>,
    output_div: Sequence<FastDivmod<usize>>,
    kernel: Sequence<usize>,
    stride: Sequence<usize>,
    dilation: Sequence<usize>,
    stride_div: Sequence<FastDivmod<usize>>,
    dilation_div: Sequence<FastDivmod<usize>>,
    pad: Sequence<usize>,
}

/// Window `w`'s inputs on `axis`: first coordinate and count (at least one), `dilation` apart.
#[cube]
fn taps(w: usize, windows: &PoolWindows, #[comptime] axis: usize) -> (usize, usize) {
    let start = w * windows.stride[axis];
    let pad = windows.pad[axis];
    let d = windows.dilation[axis];
    let mut first = 0;
    if start < pad {
        first = windows.dilation_div.index(axis).div(pad - start + d - 1);
    }
    let limit = pad + windows.input[axis];
    let mut end = 0;
    if start < limit {
        end = windows.dilation_div.index(axis).div(limit - start + d - 1);
    }
    if end > windows.kernel[axis] {
        end = windows.kernel[axis];
    }
    (start + first * d - pad, end - first)
}

/// The windows `[lo, hi)` on `axis` whose span reaches input coordinate `c`.
#[cube]
fn covering(c: usize, windows: &PoolWindows, #[comptime] axis: usize) -> (usize, usize) {
    let q = c + windows.pad[axis];
    let reach = (windows.kernel[axis] - 1) * windows.dilation[axis];
    let s = windows.stride[axis];
    let stride = windows.stride_div.index(axis);
    let mut lo = 0;
    if q > reach {
        lo = stride.div(q - reach + s - 1);
    }
    let mut hi = stride.div(q) + 1;
    if hi > windows.output[axis] {
        hi = windows.output[axis];
    }
    (lo, hi)
}

/// The three coordinates of row-major position `local` in a plane of the sizes `sizes` divide by.
#[cube]
fn coordinates(local: usize, sizes: &Sequence<FastDivmod<usize>>) -> (usize, usize, usize) {
    let (rest, c2) = sizes.index(2).div_mod(local);
    let (c0, c1) = sizes.index(1).div_mod(rest);
    (c0, c1, c2)
}

/// Whether `value` (a float) is NaN, by the IR op: `value != value` may be folded away.
#[cube]
fn is_nan<N: Numeric>(value: N) -> bool {
    intrinsic!(|scope| {
        let value = value.read_value(scope);
        let is_nan = IsNanOp::new(scope.ctx_mut(), value);
        scope.register_with_result(&is_nan).into()
    })
}

/// A 32-bit float's place in the order as an integer, from its bits (-0.0 and +0.0 alike,
/// subnormals apart from zero where the device's float comparison flushes them), and whether it is NaN.
#[cube]
fn f32_order<N: Numeric>(value: N) -> (i32, bool) {
    let bits = i32::reinterpret(value);
    let magnitude = bits & 0x7FFF_FFFFi32;
    (
        select(bits < 0i32, -magnitude, magnitude),
        magnitude > 0x7F80_0000i32,
    )
}

/// Whether `value` replaces `best` as a window's maximum: greater, or NaN (`floats`); 32-bit
/// floats (`bits`) compared by [`f32_order`].
#[cube]
fn beats<N: Numeric>(value: N, best: N, #[comptime] floats: bool, #[comptime] bits: bool) -> bool {
    if comptime![bits] {
        let (key, nan) = f32_order::<N>(value);
        let (best_key, best_nan) = f32_order::<N>(best);
        nan || (!best_nan && key > best_key)
    } else if comptime![floats] {
        value > best || is_nan::<N>(value)
    } else {
        value > best
    }
}

/// Window `(w0, w1, w2)` of `plane`: its first maximum (last NaN for `floats`) and its position.
#[cube]
fn pool_window<N: Numeric>(
    x: &Tensor<N>,
    windows: &PoolWindows,
    plane: usize,
    w0: usize,
    w1: usize,
    w2: usize,
    #[comptime] floats: bool,
    #[comptime] bits: bool,
) -> (N, usize) {
    let (first0, count0) = taps(w0, windows, 0usize);
    let (first1, count1) = taps(w1, windows, 1usize);
    let (first2, count2) = taps(w2, windows, 2usize);
    let height = windows.input[1];
    let width = windows.input[2];
    let base = plane * windows.in_plane;
    let mut best_at = (first0 * height + first1) * width + first2;
    let mut best = x[base + best_at];
    for t0 in 0..count0 {
        let i0 = first0 + t0 * windows.dilation[0];
        for t1 in 0..count1 {
            let row = (i0 * height + first1 + t1 * windows.dilation[1]) * width + first2;
            for t2 in 0..count2 {
                let at = row + t2 * windows.dilation[2];
                let value = x[base + at];
                if beats::<N>(value, best, floats, bits) {
                    best = value;
                    best_at = at;
                }
            }
        }
    }
    (best, best_at)
}

/// The forward: each unit pools a vector of neighbouring windows of one row (`floats`: NaNs count;
/// `bits`: 32-bit floats, ordered by their bits).
#[cube(launch_unchecked)]
pub(super) fn max_pool_windows<N: Numeric, I: Int, V: Size>(
    x: &Tensor<N>,
    values: &mut Tensor<Vector<N, V>>,
    indices: &mut Tensor<Vector<I, V>>,
    windows: PoolWindows,
    #[comptime] floats: bool,
    #[comptime] bits: bool,
    #[define(N, I)] _dtypes: [ElemType; 2],
) {
    let width = values.vector_size();
    let first = ABSOLUTE_POS * width;
    if first >= windows.out_len {
        terminate!();
    }
    let (plane, local) = windows.out_plane_div.div_mod(first);
    let (w0, w1, w2) = coordinates(local, &windows.output_div);
    let mut best = Vector::<N, V>::empty();
    let mut best_at = Vector::<I, V>::empty();
    #[unroll]
    for i in 0..width {
        let (value, at) = pool_window(x, &windows, plane, w0, w1, w2 + i, floats, bits);
        best.insert(i, value);
        best_at.insert(i, I::cast_from(at));
    }
    values[ABSOLUTE_POS] = best;
    indices[ABSOLUTE_POS] = best_at;
}

/// The backward: each unit sums, per element of its vector, the gradients of windows indexing it.
#[cube(launch_unchecked)]
pub(super) fn max_pool_gradient<F: Float, I: Int, V: Size>(
    grad: &Tensor<F>,
    indices: &Tensor<I>,
    dx: &mut Tensor<Vector<F, V>>,
    windows: PoolWindows,
    #[define(F, I)] _dtypes: [ElemType; 2],
) {
    let width = dx.vector_size();
    let first = ABSOLUTE_POS * width;
    if first >= windows.in_len {
        terminate!();
    }
    let (plane, local) = windows.in_plane_div.div_mod(first);
    let (c0, c1, c2) = coordinates(local, &windows.input_div);
    let (lo0, hi0) = covering(c0, &windows, 0usize);
    let (lo1, hi1) = covering(c1, &windows, 1usize);
    let base = plane * windows.out_plane;
    let mut sums = Vector::<F, V>::empty();
    #[unroll]
    for i in 0..width {
        let (lo2, hi2) = covering(c2 + i, &windows, 2usize);
        let target = I::cast_from(local + i);
        let mut sum = F::from_int(0);
        for w0 in lo0..hi0 {
            for w1 in lo1..hi1 {
                let row = base + (w0 * windows.output[1] + w1) * windows.output[2];
                for w2 in lo2..hi2 {
                    let o = row + w2;
                    if indices[o] == target {
                        sum += grad[o];
                    }
                }
            }
        }
        sums.insert(i, sum);
    }
    dx[ABSOLUTE_POS] = sums;
}

/// Whether the kernels address `plan`: at most three axes, every position and padded extent < 2^31.
pub(super) fn addresses(plan: &PoolPlan) -> bool {
    if plan.dims() > 3 {
        return false;
    }
    let g = plan.geometry();
    let padded = (0..plan.dims())
        .map(|axis| {
            (plan.outputs(axis) as u128) * (g.stride[axis] as u128)
                + (g.kernel_size[axis] as u128) * (g.dilation[axis] as u128)
                + g.padding[axis].0 as u128
                + plan.input(axis) as u128
        })
        .max()
        .unwrap_or(0);
    let len = |shape: &[usize]| shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    [len(plan.input_shape()), len(plan.output_shape())]
        .into_iter()
        .all(|n| n.is_some_and(|n| n < DIVIDEND_LIMIT))
        && padded < DIVIDEND_LIMIT as u128
}

fn windows(plan: &PoolPlan) -> PoolWindowsLaunch {
    let g = plan.geometry();
    let lead = 3 - plan.dims();
    let axes = |value: &dyn Fn(usize) -> usize, fill: usize| -> [usize; 3] {
        std::array::from_fn(|slot| slot.checked_sub(lead).map_or(fill, value))
    };
    let input = axes(&|a| plan.input(a), 1);
    let output = axes(&|a| plan.outputs(a), 1);
    let kernel = axes(&|a| g.kernel_size[a], 1);
    let stride = axes(&|a| g.stride[a], 1);
    let dilation = axes(&|a| g.dilation[a], 1);
    let pad = axes(&|a| g.padding[a].0, 0);
    let sequence = |values: [usize; 3]| {
        let mut sequence = SequenceArg::new();
        values.into_iter().for_each(|value| sequence.push(value));
        sequence
    };
    let divisors = |values: [usize; 3]| {
        let mut sequence = SequenceArg::<FastDivmod<usize>>::new();
        values.into_iter().for_each(|value| sequence.push(value));
        sequence
    };
    let in_len = plan.input_shape().iter().product();
    let out_len = plan.output_shape().iter().product();
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    PoolWindowsLaunch {
        in_len,
        out_len,
        in_plane,
        out_plane,
        in_plane_div: in_plane,
        out_plane_div: out_plane,
        input: sequence(input),
        output: sequence(output),
        input_div: divisors(input),
        output_div: divisors(output),
        kernel: sequence(kernel),
        stride: sequence(stride),
        dilation: sequence(dilation),
        stride_div: divisors(stride),
        dilation_div: divisors(dilation),
        pad: sequence(pad),
    }
}

/// The pooled values (any float or integer dtype) and indices; `composition` for plans the kernels
/// do not address. Kernels write in-plane positions; global indices get plane offsets after.
pub(super) fn max_pool(
    x: CubeTensor,
    plan: PoolPlan,
    composition: fn(CubeTensor, PoolPlan) -> (CubeTensor, CubeTensor),
) -> (CubeTensor, CubeTensor) {
    plan.assert_input("max_pool_with_indices", &x.shape());
    if !addresses(&plan) {
        return composition(x, plan);
    }
    let shape = Shape::from(plan.output_shape());
    let values = empty(&x, shape.clone(), x.dtype);
    let indices = empty(&x, shape, plan.index_dtype());
    let units = values.shape().num_elements();
    if units == 0 {
        return (values, indices);
    }
    let x = contiguous(x);
    let dtypes = [storage_type(x.dtype), storage_type(indices.dtype)];
    let floats = x.dtype.is_float();
    // Devices may flush subnormals in float comparisons (SwiftShader does): f32 by its bits.
    let bits = x.dtype == DType::F32;
    // Vectors of windows never cross a pooled row, and suit both outputs' element sizes.
    let row = plan.output_shape()[plan.output_shape().len() - 1];
    let width = vector_size(&values, row).min(vector_size(&indices, row));
    let (cube_dim, count) = launch_grid(&values, units / width);
    record_launch(width);
    // SAFETY: `addresses` checked at most three axes and positions below 2^31 (exact
    // `FastDivmod`s); `assert_input` that `x` has the plan's shape. One unit per vector of `width`
    // pooled elements (`width` divides the rows), the rest stop; every window has an input element
    // (the plan's check), so every read lies inside its plane of `x`.
    unsafe {
        max_pool_windows::launch_unchecked(
            &values.client,
            count,
            cube_dim,
            width,
            x.into_tensor_arg(),
            values.clone().into_tensor_arg(),
            indices.clone().into_tensor_arg(),
            windows(&plan),
            floats,
            bits,
            dtypes,
        );
    }
    let indices = match plan.global_indices() {
        true => shift_by_planes::<CubeBackend>(indices, &plan, false),
        false => indices,
    };
    (values, indices)
}

pub(super) fn max_pool_backward(
    grad: CubeTensor,
    indices: CubeTensor,
    plan: PoolPlan,
) -> CubeTensor {
    let shape = plan.checked_pool_input_shape(&grad.shape(), &indices.shape());
    if !addresses(&plan) {
        return composition::max_pool_with_indices_backward::<CubeBackend>(grad, indices, plan);
    }
    let indices = match plan.global_indices() {
        true => shift_by_planes::<CubeBackend>(indices, &plan, true),
        false => indices,
    };
    let dx = empty(&grad, shape, grad.dtype);
    let units = dx.shape().num_elements();
    if units == 0 {
        return dx;
    }
    let (grad, indices) = (contiguous(grad), contiguous(indices));
    let dtypes = [storage_type(grad.dtype), storage_type(indices.dtype)];
    // Vectors of elements never cross a row of `x`.
    let width = vector_size(&dx, plan.input_shape()[plan.input_shape().len() - 1]);
    let (cube_dim, count) = launch_grid(&dx, units / width);
    record_launch(width);
    // SAFETY: `addresses` checked at most three axes and positions below 2^31 (exact
    // `FastDivmod`s); `checked_pool_input_shape` that `grad` and `indices` have the pooled shape.
    // One unit per vector of `width` elements of `x` (`width` divides its rows), the rest stop;
    // the windows a unit reads are clamped to the pooled plane of `out_plane` elements.
    unsafe {
        max_pool_gradient::launch_unchecked(
            &dx.client,
            count,
            cube_dim,
            width,
            grad.into_tensor_arg(),
            indices.into_tensor_arg(),
            dx.clone().into_tensor_arg(),
            windows(&plan),
            dtypes,
        );
    }
    dx
}

#[cfg(test)]
mod tests {
    use burn::tensor::DType;
    use burn::tensor::ops::MaxPoolOptions;

    use super::addresses;
    use crate::plan::PoolPlan;

    fn plan<const D: usize>(shape: &[usize]) -> PoolPlan {
        PoolPlan::new(shape, &MaxPoolOptions::new([2; D]), DType::I32).expect("a valid pool")
    }

    #[test]
    fn the_kernels_take_one_to_three_axes_only() {
        assert!(addresses(&plan::<1>(&[1, 1, 4])));
        assert!(addresses(&plan::<3>(&[1, 1, 4, 4, 4])));
        // The kernels address three axes: a fourth would be read as if it were not there.
        assert!(!addresses(&plan::<4>(&[1, 2, 4, 4, 4, 4])));
        assert!(!addresses(&plan::<6>(&[1, 1, 2, 2, 2, 2, 2, 2])));
    }

    /// `FastDivmod` is exact below 2^31: a plane of 2^31 elements goes to the composition.
    #[test]
    fn the_kernels_divide_positions_below_two_to_the_31() {
        assert!(addresses(&plan::<2>(&[1, 1, 1 << 15, (1 << 16) - 2])));
        assert!(!addresses(&plan::<2>(&[1, 1, 1 << 15, 1 << 16])));
        assert!(!addresses(&plan::<1>(&[2, 1, 1 << 30])));
    }
}
