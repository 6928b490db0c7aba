//! NdArray: the CPU kernels on NdArray's arrays, borrowing them when they are in standard layout.
//!
//! Burn 0.22 deprecates NdArray in favour of Flex but still ships it; it is supported until Burn
//! removes it.
#![allow(deprecated)]

use burn::backend::ndarray::NdArrayTensor;
use burn::backend::{NdArray, TensorMetadata};
use burn::tensor::TensorData;

use super::UnpoolBackend;
use crate::UnpoolPlan;
use crate::checks::or_panic;
use crate::kernel::{unpool_backward, unpool_forward};

/// Matches the (values, indices) variants NdArray has (f32/f64 with i32/i64) and runs `$kernel`
/// on their row-major slices, wrapping the result in a tensor of shape `$shape`.
macro_rules! run_kernel {
    ($values:expr, $indices:expr, $kernel:ident, $plan:expr, $shape:expr) => {{
        macro_rules! arm {
            ($v:ident, $i:ident) => {{
                let (values, indices) = ($v.view(), $i.view());
                let (values, indices) = (values.as_standard_layout(), indices.as_standard_layout());
                let result = $kernel(
                    values.as_slice().expect("standard layout"),
                    indices.as_slice().expect("standard layout"),
                    $plan,
                );
                NdArrayTensor::from_data(TensorData::new(or_panic(result), $shape))
            }};
        }
        match (&$values, &$indices) {
            (NdArrayTensor::F32(v), NdArrayTensor::I32(i)) => arm!(v, i),
            (NdArrayTensor::F32(v), NdArrayTensor::I64(i)) => arm!(v, i),
            (NdArrayTensor::F64(v), NdArrayTensor::I32(i)) => arm!(v, i),
            (NdArrayTensor::F64(v), NdArrayTensor::I64(i)) => arm!(v, i),
            (values, indices) => panic!(
                "max_unpool: unsupported element types on NdArray: values {:?} (f32 or f64) with indices {:?} (i32 or i64)",
                values.dtype(),
                indices.dtype()
            ),
        }
    }};
}

impl UnpoolBackend for NdArray {
    fn max_unpool(x: NdArrayTensor, indices: NdArrayTensor, plan: UnpoolPlan) -> NdArrayTensor {
        run_kernel!(x, indices, unpool_forward, &plan, plan.output_shape.clone())
    }

    fn max_unpool_backward(
        grad: NdArrayTensor,
        indices: NdArrayTensor,
        plan: UnpoolPlan,
    ) -> NdArrayTensor {
        run_kernel!(
            grad,
            indices,
            unpool_backward,
            &plan,
            plan.input_shape.clone()
        )
    }
}
