//! The one geometry of a pool, any rank: what a pool and the unpooling that inverts it share.

use burn::tensor::ops::MaxPoolOptions;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PoolGeometry {
    pub kernel_size: Vec<usize>,
    pub stride: Vec<usize>,
    pub padding: Vec<(usize, usize)>,
    pub dilation: Vec<usize>,
    pub ceil_mode: bool,
}

impl PoolGeometry {
    pub fn of<const D: usize>(pool: &MaxPoolOptions<D>) -> Self {
        Self {
            kernel_size: pool.kernel_size.to_vec(),
            stride: pool.stride.to_vec(),
            padding: pool.padding.to_vec(),
            dilation: pool.dilation.to_vec(),
            ceil_mode: pool.ceil_mode,
        }
    }

    pub fn dims(&self) -> usize {
        self.kernel_size.len()
    }

    pub fn zero_parameter(&self) -> Option<(&'static str, &[usize])> {
        [
            ("kernel_size", &self.kernel_size),
            ("stride", &self.stride),
            ("dilation", &self.dilation),
        ]
        .into_iter()
        .find(|(_, values)| values.contains(&0))
        .map(|(name, values)| (name, values.as_slice()))
    }

    /// Whether no two windows share an element, so each index lies in its own stride-sized cell.
    pub fn windows_disjoint(&self) -> bool {
        (0..self.dims()).all(|axis| {
            let span = self.dilation[axis]
                .saturating_mul(self.kernel_size[axis] - 1)
                .saturating_add(1);
            self.stride[axis] >= span
        })
    }
}
