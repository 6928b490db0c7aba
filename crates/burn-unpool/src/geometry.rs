//! The geometry of a pool, for any rank: what a pool and the unpooling that inverts it share.

use burn::tensor::ops::MaxPoolOptions;

/// The geometry of the pool an unpooling inverts, one entry per spatial axis, for any rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PoolGeometry {
    pub kernel_size: Vec<usize>,
    pub stride: Vec<usize>,
    pub padding: Vec<(usize, usize)>,
    pub dilation: Vec<usize>,
}

impl PoolGeometry {
    /// The geometry of Burn's pool options.
    pub fn from_pool<const D: usize>(pool: &MaxPoolOptions<D>) -> Self {
        Self {
            kernel_size: pool.kernel_size.to_vec(),
            stride: pool.stride.to_vec(),
            padding: pool.padding.to_vec(),
            dilation: pool.dilation.to_vec(),
        }
    }

    /// The first of kernel size, stride and dilation that holds a zero, by name: a pool needs
    /// every one of them positive.
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

    /// The number of spatial axes.
    pub fn dims(&self) -> usize {
        self.kernel_size.len()
    }

    /// Whether no two pool windows share an element, on any axis: the stride is at least the
    /// window's span, `dilation * (kernel - 1) + 1`. Each window then lies in its own cell (the
    /// stride-sized block where it starts), and so does its index.
    pub fn windows_disjoint(&self) -> bool {
        (0..self.dims()).all(|axis| {
            let span = self.dilation[axis]
                .saturating_mul(self.kernel_size[axis] - 1)
                .saturating_add(1);
            self.stride[axis] >= span
        })
    }
}
