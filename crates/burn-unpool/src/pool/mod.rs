//! Max pooling that keeps its indices together with the pool that produced them: the plan every
//! backend receives, the indices, the errors, and the composition of Burn tensor ops that devices
//! without kernels run.

mod error;
mod indices;
mod plan;
pub(crate) mod windows;

pub(crate) use error::PoolError;
pub use indices::{PoolIndices, UnpoolIndices};
pub use plan::PoolPlan;
pub(crate) use plan::{AxisWindows, PoolSpec};
