//! Flex: the CPU kernels on Flex's byte storage, without copying `x` or the indices.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::tensor::TensorData;

use super::{UnpoolBackend, with_element_types};
use crate::UnpoolPlan;
use crate::checks::or_panic;
use crate::kernel::{unpool_backward, unpool_forward};

impl UnpoolBackend for Flex {
    fn max_unpool(x: FlexTensor, indices: FlexTensor, plan: UnpoolPlan) -> FlexTensor {
        let (x, indices) = (contiguous(x), contiguous(indices));
        with_element_types!(x.dtype(), indices.dtype(), |E, I| {
            let out = unpool_forward::<E, I>(slice(&x), slice(&indices), &plan);
            FlexTensor::from_data(TensorData::new(or_panic(out), plan.output_shape.clone()))
        })
    }

    fn max_unpool_backward(grad: FlexTensor, indices: FlexTensor, plan: UnpoolPlan) -> FlexTensor {
        let (grad, indices) = (contiguous(grad), contiguous(indices));
        with_element_types!(grad.dtype(), indices.dtype(), |E, I| {
            let dx = unpool_backward::<E, I>(slice(&grad), slice(&indices), &plan);
            FlexTensor::from_data(TensorData::new(or_panic(dx), plan.input_shape.clone()))
        })
    }
}

/// The tensor itself when it is a row-major view, else a row-major copy.
fn contiguous(tensor: FlexTensor) -> FlexTensor {
    if tensor.layout().contiguous_offsets().is_some() {
        tensor
    } else {
        tensor.to_contiguous()
    }
}

fn slice<E: burn::tensor::Element + bytemuck::Pod>(tensor: &FlexTensor) -> &[E] {
    tensor
        .as_slice::<E>()
        .expect("a contiguous tensor of its own dtype")
}
