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
    pub fn forward(&self, x: Tensor<4>, indices: PoolIndices<4>, path: IndexPath) -> Tensor<4> {
        let x = match path {
            IndexPath::Pooled => self.unpool.forward(x, indices),
            IndexPath::Raw => {
                let [height, width] = [indices.input_size()[0], indices.input_size()[1]];
                let raw = indices.into_tensor();
                self.unpool
                    .forward_with_output_size(x, raw, [height, width])
            }
        };
        self.convs.iter().fold(x, |x, conv| conv.forward(x))
    }
}

/// How the decoder stages unpool: with the encoder pools' own indices, or with the same indices
/// as plain tensors and the sizes beside them, checked like any raw indices (on a GPU, one
/// device read-back per stage). The network uses the first; the second is there to measure the
/// difference (`benches/step.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "train", derive(clap::ValueEnum))]
pub enum IndexPath {
    /// [`PoolIndices`]: no check, no output size.
    #[default]
    Pooled,
    /// Raw index tensors with the pools' input sizes.
    Raw,
}
