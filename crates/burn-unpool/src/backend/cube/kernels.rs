//! The CubeCL kernels. One unit per element, or per vector of neighbouring elements of one row;
//! none of them races.
//!
//! Where every index is known to lie in its own cell (the stride-sized block of the output where
//! its pool window starts; true for the indices of a pool whose windows cannot overlap), the
//! forward is one output-stationary pass that writes every output position once
//! ([`unpool_cells`]: each unit writes a vector of neighbouring positions of one row, each the
//! value of the window whose cell holds it where that window's index points there, zero
//! elsewhere; no zero-fill, no winners, no atomics) and the backward a plain gather
//! ([`gather_targets`], a vector of neighbouring elements of `x` per unit). Neighbouring units
//! write neighbouring addresses, in stores as wide as the device moves at once.
//!
//! Otherwise duplicates are resolved by a winner pass: every element of `x` offers `p + 1` to its
//! output position with an atomic max, so each position ends up holding its last writer in
//! row-major order of `x` (0 for none), whatever order the units run in. The forward then gathers
//! at every output position, and the backward lets every element of `x` check whether it won.
//!
//! Indices are read as 32-bit words, two per i64 index (little-endian: low word first), so i64
//! indices work on devices without 64-bit integers. An index lands at [`target`], or nowhere when it
//! is outside its valid range: an invalid index is never written, only reported by
//! [`index_pass`] with `flag_invalid`.

use cubecl::prelude::*;
use cubecl::std::FastDivmod;

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

/// The cells of the output: on each spatial axis, window `w` of the pool owns the output
/// coordinates from its start `w * stride - pad` to the next window's start (the last window to
/// the end of the output), so the cells tile the output plane. A pool whose windows cannot
/// overlap keeps each window inside its cell. Three axes, the last one the row; a pool of fewer
/// has leading axes of one window, size 1, stride 1 and no padding, which change nothing.
#[derive(CubeLaunch, CubeType)]
pub(super) struct CellGeometry {
    /// Spatial sizes of `x`: the number of windows on each axis.
    pub windows: Sequence<usize>,
    /// Spatial sizes of the output plane.
    pub out: Sequence<usize>,
    /// Strides of the pool.
    pub stride: Sequence<usize>,
    /// Padding of the pool at the beginning of each axis.
    pub pad: Sequence<usize>,
}

/// The sizes the one-pass kernels divide by, as [`FastDivmod`]s (a multiply-high and a shift
/// computed on the host, exact for dividends below 2^31, which the host checks): no unit divides
/// by a runtime size.
#[derive(CubeLaunch, CubeType)]
pub(super) struct CellDivisors {
    /// Elements of one input plane.
    in_plane: FastDivmod<usize>,
    /// Elements of one output plane.
    out_plane: FastDivmod<usize>,
    /// Spatial sizes of the output plane.
    out: Sequence<FastDivmod<usize>>,
    /// Strides of the pool.
    stride: Sequence<FastDivmod<usize>>,
}

/// `value`, or `max` where it is larger.
#[cube]
fn clamp_max(value: usize, max: usize) -> usize {
    let mut clamped = value;
    if value > max {
        clamped = max;
    }
    clamped
}

/// The first output coordinate of the cell of window `w` on `axis`, clamped to the output.
#[cube]
fn cell_start(w: usize, cells: &CellGeometry, #[comptime] axis: usize) -> usize {
    let start = w * cells.stride[axis];
    let pad = cells.pad[axis];
    let mut begin = 0;
    if start > pad {
        begin = start - pad;
    }
    clamp_max(begin, cells.out[axis])
}

/// The window whose cell holds output coordinate `c` on `axis`.
#[cube]
fn cell_of(c: usize, cells: &CellGeometry, #[comptime] axis: usize) -> usize {
    let w = (c + cells.pad[axis]) / cells.stride[axis];
    clamp_max(w, cells.windows[axis] - 1)
}

/// The window (flattened like `x`'s plane) whose cell holds the output-plane position `local`.
#[cube]
fn cell_of_position(local: usize, cells: &CellGeometry) -> usize {
    let c2 = local % cells.out[2];
    let rest = local / cells.out[2];
    let c1 = rest % cells.out[1];
    let c0 = rest / cells.out[1];
    let w0 = cell_of(c0, cells, 0usize);
    let w1 = cell_of(c1, cells, 1usize);
    let w2 = cell_of(c2, cells, 2usize);
    (w0 * cells.windows[1] + w1) * cells.windows[2] + w2
}

/// The index of element `p` as one word, and whether it fits one (an i64's high word is zero).
///
/// A negative i32 reads as a word of at least 2^31, above every valid i32 index; a negative i64
/// has a non-zero high word.
#[cube]
fn index_word(indices: &Tensor<u32>, p: usize, geometry: &IndexGeometry) -> (usize, bool) {
    let mut word = p;
    let mut fits = true;
    if comptime![geometry.wide] {
        word = 2 * p;
        fits = indices[word + 1] == 0u32;
    }
    (usize::cast_from(indices[word]), fits)
}

/// Where the index of element `p` of plane `plane` lands in the output; `out_len` when it is out
/// of range.
///
/// Per-plane indices address their own plane (`plane * out_plane + index`); global ones the
/// whole output. Indices are read in the output plane itself (no ONNX embedding).
#[cube]
fn landing_in(indices: &Tensor<u32>, p: usize, plane: usize, geometry: &IndexGeometry) -> usize {
    let (value, fits) = index_word(indices, p, geometry);
    let mut landing = geometry.out_len;
    if fits && value < geometry.range_end {
        if comptime![geometry.global] {
            landing = value;
        } else {
            landing = plane * geometry.out_plane + value;
        }
    }
    landing
}

