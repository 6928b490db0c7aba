//! Times Burn's `sum()` of an f32 tensor and the backward of that `sum()` on Flex and on NdArray,
//! interleaved in one run: the program behind `docs/flex-sum.md`. It uses Burn alone (and clap).
//!
//! For each shape `[N, 64, 180, 240]` (11, 44 and 177 MB at N = 1, 4, 16), each of `--runs`
//! rounds times, on each device in turn, after `--warmup` untimed rounds:
//!
//! - **sum**: `x.sum().into_scalar()` (the forward, read back) on the plain device;
//! - **backward**: under autodiff, `loss.backward()` of `loss = x.sum()` (`x` a tensor that
//!   requires grad), then `x.grad(&grads)` and one of its values read back; the forward is run
//!   before the timer starts;
//! - **backward of (2x).sum()**: the same with `loss = (x * 2.0).sum()`, where the gradient of
//!   `sum()` feeds another op's backward instead of being `x`'s gradient itself.
//!
//! Each timing ends with a device sync. It prints medians in a Markdown table, with GB/s of the
//! tensor read (sum) or of the gradient written (backward), and a plain Rust loop summing the same
//! values on one thread (eight accumulators) as the machine's anchor. PyTorch's counterpart is
//! `benches/flex_sum_torch.py`.
//!
//! ```sh
//! cargo run --release -p burn-unpool --example flex_sum --features flex,ndarray
//! cargo run --release -p burn-unpool --example flex_sum --features flex,ndarray -- --runs 20 --batches 1,4,16
//! ```
//!
//! burn-unpool's examples build Burn with its `simd` and `rayon` features, as Burn's default
//! features have them, so this build times Flex with both; the same file built as the `main.rs` of
//! a crate whose `burn` line has `default-features = false` (and neither feature) times Flex
//! without them.

// Device::ndarray is deprecated in Burn 0.22 but still shipped.
#![allow(deprecated)]

use std::time::Instant;

use burn::tensor::{Device, Tensor, TensorData};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Timed rounds per shape; medians are printed.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Untimed rounds first.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Batch sizes N of the shapes `[N, 64, 180, 240]`.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    batches: Vec<usize>,
}

/// Milliseconds since `start`.
fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// The median (the mean of the middle two for an even count, as Python's `statistics.median`).
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    let mid = times.len() / 2;
    if times.len().is_multiple_of(2) {
        (times[mid - 1] + times[mid]) / 2.0
    } else {
        times[mid]
    }
}

/// One thread, eight accumulators: what a sum of the same values costs in plain Rust.
fn plain_sum(values: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = values.chunks_exact(8);
    let rest: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// Times of one device at one shape, one list of runs each.
#[derive(Default)]
struct Times {
    sum: Vec<f64>,
    backward: Vec<f64>,
    backward_chain: Vec<f64>,
}

/// The backward alone of `loss = f(x).sum()` under autodiff, `x`'s gradient taken and one of its
/// values read back: `f(x) = x`, or `2 x` with `scale`.
fn time_backward(device: &Device, data: &TensorData, scale: Option<f32>) -> f64 {
    let ad = device.clone().autodiff();
    let x = Tensor::<4>::from_data(data.clone(), &ad).require_grad();
    let loss = match scale {
        None => x.clone().sum(),
        Some(scale) => (x.clone() * scale).sum(),
    };
    let _: f32 = loss.clone().into_scalar();
    ad.sync().unwrap();
    let start = Instant::now();
    let grads = loss.backward();
    let grad = x.grad(&grads).expect("x requires grad");
    let first: f32 = grad.clone().slice([0..1, 0..1, 0..1, 0..1]).into_scalar();
    ad.sync().unwrap();
    let time = ms(start);
    assert_eq!(first, scale.unwrap_or(1.0));
    drop((grad, grads, x));
    time
}

fn time_device(device: &Device, data: &TensorData, times: &mut Times) {
    // sum(), read back.
    let x = Tensor::<4>::from_data(data.clone(), device);
    device.sync().unwrap();
    let start = Instant::now();
    let total: f32 = x.sum().into_scalar();
    device.sync().unwrap();
    times.sum.push(ms(start));
    assert!(total.is_finite());

    times.backward.push(time_backward(device, data, None));
    times
        .backward_chain
        .push(time_backward(device, data, Some(2.0)));
}

fn main() {
    let args = Args::parse();
    let devices = [("Flex", Device::flex()), ("NdArray", Device::ndarray())];

    println!(
        "burn 0.22.1, f32, medians of {} runs after {} warm-up runs; sum: `x.sum().into_scalar()`, \
         backward: `loss.backward()` and `x.grad(&grads)` of `loss = x.sum()` or \
         `loss = (x * 2.0).sum()` (forward not included); GB/s of the tensor read (sum) or the \
         gradient written (backward)\n",
        args.runs, args.warmup
    );
    println!(
        "| shape | MB | device | sum ms | sum GB/s | backward ms | backward GB/s | backward of (2x).sum() ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &batch in &args.batches {
        let shape = [batch, 64, 180, 240];
        let n: usize = shape.iter().product();
        let bytes = (n * 4) as f64;
        let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 1e-3).collect();
        let data = TensorData::new(values.clone(), shape);

        let mut times: Vec<Times> = devices.iter().map(|_| Times::default()).collect();
        let mut plain = Vec::new();
        for round in 0..args.warmup + args.runs {
            if round == args.warmup {
                // The warm-up rounds' times are dropped.
                times.iter_mut().for_each(|times| *times = Times::default());
                plain.clear();
            }
            for ((_, device), times) in devices.iter().zip(&mut times) {
                time_device(device, &data, times);
            }
            let start = Instant::now();
            let total = std::hint::black_box(plain_sum(std::hint::black_box(&values)));
            plain.push(ms(start));
            assert!(total.is_finite());
        }

        let mb = bytes / 1e6;
        let gbs = |ms: f64| bytes / ms / 1e6;
        for ((name, _), times) in devices.iter().zip(times) {
            let (sum, backward) = (median(times.sum), median(times.backward));
            let chain = median(times.backward_chain);
            println!(
                "| {shape:?} | {mb:.1} | {name} | {sum:.2} | {:.1} | {backward:.2} | {:.1} | {chain:.2} |",
                gbs(sum),
                gbs(backward)
            );
        }
        let plain = median(plain);
        println!(
            "| {shape:?} | {mb:.1} | Rust loop, 1 thread | {plain:.2} | {:.1} | | | |",
            gbs(plain)
        );
    }
}
