//! Pixel accuracy and mean intersection over union, over a whole epoch.

use burn::tensor::{Int, Tensor, TensorReadError};
use burn::train::metric::{
    Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes, NumericEntry,
    SerializedEntry,
};

use crate::data::IGNORE;

/// Predicted and true classes of every pixel of a batch.
pub struct SegmentationMetricInput {
    /// `[batch, height, width]`, the arg-max class.
    pub predictions: Tensor<3, Int>,
    /// `[batch, height, width]`, with [`IGNORE`] where unlabelled.
    pub targets: Tensor<3, Int>,
}

/// Counts of (true class, predicted class) over labelled pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfusionMatrix {
    num_classes: usize,
    counts: Vec<u64>,
}

impl ConfusionMatrix {
    /// An empty matrix.
    pub fn new(num_classes: usize) -> Self {
        Self {
            num_classes,
            counts: vec![0; num_classes * num_classes],
        }
    }

    /// Adds pixels; targets equal to [`IGNORE`] are skipped.
    pub fn add(&mut self, predictions: &[i64], targets: &[i64]) {
        for (&p, &t) in predictions.iter().zip(targets) {
            if t != i64::from(IGNORE) {
                self.counts[t as usize * self.num_classes + p as usize] += 1;
            }
        }
    }

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

    /// Labelled pixels counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Correct pixels over labelled pixels (`NaN` when there are none).
    pub fn pixel_accuracy(&self) -> f64 {
        let correct: u64 = (0..self.num_classes)
            .map(|c| self.counts[c * self.num_classes + c])
            .sum();
        correct as f64 / self.total() as f64
    }

    /// Per class: true positives over (true + predicted - true positives); `None` for a class
    /// that neither occurs nor is predicted.
    pub fn iou(&self) -> Vec<Option<f64>> {
        let k = self.num_classes;
        (0..k)
            .map(|c| {
                let tp = self.counts[c * k + c];
                let actual: u64 = self.counts[c * k..(c + 1) * k].iter().sum();
                let predicted: u64 = (0..k).map(|t| self.counts[t * k + c]).sum();
                let union = actual + predicted - tp;
                (union > 0).then(|| tp as f64 / union as f64)
            })
            .collect()
    }

    /// The mean of [`iou`](Self::iou) over the classes that occur or are predicted.
    pub fn mean_iou(&self) -> f64 {
        let present: Vec<f64> = self.iou().into_iter().flatten().collect();
        present.iter().sum::<f64>() / present.len() as f64
    }

    fn clear(&mut self) {
        self.counts.fill(0);
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
                for (total, batch) in self.epoch.counts.iter_mut().zip(&self.batch.counts) {
                    *total += batch;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_worked_confusion_matrix() {
        // Targets 0 0 1 1 2 (and one ignored pixel), predictions 0 1 1 1 0.
        let mut m = ConfusionMatrix::new(3);
        m.add(&[0, 1, 1, 1, 0, 2], &[0, 0, 1, 1, 2, i64::from(IGNORE)]);
        assert_eq!(m.total(), 5);
        assert_eq!(m.pixel_accuracy(), 3.0 / 5.0);
        // Class 0: tp 1, actual 2, predicted 2 -> 1/3. Class 1: tp 2, actual 2, predicted 3 -> 2/3.
        // Class 2: tp 0, actual 1, predicted 0 -> 0.
        assert_eq!(m.iou(), vec![Some(1.0 / 3.0), Some(2.0 / 3.0), Some(0.0)]);
        assert!((m.mean_iou() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn absent_classes_do_not_count() {
        let mut m = ConfusionMatrix::new(4);
        m.add(&[0, 1], &[0, 1]);
        assert_eq!(m.iou(), vec![Some(1.0), Some(1.0), None, None]);
        assert_eq!(m.mean_iou(), 1.0);
    }
}
