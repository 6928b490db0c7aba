//! Every value and index dtype, on every device: DirectML's rule as its documentation states it
//! (4-D, flat indices into the whole output, every value type of its table with UINT32 and UINT64
//! indices), checked against the values `tests/scripts/directml.py` recorded with numpy and
//! against a reference written here; then integer values and narrow or unsigned indices through
//! the modules and pool indices, and unsigned indices that no signed path may wrap.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::nn::{MaxPoolWithIndices, MaxUnpool2dConfig};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool1d, max_unpool2d};
use burn_unpool_tests::{
    INTEGER_DTYPES, assert_bit_equal, assert_lists_dtypes_of, data_from_bits, devices, outcome,
    reads_indices, recorded_cases, where_readable, where_supported,
};
use serde::Deserialize;

/// One case of `tests/data/directml.json`.
#[derive(Deserialize)]
struct Case {
    /// DirectML's name of the value type.
    values: String,
    /// DirectML's name of the index type.
    indices_type: String,
    input_shape: [usize; 4],
    output_shape: [usize; 4],
    /// The values' bit patterns.
    x_bits: Vec<u64>,
    indices: Vec<u64>,
    /// The recorded output's bit patterns.
    expected_bits: Vec<u64>,
}

fn cases() -> Vec<Case> {
    recorded_cases(include_str!("data/directml.json"))
}

/// The panic message of `f`, which must panic.
fn message(f: impl FnOnce()) -> String {
    outcome(f).expect_err("a panic")
}

/// Burn's dtype for a DirectML type name.
fn dtype(name: &str) -> DType {
    match name {
        "FLOAT32" => DType::F32,
        "FLOAT16" => DType::F16,
        "INT64" => DType::I64,
        "INT32" => DType::I32,
        "INT16" => DType::I16,
        "INT8" => DType::I8,
        "UINT64" => DType::U64,
        "UINT32" => DType::U32,
        "UINT16" => DType::U16,
        "UINT8" => DType::U8,
        other => panic!("unknown DirectML type {other}"),
    }
}

/// The seed's rule, written here: zeros, then every value at its flat index.
fn reference(x_bits: &[u64], indices: &[u64], output_len: usize) -> Vec<u64> {
    let mut out = vec![0; output_len];
    for (&bits, &index) in x_bits.iter().zip(indices) {
        out[usize::try_from(index).unwrap()] = bits;
    }
    out
}

/// Unpools `x` (either kind, by its dtype) with `indices` on `device`; the output data.
fn unpool_on(
    device: &Device,
    x: TensorData,
    indices: TensorData,
    options: MaxUnpoolOptions<2>,
) -> TensorData {
    let (x_dtype, index_dtype) = (x.dtype(), indices.dtype());
    let indices = Tensor::<4, Int>::from_data(indices, (device, index_dtype));
    if x_dtype.is_float() {
        max_unpool2d(
            Tensor::<4>::from_data(x, (device, x_dtype)),
            indices,
            options,
        )
        .into_data()
    } else {
        let x = Tensor::<4, Int>::from_data(x, (device, x_dtype));
        max_unpool2d(x, indices, options).into_data()
    }
}

#[test]
fn directml_rule_for_every_value_and_index_type() {
    let cases = cases();
    assert_eq!(cases.len(), 20, "10 value types x 2 index types");
    for (name, device) in devices() {
        // Flex has every type of the table and NdArray all but f16; a GPU may lack the 8- and
        // 16-bit integers, and one without 64-bit integers (SwiftShader, WebGPU) the 64-bit
        // types: where it does, the op's refusal is checked instead.
        let may_lack: &[&str] = match name {
            "flex" => &[],
            "ndarray" => &["FLOAT16"],
            _ => &[
                "INT16", "INT8", "UINT16", "UINT8", "INT64", "UINT64", "DOUBLE", "FLOAT16",
            ],
        };
        for case in &cases {
            let (x_dtype, index_dtype) = (dtype(&case.values), dtype(&case.indices_type));
            let context = format!(
                "{name}: {} values, {} indices",
                case.values, case.indices_type
            );
            let options = MaxUnpoolOptions::new([2, 2])
                .with_index_layout(IndexLayout::Global)
                .with_full_output_size(case.output_shape);
            if name == "ndarray" && !device.supports_dtype(x_dtype) {
                // NdArray cannot even hold an f16 tensor: Burn panics making one.
                println!("{context}: no tensor of these values");
                continue;
            }
            let x = data_from_bits(&case.x_bits, &case.input_shape, x_dtype);
            let indices = data_from_bits(&case.indices, &case.input_shape, index_dtype);
            let Some(out) = where_readable(&device, x_dtype, index_dtype, || {
                unpool_on(&device, x, indices, options)
            }) else {
                assert!(
                    may_lack.contains(&case.values.as_str())
                        || may_lack.contains(&case.indices_type.as_str()),
                    "{context}: refused"
                );
                println!("{context}: refused");
                continue;
            };
            let recorded = data_from_bits(&case.expected_bits, &case.output_shape, x_dtype);
            assert_bit_equal(&out, &recorded, &format!("{context}, numpy"));
            let output_len = case.output_shape.iter().product();
            let expected = reference(&case.x_bits, &case.indices, output_len);
            let expected = data_from_bits(&expected, &case.output_shape, x_dtype);
            assert_bit_equal(&out, &expected, &format!("{context}, reference"));
        }
    }
}

