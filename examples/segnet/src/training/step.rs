//! The model burn-train drives: the network and its loss weights.

use burn::module::Module;
use burn::tensor::ExecutionError;
use burn::tensor::{Int, Tensor};
use burn::train::metric::{Adaptor, ItemLazy, LossInput};
use burn::train::{InferenceStep, TrainOutput, TrainStep};

use super::micro_batch::accumulate;
use super::{SegmentationMetricInput, segmentation_loss};
use crate::data::SegmentationBatch;
use crate::model::SegNet;

/// A [`SegNet`] with the class weights of its loss (not saved: they come from the training data)
/// and the micro-batch its training steps take the gradients in.
#[derive(Module, Debug)]
pub struct Segmenter {
    /// The network.
    pub net: SegNet,
    #[module(skip)]
    class_weights: Vec<f32>,
    #[module(skip)]
    micro_batch: Option<usize>,
}

impl Segmenter {
    /// `net` trained with a loss weighting class `c` by `class_weights[c]`, a whole batch at a time.
    pub fn new(net: SegNet, class_weights: Vec<f32>) -> Self {
        Self {
            net,
            class_weights,
            micro_batch: None,
        }
    }

    /// Training steps take their gradients `micro_batch` images at a time and sum them (see
    /// [`accumulate`](super::accumulate)); `None`: the whole batch at once.
    pub fn with_micro_batch(mut self, micro_batch: Option<usize>) -> Self {
        self.micro_batch = micro_batch;
        self
    }

    /// Forward pass and loss of a batch.
    pub fn forward_segmentation(&self, batch: SegmentationBatch) -> SegmentationOutput {
        let logits = self.net.forward(batch.images);
        let loss = segmentation_loss(logits.clone(), batch.targets.clone(), &self.class_weights);
        SegmentationOutput {
            loss,
            predictions: logits.argmax(1).squeeze_dim(1),
            targets: batch.targets,
        }
    }
}

/// What a step reports to the metrics.
pub struct SegmentationOutput {
    /// The batch's loss.
    pub loss: Tensor<1>,
    /// `[batch, height, width]` arg-max classes.
    pub predictions: Tensor<3, Int>,
    /// `[batch, height, width]` labels.
    pub targets: Tensor<3, Int>,
}

impl ItemLazy for SegmentationOutput {
    fn sync(self) -> Result<Self, ExecutionError> {
        self.loss.device().flush()?;
        Ok(Self {
            loss: self.loss.without_autodiff(),
            predictions: self.predictions.without_autodiff(),
            targets: self.targets.without_autodiff(),
        })
    }
}

impl Adaptor<LossInput> for SegmentationOutput {
    fn adapt(&self) -> LossInput {
        LossInput::new(self.loss.clone())
    }
}

impl Adaptor<SegmentationMetricInput> for SegmentationOutput {
    fn adapt(&self) -> SegmentationMetricInput {
        SegmentationMetricInput {
            predictions: self.predictions.clone(),
            targets: self.targets.clone(),
        }
    }
}

impl TrainStep for Segmenter {
    type Input = SegmentationBatch;
    type Output = SegmentationOutput;

    fn step(&self, batch: SegmentationBatch) -> TrainOutput<SegmentationOutput> {
        let micro_batch = self.micro_batch.unwrap_or(batch.images.dims()[0]);
        let step = accumulate(
            &self.net,
            SegNet::forward,
            batch.images,
            batch.targets.clone(),
            &self.class_weights,
            micro_batch,
        );
        let output = SegmentationOutput {
            loss: step.loss,
            predictions: step.logits.argmax(1).squeeze_dim(1),
            targets: batch.targets,
        };
        TrainOutput {
            grads: step.grads,
            item: output,
        }
    }
}

impl InferenceStep for Segmenter {
    type Input = SegmentationBatch;
    type Output = SegmentationOutput;

    fn step(&self, batch: SegmentationBatch) -> SegmentationOutput {
        self.forward_segmentation(batch)
    }
}
