//! Cube (the wgpu, vulkan and metal devices, fused or not): CubeCL kernels.
//!
//! The kernels never write outside the output and skip out-of-range indices; the checked public
//! functions report those before the op runs, with [`UnpoolBackend::max_unpool_invalid_index_flag`].
//! Shapes the kernels do not address (more than `u32::MAX - 1` elements, or the ONNX reference
//! rule's index plane smaller than the output plane) and float types the device lacks run the
//! composed default body.

mod kernels;

use burn::backend::Backend;
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use cubecl::client::Client;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::{UnpoolBackend, composed};
use crate::{IndexLayout, UnpoolPlan};

impl UnpoolBackend for CubeBackend {
    fn max_unpool(x: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let Some(geometry) = Geometry::of(&plan).filter(|_| float_supported(&x)) else {
            return composed::max_unpool::<Self>(x, indices, &plan);
        };
        let output = empty_device_contiguous_dtype(
            x.client.clone(),
            x.device.clone(),
            Shape::from(plan.output_shape.clone()),
            x.dtype,
        );
        if geometry.out_len == 0 {
            return output;
        }
        let winners = elect_winners(&IndexWords::of(indices), &geometry, &x);
        let x = into_contiguous(x);
        let (client, dtype) = (output.client.clone(), output.dtype);
        let (cube_dim, cube_count) = launch_grid(&client, geometry.out_len);
        // SAFETY: `x` holds `in_len` elements and every winner is at most `in_len`; `winners` and
        // `output` hold `out_len` elements and units past `out_len` stop at once.
        unsafe {
            kernels::gather_winners::launch_unchecked(
                &client,
                cube_count,
                cube_dim,
                x.into_tensor_arg(),
                winners.into_tensor_arg(),
                output.clone().into_tensor_arg(),
                geometry.out_len,
                storage_type(dtype),
            );
        }
        output
    }

    fn max_unpool_backward(grad: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let Some(geometry) = Geometry::of(&plan).filter(|_| float_supported(&grad)) else {
            return composed::max_unpool_backward::<Self>(grad, indices, &plan);
        };
        let dx = empty_device_contiguous_dtype(
            grad.client.clone(),
            grad.device.clone(),
            Shape::from(plan.input_shape.clone()),
            grad.dtype,
        );
        if geometry.in_len == 0 {
            return dx;
        }
        let indices = IndexWords::of(indices);
        let winners = elect_winners(&indices, &geometry, &grad);
        let grad = into_contiguous(grad);
        let (client, dtype) = (dx.client.clone(), dx.dtype);
        let (cube_dim, cube_count) = launch_grid(&client, geometry.in_len);
        // SAFETY: `indices` holds `in_len` indices, `dx` `in_len` elements; `grad` and `winners`
        // are read only at landings below `out_len`; units past `in_len` stop at once.
        unsafe {
            kernels::winner_gradient::launch_unchecked(
                &client,
                cube_count,
                cube_dim,
                grad.into_tensor_arg(),
                indices.words.into_tensor_arg(),
                winners.into_tensor_arg(),
                dx.clone().into_tensor_arg(),
                geometry.in_len,
                geometry.in_plane,
                geometry.out_plane,
                geometry.range_end,
                geometry.out_len,
                indices.wide,
                geometry.global,
                storage_type(dtype),
            );
        }
        dx
    }

    fn max_unpool_invalid_index_flag(indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let Some(geometry) = Geometry::of(&plan) else {
            return composed::invalid_index_flag::<Self>(indices, &plan);
        };
        let flag = zeros_client(
            indices.client.clone(),
            indices.device.clone(),
            Shape::new([1]),
            DType::U32,
        );
        if geometry.in_len == 0 {
            return flag;
        }
        let indices = IndexWords::of(indices);
        let client = flag.client.clone();
        let (cube_dim, cube_count) = launch_grid(&client, geometry.in_len);
        // SAFETY: `indices` holds `in_len` indices and `flag` one word; units past `in_len` stop.
        unsafe {
            kernels::flag_invalid_indices::launch_unchecked(
                &client,
                cube_count,
                cube_dim,
                indices.words.into_tensor_arg(),
                flag.clone().into_tensor_arg(),
                geometry.in_len,
                geometry.in_plane,
                geometry.out_plane,
                geometry.range_end,
                geometry.out_len,
                indices.wide,
                geometry.global,
            );
        }
        flag
    }
}

