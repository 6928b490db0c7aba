//! The max pools with indices against PyTorch's recorded pools: values, indices and gradients.

use std::collections::BTreeSet;

use burn_unpool_tests::{assert_bit_equal, devices, on_both_routes, pool_cases};
use wasm_bindgen_test::wasm_bindgen_test;

/// Values and indices of every recorded pool (1 to 3 axes; overlapping, dilated, ceil-mode and
/// padded windows, ties, NaNs and `-inf`), on the kernels and on the composition.
#[wasm_bindgen_test]
fn recorded_pools_match_bit_for_bit() {
    let cases = pool_cases();
    let ranks: BTreeSet<usize> = cases.iter().map(|case| case.shape.len()).collect();
    assert_eq!(ranks, BTreeSet::from([3, 4, 5]), "1 to 3 spatial axes");
    for case in &cases {
        for (name, device) in devices() {
            on_both_routes(|route| {
                let context = format!("{} on {name}, {route}", case.name);
                let (pooled, indices) = case.pool_on(&device);
                assert_bit_equal(
                    &pooled,
                    &case.f32(&case.pooled, &case.pooled_shape),
                    &context,
                );
                assert_eq!(indices, case.indices(), "{context}");
            });
        }
    }
}

/// The gradient of every recorded pool, against PyTorch's autograd.
#[wasm_bindgen_test]
fn recorded_pool_gradients_match_bit_for_bit() {
    for case in pool_cases() {
        for (name, device) in devices() {
            let context = format!("gradient of {} on {name}", case.name);
            let dx = case.gradient_on(&device);
            assert_bit_equal(&dx, &case.f32(&case.grad_x, &case.shape), &context);
        }
    }
}
