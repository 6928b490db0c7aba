//! The unpooling against PyTorch's and the ONNX reference's recorded outputs and gradients.

use std::collections::BTreeSet;

use burn::tensor::{DType, Int, Tensor};
use burn_unpool::max_unpool;
use burn_unpool_tests::{
    Direction, assert_bit_equal, conformance_cases, data_from_bits, devices, f32_data,
    on_both_routes, run,
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

/// The op copies bits: `x`'s recorded f32 bit patterns read as integers give the recorded output
/// read the same way, for integer values of each width with signed and unsigned indices.
#[wasm_bindgen_test]
fn integer_values_move_as_their_bits() {
    let as_bits = |values: &[f64], shape: &[usize], dtype: DType| {
        let bits: Vec<u64> = values
            .iter()
            .map(|&v| (v as f32).to_bits().into())
            .collect();
        data_from_bits(&bits, shape, dtype)
    };
    let pairs = [
        (DType::I32, DType::U32),
        (DType::I64, DType::I32),
        (DType::U8, DType::I64),
        (DType::I16, DType::U32),
    ];
    let cases = conformance_cases();
    for case in cases.iter().filter(|case| case.onnx_output_shape.is_none()) {
        for (device_name, device) in devices() {
            for (values, indices) in pairs {
                if !device.supports_dtype(values) {
                    continue;
                }
                let actual = run(
                    Direction::Forward,
                    as_bits(&case.x, &case.input_shape, values),
                    case.indices_data(indices),
                    &case.geometry(),
                    case.layout(),
                    &device,
                );
                assert_bit_equal(
                    &actual,
                    &as_bits(&case.expected, &case.output_shape, values),
                    &format!(
                        "{} on {device_name}: {values:?} values, {indices:?} indices",
                        case.name
                    ),
                );
            }
        }
    }
}

/// PyTorch's gradient of `x` for a seeded output gradient, through `max_unpool_backward` and
/// through autodiff of `max_unpool`.
#[wasm_bindgen_test]
fn recorded_gradients_match_through_both_doors() {
    let mut checked = 0;
    for case in conformance_cases() {
        let (Some(grad_output), Some(grad_x)) = (&case.grad_output, &case.grad_x) else {
            continue;
        };
        let expected = f32_data(grad_x, &case.input_shape);
        for (device_name, device) in devices() {
            let context = format!("gradient of {} on {device_name}", case.name);
            let backward = run(
                Direction::Backward,
                f32_data(grad_output, &case.output_shape),
                case.indices_data(DType::I64),
                &case.geometry(),
                case.layout(),
                &device,
            );
            assert_bit_equal(&backward, &expected, &context);
            if case.input_shape.len() == 4 {
                let autodiff = device.clone().autodiff();
                let x = Tensor::<4>::from_data(case.x_data(), &autodiff).require_grad();
                let indices = Tensor::<4, Int>::from_data(case.indices_data(DType::I32), &autodiff);
                let out = max_unpool(
                    x.clone(),
                    indices,
                    case.geometry().options::<2>(case.layout()),
                );
                let grad_output =
                    Tensor::<4>::from_data(f32_data(grad_output, &case.output_shape), &autodiff);
                let grads = (out * grad_output).sum().backward();
                let dx = x.grad(&grads).expect("a gradient for x").into_data();
                assert_bit_equal(&dx, &expected, &format!("{context}, autodiff"));
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} gradients checked");
}
