//! The time of one SegNet training step (forward, loss, backward, Adam update) on one device,
//! with the decoder unpooling by the encoder pools' own indices and by the same indices as raw
//! tensors, checked (on a GPU: one device read-back per decoder stage). Medians after warm-up
//! steps, each step followed by a device sync. Every path also says whether it trains: the
//! loss of its first and last step on the same batch, which must be finite and go down; a path
//! takes at least `TRAINING_CHECK_STEPS` steps for it (untimed ones after the timed ones where
//! the warm-up and timed steps are fewer), since one or two Adam steps can raise the loss.
//!
//! `cargo bench -p segnet [--features wgpu|vulkan] --bench step -- [--device cpu|wgpu|vulkan]
//! [--arch segnet-basic|segnet] [--width 64] [--size 360x480] [--batch 4] [--runs 10]
//! [--warmup 3] [--paths pooled,raw] [--float f32|f16|bf16] [--seed 0] [--parts]
//! [--part-runs 10]`
//!
//! Exit status: 1 where a path does not train, 3 where the device cannot compute in `--float`.
//!
//! `--paths` times the paths in the order given, each as often as named (`pooled,raw,pooled,raw`
//! shows whether the order moves the figures: the first steps on a GPU also compile and tune
//! kernels). `--parts` then times the step's parts one by one at the network's own shapes
//! (`parts.rs`), as `segnet_basic_torch.py --parts` does for PyTorch's.

mod parts;

use std::time::Instant;

use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Distribution, FloatDType, Int, Tensor};
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
    /// The float dtype of the device: the weights, activations and gradients.
    #[arg(long, value_enum, default_value_t = Float::F32)]
    float: Float,
    /// The seed of the device's random numbers: the weights, the images and the targets.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also time the step's parts one by one (convolutions, batch norm, pools, loss, optimizer).
    #[arg(long)]
    parts: bool,
    /// Timed runs of each part (after one untimed run).
    #[arg(long, default_value_t = 10)]
    part_runs: usize,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A float dtype the device can be configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Float {
    F32,
    F16,
    Bf16,
}

impl From<Float> for FloatDType {
    fn from(float: Float) -> Self {
        match float {
            Float::F32 => FloatDType::F32,
            Float::F16 => FloatDType::F16,
            Float::Bf16 => FloatDType::BF16,
        }
    }
}

fn size(text: &str) -> Result<[usize; 2], String> {
    let (height, width) = text
        .split_once('x')
        .ok_or(format!("{text}: expected HEIGHTxWIDTH"))?;
    let parse = |v: &str| v.parse::<usize>().map_err(|e| format!("{text}: {e}"));
    Ok([parse(height)?, parse(width)?])
}

const CLASSES: usize = 11;

/// The fewest steps whose first and last loss tell whether a path trains: on lavapipe in f16
/// (SegNet-Basic width 8, 48 x 64, Adam at 1e-3), three steps raised the loss at seeds 1 and 2 of
/// 0..=3, where eight lowered it at every seed of 0..=5.
const TRAINING_CHECK_STEPS: usize = 8;

/// The exit status where the device cannot compute in the asked float dtype (clap's usage errors
/// exit with 2, a step that does not train with 1).
const UNSUPPORTED_FLOAT: i32 = 3;

/// A path's name in the report.
fn label(path: IndexPath) -> &'static str {
    match path {
        IndexPath::Pooled => "pool indices",
        IndexPath::Raw => "raw indices, checked",
    }
}

fn main() {
    let args = Args::parse();
    let mut inner = args.device.device().expect("a device this build has");
    // Before any tensor exists on the device: its defaults lock at the first one.
    if let Err(error) = inner.configure(FloatDType::from(args.float)) {
        eprintln!(
            "{:?} cannot compute in {:?}: {error:?}",
            args.device, args.float
        );
        std::process::exit(UNSUPPORTED_FLOAT);
    }
    let device = inner.clone().autodiff();
    device.seed(args.seed);
    let config = SegNetConfig::new(CLASSES)
        .with_architecture(args.arch)
        .with_width(args.width);
    let net = config.init(&device);
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
        "{} width {} ({} parameters), batch {} of {height} x {width}, {:?} on {:?}; median of {} \
         steps after {} warm-up steps, each followed by a device sync; seed {}",
        args.arch,
        args.width,
        burn::module::Module::num_params(&net),
        args.batch,
        args.float,
        args.device,
        args.runs,
        args.warmup,
        args.seed
    );
    // The last median of each path: the one timed after the most steps ran.
    let (mut pooled, mut raw) = (None, None);
    let mut untrained = Vec::new();
    for &path in &args.paths {
        let (times, losses) = step_times(&net, &images, &targets, &device, path, &args);
        let median = times[times.len() / 2];
        println!(
            "{:<22} {median:>10.2} ms per step (min {:.2}, max {:.2})",
            label(path),
            times[0],
            times[times.len() - 1]
        );
        let (first, last) = (losses[0], losses[losses.len() - 1]);
        let trains = first.is_finite() && last.is_finite() && last < first;
        println!(
            "{:<22} loss {first:.4} at the first step, {last:.4} at step {}: {}",
            label(path),
            losses.len(),
            if trains { "trains" } else { "DOES NOT TRAIN" }
        );
        if !trains {
            untrained.push(label(path));
        }
        match path {
            IndexPath::Pooled => pooled = Some(median),
            IndexPath::Raw => raw = Some(median),
        }
    }
    if let (Some(pooled), Some(raw)) = (pooled, raw) {
        println!("raw / pool indices: {:.2}x", raw / pooled);
    }
    if args.parts {
        let shapes = parts::Shapes::of(&config, args.batch, args.size);
        parts::report(&shapes, &inner, args.part_runs, pooled);
    }
    if !untrained.is_empty() {
        eprintln!(
            "the loss did not go down ({}) in {:?} on {:?}",
            untrained.join(", "),
            args.float,
            args.device
        );
        std::process::exit(1);
    }
}

/// The sorted times (ms) of `args.runs` training steps of a copy of `net`, unpooling by `path`,
/// after `args.warmup` untimed ones; and the loss of every step, in order (read after the step's
/// time is taken), untimed steps added to make `TRAINING_CHECK_STEPS` in all.
fn step_times(
    net: &SegNet,
    images: &Tensor<4>,
    targets: &Tensor<3, Int>,
    device: &Device,
    path: IndexPath,
    args: &Args,
) -> (Vec<f64>, Vec<f64>) {
    let mut net = net.clone();
    let mut optimizer = AdamConfig::new().init();
    let weights = vec![1.0; CLASSES];
    let mut losses = Vec::new();
    let steps = (args.runs + args.warmup).max(TRAINING_CHECK_STEPS);
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        device.sync().expect("the device syncs");
        let start = Instant::now();
        let (logits, _) = net.forward_with(images.clone(), path);
        let loss = segmentation_loss(logits, targets.clone(), &weights);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = optimizer.step(1e-3, net.clone(), grads);
        device.sync().expect("the device syncs");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        losses.push(loss.into_scalar::<f64>());
    }
    let mut times = times.split_off(args.warmup);
    times.truncate(args.runs);
    times.sort_by(f64::total_cmp);
    (times, losses)
}
