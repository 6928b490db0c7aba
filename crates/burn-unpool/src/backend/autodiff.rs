//! Autodiff: the exact gradient of the forward, written by hand.
//!
//! `max_unpool` and `max_unpool_backward` are adjoint linear maps of their float input, so each
//! one's backward is the other: gradients of gradients work too. The pool's gradient is its own
//! backward op; that op's gradient is a gather at the indices, plane by plane.

use burn::backend::autodiff::{
    Autodiff,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::backend::tensor::{FloatTensor as Float, IntTensor as Int};
use burn::tensor::Shape;

use super::{UnpoolBackend, run};
use crate::plan::Direction;
use crate::{PoolPlan, UnpoolPlan};

/// The backward of a node that applied `Direction`: the other direction.
#[derive(Debug)]
struct AdjointBackward(Direction);

impl<B: UnpoolBackend> Backward<B, 1> for AdjointBackward {
    type State = (Int<B>, UnpoolPlan);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (indices, plan) = ops.state;
        if let Some(parent) = parent {
            let grad = run::<B>(self.0.adjoint(), grad, indices, plan);
            grads.register::<B>(parent.id, grad);
        }
    }
}

fn apply<B: UnpoolBackend, C: CheckpointStrategy>(
    direction: Direction,
    input: Float<Autodiff<B, C>>,
    indices: Int<B>,
    plan: UnpoolPlan,
) -> Float<Autodiff<B, C>> {
    match AdjointBackward(direction)
        .prepare::<C>([input.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let output = run::<B>(
                direction,
                input.into_primitive(),
                indices.clone(),
                plan.clone(),
            );
            prep.finish((indices, plan), output)
        }
        OpsKind::UnTracked(prep) => {
            prep.finish(run::<B>(direction, input.into_primitive(), indices, plan))
        }
    }
}

/// The backward of the pool: each window's gradient goes to its index.
#[derive(Debug)]
struct PoolBackward;

impl<B: UnpoolBackend> Backward<B, 1> for PoolBackward {
    type State = (Int<B>, PoolPlan);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (indices, plan) = ops.state;
        if let Some(parent) = parent {
            let dx = B::max_pool_with_indices_backward(grad, indices, plan);
            grads.register::<B>(parent.id, dx);
        }
    }
}

/// The backward of the pool's backward (linear in the pooled gradient): the gradient of `x` read
/// at each window's index, `[planes, input plane]` gathered by `[planes, output plane]` (one row
/// for global indices).
#[derive(Debug)]
struct PoolGradientBackward;

impl<B: UnpoolBackend> Backward<B, 1> for PoolGradientBackward {
    type State = (Int<B>, PoolPlan);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (indices, plan) = ops.state;
        if let Some(parent) = parent {
            // Per-plane indices gather inside their plane's row; global ones (ONNX's) inside one
            // row holding the whole tensor.
            let planes = plan.planes();
            let (rows, in_len, out_len) = match plan.global_indices() {
                true => (
                    1,
                    planes * plan.input_plane_len(),
                    planes * plan.output_plane_len(),
                ),
                false => (planes, plan.input_plane_len(), plan.output_plane_len()),
            };
            let grad = B::float_reshape(grad, Shape::new([rows, in_len]));
            let indices = B::int_reshape(indices, Shape::new([rows, out_len]));
            let pooled = B::float_gather(1, grad, indices);
            let pooled = B::float_reshape(pooled, Shape::from(plan.output_shape()));
            grads.register::<B>(parent.id, pooled);
        }
    }
}

impl<B: UnpoolBackend, C: CheckpointStrategy> UnpoolBackend for Autodiff<B, C> {
    fn max_pool_with_indices(x: Float<Self>, plan: PoolPlan) -> (Float<Self>, Int<Self>) {
        match PoolBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let (values, indices) = B::max_pool_with_indices(x.into_primitive(), plan.clone());
                (prep.finish((indices.clone(), plan), values), indices)
            }
            OpsKind::UnTracked(prep) => {
                let (values, indices) = B::max_pool_with_indices(x.into_primitive(), plan);
                (prep.finish(values), indices)
            }
        }
    }

    fn max_pool_with_indices_backward(
        grad: Float<Self>,
        indices: Int<Self>,
        plan: PoolPlan,
    ) -> Float<Self> {
        match PoolGradientBackward
            .prepare::<C>([grad.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let dx = B::max_pool_with_indices_backward(
                    grad.into_primitive(),
                    indices.clone(),
                    plan.clone(),
                );
                prep.finish((indices, plan), dx)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::max_pool_with_indices_backward(
                grad.into_primitive(),
                indices,
                plan,
            )),
        }
    }

    fn max_unpool(x: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        apply::<B, C>(Direction::Forward, x, indices, plan)
    }

    fn max_unpool_int(x: Int<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_int(x, indices, plan)
    }

    fn max_pool_with_indices_int(x: Int<Self>, plan: PoolPlan) -> (Int<Self>, Int<Self>) {
        B::max_pool_with_indices_int(x, plan)
    }

    fn max_unpool_backward(grad: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        apply::<B, C>(Direction::Backward, grad, indices, plan)
    }

    fn max_unpool_index_check(indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_index_check(indices, plan)
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::Dispatch;
    use burn::tensor::ops::MaxPoolOptions;
    use burn::tensor::{DType, Device, Tensor, TensorData};

    use crate::UnpoolBackend;
    use crate::pool::{PoolPlan, PoolSpec};

    /// The pool's gradient `dx` for `grad` over `x` of `shape` and the gradient of
    /// `sum(dx * w)` for `grad`, on an autodiff device, with global indices if asked.
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
        let spec = PoolSpec::from_pool(&options);
        let plan = PoolPlan::new(&shape, &spec, DType::I64).unwrap();
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
        let dx = Tensor::<4>::from_dispatch(
            <Dispatch as UnpoolBackend>::max_pool_with_indices_backward(
                grad.clone().into_dispatch(),
                indices,
                plan,
            ),
        );
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

    /// ONNX's global indices: the second plane's windows {5, 4}, {4, 0}, {0, 6} have the indices
    /// 4 + (0, 1, 3); the gather must read the second plane's weights, not past the first.
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
}
