//! `forward_with_indices` for Burn's `MaxPool1d` and `MaxPool2d` modules and our `MaxPool3d`.

use burn::nn::pool::{MaxPool1d, MaxPool2d};
use burn::tensor::Tensor;

use super::MaxPool3d;
use super::pool_fields::PoolFields;
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
            padding: &self.padding,
            dilation: [self.dilation],
            ceil_mode: self.ceil_mode,
        };
        max_pool1d_with_indices(input, pool.pool_options([length]))
    }
}

impl MaxPoolWithIndices<4> for MaxPool2d {
    fn forward_with_indices(&self, input: Tensor<4>) -> (Tensor<4>, PoolIndices<4>) {
        let [_, _, height, width] = input.dims();
        let pool = PoolFields {
            kernel: self.kernel_size,
            stride: self.stride,
            padding: &self.padding,
            dilation: self.dilation,
            ceil_mode: self.ceil_mode,
        };
        max_pool2d_with_indices(input, pool.pool_options([height, width]))
    }
}

impl MaxPoolWithIndices<5> for MaxPool3d {
    fn forward_with_indices(&self, input: Tensor<5>) -> (Tensor<5>, PoolIndices<5>) {
        self.pool(input)
    }
}
