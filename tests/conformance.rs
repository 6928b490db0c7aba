//! Conformance: the table recorded from PyTorch (one thread) and the ONNX reference by
//! `tests/scripts/conformance.py`, plus hand-worked cases. Every result must match bit for bit, on
//! every device, with i32 and i64 indices, and for integer values with unsigned indices.

use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool1d, max_unpool2d};
use burn_unpool_tests::{
    Direction, INTEGER_DTYPES, assert_bit_equal, assert_recorded_cases_hold_for_integer_values,
    assert_recorded_gradients, conformance_cases, devices, f32_data, reference_backward,
    reference_forward, reference_targets, run, where_readable,
};

#[test]
fn recorded_cases_match_bit_for_bit() {
    let cases = conformance_cases();
    assert!(cases.len() >= 15, "the table holds {} cases", cases.len());
    for case in &cases {
        let expected = f32_data(&case.expected, &case.output_shape);
        for (device_name, device) in devices() {
            for dtype in [DType::I32, DType::I64] {
                let Some(actual) =
                    where_readable(&device, DType::F32, dtype, || case.forward(dtype, &device))
                else {
                    continue;
                };
                assert_bit_equal(
                    &actual,
                    &expected,
                    &format!(
                        "{} ({}) on {device_name} with {dtype:?}",
                        case.name, case.source
                    ),
                );
            }
        }
    }
}

/// The op copies bits, so the recorded cases hold for integer values too, with unsigned and
/// signed indices.
#[test]
fn recorded_cases_hold_for_integer_values() {
    let pairs: Vec<(DType, DType)> = INTEGER_DTYPES
        .into_iter()
        .zip([DType::U32, DType::U64].into_iter().cycle())
        .collect();
    assert_recorded_cases_hold_for_integer_values(&pairs);
}

#[test]
fn recorded_pytorch_gradients_match_without_duplicates() {
    let checked = assert_recorded_gradients();
    assert!(
        checked >= 8,
        "only {checked} cases carry a PyTorch gradient"
    );
}

/// The in-test reference must reproduce the recorded outputs before it may judge anything else.
#[test]
fn reference_reproduces_the_recorded_outputs() {
    for case in conformance_cases() {
        let index_plane = match &case.onnx_output_shape {
            // ONNX reference rule: indices are read in the inferred shape.
            Some(_) => case
                .kernel
                .iter()
                .enumerate()
                .map(|(a, &k)| {
                    (case.input_shape[2 + a] - 1) * case.stride[a]
                        - case.padding[a].0
                        - case.padding[a].1
                        + k
                })
                .collect(),
            None => case.output_shape[2..].to_vec(),
        };
        let targets = reference_targets(
            &case.indices,
            &case.input_shape,
            &case.output_shape,
            &index_plane,
            case.layout(),
        )
        .expect("recorded indices are in range");
        let out = reference_forward(&case.x, &targets, case.expected.len());
        assert_eq!(out, case.expected, "{}", case.name);
    }
}

