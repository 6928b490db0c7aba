//! The CPU kernels on host memory of any supported dtype: the one place where the kernels' element
//! types are chosen from `DType`s. Backends only say where their bytes are.

use std::borrow::Cow;

use burn::tensor::{DType, TensorData, bf16, f16};
use bytemuck::Pod;

use super::pool::{max_pool, max_pool_backward};
use crate::UnpoolPlan;
use crate::checks::value_width;
use crate::error::{UnpoolError, or_panic};
use crate::plan::Direction;
use crate::pool::PoolPlan;

/// A contiguous, row-major tensor in host memory: its bytes and its dtype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostTensor<'a> {
    /// The elements' bytes, in row-major order.
    pub bytes: &'a [u8],
    /// The elements' dtype.
    pub dtype: DType,
}

impl<'a> HostTensor<'a> {
    /// The elements as `E`, borrowed when the bytes are aligned for it (as tensor storage is).
    pub(crate) fn elements<E: Pod>(self) -> Cow<'a, [E]> {
        match bytemuck::try_cast_slice(self.bytes) {
            Ok(slice) => Cow::Borrowed(slice),
            Err(_) => Cow::Owned(bytemuck::pod_collect_to_vec(self.bytes)),
        }
    }
}

/// Binds `$E` to an unsigned type of the width of `$values`' dtype and `$I` to the index type of
/// `$indices` (both `HostTensor`s) and evaluates `$body`, for every pair the kernels support.
///
/// The kernels copy values bit for bit and fill with zero bits, which is zero in every dtype, so
/// one kernel per width serves every value dtype of that width (f32, i32 and u32 alike).
macro_rules! with_element_types {
    ($values:expr, $indices:expr, |$E:ident, $I:ident| $body:expr) => {{
        macro_rules! index_types {
                        ($value:ty) => {{
                            type $E = $value;
                            match_type!($indices.dtype, $I, $body, unsupported($values, $indices), [
                                I64 => i64, I32 => i32, I16 => i16, I8 => i8,
                                U64 => u64, U32 => u32, U16 => u16, U8 => u8
                            ])
                        }};
                    }
        match value_width($values.dtype) {
            Some(1) => index_types!(u8),
            Some(2) => index_types!(u16),
            Some(4) => index_types!(u32),
            Some(8) => index_types!(u64),
            _ => unsupported($values, $indices),
        }
    }};
}

/// Binds `$T` to the type listed for `$dtype` and evaluates `$body`; `$otherwise` for the rest.
macro_rules! match_type {
    ($dtype:expr, $T:ident, $body:expr, $otherwise:expr, [$($variant:ident => $ty:ty),*]) => {
        match $dtype {
            $(DType::$variant => {
                type $T = $ty;
                $body
            })*
            _ => $otherwise,
        }
    };
}

/// Binds `$T` to the value type of the pool's `$values`, one of those listed, and `$I` to the
/// index type of `$indices` (both dtypes) and evaluates `$body`: the pools compare values, so they
/// take each value type itself, and positions inside a plane, so 32- or 64-bit indices (the plan's
/// rule).
macro_rules! with_pool_types {
    (
        $op:literal, $values:expr, [$($variant:ident => $ty:ty),*], $indices:expr,
        |$T:ident, $I:ident| $body:expr
    ) => {{
        let (values, indices) = ($values, $indices);
        let unsupported = || -> ! {
            panic!(
                "{}: unsupported element types: values {values:?} ({}) with indices {indices:?} \
                 (I32, I64, U32 or U64)",
                $op,
                stringify!($($variant),*)
            )
        };
        match_type!(values, $T, {
            match_type!(indices, $I, $body, unsupported(), [
                I32 => i32, I64 => i64, U32 => u32, U64 => u64
            ])
        }, unsupported(), [$($variant => $ty),*])
    }};
}

