//! A pool layer's fields, turned into the options of one unpooling call.

use burn::tensor::ops::MaxPoolOptions;

use super::padding::PaddingPairs;
use crate::{MaxUnpoolOptions, UnpoolIndices};

pub(super) struct PoolFields<'a, const D: usize, P> {
    pub kernel: [usize; D],
    pub stride: [usize; D],
    pub padding: &'a P,
    pub dilation: [usize; D],
    pub ceil_mode: bool,
}

impl<const D: usize, P: PaddingPairs<D>> PoolFields<'_, D, P> {
    pub fn pool_options(&self, input: [usize; D]) -> MaxPoolOptions<D> {
        let padding = self
            .padding
            .pairs(self.kernel, self.stride, self.dilation, Some(input))
            .expect("known for a given input size");
        MaxPoolOptions::new(self.kernel)
            .with_stride(self.stride)
            .with_padding_pairs(padding)
            .with_dilation(self.dilation)
            .with_ceil_mode(self.ceil_mode)
    }

    pub fn requires_output_size(&self) -> bool {
        self.ceil_mode
            || self
                .padding
                .pairs(self.kernel, self.stride, self.dilation, None)
                .is_none()
    }

    /// The unpooling options; this crate's pool indices bring the input size `Same` padding needs.
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
        let Some(padding) = self
            .padding
            .pairs(self.kernel, self.stride, self.dilation, size)
        else {
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
