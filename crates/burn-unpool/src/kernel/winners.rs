//! The winning writes of the forward, for implementations that place values with a list of
//! unique positions (the portable composition).

use fixedbitset::FixedBitSet;

use super::buffer::zeroed_buffer;
use super::{ChunkIndices, IndexValue, Landing, Placement, for_each_chunk, with_chunk};
use crate::UnpoolPlan;
use crate::error::UnpoolError;

/// The winning writes as `(element of x, offset in the output)` flat positions, in row-major
/// order of `x`. Every output offset appears at most once; skipped indices do not appear.
pub(crate) fn winners<I: IndexValue>(
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<(usize, usize)>, UnpoolError> {
    const NOWHERE: usize = usize::MAX;
    let placement = Placement::of(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let mut targets = zeroed_buffer::<usize>(plan.input_shape())?;
    for_each_chunk(plan, &mut targets, in_plane, |planes, targets, window| {
        let indices = &indices[planes.start * in_plane..planes.end * in_plane];
        let base = planes.start * out_plane;
        with_chunk!(&placement, indices, window, |chunk| {
            for (element, (target, &index)) in targets.iter_mut().zip(indices).enumerate() {
                *target = match chunk.land(index) {
                    Landing::At(offset) => base + offset,
                    Landing::Skipped => NOWHERE,
                    Landing::Outside => return Err(chunk.bad(element)),
                };
            }
            Ok(())
        })
    })?;
    let mut claimed = FixedBitSet::with_capacity(plan.output_len());
    let mut found: Vec<(usize, usize)> = targets
        .iter()
        .enumerate()
        .rev()
        .filter(|&(_, &target)| target != NOWHERE && !claimed.put(target))
        .map(|(element, &target)| (element, target))
        .collect();
    found.reverse();
    Ok(found)
}
