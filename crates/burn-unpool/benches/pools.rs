//! Medians of the max pools with indices: this crate's pools (and its ONNX `MaxPool`, of f32 and of
//! i32 values) beside Burn's own `max_pool2d_with_indices` (2-d, at the SegNet encoder shapes) and
//! beside the composition of Burn tensor ops that devices without kernels run (3-d, volumetric
//! shapes), forward and forward + backward (autodiff: the pool, then `backward()` of its values).
//! Printed as a table, or JSON lines with `--json`, which `compare_peers.py --pools` reads beside
//! PyTorch.
//!
//! `cargo bench -p burn-unpool --features ndarray --bench pools -- [--json] [--batches 1,4,12] [--runs 7]
//! [--only s1,v1] [--calls 20] [--gpu]` (the options are described by `--help` after the `--`)
//!
//! With `--features wgpu` and `--gpu`, the pools run on the default wgpu device (fused), beside
//! Burn's own pool there (2-d) and the composition of Burn ops (3-d), timed as `latency` (a sync
//! after each call) and `throughput` (`--calls` calls queued, one sync, per call); the CPU devices
//! run each call to its end (`latency` only).

// NdArray is deprecated in Burn 0.22 but still shipped; it is measured beside Flex.
#![allow(deprecated)]

mod support;

use burn::backend::Dispatch;
use burn::tensor::module;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Tensor, TensorData};
use burn_unpool::onnx::{MaxPoolAttributes, max_pool_onnx};
use burn_unpool::{PoolPlan, composition, max_pool_with_indices};
use support::{Args, Mode};

/// The command line (`-- --help`), with this bench's defaults.
fn args() -> Args {
    Args::parse(&[1, 4, 12], 7, 20)
}

/// One pool workload: `x`'s shape and the pool.
struct Workload {
    name: String,
    shape: Vec<usize>,
    kernel: usize,
    stride: usize,
    padding: usize,
}

impl Workload {
    fn options<const D: usize>(&self) -> MaxPoolOptions<D> {
        MaxPoolOptions::new([self.kernel; D])
            .with_stride([self.stride; D])
            .with_padding([self.padding; D])
    }

    /// The same pool as the attributes of an ONNX `MaxPool` node (2-d).
    fn onnx_attributes(&self) -> MaxPoolAttributes {
        MaxPoolAttributes::new(vec![self.kernel; 2])
            .with_strides(vec![self.stride; 2])
            .with_pads(vec![self.padding; 4])
    }

    fn x<const R: usize>(&self, device: &Device) -> Tensor<R> {
        let len: usize = self.shape.iter().product();
        let values = support::values(len);
        Tensor::from_data(TensorData::new(values, self.shape.clone()), device)
    }
}

/// The SegNet encoder's pools (CamVid 360 x 480): 2 x 2, stride 2, at `batch`.
fn segnet(batch: usize) -> Vec<Workload> {
    [
        ("s1", 64, 360, 480),
        ("s2", 128, 180, 240),
        ("s3", 256, 90, 120),
        ("s4", 512, 45, 60),
    ]
    .into_iter()
    .map(|(name, c, h, w)| Workload {
        name: name.to_string(),
        shape: vec![batch, c, h, w],
        kernel: 2,
        stride: 2,
        padding: 0,
    })
    .collect()
}

/// Volumetric pools (3D U-Net, V-Net sizes).
fn volumes() -> Vec<Workload> {
    let volume = |name: &str, shape: [usize; 5], kernel, stride, padding| Workload {
        name: name.to_string(),
        shape: shape.to_vec(),
        kernel,
        stride,
        padding,
    };
    vec![
        volume("v1", [1, 16, 32, 64, 64], 2, 2, 0),
        volume("v2", [2, 32, 16, 32, 32], 2, 2, 0),
        volume("v3", [1, 16, 32, 32, 32], 3, 2, 1),
    ]
}

fn report(args: &Args, workload: &Workload, what: &str, backend: &str, mode: Mode, ms: f64) {
    let mode = mode.name();
    let shape = format!("{:?}", workload.shape);
    if args.json {
        println!(
            r#"{{"shape":"{}","dims":"{shape}","what":"{what}","backend":"{backend}","mode":"{mode}","median_ms":{ms:.4}}}"#,
            workload.name
        );
    } else {
        println!(
            "{:<4} {shape:<24} {what:<28} {backend:<8} {mode:<10} {ms:>10.3} ms",
            workload.name
        );
    }
}

