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
//! [--warmup 3] [--paths pooled,raw] [--float f32|f16|bf16] [--seed 0] [--micro-batch N]
//! [--parts] [--part-runs 10]`
//!
//! Where the batch's tuned convolution gradients would not fit a GPU (`segnet::fit`: Burn's
//! autotune panics on them), each step takes its gradients in the fewest micro-batches that fit
//! and sums them, as `segnet train` does, and says so; `--micro-batch` sets the size.
//!
//! Exit status: 1 where a path does not train, 3 where the device cannot compute in `--float`,
//! 4 where the step does not fit the device (a `--micro-batch` that would panic, or not even one
//! image).
//!
//! `--paths` times the paths in the order given, each as often as named (`pooled,raw,pooled,raw`
//! shows whether the order moves the figures: the first steps on a GPU also compile and tune
//! kernels). `--parts` then times the step's parts one by one at the network's own shapes
//! (`parts.rs`), as `segnet_basic_torch.py --parts` does for PyTorch's.

mod parts;

use std::time::Instant;

use burn::optim::AdamConfig;
use burn::tensor::{Device, Distribution, FloatDType, Int, Tensor};
use clap::Parser;
use segnet::device::DeviceChoice;
use segnet::fit;
use segnet::model::{Architecture, IndexPath, SegNet, SegNetConfig};
use segnet::training::accumulate;

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
    /// Images per gradient computation, summed into each step [default: the batch, or the
    /// fewest micro-batches whose tuned convolution gradients fit the device].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    micro_batch: Option<u64>,
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

impl Float {
    fn bytes(self) -> u64 {
        match self {
            Float::F32 => 4,
            Float::F16 | Float::Bf16 => 2,
        }
    }
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

/// The exit status where the step does not fit the device (`segnet::fit`).
const DOES_NOT_FIT: i32 = 4;

/// A path's name in the report.
fn label(path: IndexPath) -> &'static str {
    match path {
        IndexPath::Pooled => "pool indices",
        IndexPath::Raw => "raw indices, checked",
    }
}

fn main() {
    // A panic on Burn's device thread would leave this one waiting on it: end with the panic.
    burn_unpool_tools::exit_on_panic();
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
    let plan = fit::plan_step(
        &config,
        args.size,
        args.batch,
        args.float.bytes(),
        fit::DeviceLimits::of(&inner),
        args.micro_batch.map(|m| m as usize),
    )
    .unwrap_or_else(|error| {
        eprintln!("the step does not fit the device: {error}");
        std::process::exit(DOES_NOT_FIT);
    });
    if let Some(announcement) = plan.announcement() {
        println!("{announcement}");
    }
    let micro_batch = plan.micro_batch;
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
        "{} width {} ({} parameters), batch {} of {height} x {width}{}, {:?} on {:?}; median of \
         {} steps after {} warm-up steps, each followed by a device sync; seed {}",
        args.arch,
        args.width,
        burn::module::Module::num_params(&net),
        args.batch,
        if micro_batch < args.batch {
            format!(" in micro-batches of {micro_batch}")
        } else {
            String::new()
        },
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
        let (first_step, times, losses) =
            step_times(&net, &images, &targets, &device, path, micro_batch, &args);
        let median = times[times.len() / 2];
        println!(
            "{:<22} {first_step:>10.2} ms the first step (compiles and tunes what the steps \
             before it did not)",
            label(path)
        );
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
        // Each micro-batch runs every part but the optimizer: their times count once a
        // micro-batch, so that the parts add up to the step.
        let micro_batches = plan.micro_batches();
        let shapes = parts::Shapes::of(&config, micro_batches[0].1, args.size);
        parts::report(&shapes, &inner, args.part_runs, pooled, micro_batches.len());
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

/// The time (ms) of the first step, the sorted times of `args.runs` training steps of a copy of
/// `net`, unpooling by `path`, `micro_batch` images per gradient, after `args.warmup` untimed
/// ones; and the loss of every step, in order (read after the step's time is taken), untimed
/// steps added to make `TRAINING_CHECK_STEPS` in all.
fn step_times(
    net: &SegNet,
    images: &Tensor<4>,
    targets: &Tensor<3, Int>,
    device: &Device,
    path: IndexPath,
    micro_batch: usize,
    args: &Args,
) -> (f64, Vec<f64>, Vec<f64>) {
    let mut net = net.clone();
    let mut optimizer = AdamConfig::new().init();
    let weights = vec![1.0; CLASSES];
    let mut losses = Vec::new();
    let steps = (args.runs + args.warmup).max(TRAINING_CHECK_STEPS);
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        device.sync().expect("the device syncs");
        let start = Instant::now();
        let step = accumulate(
            &net,
            |net: &SegNet, x| net.forward_with(x, path).0,
            images.clone(),
            targets.clone(),
            &weights,
            micro_batch,
        );
        net = optimizer.step(1e-3, net.clone(), step.grads);
        device.sync().expect("the device syncs");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        losses.push(step.loss.into_scalar::<f64>());
    }
    let first = times[0];
    let mut times = times.split_off(args.warmup);
    times.truncate(args.runs);
    times.sort_by(f64::total_cmp);
    (first, times, losses)
}
