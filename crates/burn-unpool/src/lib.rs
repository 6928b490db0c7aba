#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod backend;
mod checks;
mod composed;
mod error;
mod functional;
mod geometry;
mod kernel;
mod kind;
mod max_pool;
pub mod nn;
pub mod onnx;
mod options;
mod plan;
mod pool;
mod route;

pub use backend::{INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE, UnpoolBackend};
pub use burn_unpool_shape::{default_output_size, pool_output_size};
pub use error::{PoolAxis, UnpoolError};
pub use functional::{max_unpool, max_unpool_backward, max_unpool1d, max_unpool2d, max_unpool3d};
pub use kind::UnpoolKind;
pub use max_pool::{
    max_pool_with_indices, max_pool1d_with_indices, max_pool2d_with_indices,
    max_pool3d_with_indices,
};
pub use options::{IndexLayout, MaxUnpoolOptions, OutputSize};
pub use plan::UnpoolPlan;
pub use pool::{PoolIndices, PoolPlan, UnpoolIndices};
pub use route::{Route, route};

/// The guide: the API tour and the rules (the repository's `docs/guide.md`).
#[doc = include_str!("../guide.md")]
pub mod guide {}

/// Not part of the API: which path the op took, for the tests that show it (feature
/// `diagnostics`).
#[doc(hidden)]
pub mod diagnostics;

/// Not part of the API: for this workspace's own binaries (benches, examples). May change in any
/// release.
#[doc(hidden)]
pub mod bin_support;

/// Not part of the API: the CPU kernels on plain slices, for this crate's own benchmarks (they
/// time them apart from Burn's tensors). May change in any release.
#[doc(hidden)]
pub mod bench_support {
    use crate::UnpoolPlan;

    /// Unpools `x` into `out`, which must hold `plan.output_len()` zeros.
    ///
    /// # Panics
    /// On a bad index, or buffers of the wrong length.
    pub fn unpool_forward_into(x: &[f32], indices: &[i32], plan: &UnpoolPlan, out: &mut [f32]) {
        crate::error::or_panic(crate::kernel::unpool_forward_into(x, indices, plan, out));
    }

    /// The backward's kernel alone, into a fresh buffer: the gradient of `x` for the output
    /// gradient `grad`, looking for duplicate indices as for raw indices (a flag per output
    /// position of a plane, or of the whole output for global indices that cross planes) or,
    /// with `look_for_duplicates` false, not, as for this crate's pool indices where the pool's
    /// windows cannot overlap. Without the look, duplicates pass every writer its gradient: time
    /// it on indices without duplicates only.
    ///
    /// # Panics
    /// On a bad index, or buffers of the wrong length.
    pub fn unpool_backward(
        grad: &[f32],
        indices: &[i32],
        plan: &UnpoolPlan,
        look_for_duplicates: bool,
    ) -> Vec<f32> {
        crate::error::or_panic(crate::kernel::gather(
            grad,
            indices,
            plan,
            look_for_duplicates,
        ))
    }

    /// The max pool as a composition of Burn tensor ops, which devices without the crate's
    /// kernels run: the baseline the kernels are timed against.
    ///
    /// # Panics
    /// As [`max_pool_with_indices`](crate::max_pool_with_indices).
    pub fn composed_max_pool<const D: usize, const R: usize>(
        x: burn::tensor::Tensor<R>,
        options: &burn::tensor::ops::MaxPoolOptions<D>,
    ) -> (
        burn::tensor::Tensor<R>,
        burn::tensor::Tensor<R, burn::tensor::Int>,
    ) {
        let spec = crate::pool::PoolSpec::from_pool(options);
        let order = crate::composed::pool::IndexOrder::RowMajor;
        let plan =
            crate::error::or_panic_with(crate::max_pool::plan_pool(&x.dims(), &spec, &x.device()));
        let composed = crate::composed::pool::max_pool(x, &spec, order, plan.index_dtype());
        crate::error::or_panic_with(composed)
    }
}
