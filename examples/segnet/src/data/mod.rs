//! Segmentation data: the built-in synthetic scenes, a CamVid-layout loader, batching and class
//! weights.

#[cfg(feature = "train")]
mod batcher;
#[cfg(feature = "train")]
mod camvid;
#[cfg(feature = "train")]
mod class_weights;
mod item;
mod synthetic;

#[cfg(feature = "train")]
pub use batcher::{SegmentationBatch, SegmentationBatcher};
#[cfg(feature = "train")]
pub use camvid::{CAMVID_CLASSES, CamVidDataset, CamVidError};
#[cfg(feature = "train")]
pub use class_weights::{class_frequencies, median_frequency_weights};
pub use item::{IGNORE, SegmentationItem, image_values};
pub use synthetic::{SYNTHETIC_CLASSES, Split, SyntheticScenes};

/// A class: its name and the colour predictions and legends show it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassInfo {
    /// Human-readable name.
    pub name: &'static str,
    /// Display colour.
    pub color: [u8; 3],
}

impl ClassInfo {
    /// A class named `name`, drawn in `color`.
    pub const fn new(name: &'static str, color: [u8; 3]) -> Self {
        Self { name, color }
    }
}
