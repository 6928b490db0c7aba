//! Every argument check of the crate, in one place and apart from the kernels.
//!
//! Checks that need only shapes, dtypes and options run in the public functions before any backend
//! is called. Index values are checked by the CPU kernels while they read them (a separate pass
//! would read the indices twice); the kernels report the first bad element and [`index_error`] turns
//! it into the same kind of message. GPU kernels skip bad indices instead; the checked public
//! functions ask the device whether there are any and, only then, find the first with
//! [`index_values`].

use core::fmt;

use burn::tensor::{DType, TensorData};

use crate::output_size::default_output_size;
use crate::{IndexLayout, MaxUnpoolOptions, OutputSize, UnpoolPlan};

/// Why an unpooling was refused. Its `Display` names the problem and the values involved.
///
/// ```
/// use burn_unpool::{MaxUnpoolOptions, UnpoolError, checks};
///
/// let err = checks::plan(&[1, 1, 4], &[1, 1, 5], &MaxUnpoolOptions::new([2])).unwrap_err();
/// assert!(matches!(err, UnpoolError::ShapeMismatch { .. }));
/// assert_eq!(
///     err.to_string(),
///     "max_unpool: x and indices must have the same shape, got x [1, 1, 4] and indices [1, 1, 5]"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnpoolError {
    /// `x` does not have rank `D + 2`.
    Rank {
        /// What had the wrong rank.
        what: &'static str,
        /// The rank required.
        expected: usize,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// `x` and `indices` have different shapes.
    ShapeMismatch {
        /// Shape of `x`.
        x: Vec<usize>,
        /// Shape of `indices`.
        indices: Vec<usize>,
    },
    /// A kernel size, stride or dilation of zero.
    ZeroParameter {
        /// `kernel_size`, `stride` or `dilation`.
        name: &'static str,
        /// The values given.
        values: Vec<usize>,
    },
    /// The padding leaves no room: the default output size of an axis is zero or negative.
    NonPositiveOutput {
        /// The spatial axis (0-based).
        axis: usize,
        /// Input size on that axis.
        input: usize,
        /// Kernel size on that axis.
        kernel: usize,
        /// Stride on that axis.
        stride: usize,
        /// Padding `(begin, end)` on that axis.
        padding: (usize, usize),
        /// Dilation on that axis.
        dilation: usize,
        /// The computed size.
        size: i128,
    },
    /// A full output size whose rank, batch or channel count does not fit `x`.
    FullOutputSize {
        /// The output size given.
        output: Vec<usize>,
        /// Shape of `x`.
        x: Vec<usize>,
    },
    /// An output size with an empty axis, while `x` has values to place.
    EmptyOutput {
        /// The output shape.
        output: Vec<usize>,
    },
    /// An explicit output shape smaller than the shape the indices are read in (ONNX reference rule).
    OutputSmallerThanIndexPlane {
        /// The output's spatial shape.
        output: Vec<usize>,
        /// The inferred shape the indices are read in.
        index_plane: Vec<usize>,
    },
    /// Indices of a dtype that is not a 32- or 64-bit signed integer.
    IndexDType {
        /// The dtype given.
        dtype: DType,
    },
    /// Indices of a dtype too narrow for the largest valid index.
    IndexDTypeTooNarrow {
        /// The dtype given.
        dtype: DType,
        /// The largest valid index.
        max_index: usize,
    },
    /// An output gradient whose shape is not the output's.
    GradientShape {
        /// The output shape.
        expected: Vec<usize>,
        /// The gradient's shape.
        got: Vec<usize>,
    },
    /// An ONNX attribute or input of the wrong length.
    OnnxLength {
        /// The attribute or input.
        name: &'static str,
        /// The length required.
        expected: usize,
        /// The values given.
        values: Vec<usize>,
    },
    /// An index outside the valid range.
    IndexOutOfRange {
        /// Position of the element in `indices`, `[n, c, d1..dk]`.
        position: Vec<usize>,
        /// The index value.
        value: i64,
        /// The index layout.
        layout: IndexLayout,
        /// The exclusive upper bound of valid values.
        range_end: usize,
        /// The output shape.
        output: Vec<usize>,
    },
}

