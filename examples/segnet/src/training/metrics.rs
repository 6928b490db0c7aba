//! Pixel accuracy and mean intersection over union, over a whole epoch.

use burn::tensor::{Int, Tensor, TensorReadError};
use burn::train::metric::{
    Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes, NumericEntry,
    SerializedEntry,
};

use crate::confusion::ConfusionMatrix;

/// Predicted and true classes of every pixel of a batch.
pub struct SegmentationMetricInput {
    /// `[batch, height, width]`, the arg-max class.
    pub predictions: Tensor<3, Int>,
    /// `[batch, height, width]`, with [`IGNORE`](crate::data::IGNORE) where unlabelled.
    pub targets: Tensor<3, Int>,
}

// Reading tensors is the training side's: the matrix itself builds without `train`.
impl ConfusionMatrix {
    /// Reads a batch from the device and adds it.
    pub fn add_batch(&mut self, input: &SegmentationMetricInput) -> Result<(), TensorReadError> {
        let predictions = input.predictions.clone().into_data().convert::<i64>();
        let targets = input.targets.clone().into_data().convert::<i64>();
        self.add(
            predictions.as_slice::<i64>().expect("i64 after convert"),
            targets.as_slice::<i64>().expect("i64 after convert"),
        );
        Ok(())
    }
}

macro_rules! confusion_metric {
    ($(#[$doc:meta])* $name:ident, $label:literal, $unit:expr, $scale:literal, $value:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            name: MetricName,
            epoch: ConfusionMatrix,
            batch: ConfusionMatrix,
        }

        impl $name {
            /// The metric over `num_classes` classes.
            pub fn new(num_classes: usize) -> Self {
                Self {
                    name: MetricName::new($label.to_string()),
                    epoch: ConfusionMatrix::new(num_classes),
                    batch: ConfusionMatrix::new(num_classes),
                }
            }

            fn entry(&self, value: f64, final_value: bool) -> SerializedEntry {
                let unit: Option<&str> = $unit;
                let show = |v: f64| format!("{:.4}{}", v * $scale, unit.map(|u| format!(" {u}")).unwrap_or_default());
                let formatted = if final_value {
                    format!("epoch {}", show(value))
                } else {
                    format!("epoch {} - batch {}", show(value), show(self.batch.$value()))
                };
                let serialized = if final_value {
                    NumericEntry::Final(value * $scale)
                } else {
                    NumericEntry::Value(value * $scale)
                };
                SerializedEntry::new(formatted, serialized.serialize())
            }
        }

        impl Metric for $name {
            type Input = SegmentationMetricInput;

            fn name(&self) -> MetricName {
                self.name.clone()
            }

            fn attributes(&self) -> MetricAttributes {
                NumericAttributes { unit: $unit.map(str::to_string), higher_is_better: true }.into()
            }

            fn update(
                &mut self,
                item: &SegmentationMetricInput,
                _metadata: &MetricMetadata,
            ) -> Result<SerializedEntry, TensorReadError> {
                self.batch.clear();
                self.batch.add_batch(item)?;
                self.epoch.merge(&self.batch);
                Ok(self.entry(self.epoch.$value(), false))
            }

            fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
                Ok(self.entry(self.epoch.$value(), true))
            }

            fn clear(&mut self) {
                self.epoch.clear();
                self.batch.clear();
            }
        }

        impl Numeric for $name {
            fn value(&self) -> Option<NumericEntry> {
                Some(NumericEntry::Value(self.batch.$value() * $scale))
            }

            fn running_value(&self) -> Option<NumericEntry> {
                Some(NumericEntry::Value(self.epoch.$value() * $scale))
            }

            fn final_value(&self) -> NumericEntry {
                NumericEntry::Final(self.epoch.$value() * $scale)
            }
        }
    };
}

confusion_metric!(
    /// Labelled pixels classified correctly, in percent, over the epoch so far.
    PixelAccuracyMetric, "Pixel Accuracy", Some("%"), 100.0, pixel_accuracy
);
confusion_metric!(
    /// Mean intersection over union of the classes, from the epoch's confusion matrix (not a mean
    /// of per-batch values).
    MeanIouMetric, "Mean IoU", None, 1.0, mean_iou
);
