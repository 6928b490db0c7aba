//! The unpooling as a composition: landings computed on the device, each position's winner (its
//! last writer in row-major order of `x`) by a max over its writers, values moved by one assign or
//! one select; the gradient is a gather, so an upstream `-0.0` keeps its sign.

use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{DType, IndexingUpdateOp, IntDType, Scalar, Shape};

use super::{
    Floats, INDEX_MAY_SHARE_TARGET, Ints, Values, bool_dtype, plane_starts, position_dtype,
};
use crate::plan::{Direction, UnpoolPlan};

/// [`UnpoolBackend::max_unpool`](crate::UnpoolBackend::max_unpool) on any backend.
pub fn max_unpool<B: Backend>(
    x: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: UnpoolPlan,
) -> FloatTensor<B> {
    run::<B, Floats>(Direction::Forward, x, indices, &plan)
}

/// [`UnpoolBackend::max_unpool_int`](crate::UnpoolBackend::max_unpool_int) on any backend.
pub fn max_unpool_int<B: Backend>(
    x: IntTensor<B>,
    indices: IntTensor<B>,
    plan: UnpoolPlan,
) -> IntTensor<B> {
    run::<B, Ints>(Direction::Forward, x, indices, &plan)
}

/// The [`max_unpool_backward`](crate::UnpoolBackend::max_unpool_backward) op on any backend.
pub fn max_unpool_backward<B: Backend>(
    grad: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: UnpoolPlan,
) -> FloatTensor<B> {
    run::<B, Floats>(Direction::Backward, grad, indices, &plan)
}

/// [`UnpoolBackend::max_unpool_index_check`](crate::UnpoolBackend::max_unpool_index_check) on
/// any backend: bit 1 is always set (it does not look at the cells).
pub fn max_unpool_index_check<B: Backend>(indices: IntTensor<B>, plan: UnpoolPlan) -> IntTensor<B> {
    plan.checked_flag_shape(&indices.shape());
    let flat = B::int_reshape(indices, Shape::new([plan.input_len()]));
    let invalid = B::bool_any(B::bool_not(valid::<B>(flat, &plan)));
    let word = B::bool_into_int(invalid, IntDType::U32);
    B::int_add_scalar(word, Scalar::UInt(INDEX_MAY_SHARE_TARGET.into()))
}

/// The forward (`input` is `x`) or the backward (`input` is the output gradient) of `plan`.
fn run<B: Backend, V: Values<B>>(
    direction: Direction,
    input: V::Tensor,
    indices: IntTensor<B>,
    plan: &UnpoolPlan,
) -> V::Tensor {
    let shape = plan.checked_result_shape(direction, &input.shape(), &indices.shape());
    let (device, dtype) = (input.device(), input.dtype());
    let (in_len, out_len) = (plan.input_len(), plan.output_len());
    if in_len == 0 || out_len == 0 {
        return V::plus_sum_of(V::zeros(shape, &device, dtype), input);
    }
    let targets = targets::<B>(indices, plan);
    let len = input.shape().num_elements();
    let input = V::reshape(input, Shape::new([len]));
    let output = match direction {
        // The winners' targets are unique, and every other element writes one past the end.
        Direction::Forward => {
            let zeros = V::zeros(Shape::new([out_len + 1]), &device, dtype);
            V::slice(V::assign(zeros, targets, input), out_len)
        }
        // Every winner reads its target; the others read a zero appended past the end.
        Direction::Backward => {
            let zero = V::zeros(Shape::new([1]), &device, dtype);
            V::select(V::cat(vec![input, zero]), 0, targets)
        }
    };
    V::reshape(output, shape)
}

