//! Autodiff: the exact gradient of the forward, written by hand.
//!
//! `max_unpool` and `max_unpool_backward` are adjoint linear maps of their float input, so each
//! one's backward is the other: gradients of gradients work too.

use burn::backend::autodiff::{
    Autodiff,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::backend::tensor::{FloatTensor as Float, IntTensor as Int};

use super::{UnpoolBackend, run};
use crate::UnpoolPlan;
use crate::plan::Direction;

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

impl<B: UnpoolBackend, C: CheckpointStrategy> UnpoolBackend for Autodiff<B, C> {
    fn max_unpool(x: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        apply::<B, C>(Direction::Forward, x, indices, plan)
    }

    fn max_unpool_int(x: Int<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_int(x, indices, plan)
    }

    fn max_unpool_backward(grad: Float<Self>, indices: Int<Self>, plan: UnpoolPlan) -> Float<Self> {
        apply::<B, C>(Direction::Backward, grad, indices, plan)
    }

    fn max_unpool_invalid_index_flag(indices: Int<Self>, plan: UnpoolPlan) -> Int<Self> {
        B::max_unpool_invalid_index_flag(indices, plan)
    }
}
