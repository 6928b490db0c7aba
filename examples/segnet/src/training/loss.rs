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
    let total = label_weight(targets.clone(), weights);
    weighted_loss_sum(logits, targets, weights) / total.clamp_min(f32::MIN_POSITIVE)
}

/// The sum over labelled pixels of `-weight[t] * log softmax(logits)[t]`: [`segmentation_loss`]
/// before it is divided by [`label_weight`]. Summed over micro-batches, then divided by the whole
/// batch's label weight, it is the whole batch's loss.
pub fn weighted_loss_sum(logits: Tensor<4>, targets: Tensor<3, Int>, weights: &[f32]) -> Tensor<1> {
    let [batch, classes, height, width] = logits.dims();
    let pixels = batch * height * width;
    let log_probs = log_softmax(logits.permute([0, 2, 3, 1]).reshape([pixels, classes]), 1);
    let (targets, pixel_weights) = pixel_weights(targets, weights);
    let picked = log_probs
        .gather(1, targets.reshape([pixels, 1]))
        .reshape([pixels]);
    (picked * pixel_weights).sum().neg()
}

/// The sum of the class weights of the labelled pixels of `targets`: what [`segmentation_loss`]
/// divides by.
pub fn label_weight(targets: Tensor<3, Int>, weights: &[f32]) -> Tensor<1> {
    pixel_weights(targets, weights).1.sum()
}

/// The targets as a flat list with [`IGNORE`] replaced by class 0, and each pixel's class weight
/// (0 where ignored).
fn pixel_weights(targets: Tensor<3, Int>, weights: &[f32]) -> (Tensor<1, Int>, Tensor<1>) {
    let device = targets.device();
    let targets = targets.flatten::<1>(0, 2);
    let ignored = targets.clone().equal_scalar(i64::from(IGNORE));
    let targets = targets.mask_fill(ignored.clone(), 0);
    let pixel_weights = Tensor::<1>::from_floats(weights, &device)
        .gather(0, targets.clone())
        .mask_fill(ignored, 0.0);
    (targets, pixel_weights)
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
