//! `forward_with_indices` for Burn's pool modules and `MaxPool3d`.

use burn::nn::pool::{MaxPool1d, MaxPool2d};
use burn::tensor::Tensor;

use super::MaxPool3d;
use super::pool_fields::PoolFields;
use crate::{
    PoolIndices, max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices,
};

/// A max pool module that can also return the indices of its maxima, for unpooling.
pub trait MaxPoolWithIndices<const R: usize> {
    /// The pooled tensor and its indices, which unpool without an output size or index check.
    fn forward_with_indices(&self, input: Tensor<R>) -> (Tensor<R>, PoolIndices<R>);
}

/// The trait for a pool module of `$rank`, whose kernel, stride and dilation `$axes` makes arrays.
macro_rules! with_indices {
    ($module:ty, $rank:literal, $pool:ident, $axes:expr) => {
        impl MaxPoolWithIndices<$rank> for $module {
            fn forward_with_indices(
                &self,
                input: Tensor<$rank>,
            ) -> (Tensor<$rank>, PoolIndices<$rank>) {
                let axes = $axes;
                let fields = PoolFields {
                    kernel: axes(self.kernel_size),
                    stride: axes(self.stride),
                    padding: &self.padding,
                    dilation: axes(self.dilation),
                    ceil_mode: self.ceil_mode,
                };
                let spatial = input.dims()[2..].try_into().expect("the module's rank");
                $pool(input, fields.pool_options(spatial))
            }
        }
    };
}

with_indices!(MaxPool1d, 3, max_pool1d_with_indices, |v: usize| [v]);
with_indices!(MaxPool2d, 4, max_pool2d_with_indices, |v: [usize; 2]| v);
with_indices!(MaxPool3d, 5, max_pool3d_with_indices, |v: [usize; 3]| v);
// Burn 0.23 has a 3-d pool module of its own; its indices come from this crate's pool as well.
#[cfg(burn_next)]
with_indices!(
    burn::nn::pool::MaxPool3d,
    5,
    max_pool3d_with_indices,
    |v: [usize; 3]| v
);
