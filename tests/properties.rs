//! Property tests: for random shapes and pool parameters, unpooling inverts pooling, and every
//! device agrees with the reference (and so with each other) bit for bit, forward and backward.

use burn::tensor::module::max_pool2d_with_indices;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool2d};
use burn_unpool_tests::{
    Direction, INTEGER_DTYPES, PoolParams, assert_bit_equal, devices, reference_backward,
    reference_forward, reference_targets, run, where_supported,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Pool {
    shape: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
}

fn pools() -> impl Strategy<Value = Pool> {
    (
        1usize..3,
        1usize..4,
        [1usize..4, 1usize..4],
        [1usize..4, 1usize..4],
        [1usize..3, 1usize..3],
        any::<bool>(),
    )
        .prop_flat_map(|(n, c, kernel, stride, dilation, ceil_mode)| {
            // Burn's pool needs padding <= kernel / 2 and a window that fits the padded input.
            let min = [0, 1].map(|a| dilation[a] * (kernel[a] - 1) + 1);
            let pad = [0, 1].map(|a| 0..=kernel[a] / 2);
            ([min[0]..min[0] + 9, min[1]..min[1] + 9], pad).prop_map(move |(size, padding)| Pool {
                shape: [n, c, size[0], size[1]],
                kernel,
                stride,
                padding,
                dilation,
                ceil_mode,
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// `pool(unpool(pool(x)))` gives back `pool(x)` (positive values: the zeros unpooling writes
    /// never win a window), with the pool's input size as the output size; the pool indices of
    /// this crate's pool give the same unpooling without it.
    #[test]
    fn unpooling_inverts_pooling(pool in pools(), seed in 0u64..1000) {
        let [n, c, h, w] = pool.shape;
        let values: Vec<f32> = (0..n * c * h * w).map(|i| 1.0 + ((i as u64 * 2654435761 + seed) % 1000) as f32).collect();
        let options = MaxPoolOptions::new(pool.kernel)
            .with_stride(pool.stride)
            .with_padding(pool.padding)
            .with_dilation(pool.dilation)
            .with_ceil_mode(pool.ceil_mode);
        for (name, device) in devices() {
            let image = Tensor::<4>::from_data(TensorData::new(values.clone(), pool.shape), &device);
            let (pooled, indices) = max_pool2d_with_indices(image.clone(), options.clone());
            let unpooled = max_unpool2d(pooled.clone(), indices, MaxUnpoolOptions::from_pool(&options).with_output_size([h, w]));
            prop_assert_eq!(unpooled.dims(), pool.shape);
            let (again, _) = max_pool2d_with_indices(unpooled.clone(), options.clone());
            assert_bit_equal(&again.into_data(), &pooled.clone().into_data(), &format!("{name} {pool:?}"));
            // This crate's pool indices: no output size, no check, the same bits.
            let (_, pool_indices) = burn_unpool::max_pool2d_with_indices(image, options.clone());
            let typed = max_unpool2d(pooled, pool_indices, MaxUnpoolOptions::from_pool(&options));
            assert_bit_equal(&typed.into_data(), &unpooled.into_data(), &format!("{name} {pool:?}, pool indices"));
        }
    }

    /// Arbitrary indices (duplicates included) of a signed or unsigned dtype, with f32 and f64
    /// values (forward and backward) and every integer value dtype the device has (forward): every
    /// device matches the reference bit for bit, with either layout.
    #[test]
    fn devices_agree_with_the_reference(
        shape in [1usize..3, 1usize..4, 1usize..6, 1usize..6],
        scale in [1usize..4, 1usize..4],
        global in any::<bool>(),
        seed in 0u64..10_000,
    ) {
        let [n, c, h, w] = shape;
        let out_shape = [n, c, h * scale[0], w * scale[1]];
        let plane = out_shape[2] * out_shape[3];
        let layout = if global { IndexLayout::Global } else { IndexLayout::PerPlane };
        let range = if global { n * c * plane } else { plane };
        let mut state = seed;
        let mut next = move || { state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (state >> 33) as usize };
        let len = n * c * h * w;
        let indices: Vec<i64> = (0..len).map(|_| (next() % range) as i64).collect();
        let x: Vec<f64> = (0..len).map(|_| (next() % 2001) as f64 / 8.0 - 125.0).collect();
        let grad: Vec<f64> = (0..n * c * plane).map(|_| (next() % 2001) as f64 / 16.0 - 62.5).collect();

        let targets = reference_targets(&indices, &shape, &out_shape, &out_shape[2..], layout).unwrap();
        let expected_y = reference_forward(&x, &targets, grad.len());
        let expected_dx = reference_backward(&grad, &targets);
        let geometry = PoolParams { kernel: scale.to_vec(), stride: scale.to_vec(), padding: vec![(0, 0); 2], dilation: vec![1, 1], output_size: None };

        // Integer values in [0, 120), which every integer dtype holds.
        let x_int: Vec<f64> = x.iter().map(|v| (v.abs() as usize % 120) as f64).collect();
        let expected_y_int = reference_forward(&x_int, &targets, grad.len());
        // Every index dtype the GPU computes with, signed and unsigned.
        let index_dtype = [DType::I64, DType::I32, DType::U32, DType::U64][seed as usize % 4];
        let idx = TensorData::new(indices.clone(), shape.to_vec()).convert_dtype(index_dtype);

        for (name, device) in devices() {
            for dtype in INTEGER_DTYPES {
                if !device.supports_dtype(dtype) {
                    continue;
                }
                let data = |v: &[f64], s: &[usize]| TensorData::new(v.to_vec(), s.to_vec()).convert_dtype(dtype);
                let y = run(Direction::Forward, data(&x_int, &shape), idx.clone(), &geometry, layout, &device);
                assert_bit_equal(&y, &data(&expected_y_int, &out_shape), &format!("forward {name} {dtype:?} {index_dtype:?}"));
            }
            for dtype in [DType::F32, DType::F64] {
                let data = |v: &[f64], s: &[usize]| TensorData::new(v.to_vec(), s.to_vec()).convert_dtype(dtype);
                let Some((y, dx)) = where_supported(&device, &[dtype], || (
                    run(Direction::Forward, data(&x, &shape), idx.clone(), &geometry, layout, &device),
                    run(Direction::Backward, data(&grad, &out_shape), idx.clone(), &geometry, layout, &device),
                )) else {
                    continue;
                };
                assert_bit_equal(&y, &data(&expected_y, &out_shape), &format!("forward {name} {dtype:?} {index_dtype:?}"));
                assert_bit_equal(&dx, &data(&expected_dx, &shape), &format!("backward {name} {dtype:?} {index_dtype:?}"));
            }
        }
    }
}

#[test]
fn devices_agree_on_burns_own_pool_indices() {
    // Flex emits i32 indices, NdArray i64, wgpu i32: every device's unpooling of its own pool is
    // the reference's, and they all equal Flex's.
    let shape = [2, 3, 13, 11];
    let values: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|i| ((i * 7919) % 613) as f32 - 300.0)
        .collect();
    let options = MaxPoolOptions::new([3, 3])
        .with_stride([2, 2])
        .with_padding([1, 1]);
    let mut results = Vec::new();
    for (name, device) in devices() {
        let image = Tensor::<4>::from_data(TensorData::new(values.clone(), shape), &device);
        let (pooled, indices): (Tensor<4>, Tensor<4, Int>) =
            max_pool2d_with_indices(image, options.clone());
        let pooled_shape = pooled.dims();
        let (x, index_values) = (
            pooled
                .clone()
                .into_data()
                .convert::<f64>()
                .try_into_vec::<f64>()
                .unwrap(),
            indices
                .clone()
                .into_data()
                .convert::<i64>()
                .try_into_vec::<i64>()
                .unwrap(),
        );
        let unpooled = max_unpool2d(
            pooled,
            indices,
            MaxUnpoolOptions::from_pool(&options).with_output_size([13, 11]),
        )
        .into_data();
        let targets = reference_targets(
            &index_values,
            &pooled_shape,
            &shape,
            &shape[2..],
            IndexLayout::PerPlane,
        )
        .expect("Burn's own indices are in range");
        let expected: Vec<f32> = reference_forward(&x, &targets, unpooled.num_elements())
            .into_iter()
            .map(|v| v as f32)
            .collect();
        assert_bit_equal(&unpooled, &TensorData::new(expected, shape), name);
        results.push((name, unpooled));
    }
    for (name, result) in &results[1..] {
        assert_bit_equal(
            result,
            &results[0].1,
            &format!("{name} vs {}", results[0].0),
        );
    }
}