impl fmt::Display for UnpoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rank {
                what,
                expected,
                shape,
            } => write!(
                f,
                "max_unpool: {what} must have rank {expected} ([N, C, spatial..]), got shape {shape:?} of rank {}",
                shape.len()
            ),
            Self::ShapeMismatch { x, indices } => write!(
                f,
                "max_unpool: x and indices must have the same shape, got x {x:?} and indices {indices:?}"
            ),
            Self::ZeroParameter { name, values } => {
                write!(
                    f,
                    "max_unpool: {name} must be non-zero on every axis, got {values:?}"
                )
            }
            Self::NonPositiveOutput {
                axis,
                input,
                kernel,
                stride,
                padding,
                dilation,
                size,
            } => write!(
                f,
                "max_unpool: the padding leaves no output on spatial axis {axis}: (input {input} - 1) * stride {stride} \
                 - padding ({} + {}) + dilation {dilation} * (kernel {kernel} - 1) + 1 = {size}",
                padding.0, padding.1
            ),
            Self::FullOutputSize { output, x } => write!(
                f,
                "max_unpool: a full output size must be [N, C, spatial..] with N and C of x: got {output:?} for x of shape {x:?}"
            ),
            Self::EmptyOutput { output } => write!(
                f,
                "max_unpool: output shape {output:?} has an empty axis, so no index can be valid"
            ),
            Self::OutputSmallerThanIndexPlane {
                output,
                index_plane,
            } => write!(
                f,
                "max_unpool: output_shape (spatial {output:?}) is smaller than the inferred shape {index_plane:?} \
                 that the ONNX reference rule reads the indices in"
            ),
            Self::IndexDType { dtype } => {
                write!(f, "max_unpool: indices must be i32 or i64, got {dtype:?}")
            }
            Self::IndexDTypeTooNarrow { dtype, max_index } => write!(
                f,
                "max_unpool: indices of dtype {dtype:?} cannot hold the largest valid index {max_index}; use i64 indices"
            ),
            Self::GradientShape { expected, got } => write!(
                f,
                "max_unpool_backward: the output gradient must have the output's shape {expected:?}, got {got:?}"
            ),
            Self::OnnxLength {
                name,
                expected,
                values,
            } => write!(
                f,
                "MaxUnpool: `{name}` must have {expected} values, got {} ({values:?})",
                values.len()
            ),
            Self::IndexOutOfRange {
                position,
                value,
                layout,
                range_end,
                output,
            } => {
                let scope = match layout {
                    IndexLayout::PerPlane => "per-plane",
                    IndexLayout::Global => "global",
                };
                write!(
                    f,
                    "max_unpool: index {value} at position {position:?} is out of range: {scope} indices for output \
                     shape {output:?} must lie in [0, {range_end})"
                )
            }
        }
    }
}

impl std::error::Error for UnpoolError {}

/// The pool geometry an unpooling inverts, one entry per spatial axis.
#[derive(Clone, Copy, Debug)]
pub struct Geometry<'a> {
    /// Kernel sizes.
    pub kernel_size: &'a [usize],
    /// Strides.
    pub stride: &'a [usize],
    /// `(begin, end)` paddings.
    pub padding: &'a [(usize, usize)],
    /// Dilations.
    pub dilation: &'a [usize],
}

