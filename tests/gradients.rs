//! Gradients on autodiff devices: a central finite-difference check in f64 (f32 where the device has
//! no f64) for 1-d, 2-d and 3-d, with and without duplicate indices, and the same gradient with
//! gradient checkpointing on.

use burn::tensor::{DType, Device, GradientCheckpointingStrategy, Int, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, max_unpool, max_unpool_backward};
use burn_unpool_tests::devices;

/// Deterministic pseudo-random values in [-1, 1).
fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// `loss(x) = sum(w * unpool(x))`, its autodiff gradient, its central finite difference, and how
/// close they must be: in f64, or in f32 where the device has no f64 (the loss is linear in `x`,
/// so a wide step costs no accuracy there).
fn check<const D: usize, const R: usize>(
    device: &Device,
    shape: [usize; R],
    indices: Vec<i64>,
    options: MaxUnpoolOptions<D>,
    strategy: GradientCheckpointingStrategy,
) -> (Vec<f64>, Vec<f64>, f64) {
    let (dtype, eps, tolerance) = match device.supports_dtype(DType::F64) {
        true => (DType::F64, 1e-6, 1e-7),
        false => (DType::F32, 1e-2, 1e-3),
    };
    let len: usize = shape.iter().product();
    let x0 = values(len, 7);
    let idx = || {
        Tensor::<R, Int>::from_data(
            TensorData::new(indices.clone(), shape),
            (device, DType::I64),
        )
    };
    let f64_tensor = |v: Vec<f64>, s: Vec<usize>, d: &Device| {
        Tensor::<R>::from_data(TensorData::new(v, s).convert_dtype(dtype), (d, dtype))
    };
    let out_shape = max_unpool(
        f64_tensor(x0.clone(), shape.to_vec(), device),
        idx(),
        options.clone(),
    )
    .dims();
    let w = values(out_shape.iter().product(), 11);
    let loss = |x: Vec<f64>| -> f64 {
        let y = max_unpool(
            f64_tensor(x, shape.to_vec(), device),
            idx(),
            options.clone(),
        );
        (y * f64_tensor(w.clone(), out_shape.to_vec(), device))
            .sum()
            .into_data()
            .convert::<f64>()
            .try_to_vec::<f64>()
            .unwrap()[0]
    };

    let autodiff = device.clone().autodiff();
    let x = f64_tensor(x0.clone(), shape.to_vec(), &autodiff)
        .require_grad()
        .with_gradient_checkpointing_strategy(strategy);
    let indices_ad = Tensor::<R, Int>::from_data(
        TensorData::new(indices.clone(), shape),
        (&autodiff, DType::I64),
    )
    .with_gradient_checkpointing_strategy(strategy);
    let weights = f64_tensor(w.clone(), out_shape.to_vec(), &autodiff)
        .with_gradient_checkpointing_strategy(strategy);
    // A tracked op before and after the unpool, so the gradient flows through a graph.
    let y = max_unpool(x.clone() * 1.0, indices_ad, options.clone());
    let grads = (y * weights).sum().backward();
    let analytic: Vec<f64> = x
        .grad(&grads)
        .expect("x has a gradient")
        .into_data()
        .convert::<f64>()
        .try_to_vec()
        .unwrap();

    let numeric = (0..len)
        .map(|p| {
            let (mut plus, mut minus) = (x0.clone(), x0.clone());
            plus[p] += eps;
            minus[p] -= eps;
            (loss(plus) - loss(minus)) / (2.0 * eps)
        })
        .collect();
    (analytic, numeric, tolerance)
}

fn assert_close(analytic: &[f64], numeric: &[f64], tolerance: f64, context: &str) {
    assert_eq!(analytic.len(), numeric.len());
    for (p, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        assert!(
            (a - n).abs() < tolerance,
            "{context}: element {p}: autodiff {a} vs finite difference {n}"
        );
    }
}

