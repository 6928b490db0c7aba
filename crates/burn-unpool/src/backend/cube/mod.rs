//! Cube (the wgpu, vulkan and metal devices, fused or not): CubeCL kernels.
//!
//! The kernels never write outside the output and skip out-of-range indices; the checked tensor
//! functions report those before the op runs, with
//! [`UnpoolBackend::max_unpool_index_check`]. The unpooling kernels address plans of up to
//! `u32::MAX - 1` elements whose indices are read in the output plane ([`addresses`]), the pool
//! kernels pools of 1 to 3 axes whose positions stay below 2^31 ([`addresses_pool`]); the tensor
//! functions run other plans with the portable composition.

mod kernels;
mod pool;

use burn::backend::TensorMetadata;
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::{cast, into_contiguous};
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;
use cubecl::std::FastDivmod;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::UnpoolBackend;
use crate::diagnostics::{self, Path};
use crate::plan::Direction;
use crate::{IndexLayout, PoolPlan, UnpoolPlan};
use kernels::{CellDivisorsLaunch, CellGeometryLaunch, IndexGeometryLaunch};

impl UnpoolBackend for CubeBackend {
    fn max_unpool(x: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let shape = plan.checked_result_shape(Direction::Forward, &x.shape(), &indices.shape());
        KernelIndices::new(&plan, indices).gather(Direction::Forward, x, shape)
    }

    fn max_unpool_int(x: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        Self::max_unpool(x, indices, plan)
    }

    fn max_unpool_backward(grad: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let shape = plan.checked_result_shape(Direction::Backward, &grad.shape(), &indices.shape());
        KernelIndices::new(&plan, indices).gather(Direction::Backward, grad, shape)
    }

    fn max_unpool_index_check(indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        plan.checked_flag_shape(&indices.shape());
        KernelIndices::new(&plan, indices).index_check()
    }

    fn max_pool_with_indices(x: CubeTensor, plan: PoolPlan) -> (CubeTensor, CubeTensor) {
        pool::max_pool(x, &plan)
    }

    fn max_pool_with_indices_int(x: CubeTensor, plan: PoolPlan) -> (CubeTensor, CubeTensor) {
        pool::max_pool(x, &plan)
    }

    fn max_pool_with_indices_backward(
        grad: CubeTensor,
        indices: CubeTensor,
        plan: PoolPlan,
    ) -> CubeTensor {
        pool::max_pool_backward(grad, indices, &plan)
    }
}

pub(crate) use pool::addresses as addresses_pool;

