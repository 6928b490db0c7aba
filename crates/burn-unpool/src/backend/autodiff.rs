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
use burn::backend::tensor::{FloatTensor, IntTensor};

use super::UnpoolBackend;
use crate::UnpoolPlan;

/// Which of the two adjoint ops a node applied; its backward applies the other.
#[derive(Debug, Clone, Copy)]
enum Direction {
    Forward,
    Backward,
}

#[derive(Debug)]
struct AdjointBackward(Direction);

impl<B: UnpoolBackend> Backward<B, 1> for AdjointBackward {
    type State = (IntTensor<B>, UnpoolPlan);

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
            let grad = match self.0 {
                Direction::Forward => B::max_unpool_backward(grad, indices, plan),
                Direction::Backward => B::max_unpool(grad, indices, plan),
            };
            grads.register::<B>(parent.id, grad);
        }
    }
}

fn apply<B: UnpoolBackend, C: CheckpointStrategy>(
    direction: Direction,
    input: FloatTensor<Autodiff<B, C>>,
    indices: IntTensor<B>,
    plan: UnpoolPlan,
) -> FloatTensor<Autodiff<B, C>> {
    let run = |input: FloatTensor<B>, indices: IntTensor<B>, plan: UnpoolPlan| match direction {
        Direction::Forward => B::max_unpool(input, indices, plan),
        Direction::Backward => B::max_unpool_backward(input, indices, plan),
    };
    match AdjointBackward(direction)
        .prepare::<C>([input.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let output = run(input.into_primitive(), indices.clone(), plan.clone());
            prep.finish((indices, plan), output)
        }
        OpsKind::UnTracked(prep) => prep.finish(run(input.into_primitive(), indices, plan)),
    }
}

impl<B: UnpoolBackend, C: CheckpointStrategy> UnpoolBackend for Autodiff<B, C> {
    fn max_unpool(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        apply::<B, C>(Direction::Forward, x, indices, plan)
    }

    fn max_unpool_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        apply::<B, C>(Direction::Backward, grad, indices, plan)
    }

    fn max_unpool_invalid_index_flag(
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self> {
        B::max_unpool_invalid_index_flag(indices, plan)
    }
}
