//! The fields every pool layer has (Burn's `MaxPool1d` and `MaxPool2d`, this crate's `MaxPool3d`,
//! and the `MaxUnpool` layers, which are configured as the pool they invert), resolved to the
//! options of one call.

use burn::tensor::ops::MaxPoolOptions;

use super::padding::PaddingPairs;
use crate::{MaxUnpoolOptions, UnpoolIndices};

/// A pool layer's kernel, stride, padding config, dilation and `ceil_mode`, per axis.
pub(super) struct PoolFields<'a, const D: usize, P> {
    pub kernel: [usize; D],
    pub stride: [usize; D],
    pub padding: &'a P,
    pub dilation: [usize; D],
    pub ceil_mode: bool,
}

impl<const D: usize, P: PaddingPairs<D>> PoolFields<'_, D, P> {
    /// The pool's options for an input of spatial size `input` (`Same` padding depends on it).
    pub fn pool_options(&self, input: [usize; D]) -> MaxPoolOptions<D> {
        let padding = self
            .padding
            .pairs(self.kernel, self.stride, Some(input))
            .expect("known for a given input size");
        MaxPoolOptions::new(self.kernel)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode)
    }

    /// Whether the pool's input size does not follow from its output size: `ceil_mode`, or
    /// `Same` padding with a stride above 1.
    pub fn requires_output_size(&self) -> bool {
        self.ceil_mode || self.padding.pairs(self.kernel, self.stride, None).is_none()
    }

    /// The unpooling options of one call of the layer `layer` with `indices` and an optional
    /// explicit output size. The indices of this crate's pools bring the pool's input size,
    /// which resolves `Same` padding. The rest is `max_unpool`'s to check, as for any caller: a
    /// pool of another geometry, and raw indices of a `ceil_mode` pool without an output size.
    #[track_caller]
    pub fn unpool_options<const R: usize>(
        &self,
        layer: &str,
        x_shape: &[usize],
        indices: &UnpoolIndices<R>,
        output_size: Option<[usize; D]>,
    ) -> MaxUnpoolOptions<D> {
        let pool_input = indices
            .pooled()
            .and_then(|pool| pool.input_size().try_into().ok());
        let size = output_size.or(pool_input);
        // `Same` padding is the layers' own: the functions take explicit padding pairs.
        let Some(padding) = self.padding.pairs(self.kernel, self.stride, size) else {
            panic!(
                "{layer}::forward: the pool this layer inverts has Same padding with a stride \
                 above 1, whose padding depends on its input size, which its output size {:?} \
                 does not determine; pass the pool's PoolIndices, or its input size to \
                 forward_with_output_size",
                x_shape.get(2..).unwrap_or_default(),
            );
        };
        let options = MaxUnpoolOptions::new(self.kernel)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode);
        match output_size {
            Some(size) => options.with_output_size(size),
            None => options,
        }
    }
}
