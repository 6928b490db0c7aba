//! Import ONNX models with `MaxUnpool` into [Burn](https://burn.dev).
//!
//! burn-onnx turns an ONNX model into Burn code at build time but rejects `MaxUnpool`. This crate
//! runs burn-onnx with every `MaxUnpool` node (opsets 9, 11 and 22, bfloat16 values included;
//! 1-d, 2-d and 3-d) turned into a call to `burn_unpool::onnx::max_unpool_onnx`, so an imported
//! model gets burn-unpool's kernels, its index checks and its gradient. `MaxPool` nodes burn-onnx
//! cannot import (3-d pools, with or without `Indices`, and pools over integer inputs) become
//! calls to `burn_unpool::onnx::max_pool_onnx`; burn-onnx keeps the other pools, indices included.
//!
//! ```toml
//! [dependencies]
//! burn = { version = "0.22", features = ["flex"] }
//! burn-store = "0.22"
//! burn-unpool = "0.1"
//!
//! [build-dependencies]
//! burn-unpool-onnx = "0.1"
//! ```
//!
//! `build.rs`:
//!
//! ```no_run
//! burn_unpool_onnx::ModelGen::new()
//!     .input("src/model/segnet.onnx")
//!     .out_dir("model/")
//!     .run_from_script();
//! ```
//!
//! Malformed nodes fail the build with a message that names the node: a missing `kernel_shape`,
//! `strides`, `pads` or `output_shape` of the wrong length, indices that are not int64, `X` and
//! `I` of different ranks.
//!
//! # `output_shape`
//! A constant `output_shape` (an initializer) is read at build time; one that is a graph input or
//! computed is read at run time. When it differs from the shape inferred from the attributes, the
//! ONNX reference implementation reads the indices in the inferred shape and places that block at
//! the origin of the output, while ONNX Runtime (and PyTorch) read them in `output_shape`.
//! ONNX Runtime's rule is the default, as PyTorch's exported models need it ([`OutputShapeRule`]);
//! the build says when a model's `output_shape` makes the rules differ.
//!
//! # Driving burn-onnx yourself
//! [`rewrite_max_unpool`] and [`rewrite_max_pool`] move the nodes to the [`DOMAIN`] that
//! [`MaxUnpoolOp`] and [`MaxPoolOp`] handle; register those hooks on a `burn_onnx::ModelGen`
//! beside your own.

mod hook;
mod model_gen;
mod node;
mod pool_hook;
mod pool_node;
mod rewrite;

pub use burn_onnx;
pub use hook::{MaxUnpoolOp, OutputShapeRule};
pub use model_gen::{ModelGen, Report};
pub use onnx_ir;
pub use pool_hook::MaxPoolOp;
pub use rewrite::{
    DOMAIN, MAX_POOL, NAME_ATTRIBUTE, OP_TYPE, rewrite_max_pool, rewrite_max_unpool,
};
