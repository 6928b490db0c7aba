//! Backward and winner selection: which element of `x` owns each written output position.
//!
//! With duplicate indices the value that survives the forward is the last one in row-major order
//! of `x`. Walking `x` backwards, the first element to reach a position is therefore its winner:
//! a bitset of claimed positions finds all winners in one pass.

use bytemuck::Zeroable;
use fixedbitset::FixedBitSet;

use super::{BadIndex, IndexValue, IndexWindow, Placement, for_each_chunk, zeroed_buffer};
use crate::UnpoolPlan;
use crate::checks::UnpoolError;

/// The gradient of `x` for the output gradient `grad` (row-major, `plan.output_shape`):
/// `dx[p] = grad[indices[p]]` if `p` won the write at `indices[p]`, else zero.
pub fn unpool_backward<E, I>(
    grad: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<E>, UnpoolError>
where
    E: Copy + Zeroable + Send + Sync,
    I: IndexValue,
{
    let placement = Placement::of(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let mut dx = zeroed_buffer::<E>(plan.input_len());
    for_each_chunk(plan, &mut dx, in_plane, |planes, dx, window| {
        let grad = &grad[planes.start * out_plane..planes.end * out_plane];
        let indices = &indices[planes.start * in_plane..planes.end * in_plane];
        let mut claimed = FixedBitSet::with_capacity(grad.len());
        visit_winners(
            indices,
            window,
            &placement,
            &mut claimed,
            |element, target| {
                dx[element] = target.map_or(E::zeroed(), |t| grad[t]);
            },
        )
    })?;
    Ok(dx)
}

/// The winning writes of the forward, as `(element of x, offset in the output)` flat positions,
/// in row-major order of `x`. Every output offset appears at most once.
pub fn winners<I: IndexValue>(
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<(usize, usize)>, UnpoolError> {
    let placement = Placement::of(plan);
    let (in_plane, out_plane) = (plan.input_plane_len(), plan.output_plane_len());
    let mut targets = zeroed_buffer::<usize>(plan.input_len());
    for_each_chunk(plan, &mut targets, in_plane, |planes, targets, window| {
        let indices = &indices[planes.start * in_plane..planes.end * in_plane];
        for (element, (&index, target)) in indices.iter().zip(targets).enumerate() {
            let value = index.to_i64();
            let relative = window.relative(value).ok_or(BadIndex { element, value })?;
            *target = planes.start * out_plane + placement.place(relative);
        }
        Ok(())
    })?;
    let mut claimed = FixedBitSet::with_capacity(plan.output_len());
    let mut found: Vec<(usize, usize)> = targets
        .iter()
        .enumerate()
        .rev()
        .filter(|&(_, &target)| !claimed.put(target))
        .map(|(element, &target)| (element, target))
        .collect();
    found.reverse();
    Ok(found)
}

/// Calls `visit(element, Some(offset))` for the winner of each position and `visit(element, None)`
/// for every overwritten element, walking `indices` backwards.
#[inline(always)]
fn visit_winners<I: IndexValue>(
    indices: &[I],
    window: IndexWindow,
    placement: &Placement,
    claimed: &mut FixedBitSet,
    mut visit: impl FnMut(usize, Option<usize>),
) -> Result<(), BadIndex> {
    // Report the first bad index in forward order, as the forward does.
    let mut first_bad = None;
    for (element, &index) in indices.iter().enumerate().rev() {
        let index = index.to_i64();
        match window.relative(index) {
            Some(relative) => {
                let target = placement.place(relative);
                let won = !claimed.put(target);
                visit(element, won.then_some(target));
            }
            None => {
                first_bad = Some(BadIndex {
                    element,
                    value: index,
                })
            }
        }
    }
    first_bad.map_or(Ok(()), Err)
}
