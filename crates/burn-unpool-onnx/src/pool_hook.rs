//! The burn-onnx hook for the `MaxPool` nodes burn-onnx cannot import (3-d pools, integer
//! inputs), moved to [`DOMAIN`] by [`rewrite_max_pool`](crate::rewrite_max_pool).

use burn_onnx::ext::proc_macro2::{Literal, TokenStream};
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, CodegenContext, CustomNode, CustomOp, OpsetRange, ProcessError, arg_to_ident,
};
use burn_unpool_shape::AutoPad;

use crate::index_arithmetic::INDICES_FOR_UNPOOL;
use crate::pool_node::PoolNode;
use crate::rewrite::{DOMAIN, MAX_POOL};

/// The burn-onnx [`CustomOp`] for `MaxPool` nodes moved to [`DOMAIN`]: it generates a call to
/// `burn_unpool::onnx::max_pool_onnx`, which returns `Y` and the `Indices` in ONNX's layout
/// (global, `storage_order` 0 or 1), for every spatial rank and value kind. Register it on a
/// `burn_onnx::ModelGen` beside [`MaxUnpoolOp`](crate::MaxUnpoolOp) when you drive burn-onnx
/// yourself.
#[derive(Clone, Debug, Default)]
pub struct MaxPoolOp;

impl CustomOp for MaxPoolOp {
    fn op_type(&self) -> &str {
        MAX_POOL
    }

    fn domain(&self) -> &str {
        DOMAIN
    }

    /// `MaxPool` has its `Indices` output from opset 8 (`ceil_mode` from 10, `dilations` from 11).
    fn opset_range(&self) -> OpsetRange {
        OpsetRange::from_min(8)
    }

    fn infer_output_types(&self, node: &CustomNode) -> Result<Vec<ArgType>, ProcessError> {
        let pool = PoolNode::read(node)?;
        let types = pool.output_types();
        Ok(types.into_iter().take(node.outputs.len()).collect())
    }

    fn forward(
        &self,
        node: &CustomNode,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let pool = PoolNode::read(node)?;
        let x = ctx.arg(&node.inputs[0]);
        let attributes = attributes(&pool);
        let y = arg_to_ident(&node.outputs[0]);
        // Indices only this crate's unpooling reads come in the device's integer dtype.
        let function = match node.attrs.get_i64(INDICES_FOR_UNPOOL) {
            Some(1) => quote! { burn_unpool::onnx::max_pool_onnx_for_unpool },
            _ => quote! { burn_unpool::onnx::max_pool_onnx },
        };
        let call = quote! { #function(#x, &#attributes) };
        let named = |i: usize| node.outputs.get(i).filter(|o| !o.name.is_empty());
        Ok(match (named(1), named(2)) {
            (Some(indices), Some(shape)) => {
                // X's shape, read before X moves into the pool.
                let indices = arg_to_ident(indices);
                let shape = arg_to_ident(shape);
                quote! {
                    let (#y, #indices, #shape) = {
                        let x = #x;
                        let shape = x.dims().map(|d| d as i64);
                        let (y, indices) = #function(x, &#attributes);
                        (y, indices, shape)
                    };
                }
            }
            (Some(indices), None) => {
                let indices = arg_to_ident(indices);
                quote! { let (#y, #indices) = #call; }
            }
            _ => quote! { let #y = #call.0; },
        })
    }
}

/// `burn_unpool::onnx::MaxPoolAttributes` for the node, as an expression.
fn attributes(pool: &PoolNode) -> TokenStream {
    let list = |values: &[usize]| {
        let values = values.iter().map(|&v| Literal::usize_unsuffixed(v));
        quote! { vec![#(#values),*] }
    };
    let optional = |values: &Option<Vec<usize>>, setter: TokenStream| {
        values.as_deref().map(|v| {
            let v = list(v);
            quote! { .#setter(#v) }
        })
    };
    let kernel = list(&pool.kernel_shape);
    let strides = optional(&pool.strides, quote!(with_strides));
    let pads = optional(&pool.pads, quote!(with_pads));
    let dilations = optional(&pool.dilations, quote!(with_dilations));
    let ceil_mode = pool.ceil_mode.then(|| quote! { .with_ceil_mode(true) });
    let auto_pad = match pool.auto_pad {
        AutoPad::NotSet => None,
        AutoPad::Valid => Some(quote!(Valid)),
        AutoPad::SameUpper => Some(quote!(SameUpper)),
        AutoPad::SameLower => Some(quote!(SameLower)),
    }
    .map(|variant| quote! { .with_auto_pad(burn_unpool::onnx::AutoPad::#variant) });
    let storage_order = (pool.storage_order != 0).then(|| {
        let order = Literal::i64_unsuffixed(pool.storage_order);
        quote! { .with_storage_order(#order) }
    });
    quote! {
        burn_unpool::onnx::MaxPoolAttributes::new(#kernel)
            #strides #pads #dilations #ceil_mode #auto_pad #storage_order
    }
}
