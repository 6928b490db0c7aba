//! Training with burn-train: the model's steps, its loss and metrics, and a per-epoch renderer.

mod loss;
mod metrics;
mod micro_batch;
mod renderer;
mod step;

pub use loss::{label_weight, segmentation_loss, weighted_loss_sum};
pub use metrics::{ConfusionMatrix, MeanIouMetric, PixelAccuracyMetric, SegmentationMetricInput};
pub use micro_batch::{Accumulated, accumulate};
pub use renderer::EpochRenderer;
pub use step::{SegmentationOutput, Segmenter};
