//! Flex: the CPU kernels on Flex's byte storage, without copying `x` or the indices.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;

use super::glue::{HostView, host_backend};
use super::host::HostTensor;

host_backend!(Flex, FlexTensor, view: view, wrap: FlexTensor::from_data);

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
        None => HostView::copied(tensor.to_contiguous().into_data()),
    }
}
