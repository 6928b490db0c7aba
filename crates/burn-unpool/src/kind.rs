//! The tensor kinds whose values unpool.

use burn::backend::Dispatch;
use burn::tensor::DispatchTensor;
use burn::tensor::kind::Ordered;
use burn::tensor::{Float, Int};

use crate::backend::{Route, UnpoolBackend, composition};
use crate::plan::{PoolPlan, UnpoolPlan};

/// The kinds [`max_unpool`](crate::max_unpool) takes: [`Float`] (differentiable) and [`Int`].
///
/// A `Bool` mask unpools as `max_unpool(mask.int(), ..).bool()`.
pub trait UnpoolKind: Ordered + sealed::OnBackend {}

impl UnpoolKind for Float {}
impl UnpoolKind for Int {}

pub(crate) mod sealed {
    use super::*;

    /// The backend ops for values of this kind on `route`.
    pub trait OnBackend: burn::tensor::kind::Basic {
        fn max_unpool(
            route: Route,
            x: DispatchTensor,
            indices: DispatchTensor,
            plan: UnpoolPlan,
        ) -> DispatchTensor;

        fn max_pool_with_indices(
            route: Route,
            x: DispatchTensor,
            plan: PoolPlan,
        ) -> (DispatchTensor, DispatchTensor);
    }

    macro_rules! on_backend {
        ($kind:ty, $unpool:ident, $pool:ident) => {
            impl OnBackend for $kind {
                fn max_unpool(
                    route: Route,
                    x: DispatchTensor,
                    indices: DispatchTensor,
                    plan: UnpoolPlan,
                ) -> DispatchTensor {
                    match route {
                        Route::Composition => composition::$unpool::<Dispatch>(x, indices, plan),
                        _ => <Dispatch as UnpoolBackend>::$unpool(x, indices, plan),
                    }
                }

                fn max_pool_with_indices(
                    route: Route,
                    x: DispatchTensor,
                    plan: PoolPlan,
                ) -> (DispatchTensor, DispatchTensor) {
                    match route {
                        Route::Composition => composition::$pool::<Dispatch>(x, plan),
                        _ => <Dispatch as UnpoolBackend>::$pool(x, plan),
                    }
                }
            }
        };
    }

    on_backend!(Float, max_unpool, max_pool_with_indices);
    on_backend!(Int, max_unpool_int, max_pool_with_indices_int);
}
