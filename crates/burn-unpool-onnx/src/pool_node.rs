//! A `MaxPool` node moved to this crate's domain, read and checked at build time.

use burn_unpool_shape::{AutoPad, onnx_pads_to_pairs, pool_output_size};
use onnx_ir::{ArgType, CustomNode, DType, TensorType};

use crate::node::{NodeError, NonNegative, Positive, entries, tensor};
use crate::rewrite::NAME_ATTRIBUTE;

/// A checked `MaxPool` node.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PoolNode {
    pub x: TensorType,
    pub kernel_shape: Vec<usize>,
    pub strides: Option<Vec<usize>>,
    pub pads: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub ceil_mode: bool,
    pub auto_pad: AutoPad,
    pub storage_order: i64,
}

impl PoolNode {
    /// Reads and checks `node`.
    pub fn read(node: &CustomNode) -> Result<Self, NodeError> {
        let name = node.attrs.get_string(NAME_ATTRIBUTE).unwrap_or(&node.name);
        let label = format!("MaxPool node '{name}'");
        let invalid = |what: String| NodeError::Invalid {
            node: label.clone(),
            what,
        };
        // A third output, X's shape, is added by `rewrite_index_arithmetic` for the unpools that
        // take the pool's indices.
        if node.inputs.len() != 1 || !(1..=3).contains(&node.outputs.len()) {
            return Err(invalid(format!(
                "expects 1 input (X) and 1 or 2 outputs (Y, optional Indices), got {} and {}",
                node.inputs.len(),
                node.outputs.len()
            )));
        }
        let x = tensor(&node.inputs[0], &label, "X")?;
        if matches!(x.dtype, DType::Bool(_)) {
            return Err(invalid("X must be a numeric tensor, got Bool".into()));
        }
        if !(3..=5).contains(&x.rank) {
            return Err(NodeError::Rank {
                node: label,
                rank: x.rank,
            });
        }
        let dims = x.rank - 2;
        let Some(kernel) = node.attrs.get_i64s("kernel_shape") else {
            return Err(NodeError::MissingKernelShape { node: label });
        };
        let kernel_shape = entries(&label, "kernel_shape", kernel, dims, Positive)?;
        let per_axis = |name, len, range| {
            node.attrs
                .get_i64s(name)
                .map(|values| entries(&label, name, values, len, range))
                .transpose()
        };
        let strides = per_axis("strides", dims, Positive)?;
        let pads = per_axis("pads", 2 * dims, NonNegative)?;
        let dilations = per_axis("dilations", dims, Positive)?;
        let auto_pad = match node.attrs.get_string("auto_pad") {
            None => AutoPad::NotSet,
            Some(value) => AutoPad::parse(value).ok_or_else(|| {
                invalid(format!(
                    "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got {value:?}"
                ))
            })?,
        };
        // ONNX: `pads` "cannot be used simultaneously with auto_pad"; zeros say nothing.
        let padded = pads.as_ref().is_some_and(|p| p.iter().any(|&p| p != 0));
        if auto_pad != AutoPad::NotSet && padded {
            return Err(invalid(format!(
                "pads {:?} contradict auto_pad {auto_pad:?}, which computes the padding",
                pads.as_deref().unwrap_or_default()
            )));
        }
        let flag = |name| node.attrs.get_i64(name).unwrap_or(0);
        let ceil_mode = match flag("ceil_mode") {
            0 => false,
            1 => true,
            other => return Err(invalid(format!("ceil_mode must be 0 or 1, got {other}"))),
        };
        let storage_order = flag("storage_order");
        if !matches!(storage_order, 0 | 1) {
            return Err(invalid(format!(
                "storage_order must be 0 or 1, got {storage_order}"
            )));
        }
        Ok(Self {
            x,
            kernel_shape,
            strides,
            pads,
            dilations,
            ceil_mode,
            auto_pad,
            storage_order,
        })
    }

    /// The pooled shape, where `X`'s shape is known at build time.
    fn static_shape(&self) -> Option<Vec<Option<usize>>> {
        let shape = self.x.static_shape.as_ref()?;
        let dims = self.kernel_shape.len();
        let pads = onnx_pads_to_pairs(&self.pads.clone().unwrap_or_else(|| vec![0; 2 * dims]));
        let spatial = (0..dims).map(|a| {
            let input = shape.get(2 + a).copied().flatten()?;
            let stride = self.strides.as_ref().map_or(1, |s| s[a]);
            let dilation = self.dilations.as_ref().map_or(1, |d| d[a]);
            let kernel = self.kernel_shape[a];
            let padding = self
                .auto_pad
                .padding(input, kernel, stride, dilation)
                .unwrap_or(pads[a]);
            let size = pool_output_size(input, kernel, stride, padding, dilation, self.ceil_mode);
            usize::try_from(size).ok()
        });
        Some(shape[..2].iter().copied().chain(spatial).collect())
    }

    /// The types of `Y` (`X`'s dtype) and `Indices` (int64), of `X`'s rank, and of `X`'s shape.
    pub fn output_types(&self) -> [ArgType; 3] {
        let static_shape = self.static_shape();
        let typed = |dtype| {
            ArgType::Tensor(TensorType {
                dtype,
                rank: self.x.rank,
                static_shape: static_shape.clone(),
            })
        };
        [
            typed(self.x.dtype),
            typed(DType::I64),
            ArgType::Shape(self.x.rank),
        ]
    }
}
