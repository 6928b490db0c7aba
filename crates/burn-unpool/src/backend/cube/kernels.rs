//! The CubeCL kernels. One unit per element; none of them races.
//!
//! Duplicates are resolved by a winner pass: every element of `x` offers `p + 1` to its output
//! position with an atomic max, so each position ends up holding its last writer in row-major order
//! of `x` (0 for none), whatever order the units run in. The forward then gathers at every output
//! position, and the backward lets every element of `x` check whether it won.
//!
//! Indices are read as 32-bit words, two per i64 index (little-endian: low word first), so i64
//! indices work on devices without 64-bit integers. An index lands at [`target`], or nowhere when it
//! is outside its valid range: an invalid index is never written, only reported by
//! [`index_pass`] with `flag_invalid`.

use cubecl::prelude::*;

/// How the indices address the output, as every kernel that reads them needs it.
#[derive(CubeLaunch, CubeType)]
pub(super) struct IndexGeometry {
    /// Elements of `x` (and of the indices).
    in_len: usize,
    /// Elements of one input plane.
    in_plane: usize,
    /// Elements of one output plane.
    out_plane: usize,
    /// The exclusive upper bound of valid index values.
    range_end: usize,
    /// Elements of the output.
    out_len: usize,
    /// Two words per index (i64) rather than one (i32).
    #[cube(comptime)]
    wide: bool,
    /// Indices address the whole output rather than their own plane.
    #[cube(comptime)]
    global: bool,
}

/// Where the index of element `p` lands in the output; `out_len` when it is out of range.
///
/// Per-plane indices address their own plane (`plane(p) * out_plane + index`); global ones the
/// whole output. Indices are read in the output plane itself (no ONNX embedding).
#[cube]
fn target(indices: &Tensor<u32>, p: usize, geometry: &IndexGeometry) -> usize {
    // A negative i32 reads as a word of at least 2^31, above every valid i32 index; a negative
    // i64 has a non-zero high word.
    let mut word = p;
    let mut fits = true;
    if comptime![geometry.wide] {
        word = 2 * p;
        fits = indices[word + 1] == 0u32;
    }
    let value = usize::cast_from(indices[word]);
    let mut landing = geometry.out_len;
    if fits && value < geometry.range_end {
        if comptime![geometry.global] {
            landing = value;
        } else {
            landing = (p / geometry.in_plane) * geometry.out_plane + value;
        }
    }
    landing
}

/// Where the index of this unit's element lands ([`target`]); units past the last element stop.
#[cube]
fn unit_landing(indices: &Tensor<u32>, geometry: &IndexGeometry) -> usize {
    let p = ABSOLUTE_POS;
    if p >= geometry.in_len {
        terminate!();
    }
    target(indices, p, geometry)
}

/// One pass over the indices, on a zero-filled `out`. The winner pass
/// (`winners[o] = 1 + max { p : index of p lands at o }`), or with `flag_invalid` the check
/// (`flag[0] = 1` when some index is out of range).
#[cube(launch_unchecked)]
pub(super) fn index_pass(
    indices: &Tensor<u32>,
    out: &mut Tensor<Atomic<u32>>,
    geometry: IndexGeometry,
    #[comptime] flag_invalid: bool,
) {
    let landing = unit_landing(indices, &geometry);
    if flag_invalid {
        if landing >= geometry.out_len {
            out[0].fetch_max(1u32);
        }
    } else if landing < geometry.out_len {
        out[landing].fetch_max(u32::cast_from(ABSOLUTE_POS) + 1u32);
    }
}

/// The forward: every output position takes its winner's value, or zero.
#[cube(launch_unchecked)]
pub(super) fn gather_winners<T: Numeric>(
    x: &Tensor<T>,
    winners: &Tensor<u32>,
    output: &mut Tensor<T>,
    out_len: usize,
    #[define(T)] _dtype: ElemType,
) {
    let o = ABSOLUTE_POS;
    if o >= out_len {
        terminate!();
    }
    let winner = winners[o];
    if winner > 0u32 {
        output[o] = x[usize::cast_from(winner - 1u32)];
    } else {
        output[o] = T::from_int(0);
    }
}

/// The backward: every element of `x` takes the gradient at its index if it won the write there.
#[cube(launch_unchecked)]
pub(super) fn winner_gradient<T: Numeric>(
    grad: &Tensor<T>,
    indices: &Tensor<u32>,
    winners: &Tensor<u32>,
    dx: &mut Tensor<T>,
    geometry: IndexGeometry,
    #[define(T)] _dtype: ElemType,
) {
    let landing = unit_landing(indices, &geometry);
    let mut value = T::from_int(0);
    // Nested, not `&&`: a kernel's `&&` need not short-circuit, and `winners[out_len]` is past
    // the end.
    #[allow(clippy::collapsible_if)]
    if landing < geometry.out_len {
        if winners[landing] == u32::cast_from(ABSOLUTE_POS) + 1u32 {
            value = grad[landing];
        }
    }
    dx[ABSOLUTE_POS] = value;
}
