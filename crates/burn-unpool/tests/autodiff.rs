//! The pool's backward on an autodiff device: differentiable again, as a gather at the indices
//! (the adjoint of the pool's backward), through the backend trait.

use burn::backend::Dispatch;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Tensor, TensorData};

use burn_unpool::{PoolPlan, UnpoolBackend};

fn gradient_and_its_gradient(
    x: &[f32],
    shape: [usize; 4],
    grad: &[f32],
    w: &[f32],
    global: bool,
) -> (TensorData, TensorData) {
    let device = Device::flex().autodiff();
    let tensor = |values: &[f32], shape: [usize; 4]| {
        Tensor::<4>::from_data(TensorData::new(values.to_vec(), shape), &device)
    };
    let options = MaxPoolOptions::new([1, 2]).with_stride([1, 1]);
    let plan = PoolPlan::new(&shape, &options, DType::I64).unwrap();
    let plan = if global {
        plan.with_global_indices()
    } else {
        plan
    };
    let (_, indices) = <Dispatch as UnpoolBackend>::max_pool_with_indices(
        tensor(x, shape).into_dispatch(),
        plan.clone(),
    );
    let pooled_shape = [shape[0], shape[1], 1, shape[3] - 1];
    let grad = tensor(grad, pooled_shape).require_grad();
    let dx =
        Tensor::<4>::from_dispatch(<Dispatch as UnpoolBackend>::max_pool_with_indices_backward(
            grad.clone().into_dispatch(),
            indices,
            plan,
        ));
    let grads = (dx.clone() * tensor(w, shape)).sum().backward();
    let dgrad = grad.grad(&grads).unwrap().into_data();
    (dx.into_data(), dgrad)
}

#[test]
fn the_pool_gradient_is_differentiable_as_a_gather_at_the_indices() {
    // Windows {0, 1}, {1, 2}, {2, 3} of [1, 3, 2, 0]: indices 1, 1, 2.
    let (dx, dgrad) = gradient_and_its_gradient(
        &[1.0, 3.0, 2.0, 0.0],
        [1, 1, 1, 4],
        &[10.0, 20.0, 30.0],
        &[1.0, 2.0, 3.0, 4.0],
        false,
    );
    // Element 1 takes the first two windows' gradients, element 2 the third's.
    dx.assert_eq(&TensorData::from([[[[0.0f32, 30.0, 30.0, 0.0]]]]), false);
    // d sum(dx * w) / d grad[j] = w[index j] = [2, 2, 3].
    dgrad.assert_eq(&TensorData::from([[[[2.0f32, 2.0, 3.0]]]]), false);
}

/// Global indices: the gather must read the second plane's weights, not past the first.
#[test]
fn with_global_indices_the_pool_gradient_is_a_gather_over_the_whole_tensor() {
    let (dx, dgrad) = gradient_and_its_gradient(
        &[1.0, 3.0, 2.0, 0.0, 5.0, 4.0, 0.0, 6.0],
        [1, 2, 1, 4],
        &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        true,
    );
    let expected_dx = [[[[0.0f32, 30.0, 30.0, 0.0]], [[40.0, 50.0, 0.0, 60.0]]]];
    dx.assert_eq(&TensorData::from(expected_dx), false);
    let expected_dgrad = [[[[2.0f32, 2.0, 3.0]], [[5.0, 6.0, 8.0]]]];
    dgrad.assert_eq(&TensorData::from(expected_dgrad), false);
}
