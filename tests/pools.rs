//! The max pools with indices (`max_pool{1,2,3}d_with_indices`, `nn::MaxPool3d`, and ONNX's
//! `max_pool_onnx` for every kind) against PyTorch's `max_pool{1,2,3}d` recorded by
//! `scripts/pools.py`: values, indices and autograd gradients bit for bit on every device,
//! overlapping, dilated, ceil-mode and padded pools, windows of `-inf`, padding-heavy windows,
//! ties and NaNs; and their indices unpooling back without an output size.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::nn::{MaxPool3dConfig, MaxPoolWithIndices, MaxUnpool3dConfig};
use burn_unpool::onnx::{AutoPad, MaxPoolAttributes, max_pool_onnx};
use burn_unpool::{
    IndexLayout, MaxUnpoolOptions, max_pool3d_with_indices, max_unpool, max_unpool3d,
};
use burn_unpool_tests::{
    INTEGER_DTYPES, RecordedPool, assert_bit_equal, devices, devices_holding, onnx_index_dtype,
    outcome, pool_cases, pool_routes, reference_forward, reference_targets, where_supported,
};

fn i64_data<const R: usize>(tensor: Tensor<R, Int>) -> TensorData {
    tensor.into_data().convert::<i64>()
}

#[test]
fn max_pools_match_pytorch_on_every_device_and_route() {
    for case in pool_cases() {
        for (name, device) in devices() {
            pool_routes(&device, &case.shape, &case.x_f32(), |route| {
                let context = format!("{} on {name}, {route}", case.name);
                let (pooled, indices) = case.pool_on(&device);
                let expected = case.f32(&case.pooled, &case.pooled_shape);
                assert_bit_equal(&pooled, &expected, &context);
                assert_eq!(indices, case.indices(), "{context}");
            });
        }
    }
}

#[test]
fn max_pool_gradients_match_pytorch_autograd_on_every_device_and_route() {
    for case in pool_cases() {
        for (name, device) in devices() {
            pool_routes(&device, &case.shape, &case.x_f32(), |route| {
                let context = format!("{} on {name}, {route}", case.name);
                let dx = case.gradient_on(&device);
                // Integer gradients (-4..=4) sum exactly, in any order; an upstream -0.0 comes
                // back as +0.0 (a sum into zeros), as in PyTorch.
                assert_bit_equal(&dx, &case.f32(&case.grad_x, &case.shape), &context);
            });
        }
    }
}

/// The recorded 3-d cases, whose geometry the 3-d module takes.
fn cases_3d() -> impl Iterator<Item = RecordedPool> {
    pool_cases()
        .into_iter()
        .filter(|case| case.shape.len() == 5)
}

fn triple(values: &[usize]) -> [usize; 3] {
    values.try_into().expect("three axes")
}

#[test]
fn the_module_pools_as_the_function_and_its_indices_unpool_without_an_output_size() {
    for case in cases_3d().filter(|c| !c.name.contains("nan") && !c.name.contains("inf")) {
        let config = MaxPool3dConfig::new(triple(&case.kernel))
            .with_strides(triple(&case.stride))
            .with_padding(burn::nn::PaddingConfig3d::Explicit(
                case.padding[0],
                case.padding[1],
                case.padding[2],
            ))
            .with_dilation(triple(&case.dilation))
            .with_ceil_mode(case.ceil_mode);
        let pool = config.init();
        let unpool = MaxUnpool3dConfig::from(&config).init();
        let targets = reference_targets(
            &case.indices,
            &case.pooled_shape,
            &case.shape,
            &case.shape[2..],
            IndexLayout::PerPlane,
        )
        .expect("PyTorch's indices are in range");
        let pooled: Vec<f64> = case
            .pooled
            .iter()
            .map(|&b| f32::from_bits(b as u32) as f64)
            .collect();
        let len = case.shape.iter().product();
        let restored: Vec<f32> = reference_forward(&pooled, &targets, len)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let expected = TensorData::new(restored, case.shape.clone());
        for (name, device) in devices() {
            let context = format!("{} on {name}", case.name);
            let x = Tensor::<5>::from_data(case.f32(&case.x, &case.shape), &device);
            assert_bit_equal(
                &pool.forward(x.clone()).into_data(),
                &case.f32(&case.pooled, &case.pooled_shape),
                &context,
            );
            let (pooled, indices) = pool.forward_with_indices(x);
            // The module infers the output size from its own pool geometry; the indices carry
            // the pool's input size, so odd and ceil-mode sizes come back whole.
            let y = unpool.forward(pooled.clone(), indices.clone());
            assert_bit_equal(&y.into_data(), &expected, &context);
            let options = MaxUnpoolOptions::from_pool(&case.options::<3>());
            let y = max_unpool3d(pooled, indices, options);
            assert_bit_equal(&y.into_data(), &expected, &context);
        }
    }
}

