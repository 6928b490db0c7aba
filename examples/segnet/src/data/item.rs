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
