//! Backward: every element of `x` takes the output gradient at its index, if its write survived.
//!
//! With duplicate indices the value that survives the forward is the last one in row-major order
//! of `x`. Walking `x` backwards, the first element to reach a position is therefore its winner,
//! and a flag per output position, set as positions are claimed, finds them. The backward gathers
//! in order and takes that backward walk only for chunks (planes, or the whole tensor for global
//! indices that cross planes) where a flag was found set. (A plain gather is PyTorch's
//! every-writer rule, which is not the exact derivative.)
//!
//! The flags are bytes, one per output position of the chunk, not bits: neighbouring elements of
//! `x` claim neighbouring positions, and with bits each claim read the word the previous one had
//! just written, a chain through memory that made the kernel with the look up to 3.15x the gather
//! alone (SegNet's s4 at batch 1; the `timings` bench's `backward_kernel` rows,
//! docs/benchmarks.md).

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
    let unique = plan.targets_unique();
    if unique {
        diagnostics::record(Path::HostGatherWithoutDuplicates);
    }
    gather(grad, indices, plan, !unique)
}

/// The backward's kernel, looking for duplicate targets or, where none can be, not (with
/// duplicates, the gather without the look gives every writer its gradient: not the derivative).
pub(crate) fn gather<E: Value, I: IndexValue>(
    grad: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
    look_for_duplicates: bool,
) -> Result<Vec<E>, UnpoolError> {
    assert_eq!(
        (grad.len(), indices.len()),
        (plan.output_len(), plan.input_len()),
        "unpool_backward: buffers of the wrong length for the plan"
    );
    let placement = Placement::of(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    written_buffer(plan.input_shape(), |dx| {
        for_each_chunk(plan, dx, in_plane, |planes, dx, window| {
            let grad = &grad[planes.start * out_plane..planes.end * out_plane];
            let indices = &indices[planes.start * in_plane..planes.end * in_plane];
            with_chunk!(&placement, indices, window, |chunk| chunk.gather_winners(
                grad,
                dx,
                look_for_duplicates
            ))
        })
    })
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// One chunk of the backward, writing every element of `dx`. One pass gathers every
    /// element's gradient from `grad` in order and notes whether a position was reached twice;
    /// only then does a backward pass zero the elements whose write was overwritten (walking
    /// backwards, the first to reach a position is the one whose write survived). Without
    /// duplicates, the usual case, the second pass never runs; without `look_for_duplicates`
    /// (every target known to be unique), nothing looks for them.
    #[inline(always)]
    fn gather_winners<E: Value>(
        &self,
        grad: &[E],
        dx: &mut [MaybeUninit<E>],
        look_for_duplicates: bool,
    ) -> Result<(), BadIndex> {
        if !look_for_duplicates {
            for (element, (d, &index)) in dx.iter_mut().zip(self.indices).enumerate() {
                d.write(match self.land(index) {
                    Landing::At(target) => grad[target],
                    Landing::Skipped => E::zeroed(),
                    Landing::Outside => return Err(self.bad(element)),
                });
            }
            return Ok(());
        }
        let mut claimed = vec![false; grad.len()];
        let mut duplicates = false;
        for (element, (d, &index)) in dx.iter_mut().zip(self.indices).enumerate() {
            d.write(match self.land(index) {
                Landing::At(target) => {
                    let value = grad[target];
                    duplicates |= core::mem::replace(&mut claimed[target], true);
                    value
                }
                Landing::Skipped => E::zeroed(),
                Landing::Outside => return Err(self.bad(element)),
            });
        }
        if duplicates {
            claimed.fill(false);
            for (d, &index) in dx.iter_mut().zip(self.indices).rev() {
                if let Landing::At(target) = self.land(index)
                    && core::mem::replace(&mut claimed[target], true)
                {
                    d.write(E::zeroed());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{IndexLayout, MaxUnpoolOptions, UnpoolPlan};

    #[test]
    fn only_the_look_for_duplicates_gives_the_last_writer_alone_its_gradient() {
        // Two planes of 3 values into 6 positions; in each, elements 0 and 2 both write one place.
        let plan = UnpoolPlan::new(&[1, 2, 3], &[1, 2, 3], &MaxUnpoolOptions::new([2])).unwrap();
        let grad = [
            10.0f32, 11.0, 12.0, 13.0, 14.0, 15.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0,
        ];
        let indices = [1i32, 3, 1, 5, 0, 5];
        let looked = super::gather(&grad, &indices, &plan, true).unwrap();
        assert_eq!(looked, [0.0, 13.0, 11.0, 0.0, 20.0, 25.0]);
        // Without the look every writer takes the gradient at its index (not the derivative).
        let plain = super::gather(&grad, &indices, &plan, false).unwrap();
        assert_eq!(plain, [11.0, 13.0, 11.0, 25.0, 20.0, 25.0]);
    }

    #[test]
    fn global_indices_across_planes_look_for_duplicates_over_the_whole_tensor() {
        // Element 1 of plane 0 writes into plane 1 (position 5 of the whole output), where
        // element 3 writes last: the tensor runs as one chunk, and element 3 alone wins.
        let options = MaxUnpoolOptions::new([2]).with_index_layout(IndexLayout::Global);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &options).unwrap();
        let grad = [10.0f32, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0];
        let dx = super::gather(&grad, &[0i64, 5, 4, 5], &plan, true).unwrap();
        assert_eq!(dx, [10.0, 0.0, 14.0, 15.0]);
    }
}
