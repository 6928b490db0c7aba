//! The CPU kernels on host memory: the one place where their element types come from `DType`s.

use std::borrow::Cow;

use burn::tensor::{DType, TensorData, bf16, f16};
use bytemuck::Pod;

use super::max_pool::{max_pool, max_pool_backward};
use crate::error::{UnpoolError, or_panic};
use crate::plan::checks::value_width;
use crate::plan::{Direction, PoolPlan, UnpoolPlan};

/// A contiguous, row-major tensor in host memory: its bytes and its dtype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostTensor<'a> {
    pub bytes: &'a [u8],
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

/// Binds `$E` to an unsigned type of `$values`' width and `$I` to `$indices`' type for `$body`:
/// values are copied bit for bit and zeros are zero bits, so one kernel per width serves all.
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

/// Binds `$T` to the pool's value type (its own: pools compare values), `$I` to its index type.
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

#[track_caller]
fn unsupported(values: HostTensor<'_>, indices: HostTensor<'_>) -> ! {
    panic!(
        "max_unpool: unsupported element types: values {:?} (a float or integer dtype) with \
         indices {:?} (an integer dtype)",
        values.dtype, indices.dtype
    )
}

/// The forward (`input` is `x`) or backward (`input` is the output gradient) of `plan`.
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
