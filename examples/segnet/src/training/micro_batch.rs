//! Gradient accumulation: one optimizer step's gradients taken a few images at a time.
//!
//! Each micro-batch runs its own forward and backward, and its loss is the sum of its pixels'
//! weighted losses divided by the whole batch's label weight: the micro-batches' losses add up to
//! the batch's loss, and their gradients to the batch's gradient. Layers that look across the
//! batch see only their micro-batch: batch norm normalises each micro-batch by its own statistics
//! and updates its running statistics once per micro-batch.

use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Int, Tensor};

use super::loss::{label_weight, weighted_loss_sum};

/// What an accumulated step gives: the batch's loss and class scores (without autodiff), and the
/// sum of the micro-batches' gradients.
pub struct Accumulated {
    /// The whole batch's loss, as [`segmentation_loss`](super::segmentation_loss) of all its
    /// images at once would give it.
    pub loss: Tensor<1>,
    /// `[batch, classes, height, width]` class scores, the micro-batches' in order.
    pub logits: Tensor<4>,
    /// The gradients of `loss` with respect to `module`'s parameters.
    pub grads: GradientsParams,
}

/// The loss and gradients of `module` on `images` and `targets`, `micro_batch` images at a time
/// (the last micro-batch may be smaller), through `forward`.
///
/// # Panics
/// If `micro_batch` is 0.
pub fn accumulate<M: Module>(
    module: &M,
    forward: impl Fn(&M, Tensor<4>) -> Tensor<4>,
    images: Tensor<4>,
    targets: Tensor<3, Int>,
    class_weights: &[f32],
    micro_batch: usize,
) -> Accumulated {
    assert!(micro_batch > 0, "a micro-batch holds at least one image");
    let batch = images.dims()[0];
    let total = label_weight(targets.clone(), class_weights).clamp_min(f32::MIN_POSITIVE);
    let mut accumulator = GradientsAccumulator::<M>::new();
    let mut losses = Vec::new();
    let mut logits = Vec::new();
    for start in (0..batch).step_by(micro_batch) {
        let len = micro_batch.min(batch - start);
        let scores = forward(module, images.clone().narrow(0, start, len));
        let part = targets.clone().narrow(0, start, len);
        let loss = weighted_loss_sum(scores.clone(), part, class_weights) / total.clone();
        let grads = GradientsParams::from_grads(loss.backward(), module);
        accumulator.accumulate(module, grads);
        losses.push(loss.without_autodiff());
        logits.push(scores.without_autodiff());
    }
    Accumulated {
        loss: Tensor::cat(losses, 0).sum(),
        logits: Tensor::cat(logits, 0),
        grads: accumulator.grads(),
    }
}

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::nn::PaddingConfig2d;
    use burn::nn::conv::{Conv2d, Conv2dConfig};
    use burn::tensor::{Device, Distribution, Int, Tensor, TensorData, Tolerance};

    use super::accumulate;
    use crate::data::IGNORE;
    use crate::training::segmentation_loss;

    /// Every parameter's gradient, flattened, in the module's order.
    fn gradients<M: Module>(module: &M, grads: &burn::optim::GradientsParams) -> Vec<TensorData> {
        struct Collect<'a>(&'a burn::optim::GradientsParams, Vec<TensorData>);
        impl ModuleVisitor for Collect<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                let grad = self
                    .0
                    .get::<D>(param.id)
                    .expect("every parameter has a gradient");
                self.1.push(grad.into_data());
            }
        }
        let mut collect = Collect(grads, Vec::new());
        module.visit(&mut collect);
        collect.1
    }

    /// A layer without batch norm: micro-batches of 1, 2 and 3 of a batch of 5 (the last one
    /// smaller) give the whole batch's loss and gradient, with class weights and ignored pixels
    /// making the micro-batches' label weights differ.
    #[test]
    fn micro_batches_of_a_layer_without_batch_norm_give_the_batchs_gradient() {
        let device = Device::flex().autodiff();
        device.seed(3);
        let conv: Conv2d = Conv2dConfig::new([3, 4], [3, 3])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init(&device);
        let images = Tensor::<4>::random([5, 3, 6, 7], Distribution::Default, &device);
        let labels: Vec<i64> = (0..5 * 6 * 7)
            .map(|i| match i % 11 {
                0 | 4 => i64::from(IGNORE),
                n => (n % 4) as i64,
            })
            .collect();
        let targets = Tensor::<3, Int>::from_data(TensorData::new(labels, [5, 6, 7]), &device);
        let weights = [0.5, 2.0, 1.0, 3.0];

        let loss = segmentation_loss(conv.forward(images.clone()), targets.clone(), &weights);
        let whole = burn::optim::GradientsParams::from_grads(loss.backward(), &conv);
        let expected_loss = loss.into_data();
        let expected = gradients(&conv, &whole);

        for micro_batch in [1, 2, 3, 5] {
            let step = accumulate(
                &conv,
                Conv2d::forward,
                images.clone(),
                targets.clone(),
                &weights,
                micro_batch,
            );
            step.loss
                .into_data()
                .assert_approx_eq::<f32>(&expected_loss, Tolerance::default());
            assert_eq!(step.logits.dims(), [5, 4, 6, 7]);
            for (got, expected) in gradients(&conv, &step.grads).iter().zip(&expected) {
                got.assert_approx_eq::<f32>(expected, Tolerance::default());
            }
        }
    }

    /// The check above can fail: micro-batches whose losses are their own means (each divided
    /// by its own label weight) do not add up to the batch's gradient here.
    #[test]
    fn micro_batches_averaged_on_their_own_would_not() {
        let device = Device::flex().autodiff();
        device.seed(4);
        let conv: Conv2d = Conv2dConfig::new([3, 2], [1, 1]).init(&device);
        let images = Tensor::<4>::random([2, 3, 2, 2], Distribution::Default, &device);
        // Image 0 has one labelled pixel, image 1 four: their means weigh them 1:1, not 1:4.
        let targets = Tensor::<3, Int>::from_data(
            TensorData::new(
                vec![1, 255, 255, 255, 0, 1, 0, 1]
                    .into_iter()
                    .map(i64::from)
                    .collect::<Vec<_>>(),
                [2, 2, 2],
            ),
            &device,
        );
        let weights = [1.0, 1.0];
        let loss = segmentation_loss(conv.forward(images.clone()), targets.clone(), &weights);
        let whole = gradients(
            &conv,
            &burn::optim::GradientsParams::from_grads(loss.backward(), &conv),
        );
        let own_means: Vec<f32> = (0..2)
            .map(|i| {
                let loss = segmentation_loss(
                    conv.forward(images.clone().narrow(0, i, 1)),
                    targets.clone().narrow(0, i, 1),
                    &weights,
                );
                let grads = burn::optim::GradientsParams::from_grads(loss.backward(), &conv);
                gradients(&conv, &grads)[0].as_slice::<f32>().unwrap()[0]
            })
            .collect();
        let summed = own_means[0] + own_means[1];
        let expected = whole[0].as_slice::<f32>().unwrap()[0];
        assert!(
            (summed - expected).abs() > 1e-3 * expected.abs().max(1e-3),
            "{summed} vs {expected}"
        );
    }
}
