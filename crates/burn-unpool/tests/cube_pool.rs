//! The CubeCL backend's pools take every plan: one its kernels do not address (four spatial
//! axes), or with global indices, gives what Flex's gives.
#![cfg(feature = "wgpu")]

use burn::backend::Dispatch;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, DeviceKind, Tensor, TensorData};
use burn_unpool::{PoolPlan, UnpoolBackend};

fn plan<const D: usize>(shape: &[usize]) -> PoolPlan {
    PoolPlan::new(shape, &MaxPoolOptions::new([2; D]), DType::I32).expect("a valid pool")
}

#[test]
fn the_backend_op_takes_plans_past_its_kernels() {
    fn pool<const R: usize>(shape: [usize; R], plan: &PoolPlan, device: &Device) -> Vec<i64> {
        let len = shape.iter().product::<usize>();
        let values: Vec<f32> = (0..len).map(|i| ((i * 7919) % 1009) as f32).collect();
        let x = Tensor::<R>::from_data(TensorData::new(values, shape), device);
        let (values, indices) =
            <Dispatch as UnpoolBackend>::max_pool_with_indices(x.into_dispatch(), plan.clone());
        let values = Tensor::<R>::from_dispatch(values).into_data();
        let indices = Tensor::<R, burn::tensor::Int>::from_dispatch(indices).into_data();
        let values = values.iter::<f32>().map(|v| v as i64);
        values.chain(indices.iter::<i64>()).collect()
    }
    let (wgpu, flex) = (Device::wgpu(DeviceKind::DefaultDevice), Device::flex());
    let four = [1, 2, 4, 4, 4, 4];
    // Four spatial axes: past what the kernels address.
    let past_kernels = plan::<4>(&four);
    assert_eq!(
        pool(four, &past_kernels, &wgpu),
        pool(four, &past_kernels, &flex)
    );
    let two = [2, 3, 4, 4];
    let global = plan::<2>(&two).with_global_indices();
    assert_eq!(pool(two, &global, &wgpu), pool(two, &global, &flex));
}
