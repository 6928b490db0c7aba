//! Forward: write every value of `x` at its index, last write winning.

use bytemuck::Zeroable;

use super::buffer::{write_zeros, written_buffer, zeroed_buffer, zeroed_by_the_os};
use super::{
    BadIndex, ChunkIndices, IndexValue, Landing, Placement, Value, for_each_chunk, with_chunk,
};
use crate::error::UnpoolError;
use crate::plan::UnpoolPlan;

/// The unpooled output of `x`, zeroed by the OS where large, else by the task writing each plane.
pub(crate) fn unpool_forward<E: Value, I: IndexValue>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
) -> Result<Vec<E>, UnpoolError> {
    if zeroed_by_the_os(plan.output_len().saturating_mul(size_of::<E>())) {
        let mut out = zeroed_buffer::<E>(plan.output_shape())?;
        unpool_forward_into(x, indices, plan, &mut out)?;
        return Ok(out);
    }
    // Every element is written: each plane is zeroed by its task first, or by `for_each_chunk`.
    written_buffer(plan.output_shape(), |out| {
        scatter_planes(x, indices, plan, out, write_zeros)
    })
}

/// Unpools `x` into `out`, which must hold `plan.output_len()` zeros.
fn unpool_forward_into<E: Value, I: IndexValue>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
    out: &mut [E],
) -> Result<(), UnpoolError> {
    scatter_planes(x, indices, plan, out, |zeros| zeros)
}

/// Scatters `x` into `out` plane by plane; `zeroed` turns a task's planes into writable zeros.
fn scatter_planes<C, E, I>(
    x: &[E],
    indices: &[I],
    plan: &UnpoolPlan,
    out: &mut [C],
    zeroed: impl Fn(&mut [C]) -> &mut [E] + Sync,
) -> Result<(), UnpoolError>
where
    C: Zeroable + Copy + Send,
    E: Value,
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
        let out = zeroed(out);
        with_chunk!(&placement, indices, window, |chunk| chunk.scatter(x, out))
    })
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// Scatters `x` into `out` in row-major order of `x`: a later duplicate overwrites an earlier.
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

#[cfg(test)]
mod tests {
    use core::mem::MaybeUninit;

    use super::*;
    use crate::MaxUnpoolOptions;

    /// `scatter_planes` into cells of junk (`u32::MAX`, initialised so reading them is defined).
    fn scatter_into_junk(x: &[u32], indices: &[i64], plan: &UnpoolPlan) -> Vec<u32> {
        let mut cells = vec![MaybeUninit::new(u32::MAX); plan.output_len()];
        scatter_planes(x, indices, plan, &mut cells, write_zeros).unwrap();
        // SAFETY: every cell was initialised above, and the op writes only `u32`s into them.
        cells
            .iter()
            .map(|cell| unsafe { cell.assume_init() })
            .collect()
    }

    #[test]
    fn junk_comes_out_zero_where_no_index_lands() {
        let (planes, side) = (8, 64);
        let half = [1, planes, side / 2, side / 2];
        let plan = UnpoolPlan::new(&half, &half, &MaxUnpoolOptions::new([2, 2])).unwrap();
        assert!(!crate::backend::cpu::parallel::runs_sequentially(
            plan.output_len()
        ));
        let x: Vec<u32> = (1..=plan.input_len() as u32).collect();
        // The top-left corner of each 2 x 2 window, per plane.
        let indices: Vec<i64> = (0..plan.input_len())
            .map(|i| {
                let (row, col) = ((i / (side / 2)) % (side / 2), i % (side / 2));
                (2 * row * side + 2 * col) as i64
            })
            .collect();
        let out = scatter_into_junk(&x, &indices, &plan);
        for (at, &v) in out.iter().enumerate() {
            let (row, col) = ((at / side) % side, at % side);
            assert_eq!(v == 0, row % 2 == 1 || col % 2 == 1, "output {at}: {v}");
        }
        // And the forward itself, through whichever buffer the allocator gives.
        drop(vec![u32::MAX; plan.output_len()]);
        assert_eq!(unpool_forward(&x, &indices, &plan).unwrap(), out);
    }

    #[test]
    fn an_output_without_input_is_all_zeros() {
        let options = MaxUnpoolOptions::new([2]).with_output_size([1]);
        let plan = UnpoolPlan::new(&[1, 3, 0], &[1, 3, 0], &options).unwrap();
        assert_eq!(plan.output_len(), 3);
        assert_eq!(scatter_into_junk(&[], &[], &plan), [0; 3]);
        assert_eq!(unpool_forward::<u32, i64>(&[], &[], &plan).unwrap(), [0; 3]);
    }
}
