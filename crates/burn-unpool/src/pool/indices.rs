//! Indices that keep the pool that produced them.

use burn::tensor::{Int, Tensor};

use crate::geometry::PoolGeometry;

/// The indices of a max pool's maxima, with the pool that produced them and its input size.
///
/// Made by [`max_pool1d_with_indices`](crate::max_pool1d_with_indices),
/// [`max_pool2d_with_indices`](crate::max_pool2d_with_indices),
/// [`max_pool3d_with_indices`](crate::max_pool3d_with_indices) and the
/// [`MaxPoolWithIndices`](crate::nn::MaxPoolWithIndices) modules; the unpooling functions and
/// modules take it wherever they take raw indices. Because it carries the pool's input size, the
/// unpooling needs no output size (odd sizes, `ceil_mode` and `Same` padding included); options
/// whose kernel, stride, padding or dilation differ from the pool's are refused, naming both
/// (pass [`into_tensor`](Self::into_tensor) to unpool the indices as raw ones instead). Because
/// the indices come straight from a pool, each lies in its own pool window by construction:
/// the unpooling runs no index check (on GPU devices, no device read-back that waits for the
/// queue) and, where the windows cannot overlap, kernels that write every output element once.
///
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
    pub(crate) ceil_mode: bool,
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

    /// The tensor, the pool's geometry and `ceil_mode`, and its input size.
    pub(crate) fn into_parts(self) -> (Tensor<R, Int>, PoolGeometry, bool, Vec<usize>) {
        (self.indices, self.pool, self.ceil_mode, self.input_size)
    }
}

/// Indices to unpool with: a plain index tensor, or the indices of this crate's pools, which carry
/// their pool ([`PoolIndices`]).
///
/// The unpooling functions and modules take `impl Into<UnpoolIndices<R>>`, so either converts
/// implicitly; a raw tensor is read in the options' [`IndexLayout`](crate::IndexLayout) and its
/// values are checked, the indices of a pool are trusted and bring the pool's geometry and input
/// size.
#[derive(Clone, Debug)]
pub struct UnpoolIndices<const R: usize>(pub(crate) IndexSource<R>);

/// Where indices come from.
#[derive(Clone, Debug)]
pub(crate) enum IndexSource<const R: usize> {
    /// A plain index tensor, in the options' layout.
    Raw(Tensor<R, Int>),
    /// The indices of a pool of this crate.
    Pooled(PoolIndices<R>),
}

impl<const R: usize> UnpoolIndices<R> {
    /// The indices of this crate's pool, if these are.
    pub(crate) fn pooled(&self) -> Option<&PoolIndices<R>> {
        match &self.0 {
            IndexSource::Pooled(pooled) => Some(pooled),
            IndexSource::Raw(_) => None,
        }
    }

    /// Whether these are the indices of one of this crate's pools (which know the pool's input
    /// size, so the unpooling needs no output size).
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
