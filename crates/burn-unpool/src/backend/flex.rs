//! Flex: the CPU kernels on Flex's byte storage, without copying `x` or the indices.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;

use super::{HostBackend, HostView, UnpoolBackend};
use crate::UnpoolPlan;
use crate::kernel::host::HostTensor;

const FLEX: HostBackend<FlexTensor> = HostBackend {
    view,
    wrap: FlexTensor::from_data,
};

impl UnpoolBackend for Flex {
    fn max_unpool(x: FlexTensor, indices: FlexTensor, plan: UnpoolPlan) -> FlexTensor {
        FLEX.forward(x, indices, plan)
    }

    fn max_unpool_backward(grad: FlexTensor, indices: FlexTensor, plan: UnpoolPlan) -> FlexTensor {
        FLEX.backward(grad, indices, plan)
    }
}

/// The tensor's own bytes when it is a row-major view, else a row-major copy.
fn view(tensor: &FlexTensor) -> HostView<'_> {
    match tensor.layout().contiguous_offsets() {
        Some((start, end)) => {
            let size = tensor.dtype().size();
            HostView::Borrowed(HostTensor {
                bytes: &tensor.bytes()[start * size..end * size],
                dtype: tensor.dtype(),
            })
        }
        None => HostView::Copied(tensor.to_contiguous().into_data()),
    }
}
