//! The max pool as a composition, any rank: windows gathered from a table of positions built on
//! the host from the shapes, the first maximum (or last NaN) picked by weights as the kernels pick
//! it; the gradient adds each window's at its index in window order, with no float atomics.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{DType, IndexingUpdateOp, IntDType, Scalar, Shape, TensorData};

use super::{Floats, Ints, Values, bool_dtype, shift_by_planes};
use crate::error::{UnpoolError, or_panic};
use crate::plan::PoolPlan;

/// The [`max_pool_with_indices`](crate::UnpoolBackend::max_pool_with_indices) op on any backend.
pub fn max_pool_with_indices<B: Backend>(
    x: FloatTensor<B>,
    plan: PoolPlan,
) -> (FloatTensor<B>, IntTensor<B>) {
    pool::<B, Floats>(x, &plan)
}

/// [`UnpoolBackend::max_pool_with_indices_int`](crate::UnpoolBackend::max_pool_with_indices_int)
/// on any backend.
pub fn max_pool_with_indices_int<B: Backend>(
    x: IntTensor<B>,
    plan: PoolPlan,
) -> (IntTensor<B>, IntTensor<B>) {
    pool::<B, Ints>(x, &plan)
}

/// [`UnpoolBackend::max_pool_with_indices_backward`](crate::UnpoolBackend::max_pool_with_indices_backward)
/// on any backend.
pub fn max_pool_with_indices_backward<B: Backend>(
    grad: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: PoolPlan,
) -> FloatTensor<B> {
    let shape = plan.checked_pool_input_shape(&grad.shape(), &indices.shape());
    let (device, dtype) = (grad.device(), grad.dtype());
    let (planes, out_plane) = (plan.planes(), plan.output_plane_len());
    let in_len = shape.num_elements();
    let dx = B::float_zeros(Shape::new([in_len]), &device, dtype.into());
    if in_len == 0 || out_plane == 0 {
        return B::float_reshape(dx, shape);
    }
    let indices = match plan.global_indices() {
        true => indices,
        false => shift_by_planes::<B>(indices, &plan, false),
    };
    let indices = B::int_reshape(indices, Shape::new([planes * out_plane]));
    let grad = B::float_reshape(grad, Shape::new([planes * out_plane]));
    let dx = B::float_select_assign(dx, 0, indices, grad, IndexingUpdateOp::Add);
    B::float_reshape(dx, shape)
}

/// Every window of a pool over one plane, row-major over `(output cell, kernel offset)`.
struct Windows {
    /// Positions per window: the kernel's volume.
    window: usize,
    /// The position each offset reads; one in the padding reads the window's first position in the
    /// input, which cannot change its maximum (integers have no `-inf`).
    sources: Vec<i64>,
    /// `window - offset` inside the input, 0 in the padding: the largest among maxima is the first.
    first: Vec<i64>,
    /// `offset + 1` inside the input, 0 in the padding: the largest among NaNs is the last.
    last: Vec<i64>,
}

impl Windows {
    fn new(plan: &PoolPlan) -> Result<Self, UnpoolError> {
        let (dims, kernel) = (plan.dims(), &plan.geometry().kernel_size);
        let output = &plan.output_shape()[2..];
        let len = output
            .iter()
            .chain(kernel)
            .try_fold(1usize, |len, &n| len.checked_mul(n))
            .filter(|&len| len <= isize::MAX as usize / 32)
            .ok_or_else(|| UnpoolError::TooManyWindows {
                output: output.to_vec(),
                kernel: kernel.clone(),
            })?;
        let (cells, window): (usize, usize) = (output.iter().product(), kernel.iter().product());
        let input = &plan.input_shape()[2..];
        let mut strides = vec![1; dims];
        for axis in (0..dims.saturating_sub(1)).rev() {
            strides[axis] = strides[axis + 1] * input[axis + 1];
        }
        let mut windows = Self {
            window,
            sources: Vec::with_capacity(len),
            first: Vec::with_capacity(len),
            last: Vec::with_capacity(len),
        };
        let mut cell = vec![0; dims];
        for _ in 0..cells {
            let mut offset = vec![0; dims];
            for k in 0..window {
                let (mut source, mut inside) = (0, true);
                for axis in 0..dims {
                    let coordinate = plan.coordinate(axis, cell[axis], offset[axis]);
                    inside &= coordinate.is_some();
                    let position = coordinate.unwrap_or(plan.taps(axis, cell[axis]).0);
                    source += position * strides[axis];
                }
                windows.sources.push(source as i64);
                windows
                    .first
                    .push(if inside { (window - k) as i64 } else { 0 });
                windows.last.push(if inside { k as i64 + 1 } else { 0 });
                advance(&mut offset, kernel);
            }
            advance(&mut cell, output);
        }
        Ok(windows)
    }
}

/// Steps a row-major multi-index within `bounds`, wrapping to zero after the last.
fn advance(index: &mut [usize], bounds: &[usize]) {
    for axis in (0..index.len()).rev() {
        index[axis] += 1;
        if index[axis] < bounds[axis] {
            return;
        }
        index[axis] = 0;
    }
}