/// Where the index of element `p` lands in the output ([`landing_in`] of its plane).
#[cube]
fn target(indices: &Tensor<u32>, p: usize, geometry: &IndexGeometry) -> usize {
    landing_in(indices, p, p / geometry.in_plane, geometry)
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
/// (`winners[o] = 1 + max { p : index of p lands at o }`), or with `flag_invalid` the check:
/// bit 0 of `flag[0]` when some index is out of range, bit 1 when some index lands outside its
/// own cell.
#[cube(launch_unchecked)]
pub(super) fn index_pass(
    indices: &Tensor<u32>,
    out: &mut Tensor<Atomic<u32>>,
    geometry: IndexGeometry,
    cells: CellGeometry,
    #[comptime] flag_invalid: bool,
) {
    let landing = unit_landing(indices, &geometry);
    if flag_invalid {
        if landing >= geometry.out_len {
            out[0].fetch_or(1u32);
        } else {
            let p = ABSOLUTE_POS;
            let plane = p / geometry.in_plane;
            let start = plane * geometry.out_plane;
            let mut own = false;
            if landing >= start && landing < start + geometry.out_plane {
                own = cell_of_position(landing - start, &cells) == p - plane * geometry.in_plane;
            }
            if !own {
                out[0].fetch_or(2u32);
            }
        }
    } else if landing < geometry.out_len {
        out[landing].fetch_max(u32::cast_from(ABSOLUTE_POS) + 1u32);
    }
}

/// The window on `axis` whose cell holds output coordinate `c` ([`cell_of`] without a division).
#[cube]
fn cell_of_fast(
    c: usize,
    cells: &CellGeometry,
    divisors: &CellDivisors,
    #[comptime] axis: usize,
) -> usize {
    let w = divisors.stride.index(axis).div(c + cells.pad[axis]);
    clamp_max(w, cells.windows[axis] - 1)
}

/// The forward where every index lies in its own cell, output-stationary: each unit writes a
/// vector of neighbouring output positions of one row (the host makes the vector divide the
/// row), each the value of the window whose cell holds it where that window's index points
/// there, zero elsewhere. The cells tile the output, so every position is written once.
#[cube(launch_unchecked)]
pub(super) fn unpool_cells<T: Numeric, N: Size>(
    x: &Tensor<T>,
    indices: &Tensor<u32>,
    output: &mut Tensor<Vector<T, N>>,
    geometry: IndexGeometry,
    cells: CellGeometry,
    divisors: CellDivisors,
    #[define(T)] _dtype: ElemType,
) {
    let width = output.vector_size();
    let first = ABSOLUTE_POS * width;
    if first >= geometry.out_len {
        terminate!();
    }
    let (plane, local) = divisors.out_plane.div_mod(first);
    let (rest, c2) = divisors.out.index(2).div_mod(local);
    let (c0, c1) = divisors.out.index(1).div_mod(rest);
    let w0 = cell_of_fast(c0, &cells, &divisors, 0usize);
    let w1 = cell_of_fast(c1, &cells, &divisors, 1usize);
    let row = plane * geometry.in_plane + (w0 * cells.windows[1] + w1) * cells.windows[2];
    // The position an index names: in its plane, or in the whole output.
    let mut named = local;
    if comptime![geometry.global] {
        named = first;
    }
    let last = cells.windows[2] - 1;
    let mut w2 = cell_of_fast(c2, &cells, &divisors, 2usize);
    // The window's index and value, read once per window the vector meets.
    let (mut index, mut fits) = index_word(indices, row + w2, &geometry);
    let mut value = x[row + w2];
    let zero = T::from_int(0);
    let mut values = Vector::<T, N>::empty();
    #[unroll]
    for i in 0..width {
        // The cells of an axis follow each other: the next position is in this cell or the next.
        if comptime![i > 0] {
            let next = cell_start(w2 + 1, &cells, 2usize);
            if w2 < last && c2 + i >= next {
                w2 += 1;
                (index, fits) = index_word(indices, row + w2, &geometry);
                value = x[row + w2];
            }
        }
        values.insert(i, select(fits && index == named + i, value, zero));
    }
    output[ABSOLUTE_POS] = values;
}

/// The backward where every index lies in its own cell (so no two meet): every element of `x`
/// takes the gradient at its index, a vector of neighbouring elements of one row per unit.
#[cube(launch_unchecked)]
pub(super) fn gather_targets<T: Numeric, N: Size>(
    grad: &Tensor<T>,
    indices: &Tensor<u32>,
    dx: &mut Tensor<Vector<T, N>>,
    geometry: IndexGeometry,
    divisors: CellDivisors,
    #[define(T)] _dtype: ElemType,
) {
    let width = dx.vector_size();
    let first = ABSOLUTE_POS * width;
    if first >= geometry.in_len {
        terminate!();
    }
    let plane = divisors.in_plane.div(first);
    let mut values = Vector::<T, N>::empty();
    #[unroll]
    for i in 0..width {
        let landing = landing_in(indices, first + i, plane, &geometry);
        let mut value = T::from_int(0);
        if landing < geometry.out_len {
            value = grad[landing];
        }
        values.insert(i, value);
    }
    dx[ABSOLUTE_POS] = values;
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
