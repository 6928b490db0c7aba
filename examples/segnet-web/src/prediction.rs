//! Class scores to a segmentation, and its pixel accuracy where the true classes are known.

use image::GrayImage;
use segnet::confusion::ConfusionMatrix;

/// The most likely class of every pixel, and how it compares with the true classes.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Class per pixel, row-major (the first of equal scores wins).
    pub classes: Vec<u8>,
    /// Labelled pixels whose class is right, over labelled pixels: `None` for an image without
    /// labels ([`unlabelled`](Self::unlabelled)), `NaN` where no pixel of the labels is labelled
    /// (JSON has no NaN: `serde_json` writes both as `null`).
    pub pixel_accuracy: Option<f64>,
}

impl Prediction {
    /// Reads `scores`, `[classes, height, width]` (a batch of one), against `labels`.
    ///
    /// # Panics
    /// Where `scores` is not `num_classes` planes of the labels' size, or a label is neither a
    /// class nor [`IGNORE`](segnet::data::IGNORE).
    pub fn new(scores: &[f32], num_classes: usize, labels: &GrayImage) -> Self {
        let classes = best_classes(scores, num_classes, labels.width(), labels.height());
        let mut matrix = ConfusionMatrix::new(num_classes);
        matrix.add(&classes, labels.as_raw());
        Self {
            classes,
            pixel_accuracy: Some(matrix.pixel_accuracy()),
        }
    }

    /// Reads `scores` of an image of `width x height` pixels that has no labels (one a user gave).
    ///
    /// # Panics
    /// Where `scores` is not `num_classes` planes of that size.
    pub fn unlabelled(scores: &[f32], num_classes: usize, width: u32, height: u32) -> Self {
        Self {
            classes: best_classes(scores, num_classes, width, height),
            pixel_accuracy: None,
        }
    }
}

/// The best-scoring class of every pixel (the first of equal scores).
fn best_classes(scores: &[f32], num_classes: usize, width: u32, height: u32) -> Vec<u8> {
    let plane = width as usize * height as usize;
    assert_eq!(
        scores.len(),
        num_classes * plane,
        "{num_classes} classes of {width} x {height} pixels"
    );
    (0..plane)
        .map(|pixel| {
            let mut best = 0;
            for class in 1..num_classes {
                if scores[class * plane + pixel] > scores[best * plane + pixel] {
                    best = class;
                }
            }
            best as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use segnet::data::IGNORE;

    /// Two classes over a 2 x 2 image, worked by hand: the scores pick 1, 0, 1, 0 (the tie at the
    /// last pixel goes to the first class); the labels say 1, 1, ignored, 0: 2 right of 3.
    #[test]
    fn classes_and_accuracy_by_hand() {
        let scores = [0.0, 5.0, -1.0, 2.0, 1.0, 4.0, 3.0, 2.0];
        let labels = GrayImage::from_raw(2, 2, vec![1, 1, IGNORE, 0]).unwrap();
        let prediction = Prediction::new(&scores, 2, &labels);
        assert_eq!(prediction.classes, [1, 0, 1, 0]);
        assert!((prediction.pixel_accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);

        let unlabelled = Prediction::unlabelled(&scores, 2, 2, 2);
        assert_eq!(unlabelled.classes, prediction.classes);
        assert_eq!(unlabelled.pixel_accuracy, None);
    }

    #[test]
    #[should_panic(expected = "3 classes of 2 x 2 pixels")]
    fn scores_of_another_size_are_refused() {
        let labels = GrayImage::new(2, 2);
        Prediction::new(&[0.0; 8], 3, &labels);
    }

    #[test]
    #[should_panic(expected = "2 classes of 4 x 1 pixels")]
    fn unlabelled_scores_of_another_size_are_refused() {
        Prediction::unlabelled(&[0.0; 6], 2, 4, 1);
    }
}