/// Whether the unpooling kernels address `plan`: at most three spatial axes, indices read in the output
/// plane, sizes below `u32::MAX` so that a winner `p + 1` fits a word, and cells whose arithmetic
/// (`w * stride + pad` for every window `w`, `c + pad` for every output coordinate `c`) stays
/// below it too, as the kernels may compute in 32 bits.
pub(crate) fn addresses(plan: &UnpoolPlan) -> bool {
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

/// Whether the one-pass kernels run `plan`: every index lies in its own cell and every position
/// they divide (an output or input position, an output coordinate plus the padding) and every
/// stride they divide by stays below 2^31, where [`FastDivmod`] is exact. Larger plans take the
/// winner pass.
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

/// The bound on every dividend of the kernels' [`FastDivmod`]s: it adds the dividend to a
/// product's high word, which stays within 32 bits below it.
const DIVIDEND_LIMIT: usize = 1 << 31;

/// The indices of an addressed plan as the kernels read them: a contiguous buffer of 32-bit
/// words (one per i32 index, two per i64 index), with the sizes they address.
struct KernelIndices {
    words: CubeTensor,
    wide: bool,
    global: bool,
    in_len: usize,
    in_plane: usize,
    out_len: usize,
    out_plane: usize,
    range_end: usize,
    /// Whether the one-pass kernels run it: every index lies in its own cell
    /// ([`UnpoolPlan::targets_unique`]) and every position they divide is below 2^31 ([`one_pass`]).
    one_pass: bool,
    /// Windows, output sizes, strides and begin paddings of three spatial axes.
    cells: [[usize; 3]; 4],
}

impl KernelIndices {
    #[track_caller]
    fn new(plan: &UnpoolPlan, indices: CubeTensor) -> Self {
        assert!(
            addresses(plan),
            "UnpoolBackend on a CubeCL device: the GPU kernels address up to u32::MAX - 1 elements \
             with indices read in the output plane, got a plan for output {:?} with indices read \
             in {:?} (the tensor functions run such plans with the portable composition)",
            plan.output_shape(),
            plan.index_plane()
        );
        // 32- and 64-bit indices are read as they are; narrower ones are widened to i32 first
        // (losslessly: a negative i8 or i16 stays negative, so it stays out of range).
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
        // Read in place: a contiguous tensor's binding starts at its first element (a view into a
        // larger buffer carries its offset in its handle), whatever the buffer's size beyond it.
        let indices = contiguous(indices);
        let len = plan.input_len() * if wide { 2 } else { 1 };
        let words = CubeTensor::new_contiguous(
            indices.client,
            indices.device,
            Shape::new([len]),
            indices.handle,
            DType::U32,
        );
        let geometry = plan.geometry();
        // Leading axes of size 1 for a pool of fewer than three: the last axis is the row the
        // kernels' vectors run along (`addresses` proved at most three).
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
        IndexGeometryLaunch::new(
            self.in_len,
            self.in_plane,
            self.out_plane,
            self.range_end,
            self.out_len,
            self.wide,
            self.global,
        )
    }

    fn cells(&self) -> CellGeometryLaunch {
        let sequence = |values: [usize; 3]| {
            let mut sequence = SequenceArg::new();
            values.into_iter().for_each(|value| sequence.push(value));
            sequence
        };
        let [windows, out, stride, pad] = self.cells.map(sequence);
        CellGeometryLaunch::new(windows, out, stride, pad)
    }

    fn divisors(&self) -> CellDivisorsLaunch {
        let divisors = |values: [usize; 3]| {
            let mut sequence = SequenceArg::<FastDivmod<usize>>::new();
            values.into_iter().for_each(|value| sequence.push(value));
            sequence
        };
        let [_, out, stride, _] = self.cells;
        CellDivisorsLaunch::new(
            self.in_plane,
            self.out_plane,
            divisors(out),
            divisors(stride),
        )
    }

    /// `direction` into a new tensor of `shape`: with a one-pass kernel where every index lies
    /// in its own cell, else after the winner pass.
    fn gather(&self, direction: Direction, input: CubeTensor, shape: Shape) -> CubeTensor {
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
            // Vectors never cross a row of what they write: the output's last axis (forward),
            // a plane of `x` (backward, whose units read their plane once).
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
            // SAFETY: `one_pass` proved every position and stride the kernels divide below 2^31
            // (so every `FastDivmod` is exact); the callers' `checked_result_shape` that `indices`
            // has `x`'s shape, so `words` holds its `in_len` indices (`addresses` bounds `in_len`
            // by u32::MAX, and a device binding by 4 GiB, so `2 * p` stays in 32 bits). One
            // unit per vector of `width` elements of what is written (`width` divides its rows,
            // so `units / width` units cover it), units past it stop at once. A forward unit
            // reads `x` and the indices at windows inside its plane (clamped to the last one)
            // and writes its own vector; a backward unit reads `grad` only at landings below
            // `out_len`.
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
        // SAFETY: every winner is at most `in_len`, the elements of `x`; `winners` holds `out_len`
        // words, read only below `out_len`; `output` holds `units` elements and units past
        // `units` stop at once; `indices` holds `in_len` indices.
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

    /// `[1]` of `u32`: bit 0 when some index is out of range, bit 1 when some index lies outside
    /// its own cell.
    fn index_check(&self) -> CubeTensor {
        self.index_pass(1, true)
    }

    /// The winner pass: a `u32` tensor of `out_len` winners (`p + 1`, or 0 for none).
    fn elect_winners(&self) -> CubeTensor {
        self.index_pass(self.out_len, false)
    }

    /// A pass over the indices into a zero-filled `u32` tensor of `len` words.
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

/// `tensor` in row-major order: itself where it is, else a copy (a launch the diagnostics count).
fn contiguous(tensor: CubeTensor) -> CubeTensor {
    if !tensor.is_contiguous() {
        diagnostics::record(Path::KernelLaunch);
    }
    into_contiguous(tensor)
}

/// An uninitialised contiguous tensor of `shape` on the device of `like`.
fn empty(like: &CubeTensor, shape: Shape, dtype: DType) -> CubeTensor {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

/// A zero-filled 1-d tensor of `len` elements on the device of `like`.
fn zeros(like: &CubeTensor, len: usize, dtype: DType) -> CubeTensor {
    zeros_client(
        like.client.clone(),
        like.device.clone(),
        Shape::new([len]),
        dtype,
    )
}

/// The widest vector of `on`'s elements the device moves in one access that divides `run`
/// (the rows a kernel's vectors must not cross): 1 where none does.
fn vector_size(on: &CubeTensor, run: usize) -> usize {
    on.client
        .io_optimized_vector_sizes(on.dtype.size())
        .filter(|&width| run.is_multiple_of(width))
        .max()
        .unwrap_or(1)
}

/// Counts a launch of this crate's kernel with vectors of `width` elements (diagnostics).
fn record_launch(width: usize) {
    diagnostics::record(Path::KernelLaunch);
    if width > 1 {
        diagnostics::record(Path::VectorisedLaunch);
    }
}

/// One unit per element (or per vector, given the number of vectors).
fn launch_grid(on: &CubeTensor, units: usize) -> (CubeDim, CubeCount) {
    let cube_dim = CubeDim::new(&on.client, units);
    (
        cube_dim,
        calculate_cube_count_elemwise(&on.client, units, cube_dim),
    )
}

fn storage_type(dtype: DType) -> ElemType {
    burn::backend::cubecl::dtype_to_storage_type(dtype)
}

#[cfg(test)]
mod tests {
    use super::{DIVIDEND_LIMIT, one_pass};
    use crate::{MaxUnpoolOptions, UnpoolPlan};

    /// A 2x2 unpooling of one plane into `height x width`, its indices known to be in their cells
    /// (as a pool's or a device check's are).
    fn plan(height: usize, width: usize) -> UnpoolPlan {
        let options = MaxUnpoolOptions::new([2, 2]).with_output_size([height, width]);
        let pooled = [1, 1, height / 2, width / 2];
        UnpoolPlan::new(&pooled, &pooled, &options)
            .expect("a valid plan")
            .with_indices_in_cells()
    }

    /// The one-pass kernels divide positions with `FastDivmod`, exact below 2^31: an output of
    /// 2^31 positions or more takes the winner pass, one just below it the one-pass kernels.
    #[test]
    fn the_one_pass_kernels_take_positions_below_two_to_the_31() {
        assert!(one_pass(&plan(1 << 15, (1 << 16) - 2)));
        assert!(plan(1 << 15, 1 << 16).output_len() >= DIVIDEND_LIMIT);
        assert!(!one_pass(&plan(1 << 15, 1 << 16)));
        // Indices not known to be in their cells never take them.
        let options = MaxUnpoolOptions::new([2, 2]);
        let raw = UnpoolPlan::new(&[1, 1, 2, 2], &[1, 1, 2, 2], &options).expect("a valid plan");
        assert!(!one_pass(&raw));
    }
}
