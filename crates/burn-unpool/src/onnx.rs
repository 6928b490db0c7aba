//! ONNX semantics: global indices, `storage_order`, and the `MaxUnpool` operator itself.
//!
//! ONNX indices address the whole tensor (`[0, N*C*O1*..*Ok)`), while Burn's pooling yields
//! per-plane ones; the converters move between the two. [`max_unpool_onnx`] is the entry point
//! that imported ONNX models call.

use burn::tensor::{DType, Int, Tensor, TensorData};

use crate::checks::{self, Geometry, UnpoolError, or_panic};
use crate::functional::{check_index_values_on_device, unpool_with_plan};
use crate::{IndexLayout, UnpoolPlan};

/// How an ONNX `output_shape` input places the indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputShapeRule {
    /// The ONNX reference implementation and the official backend test
    /// (`test_maxunpool_export_with_output_shape`): the indices are read in the shape inferred from
    /// the attributes and that block is placed at the origin of the `output_shape` output.
    #[default]
    Reference,
    /// ONNX Runtime (and PyTorch): the indices are read in the `output_shape` itself.
    IndicesInOutputShape,
}

/// The attributes of an ONNX `MaxUnpool` node (opsets 9, 11, 22).
///
/// ```
/// use burn_unpool::onnx::MaxUnpoolAttributes;
///
/// let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
/// assert_eq!(attributes.pads, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaxUnpoolAttributes {
    /// `kernel_shape` (required).
    pub kernel_shape: Vec<usize>,
    /// `strides`; ONNX defaults to 1 per axis.
    pub strides: Option<Vec<usize>>,
    /// `pads` as `[x1_begin, x2_begin.., x1_end, x2_end..]`; ONNX defaults to 0.
    pub pads: Option<Vec<usize>>,
    /// The placement rule for an `output_shape` input.
    pub rule: OutputShapeRule,
}

impl MaxUnpoolAttributes {
    /// Attributes with the given `kernel_shape` and ONNX's defaults for the rest.
    pub fn new(kernel_shape: Vec<usize>) -> Self {
        Self {
            kernel_shape,
            strides: None,
            pads: None,
            rule: OutputShapeRule::Reference,
        }
    }

    /// Sets `strides`.
    pub fn with_strides(mut self, strides: Vec<usize>) -> Self {
        self.strides = Some(strides);
        self
    }

    /// Sets `pads`.
    pub fn with_pads(mut self, pads: Vec<usize>) -> Self {
        self.pads = Some(pads);
        self
    }

    /// Sets the placement rule for `output_shape`.
    pub fn with_rule(mut self, rule: OutputShapeRule) -> Self {
        self.rule = rule;
        self
    }

    /// The spatial shape inferred from the attributes for an input of shape `x_shape`:
    /// `(I - 1) * stride - (pad_begin + pad_end) + kernel` per axis.
    pub fn inferred_spatial(&self, x_shape: &[usize]) -> Result<Vec<usize>, UnpoolError> {
        let dims = self.kernel_shape.len();
        let length = |name, values: &Option<Vec<usize>>, expected: usize| match values {
            Some(v) if v.len() != expected => Err(UnpoolError::OnnxLength {
                name,
                expected,
                values: v.clone(),
            }),
            _ => Ok(()),
        };
        length("strides", &self.strides, dims)?;
        length("pads", &self.pads, 2 * dims)?;
        let strides = self.strides.clone().unwrap_or_else(|| vec![1; dims]);
        let pads = self.pads.clone().unwrap_or_else(|| vec![0; 2 * dims]);
        let padding: Vec<(usize, usize)> = (0..dims).map(|a| (pads[a], pads[dims + a])).collect();
        let geometry = Geometry {
            kernel_size: &self.kernel_shape,
            stride: &strides,
            padding: &padding,
            dilation: &vec![1; dims],
        };
        checks::inferred_spatial(x_shape, x_shape, &geometry)
    }

    /// Whether the two [`OutputShapeRule`]s place the indices differently for this input and
    /// `output_shape`: exactly when its spatial part differs from the inferred shape.
    pub fn rules_differ(
        &self,
        x_shape: &[usize],
        output_shape: &[usize],
    ) -> Result<bool, UnpoolError> {
        let inferred = self.inferred_spatial(x_shape)?;
        Ok(output_shape.get(2..) != Some(inferred.as_slice()))
    }

