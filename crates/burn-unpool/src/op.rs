//! Runs checked plans on tensors, for every door: the tensor checks, the index check, the backend.

use burn::backend::Dispatch;
use burn::tensor::{Int, Tensor};

use crate::backend::{
    INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE, Route, UnpoolBackend, composition, device_limits,
    reads_index_words,
};
use crate::diagnostics::{self, Path};
use crate::error::{UnpoolError, or_panic};
use crate::kind::UnpoolKind;
use crate::plan::{Direction, PoolPlan, UnpoolPlan, UnpoolRequest, checks};

pub(crate) fn forward_plan<const R: usize, K: UnpoolKind>(
    x: &Tensor<R, K>,
    indices: &Tensor<R, Int>,
    request: &UnpoolRequest,
) -> Result<UnpoolPlan, UnpoolError> {
    let plan = request.plan(&x.dims(), &indices.dims())?;
    check_tensors(x, indices, &plan, Direction::Forward)?;
    Ok(plan)
}

pub(crate) fn backward_plan<const R: usize>(
    grad: &Tensor<R>,
    indices: &Tensor<R, Int>,
    request: &UnpoolRequest,
) -> Result<UnpoolPlan, UnpoolError> {
    let plan = request.plan(&indices.dims(), &indices.dims())?;
    checks::gradient_shape(&grad.dims(), plan.output_shape())?;
    check_tensors(grad, indices, &plan, Direction::Backward)?;
    Ok(plan)
}

fn check_tensors<const R: usize, K: UnpoolKind>(
    values: &Tensor<R, K>,
    indices: &Tensor<R, Int>,
    plan: &UnpoolPlan,
    direction: Direction,
) -> Result<(), UnpoolError> {
    let device = values.device();
    checks::same_device(&device, &indices.device())?;
    checks::value_dtype(values.dtype(), &device)?;
    // An output no buffer can hold is the problem, whatever the indices' dtype could address.
    let limit = device_limits(&device).map(|limits| limits.largest_allocation);
    let shape = plan.result_shape(direction);
    checks::output_bytes(shape, values.dtype(), &device, limit)?;
    checks::index_dtype(indices.dtype(), plan.index_range_end())?;
    let words = reads_index_words(Route::of(&device), plan);
    checks::index_dtype_on(indices.dtype(), &device, words)
}

#[track_caller]
pub(crate) fn unpool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    indices: Tensor<R, Int>,
    plan: UnpoolPlan,
) -> Tensor<R, K> {
    let route = Route::of(&x.device());
    let plan = check_index_values(route, &indices, plan);
    let output = K::max_unpool(route, x.into_dispatch(), indices.into_dispatch(), plan);
    Tensor::from_dispatch(output)
}

#[track_caller]
pub(crate) fn unpool_backward<const R: usize>(
    grad: Tensor<R>,
    indices: Tensor<R, Int>,
    plan: UnpoolPlan,
) -> Tensor<R> {
    let route = Route::of(&grad.device());
    let plan = check_index_values(route, &indices, plan);
    let (grad, indices) = (grad.into_dispatch(), indices.into_dispatch());
    Tensor::from_dispatch(match route {
        Route::Composition => composition::max_unpool_backward::<Dispatch>(grad, indices, plan),
        _ => <Dispatch as UnpoolBackend>::max_unpool_backward(grad, indices, plan),
    })
}

#[track_caller]
pub(crate) fn pool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    plan: PoolPlan,
) -> (Tensor<R, K>, Tensor<R, Int>) {
    or_panic(checks::pool_value_dtype(x.dtype(), &x.device()));
    let route = Route::of(&x.device());
    let (values, indices) = K::max_pool_with_indices(route, x.into_dispatch(), plan);
    (
        Tensor::from_dispatch(values),
        Tensor::from_dispatch(indices),
    )
}

/// Reports a bad index before a backend that skips them; the word read also flags shared cells.
#[track_caller]
fn check_index_values<const R: usize>(
    route: Route,
    indices: &Tensor<R, Int>,
    plan: UnpoolPlan,
) -> UnpoolPlan {
    if route == Route::CpuKernels || !plan.reports_invalid_indices() {
        return plan;
    }
    let (dispatch, check) = (indices.clone().into_dispatch(), plan.clone());
    let flag = match route {
        Route::Composition => composition::max_unpool_index_check::<Dispatch>(dispatch, check),
        _ => {
            diagnostics::record(Path::DeviceIndexCheck);
            <Dispatch as UnpoolBackend>::max_unpool_index_check(dispatch, check)
        }
    };
    let flag = Tensor::<1, Int>::from_dispatch(flag).into_data();
    let word = flag.iter::<u32>().next().unwrap_or(0);
    if word & INDEX_OUT_OF_RANGE != 0
        && let Some(err) = plan.first_invalid_index(&indices.clone().into_data())
    {
        panic!("{err}");
    }
    match word & INDEX_MAY_SHARE_TARGET {
        0 => plan.with_indices_in_cells(),
        _ => plan,
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;
    use crate::{IndexLayout, MaxUnpoolOptions};

    fn plan(layout: IndexLayout) -> UnpoolPlan {
        let options = MaxUnpoolOptions::new([2])
            .with_output_size([5])
            .with_index_layout(layout);
        UnpoolPlan::new(&[2, 2, 3], &[2, 2, 3], &options).unwrap()
    }

    /// The composition skips bad indices itself: on its route the index check before it reports
    /// them, with the kernels' message.
    #[test]
    #[should_panic(expected = "index 7 at position [0, 1, 2] is out of range")]
    fn reports_bad_indices_like_the_kernels() {
        let device = Device::flex();
        let indices = TensorData::new(vec![0i64, 1, 2, 0, 1, 7, 0, 0, 0, 0, 0, 0], [2, 2, 3]);
        let x = Tensor::<3>::ones([2, 2, 3], &device);
        let indices = Tensor::<3, Int>::from_data(indices, &device);
        let plan = check_index_values(Route::Composition, &indices, plan(IndexLayout::PerPlane));
        let _ =
            composition::max_unpool::<Dispatch>(x.into_dispatch(), indices.into_dispatch(), plan);
    }
}
