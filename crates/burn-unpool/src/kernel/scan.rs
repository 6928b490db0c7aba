//! The index-value check on its own: the first index outside its valid range.

use super::IndexValue;
use crate::UnpoolPlan;

/// The flat position and value of the first index of `indices` outside its range for `plan`:
/// `[0, S)` for per-plane indices (`S` elements of the index plane), `[0, N*C*S)` for global ones.
pub(crate) fn first_invalid_index<I: IndexValue>(
    indices: &[I],
    plan: &UnpoolPlan,
) -> Option<(usize, i128)> {
    let end = plan.index_range_end() as u64;
    let position = indices.iter().position(|&index| {
        let value = index.to_i64();
        value < 0 || value as u64 >= end
    })?;
    Some((position, indices[position].to_i128()))
}

#[cfg(test)]
mod tests {
    use crate::{IndexLayout, MaxUnpoolOptions, UnpoolPlan};

    #[test]
    fn finds_the_first_index_out_of_range_for_either_layout() {
        let per_plane = MaxUnpoolOptions::new([2]);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &per_plane).unwrap();
        assert_eq!(super::first_invalid_index(&[0i64, 3, 2, 1], &plan), None);
        assert_eq!(
            super::first_invalid_index(&[0i32, 3, 4, -1], &plan),
            Some((2, 4))
        );
        let global = per_plane.with_index_layout(IndexLayout::Global);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &global).unwrap();
        assert_eq!(super::first_invalid_index(&[0i64, 7, 4, 1], &plan), None);
        assert_eq!(
            super::first_invalid_index(&[-1i64, 8], &plan),
            Some((0, -1))
        );
        // Unsigned indices reach the check as themselves, never wrapped to a valid value.
        assert_eq!(
            super::first_invalid_index(&[0u32, 1 << 31], &plan),
            Some((1, 1 << 31))
        );
        assert_eq!(
            super::first_invalid_index(&[0u64, u64::MAX], &plan),
            Some((1, u64::MAX.into()))
        );
    }
}
