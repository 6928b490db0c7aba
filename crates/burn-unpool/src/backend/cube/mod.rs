//! CubeCL devices, fused or not: kernels that never write outside their output and skip
//! out-of-range indices; plans they do not address run the composition.

mod max_pool;
mod max_unpool;
mod max_unpool_kernels;

use burn::backend::TensorMetadata;
use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::{empty_device_contiguous_dtype, zeros_client};
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::{UnpoolBackend, composition};
use crate::diagnostics::{self, Path};
use crate::plan::{Direction, PoolPlan, UnpoolPlan};
pub(in crate::backend) use max_unpool::reads_index_words;
use max_unpool::{KernelIndices, addresses, for_composition};

impl UnpoolBackend for CubeBackend {
    fn max_unpool(x: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let shape = plan.checked_result_shape(Direction::Forward, &x.shape(), &indices.shape());
        if !addresses(&plan) {
            return composition::max_unpool::<Self>(x, for_composition(indices, &plan), plan);
        }
        KernelIndices::new(&plan, indices).gather(Direction::Forward, x, shape)
    }

    fn max_unpool_int(x: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        if !addresses(&plan) {
            return composition::max_unpool_int::<Self>(x, for_composition(indices, &plan), plan);
        }
        Self::max_unpool(x, indices, plan)
    }

    fn max_unpool_backward(grad: CubeTensor, indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        let shape = plan.checked_result_shape(Direction::Backward, &grad.shape(), &indices.shape());
        if !addresses(&plan) {
            return composition::max_unpool_backward::<Self>(
                grad,
                for_composition(indices, &plan),
                plan,
            );
        }
        KernelIndices::new(&plan, indices).gather(Direction::Backward, grad, shape)
    }

    fn max_unpool_index_check(indices: CubeTensor, plan: UnpoolPlan) -> CubeTensor {
        plan.checked_flag_shape(&indices.shape());
        if !addresses(&plan) {
            return composition::max_unpool_index_check::<Self>(
                for_composition(indices, &plan),
                plan,
            );
        }
        KernelIndices::new(&plan, indices).index_check()
    }

    fn max_pool_with_indices(x: CubeTensor, plan: PoolPlan) -> (CubeTensor, CubeTensor) {
        max_pool::max_pool(x, plan, composition::max_pool_with_indices::<Self>)
    }

    fn max_pool_with_indices_int(x: CubeTensor, plan: PoolPlan) -> (CubeTensor, CubeTensor) {
        max_pool::max_pool(x, plan, composition::max_pool_with_indices_int::<Self>)
    }

    fn max_pool_with_indices_backward(
        grad: CubeTensor,
        indices: CubeTensor,
        plan: PoolPlan,
    ) -> CubeTensor {
        max_pool::max_pool_backward(grad, indices, plan)
    }
}

/// The bound on every dividend of the kernels' `FastDivmod`s, where they are exact.
const DIVIDEND_LIMIT: usize = 1 << 31;

/// `tensor` in row-major order: itself where it is, else a copy (a launch the diagnostics count).
fn contiguous(tensor: CubeTensor) -> CubeTensor {
    if !tensor.is_contiguous() {
        diagnostics::record(Path::KernelLaunch);
    }
    into_contiguous(tensor)
}

fn empty(like: &CubeTensor, shape: Shape, dtype: DType) -> CubeTensor {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

fn zeros(like: &CubeTensor, len: usize, dtype: DType) -> CubeTensor {
    zeros_client(
        like.client.clone(),
        like.device.clone(),
        Shape::new([len]),
        dtype,
    )
}

/// The widest vector the device moves in one access that divides `run` (a row), else 1.
fn vector_size(on: &CubeTensor, run: usize) -> usize {
    on.client
        .io_optimized_vector_sizes(on.dtype.size())
        .filter(|&width| run.is_multiple_of(width))
        .max()
        .unwrap_or(1)
}

fn record_launch(width: usize) {
    diagnostics::record(Path::KernelLaunch);
    if width > 1 {
        diagnostics::record(Path::VectorisedLaunch);
    }
}

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
