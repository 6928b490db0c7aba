//! The CPU kernels on host memory of any supported dtype: the one place where the kernels' element
//! types are chosen from `DType`s. Backends only say where their bytes are.

use std::borrow::Cow;

use burn::tensor::{DType, TensorData, bf16, f16};
use bytemuck::Pod;

use crate::UnpoolPlan;
use crate::error::UnpoolError;
use crate::plan::Direction;

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
    fn elements<E: Pod>(self) -> Cow<'a, [E]> {
        match bytemuck::try_cast_slice(self.bytes) {
            Ok(slice) => Cow::Borrowed(slice),
            Err(_) => Cow::Owned(bytemuck::pod_collect_to_vec(self.bytes)),
        }
    }
}

/// Binds `$E` to the value type of `$values` and `$I` to the index type of `$indices` (both
/// `HostTensor`s) and evaluates `$body`, for every pair the kernels support.
macro_rules! with_element_types {
    ($values:expr, $indices:expr, |$E:ident, $I:ident| $body:expr) => {{
        macro_rules! index_types {
            ($value:ty) => {{
                type $E = $value;
                match $indices.dtype {
                    DType::I32 => {
                        type $I = i32;
                        $body
                    }
                    DType::I64 => {
                        type $I = i64;
                        $body
                    }
                    _ => unsupported($values, $indices),
                }
            }};
        }
        match $values.dtype {
            DType::F32 => index_types!(f32),
            DType::F64 => index_types!(f64),
            DType::F16 => index_types!(f16),
            DType::BF16 => index_types!(bf16),
            _ => unsupported($values, $indices),
        }
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
        "max_unpool: unsupported element types: values {:?} (f32, f64, f16 or bf16) with indices \
         {:?} (i32 or i64)",
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
        let (input, indices) = (input.elements::<E>(), indices.elements::<I>());
        Ok(match direction {
            Direction::Forward => TensorData::new(
                super::unpool_forward(&input, &indices, plan)?,
                plan.output_shape().to_vec(),
            ),
            Direction::Backward => TensorData::new(
                super::unpool_backward(&input, &indices, plan)?,
                plan.input_shape().to_vec(),
            ),
        })
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
