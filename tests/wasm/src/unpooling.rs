//! The unpooling against PyTorch's and the ONNX reference's recorded outputs and gradients.

use std::collections::BTreeSet;

use burn::tensor::{DType, Int, Tensor};
use burn_unpool::max_unpool;
use burn_unpool_tests::{
    assert_bit_equal, assert_recorded_cases_hold_for_integer_values, assert_recorded_gradients,
    conformance_cases, devices, f32_data, on_both_routes,
};
use wasm_bindgen_test::wasm_bindgen_test;

/// Every recorded case, 1 to 3 axes, with i32, i64 and u32 indices, on the kernels and on the
/// composition of Burn ops.
#[wasm_bindgen_test]
fn recorded_outputs_match_bit_for_bit() {
    let cases = conformance_cases();
    let ranks: BTreeSet<usize> = cases.iter().map(|case| case.input_shape.len()).collect();
    assert_eq!(ranks, BTreeSet::from([3, 4, 5]), "1 to 3 spatial axes");
    for case in &cases {
        let expected = f32_data(&case.expected, &case.output_shape);
        for (device_name, device) in devices() {
            on_both_routes(|route| {
                for dtype in [DType::I32, DType::I64, DType::U32] {
                    assert_bit_equal(
                        &case.forward(dtype, &device),
                        &expected,
                        &format!("{} on {device_name}, {route}, {dtype:?}", case.name),
                    );
                }
            });
        }
    }
}

/// The op copies bits: integer values of four widths with signed and unsigned indices.
#[wasm_bindgen_test]
fn integer_values_move_as_their_bits() {
    assert_recorded_cases_hold_for_integer_values(&[
        (DType::I32, DType::U32),
        (DType::I64, DType::I32),
        (DType::U8, DType::I64),
        (DType::I16, DType::U32),
    ]);
}

/// PyTorch's gradient of `x` for a seeded output gradient, through `max_unpool_backward` and,
/// for the 2-d cases, through autodiff of `max_unpool`.
#[wasm_bindgen_test]
fn recorded_gradients_match_through_both_doors() {
    assert!(
        assert_recorded_gradients() >= 8,
        "the cases with a gradient"
    );
    let mut checked = 0;
    let cases = conformance_cases()
        .into_iter()
        .filter(|case| case.input_shape.len() == 4);
    for case in cases {
        let (Some(grad_output), Some(grad_x)) = (&case.grad_output, &case.grad_x) else {
            continue;
        };
        for (device_name, device) in devices() {
            let autodiff = device.clone().autodiff();
            let x = Tensor::<4>::from_data(case.x_data(), &autodiff).require_grad();
            let indices = Tensor::<4, Int>::from_data(case.indices_data(DType::I32), &autodiff);
            let options = case.geometry().options::<2>(case.layout());
            let out = max_unpool(x.clone(), indices, options);
            let grad_output =
                Tensor::<4>::from_data(f32_data(grad_output, &case.output_shape), &autodiff);
            let grads = (out * grad_output).sum().backward();
            let dx = x.grad(&grads).expect("a gradient for x").into_data();
            let expected = f32_data(grad_x, &case.input_shape);
            let context = format!("autodiff gradient of {} on {device_name}", case.name);
            assert_bit_equal(&dx, &expected, &context);
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} autodiff gradients checked");
}
