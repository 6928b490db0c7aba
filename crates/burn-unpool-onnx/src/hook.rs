//! The burn-onnx hook: type inference and code generation for the rewritten `MaxUnpool` nodes.

use std::sync::{Arc, Mutex};

use burn_onnx::ext::proc_macro2::{Literal, TokenStream};
use burn_onnx::ext::quote::quote;
use burn_onnx::ext::{
    ArgType, CodegenContext, CustomNode, CustomOp, OpsetRange, ProcessError, arg_to_ident,
};

pub use burn_unpool_shape::OutputShapeRule;

use crate::index_arithmetic::SCATTER_PLACEMENT;
use crate::node::{OutputShapeInput, PoolShape, UnpoolNode};
use crate::rewrite::{DOMAIN, OP_TYPE};

/// The burn-onnx [`CustomOp`] for `MaxUnpool` nodes moved to [`DOMAIN`] by
/// [`rewrite_max_unpool`](crate::rewrite_max_unpool).
///
/// It checks each node at build time (errors name the node) and generates a call to
/// `burn_unpool::onnx::max_unpool_onnx`, so the imported model runs burn-unpool's kernels, checks
/// and autodiff. Register it on a `burn_onnx::ModelGen` when you drive burn-onnx yourself;
/// [`ModelGen`](crate::ModelGen) does both steps for you.
#[derive(Clone, Debug, Default)]
pub struct MaxUnpoolOp {
    rule: OutputShapeRule,
    notes: Arc<Mutex<Vec<String>>>,
}

impl MaxUnpoolOp {
    /// A hook that places the indices by `rule` when a model's `output_shape` differs from the
    /// inferred shape.
    pub fn new(rule: OutputShapeRule) -> Self {
        Self {
            rule,
            notes: Arc::default(),
        }
    }

    /// The build-time notes written so far: one per node whose `output_shape` may differ from the
    /// inferred shape, saying which rule places its indices. Shared by clones of this hook.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().expect("notes lock").clone()
    }

    fn note(&self, node: &UnpoolNode) {
        let rule = match self.rule {
            OutputShapeRule::Reference => {
                "the ONNX reference rule places them (indices read in the inferred shape, that \
                 block at the origin); OutputShapeRule::IndicesInOutputShape reads them in output_shape"
            }
            OutputShapeRule::IndicesInOutputShape => {
                "ONNX Runtime's rule places them (indices read in output_shape); \
                 OutputShapeRule::Reference reads them in the inferred shape"
            }
        };
        let inferred = node.inferred_spatial();
        let note = match (&node.output_shape, inferred) {
            (OutputShapeInput::Constant(shape), Some(inferred)) => {
                let same = shape[2..]
                    .iter()
                    .map(|&d| d as i128)
                    .eq(inferred.iter().copied());
                if same {
                    return;
                }
                format!(
                    "MaxUnpool node '{}': output_shape {shape:?} differs from the inferred spatial \
                     shape {inferred:?}, so the ONNX reference and ONNX Runtime place the indices \
                     differently; {rule}",
                    node.name
                )
            }
            (OutputShapeInput::Absent, _) => return,
            _ => format!(
                "MaxUnpool node '{}': output_shape or X's shape is only known at run time; where \
                 output_shape differs from the inferred shape, {rule}",
                node.name
            ),
        };
        self.notes.lock().expect("notes lock").push(note);
    }
}

impl CustomOp for MaxUnpoolOp {
    fn op_type(&self) -> &str {
        OP_TYPE
    }

    fn domain(&self) -> &str {
        DOMAIN
    }

    /// MaxUnpool exists from opset 9 (versions 9, 11 and 22; 22 adds bfloat16 values).
    fn opset_range(&self) -> OpsetRange {
        OpsetRange::from_min(9)
    }

    fn infer_output_types(&self, node: &CustomNode) -> Result<Vec<ArgType>, ProcessError> {
        let unpool = UnpoolNode::read(node)?;
        Ok(vec![unpool.output_type()])
    }

