//! The max pool with indices on CubeCL devices.
//!
//! Forward: each pooled element's window is scanned from its first input element, as the CPU
//! kernel does (larger or, for floats, NaN replaces), so the indices are the same on every device
//! and each lies in its own window; a unit pools a vector of neighbouring windows of one row and
//! stores their values and indices as one vector each. Backward: each input element adds the
//! gradients of the windows that cover it and report it as their index, in window order, a unit
//! a vector of neighbouring elements of one row: no atomics, no races, the same bits every run.
//! Where the windows are disjoint, at most one window covers an element, so every element is
//! written once with its window's gradient.

// Kernel code rounds up by hand: `usize::div_ceil` has no CubeCL expansion.
#![allow(clippy::manual_div_ceil)]

use burn::backend::TensorMetadata;
use burn::tensor::Shape;
use burn_cubecl::tensor::CubeTensor;
use cubecl::ir::dialect::math::IsNanOp;
use cubecl::prelude::*;
use cubecl::std::FastDivmod;

use super::{
    DIVIDEND_LIMIT, contiguous, empty, launch_grid, record_launch, storage_type, vector_size,
};
use crate::PoolPlan;

/// The pool's windows as the kernels read them: three axes, leading ones of size 1. Every size a
/// kernel divides by comes twice, as a value and as a [`FastDivmod`] (a multiply-high and a shift
/// computed on the host), so that no unit divides by a runtime size on devices with 64-bit
/// integers; on others CubeCL's `FastDivmod` falls back to a division.
#[derive(CubeLaunch, CubeType)]
pub(super) struct PoolWindows {
    /// Elements of `x`.
    in_len: usize,
    /// Elements of the pooled tensor.
    out_len: usize,
    /// Elements of one input plane.
    in_plane: usize,
    /// Elements of one pooled plane.
    out_plane: usize,
    /// `in_plane` and `out_plane` as divisors.
    in_plane_div: FastDivmod<usize>,
    out_plane_div: FastDivmod<usize>,
    /// Spatial sizes of `x`.
    input: Sequence<usize>,
    /// Spatial sizes of the pooled tensor: the number of windows on each axis.
    output: Sequence<usize>,
    /// `input` and `output` as divisors.
    input_div: Sequence<FastDivmod<usize>>,
    output_div: Sequence<FastDivmod<usize>>,
    kernel: Sequence<usize>,
    stride: Sequence<usize>,
    dilation: Sequence<usize>,
    /// `stride` and `dilation` as divisors.
    stride_div: Sequence<FastDivmod<usize>>,
    dilation_div: Sequence<FastDivmod<usize>>,
    /// Padding at the beginning of each axis.
    pad: Sequence<usize>,
}

/// The input elements of window `w` on `axis`: the first one's coordinate and how many there
/// are, `dilation` apart. The plan guarantees at least one.
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

/// Whether `value` is NaN (the float-only IR operation: a `value != value` may be folded away;
/// the caller emits it for float values only).
#[cube]
fn is_nan<N: Numeric>(value: N) -> bool {
    intrinsic!(|scope| {
        let value = value.read_value(scope);
        let is_nan = IsNanOp::new(scope.ctx_mut(), value);
        scope.register_with_result(&is_nan).into()
    })
}

/// Pools window `(w0, w1, w2)` of `plane`: its first maximum (or last NaN, for `floats`) and
/// that element's position in the plane.
#[cube]
fn pool_window<N: Numeric>(
    x: &Tensor<N>,
    windows: &PoolWindows,
    plane: usize,
    w0: usize,
    w1: usize,
    w2: usize,
    #[comptime] floats: bool,
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
                let mut beats = value > best;
                if floats {
                    beats = beats || is_nan::<N>(value);
                }
                if beats {
                    best = value;
                    best_at = at;
                }
            }
        }
    }
    (best, best_at)
}

/// The forward: every unit pools a vector of neighbouring windows of one row (the host makes
/// the vector divide the row) and stores their values and indices as one vector each.
/// `floats`: whether the values have NaNs to report.
#[cube(launch_unchecked)]
pub(super) fn max_pool_windows<N: Numeric, I: Int, V: Size>(
    x: &Tensor<N>,
    values: &mut Tensor<Vector<N, V>>,
    indices: &mut Tensor<Vector<I, V>>,
    windows: PoolWindows,
    #[comptime] floats: bool,
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
        let (value, at) = pool_window(x, &windows, plane, w0, w1, w2 + i, floats);
        best.insert(i, value);
        best_at.insert(i, I::cast_from(at));
    }
    values[ABSOLUTE_POS] = best;
    indices[ABSOLUTE_POS] = best_at;
}

