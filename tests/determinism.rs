//! Determinism with many duplicates: pool kernel 3, stride 2, padding 1 on 4 x 64 x 181 x 241, where
//! neighbouring windows share their border and about a third of each plane's indices repeat one
//! another. Ten forward and ten backward runs on every device must be bit-identical, and equal to
//! the reference implementation's result (last writer wins; only the winner gets the gradient).

use burn::tensor::module::max_pool2d_with_indices;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool_backward, max_unpool2d};
use burn_unpool_tests::{
    assert_bit_equal, devices, f32_data, reference_backward, reference_forward, reference_targets,
};

const IMAGE: [usize; 4] = [4, 64, 181, 241];
const RUNS: usize = 10;

/// Deterministic pseudo-random values in [-1, 1), with few ties.
fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The pooled values and indices of a random image, pooled once on the CPU so that every device
/// unpools the very same indices.
fn pooled() -> (TensorData, TensorData) {
    let device = Device::flex();
    let len = IMAGE.iter().product();
    let image = Tensor::<4>::from_data(f32_data(&values(len, 3), &IMAGE), &device);
    let pool = MaxPoolOptions::new([3, 3])
        .with_stride([2, 2])
        .with_padding([1, 1]);
    let (x, indices) = max_pool2d_with_indices(image, pool);
    (x.into_data(), indices.into_data().convert::<i64>())
}

fn options() -> MaxUnpoolOptions<2> {
    MaxUnpoolOptions::new([3, 3])
        .with_stride([2, 2])
        .with_padding([1, 1])
        .with_output_size([IMAGE[2], IMAGE[3]])
}

#[test]
fn ten_runs_with_a_third_duplicates_are_bit_identical_and_exact() {
    let (x, indices) = pooled();
    let shape = x.shape().to_vec();
    let index_values = indices.clone().try_into_vec::<i64>().expect("i64 indices");

    // A third of the indices repeat an earlier one of their plane: the case is what it claims.
    let plane = shape[2] * shape[3];
    let repeats: usize = index_values
        .chunks(plane)
        .map(|chunk| {
            let mut seen = std::collections::HashSet::new();
            chunk.iter().filter(|&&i| !seen.insert(i)).count()
        })
        .sum();
    let share = repeats as f64 / index_values.len() as f64;
    assert!((0.25..0.4).contains(&share), "duplicate share {share}");

    let output_shape = [IMAGE[0], IMAGE[1], IMAGE[2], IMAGE[3]];
    let output_len: usize = output_shape.iter().product();
    let targets = reference_targets(
        &index_values,
        &shape,
        &output_shape,
        &output_shape[2..],
        IndexLayout::PerPlane,
    )
    .expect("pool indices are in range");
    let x_values: Vec<f64> = x.iter::<f32>().map(f64::from).collect();
    let grad_values = values(output_len, 5);
    let expected_y = f32_data(
        &reference_forward(&x_values, &targets, output_len),
        &output_shape,
    );
    let expected_dx = f32_data(&reference_backward(&grad_values, &targets), &shape);

    for (name, device) in devices() {
        for dtype in [DType::I32, DType::I64] {
            let x = Tensor::<4>::from_data(x.clone(), &device);
            let indices =
                Tensor::<4, Int>::from_data(indices.clone().convert_dtype(dtype), (&device, dtype));
            let grad = Tensor::<4>::from_data(f32_data(&grad_values, &output_shape), &device);
            for run in 0..RUNS {
                let context = format!("{name} {dtype:?} run {run}");
                let y = max_unpool2d(x.clone(), indices.clone(), options());
                assert_bit_equal(&y.into_data(), &expected_y, &format!("forward, {context}"));
                let dx = max_unpool_backward(grad.clone(), indices.clone(), options());
                assert_bit_equal(
                    &dx.into_data(),
                    &expected_dx,
                    &format!("backward, {context}"),
                );
            }
        }
    }
}
