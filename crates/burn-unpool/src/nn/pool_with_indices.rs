//! `forward_with_indices` for Burn's `MaxPool1d` and `MaxPool2d` modules.

use burn::nn::pool::{MaxPool1d, MaxPool2d};
use burn::tensor::module::{max_pool1d_with_indices, max_pool2d_with_indices};
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Int, Tensor};

use super::padding::PaddingPairs;

/// A max pool module that can also return the per-plane indices of its maxima, for unpooling.
pub trait MaxPoolWithIndices<const R: usize> {
    /// The pooled tensor and the per-plane index of each maximum in the (unpadded) input.
    fn forward_with_indices(&self, input: Tensor<R>) -> (Tensor<R>, Tensor<R, Int>);
}

impl MaxPoolWithIndices<3> for MaxPool1d {
    fn forward_with_indices(&self, input: Tensor<3>) -> (Tensor<3>, Tensor<3, Int>) {
        let [_, _, length] = input.dims();
        let padding = self
            .padding
            .pairs([self.kernel_size], [self.stride], Some([length]))
            .expect("known for a given input size");
        let options = MaxPoolOptions::new([self.kernel_size])
            .with_stride([self.stride])
            .with_padding_pairs(padding)
            .with_dilation([self.dilation])
            .with_ceil_mode(self.ceil_mode);
        max_pool1d_with_indices(input, options)
    }
}

impl MaxPoolWithIndices<4> for MaxPool2d {
    fn forward_with_indices(&self, input: Tensor<4>) -> (Tensor<4>, Tensor<4, Int>) {
        let [_, _, height, width] = input.dims();
        let padding = self
            .padding
            .pairs(self.kernel_size, self.stride, Some([height, width]))
            .expect("known for a given input size");
        let options = MaxPoolOptions::new(self.kernel_size)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode);
        max_pool2d_with_indices(input, options)
    }
}
