//! Encoder and decoder stages.

use burn::module::Module;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::tensor::{Device, Int, Tensor};
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

/// What an encoder stage hands to its decoder: the pool's indices and input size.
pub struct PoolRecord {
    /// Per-plane indices of the maxima.
    pub indices: Tensor<4, Int>,
    /// Spatial size of the pool's input, which the decoder restores.
    pub size: [usize; 2],
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

    /// The pooled features and the record the decoder needs.
    pub fn forward(&self, x: Tensor<4>) -> (Tensor<4>, PoolRecord) {
        let x = self.convs.iter().fold(x, |x, conv| conv.forward(x));
        let [_, _, height, width] = x.dims();
        let (pooled, indices) = self.pool.forward_with_indices(x);
        (
            pooled,
            PoolRecord {
                indices,
                size: [height, width],
            },
        )
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
    pub fn forward(&self, x: Tensor<4>, record: PoolRecord) -> Tensor<4> {
        let x = self
            .unpool
            .forward_with_output_size(x, record.indices, record.size);
        self.convs.iter().fold(x, |x, conv| conv.forward(x))
    }
}
