//! The host side of the unpooling kernels: which plans they address, and their launches.

use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::cast;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;
use cubecl::std::FastDivmod;

use super::max_unpool_kernels::{
    self as kernels, CellDivisorsLaunch, CellGeometryLaunch, IndexGeometryLaunch,
};
use super::{
    DIVIDEND_LIMIT, contiguous, empty, launch_grid, record_launch, storage_type, vector_size, zeros,
};
use crate::IndexLayout;
use crate::diagnostics::{self, Path};
use crate::plan::{Direction, UnpoolPlan};

/// Whether the unpooling kernels address `plan`: at most three axes, indices read in the output
/// plane, sizes and cell sums (`w * stride + pad`, `c + pad`) below `u32::MAX` (32-bit math).
pub(super) fn addresses(plan: &UnpoolPlan) -> bool {
    let addressable = |len: u128| len < u128::from(u32::MAX);
    let geometry = plan.geometry();
    let cells_fit = (0..geometry.dims()).all(|axis| {
        let pad = geometry.padding[axis].0 as u128;
        let windows = plan.input_shape()[axis + 2] as u128;
        let out = plan.output_shape()[axis + 2] as u128;
        addressable(windows * geometry.stride[axis] as u128 + pad) && addressable(out + pad)
    });
    geometry.dims() <= 3
        && plan.indices_address_output_plane()
        && addressable(plan.input_len() as u128)
        && addressable(plan.output_len() as u128)
        && addressable(plan.index_range_end() as u128)
        && cells_fit
}

/// Whether the one-pass kernels run `plan`: every index in its own cell, and every dividend and
/// stride they divide by below 2^31, where [`FastDivmod`] is exact. Others take the winner pass.
fn one_pass(plan: &UnpoolPlan) -> bool {
    let geometry = plan.geometry();
    let padded = (0..geometry.dims())
        .map(|axis| plan.output_shape()[axis + 2] as u128 + geometry.padding[axis].0 as u128)
        .max()
        .unwrap_or(0);
    let below = |len: u128| len < DIVIDEND_LIMIT as u128;
    plan.targets_unique()
        && below(plan.input_len() as u128)
        && below(plan.output_len() as u128)
        && below(padded)
        && geometry.stride.iter().all(|&stride| below(stride as u128))
}

/// An addressed plan's indices as 32-bit words (two per i64 index), with the sizes they address.
pub(super) struct KernelIndices {
    words: CubeTensor,
    wide: bool,
    global: bool,
    in_len: usize,
    in_plane: usize,
    out_len: usize,
    out_plane: usize,
    range_end: usize,
    one_pass: bool,
    /// Windows, output sizes, strides and begin paddings of three spatial axes.
    cells: [[usize; 3]; 4],
}

impl KernelIndices {
    #[track_caller]
    pub(super) fn new(plan: &UnpoolPlan, indices: CubeTensor) -> Self {
        assert!(
            addresses(plan),
            "UnpoolBackend on a CubeCL device: the GPU kernels address up to u32::MAX - 1 elements \
             with indices read in the output plane, got a plan for output {:?} with indices read \
             in {:?} (the tensor functions run such plans with the composition)",
            plan.output_shape(),
            plan.index_plane()
        );
        // Narrower indices widen to i32 losslessly: a negative one stays out of range.
        let (indices, wide) = match indices.dtype {
            DType::I32 | DType::U32 => (indices, false),
            DType::I64 | DType::U64 => (indices, true),
            DType::I16 | DType::I8 | DType::U16 | DType::U8 => {
                diagnostics::record(Path::KernelLaunch);
                (cast(indices, DType::I32), false)
            }
            dtype => panic!(
                "UnpoolBackend::max_unpool: indices must be of an integer dtype, got {dtype:?}"
            ),
        };
        let words = as_words(indices);
        let geometry = plan.geometry();
        // Leading axes of size 1 up to three; the last axis is the row the vectors run along.
        let axes = |values: &[usize], fill: usize| {
            let lead = 3 - values.len();
            std::array::from_fn(|axis| axis.checked_sub(lead).map_or(fill, |axis| values[axis]))
        };
        let pads: Vec<usize> = geometry.padding.iter().map(|&(begin, _)| begin).collect();
        Self {
            words,
            wide,
            global: plan.layout() == IndexLayout::Global,
            in_len: plan.input_len(),
            in_plane: plan.input_plane_len(),
            out_len: plan.output_len(),
            out_plane: plan.output_plane_len(),
            range_end: plan.index_range_end(),
            one_pass: one_pass(plan),
            cells: [
                axes(&plan.input_shape()[2..], 1),
                axes(&plan.output_shape()[2..], 1),
                axes(&geometry.stride, 1),
                axes(&pads, 0),
            ],
        }
    }

