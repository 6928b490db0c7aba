//! PyTorch's recorded max pools (`data/pools.json`, written by `scripts/pools.py`) and how a case
//! runs on a device: shared by the pool suite and the WebAssembly set.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::max_pool_with_indices;
use serde::Deserialize;

use crate::{data_from_bits, recorded_cases};

/// Calls `$f::<D, R>(args)` for the rank of `$shape`.
macro_rules! at_rank {
    ($shape:expr, $f:ident($($arg:expr),*)) => {
        match $shape.len() {
            3 => $f::<1, 3>($($arg),*),
            4 => $f::<2, 4>($($arg),*),
            5 => $f::<3, 5>($($arg),*),
            rank => panic!("no pool of rank {rank}"),
        }
    };
}

/// One recorded `torch.nn.functional.max_pool{1,2,3}d(..., return_indices=True)` call.
#[derive(Clone, Debug, Deserialize)]
pub struct RecordedPool {
    /// Case name.
    pub name: String,
    /// `[N, C, D1..Dk]` of `x`.
    pub shape: Vec<usize>,
    /// Kernel size per spatial axis.
    pub kernel: Vec<usize>,
    /// Stride per spatial axis.
    pub stride: Vec<usize>,
    /// Symmetric padding per spatial axis.
    pub padding: Vec<usize>,
    /// Dilation per spatial axis.
    pub dilation: Vec<usize>,
    /// PyTorch's `ceil_mode`.
    pub ceil_mode: bool,
    /// `x` as f32 bit patterns.
    pub x: Vec<u64>,
    /// Shape of the pooled values and indices.
    pub pooled_shape: Vec<usize>,
    /// The pooled values, f32 bit patterns.
    pub pooled: Vec<u64>,
    /// The indices (per plane, row-major).
    pub indices: Vec<i64>,
    /// A seeded output gradient, f32 bit patterns.
    pub grad_output: Vec<u64>,
    /// PyTorch's autograd gradient of `x` for `grad_output`, f32 bit patterns.
    pub grad_x: Vec<u64>,
}

impl RecordedPool {
    /// The pool's options at rank `D`.
    pub fn options<const D: usize>(&self) -> MaxPoolOptions<D> {
        let array = |v: &[usize]| -> [usize; D] { v.try_into().expect("one value per axis") };
        MaxPoolOptions::new(array(&self.kernel))
            .with_stride(array(&self.stride))
            .with_padding(array(&self.padding))
            .with_dilation(array(&self.dilation))
            .with_ceil_mode(self.ceil_mode)
    }

    /// f32 data from bit patterns.
    pub fn f32(&self, bits: &[u64], shape: &[usize]) -> TensorData {
        data_from_bits(bits, shape, DType::F32)
    }

    /// The input's values.
    pub fn x_f32(&self) -> Vec<f32> {
        self.x
            .iter()
            .map(|&bits| f32::from_bits(bits as u32))
            .collect()
    }

    /// The recorded indices as i64 data.
    pub fn indices(&self) -> TensorData {
        TensorData::new(self.indices.clone(), self.pooled_shape.clone())
    }

    /// The pooled values and the indices (as i64) on `device`, checking the indices' input size.
    pub fn pool_on(&self, device: &Device) -> (TensorData, TensorData) {
        at_rank!(self.shape, pool(self, device))
    }

    /// The gradient of `sum(pooled * grad_output)` for `x` on `device`.
    pub fn gradient_on(&self, device: &Device) -> TensorData {
        at_rank!(self.shape, gradient(self, device))
    }
}

/// The recorded pools.
pub fn pool_cases() -> Vec<RecordedPool> {
    recorded_cases(include_str!("../data/pools.json"))
}

fn pool<const D: usize, const R: usize>(
    case: &RecordedPool,
    device: &Device,
) -> (TensorData, TensorData) {
    let x = Tensor::<R>::from_data(case.f32(&case.x, &case.shape), device);
    let (pooled, indices) = max_pool_with_indices(x, case.options::<D>());
    assert_eq!(indices.input_size(), &case.shape[2..], "{}", case.name);
    let indices: Tensor<R, Int> = indices.into_tensor();
    (pooled.into_data(), indices.into_data().convert::<i64>())
}

fn gradient<const D: usize, const R: usize>(case: &RecordedPool, device: &Device) -> TensorData {
    let autodiff = device.clone().autodiff();
    let x = Tensor::<R>::from_data(case.f32(&case.x, &case.shape), &autodiff).require_grad();
    let (pooled, _) = max_pool_with_indices(x.clone(), case.options::<D>());
    let grad_output =
        Tensor::<R>::from_data(case.f32(&case.grad_output, &case.pooled_shape), &autodiff);
    let grads = (pooled * grad_output).sum().backward();
    x.grad(&grads).expect("a gradient for x").into_data()
}
