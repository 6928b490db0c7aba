//! The glue of the CPU backends (Flex, NdArray): their tensors viewed as bytes, run by the kernels.

use burn::backend::TensorMetadata;
use burn::tensor::TensorData;

use super::host::{self, HostTensor};
use crate::diagnostics::{self, Path};
use crate::error::or_panic;
use crate::plan::{Direction, PoolPlan, UnpoolPlan};

/// A contiguous row-major view of a host tensor, borrowed or (for a strided one) copied.
pub(crate) enum HostView<'a> {
    Borrowed(HostTensor<'a>),
    Copied(TensorData),
}

impl HostView<'_> {
    pub(crate) fn copied(data: TensorData) -> Self {
        diagnostics::record(Path::HostCopy);
        Self::Copied(data)
    }

    fn tensor(&self) -> HostTensor<'_> {
        match self {
            Self::Borrowed(tensor) => *tensor,
            Self::Copied(data) => HostTensor {
                bytes: data.as_bytes(),
                dtype: data.dtype(),
            },
        }
    }
}

/// Implements `UnpoolBackend` by the CPU kernels: `$view` gives a [`HostView`], `$wrap` a tensor.
macro_rules! host_backend {
    ($backend:ty, $tensor:ty, view: $view:expr, wrap: $wrap:expr) => {
        impl $crate::backend::UnpoolBackend for $backend {
            fn max_unpool(x: $tensor, indices: $tensor, plan: $crate::plan::UnpoolPlan) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::cpu::glue::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_int(
                x: $tensor,
                indices: $tensor,
                plan: $crate::plan::UnpoolPlan,
            ) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::cpu::glue::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::plan::UnpoolPlan,
            ) -> $tensor {
                use $crate::plan::Direction::Backward;
                $crate::backend::cpu::glue::run_on_host(Backward, grad, indices, plan, $view, $wrap)
            }

            fn max_pool_with_indices(
                x: $tensor,
                plan: $crate::plan::PoolPlan,
            ) -> ($tensor, $tensor) {
                $crate::backend::cpu::glue::pool_on_host(x, plan, $view, $wrap)
            }

            fn max_pool_with_indices_int(
                x: $tensor,
                plan: $crate::plan::PoolPlan,
            ) -> ($tensor, $tensor) {
                $crate::backend::cpu::glue::pool_on_host(x, plan, $view, $wrap)
            }

            fn max_pool_with_indices_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::plan::PoolPlan,
            ) -> $tensor {
                $crate::backend::cpu::glue::pool_backward_on_host(grad, indices, plan, $view, $wrap)
            }
        }
    };
}
pub(crate) use host_backend;

pub(crate) fn run_on_host<T: TensorMetadata>(
    direction: Direction,
    input: T,
    indices: T,
    plan: UnpoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> T {
    plan.checked_result_shape(direction, &input.shape(), &indices.shape());
    let (input, indices) = (view(&input), view(&indices));
    let data = host::run(direction, input.tensor(), indices.tensor(), &plan);
    wrap(or_panic(data))
}

pub(crate) fn pool_on_host<T: TensorMetadata>(
    x: T,
    plan: PoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> (T, T) {
    plan.assert_input("max_pool_with_indices", &x.shape());
    let (values, indices) = host::run_pool(view(&x).tensor(), &plan);
    (wrap(values), wrap(indices))
}

pub(crate) fn pool_backward_on_host<T: TensorMetadata>(
    grad: T,
    indices: T,
    plan: PoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> T {
    plan.checked_pool_input_shape(&grad.shape(), &indices.shape());
    let (grad, indices) = (view(&grad), view(&indices));
    wrap(host::run_pool_backward(
        grad.tensor(),
        indices.tensor(),
        &plan,
    ))
}
