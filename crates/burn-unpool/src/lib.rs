#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

// Leaves: the geometry, the options and the one error type.
mod error;
mod geometry;
mod options;
// The checks and the checked plans.
mod plan;
// The backend trait, its default bodies and one folder per backend family.
mod backend;
// The tensor layer: checked plans run on tensors, and the public functions over them.
mod indices;
mod kind;
mod max_pool;
mod max_unpool;
mod op;
// The doors above the functions.
pub mod nn;
pub mod onnx;

/// Not part of the API: counters of the paths taken, and a switch to the composition (feature
/// `__diagnostics`).
#[doc(hidden)]
pub mod diagnostics;

pub use backend::{
    DeviceLimits, INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE, Route, UnpoolBackend, composition,
    device_limits, route,
};
pub use burn_unpool_shape::{default_output_size, pool_output_size};
pub use error::{PoolAxis, UnpoolError};
pub use indices::{PoolIndices, UnpoolIndices};
pub use kind::UnpoolKind;
pub use max_pool::{
    max_pool_with_indices, max_pool1d_with_indices, max_pool2d_with_indices,
    max_pool3d_with_indices,
};
pub use max_unpool::{max_unpool, max_unpool_backward, max_unpool1d, max_unpool2d, max_unpool3d};
pub use options::{IndexLayout, MaxUnpoolOptions, OutputSize};
pub use plan::{PoolPlan, UnpoolPlan};

/// The guide: the API tour and the rules (the repository's `docs/guide.md`).
#[doc = include_str!("../guide.md")]
pub mod guide {}