#[test]
fn integer_volumes_pool_through_the_onnx_entry_with_global_indices() {
    for case in cases_3d().filter(|c| c.name.starts_with("ties")) {
        let attributes = MaxPoolAttributes::new(case.kernel.clone())
            .with_strides(case.stride.clone())
            .with_pads([case.padding.clone(), case.padding.clone()].concat())
            .with_dilations(case.dilation.clone())
            .with_ceil_mode(case.ceil_mode);
        let plane: i64 = case.shape[2..].iter().product::<usize>() as i64;
        let cells: usize = case.pooled_shape[2..].iter().product();
        let global: Vec<i64> = case
            .indices
            .iter()
            .enumerate()
            .map(|(i, &index)| index + (i / cells) as i64 * plane)
            .collect();
        let ints = |bits: &[u64]| -> Vec<i64> {
            bits.iter()
                .map(|&b| f32::from_bits(b as u32) as i64)
                .collect()
        };
        for (name, device) in devices() {
            for dtype in [DType::I32, DType::I64] {
                let context = format!("{} as {dtype:?} on {name}", case.name);
                let x = Tensor::<5, Int>::from_data(
                    TensorData::new(ints(&case.x), case.shape.clone()),
                    (&device, dtype),
                );
                let Some((y, indices)) =
                    where_supported(&device, &[dtype], || max_pool_onnx(x, &attributes))
                else {
                    continue;
                };
                assert_eq!(y.dtype(), dtype, "{context}");
                assert_eq!(
                    y.into_data().convert::<i64>(),
                    TensorData::new(ints(&case.pooled), case.pooled_shape.clone()),
                    "{context}"
                );
                let wide = onnx_index_dtype(&device);
                assert_eq!(indices.dtype(), wide, "{context}");
                assert_eq!(
                    indices.into_data(),
                    TensorData::new(global.clone(), case.pooled_shape.clone()).convert_dtype(wide),
                    "{context}"
                );
            }
        }
    }
}

/// `max_pool_onnx` of `attributes` over `shape` on this crate's kernels against the composition,
/// bit for bit, on every device: float values with ties, NaN, infinities and signed zeros, and
/// integer values of every integer dtype the device computes with (ties, and each dtype's
/// extremes in 8 bits); indices, and the gradient under autodiff.
fn onnx_pool_on_both_routes<const R: usize>(shape: [usize; R], attributes: &MaxPoolAttributes) {
    onnx_integer_pool_on_both_routes(shape, attributes);
    let palette = [
        3.0,
        -1.0,
        f32::NAN,
        3.0,
        -0.0,
        0.0,
        f32::INFINITY,
        -2.5,
        f32::NEG_INFINITY,
    ];
    let len = shape.iter().product();
    let values: Vec<f32> = (0..len)
        .map(|i| palette[(i * 7 + i / 5) % palette.len()])
        .collect();
    for (name, device) in devices_holding(R) {
        let context = format!("{shape:?} {attributes:?} on {name}");
        let x = Tensor::<R>::from_data(TensorData::new(values.clone(), shape), &device);
        let (y, indices) = max_pool_onnx(x.clone(), attributes);
        let (expected_y, expected_indices) =
            burn_unpool::diagnostics::with_composition(|| max_pool_onnx(x, attributes));
        assert_bit_equal(&y.into_data(), &expected_y.into_data(), &context);
        assert_eq!(
            indices.dtype(),
            onnx_index_dtype(&device),
            "{context}: index dtype"
        );
        assert_eq!(
            indices.into_data(),
            expected_indices.into_data(),
            "{context}: indices"
        );
        // The gradient of sum(y * weights) for x, through each route's backward.
        let autodiff = device.clone().autodiff();
        let gradient = |composed: bool| {
            let x = Tensor::<R>::from_data(TensorData::new(values.clone(), shape), &autodiff)
                .require_grad();
            let pool = || max_pool_onnx(x.clone(), attributes).0;
            let y = match composed {
                true => burn_unpool::diagnostics::with_composition(pool),
                false => pool(),
            };
            let weights: Vec<f32> = (0..y.shape().num_elements())
                .map(|i| (i % 5) as f32 - 2.5)
                .collect();
            let weights = Tensor::<R>::from_data(TensorData::new(weights, y.dims()), &autodiff);
            let grads = (y * weights).sum().backward();
            x.grad(&grads).expect("a gradient for x").into_data()
        };
        assert_bit_equal(
            &gradient(false),
            &gradient(true),
            &format!("{context}: gradient"),
        );
    }
}

/// The integer half of [`onnx_pool_on_both_routes`].
fn onnx_integer_pool_on_both_routes<const R: usize>(
    shape: [usize; R],
    attributes: &MaxPoolAttributes,
) {
    let palette: [i64; 9] = [3, -1, 0, 3, 120, -128, 7, -2, 127];
    let len: usize = shape.iter().product();
    for (name, device) in devices_holding(R) {
        for dtype in INTEGER_DTYPES
            .into_iter()
            .filter(|&d| device.supports_dtype(d))
        {
            let context = format!("{shape:?} {attributes:?} as {dtype:?} on {name}");
            // Unsigned dtypes hold the palette moved up by 128: 0 to 255.
            let shift = if matches!(dtype, DType::I64 | DType::I32 | DType::I16 | DType::I8) {
                0
            } else {
                128
            };
            let values: Vec<i64> = (0..len)
                .map(|i| palette[(i * 7 + i / 5) % palette.len()] + shift)
                .collect();
            let data = TensorData::new(values, shape).convert_dtype(dtype);
            let x = Tensor::<R, Int>::from_data(data, (&device, dtype));
            let (y, indices) = max_pool_onnx(x.clone(), attributes);
            let (expected_y, expected_indices) =
                burn_unpool::diagnostics::with_composition(|| max_pool_onnx(x, attributes));
            assert_eq!(y.dtype(), dtype, "{context}: value dtype");
            assert_eq!(y.into_data(), expected_y.into_data(), "{context}: values");
            assert_eq!(
                indices.dtype(),
                onnx_index_dtype(&device),
                "{context}: index dtype"
            );
            assert_eq!(
                indices.into_data(),
                expected_indices.into_data(),
                "{context}: indices"
            );
        }
    }
}

