//! `forward_with_indices` for Burn's `MaxPool1d` and `MaxPool2d` modules and our `MaxPool3d`.

use burn::nn::pool::{MaxPool1d, MaxPool2d};
use burn::tensor::Tensor;
use burn::tensor::ops::MaxPoolOptions;

use super::MaxPool3d;
use super::padding::PaddingPairs;
use crate::{PoolIndices, max_pool1d_with_indices, max_pool2d_with_indices};

/// A max pool module that can also return the indices of its maxima, for unpooling.
pub trait MaxPoolWithIndices<const R: usize> {
    /// The pooled tensor and the indices of its maxima, with the pool and its input size: the
    /// `MaxUnpool` modules and the functions take them without an output size or an index check.
    fn forward_with_indices(&self, input: Tensor<R>) -> (Tensor<R>, PoolIndices<R>);
}

impl MaxPoolWithIndices<3> for MaxPool1d {
    fn forward_with_indices(&self, input: Tensor<3>) -> (Tensor<3>, PoolIndices<3>) {
        let [_, _, length] = input.dims();
        let pool = PoolFields {
            kernel: [self.kernel_size],
            stride: [self.stride],
            dilation: [self.dilation],
            ceil_mode: self.ceil_mode,
        };
        max_pool1d_with_indices(input, pool.options(&self.padding, [length]))
    }
}

impl MaxPoolWithIndices<4> for MaxPool2d {
    fn forward_with_indices(&self, input: Tensor<4>) -> (Tensor<4>, PoolIndices<4>) {
        let [_, _, height, width] = input.dims();
        let pool = PoolFields {
            kernel: self.kernel_size,
            stride: self.stride,
            dilation: self.dilation,
            ceil_mode: self.ceil_mode,
        };
        max_pool2d_with_indices(input, pool.options(&self.padding, [height, width]))
    }
}

/// The fields every max pool module has, for the options of one input size.
pub(super) struct PoolFields<const D: usize> {
    pub kernel: [usize; D],
    pub stride: [usize; D],
    pub dilation: [usize; D],
    pub ceil_mode: bool,
}

impl<const D: usize> PoolFields<D> {
    /// The options for an input of spatial size `input` (`Same` padding depends on it).
    pub fn options(&self, padding: &impl PaddingPairs<D>, input: [usize; D]) -> MaxPoolOptions<D> {
        let padding = padding
            .pairs(self.kernel, self.stride, Some(input))
            .expect("known for a given input size");
        MaxPoolOptions::new(self.kernel)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode)
    }
}

impl MaxPoolWithIndices<5> for MaxPool3d {
    fn forward_with_indices(&self, input: Tensor<5>) -> (Tensor<5>, PoolIndices<5>) {
        self.pool(input)
    }
}
