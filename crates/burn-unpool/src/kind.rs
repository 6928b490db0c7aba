//! The tensor kinds whose values unpool.

use burn::backend::Dispatch;
use burn::tensor::DispatchTensor;
use burn::tensor::kind::Ordered;
use burn::tensor::{Bool, Float, Int, Tensor};

use crate::backend::UnpoolBackend;
use crate::{PoolPlan, UnpoolPlan};

/// The kinds of tensor [`max_unpool`](crate::max_unpool) takes: [`Float`] values of every float
/// dtype (differentiable) and [`Int`] values of every integer dtype (i64 to u8; no gradient, as
/// Burn has none for them).
///
/// One generic function rather than `_int` twins, as Burn's own tensor API is generic over the
/// kind where an op means the same for every kind: unpooling copies values bit for bit and
/// fills with zero, whatever they are. `Bool` is not a kind here: a mask unpools as
/// `max_unpool(mask.int(), ..).bool()`.
pub trait UnpoolKind: Ordered + sealed::OnBackend {}

impl UnpoolKind for Float {}
impl UnpoolKind for Int {}

pub(crate) mod sealed {
    use super::*;

    /// The backend op for values of this kind. Sealed: the crate's kinds only.
    pub trait OnBackend: burn::tensor::kind::Basic {
        /// The forward on the dispatch backend.
        fn max_unpool(
            x: DispatchTensor,
            indices: DispatchTensor,
            plan: UnpoolPlan,
        ) -> DispatchTensor;

        /// The pool with indices on the dispatch backend: the values and the indices.
        fn max_pool_with_indices(
            x: DispatchTensor,
            plan: PoolPlan,
        ) -> (DispatchTensor, DispatchTensor);

        /// Where `values` are NaN, for the kinds that have NaNs: a pool reports them as maxima.
        fn nan_mask<const D: usize>(values: Tensor<D, Self>) -> Option<Tensor<D, Bool>>;
    }

    impl OnBackend for Float {
        fn max_unpool(
            x: DispatchTensor,
            indices: DispatchTensor,
            plan: UnpoolPlan,
        ) -> DispatchTensor {
            <Dispatch as UnpoolBackend>::max_unpool(x, indices, plan)
        }

        fn max_pool_with_indices(
            x: DispatchTensor,
            plan: PoolPlan,
        ) -> (DispatchTensor, DispatchTensor) {
            <Dispatch as UnpoolBackend>::max_pool_with_indices(x, plan)
        }

        fn nan_mask<const D: usize>(values: Tensor<D, Self>) -> Option<Tensor<D, Bool>> {
            Some(values.is_nan())
        }
    }

    impl OnBackend for Int {
        fn max_unpool(
            x: DispatchTensor,
            indices: DispatchTensor,
            plan: UnpoolPlan,
        ) -> DispatchTensor {
            <Dispatch as UnpoolBackend>::max_unpool_int(x, indices, plan)
        }

        fn max_pool_with_indices(
            x: DispatchTensor,
            plan: PoolPlan,
        ) -> (DispatchTensor, DispatchTensor) {
            <Dispatch as UnpoolBackend>::max_pool_with_indices_int(x, plan)
        }

        fn nan_mask<const D: usize>(_values: Tensor<D, Self>) -> Option<Tensor<D, Bool>> {
            None
        }
    }
}
