//! Class scores to a segmentation and its pixel accuracy.

use image::GrayImage;
use segnet::data::IGNORE;

/// The most likely class of every pixel, and how it compares with the true classes.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Class per pixel, row-major (the first of equal scores wins).
    pub classes: Vec<u8>,
    /// Labelled pixels whose class is right, over labelled pixels (`NaN` where none is labelled).
    pub pixel_accuracy: f64,
}

impl Prediction {
    /// Reads `scores`, `[classes, height, width]` (a batch of one), against `labels`.
    ///
    /// # Panics
    /// Where `scores` is not `num_classes` planes of the labels' size.
    pub fn new(scores: &[f32], num_classes: usize, labels: &GrayImage) -> Self {
        let plane = labels.as_raw().len();
        assert_eq!(
            scores.len(),
            num_classes * plane,
            "{num_classes} classes of {} x {} pixels",
            labels.width(),
            labels.height()
        );
        let classes: Vec<u8> = (0..plane)
            .map(|pixel| {
                let mut best = 0;
                for class in 1..num_classes {
                    if scores[class * plane + pixel] > scores[best * plane + pixel] {
                        best = class;
                    }
                }
                best as u8
            })
            .collect();
        let (mut right, mut labelled) = (0usize, 0usize);
        for (&predicted, &truth) in classes.iter().zip(labels.as_raw()) {
            if truth != IGNORE {
                labelled += 1;
                right += usize::from(predicted == truth);
            }
        }
        Self {
            classes,
            pixel_accuracy: right as f64 / labelled as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two classes over a 2 x 2 image, worked by hand: the scores pick 1, 0, 1, 0 (the tie at the
    /// last pixel goes to the first class); the labels say 1, 1, ignored, 0: 2 right of 3.
    #[test]
    fn classes_and_accuracy_by_hand() {
        let scores = [0.0, 5.0, -1.0, 2.0, 1.0, 4.0, 3.0, 2.0];
        let labels = GrayImage::from_raw(2, 2, vec![1, 1, IGNORE, 0]).unwrap();
        let prediction = Prediction::new(&scores, 2, &labels);
        assert_eq!(prediction.classes, [1, 0, 1, 0]);
        assert!((prediction.pixel_accuracy - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    #[should_panic(expected = "3 classes of 2 x 2 pixels")]
    fn scores_of_another_size_are_refused() {
        let labels = GrayImage::new(2, 2);
        Prediction::new(&[0.0; 8], 3, &labels);
    }
}