#[test]
fn onnx_max_pool_on_the_kernels_gives_the_compositions_values_indices_and_gradients() {
    let new = MaxPoolAttributes::new;
    onnx_pool_on_both_routes(
        [2, 3, 9],
        &new(vec![3]).with_strides(vec![2]).with_pads(vec![1, 1]),
    );
    for storage_order in [0, 1] {
        let attributes = new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_storage_order(storage_order);
        onnx_pool_on_both_routes([2, 3, 7, 6], &attributes);
        for auto_pad in [AutoPad::SameUpper, AutoPad::SameLower, AutoPad::Valid] {
            let attributes = new(vec![3, 2])
                .with_strides(vec![2, 1])
                .with_dilations(vec![1, 2])
                .with_auto_pad(auto_pad)
                .with_storage_order(storage_order);
            onnx_pool_on_both_routes([1, 2, 7, 6], &attributes);
        }
        let attributes = new(vec![2, 3, 2])
            .with_strides(vec![2, 2, 2])
            .with_pads(vec![0, 1, 0, 1, 1, 1])
            .with_ceil_mode(true)
            .with_storage_order(storage_order);
        onnx_pool_on_both_routes([1, 2, 5, 6, 7], &attributes);
        let attributes = new(vec![2, 2, 2, 2]).with_storage_order(storage_order);
        onnx_pool_on_both_routes([1, 1, 3, 4, 5, 4], &attributes);
    }
}

#[test]
fn a_3d_encoder_decoder_trains_through_pool_and_unpool() {
    // pool -> unpool is the identity on each window's maximum and zero elsewhere, so the
    // gradient of sum(unpool(pool(x)) * w) is w at the maxima and zero elsewhere.
    let shape = [1, 2, 4, 4, 4];
    let len: usize = shape.iter().product();
    let values: Vec<f32> = (0..len).map(|i| ((i * 37) % 101) as f32).collect();
    let weights: Vec<f32> = (0..len).map(|i| (i % 7) as f32 - 3.0).collect();
    let pool = MaxPoolOptions::new([2, 2, 2]);
    for (name, device) in devices() {
        let autodiff = device.clone().autodiff();
        let x = Tensor::<5>::from_data(TensorData::new(values.clone(), shape), &autodiff)
            .require_grad();
        let (pooled, indices) = max_pool3d_with_indices(x.clone(), pool.clone());
        let winners = i64_data(indices.tensor().clone());
        let y = max_unpool(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
        let w = Tensor::<5>::from_data(TensorData::new(weights.clone(), shape), &autodiff);
        let grads = (y * w).sum().backward();
        let dx = x.grad(&grads).expect("a gradient").into_data();
        let mut expected = vec![0.0f32; len];
        let plane = 64;
        for (i, &index) in winners
            .try_to_vec::<i64>()
            .expect("i64 indices")
            .iter()
            .enumerate()
        {
            let target = (i / 8) * plane + index as usize;
            expected[target] = weights[target];
        }
        assert_bit_equal(&dx, &TensorData::new(expected, shape), name);
    }
}

#[test]
fn impossible_pools_are_refused_with_the_values() {
    let device = Device::flex();
    let x = Tensor::<5>::zeros([1, 1, 2, 4, 4], &device);
    let err =
        outcome(|| max_pool3d_with_indices(x.clone(), MaxPoolOptions::new([3, 2, 2]))).unwrap_err();
    assert_eq!(
        err,
        "max_pool: the window (kernel 3, dilation 1) does not fit axis 0 of size 2 with padding \
         (0, 0): no output"
    );
    let padded = MaxPoolOptions::new([2, 2, 2]).with_padding_pairs([(2, 0), (0, 0), (0, 0)]);
    let err = outcome(|| max_pool3d_with_indices(x.clone(), padded)).unwrap_err();
    assert_eq!(
        err,
        "max_pool: window 0 of axis 0 (size 2, padding (2, 0)) lies entirely in the padding; \
         the padding must leave every window an input element"
    );
    let mut zero = MaxPoolOptions::new([2, 2, 2]);
    zero.stride = [2, 0, 2];
    let err = outcome(|| max_pool3d_with_indices(x, zero)).unwrap_err();
    assert_eq!(err, "max_pool: stride must be non-zero, got [2, 0, 2]");
}
