//! ONNX `MaxPool` with its `Indices`, for the pools burn-onnx does not import (3-d, integer).

use burn::tensor::{DType, Int, Tensor};
use burn_unpool_shape::{AutoPad, onnx_pads_to_pairs};

use super::{per_plane_to_global, row_major_to_column_major};
use crate::UnpoolKind;
use crate::error::or_panic;
use crate::geometry::PoolGeometry;
use crate::op;
use crate::plan::{PoolPlan, global_index_dtype, pool_index_dtype};

/// The attributes of an ONNX `MaxPool` node (opsets 8 to 22).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaxPoolAttributes {
    /// `kernel_shape` (required).
    pub kernel_shape: Vec<usize>,
    /// `strides`; ONNX defaults to 1 per axis.
    pub strides: Option<Vec<usize>>,
    /// `pads` as `[x1_begin, x2_begin.., x1_end, x2_end..]` (default 0), for `auto_pad` `NotSet`.
    pub pads: Option<Vec<usize>>,
    /// `dilations`; ONNX defaults to 1 per axis.
    pub dilations: Option<Vec<usize>>,
    /// `ceil_mode`.
    pub ceil_mode: bool,
    /// `auto_pad`.
    pub auto_pad: AutoPad,
    /// `storage_order`: 0 for row-major indices, 1 for column-major ones.
    pub storage_order: i64,
}

impl MaxPoolAttributes {
    /// Attributes with the given `kernel_shape` and ONNX's defaults for the rest.
    pub fn new(kernel_shape: Vec<usize>) -> Self {
        Self {
            kernel_shape,
            strides: None,
            pads: None,
            dilations: None,
            ceil_mode: false,
            auto_pad: AutoPad::NotSet,
            storage_order: 0,
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

    /// Sets `dilations`.
    pub fn with_dilations(mut self, dilations: Vec<usize>) -> Self {
        self.dilations = Some(dilations);
        self
    }

    /// Sets `ceil_mode`.
    pub fn with_ceil_mode(mut self, ceil_mode: bool) -> Self {
        self.ceil_mode = ceil_mode;
        self
    }

    /// Sets `auto_pad`.
    pub fn with_auto_pad(mut self, auto_pad: AutoPad) -> Self {
        self.auto_pad = auto_pad;
        self
    }

    /// Sets `storage_order`.
    pub fn with_storage_order(mut self, storage_order: i64) -> Self {
        self.storage_order = storage_order;
        self
    }

    fn geometry(&self, input: &[usize]) -> PoolGeometry {
        let dims = self.kernel_shape.len();
        assert!(
            input.len() == dims,
            "MaxPool: kernel_shape {:?} has {dims} axes, X has {} spatial axes ({input:?})",
            self.kernel_shape,
            input.len()
        );
        let per_axis = |name, values: &Option<Vec<usize>>, len: usize, default| match values {
            Some(v) if v.len() != len => {
                panic!("MaxPool: {name} must have {len} entries, got {v:?}")
            }
            Some(v) => v.clone(),
            None => vec![default; len],
        };
        let stride = per_axis("strides", &self.strides, dims, 1);
        let dilation = per_axis("dilations", &self.dilations, dims, 1);
        let pads = per_axis("pads", &self.pads, 2 * dims, 0);
        assert!(
            matches!(self.storage_order, 0 | 1),
            "MaxPool: storage_order must be 0 or 1, got {}",
            self.storage_order
        );
        assert!(
            self.auto_pad == AutoPad::NotSet || pads.iter().all(|&p| p == 0),
            "MaxPool: pads {pads:?} contradict auto_pad {:?}, which computes the padding; set one \
             of them",
            self.auto_pad
        );
        let padding = match self.auto_pad {
            AutoPad::NotSet => onnx_pads_to_pairs(&pads),
            auto_pad => (0..dims)
                .map(|a| {
                    let padding =
                        auto_pad.padding(input[a], self.kernel_shape[a], stride[a], dilation[a]);
                    padding.expect("set for every auto_pad but NOTSET")
                })
                .collect(),
        };
        PoolGeometry {
            kernel_size: self.kernel_shape.clone(),
            stride,
            padding,
            dilation,
            ceil_mode: self.ceil_mode,
        }
    }
}

/// ONNX `MaxPool`: `Y` and int64 global `Indices`, each window's first maximum in scan order.
/// A device without 64-bit integers (SwiftShader; WebGPU untested) gets them as int32.
/// # Panics
/// For a malformed node, an axis without output, a window entirely in the padding, or global
/// indices past `i32::MAX` on a device without 64-bit integers.
#[track_caller]
pub fn max_pool_onnx<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    attributes: &MaxPoolAttributes,
) -> (Tensor<R, K>, Tensor<R, Int>) {
    let dtype = or_panic(global_index_dtype(&x.device(), &x.dims()));
    pool(x, attributes, dtype)
}

/// [`max_pool_onnx`] with `Indices` in the device's default integer dtype where it holds them.
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::{MaxPoolAttributes, max_pool_onnx, max_pool_onnx_for_unpool};
///
/// let device = Device::flex();
/// let x = Tensor::<1, Int>::arange(1..26, &device).float().reshape([1, 1, 5, 5]);
/// let attributes = MaxPoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
/// let (_, indices) = max_pool_onnx_for_unpool(x.clone(), &attributes);
/// let (_, onnx) = max_pool_onnx(x, &attributes);
/// assert_eq!(indices.dtype(), device.settings().int_dtype.into());
/// assert_eq!(indices.into_data().convert::<i64>(), onnx.into_data());
/// ```
/// # Panics
/// As [`max_pool_onnx`].
#[track_caller]
pub fn max_pool_onnx_for_unpool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    attributes: &MaxPoolAttributes,
) -> (Tensor<R, K>, Tensor<R, Int>) {
    let global_len = x.dims().iter().fold(1usize, |n, &d| n.saturating_mul(d));
    let dtype = or_panic(pool_index_dtype(&x.device(), global_len));
    pool(x, attributes, dtype)
}

#[track_caller]
fn pool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    attributes: &MaxPoolAttributes,
    index_dtype: DType,
) -> (Tensor<R, K>, Tensor<R, Int>) {
    let dims = x.dims();
    let input_spatial = &dims[2..];
    let pool = attributes.geometry(input_spatial);
    let plan = or_panic(PoolPlan::cached(&dims, &pool, index_dtype));
    if attributes.storage_order == 0 {
        return op::pool(x, plan.with_global_indices());
    }
    let (y, indices) = op::pool(x, plan);
    let indices = row_major_to_column_major(indices, input_spatial);
    let plane_len = input_spatial.iter().product();
    (y, per_plane_to_global(indices, plane_len).cast(index_dtype))
}
