//! Forward: write every value of `x` at its index, last write winning.

use bytemuck::Zeroable;

use super::buffer::zeroed_buffer;
use super::{BadIndex, IndexValue, IndexWindow, Landing, Placement, for_each_chunk};
use crate::UnpoolPlan;
use crate::error::UnpoolError;

/// The unpooled output of `x` (row-major, `plan.output_shape()`), in a fresh zeroed buffer.
pub(crate) fn unpool_forward<E, I>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<E>, UnpoolError>
where
    E: Copy + Zeroable + Send + Sync,
    I: IndexValue,
{
    let mut out = zeroed_buffer::<E>(plan.output_len());
    unpool_forward_into(x, indices, plan, &mut out)?;
    Ok(out)
}

/// Unpools `x` into `out`, which must hold `plan.output_len()` zeros (for reusing a buffer).
pub(crate) fn unpool_forward_into<E, I>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
    out: &mut [E],
) -> Result<(), UnpoolError>
where
    E: Copy + Zeroable + Send + Sync,
    I: IndexValue,
{
    assert_eq!(
        (x.len(), indices.len(), out.len()),
        (plan.input_len(), plan.input_len(), plan.output_len()),
        "unpool_forward_into: buffers of the wrong length for the plan"
    );
    let placement = Placement::of(plan);
    let in_plane = plan.input_plane_len();
    for_each_chunk(plan, out, plan.output_plane_len(), |planes, out, window| {
        let range = planes.start * in_plane..planes.end * in_plane;
        let (x, indices) = (&x[range.clone()], &indices[range]);
        match &placement {
            Placement::Identity => unpool_plane(x, indices, out, window, |i| i),
            embed => unpool_plane(x, indices, out, window, |i| embed.place(i)),
        }
    })
}

/// Scatters one chunk in row-major order of `x`, so a later duplicate overwrites an earlier one.
#[inline(always)]
fn unpool_plane<E: Copy, I: IndexValue>(
    x: &[E],
    indices: &[I],
    out: &mut [E],
    window: IndexWindow,
    place: impl Fn(usize) -> usize,
) -> Result<(), BadIndex> {
    for (element, (&value, &index)) in x.iter().zip(indices).enumerate() {
        let index = index.to_i64();
        match window.land(index) {
            Landing::At(relative) => out[place(relative)] = value,
            Landing::Skipped => {}
            Landing::Outside => {
                return Err(BadIndex {
                    element,
                    value: index,
                });
            }
        }
    }
    Ok(())
}