/// The median per call of `op` on `device` in `mode`; `op` returns what must live until a sync.
fn time_mode<T>(args: &Args, device: &Device, mode: Mode, op: &dyn Fn() -> T) -> f64 {
    support::time_mode(args.runs, args.calls, device, mode, op)
}

/// A pool function under test.
type PoolFn<const R: usize> = fn(Tensor<R>, &Workload) -> Tensor<R>;

/// A pool under test: its name and the function.
type Pool<const R: usize> = (&'static str, PoolFn<R>);

fn ours<const D: usize, const R: usize>(x: Tensor<R>, w: &Workload) -> Tensor<R> {
    let (pooled, indices) = max_pool_with_indices(x, w.options::<D>());
    // The indices are part of the result: keep them computed.
    drop(indices);
    pooled
}

/// ONNX `MaxPool` with `Indices` (global int64 indices), as an imported model runs it.
fn onnx2d(x: Tensor<4>, w: &Workload) -> Tensor<4> {
    let (pooled, indices) = max_pool_onnx(x, &w.onnx_attributes());
    drop(indices);
    pooled
}

/// ONNX `MaxPool` of i32 values (an integer model's pool), forward only (integers have no
/// gradient), timed apart from the float pools: the same kernels, another value type.
fn time_onnx_int(args: &Args, workload: &Workload, backend: &str, device: &Device) {
    let x = workload.x::<4>(device).int().cast(DType::I32);
    let attributes = workload.onnx_attributes();
    let forward = || max_pool_onnx(x.clone(), &attributes);
    drop(forward());
    let ms = time_mode(args, device, Mode::Latency, &forward);
    report(
        args,
        workload,
        "onnx_int_forward",
        backend,
        Mode::Latency,
        ms,
    );
}

fn burn2d(x: Tensor<4>, w: &Workload) -> Tensor<4> {
    module::max_pool2d_with_indices(x, w.options::<2>()).0
}

/// The composition devices without kernels run (the backend trait's default body).
fn composed<const D: usize, const R: usize>(x: Tensor<R>, w: &Workload) -> Tensor<R> {
    let dtype = DType::from(x.device().settings().int_dtype);
    let plan = PoolPlan::new(&x.dims(), &w.options::<D>(), dtype).expect("a valid pool");
    let (values, _) = composition::max_pool_with_indices::<Dispatch>(x.into_dispatch(), plan);
    Tensor::from_dispatch(values)
}

/// The pool's share of a training step: the pooled values reduced to a loss with `sum()`,
/// `backward()`, and the gradient of `x` read with a `sum()` (what PyTorch's side runs too).
fn training_step<const R: usize>(pool: PoolFn<R>, x: Tensor<R>, workload: &Workload) -> f32 {
    let x = x.require_grad();
    let grads = pool(x.clone(), workload).sum().backward();
    let dx = x.grad(&grads).expect("x requires its gradient");
    dx.sum().into_scalar::<f32>()
}

/// Forward, forward + backward under autodiff, and a training step's work of every pool on
/// `device`.
fn time_pools<const R: usize>(
    args: &Args,
    workload: &Workload,
    backend: &str,
    device: &Device,
    pools: &[Pool<R>],
    modes: &[Mode],
) {
    let x = workload.x::<R>(device);
    let autodiff = device.clone().autodiff();
    let x_grad = workload.x::<R>(&autodiff);
    let forward = |pool: PoolFn<R>| pool(x.clone(), workload);
    let forward_backward =
        |pool: PoolFn<R>| pool(x_grad.clone().require_grad(), workload).backward();
    let step = |pool: PoolFn<R>| training_step(pool, x_grad.clone(), workload);
    let timed = |name: &str| {
        ["forward", "forward_backward", "step"]
            .iter()
            .any(|what| args.wants_op(&format!("{name}_{what}")))
    };
    let timed_pools: Vec<Pool<R>> = pools
        .iter()
        .copied()
        .filter(|(name, _)| timed(name))
        .collect();
    // Every pool timed runs once, forward and forward + backward, before any is timed: a workload's
    // first large allocations are slower, a cost that belongs to no pool (the same kernel came
    // out twice as fast when timed second: s3 batch 12, 35 against 17 ms on Flex).
    for &(_, pool) in &timed_pools {
        drop(forward(pool));
        drop(forward_backward(pool));
        step(pool);
    }
    device.sync().expect("the device syncs");
    // Burn's part of the step: the loss over the pooled shape, its backward, the read of `x`'s
    // gradient.
    if args.wants_op("step_loss_and_read") {
        let pooled_shape: [usize; R] = forward(pools[0].1).dims();
        let ms = support::loss_and_read(args.runs, &autodiff, pooled_shape, x.dims());
        report(
            args,
            workload,
            "step_loss_and_read",
            backend,
            Mode::Latency,
            ms,
        );
    }
    for &(name, pool) in &timed_pools {
        for &mode in modes {
            // Each result lives until the sync (a fused device may skip work whose result is
            // dropped), so each row times its own closure.
            let what = format!("{name}_forward");
            if args.wants_op(&what) {
                let ms = time_mode(args, device, mode, &|| forward(pool));
                report(args, workload, &what, backend, mode, ms);
            }
            let what = format!("{name}_forward_backward");
            if args.wants_op(&what) {
                let ms = time_mode(args, device, mode, &|| forward_backward(pool));
                report(args, workload, &what, backend, mode, ms);
            }
            // A step ends in a read of the gradient, a sync: its throughput is its latency.
            let what = format!("{name}_step");
            if args.wants_op(&what) && matches!(mode, Mode::Latency) {
                let ms = time_mode(args, device, mode, &|| step(pool));
                report(args, workload, &what, backend, mode, ms);
            }
        }
    }
}

fn main() {
    // A panic on Burn's device thread would leave this one waiting on it: end with the panic.
    burn_unpool_tools::exit_on_panic();
    let args = args();
    if !args.json {
        let on = if args.gpu {
            format!(
                "the default wgpu device; latency: a sync after each call; throughput: {} calls, \
                 one sync",
                args.calls
            )
        } else {
            format!("{} threads", rayon::current_num_threads())
        };
        println!(
            "burn-unpool pool timings: f32, median of {} runs after 2 warm-up runs, {on}",
            args.runs
        );
    }
    let wanted = |w: &Workload| args.wants(&w.name);
    let pools_2d: [Pool<4>; 3] = [("ours", ours::<2, 4>), ("onnx", onnx2d), ("burn", burn2d)];
    let pools_3d: [Pool<5>; 2] = [("ours", ours::<3, 5>), ("composed", composed::<3, 5>)];
    if args.gpu {
        gpu(&args, &pools_2d, &pools_3d, &wanted);
        return;
    }
    for batch in &args.batches {
        for workload in segnet(*batch).iter().filter(|w| wanted(w)) {
            for (backend, device, _) in args.cpu_devices() {
                time_pools(
                    &args,
                    workload,
                    backend,
                    &device,
                    &pools_2d,
                    &[Mode::Latency],
                );
                if args.wants_op("onnx_int_forward") {
                    time_onnx_int(&args, workload, backend, &device);
                }
            }
        }
    }
    for workload in volumes().iter().filter(|w| wanted(w)) {
        for (backend, device, _) in args.cpu_devices() {
            time_pools(
                &args,
                workload,
                backend,
                &device,
                &pools_3d,
                &[Mode::Latency],
            );
        }
    }
}

#[cfg(not(feature = "wgpu"))]
fn gpu(_: &Args, _: &[Pool<4>], _: &[Pool<5>], _: &dyn Fn(&Workload) -> bool) {
    panic!(
        "--gpu needs the `wgpu` feature: cargo bench -p burn-unpool --features ndarray,wgpu --bench pools -- --gpu"
    );
}

#[cfg(feature = "wgpu")]
fn gpu(
    args: &Args,
    pools_2d: &[Pool<4>],
    pools_3d: &[Pool<5>],
    wanted: &dyn Fn(&Workload) -> bool,
) {
    let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
    let modes = [Mode::Latency, Mode::Throughput];
    // The GPU table compares this crate's pool with Burn's: the ONNX entry runs the same kernels.
    let pools_2d: Vec<Pool<4>> = pools_2d
        .iter()
        .filter(|(name, _)| *name != "onnx")
        .copied()
        .collect();
    for batch in &args.batches {
        for workload in segnet(*batch).iter().filter(|w| wanted(w)) {
            time_pools(args, workload, "wgpu", &device, &pools_2d, &modes);
        }
    }
    for workload in volumes().iter().filter(|w| wanted(w)) {
        time_pools(args, workload, "wgpu", &device, pools_3d, &modes);
    }
}
