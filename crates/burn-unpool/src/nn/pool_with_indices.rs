//! `forward_with_indices` for Burn's `MaxPool1d` and `MaxPool2d` modules.

use burn::nn::pool::{MaxPool1d, MaxPool2d};
use burn::nn::{PaddingConfig1d, PaddingConfig2d};
use burn::tensor::module::{max_pool1d_with_indices, max_pool2d_with_indices};
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Int, Tensor};

/// A max pool module that can also return the per-plane indices of its maxima, for unpooling.
pub trait MaxPoolWithIndices<const R: usize> {
    /// The pooled tensor and the per-plane index of each maximum in the (unpadded) input.
    fn forward_with_indices(&self, input: Tensor<R>) -> (Tensor<R>, Tensor<R, Int>);
}

impl MaxPoolWithIndices<3> for MaxPool1d {
    fn forward_with_indices(&self, input: Tensor<3>) -> (Tensor<3>, Tensor<3, Int>) {
        let [_, _, length] = input.dims();
        let padding = match self.padding {
            PaddingConfig1d::Valid => (0, 0),
            PaddingConfig1d::Same => same_padding(self.kernel_size, self.stride, length),
            PaddingConfig1d::Explicit(begin, end) => (begin, end),
        };
        let options = MaxPoolOptions::new([self.kernel_size])
            .with_stride([self.stride])
            .with_padding_pairs([padding])
            .with_dilation([self.dilation])
            .with_ceil_mode(self.ceil_mode);
        max_pool1d_with_indices(input, options)
    }
}

impl MaxPoolWithIndices<4> for MaxPool2d {
    fn forward_with_indices(&self, input: Tensor<4>) -> (Tensor<4>, Tensor<4, Int>) {
        let [_, _, height, width] = input.dims();
        let padding = match self.padding {
            PaddingConfig2d::Valid => [(0, 0); 2],
            PaddingConfig2d::Same => [
                same_padding(self.kernel_size[0], self.stride[0], height),
                same_padding(self.kernel_size[1], self.stride[1], width),
            ],
            PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)],
        };
        let options = MaxPoolOptions::new(self.kernel_size)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode);
        max_pool2d_with_indices(input, options)
    }
}

/// Burn's `Same` padding: the output has `ceil(size / stride)` elements, the odd pad at the end.
fn same_padding(kernel: usize, stride: usize, size: usize) -> (usize, usize) {
    let out = size.div_ceil(stride);
    let total = if out > 0 {
        ((out - 1) * stride + kernel).saturating_sub(size)
    } else {
        0
    };
    (total / 2, total - total / 2)
}
