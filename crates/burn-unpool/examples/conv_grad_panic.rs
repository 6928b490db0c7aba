//! The input gradient of one 2-d convolution on a wgpu device with Burn's autotune: the program
//! behind `docs/conv-grad-panic.md`. It uses Burn alone (and clap).
//!
//! Where the gradient's column matrix, `C_in * k * k` by `N * H * W` elements, is past the
//! device's largest allocation and `N * H * W` is past 524280 (65535 cubes of 8 columns), every
//! tuned matrix product fails, CubeCL 0.11.3 decides the naive one unmeasured, and its launch
//! panics on Burn's device thread. Prints the device's largest allocation and plane size, the
//! column matrix, and the gradient's sum where the step gets that far.
//!
//! ```sh
//! cargo run --release -p burn-unpool --example conv_grad_panic --features wgpu -- \
//!     --batch 4 --channels 2 --kernel 7 --size 360x480
//! ```
//!
//! On lavapipe (largest allocation 128 MiB) that line panics there; Burn's tuner then falls back
//! and the gradient is computed. `--exit-on-panic` ends the process with the panic instead
//! (status 101). The defaults are the H200 case of the report (64 channels, 4 x 360 x 480).

use std::time::Instant;

use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, DeviceKind, Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Images N.
    #[arg(long, default_value_t = 4)]
    batch: usize,
    /// Input and output channels of the convolution.
    #[arg(long, default_value_t = 64)]
    channels: usize,
    /// Kernel size k (odd; the padding keeps the size).
    #[arg(long, default_value_t = 7)]
    kernel: usize,
    /// HEIGHTxWIDTH.
    #[arg(long, default_value = "360x480")]
    size: String,
    /// Also take the weight gradient.
    #[arg(long)]
    weight_grad: bool,
    /// End the process on a panic on any thread (otherwise a panic on the device thread leaves
    /// this one waiting).
    #[arg(long)]
    exit_on_panic: bool,
}

fn main() {
    let args = Args::parse();
    if args.exit_on_panic {
        burn_unpool_tools::exit_on_panic();
    }
    let (h, w) = args.size.split_once('x').expect("--size HEIGHTxWIDTH");
    let (h, w): (usize, usize) = (h.parse().expect("a height"), w.parse().expect("a width"));
    let (n, c, k) = (args.batch, args.channels, args.kernel);
    let device = Device::wgpu(DeviceKind::default()).autodiff();
    if let burn::backend::DispatchDevice::Cube(cube) = device.as_dispatch().clone().inner() {
        let client = cube.client();
        let properties = client.properties();
        println!(
            "device: largest allocation {} bytes, plane size {}..={}",
            properties.memory.max_page_size,
            properties.hardware.plane_size_min,
            properties.hardware.plane_size_max
        );
    }
    let columns = (c * k * k) as u64 * (n * h * w) as u64 * 4;
    println!(
        "conv2d [{n}, {c}, {h}, {w}] * [{c}, {c}, {k}, {k}], padding {}: col2im columns \
         [{}, {}] f32 = {columns} bytes; N*H*W = {} ({} blocks of 8 columns)",
        k / 2,
        c * k * k,
        n * h * w,
        n * h * w,
        (n * h * w).div_ceil(8),
    );
    let x = Tensor::<4>::random([n, c, h, w], Distribution::Default, &device).require_grad();
    let mut weight = Tensor::<4>::random([c, c, k, k], Distribution::Default, &device);
    if args.weight_grad {
        weight = weight.require_grad();
    }
    let options = ConvOptions::new([1, 1], [k / 2, k / 2], [1, 1], 1);
    let start = Instant::now();
    let y = conv2d(x.clone(), weight.clone(), None, options);
    let grads = y.sum().backward();
    let dx: f32 = x.grad(&grads).expect("x's gradient").sum().into_scalar();
    print!("input gradient sum {dx}");
    if args.weight_grad {
        let dw: f32 = weight
            .grad(&grads)
            .expect("the weight's gradient")
            .sum()
            .into_scalar();
        print!(", weight gradient sum {dw}");
    }
    println!(" in {:.1} s", start.elapsed().as_secs_f64());
}
