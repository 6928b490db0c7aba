//! burn-unpool's tests in WebAssembly (`wasm32-unknown-unknown`), run by `wasm-bindgen-test` in
//! Node or, with `WASM_BINDGEN_USE_BROWSER=1`, in a browser: PyTorch's recorded pools and
//! unpoolings of 1 to 3 axes bit for bit, float and integer values, i32, i64 and u32 indices,
//! gradients, and the refusals with their messages, on Burn's Flex device.
//!
//! A panic in `wasm32-unknown-unknown` aborts the module (there is no unwinding), so a refusal
//! surfaces as a trap carrying the panic's message; `wasm-bindgen-test` runs each test as its own
//! call, so a test that expects the trap (`should_panic`) checks the message and the next one
//! goes on. `UnpoolPlan::new` gives the same refusals as values.
#![cfg(all(test, target_arch = "wasm32"))]

mod pools;
mod refusals;
mod unpooling;
#[cfg(feature = "webgpu")]
mod webgpu;