/// The sizes the kernels address, all below `u32::MAX` so that a winner `p + 1` fits a word.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    in_len: usize,
    in_plane: usize,
    out_len: usize,
    out_plane: usize,
    range_end: usize,
    global: bool,
}

impl Geometry {
    /// The kernels' view of `plan`, or `None` when they do not cover it.
    fn of(plan: &UnpoolPlan) -> Option<Self> {
        let addressable = |len: usize| len < u32::MAX as usize;
        let geometry = Self {
            in_len: plan.input_len(),
            in_plane: plan.input_plane_len(),
            out_len: plan.output_len(),
            out_plane: plan.output_plane_len(),
            range_end: plan.index_range_end(),
            global: plan.layout == IndexLayout::Global,
        };
        let covered = plan.index_plane == plan.output_shape[2..]
            && addressable(geometry.in_len)
            && addressable(geometry.out_len)
            && addressable(geometry.range_end);
        covered.then_some(geometry)
    }
}

/// Indices as a contiguous buffer of 32-bit words: one per i32 index, two per i64 index.
struct IndexWords {
    words: CubeTensor,
    wide: bool,
}

impl IndexWords {
    fn of(indices: CubeTensor) -> Self {
        let wide = match indices.dtype {
            DType::I32 | DType::U32 => false,
            DType::I64 | DType::U64 => true,
            dtype => unreachable!("index dtypes are checked before the op runs, got {dtype:?}"),
        };
        let indices = into_contiguous(indices);
        // A contiguous view into a larger buffer is copied so that word 0 is its first element.
        let indices = if indices.is_contiguous_buffer() {
            indices
        } else {
            into_contiguous(indices.copy())
        };
        let len = indices.meta.shape().num_elements() * if wide { 2 } else { 1 };
        let words = CubeTensor::new_contiguous(
            indices.client,
            indices.device,
            Shape::new([len]),
            indices.handle,
            DType::U32,
        );
        Self { words, wide }
    }
}

/// Runs the winner pass: a `u32` tensor of `out_len` winners (`p + 1`, or 0 for none).
fn elect_winners(indices: &IndexWords, geometry: &Geometry, like: &CubeTensor) -> CubeTensor {
    let winners = zeros_client(
        like.client.clone(),
        like.device.clone(),
        Shape::new([geometry.out_len]),
        DType::U32,
    );
    if geometry.in_len == 0 {
        return winners;
    }
    let client = winners.client.clone();
    let (cube_dim, cube_count) = launch_grid(&client, geometry.in_len);
    // SAFETY: `indices` holds `in_len` indices; `winners` is written only at landings below
    // `out_len`; units past `in_len` stop at once.
    unsafe {
        kernels::elect_winners::launch_unchecked(
            &client,
            cube_count,
            cube_dim,
            indices.words.clone().into_tensor_arg(),
            winners.clone().into_tensor_arg(),
            geometry.in_len,
            geometry.in_plane,
            geometry.out_plane,
            geometry.range_end,
            geometry.out_len,
            indices.wide,
            geometry.global,
        );
    }
    winners
}

/// One unit per element.
fn launch_grid(client: &Client, units: usize) -> (CubeDim, CubeCount) {
    let cube_dim = CubeDim::new(client, units);
    (
        cube_dim,
        calculate_cube_count_elemwise(client, units, cube_dim),
    )
}

fn float_supported(tensor: &CubeTensor) -> bool {
    <CubeBackend as Backend>::supports_dtype(&tensor.device, tensor.dtype)
}

fn storage_type(dtype: DType) -> ElemType {
    burn::backend::cubecl::dtype_to_storage_type(dtype)
}