/// A label map (u8 classes) unpooled with the indices of the pooled image, through the module,
/// on every device: each label lands where its window's maximum was.
#[test]
fn a_label_map_follows_the_image_pool() {
    let image = [[3.0f32, 1.0, 0.0, 2.0], [0.0, 2.0, 9.0, 1.0]];
    let labels = [[7u8, 0, 0, 4], [0, 0, 255, 0]];
    for (name, device) in devices() {
        if !device.supports_dtype(DType::U8) {
            println!("{name}: no u8");
            continue;
        }
        let pool_config = burn::nn::pool::MaxPool2dConfig::new([2, 2]);
        let (pool, unpool) = (
            pool_config.init(),
            MaxUnpool2dConfig::from(&pool_config).init(),
        );
        let image = Tensor::<4>::from_data([[image]], &device);
        let (_, indices) = pool.forward_with_indices(image);
        // Each window's label where the image's maximum was: 7 (3.0 at [0, 0]), 255 (9.0 at
        // [1, 2]).
        let labels = Tensor::<4, Int>::from_data(
            TensorData::new(labels.concat(), [1, 1, 2, 4]),
            (&device, DType::U8),
        );
        let pooled = labels
            .reshape([1, 1, 8])
            .gather(2, indices.tensor().clone().reshape([1, 1, 2]))
            .reshape([1, 1, 1, 2]);
        let restored = unpool.forward(pooled, indices);
        let expected = TensorData::new(vec![7u8, 0, 0, 0, 0, 0, 255, 0], [1, 1, 2, 4]);
        assert_bit_equal(&restored.into_data(), &expected, name);
    }
}

/// Integer values on an autodiff device (no gradient: the inner backend's op) give the inner
/// device's result.
#[test]
fn integer_values_on_an_autodiff_device() {
    for (name, device) in devices() {
        let x = TensorData::new(vec![i64::MIN, -1, i64::MAX], [1, 1, 3]);
        let indices = TensorData::new(vec![5i64, 0, 2], [1, 1, 3]);
        let expected = TensorData::new(vec![-1i64, 0, i64::MAX, 0, 0, i64::MIN], [1, 1, 6]);
        let autodiff = device.clone().autodiff();
        let Some(out) = where_supported(&device, &[DType::I64], || {
            let x = Tensor::<3, Int>::from_data(x, (&autodiff, DType::I64));
            let indices = Tensor::<3, Int>::from_data(indices, &autodiff);
            max_unpool1d(x, indices, MaxUnpoolOptions::new([2])).into_data()
        }) else {
            continue;
        };
        assert_bit_equal(&out, &expected, name);
    }
}

/// Index dtypes of every width give the same output; a u32 index of 2^31 and a u64 index of
/// 2^64 - 1 reach the range check as themselves on every device.
#[test]
fn unsigned_and_narrow_indices_on_every_device() {
    let x = TensorData::new(vec![-5i32, 6, 7], [1, 1, 3]);
    let indices = [1u64, 2, 5];
    let expected = TensorData::new(vec![0i32, -5, 6, 0, 0, 7], [1, 1, 6]);
    for (name, device) in devices() {
        for index_dtype in INTEGER_DTYPES {
            let Some(out) = where_readable(&device, DType::I32, index_dtype, || {
                let indices =
                    TensorData::new(indices.to_vec(), [1, 1, 3]).convert_dtype(index_dtype);
                let indices = Tensor::<3, Int>::from_data(indices, (&device, index_dtype));
                let x = Tensor::<3, Int>::from_data(x.clone(), (&device, DType::I32));
                max_unpool1d(x, indices, MaxUnpoolOptions::new([2])).into_data()
            }) else {
                println!("{name}: no {index_dtype:?} indices");
                continue;
            };
            assert_bit_equal(&out, &expected, &format!("{name} {index_dtype:?}"));
        }
    }
}

/// Where a device has a dtype's tensors but cannot compute with them (8- and 16-bit integers on
/// a wgpu device without shader support for them, 64-bit ones on SwiftShader), values and indices
/// of that dtype get an error naming the dtype, the device and the dtypes it takes.
#[test]
fn a_device_without_a_dtype_names_both() {
    for (name, device) in devices() {
        for dtype in [
            DType::I64,
            DType::U64,
            DType::I16,
            DType::I8,
            DType::U16,
            DType::U8,
        ] {
            if device.supports_dtype(dtype) {
                continue;
            }
            let narrow = |value: i32| {
                let data = TensorData::new(vec![value], [1, 1, 1]).convert_dtype(dtype);
                Tensor::<3, Int>::from_data(data, (&device, dtype))
            };
            let wide = |value: i32| {
                Tensor::<3, Int>::from_data(TensorData::new(vec![value], [1, 1, 1]), &device)
            };
            let values = message(|| {
                max_unpool1d(narrow(1), wide(0), MaxUnpoolOptions::new([1]));
            });
            let mut refusals = vec![("values", values)];
            if !reads_indices(&device, dtype) {
                let indices = message(|| {
                    max_unpool1d(wide(1), narrow(0), MaxUnpoolOptions::new([1]));
                });
                refusals.push(("indices", indices));
            }
            for (what, message) in refusals {
                let expected = format!("{what} of dtype {dtype:?} cannot be");
                assert!(
                    message.contains(&expected) && message.contains("on device Device<"),
                    "{name} {dtype:?}: {message}"
                );
                assert_lists_dtypes_of(&message, &device);
            }
        }
    }
}
