//! The unit every stage is built of: convolution, batch norm, ReLU.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, PaddingConfig2d, Relu};
use burn::tensor::{Device, Tensor};

/// A `k x k` convolution that keeps the spatial size, then batch norm and ReLU.
#[derive(Module, Debug)]
pub struct ConvBlock {
    conv: Conv2d,
    norm: BatchNorm,
    activation: Relu,
}

impl ConvBlock {
    /// A block from `channels[0]` to `channels[1]` channels with a `kernel x kernel` convolution.
    pub fn new(channels: [usize; 2], kernel: usize, device: &Device) -> Self {
        let padding = kernel / 2;
        Self {
            conv: Conv2dConfig::new(channels, [kernel, kernel])
                .with_padding(PaddingConfig2d::Explicit(
                    padding, padding, padding, padding,
                ))
                .init(device),
            norm: BatchNormConfig::new(channels[1]).init(device),
            activation: Relu::new(),
        }
    }

    /// `[batch, channels[0], h, w]` to `[batch, channels[1], h, w]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        self.activation
            .forward(self.norm.forward(self.conv.forward(x)))
    }
}
