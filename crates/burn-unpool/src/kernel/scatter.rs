//! Forward: write every value of `x` at its index, last write winning.

use bytemuck::Zeroable;

use super::{BadIndex, IndexValue, IndexWindow, Placement, for_each_chunk, zeroed_buffer};
use crate::UnpoolPlan;
use crate::checks::UnpoolError;

/// The unpooled output of `x` (row-major, `plan.output_shape`), in a fresh zeroed buffer.
pub fn unpool_forward<E, I>(
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
pub fn unpool_forward_into<E, I>(
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
        out.len(),
        plan.output_len(),
        "unpool_forward_into: output buffer of the wrong length"
    );
    let placement = Placement::of(plan);
    let in_plane = plan.input_plane_len();
    for_each_chunk(plan, out, plan.output_plane_len(), |planes, out, window| {
        let range = planes.start * in_plane..planes.end * in_plane;
        match &placement {
            Placement::Identity => {
                unpool_plane(&x[range.clone()], &indices[range], out, window, |i| i)
            }
            embed => unpool_plane(&x[range.clone()], &indices[range], out, window, |i| {
                embed.place(i)
            }),
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
        let Some(relative) = window.relative(index) else {
            return Err(BadIndex {
                element,
                value: index,
            });
        };
        out[place(relative)] = value;
    }
    Ok(())
}
