//! The argument checks, and the checked plans every backend receives.

pub(crate) mod checks;
mod pool_plan;
mod unpool_plan;

pub use pool_plan::PoolPlan;
pub(crate) use pool_plan::{global_index_dtype, pool_index_dtype};
pub use unpool_plan::UnpoolPlan;
pub(crate) use unpool_plan::{Direction, IndexPlane, UnpoolRequest};