/// The backward: every unit sums, in window order, the gradients of the windows whose index is
/// its element, for a vector of neighbouring elements of one row (the host makes the vector
/// divide the row).
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

/// Whether the kernels address `plan`: at most three spatial axes (the kernels are written for
/// three), every position and padded extent they compute below `2^31` (a [`FastDivmod`] is exact
/// for dividends below it, whatever the device's address width), and indices inside each plane
/// (the kernels do not write global ones).
pub(crate) fn addresses(plan: &PoolPlan) -> bool {
    let Some(axes) = plan.axes3() else {
        return false;
    };
    if plan.global_indices() {
        return false;
    }
    let len = |shape: &[usize]| shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let padded = axes
        .iter()
        .map(|axis| {
            (axis.outputs as u128) * (axis.stride as u128)
                + (axis.kernel as u128) * (axis.dilation as u128)
                + axis.padding_begin as u128
                + axis.input as u128
        })
        .max()
        .unwrap_or(0);
    [len(plan.input_shape()), len(plan.output_shape())]
        .into_iter()
        .all(|n| n.is_some_and(|n| n < DIVIDEND_LIMIT))
        && padded < DIVIDEND_LIMIT as u128
}

/// Panics, naming the plan, unless the kernels address it ([`addresses`]): the host check that
/// keeps every unchecked launch below in bounds.
#[track_caller]
fn assert_addressed(op: &str, plan: &PoolPlan) {
    assert!(
        addresses(plan),
        "UnpoolBackend::{op} on a CubeCL device: the GPU kernels take pools of 1 to 3 spatial \
         axes whose positions and padded axis extents stay below 2^31, indices inside each \
         plane; got a pool of {} spatial axes of {:?} into {:?}, {} indices (the tensor \
         functions run such pools with the portable composition)",
        plan.axes().len(),
        plan.input_shape(),
        plan.output_shape(),
        if plan.global_indices() {
            "global"
        } else {
            "per-plane"
        },
    );
}

/// The windows of an addressed plan ([`assert_addressed`] ran).
fn windows(plan: &PoolPlan) -> PoolWindowsLaunch {
    let axes = plan
        .axes3()
        .expect("an addressed plan has at most three axes");
    let sequence = |value: fn(&crate::pool::AxisWindows) -> usize| {
        let mut sequence = SequenceArg::new();
        axes.iter().for_each(|axis| sequence.push(value(axis)));
        sequence
    };
    let divisors = |value: fn(&crate::pool::AxisWindows) -> usize| {
        let mut sequence = SequenceArg::<FastDivmod<usize>>::new();
        axes.iter().for_each(|axis| sequence.push(value(axis)));
        sequence
    };
    let in_len = plan.input_shape().iter().product();
    let out_len = plan.output_shape().iter().product();
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    PoolWindowsLaunch::new(
        in_len,
        out_len,
        in_plane,
        out_plane,
        in_plane,
        out_plane,
        sequence(|axis| axis.input),
        sequence(|axis| axis.outputs),
        divisors(|axis| axis.input),
        divisors(|axis| axis.outputs),
        sequence(|axis| axis.kernel),
        sequence(|axis| axis.stride),
        sequence(|axis| axis.dilation),
        divisors(|axis| axis.stride),
        divisors(|axis| axis.dilation),
        sequence(|axis| axis.padding_begin),
    )
}

/// The pooled values (of any float or integer dtype) and their indices.
pub(super) fn max_pool(x: CubeTensor, plan: &PoolPlan) -> (CubeTensor, CubeTensor) {
    plan.assert_input("max_pool_with_indices", &x.shape());
    assert_addressed("max_pool_with_indices", plan);
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
    // Vectors of windows never cross a pooled row, and suit both outputs' element sizes.
    let row = plan.output_shape()[plan.output_shape().len() - 1];
    let width = vector_size(&values, row).min(vector_size(&indices, row));
    let (cube_dim, count) = launch_grid(&values, units / width);
    record_launch(width);
    // SAFETY: `assert_addressed` proved the pool has at most three axes (the kernel's) and every
    // position is below 2^31 (so every `FastDivmod` is exact); `assert_input` that `x` has the
    // plan's shape. One unit per vector of `width` pooled elements (`width` divides the pooled
    // rows, so `units / width` units cover them), units past them stop at once; every window has
    // at least one input element (the plan's check), and every position read lies inside its
    // plane of `x`.
    unsafe {
        max_pool_windows::launch_unchecked(
            &values.client,
            count,
            cube_dim,
            width,
            x.into_tensor_arg(),
            values.clone().into_tensor_arg(),
            indices.clone().into_tensor_arg(),
            windows(plan),
            floats,
            dtypes,
        );
    }
    (values, indices)
}

