//! ONNX semantics: global indices, `storage_order`, `MaxUnpool`, and `MaxPool` with indices.

mod indices;
mod max_pool;
mod traced;

use burn::tensor::{Int, Tensor};
use burn_unpool_shape::onnx_pads_to_pairs;

pub use burn_unpool_shape::{AutoPad, OutputShapeRule};
pub use indices::{
    column_major_to_row_major, global_to_per_plane, per_plane_to_global, row_major_to_column_major,
};
pub use max_pool::{MaxPoolAttributes, max_pool_onnx, max_pool_onnx_for_unpool};
pub use traced::{PoolIndexSource, plane_offsets};

use crate::error::{UnpoolError, or_panic};
use crate::geometry::PoolGeometry;
use crate::op::{forward_plan, unpool};
use crate::plan::{IndexPlane, UnpoolRequest};
use crate::{IndexLayout, OutputSize};

/// The attributes of an ONNX `MaxUnpool` node (opsets 9, 11, 22).
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
    /// The pool the indices were traced to; `None` for other indices (they are checked).
    pub pool_indices: Option<PoolIndexSource>,
}

impl MaxUnpoolAttributes {
    /// Attributes with the given `kernel_shape` and ONNX's defaults for the rest.
    pub fn new(kernel_shape: Vec<usize>) -> Self {
        Self {
            kernel_shape,
            strides: None,
            pads: None,
            rule: OutputShapeRule::default(),
            pool_indices: None,
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

    /// Says the indices given to [`max_unpool_onnx`] are a pool's, re-based as `source` describes.
    pub fn with_pool_indices(mut self, source: PoolIndexSource) -> Self {
        self.pool_indices = Some(source);
        self
    }

    /// Whether the two [`OutputShapeRule`]s place the indices differently for `output_shape`.
    /// ```
    /// use burn_unpool::onnx::MaxUnpoolAttributes;
    ///
    /// let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
    /// assert!(!attributes.rules_differ(&[1, 1, 2, 2], &[1, 1, 4, 4]).unwrap());
    /// assert!(attributes.rules_differ(&[1, 1, 2, 2], &[1, 1, 5, 5]).unwrap());
    /// ```
    pub fn rules_differ(
        &self,
        x_shape: &[usize],
        output_shape: &[usize],
    ) -> Result<bool, UnpoolError> {
        let inferred = self.request(None)?.plan(x_shape, x_shape)?;
        Ok(output_shape.get(2..) != Some(&inferred.output_shape()[2..]))
    }

    fn request(&self, output_shape: Option<&[usize]>) -> Result<UnpoolRequest, UnpoolError> {
        let dims = self.kernel_shape.len();
        let length = |name, values: Option<&[usize]>, expected: usize| match values {
            Some(v) if v.len() != expected => Err(UnpoolError::OnnxLength {
                name,
                expected,
                values: v.to_vec(),
            }),
            _ => Ok(()),
        };
        length("strides", self.strides.as_deref(), dims)?;
        length("pads", self.pads.as_deref(), 2 * dims)?;
        length("output_shape", output_shape, dims + 2)?;
        let index_plane = match (output_shape, self.rule) {
            (Some(_), OutputShapeRule::Reference) => IndexPlane::Inferred,
            _ => IndexPlane::Output,
        };
        Ok(UnpoolRequest {
            geometry: PoolGeometry {
                kernel_size: self.kernel_shape.clone(),
                stride: self.strides.clone().unwrap_or_else(|| vec![1; dims]),
                padding: onnx_pads_to_pairs(self.pads.as_deref().unwrap_or(&vec![0; 2 * dims])),
                dilation: vec![1; dims],
                ceil_mode: false,
            },
            output_size: output_shape.map(|shape| OutputSize::Full(shape.to_vec())),
            layout: IndexLayout::Global,
            index_plane,
            check_indices: true,
            pool_input: None,
        })
    }
}

/// ONNX `MaxUnpool` with global indices, placed by `attributes.rule`; the last duplicate wins.
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::{MaxUnpoolAttributes, OutputShapeRule, max_unpool_onnx};
///
/// // The ONNX operator doc's `with_output_shape` example, under the reference's rule.
/// let device = Device::flex();
/// let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], &device);
/// let indices = Tensor::<4, Int>::from_ints([[[[5, 7], [13, 15]]]], &device);
/// let attributes = MaxUnpoolAttributes::new(vec![2, 2])
///     .with_strides(vec![2, 2])
///     .with_rule(OutputShapeRule::Reference);
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
/// With [`MaxUnpoolAttributes::pool_indices`], indices provably in their planes go unchecked.
/// # Panics
/// For bad attributes or `output_shape`, an out-of-range index, or a pool of another rank, N or C.
pub fn max_unpool_onnx<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    attributes: &MaxUnpoolAttributes,
    output_shape: Option<&[usize]>,
) -> Tensor<R> {
    let request = or_panic(attributes.request(output_shape));
    let Some(source) = &attributes.pool_indices else {
        let plan = or_panic(forward_plan(&x, &indices, &request));
        return unpool(x, indices, plan);
    };
    source.assert_planes_of(&x.dims());
    let plan = or_panic(forward_plan(&x, &indices, &request));
    if source.indices_are_the_pools(plan.index_plane_len()) {
        return unpool(x, indices, plan.with_indices_trusted());
    }
    let indices = source.rebase(indices);
    let plan = or_panic(forward_plan(&x, &indices, &request));
    unpool(x, indices, plan)
}

/// [`max_unpool_onnx`] with `output_shape` as a runtime int tensor, read on the host.
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

/// [`max_unpool_onnx`] with `output_shape` as ONNX int64 values.
/// # Panics
/// As [`max_unpool_onnx`], and for an entry that is negative or past `usize::MAX`.
pub fn max_unpool_onnx_i64<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    attributes: &MaxUnpoolAttributes,
    output_shape: &[i64],
) -> Tensor<R> {
    let shape = shape_from_i64(output_shape, "MaxUnpool: output_shape");
    max_unpool_onnx(x, indices, attributes, Some(&shape))
}

pub(crate) fn shape_from_i64(shape: &[i64], what: &str) -> Vec<usize> {
    shape
        .iter()
        .map(|&d| match usize::try_from(d) {
            Ok(d) => d,
            Err(_) if d < 0 => panic!("{what} has a negative entry: {shape:?}"),
            Err(_) => panic!(
                "{what} has an entry, {d}, past usize::MAX ({}) on this target: {shape:?}",
                usize::MAX
            ),
        })
        .collect()
}