fn every_setting(mut test: impl FnMut(&Device, GradientCheckpointingStrategy, &str)) {
    for (name, device) in devices() {
        for strategy in [
            GradientCheckpointingStrategy::Disabled,
            GradientCheckpointingStrategy::Balanced,
        ] {
            test(&device, strategy, &format!("{name} {strategy:?}"));
        }
    }
}

#[test]
fn finite_differences_1d_with_and_without_duplicates() {
    every_setting(|device, strategy, context| {
        let distinct = vec![1, 2, 5, 0, 4, 3];
        let (a, n, tolerance) = check(
            device,
            [1, 2, 3],
            distinct,
            MaxUnpoolOptions::new([2]),
            strategy,
        );
        assert_close(&a, &n, tolerance, context);
        // Duplicates: 0 is written three times, 4 twice.
        let duplicates = vec![0, 0, 4, 4, 0, 5];
        let (a, n, tolerance) = check(
            device,
            [1, 2, 3],
            duplicates,
            MaxUnpoolOptions::new([2]),
            strategy,
        );
        assert_close(&a, &n, tolerance, context);
        assert_eq!(
            a[0], 0.0,
            "{context}: an overwritten element gets no gradient"
        );
    });
}

#[test]
fn finite_differences_2d_with_and_without_duplicates() {
    every_setting(|device, strategy, context| {
        let distinct = vec![0, 3, 9, 14, 1, 2, 12, 15];
        let (a, n, tolerance) = check(
            device,
            [2, 1, 2, 2],
            distinct,
            MaxUnpoolOptions::new([2, 2]),
            strategy,
        );
        assert_close(&a, &n, tolerance, context);
        // Overlapping 3x3 stride-2 windows on a 5x5 plane share positions.
        let duplicates = vec![6, 6, 8, 6, 12, 8, 16, 16, 18];
        let options = MaxUnpoolOptions::new([3, 3])
            .with_stride([2, 2])
            .with_padding([1, 1])
            .with_output_size([5, 5]);
        let (a, n, tolerance) = check(device, [1, 1, 3, 3], duplicates, options, strategy);
        assert_close(&a, &n, tolerance, context);
    });
}

#[test]
fn finite_differences_3d_with_and_without_duplicates() {
    every_setting(|device, strategy, context| {
        let distinct = vec![0, 7, 3, 60, 9, 18, 27, 36];
        let (a, n, tolerance) = check(
            device,
            [1, 1, 2, 2, 2],
            distinct,
            MaxUnpoolOptions::new([2, 2, 2]),
            strategy,
        );
        assert_close(&a, &n, tolerance, context);
        let duplicates = vec![5, 5, 5, 1, 1, 63, 0, 63];
        let (a, n, tolerance) = check(
            device,
            [1, 1, 2, 2, 2],
            duplicates,
            MaxUnpoolOptions::new([2, 2, 2]),
            strategy,
        );
        assert_close(&a, &n, tolerance, context);
    });
}

#[test]
fn backward_of_the_backward_is_the_forward() {
    // The two ops are adjoint: differentiating `sum(v * backward(g))` in `g` gives `unpool(v)`.
    for (name, device) in devices() {
        let autodiff = device.autodiff();
        let indices = Tensor::<3, Int>::from_ints([[[1, 1, 3]]], &autodiff);
        let g =
            Tensor::<3>::from_floats([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]], &autodiff).require_grad();
        let v = Tensor::<3>::from_floats([[[10.0, 20.0, 30.0]]], &autodiff);
        let options = MaxUnpoolOptions::new([2]);
        let dx = max_unpool_backward(g.clone(), indices.clone(), options.clone());
        let grads = (dx * v.clone()).sum().backward();
        let expected = max_unpool(v.inner(), indices.inner(), options).into_data();
        g.grad(&grads)
            .unwrap()
            .into_data()
            .assert_eq(&expected, true);
        assert_eq!(
            expected.try_to_vec::<f32>().unwrap(),
            [0.0, 20.0, 0.0, 30.0, 0.0, 0.0],
            "{name}"
        );
    }
}