/// The gradient of `x` for the pooled values' gradient `grad`.
pub(super) fn max_pool_backward(
    grad: CubeTensor,
    indices: CubeTensor,
    plan: &PoolPlan,
) -> CubeTensor {
    let shape = plan.checked_pool_input_shape(&grad.shape(), &indices.shape());
    assert_addressed("max_pool_with_indices_backward", plan);
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
    // SAFETY: `assert_addressed` proved the pool has at most three axes (the kernel's) and every
    // position is below 2^31 (so every `FastDivmod` is exact); `checked_pool_input_shape` that
    // `grad` and `indices` have the pooled shape. One unit per vector of `width` elements of `x`
    // (`width` divides its rows, so `units / width` units cover them), units past them stop at
    // once; the windows a unit reads are clamped to the pooled plane, which holds `out_plane`
    // elements.
    unsafe {
        max_pool_gradient::launch_unchecked(
            &dx.client,
            count,
            cube_dim,
            width,
            grad.into_tensor_arg(),
            indices.into_tensor_arg(),
            dx.clone().into_tensor_arg(),
            windows(plan),
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
    use crate::pool::{PoolPlan, PoolSpec};

    fn plan<const D: usize>(shape: &[usize]) -> PoolPlan {
        let spec = PoolSpec::from_pool(&MaxPoolOptions::new([2; D]));
        PoolPlan::new(shape, &spec, DType::I32).expect("a valid pool")
    }

    #[test]
    fn the_kernels_take_one_to_three_axes_only() {
        assert!(addresses(&plan::<1>(&[1, 1, 4])));
        assert!(addresses(&plan::<3>(&[1, 1, 4, 4, 4])));
        // The kernels address three axes: a fourth would be read as if it were not there.
        assert!(!addresses(&plan::<4>(&[1, 2, 4, 4, 4, 4])));
        assert!(!addresses(&plan::<6>(&[1, 1, 2, 2, 2, 2, 2, 2])));
    }

    /// Every dividend stays below 2^31, where `FastDivmod` is exact: a plane of 2^31 elements
    /// goes to the composition.
    #[test]
    fn the_kernels_divide_positions_below_two_to_the_31() {
        assert!(addresses(&plan::<2>(&[1, 1, 1 << 15, (1 << 16) - 2])));
        assert!(!addresses(&plan::<2>(&[1, 1, 1 << 15, 1 << 16])));
        assert!(!addresses(&plan::<1>(&[2, 1, 1 << 30])));
    }

    /// The kernels write indices inside each plane: a plan asking for global ones (ONNX's, which
    /// the CPU kernels write) would come back without its plane offsets.
    #[test]
    fn the_kernels_refuse_global_indices() {
        let spec = PoolSpec::from_pool(&MaxPoolOptions::new([2, 2]));
        let plan = PoolPlan::new(&[2, 3, 4, 4], &spec, DType::I64).expect("a valid pool");
        assert!(addresses(&plan));
        assert!(!addresses(&plan.with_global_indices()));
    }

    /// The backend op itself, called with a 4-axis pool on a CubeCL device, refuses it before
    /// launch instead of addressing memory from three of its axes.
    #[test]
    #[should_panic(expected = "the GPU kernels take pools of 1 to 3 spatial axes")]
    fn a_pool_of_four_axes_is_refused_before_launch() {
        use burn::backend::Dispatch;
        use burn::tensor::{Device, DeviceKind, Tensor};

        use crate::UnpoolBackend;

        let shape = [1, 2, 4, 4, 4, 4];
        let x = Tensor::<6>::zeros(shape, &Device::wgpu(DeviceKind::DefaultDevice));
        let (values, _) = <Dispatch as UnpoolBackend>::max_pool_with_indices(
            x.into_dispatch(),
            plan::<4>(&shape),
        );
        // A fused device runs the op when its result is read.
        Tensor::<6>::from_dispatch(values).into_data();
    }
}