    fn forward(
        &self,
        node: &CustomNode,
        ctx: &mut CodegenContext<'_, '_>,
    ) -> Result<TokenStream, ProcessError> {
        let unpool = UnpoolNode::read(node)?;
        let scatter = node.attrs.get_i64(SCATTER_PLACEMENT) == Some(1);
        // Indices re-based by PyTorch's exporter arithmetic come from PyTorch, whose rule is the
        // default: a note that the rules differ would only alarm.
        let from_pytorch = unpool
            .pool
            .as_ref()
            .is_some_and(|p| p.plane_stride.is_some());
        let pytorch_rule = from_pytorch && self.rule == OutputShapeRule::IndicesInOutputShape;
        if !scatter && !pytorch_rule {
            self.note(&unpool);
        }
        let x = ctx.arg(&node.inputs[0]);
        let indices = ctx.arg(&node.inputs[1]);
        let output = arg_to_ident(&node.outputs[0]);
        let pool_shape = match unpool.pool.as_ref().map(|p| &p.input_shape) {
            Some(PoolShape::Shape) => Some(ctx.arg(&node.inputs[3])),
            _ => None,
        };
        // The unpoolings that replace a scatter place their indices in output_shape, as it did.
        let rule = match scatter {
            true => OutputShapeRule::IndicesInOutputShape,
            false => self.rule,
        };
        let attributes = attributes(&unpool, rule, pool_shape);
        let call = match unpool.output_shape {
            OutputShapeInput::Absent => quote! {
                burn_unpool::onnx::max_unpool_onnx(#x, #indices, &#attributes, None)
            },
            OutputShapeInput::Constant(shape) => {
                // The constant is a module value burn-onnx binds anyway; the literal is used.
                let constant = ctx.arg(&node.inputs[2]);
                let shape = shape.iter().map(|&d| Literal::usize_unsuffixed(d));
                quote! {{
                    let _ = #constant;
                    burn_unpool::onnx::max_unpool_onnx(#x, #indices, &#attributes, Some(&[#(#shape),*]))
                }}
            }
            OutputShapeInput::Tensor => {
                let shape = ctx.arg(&node.inputs[2]);
                quote! {
                    burn_unpool::onnx::max_unpool_onnx_dynamic(#x, #indices, &#attributes, #shape)
                }
            }
            OutputShapeInput::Shape => {
                let shape = ctx.arg(&node.inputs[2]);
                quote! {
                    burn_unpool::onnx::max_unpool_onnx_i64(#x, #indices, &#attributes, &#shape)
                }
            }
        };
        Ok(quote! { let #output = #call; })
    }
}

/// `burn_unpool::onnx::MaxUnpoolAttributes` for the node, as an expression; `pool_shape` is the
/// runtime shape of a traced pool's input.
fn attributes(
    node: &UnpoolNode,
    rule: OutputShapeRule,
    pool_shape: Option<TokenStream>,
) -> TokenStream {
    let list = |values: &[usize]| {
        let values = values.iter().map(|&v| Literal::usize_unsuffixed(v));
        quote! { vec![#(#values),*] }
    };
    let kernel = list(&node.kernel_shape);
    let strides = node.strides.as_deref().map(|s| {
        let s = list(s);
        quote! { .with_strides(#s) }
    });
    let pads = node.pads.as_deref().map(|p| {
        let p = list(p);
        quote! { .with_pads(#p) }
    });
    // Spelled out, so that the generated code does not depend on the default.
    let rule = match (&node.output_shape, rule) {
        (OutputShapeInput::Absent, _) => None,
        (_, OutputShapeRule::Reference) => Some(quote! {
            .with_rule(burn_unpool::onnx::OutputShapeRule::Reference)
        }),
        (_, OutputShapeRule::IndicesInOutputShape) => Some(quote! {
            .with_rule(burn_unpool::onnx::OutputShapeRule::IndicesInOutputShape)
        }),
    };
    let pool = node.pool.as_ref().map(|pool| {
        let stride = match pool.plane_stride {
            Some(stride) => {
                let stride = Literal::usize_unsuffixed(stride);
                quote! { Some(#stride) }
            }
            None => quote! { None },
        };
        let source = match (&pool.input_shape, pool_shape) {
            (PoolShape::Constant(shape), _) => {
                let shape = shape.iter().map(|&d| Literal::usize_unsuffixed(d));
                quote! { burn_unpool::onnx::PoolIndexSource::new(&[#(#shape),*], #stride) }
            }
            (PoolShape::Shape, shape) => {
                quote! { burn_unpool::onnx::PoolIndexSource::from_i64(&#shape, #stride) }
            }
        };
        quote! { .with_pool_indices(#source) }
    });
    quote! { burn_unpool::onnx::MaxUnpoolAttributes::new(#kernel) #strides #pads #rule #pool }
}
