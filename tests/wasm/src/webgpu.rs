//! The CubeCL kernels through a browser's WebGPU (feature `webgpu`, in a browser only: Node has
//! no WebGPU). A browser cannot wait for the GPU synchronously, so the device is brought up with
//! `init_async` and every result is read with `into_data_async`; the pools, the unpooling with
//! their `PoolIndices` and the gradients need no read-back of their own.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, max_pool_with_indices, max_unpool};
use burn_unpool_tests::{RecordedPool, assert_bit_equal, pool_cases};
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

/// What one recorded pool gives on a device: pooled values, indices (as i64), the unpooling of
/// the pooled values with the pool's indices, and the gradient of `sum(pooled * grad_output)`.
struct Results {
    pooled: TensorData,
    indices: TensorData,
    restored: TensorData,
    gradient: TensorData,
}

async fn read<const R: usize, K: burn::tensor::kind::Basic>(tensor: Tensor<R, K>) -> TensorData {
    tensor.into_data_async().await.expect("a read-back")
}

async fn run<const D: usize, const R: usize>(case: &RecordedPool, device: &Device) -> Results {
    let x = Tensor::<R>::from_data(case.f32(&case.x, &case.shape), device);
    let (pooled, indices) = max_pool_with_indices(x, case.options::<D>());
    let unpool = MaxUnpoolOptions::from_pool(&case.options::<D>());
    let restored = max_unpool(pooled.clone(), indices.clone(), unpool);

    let autodiff = device.clone().autodiff();
    let x = Tensor::<R>::from_data(case.f32(&case.x, &case.shape), &autodiff).require_grad();
    let (grad_pooled, _) = max_pool_with_indices(x.clone(), case.options::<D>());
    let grad_output =
        Tensor::<R>::from_data(case.f32(&case.grad_output, &case.pooled_shape), &autodiff);
    let grads = (grad_pooled * grad_output).sum().backward();
    let gradient = x.grad(&grads).expect("a gradient for x");
    Results {
        pooled: read(pooled).await,
        indices: read(indices.into_tensor()).await.convert::<i64>(),
        restored: read(restored).await,
        gradient: read(gradient).await,
    }
}

async fn run_at_rank(case: &RecordedPool, device: &Device) -> Results {
    match case.shape.len() {
        3 => run::<1, 3>(case, device).await,
        4 => run::<2, 4>(case, device).await,
        5 => run::<3, 5>(case, device).await,
        rank => panic!("no pool of rank {rank}"),
    }
}

/// Whether `device` compares subnormal floats as zeros (WGSL lets an implementation flush them):
/// a window of `[0, 2^-149]` then holds a tie, whose first element wins, instead of its maximum.
async fn flushes_subnormals(device: &Device) -> bool {
    let x = Tensor::<3>::from_floats([[[0.0, f32::from_bits(1)]]], device);
    let (_, indices) = max_pool_with_indices(x, MaxPoolOptions::new([2]));
    let indices = read(indices.into_tensor()).await.convert::<i64>();
    indices.try_to_vec::<i64>().expect("i64 indices") == [0]
}

fn has_subnormals(case: &RecordedPool) -> bool {
    case.x.iter().any(|&bits| {
        let value = f32::from_bits(bits as u32);
        value != 0.0 && !value.is_normal() && value.is_finite()
    })
}

/// Every recorded pool on the browser's WebGPU device: values, indices and gradients against
/// PyTorch's, the unpooling against the same on Flex. A device that compares subnormals as zeros
/// skips the cases whose input holds subnormals (PyTorch's maxima there are not its maxima) and
/// says so in the log.
#[wasm_bindgen_test]
async fn recorded_pools_and_their_unpooling_on_webgpu() {
    let gpu = Device::wgpu_options()
        .init_async()
        .await
        .expect("a WebGPU device");
    let cpu = Device::flex();
    let flushes = flushes_subnormals(&gpu).await;
    let mut checked = 0;
    for case in pool_cases() {
        if flushes && has_subnormals(&case) {
            console_log!(
                "{}: skipped, the device compares subnormals as zeros",
                case.name
            );
            continue;
        }
        let context = format!("{} on WebGPU", case.name);
        let on_gpu = run_at_rank(&case, &gpu).await;
        let on_cpu = run_at_rank(&case, &cpu).await;
        let pooled = case.f32(&case.pooled, &case.pooled_shape);
        assert_bit_equal(&on_gpu.pooled, &pooled, &context);
        assert_eq!(on_gpu.indices, case.indices(), "{context}");
        assert_bit_equal(
            &on_gpu.restored,
            &on_cpu.restored,
            &format!("unpooling of {context}"),
        );
        let gradient = case.f32(&case.grad_x, &case.shape);
        assert_bit_equal(
            &on_gpu.gradient,
            &gradient,
            &format!("gradient of {context}"),
        );
        checked += 1;
    }
    console_log!("{checked} recorded pools checked on WebGPU; subnormals flushed: {flushes}");
    assert!(checked >= 32, "{checked} recorded pools checked");
}
