//! Encoder and decoder stages.

use burn::module::Module;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::tensor::{Device, Tensor};
use burn_unpool::PoolIndices;
use burn_unpool::nn::{MaxPoolWithIndices, MaxUnpool2d, MaxUnpool2dConfig};

use super::{ConvBlock, StageSpec};

/// The pool every stage ends with: 2x2, stride 2, rounding up as SegNet's Caffe pools do, so that
/// an odd row or column is pooled (alone) rather than dropped.
fn pool_config() -> MaxPool2dConfig {
    MaxPool2dConfig::new([2, 2]).with_ceil_mode(true)
}

/// Convolutions, then a 2x2 max pool that keeps its indices.
#[derive(Module, Debug)]
pub struct EncoderStage {
    convs: Vec<ConvBlock>,
    pool: MaxPool2d,
}

impl EncoderStage {
    /// A stage taking `in_channels` channels.
    pub fn new(spec: StageSpec, in_channels: usize, device: &Device) -> Self {
        let convs = (0..spec.convs)
            .map(|i| {
                let input = if i == 0 { in_channels } else { spec.channels };
                ConvBlock::new([input, spec.channels], spec.kernel, device)
            })
            .collect();
        Self {
            convs,
            pool: pool_config().init(),
        }
    }

    /// The pooled features and the pool's indices, which know the pool's input size: the
    /// decoder restores that size and needs no index check (no device read-back on a GPU).
    pub fn forward(&self, x: Tensor<4>) -> (Tensor<4>, PoolIndices<4>) {
        let x = self.convs.iter().fold(x, |x, conv| conv.forward(x));
        self.pool.forward_with_indices(x)
    }
}

/// Unpooling with the mirrored encoder stage's indices, then convolutions.
#[derive(Module, Debug)]
pub struct DecoderStage {
    unpool: MaxUnpool2d,
    convs: Vec<ConvBlock>,
}

impl DecoderStage {
    /// The mirror of an encoder stage `spec`, ending in `out_channels` channels.
    pub fn new(spec: StageSpec, out_channels: usize, device: &Device) -> Self {
        let convs = (0..spec.convs)
            .map(|i| {
                let output = if i + 1 == spec.convs {
                    out_channels
                } else {
                    spec.channels
                };
                ConvBlock::new([spec.channels, output], spec.kernel, device)
            })
            .collect();
        Self {
            unpool: MaxUnpool2dConfig::from(&pool_config()).init(),
            convs,
        }
    }

    /// Unpools `x` to the size of the encoder pool's input, then convolves.
    pub fn forward(&self, x: Tensor<4>, indices: PoolIndices<4>) -> Tensor<4> {
        let x = self.unpool.forward(x, indices);
        self.convs.iter().fold(x, |x, conv| conv.forward(x))
    }
}
