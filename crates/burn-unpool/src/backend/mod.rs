//! The backend op: one extension trait, implemented per backend family.
//!
//! Flex and NdArray run the CPU kernels of `crate::kernel`; the CubeCL devices (feature `wgpu`:
//! wgpu, vulkan, metal, fused or not) run CubeCL kernels; autodiff wraps any of them with the exact
//! (winner-only) backward. Devices of other backends, and plans the GPU kernels do not address,
//! are served by the tensor functions with a composition of Burn's own ops (`crate::composed`).

// NdArray is deprecated in Burn 0.22 but still shipped, and supported here.
#![allow(deprecated)]

mod autodiff;
#[cfg(feature = "wgpu")]
pub(crate) mod cube;
mod flex;
mod ndarray;

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, TensorData, read_sync};

use crate::UnpoolPlan;
use crate::kernel::host::{self, HostTensor};
use crate::plan::Direction;

/// Backends with their own unpooling kernels: Flex, NdArray and the CubeCL devices (feature
/// `wgpu`), with and without Fusion and Autodiff.
///
/// Users call the functions of the crate root, which check the arguments, choose between these
/// kernels and the portable composition, and report bad indices. The trait is the layer below,
/// for code that already holds a checked [`UnpoolPlan`]:
///
/// ```
/// use burn::backend::Dispatch;
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, UnpoolBackend, UnpoolPlan};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::from_floats([[[1.0, 2.0]]], &device);
/// let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
/// let plan = UnpoolPlan::new(&x.dims(), &indices.dims(), &MaxUnpoolOptions::new([2])).unwrap();
/// let y = Tensor::<3>::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool(
///     x.into_dispatch(),
///     indices.into_dispatch(),
///     plan,
/// ));
/// assert_eq!(y.dims(), [1, 1, 4]);
/// ```
///
/// Every implementation panics, before it touches memory, when the tensors are not those the plan
/// was made for. An index outside its range is never written: the CPU kernels report it when
/// [`UnpoolPlan::reports_invalid_indices`] says so (a panic naming it), the GPU kernels skip it, so
/// a caller who wants it reported there reads
/// [`max_unpool_invalid_index_flag`](UnpoolBackend::max_unpool_invalid_index_flag) first, as the
/// tensor functions do. The GPU kernels address up to `u32::MAX - 1` elements with indices read
/// in the output plane; they panic on other plans, which the tensor functions route elsewhere.
#[backend_extension(
    Flex,
    NdArray,
    Autodiff,
    Cube: cfg(feature = "wgpu"),
    Fusion: cfg(feature = "wgpu")
)]
pub trait UnpoolBackend: Backend {
    /// Writes every value of `x` into a zero-filled output of shape `plan.output_shape()` at the
    /// position its index gives; with duplicate indices the last in row-major order of `x` wins.
    #[fusion(dtype = x, shape = plan.checked_output_shape(x, indices))]
    fn max_unpool(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self>;

    /// The gradient of `x` for the output gradient `grad`: `grad[indices[p]]` where element `p`
    /// won the write at `indices[p]`, zero elsewhere. It is also the adjoint of [`max_unpool`].
    ///
    /// [`max_unpool`]: UnpoolBackend::max_unpool
    #[fusion(dtype = grad, shape = plan.checked_input_shape(grad, indices))]
    fn max_unpool_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self>;

    /// A `[1]` tensor of dtype `U32`: 1 when some index is outside its valid range, else 0.
    ///
    /// The default body reads the indices to the host; the GPU devices answer on the device, so
    /// only one word travels.
    #[fusion(dtype = DType::U32, shape = plan.checked_flag_shape(indices))]
    fn max_unpool_invalid_index_flag(
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self> {
        plan.assert_indices("max_unpool_invalid_index_flag", &indices.shape());
        let device = indices.device();
        let data = read_sync(Self::int_into_data(indices)).expect("reading the indices");
        let host = HostTensor {
            bytes: data.as_bytes(),
            dtype: data.dtype(),
        };
        let invalid = host::check_index_values(host, &plan).is_err();
        Self::int_from_data(TensorData::new(vec![u32::from(invalid)], [1]), &device)
    }
}

impl UnpoolPlan {
    /// The output shape, after checking that `x` and `indices` are the tensors of this plan.
    #[track_caller]
    pub(crate) fn checked_output_shape(&self, x: &[usize], indices: &[usize]) -> Shape {
        self.assert_inputs("max_unpool", x, indices, Direction::Forward);
        Shape::from(self.output_shape().to_vec())
    }

    /// The input shape, after checking that `grad` and `indices` are the tensors of this plan.
    #[track_caller]
    pub(crate) fn checked_input_shape(&self, grad: &[usize], indices: &[usize]) -> Shape {
        self.assert_inputs("max_unpool_backward", grad, indices, Direction::Backward);
        Shape::from(self.input_shape().to_vec())
    }

    /// The flag's shape `[1]`, after checking that `indices` are those of this plan.
    #[track_caller]
    pub(crate) fn checked_flag_shape(&self, indices: &[usize]) -> Shape {
        self.assert_indices("max_unpool_invalid_index_flag", indices);
        Shape::new([1])
    }
}

/// The CPU kernels on the host memory of a backend whose tensors are there (Flex, NdArray).
///
/// `view(tensor, f)` calls `f` with a contiguous row-major view of `tensor`; `wrap` turns the
/// kernel's data into the backend's tensor. Bad indices panic with the kernel's message.
pub(crate) struct HostBackend<T> {
    pub view: for<'a> fn(&'a T) -> HostView<'a>,
    pub wrap: fn(TensorData) -> T,
}

/// A contiguous row-major view of a host tensor, borrowed or (for a strided one) copied.
pub(crate) enum HostView<'a> {
    Borrowed(HostTensor<'a>),
    Copied(TensorData),
}

impl HostView<'_> {
    fn tensor(&self) -> HostTensor<'_> {
        match self {
            Self::Borrowed(tensor) => *tensor,
            Self::Copied(data) => HostTensor {
                bytes: data.as_bytes(),
                dtype: data.dtype(),
            },
        }
    }
}

impl<T: TensorMetadata> HostBackend<T> {
    pub fn forward(&self, x: T, indices: T, plan: UnpoolPlan) -> T {
        plan.checked_output_shape(&x.shape(), &indices.shape());
        let (x, indices) = ((self.view)(&x), (self.view)(&indices));
        let data = host::forward(x.tensor(), indices.tensor(), &plan);
        (self.wrap)(crate::error::or_panic(data))
    }

    pub fn backward(&self, grad: T, indices: T, plan: UnpoolPlan) -> T {
        plan.checked_input_shape(&grad.shape(), &indices.shape());
        let (grad, indices) = ((self.view)(&grad), (self.view)(&indices));
        let data = host::backward(grad.tensor(), indices.tensor(), &plan);
        (self.wrap)(crate::error::or_panic(data))
    }
}