/// Checks the shapes and options of a `D`-dimensional unpooling and resolves its plan.
///
/// ```
/// use burn_unpool::{MaxUnpoolOptions, checks};
///
/// let options = MaxUnpoolOptions::new([3]).with_stride([2]).with_padding([1]);
/// let plan = checks::plan(&[1, 4, 91], &[1, 4, 91], &options).unwrap();
/// assert_eq!(plan.output_shape, [1, 4, 181]);
/// assert!(checks::plan(&[1, 4, 91], &[1, 4, 91], &options.with_stride([0])).is_err());
///
/// // One pooled value from a 2-wide input (kernel 2, stride 3, padding 1): the default size,
/// // (1 - 1) * 3 - 2 + 2 = 0, is refused, the pool's input size is not.
/// let pool = MaxUnpoolOptions::new([2]).with_stride([3]).with_padding([1]);
/// assert!(checks::plan(&[1, 1, 1], &[1, 1, 1], &pool).is_err());
/// let plan = checks::plan(&[1, 1, 1], &[1, 1, 1], &pool.with_output_size([2])).unwrap();
/// assert_eq!(plan.output_shape, [1, 1, 2]);
/// ```
pub fn plan<const D: usize>(
    x_shape: &[usize],
    indices_shape: &[usize],
    options: &MaxUnpoolOptions<D>,
) -> Result<UnpoolPlan, UnpoolError> {
    let geometry = Geometry {
        kernel_size: &options.kernel_size,
        stride: &options.stride,
        padding: &options.padding,
        dilation: &options.dilation,
    };
    // An explicit output size only has to hold the indices: the default may be empty then.
    let inferred = match inferred_spatial(x_shape, indices_shape, &geometry) {
        Err(UnpoolError::NonPositiveOutput { .. }) if options.output_size.is_some() => Vec::new(),
        inferred => inferred?,
    };
    let output_spatial = match &options.output_size {
        None => inferred,
        Some(OutputSize::Spatial(size)) => size.to_vec(),
        Some(OutputSize::Full(full)) => {
            if full.len() != D + 2 || full[..2] != x_shape[..2] {
                return Err(UnpoolError::FullOutputSize {
                    output: full.clone(),
                    x: x_shape.to_vec(),
                });
            }
            full[2..].to_vec()
        }
    };
    let output_shape: Vec<usize> = x_shape[..2]
        .iter()
        .copied()
        .chain(output_spatial.clone())
        .collect();
    finish_plan(x_shape, output_shape, output_spatial, options.index_layout)
}

/// Checks ranks, shapes and geometry; returns the default spatial output size.
pub fn inferred_spatial(
    x_shape: &[usize],
    indices_shape: &[usize],
    geometry: &Geometry<'_>,
) -> Result<Vec<usize>, UnpoolError> {
    let dims = geometry.kernel_size.len();
    if x_shape.len() != dims + 2 {
        return Err(UnpoolError::Rank {
            what: "x",
            expected: dims + 2,
            shape: x_shape.to_vec(),
        });
    }
    if x_shape != indices_shape {
        return Err(UnpoolError::ShapeMismatch {
            x: x_shape.to_vec(),
            indices: indices_shape.to_vec(),
        });
    }
    for (name, values) in [
        ("kernel_size", geometry.kernel_size),
        ("stride", geometry.stride),
        ("dilation", geometry.dilation),
    ] {
        if values.contains(&0) {
            return Err(UnpoolError::ZeroParameter {
                name,
                values: values.to_vec(),
            });
        }
    }
    (0..dims)
        .map(|axis| {
            let input = x_shape[axis + 2];
            let size = default_output_size(
                input,
                geometry.kernel_size[axis],
                geometry.stride[axis],
                geometry.padding[axis],
                geometry.dilation[axis],
            );
            if size <= 0 {
                Err(UnpoolError::NonPositiveOutput {
                    axis,
                    input,
                    kernel: geometry.kernel_size[axis],
                    stride: geometry.stride[axis],
                    padding: geometry.padding[axis],
                    dilation: geometry.dilation[axis],
                    size,
                })
            } else {
                Ok(size as usize)
            }
        })
        .collect()
}

/// Completes a plan once the output shape and the plane the indices are read in are known.
pub fn finish_plan(
    x_shape: &[usize],
    output_shape: Vec<usize>,
    index_plane: Vec<usize>,
    layout: IndexLayout,
) -> Result<UnpoolPlan, UnpoolError> {
    let has_values = x_shape.iter().product::<usize>() > 0;
    if has_values && output_shape.contains(&0) {
        return Err(UnpoolError::EmptyOutput {
            output: output_shape,
        });
    }
    if index_plane
        .iter()
        .zip(&output_shape[2..])
        .any(|(s, o)| s > o)
    {
        return Err(UnpoolError::OutputSmallerThanIndexPlane {
            output: output_shape[2..].to_vec(),
            index_plane,
        });
    }
    Ok(UnpoolPlan {
        input_shape: x_shape.to_vec(),
        output_shape,
        index_plane,
        layout,
    })
}

