//! Max pooling that keeps its indices together with the pool that produced them: the plan every
//! backend receives, the indices and the errors.

mod error;
mod index_dtype;
mod indices;
mod plan;
mod plan_cache;

pub(crate) use error::PoolError;
pub(crate) use index_dtype::pool_index_dtype;
pub(crate) use indices::IndexSource;
pub use indices::{PoolIndices, UnpoolIndices};
pub use plan::PoolPlan;
pub(crate) use plan::{AxisWindows, PoolSpec};
