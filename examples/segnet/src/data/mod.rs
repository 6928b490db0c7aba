//! Segmentation data: the built-in synthetic scenes, a CamVid-layout loader, batching and class
//! weights.

mod batcher;
mod camvid;
mod class_weights;
mod item;
mod synthetic;

pub use batcher::{SegmentationBatch, SegmentationBatcher};
pub use camvid::{CAMVID_CLASSES, CamVidDataset, CamVidError};
pub use class_weights::{class_frequencies, median_frequency_weights};
pub use item::{IGNORE, SegmentationItem};
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
