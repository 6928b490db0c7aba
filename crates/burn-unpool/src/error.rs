//! The crate's one error type: what was wrong with a pool's or an unpooling's arguments.

use burn::tensor::DType;

use crate::IndexLayout;

/// Why a pool or an unpooling was refused: the tensor functions panic with it, the plans return it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnpoolError {
    /// `x` does not have rank `D + 2`.
    #[error(
        "max_unpool: {what} must have rank {expected} ([N, C, spatial..]), got shape {shape:?} of rank {}",
        .shape.len()
    )]
    Rank {
        /// What had the wrong rank.
        what: &'static str,
        /// The rank required.
        expected: usize,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// `x` and `indices` have different shapes.
    #[error(
        "max_unpool: x and indices must have the same shape, got x {x:?} and indices {indices:?}"
    )]
    ShapeMismatch {
        /// Shape of `x`.
        x: Vec<usize>,
        /// Shape of `indices`.
        indices: Vec<usize>,
    },
    /// A kernel size, stride or dilation of zero.
    #[error("max_unpool: {name} must be non-zero on every axis, got {values:?}")]
    ZeroParameter {
        /// `kernel_size`, `stride` or `dilation`.
        name: &'static str,
        /// The values given.
        values: Vec<usize>,
    },
    /// The padding leaves no room: the default output size of an axis is zero or negative.
    #[error(
        "max_unpool: the padding leaves no output on spatial axis {axis}: (input {} - 1) * \
         stride {} - padding ({} + {}) + dilation {} * (kernel {} - 1) + 1 = {size}",
        .pool.input, .pool.stride, .pool.padding.0, .pool.padding.1, .pool.dilation, .pool.kernel
    )]
    NonPositiveOutput {
        /// The spatial axis (0-based).
        axis: usize,
        /// The pool on that axis.
        pool: PoolAxis,
        /// The computed size.
        size: i128,
    },
    /// The default output size of an axis is larger than any size (`usize::MAX`).
    #[error(
        "max_unpool: the default output size of spatial axis {axis} overflows: {size} is more \
         than usize::MAX"
    )]
    OutputSizeOverflow {
        /// The spatial axis (0-based).
        axis: usize,
        /// The computed size (saturated at `i128::MAX`).
        size: i128,
    },
    /// A shape whose element count does not fit `usize`.
    #[error("max_unpool: the {what} shape {shape:?} has more elements than usize::MAX")]
    ShapeOverflow {
        /// What the shape is of.
        what: &'static str,
        /// The shape.
        shape: Vec<usize>,
    },
    /// An output over `isize::MAX` bytes or over what the device allocates in one buffer.
    #[error(
        "max_unpool: an output of shape {shape:?} and dtype {dtype:?} needs {bytes} bytes, \
         more than the {limit} bytes one buffer may hold on device {device}"
    )]
    OutputTooLarge {
        /// The output shape.
        shape: Vec<usize>,
        /// The values' dtype.
        dtype: DType,
        /// The bytes the output needs.
        bytes: u128,
        /// The most bytes one buffer may hold there.
        limit: u64,
        /// The device, as Burn prints it.
        device: String,
    },
    /// The host could not allocate an output.
    #[error("max_unpool: could not allocate {bytes} bytes for an output of shape {shape:?}")]
    AllocationFailed {
        /// The output shape.
        shape: Vec<usize>,
        /// The bytes asked for.
        bytes: usize,
    },
    /// A spatial output size without one entry per spatial axis.
    #[error(
        "max_unpool: the spatial output size {output:?} must have one entry per spatial \
         axis ({dims}), got {}",
        .output.len()
    )]
    SpatialOutputSize {
        /// The output size given.
        output: Vec<usize>,
        /// The number of spatial axes.
        dims: usize,
    },
    /// A full output size whose rank, batch or channel count does not fit `x`.
    #[error(
        "max_unpool: a full output size must be [N, C, spatial..] with N and C of x: got {output:?} for x of shape {x:?}"
    )]
    FullOutputSize {
        /// The output size given.
        output: Vec<usize>,
        /// Shape of `x`.
        x: Vec<usize>,
    },
    /// An output size with an empty axis, while `x` has values to place.
    #[error("max_unpool: output shape {output:?} has an empty axis, so no index can be valid")]
    EmptyOutput {
        /// The output shape.
        output: Vec<usize>,
    },
    /// An explicit output shape smaller than the shape the indices are read in (ONNX reference rule).
    #[error(
        "max_unpool: output_shape (spatial {output:?}) is smaller than the inferred shape {index_plane:?} \
         that the ONNX reference rule reads the indices in"
    )]
    OutputSmallerThanIndexPlane {
        /// The output's spatial shape.
        output: Vec<usize>,
        /// The inferred shape the indices are read in.
        index_plane: Vec<usize>,
    },
    /// `x` (or the output gradient) and the indices are on different devices.
    #[error(
        "max_unpool: the values and the indices must be on one device, got values on \
         {values} and indices on {indices}"
    )]
    Devices {
        /// The device of the values, as Burn prints it.
        values: String,
        /// The device of the indices.
        indices: String,
    },
    /// Values of a dtype that does not unpool (bool, quantized) or that the device does not support.
    #[error(
        "max_unpool: values of dtype {dtype:?} cannot be unpooled on device {device}, which \
         unpools values of dtype {}",
        dtype_list(.supported)
    )]
    ValueDType {
        /// The dtype given.
        dtype: DType,
        /// The device, as Burn prints it.
        device: String,
        /// The value dtypes the device computes with.
        supported: Vec<DType>,
    },
    /// Indices of a dtype that is not an integer dtype.
    #[error("max_unpool: indices must be of an integer dtype, got {dtype:?}")]
    IndexDType {
        /// The dtype given.
        dtype: DType,
    },
    /// Indices of a dtype the device cannot compute with.
    #[error(
        "max_unpool: indices of dtype {dtype:?} cannot be read on device {device}, which reads \
         indices of dtype {}",
        dtype_list(.readable)
    )]
    IndexDTypeOnDevice {
        /// The dtype given.
        dtype: DType,
        /// The device, as Burn prints it.
        device: String,
        /// The index dtypes the device computes with.
        readable: Vec<DType>,
    },
    /// Indices of a dtype too narrow for the largest valid index.
    #[error(
        "max_unpool: indices of dtype {dtype:?} cannot hold the largest valid index {max_index}; use i64 or u64 indices"
    )]
    IndexDTypeTooNarrow {
        /// The dtype given.
        dtype: DType,
        /// The largest valid index.
        max_index: usize,
    },
    /// Indices of this crate's pools, with options that ask for another layout or output size.
    #[error(
        "max_unpool: the indices come from a pool of input size {input_size:?} and address \
         it per plane, but the options ask for {asked}"
    )]
    PoolIndicesMisused {
        /// What the options ask for.
        asked: String,
        /// The pool's input size.
        input_size: Vec<usize>,
    },
    /// Raw indices of a `ceil_mode` pool and no output size, which then does not follow from `x`.
    #[error(
        "max_unpool: the pool had ceil_mode, so its input size does not follow from its \
         output size {pooled:?}; pass the pool's input size (with_output_size, or a layer's \
         forward_with_output_size) or the pool's PoolIndices, which know it"
    )]
    OutputSizeRequired {
        /// The spatial size of `x`, the pool's output.
        pooled: Vec<usize>,
    },
    /// Indices of this crate's pools, with options whose geometry differs from the pool's.
    #[error(
        "max_unpool: the indices come from a pool whose geometry the options contradict: \
         {differences}; unpool with the pool's own options \
         (MaxUnpoolOptions::from_pool), or unpool PoolIndices::into_tensor() as raw indices"
    )]
    PoolGeometryContradicted {
        /// Each differing field: the options' values and the pool's.
        differences: String,
    },
    /// An output gradient whose shape is not the output's.
    #[error(
        "max_unpool_backward: the output gradient must have the output's shape {expected:?}, got {got:?}"
    )]
    GradientShape {
        /// The output shape.
        expected: Vec<usize>,
        /// The gradient's shape.
        got: Vec<usize>,
    },
    /// An ONNX attribute or input of the wrong length.
    #[error("MaxUnpool: `{name}` must have {expected} values, got {} ({values:?})", .values.len())]
    OnnxLength {
        /// The attribute or input.
        name: &'static str,
        /// The length required.
        expected: usize,
        /// The values given.
        values: Vec<usize>,
    },
    /// An index outside the valid range.
    #[error(
        "max_unpool: index {value} at position {position:?} is out of range: {scope} indices for output \
         shape {output:?} must lie in [0, {range_end})",
        scope = scope_of(*.layout)
    )]
    IndexOutOfRange {
        /// Position of the element in `indices`, `[n, c, d1..dk]`.
        position: Vec<usize>,
        /// The index value, as given (any integer dtype).
        value: i128,
        /// The index layout.
        layout: IndexLayout,
        /// The exclusive upper bound of valid values.
        range_end: usize,
        /// The output shape.
        output: Vec<usize>,
    },
    /// `x` of a pool is not `[N, C, spatial..]`.
    #[error("max_pool: x must be [N, C, spatial..], got shape {shape:?}")]
    PoolRank {
        /// The shape given.
        shape: Vec<usize>,
    },
    /// A pool parameter without one entry per spatial axis.
    #[error("max_pool: {name} must have one entry per spatial axis ({dims}), got {values:?}")]
    PoolParameterLength {
        /// The parameter.
        name: &'static str,
        /// The values given.
        values: Vec<usize>,
        /// The number of spatial axes.
        dims: usize,
    },
    /// A pool's kernel size, stride or dilation of zero.
    #[error("max_pool: {name} must be non-zero, got {values:?}")]
    PoolZeroParameter {
        /// `kernel_size`, `stride` or `dilation`.
        name: &'static str,
        /// The values given.
        values: Vec<usize>,
    },
    /// A pool window that does not fit the padded input: no output on this axis.
    #[error(
        "max_pool: the window (kernel {kernel}, dilation {dilation}) does not fit axis \
         {axis} of size {input} with padding {padding:?}: no output"
    )]
    PoolNoOutput {
        /// The spatial axis (0-based).
        axis: usize,
        /// Its input size.
        input: usize,
        /// Its kernel size.
        kernel: usize,
        /// Its padding.
        padding: (usize, usize),
        /// Its dilation.
        dilation: usize,
    },
    /// A pool window that reads padding only: its maximum would be no element of the input.
    #[error(
        "max_pool: window {cell} of axis {axis} (size {input}, padding {padding:?}) lies \
         entirely in the padding; the padding must leave every window an input element"
    )]
    WindowInPadding {
        /// The spatial axis (0-based).
        axis: usize,
        /// The window.
        cell: usize,
        /// The axis' input size.
        input: usize,
        /// Its padding.
        padding: (usize, usize),
    },
    /// Pool values of a dtype the device cannot compute with.
    #[error(
        "max_pool: values of dtype {dtype:?} cannot be pooled on {device}, which pools values \
         of dtype {}",
        dtype_list(.supported)
    )]
    PoolValueDType {
        /// The dtype given.
        dtype: DType,
        /// The device, as Burn prints it.
        device: String,
        /// The value dtypes the device computes with.
        supported: Vec<DType>,
    },
    /// An index conversion (Burn's integer ops) in a dtype the device cannot compute with.
    #[error(
        "{op}: {what}: indices of dtype {dtype:?} cannot be computed on device {device}, which \
         computes with indices of dtype {}",
        dtype_list(.supported)
    )]
    IndexArithmetic {
        /// The conversion.
        op: &'static str,
        /// Why it needs `dtype`.
        what: String,
        /// The dtype it would compute in.
        dtype: DType,
        /// The device, as Burn prints it.
        device: String,
        /// The index dtypes the device computes with.
        supported: Vec<DType>,
    },
    /// ONNX's global indices fit no index dtype the device has.
    #[error(
        "max_pool: ONNX's global indices of a {shape:?} input run to {largest}, and {device} \
         has no I64 to hold them (it writes indices of dtype {}; I32 holds up to {})",
        dtype_list(.writable),
        i32::MAX
    )]
    GlobalIndexDType {
        /// The pool's input shape.
        shape: Vec<usize>,
        /// The largest global index.
        largest: u64,
        /// The device, as Burn prints it.
        device: String,
        /// The index dtypes the device computes with.
        writable: Vec<DType>,
    },
    /// No index dtype the device has holds every position of a pool's plane.
    #[error(
        "max_pool: no index dtype on {device} holds the {plane_len} positions of a plane: \
         its default int dtype {default:?} is narrower than 32 bits or too small, and it \
         has no I64; configure the device with a wider default int dtype"
    )]
    PoolIndexDType {
        /// The device's default int dtype.
        default: DType,
        /// The positions of a plane.
        plane_len: usize,
        /// The device, as Burn prints it.
        device: String,
    },
    /// A pool plan asked for indices of a dtype that cannot hold its positions.
    #[error(
        "max_pool: indices of dtype {dtype:?} cannot hold the {positions} positions they \
         address; use I32, I64, U32 or U64 indices wide enough"
    )]
    PoolIndexDTypeTooNarrow {
        /// The dtype asked for.
        dtype: DType,
        /// The positions the indices address.
        positions: u64,
    },
    /// More pool window positions than memory can list.
    #[error(
        "max_pool: {output:?} windows of kernel {kernel:?} hold more positions than memory \
         can list"
    )]
    TooManyWindows {
        /// The pooled spatial shape.
        output: Vec<usize>,
        /// The kernel size.
        kernel: Vec<usize>,
    },
}

