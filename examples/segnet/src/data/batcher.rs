//! Items to tensors.

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::{SegmentationItem, image_values};

/// A batch: images scaled to `[0, 1]` and labels (with [`IGNORE`](super::IGNORE) kept as is).
#[derive(Clone, Debug)]
pub struct SegmentationBatch {
    /// `[batch, 3, height, width]`
    pub images: Tensor<4>,
    /// `[batch, height, width]`
    pub targets: Tensor<3, Int>,
}

/// Stacks [`SegmentationItem`]s of one size into a [`SegmentationBatch`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SegmentationBatcher;

impl Batcher<SegmentationItem, SegmentationBatch> for SegmentationBatcher {
    fn batch(&self, items: Vec<SegmentationItem>, device: &Device) -> SegmentationBatch {
        let (w, h) = items[0].image.dimensions();
        let (w, h) = (w as usize, h as usize);
        let mut images = Vec::with_capacity(items.len() * 3 * h * w);
        let mut targets = Vec::with_capacity(items.len() * h * w);
        for item in &items {
            assert_eq!(
                (item.image.dimensions(), item.labels.dimensions()),
                ((w as u32, h as u32), (w as u32, h as u32)),
                "every image and label map of a batch must be {w} x {h}"
            );
            images.extend(image_values(&item.image));
            targets.extend(item.labels.as_raw().iter().map(|&l| i64::from(l)));
        }
        let n = items.len();
        SegmentationBatch {
            images: Tensor::from_data(TensorData::new(images, [n, 3, h, w]), device),
            targets: Tensor::from_data(TensorData::new(targets, [n, h, w]), device),
        }
    }
}
