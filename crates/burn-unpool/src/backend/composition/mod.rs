//! The default bodies of [`UnpoolBackend`](crate::UnpoolBackend): Burn's tensor ops composed, for
//! any backend, and the fallback for plans a backend's kernels do not address. No host reads, no
//! float atomics: every result, gradients included, has the kernels' bits, on every run.

mod max_pool;
mod max_unpool;

use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata, get_or_init_device_settings};
use burn::tensor::{BoolDType, DType, IndexingUpdateOp, IntDType, Shape, Slice};

use crate::plan::PoolPlan;

pub use max_pool::{
    max_pool_with_indices, max_pool_with_indices_backward, max_pool_with_indices_int,
};
pub use max_unpool::{max_unpool, max_unpool_backward, max_unpool_index_check, max_unpool_int};

/// Bit of the index check's word: some index is outside its valid range.
pub const INDEX_OUT_OF_RANGE: u32 = 1;

/// Bit of the index check's word: some index may share its target.
pub const INDEX_MAY_SHARE_TARGET: u32 = 2;

/// The primitive ops the compositions need of one kind of values, float or integer.
trait Values<B: Backend> {
    type Tensor: TensorMetadata<Device = B::Device>;
    fn reshape(tensor: Self::Tensor, shape: Shape) -> Self::Tensor;
    fn zeros(shape: Shape, device: &B::Device, dtype: DType) -> Self::Tensor;
    fn select(tensor: Self::Tensor, dim: usize, indices: IntTensor<B>) -> Self::Tensor;
    fn assign(tensor: Self::Tensor, indices: IntTensor<B>, values: Self::Tensor) -> Self::Tensor;
    fn gather(dim: usize, tensor: Self::Tensor, indices: IntTensor<B>) -> Self::Tensor;
    fn slice(tensor: Self::Tensor, len: usize) -> Self::Tensor;
    fn cat(tensors: Vec<Self::Tensor>) -> Self::Tensor;
    fn max_dim(tensor: Self::Tensor, dim: usize) -> Self::Tensor;
    fn equal(lhs: Self::Tensor, rhs: Self::Tensor, dtype: BoolDType) -> BoolTensor<B>;
    /// Where the values are NaN, for the kinds that have NaNs.
    fn nan(tensor: Self::Tensor, dtype: BoolDType) -> Option<BoolTensor<B>>;
    /// `tensor` plus the broadcast sum of `other`: an empty result that keeps its input's gradient.
    fn plus_sum_of(tensor: Self::Tensor, other: Self::Tensor) -> Self::Tensor;
}

struct Floats;
struct Ints;

/// Implements [`Values`] for `$kind` with Burn's ops of its prefix, and the kind's own `$extra`.
macro_rules! values {
    ($kind:ident, $tensor:ident, [$reshape:ident, $zeros:ident, $select:ident, $assign:ident,
     $gather:ident, $slice:ident, $cat:ident, $max_dim:ident, $equal:ident], $($extra:item)*) => {
        impl<B: Backend> Values<B> for $kind {
            type Tensor = $tensor<B>;
            fn reshape(tensor: Self::Tensor, shape: Shape) -> Self::Tensor {
                B::$reshape(tensor, shape)
            }
            fn zeros(shape: Shape, device: &B::Device, dtype: DType) -> Self::Tensor {
                B::$zeros(shape, device, dtype.into())
            }
            fn select(tensor: Self::Tensor, dim: usize, indices: IntTensor<B>) -> Self::Tensor {
                B::$select(tensor, dim, indices)
            }
            fn assign(tensor: Self::Tensor, indices: IntTensor<B>, values: Self::Tensor) -> Self::Tensor {
                B::$assign(tensor, 0, indices, values, IndexingUpdateOp::Assign)
            }
            fn gather(dim: usize, tensor: Self::Tensor, indices: IntTensor<B>) -> Self::Tensor {
                B::$gather(dim, tensor, indices)
            }
            fn slice(tensor: Self::Tensor, len: usize) -> Self::Tensor {
                B::$slice(tensor, &[Slice::new(0, Some(len as isize), 1)])
            }
            fn cat(tensors: Vec<Self::Tensor>) -> Self::Tensor {
                B::$cat(tensors, 0)
            }
            fn max_dim(tensor: Self::Tensor, dim: usize) -> Self::Tensor {
                B::$max_dim(tensor, dim)
            }
            fn equal(lhs: Self::Tensor, rhs: Self::Tensor, dtype: BoolDType) -> BoolTensor<B> {
                B::$equal(lhs, rhs, dtype)
            }
            $($extra)*
        }
    };
}

values! {
    Floats, FloatTensor,
    [float_reshape, float_zeros, float_select, float_select_assign, float_gather, float_slice,
     float_cat, float_max_dim, float_equal],
    fn nan(tensor: Self::Tensor, dtype: BoolDType) -> Option<BoolTensor<B>> {
        Some(B::float_is_nan(tensor, dtype))
    }
    fn plus_sum_of(tensor: Self::Tensor, other: Self::Tensor) -> Self::Tensor {
        let rank = tensor.shape().num_dims();
        let sum = B::float_reshape(B::float_sum(other), Shape::from(vec![1; rank]));
        B::float_add(tensor, sum)
    }
}

values! {
    Ints, IntTensor,
    [int_reshape, int_zeros, int_select, int_select_assign, int_gather, int_slice, int_cat,
     int_max_dim, int_equal],
    fn nan(_tensor: Self::Tensor, _dtype: BoolDType) -> Option<BoolTensor<B>> {
        None
    }
    fn plus_sum_of(tensor: Self::Tensor, _other: Self::Tensor) -> Self::Tensor {
        tensor
    }
}

fn bool_dtype<B: Backend>(device: &B::Device) -> BoolDType {
    get_or_init_device_settings::<B>(device).bool_dtype
}

/// The int dtype that holds every position up to `len`: I32 where it can, else I64.
fn position_dtype(len: usize) -> IntDType {
    match len < i32::MAX as usize {
        true => IntDType::I32,
        false => IntDType::I64,
    }
}

/// Each plane's first position, `[0, step, 2 * step, ..)`, shaped `[planes, 1]`.
fn plane_starts<B: Backend>(
    planes: usize,
    step: usize,
    device: &B::Device,
    dtype: IntDType,
) -> IntTensor<B> {
    let shape = Shape::new([planes, 1]);
    if step == 0 {
        return B::int_zeros(shape, device, dtype);
    }
    let starts = B::int_arange_step(0..(planes * step) as i64, step, device, dtype);
    B::int_reshape(starts, shape)
}

/// A pool's per-plane indices made global by adding their planes' offsets (`subtract`: undone).
pub(crate) fn shift_by_planes<B: Backend>(
    indices: IntTensor<B>,
    plan: &PoolPlan,
    subtract: bool,
) -> IntTensor<B> {
    let (shape, device) = (indices.shape(), indices.device());
    let dtype = IntDType::from(indices.dtype());
    let (planes, out_plane) = (plan.planes(), plan.output_plane_len());
    let flat = B::int_reshape(indices, Shape::new([planes, out_plane]));
    let starts = plane_starts::<B>(planes, plan.input_plane_len(), &device, dtype);
    let shifted = match subtract {
        true => B::int_sub(flat, starts),
        false => B::int_add(flat, starts),
    };
    B::int_reshape(shifted, shape)
}