    fn geometry(&self) -> IndexGeometryLaunch {
        IndexGeometryLaunch {
            in_len: self.in_len,
            in_plane: self.in_plane,
            out_plane: self.out_plane,
            range_end: self.range_end,
            out_len: self.out_len,
            wide: self.wide,
            global: self.global,
        }
    }

    fn cells(&self) -> CellGeometryLaunch {
        let sequence = |values: [usize; 3]| {
            let mut sequence = SequenceArg::new();
            values.into_iter().for_each(|value| sequence.push(value));
            sequence
        };
        let [windows, out, stride, pad] = self.cells.map(sequence);
        CellGeometryLaunch {
            windows,
            out,
            stride,
            pad,
        }
    }

    fn divisors(&self) -> CellDivisorsLaunch {
        let divisors = |values: [usize; 3]| {
            let mut sequence = SequenceArg::<FastDivmod<usize>>::new();
            values.into_iter().for_each(|value| sequence.push(value));
            sequence
        };
        let [_, out, stride, _] = self.cells;
        CellDivisorsLaunch {
            in_plane: self.in_plane,
            out_plane: self.out_plane,
            out: divisors(out),
            stride: divisors(stride),
        }
    }

    /// `direction` into a new tensor of `shape`: one pass if [`one_pass`], else the winner pass.
    pub(super) fn gather(
        &self,
        direction: Direction,
        input: CubeTensor,
        shape: Shape,
    ) -> CubeTensor {
        let output = empty(&input, shape, input.dtype);
        let units = output.shape().num_elements();
        if units == 0 {
            return output;
        }
        let input = contiguous(input);
        let (client, dtype, geometry) =
            (&output.client, storage_type(output.dtype), self.geometry());
        if self.one_pass && self.in_len > 0 {
            diagnostics::record(Path::OnePassKernel);
            // Vectors never cross an output row (forward) or a plane of `x` (backward).
            let run = match direction {
                Direction::Forward => self.cells[1][2],
                Direction::Backward => self.in_plane,
            };
            let width = vector_size(&output, run);
            record_launch(width);
            let (cube_dim, count) = launch_grid(&output, units / width);
            let (input, indices, out) = (
                input.into_tensor_arg(),
                self.words.clone().into_tensor_arg(),
                output.clone().into_tensor_arg(),
            );
            // SAFETY: `one_pass` bounds every dividend below 2^31 (exact `FastDivmod`s); callers'
            // `checked_result_shape` that `indices` has `x`'s shape, so `words` holds `in_len`
            // indices (`addresses`: `in_len < u32::MAX`; a binding <= 4 GiB, so `2 * p` fits). One
            // unit per `width`-vector (dividing the rows), the rest stop; forward reads stay in
            // the unit's plane (windows clamped), backward ones read `grad` below `out_len`.
            unsafe {
                match direction {
                    Direction::Forward => kernels::unpool_cells::launch_unchecked(
                        client,
                        count,
                        cube_dim,
                        width,
                        input,
                        indices,
                        out,
                        geometry,
                        self.cells(),
                        self.divisors(),
                        dtype,
                    ),
                    Direction::Backward => kernels::gather_targets::launch_unchecked(
                        client,
                        count,
                        cube_dim,
                        width,
                        input,
                        indices,
                        out,
                        geometry,
                        self.divisors(),
                        dtype,
                    ),
                }
            }
            return output;
        }
        diagnostics::record(Path::WinnerKernel);
        let winners = self.elect_winners().into_tensor_arg();
        diagnostics::record(Path::KernelLaunch);
        let (cube_dim, count) = launch_grid(&output, units);
        let (input, out) = (input.into_tensor_arg(), output.clone().into_tensor_arg());
        // SAFETY: every winner is at most `in_len`; `winners` (`out_len` words) is read below
        // `out_len`; units past `units`, the output's length, stop; `indices` holds `in_len`.
        unsafe {
            match direction {
                Direction::Forward => kernels::gather_winners::launch_unchecked(
                    client, count, cube_dim, input, winners, out, units, dtype,
                ),
                Direction::Backward => kernels::winner_gradient::launch_unchecked(
                    client,
                    count,
                    cube_dim,
                    input,
                    self.words.clone().into_tensor_arg(),
                    winners,
                    out,
                    geometry,
                    dtype,
                ),
            }
        }
        output
    }

    /// `[1]` of `u32`: bit 0 when some index is out of range, bit 1 when one is outside its cell.
    pub(super) fn index_check(&self) -> CubeTensor {
        self.index_pass(1, true)
    }

    /// The winner pass: a `u32` tensor of `out_len` winners (`p + 1`, or 0 for none).
    fn elect_winners(&self) -> CubeTensor {
        self.index_pass(self.out_len, false)
    }

