//! Forward: write every value of `x` at its index, last write winning.

use super::buffer::zeroed_buffer;
use super::{
    BadIndex, ChunkIndices, IndexValue, Landing, Placement, Value, for_each_chunk, with_chunk,
};
use crate::UnpoolPlan;
use crate::error::UnpoolError;

/// The unpooled output of `x` (row-major, `plan.output_shape()`), in a fresh zeroed buffer.
pub(crate) fn unpool_forward<E: Value, I: IndexValue>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<E>, UnpoolError> {
    let mut out = zeroed_buffer::<E>(plan.output_shape())?;
    unpool_forward_into(x, indices, plan, &mut out)?;
    Ok(out)
}

/// Unpools `x` into `out`, which must hold `plan.output_len()` zeros (for reusing a buffer).
pub(crate) fn unpool_forward_into<E: Value, I: IndexValue>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
    out: &mut [E],
) -> Result<(), UnpoolError> {
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
        with_chunk!(&placement, indices, window, |chunk| chunk.scatter(x, out))
    })
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// Scatters the chunk's values `x` into `out` in row-major order of `x`, so a later
    /// duplicate overwrites an earlier one.
    #[inline(always)]
    fn scatter<E: Copy>(&self, x: &[E], out: &mut [E]) -> Result<(), BadIndex> {
        for (element, (&value, &index)) in x.iter().zip(self.indices).enumerate() {
            match self.land(index) {
                Landing::At(target) => out[target] = value,
                Landing::Skipped => {}
                Landing::Outside => return Err(self.bad(element)),
            }
        }
        Ok(())
    }
}
