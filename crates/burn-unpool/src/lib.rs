#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod backend;
pub mod checks;
mod functional;
pub mod kernel;
pub mod nn;
pub mod onnx;
mod options;
mod output_size;
mod plan;

pub use backend::UnpoolBackend;
pub use checks::UnpoolError;
pub use functional::{
    max_unpool, max_unpool_backward, max_unpool_unchecked, max_unpool1d, max_unpool2d, max_unpool3d,
};
pub use options::{IndexLayout, MaxUnpoolOptions, OutputSize};
pub use output_size::default_output_size;
pub use plan::UnpoolPlan;
