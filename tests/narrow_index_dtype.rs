//! The pool's index dtype by rule on devices whose default int dtype is narrow: I16 cannot hold
//! the positions of a 200 x 200 plane (nor, by the rule, any plane), so the pools return I64
//! indices, on the kernels and on the composition, and they unpool back.
//!
//! A test binary of its own: a device's default dtypes are set once per process, before any
//! tensor is made on it.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Int, IntDType, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, max_pool2d_with_indices, max_unpool2d};
use burn_unpool_tests::{devices, on_both_routes};

const SIDE: usize = 200;

#[test]
fn a_narrow_default_int_dtype_gives_i64_pool_indices_on_every_route() {
    let mut configured = 0;
    for (name, mut device) in devices() {
        if !device.supports_dtype(DType::I16) {
            // lavapipe stores 16-bit integers but cannot compute with them.
            eprintln!("{name}: no I16, not configured");
            continue;
        }
        device
            .configure(IntDType::I16)
            .expect("configured before any tensor is made on it");
        configured += 1;
        assert_eq!(
            Tensor::<1, Int>::zeros([1], &device).dtype(),
            DType::I16,
            "{name}: the default int dtype"
        );
        // 0, 1, 2, ..: every 2 x 2 window's maximum is its bottom-right element.
        let x = Tensor::<1, Int>::arange(0..(SIDE * SIDE) as i64, (&device, DType::I64))
            .float()
            .reshape([1, 1, SIDE, SIDE]);
        let half = SIDE / 2;
        let expected: Vec<i64> = (0..half * half)
            .map(|cell| ((2 * (cell / half) + 1) * SIDE + 2 * (cell % half) + 1) as i64)
            .collect();
        let options = MaxPoolOptions::new([2, 2]);
        let run = |route: &str| {
            let (pooled, indices) = max_pool2d_with_indices(x.clone(), options.clone());
            assert_eq!(
                indices.tensor().dtype(),
                DType::I64,
                "{name}, {route}: dtype"
            );
            let data = indices.tensor().clone().into_data();
            assert_eq!(
                data,
                TensorData::new(expected.clone(), [1, 1, half, half]),
                "{name}, {route}: indices"
            );
            let restored = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&options));
            let kept = restored.equal(x.clone()).int().sum().into_scalar::<i64>();
            // Every window's maximum is back in place; the other three are zero (and so is x's
            // first element, which is no maximum).
            assert_eq!(kept as usize, half * half + 1, "{name}, {route}: unpooled");
        };
        on_both_routes(run);
    }
    // The CPU devices of the run (Flex, and NdArray where Burn has it) have I16.
    let cpu_devices = devices()
        .iter()
        .filter(|(name, _)| ["flex", "ndarray"].contains(name))
        .count();
    assert!(configured >= cpu_devices, "Flex and NdArray have I16");
}
