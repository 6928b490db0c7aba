//! Each device takes the route of this build's features, and a device whose backend has no
//! kernels in the build runs the trait's default bodies (the composition) with the same
//! results. The second half runs in a build without the `flex` feature (`.ci/run`:
//! `cargo test -p burn-unpool --no-default-features --features ndarray --test routes`), where
//! Burn's Flex is a backend the extension macro does not list.

// Device::ndarray is deprecated in Burn 0.22 but still shipped, and supported.
#![allow(deprecated)]

use burn::tensor::{Device, Int, Tensor};
use burn_unpool::{MaxUnpoolOptions, Route, max_unpool2d, route};

fn floats<const R: usize>(tensor: Tensor<R>) -> Vec<f32> {
    tensor.into_data().convert::<f32>().to_vec().unwrap()
}

#[test]
fn each_device_takes_the_route_of_its_features() {
    let expected = if cfg!(feature = "flex") {
        Route::CpuKernels
    } else {
        Route::Composition
    };
    assert_eq!(route(&Device::flex()), expected);
    #[cfg(feature = "ndarray")]
    assert_eq!(route(&Device::ndarray()), Route::CpuKernels);
    #[cfg(feature = "wgpu")]
    assert_eq!(
        route(&Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        Route::CubeKernels
    );
}

/// The ONNX MaxUnpool example (seeds): a 2 x 2 input unpooled to 4 x 4 at the given positions.
fn onnx_example(device: &Device) -> Vec<f32> {
    let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], device);
    let indices = Tensor::<4, Int>::from_ints([[[[5, 7], [13, 15]]]], device);
    floats(max_unpool2d(x, indices, MaxUnpoolOptions::new([2, 2])))
}

#[test]
fn the_onnx_example_gives_the_seed_output() {
    let mut expected = vec![0.0; 16];
    for (position, value) in [(5, 5.0), (7, 6.0), (13, 7.0), (15, 8.0)] {
        expected[position] = value;
    }
    assert_eq!(onnx_example(&Device::flex()), expected);
}

#[cfg(all(feature = "ndarray", not(feature = "flex")))]
mod without_kernels {
    use burn::tensor::ops::MaxPoolOptions;
    use burn_unpool::{max_pool1d_with_indices, max_pool2d_with_indices, max_unpool, max_unpool1d};

    use super::*;

    fn ints<const R: usize>(tensor: Tensor<R, Int>) -> Vec<i64> {
        tensor.into_data().convert::<i64>().to_vec().unwrap()
    }

    #[test]
    fn a_pool_and_its_unpooling_run_by_hand_worked_rules() {
        let device = Device::flex();
        // 4 x 4 of 0..16: each 2 x 2 window's maximum is its bottom-right element.
        let x = Tensor::<1, Int>::arange(0..16, &device)
            .float()
            .reshape([1, 1, 4, 4]);
        let pool = MaxPoolOptions::new([2, 2]);
        let (values, indices) = max_pool2d_with_indices(x, pool.clone());
        assert_eq!(floats(values.clone()), [5.0, 7.0, 13.0, 15.0]);
        assert_eq!(ints(indices.tensor().clone()), [5, 7, 13, 15]);
        let restored = floats(max_unpool2d(
            values,
            indices,
            MaxUnpoolOptions::from_pool(&pool),
        ));
        let expected: Vec<f32> = (0..16)
            .map(|p| {
                if [5, 7, 13, 15].contains(&p) {
                    p as f32
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(restored, expected);
    }

    #[test]
    fn duplicates_keep_the_last_writer_and_integers_unpool() {
        let device = Device::flex();
        // Both values point at position 1 of 4: the later one (row-major) wins.
        let x = Tensor::<3>::from_floats([[[1.0, 2.0]]], &device);
        let indices = Tensor::<3, Int>::from_ints([[[1, 1]]], &device);
        assert_eq!(
            floats(max_unpool1d(x, indices.clone(), MaxUnpoolOptions::new([2]))),
            [0.0, 2.0, 0.0, 0.0]
        );
        let x = Tensor::<3, Int>::from_ints([[[-3, 9]]], &device);
        let y = max_unpool(x, indices, MaxUnpoolOptions::new([2]));
        assert_eq!(ints(y), [0, 9, 0, 0]);
    }

    #[test]
    fn the_gradient_reaches_only_the_winners() {
        let device = Device::flex().autodiff();
        let x = Tensor::<3>::from_floats([[[1.0, 2.0, 3.0]]], &device).require_grad();
        // 1 and 2 share position 0 (2 wins); 3 goes to position 5 of 6.
        let indices = Tensor::<3, Int>::from_ints([[[0, 0, 5]]], &device);
        let weights = Tensor::<3>::from_floats([[[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]]], &device);
        let y = max_unpool1d(x.clone(), indices, MaxUnpoolOptions::new([2]));
        let grads = (y * weights).sum().backward();
        assert_eq!(floats(x.grad(&grads).unwrap()), [0.0, 10.0, 60.0]);
    }

    #[test]
    fn the_composition_agrees_with_the_kernels_of_another_backend() {
        // Overlapping windows with padding and dilation: indices that share targets.
        let values: Vec<f32> = (0..2 * 3 * 29)
            .map(|i| ((i * 37) % 23) as f32 - 11.0)
            .collect();
        let run = |device: &Device| {
            let x = Tensor::<1>::from_floats(values.as_slice(), device).reshape([2, 3, 29]);
            let pool = MaxPoolOptions::new([4])
                .with_stride([2])
                .with_padding([1])
                .with_dilation([2]);
            let (pooled, indices) = max_pool1d_with_indices(x, pool.clone());
            let pooled_values = floats(pooled.clone());
            let index_values = ints(indices.tensor().clone());
            let restored = floats(max_unpool(
                pooled,
                indices,
                MaxUnpoolOptions::from_pool(&pool),
            ));
            (pooled_values, index_values, restored)
        };
        assert_eq!(route(&Device::ndarray()), Route::CpuKernels);
        assert_eq!(run(&Device::flex()), run(&Device::ndarray()));
    }
}