/// The maxima of `x` and their indices, ints in the plan's index dtype (it holds every position).
fn pool<B: Backend, V: Values<B>>(x: V::Tensor, plan: &PoolPlan) -> (V::Tensor, IntTensor<B>) {
    plan.assert_input("max_pool_with_indices", &x.shape());
    let (device, dtype) = (x.device(), x.dtype());
    let index_dtype = IntDType::from(plan.index_dtype());
    let out_shape = Shape::from(plan.output_shape());
    let (planes, plane_len) = (plan.planes(), plan.input_plane_len());
    if planes == 0 || plane_len == 0 {
        let indices = B::int_zeros(out_shape.clone(), &device, index_dtype);
        // A reshape of the empty input keeps the result on the autodiff graph.
        let values = match out_shape.num_elements() {
            0 => V::reshape(x, out_shape),
            _ => V::zeros(out_shape, &device, dtype),
        };
        return (values, indices);
    }
    let windows = or_panic(Windows::new(plan));
    let (cells, window) = (plan.output_plane_len(), windows.window);
    let len = cells * window;
    let table = |values: Vec<i64>| {
        let data = TensorData::new(values, [len]).convert_dtype(DType::from(index_dtype));
        B::int_from_data(data, &device)
    };
    let weights = |values| B::int_reshape(table(values), Shape::new([1, cells, window]));
    let int = |value: usize| Scalar::new(value as i64, &DType::from(index_dtype));
    let bools = bool_dtype::<B>(&device);

    let flat = V::reshape(x, Shape::new([planes, plane_len]));
    let sources = table(windows.sources);
    let gathered = V::reshape(
        V::select(flat, 1, sources.clone()),
        Shape::new([planes, cells, window]),
    );
    let maxima = V::max_dim(gathered.clone(), 2);
    let candidates = B::bool_into_int(V::equal(gathered.clone(), maxima, bools), index_dtype);
    let best_first = B::int_max_dim(B::int_mul(candidates, weights(windows.first)), 2);
    let window_len = B::int_zeros(Shape::new([planes, cells, 1]), &device, index_dtype);
    let mut chosen = B::int_sub(B::int_add_scalar(window_len, int(window)), best_first);
    if let Some(nans) = V::nan(gathered.clone(), bools) {
        let nans = B::bool_into_int(nans, index_dtype);
        let last_nan = B::int_max_dim(B::int_mul(nans, weights(windows.last)), 2);
        let any_nan = B::int_greater_elem(last_nan.clone(), int(0), bools);
        let last = B::int_sub_scalar(B::int_clamp_min(last_nan, int(1)), int(1));
        chosen = B::int_mask_where(chosen, any_nan, last);
    }
    let cell_start = B::int_reshape(
        B::int_arange_step(0..len as i64, window, &device, index_dtype),
        Shape::new([1, cells, 1]),
    );
    let entry = B::int_reshape(
        B::int_add(chosen.clone(), cell_start),
        Shape::new([planes * cells]),
    );
    let positions = B::int_reshape(
        B::int_select(sources, 0, entry),
        Shape::new([planes, cells]),
    );
    let positions = B::int_reshape(positions, out_shape.clone());
    let positions = match plan.global_indices() {
        true => shift_by_planes::<B>(positions, plan, false),
        false => positions,
    };
    // Values gathered from the windows, not read from `x`: the gradient sums into `x` via the select.
    let values = V::gather(2, gathered, chosen);
    (V::reshape(values, out_shape), positions)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::geometry::PoolGeometry;

    /// The checked plan of a pool over one plane (`N = C = 1`) of spatial size `input`.
    fn plan(
        input: &[usize],
        kernel: &[usize],
        stride: &[usize],
        padding: &[(usize, usize)],
        ceil: bool,
    ) -> PoolPlan {
        let pool = PoolGeometry {
            kernel_size: kernel.to_vec(),
            stride: stride.to_vec(),
            padding: padding.to_vec(),
            dilation: vec![1; kernel.len()],
            ceil_mode: ceil,
        };
        let shape: Vec<usize> = [1, 1].iter().chain(input).copied().collect();
        PoolPlan::of(&shape, &pool, DType::I64).expect("a valid pool")
    }

    #[test]
    fn a_ceil_mode_window_past_the_end_reads_its_first_position_with_no_weight() {
        // 5 inputs, kernel 2, stride 2, ceil: windows {0, 1}, {2, 3}, {4, pad}.
        let plan = plan(&[5], &[2], &[2], &[(0, 0)], true);
        let w = Windows::new(&plan).unwrap();
        assert_eq!(plan.output_shape()[2..], [3]);
        assert_eq!(w.sources, [0, 1, 2, 3, 4, 4]);
        assert_eq!(w.first, [2, 1, 2, 1, 2, 0]);
        assert_eq!(w.last, [1, 2, 1, 2, 1, 0]);
    }

    #[test]
    fn begin_padding_substitutes_the_first_position_inside() {
        // 4 inputs, kernel 3, stride 2, padding 1: windows {pad, 0, 1}, {1, 2, 3}.
        let plan = plan(&[4], &[3], &[2], &[(1, 1)], false);
        let w = Windows::new(&plan).unwrap();
        assert_eq!(w.sources, [0, 0, 1, 1, 2, 3]);
        assert_eq!(w.first, [0, 2, 1, 3, 2, 1]);
    }

    #[test]
    fn a_plane_wide_window_reads_its_positions_in_row_major_order() {
        // A 2 x 3 plane, one 2 x 3 window: row-major sources 0..6 (ONNX's column-major labels are
        // those reordered, `onnx::row_major_to_column_major`).
        let plan = plan(&[2, 3], &[2, 3], &[1, 1], &[(0, 0), (0, 0)], false);
        let w = Windows::new(&plan).unwrap();
        assert_eq!(w.sources, [0, 1, 2, 3, 4, 5]);
    }
}
