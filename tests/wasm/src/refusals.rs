//! Refusals in WebAssembly: as values from `UnpoolPlan::new`, and as the panics (traps, there)
//! the tensor functions raise, each with the message the contract gives it.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Int, Tensor};
use burn_unpool::{
    MaxUnpoolOptions, UnpoolPlan, max_pool1d_with_indices, max_pool2d_with_indices, max_unpool1d,
    max_unpool2d,
};
use wasm_bindgen_test::wasm_bindgen_test;

fn refusal<const D: usize>(
    x: &[usize],
    indices: &[usize],
    options: &MaxUnpoolOptions<D>,
) -> String {
    UnpoolPlan::new(x, indices, options)
        .expect_err("the plan must be refused")
        .to_string()
}

fn assert_names(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "message {message:?} lacks {part:?}");
    }
}

#[wasm_bindgen_test]
fn plans_are_refused_as_values() {
    let options = MaxUnpoolOptions::new([2, 2]);
    assert_names(
        &refusal(&[1, 2, 3, 3], &[1, 2, 3, 4], &options),
        &["same shape", "[1, 2, 3, 3]", "[1, 2, 3, 4]"],
    );
    assert_names(
        &refusal(&[1, 2, 3], &[1, 2, 3], &options),
        &["rank 4", "[1, 2, 3]"],
    );
    let mut zero_kernel = MaxUnpoolOptions::new([2, 2]);
    zero_kernel.kernel_size = [0, 2];
    assert_names(
        &refusal(&[1, 1, 2, 2], &[1, 1, 2, 2], &zero_kernel),
        &["kernel_size", "[0, 2]"],
    );
    let padded = MaxUnpoolOptions::new([2, 2])
        .with_stride([1, 1])
        .with_padding([2, 0]);
    assert_names(
        &refusal(&[1, 1, 1, 2], &[1, 1, 1, 2], &padded),
        &["spatial axis 0", "padding"],
    );
    // And a plan that holds, with the output size the contract's formula gives.
    let plan = UnpoolPlan::new(&[1, 2, 3, 4], &[1, 2, 3, 4], &options).expect("a valid plan");
    assert_eq!(plan.output_shape(), &[1, 2, 6, 8]);
}

/// An index past its plane is found by the CPU kernel, which reads the indices anyway.
#[wasm_bindgen_test]
#[should_panic(expected = "index 4 at position [0, 0, 1] is out of range")]
fn an_index_past_its_plane_is_refused() {
    let device = Device::flex();
    let x = Tensor::<3>::from_floats([[[5.0, 3.0]]], &device);
    let indices = Tensor::<3, Int>::from_ints([[[1, 4]]], &device);
    drop(max_unpool1d(x, indices, MaxUnpoolOptions::new([2])));
}

#[wasm_bindgen_test]
#[should_panic(expected = "x and indices must have the same shape")]
fn values_and_indices_of_different_shapes_are_refused() {
    let device = Device::flex();
    let x = Tensor::<4>::ones([1, 2, 3, 3], &device);
    let indices = Tensor::<4, Int>::zeros([1, 2, 3, 4], &device);
    drop(max_unpool2d(x, indices, MaxUnpoolOptions::new([2, 2])));
}

#[wasm_bindgen_test]
#[should_panic(expected = "kernel_size [3, 3] (the pool's: [2, 2])")]
fn pool_indices_with_options_of_another_pool_are_refused() {
    let device = Device::flex();
    let pool = MaxPoolOptions::new([2, 2]);
    let (y, indices) = max_pool2d_with_indices(Tensor::<4>::ones([1, 1, 4, 4], &device), pool);
    drop(max_unpool2d(y, indices, MaxUnpoolOptions::new([3, 3])));
}

#[wasm_bindgen_test]
#[should_panic(expected = "does not fit axis 0 of size 1")]
fn a_pool_whose_window_does_not_fit_is_refused() {
    let device = Device::flex();
    let x = Tensor::<3>::ones([1, 1, 1], &device);
    drop(max_pool1d_with_indices(x, MaxPoolOptions::new([2])));
}
