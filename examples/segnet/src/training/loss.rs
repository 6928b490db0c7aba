//! Class-weighted pixel cross-entropy that skips unlabelled pixels.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use crate::data::IGNORE;

/// The mean over labelled pixels of `-weight[t] * log softmax(logits)[t]`, normalised by the sum of
/// the weights (as Caffe's and PyTorch's weighted cross-entropy are); pixels labelled
/// [`IGNORE`] add nothing.
///
/// # Shapes
/// - logits: `[batch, classes, height, width]`
/// - targets: `[batch, height, width]`
/// - weights: `[classes]`
pub fn segmentation_loss(logits: Tensor<4>, targets: Tensor<3, Int>, weights: &[f32]) -> Tensor<1> {
    let labels = WeightedLabels::of(targets, weights);
    labels.loss_sum(logits) / labels.total()
}

/// A batch's labels with each pixel's class weight, computed once: the whole batch's label
/// weight divides every micro-batch's loss sum, so that the micro-batches' losses add up to the
/// batch's [`segmentation_loss`].
#[derive(Clone, Debug)]
pub(crate) struct WeightedLabels {
    /// `[pixels]` classes, [`IGNORE`] replaced by class 0.
    targets: Tensor<1, Int>,
    /// `[pixels]` class weights, 0 where ignored.
    weights: Tensor<1>,
    /// Pixels per image.
    plane: usize,
}

impl WeightedLabels {
    /// `targets` (`[batch, height, width]`) weighted by `weights` (`[classes]`).
    pub(crate) fn of(targets: Tensor<3, Int>, weights: &[f32]) -> Self {
        let [_, height, width] = targets.dims();
        let device = targets.device();
        let targets = targets.flatten::<1>(0, 2);
        let ignored = targets.clone().equal_scalar(i64::from(IGNORE));
        let targets = targets.mask_fill(ignored.clone(), 0);
        let weights = Tensor::<1>::from_floats(weights, &device)
            .gather(0, targets.clone())
            .mask_fill(ignored, 0.0);
        Self {
            targets,
            weights,
            plane: height * width,
        }
    }

    /// The sum of the labelled pixels' weights, kept off zero: what the loss divides by.
    pub(crate) fn total(&self) -> Tensor<1> {
        self.weights.clone().sum().clamp_min(f32::MIN_POSITIVE)
    }

    /// The labels of images `start..start + len`.
    pub(crate) fn images(&self, start: usize, len: usize) -> Self {
        let (start, len) = (start * self.plane, len * self.plane);
        Self {
            targets: self.targets.clone().narrow(0, start, len),
            weights: self.weights.clone().narrow(0, start, len),
            plane: self.plane,
        }
    }

    /// The sum over labelled pixels of `-weight[t] * log softmax(logits)[t]`, for `logits` of
    /// these images.
    pub(crate) fn loss_sum(&self, logits: Tensor<4>) -> Tensor<1> {
        let [batch, classes, height, width] = logits.dims();
        let pixels = batch * height * width;
        let log_probs = log_softmax(logits.permute([0, 2, 3, 1]).reshape([pixels, classes]), 1);
        let picked = log_probs
            .gather(1, self.targets.clone().reshape([pixels, 1]))
            .reshape([pixels]);
        (picked * self.weights.clone()).sum().neg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData, Tolerance};

    #[test]
    fn matches_a_hand_computed_weighted_mean() {
        // Two pixels of a 1 x 1 x 2 map with two classes. Pixel 0: logits (0, ln 3), class 1,
        // log p = ln(3/4). Pixel 1: logits (0, 0), class 0, log p = ln(1/2).
        let device = Device::flex();
        let logits = Tensor::<4>::from_data(
            TensorData::new(vec![0.0f32, 0.0, 3f32.ln(), 0.0], [1, 2, 1, 2]),
            &device,
        );
        let targets = Tensor::<3, Int>::from_ints([[[1, 0]]], &device);
        let loss = segmentation_loss(logits.clone(), targets, &[2.0, 1.0]);
        // -(1 * ln(3/4) + 2 * ln(1/2)) / (1 + 2)
        let expected = -(0.75f32.ln() + 2.0 * 0.5f32.ln()) / 3.0;
        loss.into_data()
            .assert_approx_eq::<f32>(&TensorData::from([expected]), Tolerance::default());

        // Ignoring pixel 1 leaves -ln(3/4).
        let targets = Tensor::<3, Int>::from_ints([[[1, i64::from(IGNORE)]]], &device);
        let loss = segmentation_loss(logits, targets, &[2.0, 1.0]);
        loss.into_data()
            .assert_approx_eq::<f32>(&TensorData::from([-0.75f32.ln()]), Tolerance::default());
    }
}
