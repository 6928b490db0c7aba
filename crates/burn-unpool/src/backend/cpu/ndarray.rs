//! NdArray (deprecated by Burn 0.22, still shipped): the CPU kernels on NdArray's arrays,
//! borrowed when they are in standard layout.
#![allow(deprecated)]

use burn::backend::NdArray;
use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::{DType, TensorData};

use super::glue::{HostView, host_backend};
use super::host::HostTensor;

host_backend!(NdArray, NdArrayTensor, view: view, wrap: NdArrayTensor::from_data);

/// The array's own elements when it is in standard layout, else a row-major copy.
fn view(tensor: &NdArrayTensor) -> HostView<'_> {
    macro_rules! view {
        ($($variant:ident),*) => {
            match tensor {
                $(NdArrayTensor::$variant(storage) => {
                    let view = storage.view();
                    match view.to_slice() {
                        Some(slice) => HostView::Borrowed(HostTensor {
                            bytes: bytemuck::cast_slice(slice),
                            dtype: DType::$variant,
                        }),
                        None => HostView::copied(TensorData::new(
                            view.iter().copied().collect::<Vec<_>>(),
                            view.shape().to_vec(),
                        )),
                    }
                })*
                NdArrayTensor::Bool(_) => panic!("max_unpool: bool tensors cannot be unpooled"),
            }
        };
    }
    view!(F64, F32, I64, I32, I16, I8, U64, U32, U16, U8)
}
