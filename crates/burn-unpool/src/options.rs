//! What a caller says about an unpooling: the pool's geometry, the output size and the index layout.

use burn::tensor::ops::MaxPoolOptions;

use crate::error::{UnpoolError, or_panic};
use crate::geometry::PoolGeometry;

/// How the values of an index tensor address the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IndexLayout {
    /// A flat row-major index in one `(n, c)` output plane, in `[0, O1*..*Ok)` (Burn, PyTorch).
    #[default]
    PerPlane,
    /// A flat row-major index over the whole output, in `[0, N*C*O1*..*Ok)` (ONNX, DirectML).
    Global,
}

/// An explicit output size: spatial only, or the full `[N, C, O1..Ok]` shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputSize {
    /// The spatial size `[O1..Ok]`, one entry per spatial axis; `N` and `C` come from `x`.
    Spatial(Vec<usize>),
    /// The full shape `[N, C, O1..Ok]`; `N` and `C` must match `x`.
    Full(Vec<usize>),
}

/// Options of a `D`-d max unpooling: a [`MaxPoolOptions`] geometry, the output size, the indices.
/// ```
/// use burn_unpool::{IndexLayout, MaxUnpoolOptions};
///
/// let options = MaxUnpoolOptions::new([2, 2])
///     .with_padding([1, 0])
///     .with_output_size([45, 60]);
/// assert_eq!(options.stride, [2, 2]);
/// assert_eq!(options.padding, [(1, 1), (0, 0)]);
/// assert_eq!(options.index_layout, IndexLayout::PerPlane);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaxUnpoolOptions<const D: usize> {
    /// Kernel size of the pool (non-zero).
    pub kernel_size: [usize; D],
    /// Stride of the pool (non-zero); defaults to the kernel size.
    pub stride: [usize; D],
    /// Padding of the pool as `(begin, end)` pairs.
    pub padding: [(usize, usize); D],
    /// Dilation of the pool (non-zero).
    pub dilation: [usize; D],
    /// Whether the pool rounded its output size up (raw indices then need an output size).
    pub ceil_mode: bool,
    /// Explicit output size; `None` computes it from the geometry.
    pub output_size: Option<OutputSize>,
    /// How the indices address the output.
    pub index_layout: IndexLayout,
    /// Whether index values are checked (the default); unchecked, one out of range is skipped.
    pub check_indices: bool,
}

impl<const D: usize> MaxUnpoolOptions<D> {
    /// Options for a pool of `kernel_size`: stride equal to it, no padding, dilation 1.
    /// # Panics
    /// When a kernel size is zero, as Burn's [`MaxPoolOptions::new`] does.
    pub fn new(kernel_size: [usize; D]) -> Self {
        or_panic(UnpoolError::nonzero("kernel_size", &kernel_size));
        Self {
            kernel_size,
            stride: kernel_size,
            padding: [(0, 0); D],
            dilation: [1; D],
            ceil_mode: false,
            output_size: None,
            index_layout: IndexLayout::PerPlane,
            check_indices: true,
        }
    }

    /// The unpooling that inverts `pool`, with all its fields.
    /// ```
    /// use burn::tensor::ops::MaxPoolOptions;
    /// use burn_unpool::MaxUnpoolOptions;
    ///
    /// let pool = MaxPoolOptions::new([3, 3]).with_stride([2, 2]).with_padding([1, 1]);
    /// let unpool = MaxUnpoolOptions::from_pool(&pool);
    /// assert_eq!(unpool.kernel_size, [3, 3]);
    /// assert_eq!(unpool.stride, [2, 2]);
    /// assert_eq!(unpool.padding, [(1, 1), (1, 1)]);
    /// ```
    pub fn from_pool(pool: &MaxPoolOptions<D>) -> Self {
        Self {
            kernel_size: pool.kernel_size,
            stride: pool.stride,
            padding: pool.padding,
            dilation: pool.dilation,
            ceil_mode: pool.ceil_mode,
            output_size: None,
            index_layout: IndexLayout::PerPlane,
            check_indices: true,
        }
    }

    /// Sets the stride.
    /// # Panics
    /// When a stride is zero, as Burn's [`MaxPoolOptions::with_stride`] does.
    pub fn with_stride(mut self, stride: [usize; D]) -> Self {
        or_panic(UnpoolError::nonzero("stride", &stride));
        self.stride = stride;
        self
    }

    /// Sets the same padding at both ends of every spatial axis.
    pub fn with_padding(mut self, padding: [usize; D]) -> Self {
        self.padding = padding.map(|p| (p, p));
        self
    }

    /// Sets `(begin, end)` padding for every spatial axis.
    pub fn with_padding_pairs(mut self, padding: [(usize, usize); D]) -> Self {
        self.padding = padding;
        self
    }

    /// Sets the dilation.
    /// # Panics
    /// When a dilation is zero, as Burn's [`MaxPoolOptions::with_dilation`] does.
    pub fn with_dilation(mut self, dilation: [usize; D]) -> Self {
        or_panic(UnpoolError::nonzero("dilation", &dilation));
        self.dilation = dilation;
        self
    }

    /// Sets whether the pool rounded its output size up (see [`ceil_mode`](Self::ceil_mode)).
    pub fn with_ceil_mode(mut self, ceil_mode: bool) -> Self {
        self.ceil_mode = ceil_mode;
        self
    }

    /// Sets the spatial output size `[O1..Ok]`.
    pub fn with_output_size(mut self, size: [usize; D]) -> Self {
        self.output_size = Some(OutputSize::Spatial(size.to_vec()));
        self
    }

    /// Sets the full output shape `[N, C, O1..Ok]`; `N` and `C` must match `x`.
    pub fn with_full_output_size(mut self, shape: impl Into<Vec<usize>>) -> Self {
        self.output_size = Some(OutputSize::Full(shape.into()));
        self
    }

    /// Sets the index layout.
    pub fn with_index_layout(mut self, layout: IndexLayout) -> Self {
        self.index_layout = layout;
        self
    }

    /// Skips the index check (a GPU read-back) for trusted indices: one out of range is skipped.
    pub fn without_index_check(mut self) -> Self {
        self.check_indices = false;
        self
    }
}

impl<const D: usize> From<&MaxPoolOptions<D>> for MaxUnpoolOptions<D> {
    fn from(pool: &MaxPoolOptions<D>) -> Self {
        Self::from_pool(pool)
    }
}

impl<const D: usize> MaxUnpoolOptions<D> {
    pub(crate) fn geometry(&self) -> PoolGeometry {
        PoolGeometry {
            kernel_size: self.kernel_size.to_vec(),
            stride: self.stride.to_vec(),
            padding: self.padding.to_vec(),
            dilation: self.dilation.to_vec(),
            ceil_mode: self.ceil_mode,
        }
    }
}
