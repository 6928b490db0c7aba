//! Why a pool was refused, with the values involved.

/// What is wrong with a max pool's arguments. The pool functions panic with this message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PoolError {
    /// `x` is not `[N, C, spatial..]`.
    #[error("max_pool: x must be [N, C, spatial..], got shape {shape:?}")]
    Rank { shape: Vec<usize> },
    /// A parameter without one entry per spatial axis.
    #[error("max_pool: {name} must have one entry per spatial axis ({dims}), got {values:?}")]
    Length {
        name: &'static str,
        values: Vec<usize>,
        dims: usize,
    },
    /// A kernel size, stride or dilation of zero.
    #[error("max_pool: {name} must be non-zero, got {values:?}")]
    Zero {
        name: &'static str,
        values: Vec<usize>,
    },
    /// The window does not fit the padded input: no output on this axis.
    #[error(
        "max_pool: the window (kernel {kernel}, dilation {dilation}) does not fit axis \
         {axis} of size {input} with padding {padding:?}: no output"
    )]
    NoOutput {
        axis: usize,
        input: usize,
        kernel: usize,
        padding: (usize, usize),
        dilation: usize,
    },
    /// A window that reads padding only, whose maximum would be no element of the input.
    #[error(
        "max_pool: window {cell} of axis {axis} (size {input}, padding {padding:?}) lies \
         entirely in the padding; the padding must leave every window an input element"
    )]
    WindowInPadding {
        axis: usize,
        cell: usize,
        input: usize,
        padding: (usize, usize),
    },
    /// Values of a dtype the device cannot compute with.
    #[error(
        "max_pool: values of dtype {dtype:?} cannot be pooled on {device}, which cannot \
         compute with them"
    )]
    ValueDType {
        dtype: burn::tensor::DType,
        device: String,
    },
    /// No index dtype the device has holds every position of a plane.
    #[error(
        "max_pool: no index dtype on {device} holds the {plane_len} positions of a plane: \
         its default int dtype {default:?} is narrower than 32 bits or too small, and it \
         has no I64; configure the device with a wider default int dtype"
    )]
    IndexDType {
        default: burn::tensor::DType,
        plane_len: usize,
        device: String,
    },
    /// More window positions than memory can list.
    #[error(
        "max_pool: {output:?} windows of kernel {kernel:?} hold more positions than memory \
         can list"
    )]
    TooManyWindows {
        output: Vec<usize>,
        kernel: Vec<usize>,
    },
}
