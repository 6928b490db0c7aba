//! The burn-onnx hook for the `PlaneOffsets` nodes that
//! [`rewrite_index_arithmetic`](crate::rewrite_index_arithmetic) puts in place of PyTorch's 1x1
//! base-offset pools.

use burn_onnx::ext::proc_macro2::TokenStream;
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, CodegenContext, CustomNode, CustomOp, DType, OpsetRange, ProcessError, TensorType,
    arg_to_ident,
};

use crate::index_arithmetic::PLANE_OFFSETS;
use crate::node::{NodeError, tensor};
use crate::rewrite::DOMAIN;

/// The burn-onnx [`CustomOp`] for `PlaneOffsets` nodes: `burn_unpool::onnx::plane_offsets` of its
/// input's shape, an int64 `[N, C, 1, ..]` tensor (the input itself is not read). Register it on a
/// `burn_onnx::ModelGen` beside [`MaxUnpoolOp`](crate::MaxUnpoolOp) when you drive burn-onnx
/// yourself.
#[derive(Clone, Debug, Default)]
pub struct PlaneOffsetsOp;

impl PlaneOffsetsOp {
    fn input(node: &CustomNode) -> Result<TensorType, NodeError> {
        let label = format!("{PLANE_OFFSETS} node '{}'", node.name);
        let [input] = node.inputs.as_slice() else {
            return Err(NodeError::Invalid {
                node: label,
                what: format!("expects 1 input, got {}", node.inputs.len()),
            });
        };
        let x = tensor(input, &label, "X")?;
        if x.rank < 3 {
            return Err(NodeError::Rank {
                node: label,
                rank: x.rank,
            });
        }
        Ok(x)
    }
}

impl CustomOp for PlaneOffsetsOp {
    fn op_type(&self) -> &str {
        PLANE_OFFSETS
    }

    fn domain(&self) -> &str {
        DOMAIN
    }

    fn opset_range(&self) -> OpsetRange {
        OpsetRange::from_min(1)
    }

    fn infer_output_types(&self, node: &CustomNode) -> Result<Vec<ArgType>, ProcessError> {
        let x = Self::input(node)?;
        let static_shape = x.static_shape.as_ref().map(|shape| {
            let mut planes = vec![Some(1); x.rank];
            planes[..2].copy_from_slice(&shape[..2]);
            planes
        });
        Ok(vec![ArgType::Tensor(TensorType {
            dtype: DType::I64,
            rank: x.rank,
            static_shape,
        })])
    }

    fn forward(
        &self,
        node: &CustomNode,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        Self::input(node)?;
        let x = ctx.arg(&node.inputs[0]);
        let output = arg_to_ident(&node.outputs[0]);
        Ok(quote! {
            let #output = {
                let x = #x;
                burn_unpool::onnx::plane_offsets(x.dims(), &x.device())
            };
        })
    }
}
