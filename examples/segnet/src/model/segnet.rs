//! The encoder/decoder network.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::tensor::{Device, Tensor};

use super::{DecoderStage, EncoderStage, IndexPath, SegNetConfig};

/// SegNet or SegNet-Basic, as [`SegNetConfig`] chose: encoder stages that pool with indices, decoder
/// stages (deepest first) that unpool with them, and a 1x1 convolution to class scores.
#[derive(Module, Debug)]
pub struct SegNet {
    encoders: Vec<EncoderStage>,
    decoders: Vec<DecoderStage>,
    classifier: Conv2d,
}

impl SegNet {
    pub(crate) fn new(config: &SegNetConfig, device: &Device) -> Self {
        let stages = config.stages();
        let inputs: Vec<usize> = std::iter::once(config.in_channels)
            .chain(stages.iter().map(|s| s.channels))
            .collect();
        let encoders = stages
            .iter()
            .zip(&inputs)
            .map(|(&spec, &input)| EncoderStage::new(spec, input, device))
            .collect();
        // Decoder i mirrors encoder i and ends with the channels encoder i received (the first
        // keeps its width: the classifier follows it).
        let decoders = stages
            .iter()
            .enumerate()
            .rev()
            .map(|(i, &spec)| {
                let out = if i == 0 { spec.channels } else { inputs[i] };
                DecoderStage::new(spec, out, device)
            })
            .collect();
        let classifier =
            Conv2dConfig::new([stages[0].channels, config.num_classes], [1, 1]).init(device);
        Self {
            encoders,
            decoders,
            classifier,
        }
    }

    /// Class scores (logits) for every pixel.
    ///
    /// # Shapes
    /// - images: `[batch, in_channels, height, width]`, any height and width
    /// - output: `[batch, num_classes, height, width]`
    pub fn forward(&self, images: Tensor<4>) -> Tensor<4> {
        self.forward_traced(images).0
    }

    /// [`forward`](Self::forward), with the spatial size each decoder stage produced (its
    /// unpooling's output size; deepest first).
    pub fn forward_traced(&self, images: Tensor<4>) -> (Tensor<4>, Vec<[usize; 2]>) {
        self.forward_with(images, IndexPath::Pooled)
    }

    /// [`forward_traced`](Self::forward_traced), unpooling by `path`.
    pub fn forward_with(&self, images: Tensor<4>, path: IndexPath) -> (Tensor<4>, Vec<[usize; 2]>) {
        let mut pools = Vec::with_capacity(self.encoders.len());
        let mut x = images;
        for encoder in &self.encoders {
            let (pooled, indices) = encoder.forward(x);
            pools.push(indices);
            x = pooled;
        }
        let mut sizes = Vec::with_capacity(pools.len());
        for (decoder, indices) in self.decoders.iter().zip(pools.into_iter().rev()) {
            x = decoder.forward(x, indices, path);
            let [_, _, height, width] = x.dims();
            sizes.push([height, width]);
        }
        (self.classifier.forward(x), sizes)
    }
}
