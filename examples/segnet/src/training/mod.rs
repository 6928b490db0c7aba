//! Training with burn-train: the model's steps, its loss and metrics, and a per-epoch renderer.

mod loss;
mod metrics;
mod micro_batch;
mod renderer;
mod step;

pub use crate::confusion::ConfusionMatrix;
pub use loss::segmentation_loss;
pub use metrics::{MeanIouMetric, PixelAccuracyMetric, SegmentationMetricInput};
pub use micro_batch::{Accumulated, accumulate};
pub use renderer::EpochRenderer;
pub use step::{SegmentationOutput, Segmenter};