/// Checks that indices of `dtype` can address every valid position of `plan`.
///
/// ```
/// use burn::tensor::{DType, TensorData};
/// use burn_unpool::{IndexLayout, MaxUnpoolOptions, checks};
///
/// let options = MaxUnpoolOptions::new([1, 1]).with_output_size([1 << 16, 1 << 16]);
/// let plan = checks::plan(&[1, 1, 1, 1], &[1, 1, 1, 1], &options).unwrap();
/// assert!(checks::index_dtype(DType::I64, &plan).is_ok());
/// assert!(checks::index_dtype(DType::I32, &plan).is_err()); // 2^32 positions
/// ```
pub fn index_dtype(dtype: DType, plan: &UnpoolPlan) -> Result<(), UnpoolError> {
    let max_index = plan.index_range_end().saturating_sub(1);
    match dtype {
        DType::I64 => Ok(()),
        DType::I32 if max_index <= i32::MAX as usize => Ok(()),
        DType::I32 => Err(UnpoolError::IndexDTypeTooNarrow { dtype, max_index }),
        dtype => Err(UnpoolError::IndexDType { dtype }),
    }
}

/// The error for the element at flat position `element` of `indices` holding `value`.
///
/// ```
/// use burn_unpool::{MaxUnpoolOptions, checks};
///
/// let plan = checks::plan(&[1, 2, 2], &[1, 2, 2], &MaxUnpoolOptions::new([2])).unwrap();
/// let message = checks::index_error(&plan, 3, 9).to_string();
/// assert!(message.contains("index 9 at position [0, 1, 1]"));
/// assert!(message.contains("[0, 4)"));
/// ```
pub fn index_error(plan: &UnpoolPlan, element: usize, value: i64) -> UnpoolError {
    let mut position = vec![0; plan.input_shape.len()];
    let mut rest = element;
    for (p, &dim) in position.iter_mut().zip(&plan.input_shape).rev() {
        *p = rest % dim;
        rest /= dim;
    }
    UnpoolError::IndexOutOfRange {
        position,
        value,
        layout: plan.layout,
        range_end: plan.index_range_end(),
        output: plan.output_shape.clone(),
    }
}

/// Checks every index value (read on the host) against `plan`, reporting the first one out of range.
///
/// ```
/// use burn::tensor::TensorData;
/// use burn_unpool::{MaxUnpoolOptions, checks};
///
/// let plan = checks::plan(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
/// assert!(checks::index_values(&TensorData::from([[[0i64, 3]]]), &plan).is_ok());
/// let err = checks::index_values(&TensorData::from([[[0i32, 4]]]), &plan).unwrap_err();
/// assert!(err.to_string().contains("index 4 at position [0, 0, 1]"));
/// ```
pub fn index_values(indices: &TensorData, plan: &UnpoolPlan) -> Result<(), UnpoolError> {
    let slice_error = |_| UnpoolError::IndexDType {
        dtype: indices.dtype(),
    };
    match indices.dtype() {
        DType::I32 => crate::kernel::winners(indices.as_slice::<i32>().map_err(slice_error)?, plan),
        DType::I64 => crate::kernel::winners(indices.as_slice::<i64>().map_err(slice_error)?, plan),
        dtype => return Err(UnpoolError::IndexDType { dtype }),
    }
    .map(drop)
}

/// Unwraps a check, panicking with its message: the crate's one error style.
#[track_caller]
pub(crate) fn or_panic<T>(result: Result<T, UnpoolError>) -> T {
    result.unwrap_or_else(|err| panic!("{err}"))
}

/// Checks that an output gradient has the output's shape.
pub fn gradient_shape(grad: &[usize], plan: &UnpoolPlan) -> Result<(), UnpoolError> {
    if grad == plan.output_shape.as_slice() {
        Ok(())
    } else {
        Err(UnpoolError::GradientShape {
            expected: plan.output_shape.clone(),
            got: grad.to_vec(),
        })
    }
}
