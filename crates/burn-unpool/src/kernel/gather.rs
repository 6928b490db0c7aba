//! Backward: every element of `x` takes the output gradient at its index, if its write survived.
//!
//! With duplicate indices the value that survives the forward is the last one in row-major order
//! of `x`. Walking `x` backwards, the first element to reach a position is therefore its winner,
//! and a bitset of claimed positions finds them. The backward gathers in order and takes that
//! backward walk only for planes where the bitset saw a repeat. (Measured on SegNet s1 here: the
//! bitset costs about 2-3 ms over a plain gather's 2 ms; a plain gather is PyTorch's
//! every-writer rule, which is not the exact derivative.)

use fixedbitset::FixedBitSet;

use core::mem::MaybeUninit;

use super::buffer::written_buffer;
use super::{
    BadIndex, ChunkIndices, IndexValue, Landing, Placement, Value, for_each_chunk, with_chunk,
};
use crate::UnpoolPlan;
use crate::diagnostics::{self, Path};
use crate::error::UnpoolError;

/// The gradient of `x` for the output gradient `grad` (row-major, `plan.output_shape()`):
/// `dx[p] = grad[indices[p]]` if `p` won the write at `indices[p]`, else zero.
pub(crate) fn unpool_backward<E: Value, I: IndexValue>(
    grad: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<E>, UnpoolError> {
    assert_eq!(
        (grad.len(), indices.len()),
        (plan.output_len(), plan.input_len()),
        "unpool_backward: buffers of the wrong length for the plan"
    );
    let placement = Placement::of(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let unique = plan.targets_unique();
    if unique {
        diagnostics::record(Path::HostGatherWithoutDuplicates);
    }
    written_buffer(plan.input_shape(), |dx| {
        for_each_chunk(plan, dx, in_plane, |planes, dx, window| {
            let grad = &grad[planes.start * out_plane..planes.end * out_plane];
            let indices = &indices[planes.start * in_plane..planes.end * in_plane];
            with_chunk!(&placement, indices, window, |chunk| chunk
                .gather_winners(grad, dx, unique))
        })
    })
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// One chunk of the backward, writing every element of `dx`. One pass gathers every
    /// element's gradient from `grad` in order and notes whether a position was reached twice;
    /// only then does a backward pass zero the elements whose write was overwritten (walking
    /// backwards, the first to reach a position is the one whose write survived). Without
    /// duplicates, the usual case, the second pass never runs; where every target is known to be
    /// `unique`, nothing looks for them.
    #[inline(always)]
    fn gather_winners<E: Value>(
        &self,
        grad: &[E],
        dx: &mut [MaybeUninit<E>],
        unique: bool,
    ) -> Result<(), BadIndex> {
        if unique {
            for (element, (d, &index)) in dx.iter_mut().zip(self.indices).enumerate() {
                d.write(match self.land(index) {
                    Landing::At(target) => grad[target],
                    Landing::Skipped => E::zeroed(),
                    Landing::Outside => return Err(self.bad(element)),
                });
            }
            return Ok(());
        }
        let mut claimed = FixedBitSet::with_capacity(grad.len());
        let mut duplicates = false;
        for (element, (d, &index)) in dx.iter_mut().zip(self.indices).enumerate() {
            d.write(match self.land(index) {
                Landing::At(target) => {
                    duplicates |= claimed.put(target);
                    grad[target]
                }
                Landing::Skipped => E::zeroed(),
                Landing::Outside => return Err(self.bad(element)),
            });
        }
        if duplicates {
            claimed.clear();
            for (d, &index) in dx.iter_mut().zip(self.indices).rev() {
                if let Landing::At(target) = self.land(index)
                    && claimed.put(target)
                {
                    d.write(E::zeroed());
                }
            }
        }
        Ok(())
    }
}