    /// The checked plan for `x_shape`, `indices_shape` and an optional `output_shape`.
    pub fn plan(
        &self,
        x_shape: &[usize],
        indices_shape: &[usize],
        output_shape: Option<&[usize]>,
    ) -> Result<UnpoolPlan, UnpoolError> {
        if x_shape != indices_shape {
            return Err(UnpoolError::ShapeMismatch {
                x: x_shape.to_vec(),
                indices: indices_shape.to_vec(),
            });
        }
        let inferred = self.inferred_spatial(x_shape)?;
        let Some(output_shape) = output_shape else {
            let output: Vec<usize> = x_shape[..2]
                .iter()
                .copied()
                .chain(inferred.clone())
                .collect();
            return checks::finish_plan(x_shape, output, inferred, IndexLayout::Global);
        };
        if output_shape.len() != x_shape.len() {
            return Err(UnpoolError::OnnxLength {
                name: "output_shape",
                expected: x_shape.len(),
                values: output_shape.to_vec(),
            });
        }
        if output_shape[..2] != x_shape[..2] {
            return Err(UnpoolError::FullOutputSize {
                output: output_shape.to_vec(),
                x: x_shape.to_vec(),
            });
        }
        let index_plane = match self.rule {
            OutputShapeRule::Reference => inferred,
            OutputShapeRule::IndicesInOutputShape => output_shape[2..].to_vec(),
        };
        checks::finish_plan(
            x_shape,
            output_shape.to_vec(),
            index_plane,
            IndexLayout::Global,
        )
    }
}

/// ONNX `MaxUnpool`: unpools `x` with global indices, as ONNX defines it.
///
/// Without `output_shape` the output has the inferred shape. With it, the placement follows
/// `attributes.rule` (the ONNX reference by default). Duplicates: last write wins.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::{MaxUnpoolAttributes, max_unpool_onnx};
///
/// // The ONNX operator doc's `with_output_shape` example.
/// let device = Device::flex();
/// let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], &device);
/// let indices = Tensor::<4, Int>::from_ints([[[[5, 7], [13, 15]]]], &device);
/// let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
/// let y = max_unpool_onnx(x, indices, &attributes, Some(&[1, 1, 5, 5]));
/// let expected = TensorData::from([[[
///     [0.0f32, 0.0, 0.0, 0.0, 0.0],
///     [0.0, 5.0, 0.0, 6.0, 0.0],
///     [0.0, 0.0, 0.0, 0.0, 0.0],
///     [0.0, 7.0, 0.0, 8.0, 0.0],
///     [0.0, 0.0, 0.0, 0.0, 0.0],
/// ]]]);
/// y.into_data().assert_eq(&expected, false);
/// ```
///
/// # Panics
/// With a message naming the problem and the values for a malformed attribute, a wrong
/// `output_shape`, or an index out of range.
pub fn max_unpool_onnx<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    attributes: &MaxUnpoolAttributes,
    output_shape: Option<&[usize]>,
) -> Tensor<R> {
    let plan = or_panic(attributes.plan(&x.dims(), &indices.dims(), output_shape));
    or_panic(checks::index_dtype(indices.dtype(), &plan));
    or_panic(check_index_values_on_device(&indices, &plan));
    unpool_with_plan(x, indices, plan)
}

/// [`max_unpool_onnx`] with `output_shape` given as a runtime int tensor (an ONNX graph input).
///
/// Reads the tensor's `R` values on the host to size the output.
pub fn max_unpool_onnx_dynamic<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    attributes: &MaxUnpoolAttributes,
    output_shape: Tensor<1, Int>,
) -> Tensor<R> {
    let shape = output_shape.into_data().convert::<i64>();
    let shape: Vec<i64> = shape.try_to_vec::<i64>().expect("an int tensor");
    max_unpool_onnx_i64(x, indices, attributes, &shape)
}

/// [`max_unpool_onnx`] with `output_shape` as ONNX int64 values, e.g. a shape computed in the
/// graph.
///
/// # Panics
/// As [`max_unpool_onnx`], and for a negative entry of `output_shape`.
pub fn max_unpool_onnx_i64<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    attributes: &MaxUnpoolAttributes,
    output_shape: &[i64],
) -> Tensor<R> {
    let shape: Vec<usize> = output_shape
        .iter()
        .map(|&d| {
            usize::try_from(d).unwrap_or_else(|_| {
                panic!("MaxUnpool: output_shape has a negative entry: {output_shape:?}")
            })
        })
        .collect();
    max_unpool_onnx(x, indices, attributes, Some(&shape))
}

