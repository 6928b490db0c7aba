//! What Burn's own `max_pool{1,2}d_with_indices` return at the edges where an index can leave its
//! window, beside this crate's pool, on every device of the build: the program behind
//! `docs/burn-pool-edges.md`.
//!
//! ```sh
//! cargo run -p burn-unpool --example burn_pool_edges --features ndarray         # Flex, NdArray
//! cargo run -p burn-unpool --example burn_pool_edges --features ndarray,wgpu # and the default wgpu adapter
//! ```

// Device::ndarray is deprecated in Burn 0.22 but still shipped.
#![allow(deprecated)]

use burn::tensor::module;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Tensor, TensorData};
use burn_unpool::max_pool_with_indices;

fn devices() -> Vec<(&'static str, Device)> {
    #[cfg_attr(not(feature = "wgpu"), allow(unused_mut))]
    let mut devices = vec![("flex", Device::flex()), ("ndarray", Device::ndarray())];
    #[cfg(feature = "wgpu")]
    devices.push((
        "wgpu",
        Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
    ));
    devices
}

/// Indices as a plain list.
fn list(data: TensorData) -> String {
    format!(
        "{:?}",
        data.convert::<i64>().to_vec::<i64>().expect("integers")
    )
}

/// Gradient as a plain list.
fn floats(data: TensorData) -> String {
    format!(
        "{:?}",
        data.convert::<f32>().to_vec::<f32>().expect("floats")
    )
}

/// Pools `values` (one row `[1, 1, 1, W]`) with Burn's pool and with this crate's, and prints the
/// indices and the gradient of `sum(pooled)` for each.
fn report(title: &str, values: &[f32], options: MaxPoolOptions<2>) {
    println!("## {title}");
    println!("x = {values:?}, {options:?}");
    for (name, device) in devices() {
        let device = device.autodiff();
        let x = || {
            Tensor::<4>::from_data(
                TensorData::new(values.to_vec(), [1, 1, 1, values.len()]),
                &device,
            )
            .require_grad()
        };
        let burn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let x = x();
            let (pooled, indices) = module::max_pool2d_with_indices(x.clone(), options.clone());
            let grads = pooled.sum().backward();
            let dx = x.grad(&grads).map(|g| floats(g.into_data()));
            (list(indices.into_data()), dx.unwrap_or_default())
        }));
        match burn {
            Ok((indices, dx)) => println!("{name:8} burn:        indices {indices}, dx {dx}"),
            Err(_) => println!("{name:8} burn:        panicked"),
        }
        let ours = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let x = x();
            let (pooled, indices) = max_pool_with_indices(x.clone(), options.clone());
            let grads = pooled.sum().backward();
            let dx = x.grad(&grads).map(|g| floats(g.into_data()));
            (
                list(indices.into_tensor().into_data()),
                dx.unwrap_or_default(),
            )
        }));
        match ours {
            Ok((indices, dx)) => println!("{name:8} burn-unpool: indices {indices}, dx {dx}"),
            Err(err) => {
                let message = err.downcast_ref::<String>().cloned().unwrap_or_default();
                println!("{name:8} burn-unpool: refused: {message}")
            }
        }
    }
    println!();
}

fn main() {
    let neg = f32::NEG_INFINITY;
    report(
        "A window of -inf",
        &[5.0, 1.0, neg, neg],
        MaxPoolOptions::new([1, 2]),
    );
    report(
        "Asymmetric padding, a window of -inf",
        &[1.0, neg, neg, neg],
        MaxPoolOptions::new([1, 4])
            .with_stride([1, 2])
            .with_padding_pairs([(0, 0), (3, 1)]),
    );
    report(
        "Asymmetric padding, a window wholly in the padding",
        &[3.0, 1.0, 2.0, 0.0],
        MaxPoolOptions::new([1, 2])
            .with_stride([1, 2])
            .with_padding_pairs([(0, 0), (3, 1)]),
    );
    report(
        "A window holding NaN",
        &[1.0, f32::NAN, 3.0, 2.0],
        MaxPoolOptions::new([1, 2]),
    );
    report(
        "A window wholly in the padding",
        &[1.0, 2.0, 3.0],
        MaxPoolOptions::new([1, 2])
            .with_stride([1, 1])
            .with_padding([0, 2]),
    );
}