/// Binds `$I` to the index type of `$indices` and evaluates `$body`.
macro_rules! with_index_type {
    ($indices:expr, |$I:ident| $body:expr) => {{
        // The value type only selects a match arm; f32 is always supported.
        let values = HostTensor {
            bytes: &[],
            dtype: DType::F32,
        };
        with_element_types!(values, $indices, |_E, $I| $body)
    }};
}

#[track_caller]
fn unsupported(values: HostTensor<'_>, indices: HostTensor<'_>) -> ! {
    panic!(
        "max_unpool: unsupported element types: values {:?} (a float or integer dtype) with \
         indices {:?} (an integer dtype)",
        values.dtype, indices.dtype
    )
}

/// The forward (`input` is `x`) or the backward (`input` is the output gradient) of `plan`, as
/// data of the output shape or of the input shape.
pub(crate) fn run(
    direction: Direction,
    input: HostTensor<'_>,
    indices: HostTensor<'_>,
    plan: &UnpoolPlan,
) -> Result<TensorData, UnpoolError> {
    with_element_types!(input, indices, |E, I| {
        let dtype = input.dtype;
        let (input, indices) = (input.elements::<E>(), indices.elements::<I>());
        let (elements, shape) = match direction {
            Direction::Forward => (
                super::unpool_forward(&input, &indices, plan)?,
                plan.output_shape(),
            ),
            Direction::Backward => (
                super::unpool_backward(&input, &indices, plan)?,
                plan.input_shape(),
            ),
        };
        // The kernels' words, read back as the values' own dtype.
        let (bytes, shape, _) = TensorData::new(elements, shape.to_vec()).into_parts();
        Ok(TensorData::from_bytes(bytes, shape, dtype))
    })
}

/// The error for the first index outside its range, if any.
pub(crate) fn check_index_values(
    indices: HostTensor<'_>,
    plan: &UnpoolPlan,
) -> Result<(), UnpoolError> {
    let first = with_index_type!(indices, |I| super::first_invalid_index::<I>(
        &indices.elements(),
        plan
    ));
    match first {
        Some((element, value)) => Err(plan.index_error(element, value)),
        None => Ok(()),
    }
}

/// The winning writes of the forward (see [`super::winners`]).
pub(crate) fn winners(
    indices: HostTensor<'_>,
    plan: &UnpoolPlan,
) -> Result<Vec<(usize, usize)>, UnpoolError> {
    with_index_type!(indices, |I| super::winners::<I>(&indices.elements(), plan))
}

/// The pool of `x` (float or integer values) on the host: the values and the indices (of
/// `plan.index_dtype()`).
pub(crate) fn run_pool(x: HostTensor<'_>, plan: &PoolPlan) -> (TensorData, TensorData) {
    let shape = plan.output_shape().to_vec();
    with_pool_types!("max_pool", x.dtype, [
        F32 => f32, F64 => f64, F16 => f16, BF16 => bf16,
        I64 => i64, I32 => i32, I16 => i16, I8 => i8, U64 => u64, U32 => u32, U16 => u16, U8 => u8
    ], plan.index_dtype(), |T, I| {
        let (values, indices) = or_panic(max_pool::<T, I>(&x.elements::<T>(), plan));
        (
            TensorData::new(values, shape.clone()),
            TensorData::new(indices, shape),
        )
    })
}

/// The gradient of the pool's `x` on the host, for the pooled tensor's gradient `grad`.
pub(crate) fn run_pool_backward(
    grad: HostTensor<'_>,
    indices: HostTensor<'_>,
    plan: &PoolPlan,
) -> TensorData {
    with_pool_types!("max_pool_backward", grad.dtype, [
        F32 => f32, F64 => f64, F16 => f16, BF16 => bf16
    ], indices.dtype, |T, I| {
        let dx = or_panic(max_pool_backward::<T, I>(
            &grad.elements::<T>(),
            &indices.elements::<I>(),
            plan,
        ));
        TensorData::new(dx, plan.input_shape().to_vec())
    })
}
