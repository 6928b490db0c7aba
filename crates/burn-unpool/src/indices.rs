//! Indices that keep the pool that produced them.

use burn::tensor::{Int, Tensor};

use crate::geometry::PoolGeometry;

/// A pool's indices with the pool and its input size: unpooling needs no output size or check.
/// ```
/// use burn::tensor::ops::MaxPoolOptions;
/// use burn::tensor::{Device, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, max_pool2d_with_indices, max_unpool2d};
///
/// let device = Device::flex();
/// let image = Tensor::<4>::ones([1, 3, 5, 7], &device);
/// let pool = MaxPoolOptions::new([2, 2]).with_ceil_mode(true);
/// let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
/// assert_eq!((pooled.dims(), indices.input_size()), ([1, 3, 3, 4], &[5, 7][..]));
/// // No output size to pass: the indices know the pool's 5 x 7 input.
/// let restored = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
/// assert_eq!(restored.dims(), [1, 3, 5, 7]);
/// ```
#[derive(Clone, Debug)]
pub struct PoolIndices<const R: usize> {
    pub(crate) indices: Tensor<R, Int>,
    pub(crate) pool: PoolGeometry,
    pub(crate) input_size: Vec<usize>,
}

impl<const R: usize> PoolIndices<R> {
    /// The indices: per-plane, row-major in the pool's (unpadded) input.
    pub fn tensor(&self) -> &Tensor<R, Int> {
        &self.indices
    }

    /// The indices as a plain tensor (which the unpooling checks like any other).
    pub fn into_tensor(self) -> Tensor<R, Int> {
        self.indices
    }

    /// The spatial size of the pool's input: the unpooling's output size.
    pub fn input_size(&self) -> &[usize] {
        &self.input_size
    }

    /// The indices' shape, which is the pooled tensor's.
    pub fn dims(&self) -> [usize; R] {
        self.indices.dims()
    }

    pub(crate) fn into_parts(self) -> (Tensor<R, Int>, PoolGeometry, Vec<usize>) {
        (self.indices, self.pool, self.input_size)
    }
}

/// Indices to unpool with: a plain index tensor or [`PoolIndices`], both by `Into`.
#[derive(Clone, Debug)]
pub struct UnpoolIndices<const R: usize>(pub(crate) IndexSource<R>);

#[derive(Clone, Debug)]
pub(crate) enum IndexSource<const R: usize> {
    /// A plain index tensor, in the options' layout.
    Raw(Tensor<R, Int>),
    Pooled(PoolIndices<R>),
}

impl<const R: usize> UnpoolIndices<R> {
    pub(crate) fn pooled(&self) -> Option<&PoolIndices<R>> {
        match &self.0 {
            IndexSource::Pooled(pooled) => Some(pooled),
            IndexSource::Raw(_) => None,
        }
    }

    /// Whether these are the indices of one of this crate's pools.
    pub fn is_pooled(&self) -> bool {
        matches!(self.0, IndexSource::Pooled(_))
    }
}

impl<const R: usize> From<Tensor<R, Int>> for UnpoolIndices<R> {
    fn from(indices: Tensor<R, Int>) -> Self {
        Self(IndexSource::Raw(indices))
    }
}

impl<const R: usize> From<PoolIndices<R>> for UnpoolIndices<R> {
    fn from(indices: PoolIndices<R>) -> Self {
        Self(IndexSource::Pooled(indices))
    }
}
