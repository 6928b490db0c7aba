//! The portable default body: the winners are found on the host from the indices, then the op is a
//! `select` of the winning values and a `select_assign` at their (unique) output positions, so the
//! result is defined, duplicates included, on any backend.

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{IndexingUpdateOp, Shape, TensorData, read_sync};

use super::with_element_types;
use crate::UnpoolPlan;
use crate::checks::or_panic;
use crate::kernel;

pub(super) fn max_unpool<B: Backend>(
    x: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: &UnpoolPlan,
) -> FloatTensor<B> {
    let device = x.device();
    let dtype = x.dtype().into();
    let out = B::float_zeros(Shape::new([plan.output_len()]), &device, dtype);
    let Some((sources, targets)) = winner_tensors::<B>(indices, plan, &device) else {
        return B::float_reshape(out, Shape::from(plan.output_shape.clone()));
    };
    let x = B::float_reshape(x, Shape::new([plan.input_len()]));
    let values = B::float_select(x, 0, sources);
    let out = B::float_select_assign(out, 0, targets, values, IndexingUpdateOp::Assign);
    B::float_reshape(out, Shape::from(plan.output_shape.clone()))
}

pub(super) fn max_unpool_backward<B: Backend>(
    grad: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: &UnpoolPlan,
) -> FloatTensor<B> {
    let device = grad.device();
    let dtype = grad.dtype().into();
    let dx = B::float_zeros(Shape::new([plan.input_len()]), &device, dtype);
    let Some((sources, targets)) = winner_tensors::<B>(indices, plan, &device) else {
        return B::float_reshape(dx, Shape::from(plan.input_shape.clone()));
    };
    let grad = B::float_reshape(grad, Shape::new([plan.output_len()]));
    let values = B::float_select(grad, 0, targets);
    let dx = B::float_select_assign(dx, 0, sources, values, IndexingUpdateOp::Assign);
    B::float_reshape(dx, Shape::from(plan.input_shape.clone()))
}

/// The `[1]` `U32` flag of [`UnpoolBackend::max_unpool_invalid_index_flag`], from the indices
/// read on the host.
///
/// [`UnpoolBackend::max_unpool_invalid_index_flag`]: super::UnpoolBackend::max_unpool_invalid_index_flag
pub(super) fn invalid_index_flag<B: Backend>(
    indices: IntTensor<B>,
    plan: &UnpoolPlan,
) -> IntTensor<B> {
    let device = indices.device();
    let data =
        read_sync(B::int_into_data(indices)).expect("max_unpool: reading the indices failed");
    let invalid = crate::checks::index_values(&data, plan).is_err();
    B::int_from_data(TensorData::new(vec![u32::from(invalid)], [1]), &device)
}

/// The winners' flat positions in `x` and in the output, as 1-d int tensors of the indices'
/// dtype; `None` when there is nothing to write.
fn winner_tensors<B: Backend>(
    indices: IntTensor<B>,
    plan: &UnpoolPlan,
    device: &<FloatTensor<B> as TensorMetadata>::Device,
) -> Option<(IntTensor<B>, IntTensor<B>)> {
    let data =
        read_sync(B::int_into_data(indices)).expect("max_unpool: reading the indices failed");
    let dtype = data.dtype();
    let winners = with_element_types!(burn::tensor::DType::F32, dtype, |_E, I| {
        let slice = data.as_slice::<I>().expect("indices of their own dtype");
        or_panic(kernel::winners(slice, plan))
    });
    if winners.is_empty() {
        return None;
    }
    let to_tensor = |positions: Vec<usize>| {
        let len = positions.len();
        let fits_i32 = plan.output_len().max(plan.input_len()) <= i32::MAX as usize;
        let data = match dtype {
            burn::tensor::DType::I32 if fits_i32 => {
                TensorData::new(positions.into_iter().map(|p| p as i32).collect(), [len])
            }
            _ => TensorData::new(positions.into_iter().map(|p| p as i64).collect(), [len]),
        };
        B::int_from_data(data, device)
    };
    let (sources, targets): (Vec<usize>, Vec<usize>) = winners.into_iter().unzip();
    Some((to_tensor(sources), to_tensor(targets)))
}

#[cfg(test)]
mod tests {
    //! The composed body is what backends without kernels run; check it against the CPU kernels,
    //! duplicates and cross-plane global indices included, by running it on Flex primitives.

    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::tensor::TensorData;

    use crate::{IndexLayout, UnpoolPlan, kernel};

    fn plan(layout: IndexLayout) -> UnpoolPlan {
        UnpoolPlan {
            input_shape: vec![2, 2, 3],
            output_shape: vec![2, 2, 5],
            index_plane: vec![5],
            layout,
        }
    }

    #[test]
    fn matches_the_kernels_with_duplicates() {
        let x: Vec<f32> = (1..=12).map(|v| v as f32).collect();
        for (layout, indices) in [
            (
                IndexLayout::PerPlane,
                vec![0i64, 0, 4, 3, 3, 3, 1, 2, 1, 4, 0, 4],
            ),
            // Global indices that cross planes: element 1 writes into plane 3.
            (
                IndexLayout::Global,
                vec![0i64, 17, 4, 19, 5, 5, 12, 2, 11, 4, 19, 0],
            ),
        ] {
            let plan = plan(layout);
            let expected = kernel::unpool_forward(&x, &indices, &plan).unwrap();
            let out = super::max_unpool::<Flex>(
                FlexTensor::from_data(TensorData::new(x.clone(), [2, 2, 3])),
                FlexTensor::from_data(TensorData::new(indices.clone(), [2, 2, 3])),
                &plan,
            );
            assert_eq!(
                out.into_data().to_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );

            let grad: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
            let expected = kernel::unpool_backward(&grad, &indices, &plan).unwrap();
            let dx = super::max_unpool_backward::<Flex>(
                FlexTensor::from_data(TensorData::new(grad, [2, 2, 5])),
                FlexTensor::from_data(TensorData::new(indices, [2, 2, 3])),
                &plan,
            );
            assert_eq!(
                dx.into_data().to_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "index 7 at position [0, 1, 2] is out of range")]
    fn reports_bad_indices_like_the_kernels() {
        let plan = plan(IndexLayout::PerPlane);
        super::max_unpool::<Flex>(
            FlexTensor::from_data(TensorData::new(vec![1.0f32; 12], [2, 2, 3])),
            FlexTensor::from_data(TensorData::new(
                vec![0i64, 1, 2, 0, 1, 7, 0, 0, 0, 0, 0, 0],
                [2, 2, 3],
            )),
            &plan,
        );
    }
}