/// Dtypes as a message lists them: `I32, U32`, or `none`.
fn dtype_list(dtypes: &[DType]) -> String {
    match dtypes {
        [] => "none".to_string(),
        dtypes => dtypes
            .iter()
            .map(|dtype| format!("{dtype:?}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn scope_of(layout: IndexLayout) -> &'static str {
    match layout {
        IndexLayout::PerPlane => "per-plane",
        IndexLayout::Global => "global",
    }
}

/// One spatial axis of the pool an unpooling inverts, as an error reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolAxis {
    /// Input size of the unpooling (the pool's output size) on that axis.
    pub input: usize,
    /// Kernel size.
    pub kernel: usize,
    /// Stride.
    pub stride: usize,
    /// Padding `(begin, end)`.
    pub padding: (usize, usize),
    /// Dilation.
    pub dilation: usize,
}

impl UnpoolError {
    pub(crate) fn nonzero(name: &'static str, values: &[usize]) -> Result<(), Self> {
        match values.contains(&0) {
            true => Err(Self::ZeroParameter {
                name,
                values: values.to_vec(),
            }),
            false => Ok(()),
        }
    }
}

/// The value, or a panic with the error's message: the tensor functions' error style.
#[track_caller]
pub(crate) fn or_panic<T>(result: Result<T, UnpoolError>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => panic!("{err}"),
    }
}
