//! The portable unpooling: a composition of Burn's own tensor ops that runs on any device.
//!
//! The winning writes are found on the host from the indices (they travel there). The forward
//! assigns each element of `x` to its target (losers to one extra position, dropped after), so
//! Burn's autodiff of it is a gather: the gradient flows back to the winners only, bit for bit
//! (an upstream -0.0 keeps its sign), as the contract asks. The backward is a gather of the
//! output gradient at the targets. The tensor functions use it on devices of backends without
//! kernels (LibTorch, Remote) and for the plans the GPU kernels do not address.

use burn::tensor::kind::Numeric;
use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::UnpoolPlan;
use crate::error::or_panic;
use crate::kernel::host::{self, HostTensor};
use crate::plan::Direction;

/// The forward (`input` is `x`) or the backward (`input` is the output gradient) of `plan`.
///
/// The forward reads `x` at the winners and writes the output at their targets; the backward
/// reads the output gradient at the targets and writes the winners' gradient.
pub(crate) fn run<const R: usize, K: Numeric>(
    direction: Direction,
    input: Tensor<R, K>,
    indices: Tensor<R, Int>,
    plan: &UnpoolPlan,
) -> Tensor<R, K> {
    let input_len = input.shape().num_elements();
    let output_shape = plan.result_shape(direction);
    let output_len: usize = output_shape.iter().product();
    let shape: [usize; R] = output_shape
        .try_into()
        .expect("a plan's shapes have the tensor's rank");
    let (device, dtype) = (input.device(), input.dtype());
    if output_len == 0 || input_len == 0 {
        // Burn's reshape reads a 0 as "keep this axis", so an empty result is made whole; the
        // input's sum (zero) joins it so that the input still gets its (zero) gradient.
        return Tensor::zeros(shape, (&device, dtype)) + input.sum().reshape([1; R]);
    }
    // Each element of `x`'s target in the unpooled output; `unpooled_len` (one past the end)
    // for the elements that do not win.
    let unpooled_len = plan.output_len();
    let mut targets = vec![unpooled_len as i64; plan.input_len()];
    for (source, target) in winners(indices, plan) {
        targets[source] = target as i64;
    }
    let targets = index_tensor(targets, plan, &device);
    let input = input.reshape([input_len]);
    let output = match direction {
        // Every element of `x` is assigned once (the winners' targets are unique), so the
        // autodiff of this assign is a gather.
        Direction::Forward => Tensor::<1, K>::zeros([unpooled_len + 1], (&device, dtype))
            .select_assign(0, targets, input, IndexingUpdateOp::Assign)
            .slice(0..unpooled_len),
        // Every winner reads its target; the others read a zero appended past the end.
        Direction::Backward => {
            Tensor::cat(vec![input, Tensor::zeros([1], (&device, dtype))], 0).select(0, targets)
        }
    };
    output.reshape(shape)
}

/// The winners' `(source, target)`: flat positions in `x` and in the output.
fn winners<const R: usize>(indices: Tensor<R, Int>, plan: &UnpoolPlan) -> Vec<(usize, usize)> {
    let data = indices.into_data();
    let host = HostTensor {
        bytes: data.as_bytes(),
        dtype: data.dtype(),
    };
    or_panic(host::winners(host, plan))
}

/// `positions` as a 1-d int tensor on `device`: i32 where every position (and the one past the
/// end) fits, else i64.
fn index_tensor(positions: Vec<i64>, plan: &UnpoolPlan, device: &Device) -> Tensor<1, Int> {
    let fits_i32 = plan.output_len().max(plan.input_len()) < i32::MAX as usize;
    let dtype = if fits_i32 { DType::I32 } else { DType::I64 };
    let len = positions.len();
    Tensor::<1, Int>::from_data(
        TensorData::new(positions, [len]).convert_dtype(dtype),
        (device, dtype),
    )
}

#[cfg(test)]
mod tests {
    //! The composition is what devices without kernels run; check it against the CPU kernels,
    //! duplicates and cross-plane global indices included, by running it on Flex.

    use burn::tensor::{Device, Int, Tensor, TensorData};

    use crate::plan::Direction;
    use crate::{IndexLayout, MaxUnpoolOptions, UnpoolPlan, kernel};

    fn plan(layout: IndexLayout) -> UnpoolPlan {
        let options = MaxUnpoolOptions::new([2])
            .with_output_size([5])
            .with_index_layout(layout);
        UnpoolPlan::new(&[2, 2, 3], &[2, 2, 3], &options).unwrap()
    }

    #[test]
    fn matches_the_kernels_with_duplicates() {
        let device = Device::flex();
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
            let tensor = |values: Vec<f32>, shape: [usize; 3]| {
                Tensor::<3>::from_data(TensorData::new(values, shape), &device)
            };
            let index_tensor =
                Tensor::<3, Int>::from_data(TensorData::new(indices.clone(), [2, 2, 3]), &device);
            let expected = kernel::unpool_forward(&x, &indices, &plan).unwrap();
            let x = tensor(x.clone(), [2, 2, 3]);
            let out = super::run(Direction::Forward, x, index_tensor.clone(), &plan);
            assert_eq!(
                out.into_data().try_into_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );

            // Integer values take the same composition.
            let ints: Vec<i32> = (1..=12).map(|v| -v).collect();
            let expected = kernel::unpool_forward(&ints, &indices, &plan).unwrap();
            let x = Tensor::<3, Int>::from_data(TensorData::new(ints, [2, 2, 3]), &device);
            let out = super::run(Direction::Forward, x, index_tensor.clone(), &plan);
            assert_eq!(
                out.into_data().try_into_vec::<i32>().unwrap(),
                expected,
                "{layout:?}"
            );

            let grad: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
            let expected = kernel::unpool_backward(&grad, &indices, &plan).unwrap();
            let grad = tensor(grad, [2, 2, 5]);
            let dx = super::run(Direction::Backward, grad, index_tensor, &plan);
            assert_eq!(
                dx.into_data().try_into_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "index 7 at position [0, 1, 2] is out of range")]
    fn reports_bad_indices_like_the_kernels() {
        let device = Device::flex();
        let indices = TensorData::new(vec![0i64, 1, 2, 0, 1, 7, 0, 0, 0, 0, 0, 0], [2, 2, 3]);
        super::run(
            Direction::Forward,
            Tensor::<3>::ones([2, 2, 3], &device),
            Tensor::<3, Int>::from_data(indices, &device),
            &plan(IndexLayout::PerPlane),
        );
    }
}