    fn index_pass(&self, len: usize, flag_invalid: bool) -> CubeTensor {
        diagnostics::record(Path::KernelLaunch);
        let out = zeros(&self.words, len, DType::U32);
        if self.in_len == 0 {
            return out;
        }
        diagnostics::record(Path::KernelLaunch);
        let (indices, out_arg) = (
            self.words.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
        );
        let (cube_dim, cube_count) = launch_grid(&out, self.in_len);
        let (client, geometry, cells) = (&out.client, self.geometry(), self.cells());
        // SAFETY: `indices` holds `in_len` indices; `out` is written only at landings below
        // `out_len` (winners, `len = out_len`) or at word 0 (the flag); units past `in_len` stop.
        unsafe {
            kernels::index_pass::launch_unchecked(
                client,
                cube_count,
                cube_dim,
                indices,
                out_arg,
                geometry,
                cells,
                flag_invalid,
            );
        }
        out
    }
}

/// `indices` as the composition reads them on the device: as they are where it computes with
/// their dtype, else (64-bit indices without 64-bit integers) narrowed to i32 by one kernel, which
/// `op` allows only where every valid index is below 2^31 ([`reads_index_words`]).
pub(super) fn for_composition(indices: CubeTensor, plan: &UnpoolPlan) -> CubeTensor {
    if indices.dtype.size() != 8 || CubeBackend::supports_dtype(&indices.device, indices.dtype) {
        return indices;
    }
    let end = plan.index_range_end();
    assert!(
        narrows(plan),
        "UnpoolBackend: i32 cannot hold indices up to {end} (no 64-bit integers)"
    );
    let len = indices.shape().num_elements();
    let narrow = empty(&indices, indices.shape(), DType::I32);
    if len == 0 {
        return narrow;
    }
    diagnostics::record(Path::KernelLaunch);
    let words = as_words(indices);
    let (cube_dim, count) = launch_grid(&narrow, len);
    // SAFETY: `words` is the contiguous binding of `len` 8-byte indices (`size() == 8` above):
    // `2 * len` words. Unit `p < len` reads words `2p`, `2p + 1` and writes `narrow[p]` (`len`
    // elements); the rest stop; `len == 0` launches nothing.
    unsafe {
        kernels::narrow_indices::launch_unchecked(
            &narrow.client,
            count,
            cube_dim,
            words.into_tensor_arg(),
            narrow.clone().into_tensor_arg(),
        );
    }
    narrow
}

/// Whether `plan`'s 64-bit indices are read without 64-bit integers: as 32-bit words by the
/// kernels, or narrowed to i32 for the composition ([`for_composition`]) where every index fits.
pub(in crate::backend) fn reads_index_words(plan: &UnpoolPlan) -> bool {
    addresses(plan) || narrows(plan)
}

/// Whether every valid index of `plan` fits an i32, so 64-bit ones narrow without loss.
fn narrows(plan: &UnpoolPlan) -> bool {
    plan.index_range_end() <= 1 << 31
}

/// `indices`, contiguous, as the u32 words of its binding (two per 64-bit index), read in place:
/// a contiguous tensor's binding starts at its first element.
fn as_words(indices: CubeTensor) -> CubeTensor {
    let indices = contiguous(indices);
    let words = indices.shape().num_elements() * indices.dtype.size() / 4;
    CubeTensor::new_contiguous(
        indices.client,
        indices.device,
        Shape::new([words]),
        indices.handle,
        DType::U32,
    )
}

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_LIMIT, one_pass};
    use crate::{MaxUnpoolOptions, UnpoolPlan};

    /// A 2x2 unpooling of one plane into `height x width`, its indices known to be in their cells.
    fn plan(height: usize, width: usize) -> UnpoolPlan {
        let options = MaxUnpoolOptions::new([2, 2]).with_output_size([height, width]);
        let pooled = [1, 1, height / 2, width / 2];
        UnpoolPlan::new(&pooled, &pooled, &options)
            .expect("a valid plan")
            .with_indices_in_cells()
    }

    /// `FastDivmod` is exact below 2^31: an output of 2^31 positions takes the winner pass.
    #[test]
    fn the_one_pass_kernels_take_positions_below_two_to_the_31() {
        assert!(one_pass(&plan(1 << 15, (1 << 16) - 2)));
        assert!(plan(1 << 15, 1 << 16).output_len() >= DIVIDEND_LIMIT);
        assert!(!one_pass(&plan(1 << 15, 1 << 16)));
        let options = MaxUnpoolOptions::new([2, 2]);
        let raw = UnpoolPlan::new(&[1, 1, 2, 2], &[1, 1, 2, 2], &options).expect("a valid plan");
        assert!(!one_pass(&raw));
    }
}