/// Per-plane indices (Burn, PyTorch) to global ones (ONNX): `global = per_plane + (n*C + c) * P`,
/// where `P` is the number of elements of one output plane.
///
/// The result is i64 when the largest global index does not fit the indices' dtype.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::per_plane_to_global;
///
/// let device = Device::flex();
/// let indices = Tensor::<3, Int>::from_ints([[[1, 3], [0, 2]]], &device);
/// let global = per_plane_to_global(indices, 4);
/// global.into_data().assert_eq(&TensorData::from([[[1i32, 3], [4, 6]]]), false);
/// ```
pub fn per_plane_to_global<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets(&indices, plane_len);
    widen_for(indices, offsets.max_index) + offsets.tensor
}

/// Global indices (ONNX) to per-plane ones (Burn, PyTorch): `per_plane = global - (n*C + c) * P`.
///
/// An index that pointed into another plane comes out negative or `>= P`, and the unpooling
/// reports it.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::global_to_per_plane;
///
/// let device = Device::flex();
/// let indices = Tensor::<3, Int>::from_ints([[[1, 3], [4, 6]]], &device);
/// let per_plane = global_to_per_plane(indices, 4);
/// per_plane.into_data().assert_eq(&TensorData::from([[[1i32, 3], [0, 2]]]), false);
/// ```
pub fn global_to_per_plane<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets(&indices, plane_len);
    widen_for(indices, offsets.max_index) - offsets.tensor
}

/// ONNX `MaxPool` indices computed with `storage_order = 1` (column-major inside each plane) to
/// row-major ones, keeping the plane offset of global indices. `input_spatial` is the spatial shape
/// of the pool's input.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::column_major_to_row_major;
///
/// // ONNX `maxpool_with_argmax_2d_precomputed_strides`: 5x5 input, storage_order = 1.
/// let device = Device::flex();
/// let indices = Tensor::<4, Int>::from_ints([[[[6, 16], [8, 18]]]], &device);
/// let row_major = column_major_to_row_major(indices, &[5, 5]);
/// row_major.into_data().assert_eq(&TensorData::from([[[[6i32, 8], [16, 18]]]]), false);
/// ```
pub fn column_major_to_row_major<const R: usize>(
    indices: Tensor<R, Int>,
    input_spatial: &[usize],
) -> Tensor<R, Int> {
    let plane_len: usize = input_spatial.iter().product();
    let plane_len_i = plane_len as i64;
    let plane_start = indices
        .clone()
        .div_scalar(plane_len_i)
        .mul_scalar(plane_len_i);
    let mut rest = indices.clone() - plane_start.clone();
    // Column-major: the first axis varies fastest. Peel coordinates off in that order.
    let mut row_major = rest.zeros_like();
    let mut row_stride: i64 = plane_len_i;
    for &dim in input_spatial {
        let dim = dim as i64;
        row_stride /= dim;
        let coordinate = rest.clone().remainder_scalar(dim);
        rest = rest.div_scalar(dim);
        row_major = row_major + coordinate.mul_scalar(row_stride);
    }
    plane_start + row_major
}

struct PlaneOffsets<const R: usize> {
    tensor: Tensor<R, Int>,
    max_index: usize,
}

/// `(n*C + c) * P` broadcast over `indices`' shape, with the dtype `indices` will have.
fn plane_offsets<const R: usize>(indices: &Tensor<R, Int>, plane_len: usize) -> PlaneOffsets<R> {
    let dims = indices.dims();
    let planes = dims[0] * dims.get(1).copied().unwrap_or(1);
    let max_index = (planes * plane_len).saturating_sub(1);
    let offsets: Vec<i64> = (0..planes).map(|p| (p * plane_len) as i64).collect();
    let mut shape = [1; R];
    shape[0] = dims[0];
    if R > 1 {
        shape[1] = dims[1];
    }
    let device = indices.device();
    let dtype = widened_dtype(indices.dtype(), max_index);
    let tensor = Tensor::<R, Int>::from_data(TensorData::new(offsets, shape), (&device, dtype));
    PlaneOffsets { tensor, max_index }
}

fn widened_dtype(dtype: DType, max_index: usize) -> DType {
    if dtype == DType::I32 && max_index > i32::MAX as usize {
        DType::I64
    } else {
        dtype
    }
}

fn widen_for<const R: usize>(indices: Tensor<R, Int>, max_index: usize) -> Tensor<R, Int> {
    let dtype = widened_dtype(indices.dtype(), max_index);
    if dtype == indices.dtype() {
        indices
    } else {
        indices.cast(dtype)
    }
}
