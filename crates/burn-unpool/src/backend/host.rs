//! The glue of the host backends (Flex, NdArray): their tensors viewed as bytes, run by the CPU
//! kernels of `crate::kernel`.

use burn::backend::TensorMetadata;
use burn::tensor::TensorData;

use crate::kernel::host::{self, HostTensor};
use crate::plan::Direction;
use crate::{PoolPlan, UnpoolPlan};

/// A contiguous row-major view of a host tensor, borrowed or (for a strided one) copied.
pub(crate) enum HostView<'a> {
    Borrowed(HostTensor<'a>),
    Copied(TensorData),
}

impl HostView<'_> {
    /// The view of a strided tensor: its row-major copy (counted, for the tests that show which
    /// inputs are copied).
    pub(crate) fn copied(data: TensorData) -> Self {
        crate::diagnostics::record(crate::diagnostics::Path::HostCopy);
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

/// Implements [`UnpoolBackend`] for a backend whose tensors are in host memory with the CPU
/// kernels: `$view` gives a tensor's [`HostView`], `$wrap` turns the kernels' data into a tensor.
/// Bad indices panic with the kernels' message.
macro_rules! host_backend {
    ($backend:ty, $tensor:ty, view: $view:expr, wrap: $wrap:expr) => {
        impl $crate::backend::UnpoolBackend for $backend {
            fn max_unpool(x: $tensor, indices: $tensor, plan: $crate::UnpoolPlan) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::host::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_int(x: $tensor, indices: $tensor, plan: $crate::UnpoolPlan) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::host::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::UnpoolPlan,
            ) -> $tensor {
                use $crate::plan::Direction::Backward;
                $crate::backend::host::run_on_host(Backward, grad, indices, plan, $view, $wrap)
            }

            fn max_pool_with_indices(x: $tensor, plan: $crate::PoolPlan) -> ($tensor, $tensor) {
                $crate::backend::host::pool_on_host(x, plan, $view, $wrap)
            }

            fn max_pool_with_indices_int(x: $tensor, plan: $crate::PoolPlan) -> ($tensor, $tensor) {
                $crate::backend::host::pool_on_host(x, plan, $view, $wrap)
            }

            fn max_pool_with_indices_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::PoolPlan,
            ) -> $tensor {
                $crate::backend::host::pool_backward_on_host(grad, indices, plan, $view, $wrap)
            }
        }
    };
}
pub(crate) use host_backend;

/// The body of [`host_backend`]'s methods.
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
    wrap(crate::error::or_panic(data))
}

/// [`UnpoolBackend::max_pool_with_indices`] on the host kernels.
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

/// [`UnpoolBackend::max_pool_with_indices_backward`] on the host kernels.
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
