//! The confusion matrix of a segmentation: pixel accuracy and intersection over union from it.

use crate::data::IGNORE;

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

    /// Adds pixels, predicted and true classes in the same order; targets equal to [`IGNORE`]
    /// are skipped.
    ///
    /// # Panics
    /// Where a class is negative or not below the matrix's number of classes.
    pub fn add<P, T>(&mut self, predictions: &[P], targets: &[T])
    where
        P: Copy + Into<i64>,
        T: Copy + Into<i64>,
    {
        let k = self.num_classes;
        let class = |c: i64| {
            usize::try_from(c)
                .ok()
                .filter(|&c| c < k)
                .unwrap_or_else(|| panic!("class {c} of a matrix of {k} classes"))
        };
        for (&p, &t) in predictions.iter().zip(targets) {
            let t: i64 = t.into();
            if t != i64::from(IGNORE) {
                self.counts[class(t) * k + class(p.into())] += 1;
            }
        }
    }

    /// Adds another matrix's counts (of as many classes).
    pub fn merge(&mut self, other: &Self) {
        assert_eq!(
            self.num_classes, other.num_classes,
            "matrices of other sizes"
        );
        for (total, count) in self.counts.iter_mut().zip(&other.counts) {
            *total += count;
        }
    }

    /// Forgets every pixel.
    pub fn clear(&mut self) {
        self.counts.fill(0);
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
}

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
        m.add(&[0u8, 1], &[0u8, 1]);
        assert_eq!(m.iou(), vec![Some(1.0), Some(1.0), None, None]);
        assert_eq!(m.mean_iou(), 1.0);
    }

    #[test]
    fn merged_matrices_count_both_and_cleared_ones_nothing() {
        let (mut a, mut b) = (ConfusionMatrix::new(2), ConfusionMatrix::new(2));
        a.add(&[0u8, 1], &[0u8, 0]);
        b.add(&[1u8], &[1u8]);
        a.merge(&b);
        assert_eq!((a.total(), a.pixel_accuracy()), (3, 2.0 / 3.0));
        a.clear();
        assert_eq!(a.total(), 0);
        assert!(a.pixel_accuracy().is_nan());
    }

    #[test]
    #[should_panic(expected = "class 3 of a matrix of 3 classes")]
    fn a_class_past_the_matrix_is_named() {
        ConfusionMatrix::new(3).add(&[3u8], &[0u8]);
    }
}
