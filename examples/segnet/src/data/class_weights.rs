//! Median frequency balancing (Eigen and Fergus, 2015), as the SegNet paper weights its loss.

use super::{IGNORE, SegmentationItem};

/// For each class, its pixels over the pixels of the images where it appears
/// (`freq(c)` of the paper); 0 for a class that never appears.
pub fn class_frequencies<'a>(
    items: impl IntoIterator<Item = &'a SegmentationItem>,
    num_classes: usize,
) -> Vec<f64> {
    let mut pixels = vec![0u64; num_classes];
    let mut image_pixels = vec![0u64; num_classes];
    for item in items {
        let mut counts = vec![0u64; num_classes];
        for &label in item.labels.as_raw() {
            if label != IGNORE {
                counts[usize::from(label)] += 1;
            }
        }
        let total: u64 = counts.iter().sum();
        for (c, &count) in counts.iter().enumerate() {
            if count > 0 {
                pixels[c] += count;
                image_pixels[c] += total;
            }
        }
    }
    pixels
        .iter()
        .zip(&image_pixels)
        .map(|(&p, &t)| if t == 0 { 0.0 } else { p as f64 / t as f64 })
        .collect()
}

/// `median(freq) / freq(c)`: rare classes weigh more, so that small objects are not ignored.
/// Classes that never appear get weight 0 (nothing to learn from them).
pub fn median_frequency_weights(frequencies: &[f64]) -> Vec<f32> {
    let mut present: Vec<f64> = frequencies.iter().copied().filter(|&f| f > 0.0).collect();
    if present.is_empty() {
        return vec![1.0; frequencies.len()];
    }
    present.sort_by(f64::total_cmp);
    let mid = present.len() / 2;
    let median = if present.len().is_multiple_of(2) {
        (present[mid - 1] + present[mid]) / 2.0
    } else {
        present[mid]
    };
    frequencies
        .iter()
        .map(|&f| if f > 0.0 { (median / f) as f32 } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{GrayImage, RgbImage};

    fn item(labels: &[u8]) -> SegmentationItem {
        SegmentationItem {
            image: RgbImage::new(labels.len() as u32, 1),
            labels: GrayImage::from_raw(labels.len() as u32, 1, labels.to_vec()).unwrap(),
        }
    }

    #[test]
    fn frequencies_count_only_images_where_the_class_appears() {
        // Class 0: 3 of 4 pixels in image a, 4 of 4 in b: 7 / 8. Class 1: 1 / 4 (image a only).
        // Class 2 never appears. The ignored pixel of b counts for nothing.
        let a = item(&[0, 0, 0, 1]);
        let b = item(&[0, 0, 0, 0, IGNORE]);
        let freq = class_frequencies([&a, &b], 3);
        assert_eq!(freq, vec![7.0 / 8.0, 0.25, 0.0]);
    }

    #[test]
    fn weights_are_the_median_over_the_frequency() {
        // Present frequencies 0.5, 0.25, 0.125: median 0.25.
        let weights = median_frequency_weights(&[0.5, 0.25, 0.0, 0.125]);
        assert_eq!(weights, vec![0.5, 1.0, 0.0, 2.0]);
        // Even count: the mean of the middle two.
        assert_eq!(median_frequency_weights(&[0.2, 0.4]), vec![1.5, 0.75]);
    }
}