/// Where each index is in its valid range, compared in its own dtype (so none wraps).
fn valid<B: Backend>(indices: IntTensor<B>, plan: &UnpoolPlan) -> BoolTensor<B> {
    let (dtype, bools) = (indices.dtype(), bool_dtype::<B>(&indices.device()));
    let non_negative = B::int_greater_equal_elem(indices.clone(), Scalar::new(0, &dtype), bools);
    let below = match plan.index_range_end().checked_sub(1) {
        Some(last) => B::int_lower_equal_elem(indices, Scalar::new(last as u64, &dtype), bools),
        None => B::int_lower_elem(indices, Scalar::new(0, &dtype), bools),
    };
    B::bool_and(non_negative, below)
}

/// Each element's target in the output where its write survives, else `out_len` (one past it).
fn targets<B: Backend>(indices: IntTensor<B>, plan: &UnpoolPlan) -> IntTensor<B> {
    let device = indices.device();
    let (in_len, out_len) = (plan.input_len(), plan.output_len());
    let dtype = position_dtype(in_len.max(out_len) + 1);
    let nowhere = int(out_len, dtype);
    let flat = B::int_reshape(indices, Shape::new([in_len]));
    let outside = B::bool_not(valid::<B>(flat.clone(), plan));
    let landing = landing::<B>(B::int_cast(flat, dtype), plan, dtype);
    let landing = B::int_mask_fill(landing, outside, nowhere);
    // Each position's winner: the largest `p + 1` of the elements `p` landing there.
    let writers = B::int_arange(1..in_len as i64 + 1, &device, dtype);
    let zeros = B::int_zeros(Shape::new([out_len + 1]), &device, dtype);
    let winners = B::int_select_assign(
        zeros,
        0,
        landing.clone(),
        writers.clone(),
        IndexingUpdateOp::Max,
    );
    let won = B::int_equal(
        B::int_select(winners, 0, landing.clone()),
        writers,
        bool_dtype::<B>(&device),
    );
    B::int_mask_fill(landing, B::bool_not(won), nowhere)
}

/// Where each in-range index value lands in the whole output, at its index-plane coordinates.
fn landing<B: Backend>(value: IntTensor<B>, plan: &UnpoolPlan, dtype: IntDType) -> IntTensor<B> {
    let device = value.device();
    let (planes, in_plane, out_plane) = (
        plan.planes(),
        plan.input_plane_len(),
        plan.output_plane_len(),
    );
    let index_plane_len = plan.index_plane_len();
    let global = plan.layout() == crate::IndexLayout::Global;
    let (plane_start, within) = match global {
        true => {
            let plane = B::int_div_scalar(value.clone(), int(index_plane_len, dtype));
            let within = B::int_remainder_scalar(value, int(index_plane_len, dtype));
            (
                Some(B::int_mul_scalar(plane, int(out_plane, dtype))),
                within,
            )
        }
        false => (None, value),
    };
    let within = match plan.indices_address_output_plane() {
        true => within,
        false => {
            let (index_plane, output) = (plan.index_plane(), &plan.output_shape()[2..]);
            let mut offset = B::int_mul_scalar(within.clone(), int(0, dtype));
            let (mut inner, mut out_stride) = (1, 1);
            for axis in (0..index_plane.len()).rev() {
                let coordinate = B::int_div_scalar(within.clone(), int(inner, dtype));
                let coordinate = B::int_remainder_scalar(coordinate, int(index_plane[axis], dtype));
                let term = B::int_mul_scalar(coordinate, int(out_stride, dtype));
                offset = B::int_add(offset, term);
                inner *= index_plane[axis];
                out_stride *= output[axis];
            }
            offset
        }
    };
    match plane_start {
        Some(start) => B::int_add(start, within),
        None => {
            let within = B::int_reshape(within, Shape::new([planes, in_plane]));
            let starts = plane_starts::<B>(planes, out_plane, &device, dtype);
            B::int_reshape(B::int_add(within, starts), Shape::new([planes * in_plane]))
        }
    }
}

fn int(value: usize, dtype: IntDType) -> Scalar {
    Scalar::new(value as i64, &DType::from(dtype))
}
