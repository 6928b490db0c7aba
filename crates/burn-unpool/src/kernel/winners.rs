//! The winning writes of the forward, for implementations that place values with a list of
//! unique positions (the portable composition).

use fixedbitset::FixedBitSet;

use super::buffer::zeroed_buffer;
use super::{ChunkIndices, IndexValue, Placement, for_each_chunk};
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
    let mut targets = zeroed_buffer::<usize>(plan.input_len());
    for_each_chunk(plan, &mut targets, in_plane, |planes, targets, window| {
        let indices = &indices[planes.start * in_plane..planes.end * in_plane];
        let chunk = ChunkIndices {
            indices,
            window,
            placement: &placement,
        };
        for (element, target) in targets.iter_mut().enumerate() {
            *target = chunk
                .target(element)?
                .map_or(NOWHERE, |offset| planes.start * out_plane + offset);
        }
        Ok(())
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