/// With duplicates PyTorch's gradient is not the contract's; the reference decides.
#[test]
fn gradients_with_duplicates_follow_the_winner() {
    let mut checked = 0;
    for case in conformance_cases()
        .into_iter()
        .filter(|c| c.grad_x.is_none() && c.onnx_output_shape.is_none())
    {
        let targets = reference_targets(
            &case.indices,
            &case.input_shape,
            &case.output_shape,
            &case.output_shape[2..],
            case.layout(),
        )
        .unwrap();
        let grad: Vec<f64> = (0..case.expected.len())
            .map(|i| ((i * 37 % 101) as f64) - 50.0)
            .collect();
        let expected = f32_data(&reference_backward(&grad, &targets), &case.input_shape);
        for (device_name, device) in devices() {
            let actual = run(
                Direction::Backward,
                f32_data(&grad, &case.output_shape),
                case.indices_data(DType::I32),
                &case.geometry(),
                case.layout(),
                &device,
            );
            assert_bit_equal(
                &actual,
                &expected,
                &format!("gradient of {} on {device_name}", case.name),
            );
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} duplicate cases");
}

#[test]
fn hand_worked_duplicates_last_write_wins() {
    // x = [1, 2, 3, 4] with indices [0, 0, 3, 0]: position 0 is written by 1, 2 and 4 (4 is last).
    for (name, device) in devices() {
        let x = Tensor::<3>::from_floats([[[1.0, 2.0, 3.0, 4.0]]], &device);
        let indices = Tensor::<3, Int>::from_ints([[[0, 0, 3, 0]]], &device);
        let y = max_unpool1d(x, indices, MaxUnpoolOptions::new([2]).with_output_size([5]));
        assert_bit_equal(
            &y.into_data(),
            &TensorData::from([[[4.0f32, 0.0, 0.0, 3.0, 0.0]]]),
            name,
        );
    }
}

#[test]
fn hand_worked_dilated_pool_is_inverted() {
    // A 1x6 row pooled with kernel 2, dilation 3, stride 2 has windows {0,3} and {2,5}: output 2.
    // Default unpool size: (2 - 1) * 2 - 0 + 3 * (2 - 1) + 1 = 6, the pool's input width.
    for (name, device) in devices() {
        let x = Tensor::<4>::from_floats([[[[8.0, 9.0]]]], &device);
        let indices = Tensor::<4, Int>::from_ints([[[[3, 5]]]], &device);
        let options = MaxUnpoolOptions::new([1, 2])
            .with_stride([1, 2])
            .with_dilation([1, 3]);
        let y = max_unpool2d(x, indices, options);
        assert_bit_equal(
            &y.into_data(),
            &TensorData::from([[[[0.0f32, 0.0, 0.0, 8.0, 0.0, 9.0]]]]),
            name,
        );
    }
}

#[test]
fn hand_worked_global_indices_cross_planes() {
    // Global indices may address another plane: element (0,0,1) writes into plane 1.
    for (name, device) in devices() {
        let x = Tensor::<3>::from_floats([[[1.0, 2.0], [3.0, 4.0]]], &device);
        let indices = Tensor::<3, Int>::from_ints([[[0, 5], [4, 7]]], &device);
        let options = MaxUnpoolOptions::new([2]).with_index_layout(IndexLayout::Global);
        let y = max_unpool1d(x, indices, options);
        // Plane 1 = offsets 4..8: 4 <- 3.0, 5 <- 2.0, 7 <- 4.0.
        assert_bit_equal(
            &y.into_data(),
            &TensorData::from([[[1.0f32, 0.0, 0.0, 0.0], [3.0, 2.0, 0.0, 4.0]]]),
            name,
        );
    }
}

#[test]
fn values_are_copied_bit_for_bit() {
    // Negative zero, NaN with a payload, infinities and subnormals survive unchanged.
    let bits = [
        0x8000_0000u32,
        0x7fc0_1234,
        0x7f80_0000,
        0xff80_0000,
        0x0000_0001,
        0x3f80_0001,
    ];
    let values: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    for (name, device) in devices() {
        let x = Tensor::<3>::from_data(TensorData::new(values.clone(), [1, 1, 6]), &device);
        let indices = Tensor::<3, Int>::from_ints([[[1, 2, 5, 6, 9, 10]]], &device);
        let y = max_unpool1d(x, indices, MaxUnpoolOptions::new([2])).into_data();
        let y: Vec<u32> = y
            .as_slice::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let picked: Vec<u32> = [1, 2, 5, 6, 9, 10].iter().map(|&i| y[i]).collect();
        assert_eq!(picked, bits, "{name}");
    }
}

#[test]
fn every_float_dtype_the_device_has() {
    use burn::tensor::FloatDType;
    for (name, device) in devices() {
        for dtype in [DType::F64, DType::F16, DType::BF16] {
            if !device.supports_dtype(dtype) {
                continue;
            }
            let x = Tensor::<3>::from_floats([[[1.5, -2.25, 3.0]]], &device)
                .cast(FloatDType::from(dtype));
            let indices = Tensor::<3, Int>::from_ints([[[1, 1, 4]]], &device);
            let y = max_unpool1d(x, indices, MaxUnpoolOptions::new([2])).cast(FloatDType::F32);
            let expected = TensorData::from([[[0.0f32, -2.25, 0.0, 0.0, 3.0, 0.0]]]);
            assert_bit_equal(&y.into_data(), &expected, &format!("{name} {dtype:?}"));
        }
    }
}
