//! One labelled image.

use image::{GrayImage, RgbImage};

/// The label of pixels that have none (CamVid's "Void"): they add nothing to the loss or the
/// metrics.
pub const IGNORE: u8 = 255;

/// An RGB image and its per-pixel class labels (same size; [`IGNORE`] where unlabelled).
#[derive(Clone, Debug)]
pub struct SegmentationItem {
    /// The image.
    pub image: RgbImage,
    /// Class index per pixel.
    pub labels: GrayImage,
}

/// Pixels `[3, h, w]` in `[0, 1]`, channel-major, as the network reads them.
pub fn image_values(image: &RgbImage) -> Vec<f32> {
    let (w, h) = image.dimensions();
    let plane = (w * h) as usize;
    let mut values = vec![0.0; 3 * plane];
    for (i, pixel) in image.pixels().enumerate() {
        for c in 0..3 {
            values[c * plane + i] = f32::from(pixel[c]) / 255.0;
        }
    }
    values
}
