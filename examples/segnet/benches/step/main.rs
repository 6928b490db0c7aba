//! The time of one SegNet training step (forward, loss, backward, Adam update) on one device,
//! with the decoder unpooling by the encoder pools' own indices and by the same indices as raw
//! tensors, checked (on a GPU: one device read-back per decoder stage). Medians after warm-up
//! steps, each step followed by a device sync.
//!
//! `cargo bench -p segnet [--features wgpu|vulkan] --bench step -- [--device cpu|wgpu|vulkan]
//! [--arch segnet-basic|segnet] [--width 64] [--size 360x480] [--batch 4] [--runs 10]
//! [--warmup 3] [--paths pooled,raw]`
//!
//! `--paths` times the paths in the order given, each as often as named (`pooled,raw,pooled,raw`
//! shows whether the order moves the figures: the first steps on a GPU also compile and tune
//! kernels).

use std::time::Instant;

use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Distribution, Int, Tensor};
use clap::Parser;
use segnet::device::DeviceChoice;
use segnet::model::{Architecture, IndexPath, SegNet, SegNetConfig};
use segnet::training::segmentation_loss;

#[derive(Parser)]
struct Args {
    /// Where to run.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    device: DeviceChoice,
    /// Which network.
    #[arg(long, value_enum, default_value_t = Architecture::SegNetBasic)]
    arch: Architecture,
    /// Channels of the first stage (the paper's 64).
    #[arg(long, default_value_t = 64)]
    width: usize,
    /// Image size, HEIGHTxWIDTH (CamVid's 360x480).
    #[arg(long, default_value = "360x480", value_parser = size)]
    size: [usize; 2],
    /// Images per step.
    #[arg(long, default_value_t = 4)]
    batch: usize,
    /// Timed steps per path.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Untimed steps before each path's timed ones (on an H200 through wgpu, a run with 2 gave the
    /// first path 3064 ms a step where a later run with 3 gave 1411 ms: see docs/benchmarks.md).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// The paths to time, in this order (a path named twice is timed twice).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "pooled,raw")]
    paths: Vec<IndexPath>,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn size(text: &str) -> Result<[usize; 2], String> {
    let (height, width) = text
        .split_once('x')
        .ok_or(format!("{text}: expected HEIGHTxWIDTH"))?;
    let parse = |v: &str| v.parse::<usize>().map_err(|e| format!("{text}: {e}"));
    Ok([parse(height)?, parse(width)?])
}

const CLASSES: usize = 11;

/// A path's name in the report.
fn label(path: IndexPath) -> &'static str {
    match path {
        IndexPath::Pooled => "pool indices",
        IndexPath::Raw => "raw indices, checked",
    }
}

fn main() {
    let args = Args::parse();
    let device = args
        .device
        .device()
        .expect("a device this build has")
        .autodiff();
    let net = SegNetConfig::new(CLASSES)
        .with_architecture(args.arch)
        .with_width(args.width)
        .init(&device);
    let [height, width] = args.size;
    let images = Tensor::<4>::random(
        [args.batch, 3, height, width],
        Distribution::Default,
        &device,
    );
    let targets = Tensor::<3, Int>::random(
        [args.batch, height, width],
        Distribution::Uniform(0.0, CLASSES as f64),
        &device,
    );
    println!(
        "{} width {} ({} parameters), batch {} of {height} x {width}, on {:?}; median of {} steps \
         after {} warm-up steps, each followed by a device sync",
        args.arch,
        args.width,
        burn::module::Module::num_params(&net),
        args.batch,
        args.device,
        args.runs,
        args.warmup
    );
    // The last median of each path: the one timed after the most steps ran.
    let (mut pooled, mut raw) = (None, None);
    for &path in &args.paths {
        let times = step_times(&net, &images, &targets, &device, path, &args);
        let median = times[times.len() / 2];
        println!(
            "{:<22} {median:>10.2} ms per step (min {:.2}, max {:.2})",
            label(path),
            times[0],
            times[times.len() - 1]
        );
        match path {
            IndexPath::Pooled => pooled = Some(median),
            IndexPath::Raw => raw = Some(median),
        }
    }
    if let (Some(pooled), Some(raw)) = (pooled, raw) {
        println!("raw / pool indices: {:.2}x", raw / pooled);
    }
}

/// The sorted times (ms) of `args.runs` training steps of a copy of `net`, unpooling by `path`,
/// after `args.warmup` untimed ones.
fn step_times(
    net: &SegNet,
    images: &Tensor<4>,
    targets: &Tensor<3, Int>,
    device: &Device,
    path: IndexPath,
    args: &Args,
) -> Vec<f64> {
    let mut net = net.clone();
    let mut optimizer = AdamConfig::new().init();
    let weights = vec![1.0; CLASSES];
    let mut times: Vec<f64> = (0..args.runs + args.warmup)
        .map(|_| {
            device.sync().expect("the device syncs");
            let start = Instant::now();
            let (logits, _) = net.forward_with(images.clone(), path);
            let loss = segmentation_loss(logits, targets.clone(), &weights);
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = optimizer.step(1e-3, net.clone(), grads);
            device.sync().expect("the device syncs");
            start.elapsed().as_secs_f64() * 1e3
        })
        .skip(args.warmup)
        .collect();
    times.sort_by(f64::total_cmp);
    times
}
