//! The CubeCL kernels. One unit per element; none of them races.
//!
//! Where every index is known to lie in its own cell (the stride-sized block of the output where
//! its pool window starts; true for the indices of a pool whose windows cannot overlap), the
//! forward is one pass that writes every output position once ([`unpool_cells`]: each element
//! of `x` writes its cell, its value at its index and zero elsewhere; no zero-fill, no winners,
//! no atomics) and the backward a plain gather ([`gather_targets`]).
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
/// overlap keeps each window inside its cell. Three axes; those past the rank have one window,
/// size 1, stride 1 and no padding, which changes nothing.
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

/// One past the last output coordinate of the cell of window `w` on `axis`.
#[cube]
fn cell_end(w: usize, cells: &CellGeometry, #[comptime] axis: usize) -> usize {
    let mut end = cells.out[axis];
    if w + 1 < cells.windows[axis] {
        end = cell_start(w + 1, cells, axis);
    }
    end
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

/// The forward where every index lies in its own cell: every element of `x` writes its whole
/// cell, its value where its index points and zero elsewhere. The cells tile the output, so every
/// output position is written once.
#[cube(launch_unchecked)]
pub(super) fn unpool_cells<T: Numeric>(
    x: &Tensor<T>,
    indices: &Tensor<u32>,
    output: &mut Tensor<T>,
    geometry: IndexGeometry,
    cells: CellGeometry,
    #[define(T)] _dtype: ElemType,
) {
    let landing = unit_landing(indices, &geometry);
    let p = ABSOLUTE_POS;
    let value = x[p];
    let zero = T::from_int(0);
    let plane = p / geometry.in_plane;
    let local = p - plane * geometry.in_plane;
    let w2 = local % cells.windows[2];
    let rest = local / cells.windows[2];
    let w1 = rest % cells.windows[1];
    let w0 = rest / cells.windows[1];
    let base = plane * geometry.out_plane;
    let (end0, end1, end2) = (
        cell_end(w0, &cells, 0usize),
        cell_end(w1, &cells, 1usize),
        cell_end(w2, &cells, 2usize),
    );
    let start2 = cell_start(w2, &cells, 2usize);
    for c0 in cell_start(w0, &cells, 0usize)..end0 {
        for c1 in cell_start(w1, &cells, 1usize)..end1 {
            let row = base + (c0 * cells.out[1] + c1) * cells.out[2];
            for c2 in start2..end2 {
                let o = row + c2;
                output[o] = select(o == landing, value, zero);
            }
        }
    }
}

/// The backward where every index lies in its own cell (so no two meet): every element of `x`
/// takes the gradient at its index.
#[cube(launch_unchecked)]
pub(super) fn gather_targets<T: Numeric>(
    grad: &Tensor<T>,
    indices: &Tensor<u32>,
    dx: &mut Tensor<T>,
    geometry: IndexGeometry,
    #[define(T)] _dtype: ElemType,
) {
    let landing = unit_landing(indices, &geometry);
    let mut value = T::from_int(0);
    if landing < geometry.out_len {
        value = grad[landing];
    }
    dx[ABSOLUTE_POS] = value;
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
