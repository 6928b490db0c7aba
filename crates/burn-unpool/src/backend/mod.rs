//! The backend op: one extension trait, implemented per backend family.
//!
//! Flex and NdArray run the CPU kernels of [`crate::kernel`]; the GPU devices (feature `wgpu`: Cube,
//! fused or not) run CubeCL kernels; autodiff wraps any implementation with the exact (winner-only)
//! backward. Other backends get the composed default body: correct, duplicates included, slower.

// NdArray is deprecated in Burn 0.22 but still shipped, and supported here.
#![allow(deprecated)]

mod autodiff;
mod composed;
#[cfg(feature = "wgpu")]
mod cube;
mod flex;
mod ndarray;

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, backend_extension};
#[cfg(feature = "wgpu")]
use burn::tensor::{DType, Shape};

use crate::UnpoolPlan;

/// Backends that can unpool.
///
/// Implementations receive a checked [`UnpoolPlan`]; they check only the index values (which they
/// read anyway) and report a bad one with [`crate::checks::index_error`]'s message. Users call the
/// functions of the crate root; the trait is for backends and for calls with a ready plan:
///
/// ```
/// use burn::backend::Dispatch;
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, UnpoolBackend, checks};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::from_floats([[[1.0, 2.0]]], &device);
/// let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
/// let plan = checks::plan(&x.dims(), &indices.dims(), &MaxUnpoolOptions::new([2])).unwrap();
/// let y = Tensor::<3>::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool(
///     x.into_dispatch(),
///     indices.into_dispatch(),
///     plan,
/// ));
/// assert_eq!(y.dims(), [1, 1, 4]);
/// ```
#[backend_extension(
    Flex,
    NdArray,
    Autodiff,
    Cube: cfg(feature = "wgpu"),
    Fusion: cfg(feature = "wgpu")
)]
pub trait UnpoolBackend: Backend {
    /// Writes every value of `x` into a zero-filled output of shape `plan.output_shape` at the
    /// position its index gives; with duplicate indices the last in row-major order of `x` wins.
    #[fusion(dtype = x, shape = Shape::from(plan.output_shape.clone()))]
    fn max_unpool(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        composed::max_unpool::<Self>(x, indices, &plan)
    }

    /// The gradient of `x` for the output gradient `grad`: `grad[indices[p]]` where element `p`
    /// won the write at `indices[p]`, zero elsewhere. It is also the adjoint of [`max_unpool`].
    ///
    /// [`max_unpool`]: UnpoolBackend::max_unpool
    #[fusion(dtype = grad, shape = Shape::from(plan.input_shape.clone()))]
    fn max_unpool_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        composed::max_unpool_backward::<Self>(grad, indices, &plan)
    }

    /// A `[1]` tensor of dtype `U32`: 1 when some index is outside its valid range, else 0.
    ///
    /// For backends whose kernels skip invalid indices instead of reporting them: the checked
    /// public functions read this one word before running the op.
    #[fusion(dtype = DType::U32, shape = Shape::new([1]))]
    fn max_unpool_invalid_index_flag(
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self> {
        composed::invalid_index_flag::<Self>(indices, &plan)
    }
}

/// Calls `$body` with `$E` bound to the float element type of `$float` and `$I` to the index type
/// of `$int` (`DType`s), for every pair the CPU kernels support.
macro_rules! with_element_types {
    ($float:expr, $int:expr, |$E:ident, $I:ident| $body:expr) => {{
        use burn::tensor::{DType, bf16, f16};
        match ($float, $int) {
            (DType::F32, DType::I32) => { type $E = f32; type $I = i32; $body }
            (DType::F32, DType::I64) => { type $E = f32; type $I = i64; $body }
            (DType::F64, DType::I32) => { type $E = f64; type $I = i32; $body }
            (DType::F64, DType::I64) => { type $E = f64; type $I = i64; $body }
            (DType::F16, DType::I32) => { type $E = f16; type $I = i32; $body }
            (DType::F16, DType::I64) => { type $E = f16; type $I = i64; $body }
            (DType::BF16, DType::I32) => { type $E = bf16; type $I = i32; $body }
            (DType::BF16, DType::I64) => { type $E = bf16; type $I = i64; $body }
            (float, int) => panic!(
                "max_unpool: unsupported element types: values {float:?} (f32, f64, f16 or bf16) with indices {int:?} (i32 or i64)"
            ),
        }
    }};
}
pub(crate) use with_element_types;
