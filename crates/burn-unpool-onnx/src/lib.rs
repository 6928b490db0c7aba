#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// The README shows `build.rs` as the whole file a user writes, `fn main` included.
#![allow(clippy::needless_doctest_main)]

mod hook;
mod index_arithmetic;
mod model_gen;
mod node;
mod plane_offsets_hook;
mod pool_hook;
mod pool_node;
mod rewrite;

pub use burn_onnx;
pub use hook::{MaxUnpoolOp, OutputShapeRule};
pub use index_arithmetic::{
    INDICES_FOR_UNPOOL, IndexArithmetic, PLANE_OFFSETS, POOL_PLANE_STRIDE, SCATTER_PLACEMENT,
    rewrite_index_arithmetic,
};
pub use model_gen::{ModelGen, Report};
pub use onnx_ir;
pub use plane_offsets_hook::PlaneOffsetsOp;
pub use pool_hook::MaxPoolOp;
pub use rewrite::{
    DOMAIN, MAX_POOL, NAME_ATTRIBUTE, OP_TYPE, rewrite_max_pool, rewrite_max_unpool,
};
