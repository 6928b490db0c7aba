//! Backward: each element of `x` takes the output gradient at its index if its write survived
//! (the last writer in row-major order), found by a backward walk only in chunks where a position
//! was claimed twice. Claims are bytes, not bits: a bit's word would be read right after a write.

use core::mem::MaybeUninit;

use super::buffer::written_buffer;
use super::{
    BadIndex, ChunkIndices, IndexValue, Landing, Placement, Value, for_each_chunk, with_chunk,
};
use crate::diagnostics::{self, Path};
use crate::error::UnpoolError;
use crate::plan::UnpoolPlan;

/// The gradient of `x`: `dx[p] = grad[indices[p]]` if `p` won the write at `indices[p]`, else zero.
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

fn gather<E: Value, I: IndexValue>(
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
    /// One chunk, writing all of `dx`: a gather, then (if a target repeats) a walk zeroing losers.
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
        // Element 1 of plane 0 writes into plane 1, where element 3 writes last: one chunk, 3 wins.
        let options = MaxUnpoolOptions::new([2]).with_index_layout(IndexLayout::Global);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &options).unwrap();
        let grad = [10.0f32, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0];
        let dx = super::gather(&grad, &[0i64, 5, 4, 5], &plan, true).unwrap();
        assert_eq!(dx, [10.0, 0.0, 14.0, 15.0]);
    }
}
