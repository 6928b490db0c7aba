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

use super::loss::WeightedLabels;
use crate::fit::even_parts;

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

/// The loss and gradients of `module` on `images` and `targets`, through `forward`, in the fewest
/// micro-batches of at most `micro_batch` images, their sizes as even as they can be
/// ([`even_parts`]: 7 images at most 3 at a time are 3, 2 and 2).
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
    let batch = images.dims()[0];
    let labels = WeightedLabels::of(targets, class_weights);
    let total = labels.total();
    let mut accumulator = GradientsAccumulator::<M>::new();
    let mut losses = Vec::new();
    let mut logits = Vec::new();
    for (start, len) in even_parts(batch, micro_batch) {
        let scores = forward(module, images.clone().narrow(0, start, len));
        let loss = labels.images(start, len).loss_sum(scores.clone()) / total.clone();
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
    use burn::optim::GradientsParams;
    use burn::tensor::{Device, Distribution, Int, Tensor, TensorData, Tolerance};
    use burn::train::TrainStep;

    use super::{accumulate, even_parts};
    use crate::data::{IGNORE, SegmentationBatch};
    use crate::model::SegNetConfig;
    use crate::training::{Segmenter, segmentation_loss};

    /// Every gradient of `module`'s parameters, in the module's order (batch norm's running
    /// statistics have none).
    fn gradients<M: Module>(module: &M, grads: &GradientsParams) -> Vec<TensorData> {
        struct Collect<'a>(&'a GradientsParams, Vec<TensorData>);
        impl ModuleVisitor for Collect<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                if let Some(grad) = self.0.get::<D>(param.id) {
                    self.1.push(grad.into_data());
                }
            }
        }
        let mut collect = Collect(grads, Vec::new());
        module.visit(&mut collect);
        assert!(!collect.1.is_empty(), "no gradient at all");
        collect.1
    }

    /// Whether two f32 tensors agree within 1e-3 absolute plus 1e-2 relative, element by element.
    fn close(a: &TensorData, b: &TensorData) -> bool {
        let (a, b) = (a.as_slice::<f32>().unwrap(), b.as_slice::<f32>().unwrap());
        a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-3 + 1e-2 * y.abs())
    }

    /// A layer without batch norm (a 3x3 convolution to 4 classes), 5 images of 6 x 7 and their
    /// labels, every eleventh pixel and the one four after it ignored, and uneven class weights:
    /// the micro-batches' label weights differ.
    fn fixture() -> (Conv2d, Tensor<4>, Tensor<3, Int>, [f32; 4]) {
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
        (conv, images, targets, [0.5, 2.0, 1.0, 3.0])
    }

    /// A layer without batch norm: micro-batches of 1, 2 and 3 of a batch of 5 give the whole
    /// batch's loss and gradient, with class weights and ignored pixels making the micro-batches'
    /// label weights differ.
    #[test]
    fn micro_batches_of_a_layer_without_batch_norm_give_the_batchs_gradient() {
        let (conv, images, targets, weights) = fixture();
        let loss = segmentation_loss(conv.forward(images.clone()), targets.clone(), &weights);
        let whole = GradientsParams::from_grads(loss.backward(), &conv);
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
            let got = gradients(&conv, &step.grads);
            assert_eq!(got.len(), expected.len());
            for (got, expected) in got.iter().zip(&expected) {
                got.assert_approx_eq::<f32>(expected, Tolerance::default());
            }
        }
    }

    /// The check above can fail: on the same fixture, micro-batches whose losses are their own
    /// means (each divided by its own label weight) miss the batch's gradient.
    #[test]
    fn micro_batches_averaged_on_their_own_would_not() {
        let (conv, images, targets, weights) = fixture();
        let loss = segmentation_loss(conv.forward(images.clone()), targets.clone(), &weights);
        let expected = gradients(&conv, &GradientsParams::from_grads(loss.backward(), &conv));
        let mut accumulator = burn::optim::GradientsAccumulator::<Conv2d>::new();
        for (start, len) in even_parts(5, 2) {
            let loss = segmentation_loss(
                conv.forward(images.clone().narrow(0, start, len)),
                targets.clone().narrow(0, start, len),
                &weights,
            );
            accumulator.accumulate(&conv, GradientsParams::from_grads(loss.backward(), &conv));
        }
        let own_means = gradients(&conv, &accumulator.grads());
        let differs = own_means.iter().zip(&expected).any(|(a, b)| !close(a, b));
        assert!(differs, "the wrong normalisation gave the batch's gradient");
    }

    /// The training step takes the micro-batch it is given: SegNet's batch norm normalises each
    /// micro-batch on its own, so its gradient is `accumulate`'s in micro-batches of 2, not the
    /// whole batch's.
    #[test]
    fn the_training_step_takes_its_gradients_in_its_micro_batches() {
        let device = Device::flex().autodiff();
        device.seed(5);
        let net = SegNetConfig::new(4).with_width(2).init(&device);
        let images = Tensor::<4>::random([4, 3, 16, 16], Distribution::Default, &device);
        let labels: Vec<i64> = (0..4 * 16 * 16).map(|i| (i * 7 % 4) as i64).collect();
        let targets = Tensor::<3, Int>::from_data(TensorData::new(labels, [4, 16, 16]), &device);
        let weights = vec![1.0; 4];
        let batch = SegmentationBatch {
            images: images.clone(),
            targets: targets.clone(),
        };
        let step = |micro_batch| {
            let segmenter =
                Segmenter::new(net.clone(), weights.clone()).with_micro_batch(micro_batch);
            let output = TrainStep::step(&segmenter, batch.clone());
            gradients(&net, &output.grads)
        };
        let in_twos = accumulate(
            &net,
            crate::model::SegNet::forward,
            images,
            targets,
            &weights,
            2,
        );
        let expected = gradients(&net, &in_twos.grads);
        let got = step(Some(2));
        assert_eq!(got.len(), expected.len());
        for (got, expected) in got.iter().zip(&expected) {
            got.assert_approx_eq::<f32>(expected, Tolerance::default());
        }
        let whole = step(None);
        assert!(
            whole.iter().zip(&expected).any(|(a, b)| !close(a, b)),
            "the whole batch's gradient equals the micro-batches': batch norm made no difference"
        );
    }
}
