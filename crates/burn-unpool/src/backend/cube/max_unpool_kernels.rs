//! The CubeCL unpooling kernels, one unit per element or per vector of one row; none races. Where
//! every index lies in its own cell (the stride-sized block where its window starts), the forward
//! is one pass ([`unpool_cells`]), the backward a gather ([`gather_targets`]); otherwise in the
//! winner pass ([`index_pass`]) each `p` offers `p + 1` by atomic max, so the last writer wins.
//! Indices are read as 32-bit words (an i64 low word first); one out of range is never written.

use cubecl::prelude::*;
use cubecl::std::FastDivmod;

/// How the indices address the output, as every kernel that reads them needs it.
#[derive(CubeLaunch, CubeType)]
pub(super) struct IndexGeometry {
    pub(super) in_len: usize,
    pub(super) in_plane: usize,
    pub(super) out_plane: usize,
    /// The exclusive upper bound of valid index values.
    pub(super) range_end: usize,
    pub(super) out_len: usize,
    /// Two words per index (i64) rather than one (i32).
    #[cube(comptime)]
    pub(super) wide: bool,
    /// Indices address the whole output rather than their own plane.
    #[cube(comptime)]
    pub(super) global: bool,
}

/// The output's cells: window `w` owns the coordinates from `w * stride - pad` to the next one's
/// start (the last to the end), tiling the plane. Three axes; missing leading ones are trivial.
#[derive(CubeLaunch, CubeType)]
pub(super) struct CellGeometry {
    /// Spatial sizes of `x`: the number of windows on each axis.
    pub windows: Sequence<usize>,
    pub out: Sequence<usize>,
    pub stride: Sequence<usize>,
    /// Padding of the pool at the beginning of each axis.
    pub pad: Sequence<usize>,
}

/// The sizes the one-pass kernels divide by, as [`FastDivmod`]s (exact below 2^31, host-checked).
#[derive(CubeLaunch, CubeType)]
pub(super) struct CellDivisors {
    pub(super) in_plane: FastDivmod<usize>,
    pub(super) out_plane: FastDivmod<usize>,
    pub(super) out: Sequence<FastDivmod<usize>>,
    pub(super) stride: Sequence<FastDivmod<usize>>,
}

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
/// A negative i32 reads as at least 2^31, above every valid index.
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

/// Where element `p`'s index lands: in its plane, or global; `out_len` when out of range.
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

#[cube]
fn target(indices: &Tensor<u32>, p: usize, geometry: &IndexGeometry) -> usize {
    landing_in(indices, p, p / geometry.in_plane, geometry)
}

/// Where the index of this unit's element lands; units past the last element stop.
#[cube]
fn unit_landing(indices: &Tensor<u32>, geometry: &IndexGeometry) -> usize {
    let p = ABSOLUTE_POS;
    if p >= geometry.in_len {
        terminate!();
    }
    target(indices, p, geometry)
}

/// One pass over the indices into a zero-filled `out`: winners (`out[o] = 1 + max p landing at o`),
/// or with `flag_invalid` bit 0 of `out[0]` if an index is out of range, bit 1 if outside its cell.
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

/// The forward with every index in its own cell: each unit writes a vector of one row, each place
/// its cell's value where that window's index points there, else zero (written once: cells tile).
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
    let mut named = local;
    if comptime![geometry.global] {
        named = first;
    }
    let last = cells.windows[2] - 1;
    let mut w2 = cell_of_fast(c2, &cells, &divisors, 2usize);
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

/// The backward with every index in its own cell: each element of `x` takes the gradient at it.
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
    // Nested: a kernel's `&&` need not short-circuit, and `winners[out_len]` is past the end.
    #[allow(clippy::collapsible_if)]
    if landing < geometry.out_len {
        if winners[landing] == u32::cast_from(ABSOLUTE_POS) + 1u32 {
            value = grad[landing];
        }
    }
    dx[ABSOLUTE_POS] = value;
}

/// 64-bit indices (two words each, low first) as i32: an index past `i32::MAX`, or negative,
/// becomes -1, out of range as it was. For the composition on devices without 64-bit integers.
#[cube(launch_unchecked)]
pub(super) fn narrow_indices(words: &Tensor<u32>, narrow: &mut Tensor<i32>) {
    let p = ABSOLUTE_POS;
    if p >= narrow.len() {
        terminate!();
    }
    let (low, high) = (words[2 * p], words[2 * p + 1]);
    if high == 0u32 && low <= 0x7FFF_FFFFu32 {
        narrow[p] = i32::cast_from(low);
    } else {
        narrow[p] = -1i32;
    }
}
