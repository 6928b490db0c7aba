//! Autodiff, exact by hand: every differentiable op here is linear in its float input, and its
//! backward is its adjoint (unpooling and its backward are each other's).

use burn::backend::autodiff::{
    Autodiff,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::backend::tensor::{FloatTensor as Float, IntTensor as Int};
use burn::tensor::Shape;

use super::UnpoolBackend;
use crate::plan::{PoolPlan, UnpoolPlan};

type Linear<B, P> = fn(Float<B>, Int<B>, P) -> Float<B>;

/// The backward of a linear node: its adjoint applied to the output's gradient.
#[derive(Debug)]
struct Adjoint<B: UnpoolBackend, P>(Linear<B, P>);

impl<B: UnpoolBackend, P: Clone + Send + core::fmt::Debug + 'static> Backward<B, 1>
    for Adjoint<B, P>
{
    type State = (Int<B>, P);

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
            grads.register::<B>(parent.id, (self.0)(grad, indices, plan));
        }
    }
}

fn linear<B: UnpoolBackend, C: CheckpointStrategy, P: Clone + Send + core::fmt::Debug + 'static>(
    op: Linear<B, P>,
    adjoint: Linear<B, P>,
    input: Float<Autodiff<B, C>>,
    indices: Int<B>,
    plan: P,
) -> Float<Autodiff<B, C>> {
    match Adjoint(adjoint)
        .prepare::<C>([input.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let output = op(input.into_primitive(), indices.clone(), plan.clone());
            prep.finish((indices, plan), output)
        }
        OpsKind::UnTracked(prep) => prep.finish(op(input.into_primitive(), indices, plan)),
    }
}

/// The adjoint of the pool's backward: `x`'s gradient gathered at the indices, per plane or global.
fn gather_at_indices<B: UnpoolBackend>(
    grad: Float<B>,
    indices: Int<B>,
    plan: PoolPlan,
) -> Float<B> {
    let (planes, in_plane, out_plane) = (
        plan.planes(),
        plan.input_plane_len(),
        plan.output_plane_len(),
    );
    let (rows, in_len, out_len) = match plan.global_indices() {
        true => (1, planes * in_plane, planes * out_plane),
        false => (planes, in_plane, out_plane),
    };
    let grad = B::float_reshape(grad, Shape::new([rows, in_len]));
    let indices = B::int_reshape(indices, Shape::new([rows, out_len]));
    let pooled = B::float_gather(1, grad, indices);
    B::float_reshape(pooled, Shape::from(plan.output_shape()))
}

impl<B: UnpoolBackend, C: CheckpointStrategy> UnpoolBackend for Autodiff<B, C> {
    fn max_pool_with_indices(x: Float<Self>, plan: PoolPlan) -> (Float<Self>, Int<Self>) {
        let adjoint = Adjoint::<B, PoolPlan>(B::max_pool_with_indices_backward);
        match adjoint.prepare::<C>([x.node()]).compute_bound().stateful() {
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
        let op = B::max_pool_with_indices_backward;
        linear::<B, C, _>(op, gather_at_indices::<B>, grad, indices, plan)
    }

    fn max_unpool(x: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        linear::<B, C, _>(B::max_unpool, B::max_unpool_backward, x, indices, plan)
    }

    fn max_unpool_int(x: Int<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_int(x, indices, plan)
    }

    fn max_pool_with_indices_int(x: Int<Self>, plan: PoolPlan) -> (Int<Self>, Int<Self>) {
        B::max_pool_with_indices_int(x, plan)
    }

    fn max_unpool_backward(grad: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        linear::<B, C, _>(B::max_unpool_backward, B::max_unpool, grad, indices, plan)
    }

    fn max_unpool_index_check(indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_index_check(indices, plan)
    }
}
