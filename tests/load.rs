//! Under load, on every device the suites run: eight threads sharing one device run pools,
//! unpoolings (the pools' indices and raw ones, checked), gradients and modules shared by
//! reference, on shapes that change from call to call, with refused calls between jobs, and each
//! job's result must have the bits of the same job run alone on one thread; and a soak of such
//! calls must keep the process's resident memory within a bound once warm.
//!
//! The soak's length: `BURN_UNPOOL_SOAK_CALLS` (2000 calls per device by default). Both tests hold
//! `SERIAL`, so that the soak measures its own memory only.

use std::sync::{Mutex, MutexGuard, Once};

use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_unpool::nn::{MaxPoolWithIndices, MaxUnpool2d, MaxUnpool2dConfig};
use burn_unpool::{
    MaxUnpoolOptions, PoolIndices, max_pool_with_indices, max_unpool, max_unpool_backward,
};
use burn_unpool_tests::{assert_bit_equal, devices, outcome};

const THREADS: usize = 8;
const ROUNDS: usize = 2;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One job: a pool of `shape` and its inversion, by pool indices or raw ones.
struct Job {
    shape: Vec<usize>,
    kernel: usize,
    stride: usize,
    padding: usize,
    ceil_mode: bool,
    raw: bool,
    /// For 2-d jobs: Burn's pool module and this crate's unpooling module, shared by every thread.
    modules: Option<(MaxPool2d, MaxUnpool2d)>,
}

fn jobs() -> Vec<Job> {
    let job = |shape: &[usize], kernel, stride, padding, ceil_mode, raw| {
        let modules = (shape.len() == 4).then(|| {
            let pool = MaxPool2dConfig::new([kernel; 2])
                .with_strides([stride; 2])
                .with_padding(burn::nn::PaddingConfig2d::Explicit(
                    padding, padding, padding, padding,
                ))
                .with_ceil_mode(ceil_mode);
            (pool.init(), MaxUnpool2dConfig::from(&pool).init())
        });
        Job {
            shape: shape.to_vec(),
            kernel,
            stride,
            padding,
            ceil_mode,
            raw,
            modules,
        }
    };
    vec![
        job(&[2, 3, 17], 2, 2, 0, false, false),
        job(&[1, 4, 33], 3, 2, 1, true, true),
        job(&[2, 3, 8, 6], 2, 2, 0, false, false),
        job(&[1, 2, 9, 16], 3, 2, 1, false, true),
        job(&[2, 2, 7, 9], 2, 2, 0, true, false),
        job(&[1, 3, 12, 10], 2, 2, 0, false, true),
        job(&[1, 2, 11, 13], 3, 2, 1, false, false),
        job(&[1, 2, 4, 6, 5], 2, 2, 0, false, false),
        job(&[1, 1, 5, 7, 6], 3, 2, 1, true, true),
    ]
}

/// Seeded values without ties, so every run picks the same maxima.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 1_000_003) as f32 / 64.0)
        .collect()
}

/// The job's results, in order: the pooled values, the indices, the unpooled values, the
/// gradient of the pool's input (under autodiff, through the pool and the unpooling), and
/// `max_unpool_backward` of a fixed output gradient.
fn run(job: &Job, device: &Device) -> Vec<TensorData> {
    match (job.shape.len(), &job.modules) {
        (3, _) => by_functions::<1, 3>(job, device),
        (4, None) => by_functions::<2, 4>(job, device),
        (4, Some(modules)) => by_modules(job, modules, device),
        (5, _) => by_functions::<3, 5>(job, device),
        (rank, _) => panic!("no job of rank {rank}"),
    }
}

/// The job's input on `device` under autodiff, tracked, and the weights of its loss.
fn input<const R: usize>(job: &Job, device: &Device) -> (Tensor<R>, Tensor<R>) {
    let len: usize = job.shape.iter().product();
    let autodiff = device.clone().autodiff();
    let data = TensorData::new(values(len, job.shape[1]), job.shape.clone());
    let x = Tensor::<R>::from_data(data, &autodiff).require_grad();
    let weights = TensorData::new(
        (0..len).map(|i| (i % 13) as f32 - 6.0).collect(),
        job.shape.clone(),
    );
    (x, Tensor::from_data(weights, &autodiff))
}

/// The pool's options, as `MaxPoolOptions`.
fn pool_options<const D: usize>(job: &Job) -> MaxPoolOptions<D> {
    MaxPoolOptions::new([job.kernel; D])
        .with_stride([job.stride; D])
        .with_padding([job.padding; D])
        .with_ceil_mode(job.ceil_mode)
}

fn by_functions<const D: usize, const R: usize>(job: &Job, device: &Device) -> Vec<TensorData> {
    let (x, weights) = input::<R>(job, device);
    let pool = pool_options::<D>(job);
    let (pooled, indices) = max_pool_with_indices(x.clone(), pool.clone());
    let options = MaxUnpoolOptions::from_pool(&pool);
    let y = if job.raw {
        let output_size: [usize; D] = job.shape[2..].try_into().expect("D spatial axes");
        let raw = options.clone().with_output_size(output_size);
        max_unpool(pooled.clone(), indices.tensor().clone(), raw)
    } else {
        max_unpool(pooled.clone(), indices.clone(), options.clone())
    };
    let dy = max_unpool_backward(weights.clone(), indices.clone(), options);
    results(x, weights, pooled, indices, y, dy)
}

/// A 2-d job through Burn's pool module and this crate's unpooling module.
fn by_modules(job: &Job, modules: &(MaxPool2d, MaxUnpool2d), device: &Device) -> Vec<TensorData> {
    let (pool, unpool) = modules;
    let (x, weights) = input::<4>(job, device);
    let (pooled, indices) = pool.forward_with_indices(x.clone());
    let y = if job.raw {
        let output_size = [job.shape[2], job.shape[3]];
        unpool.forward_with_output_size(pooled.clone(), indices.tensor().clone(), output_size)
    } else {
        unpool.forward(pooled.clone(), indices.clone())
    };
    let options = MaxUnpoolOptions::from_pool(&pool_options::<2>(job));
    let dy = max_unpool_backward(weights.clone(), indices.clone(), options);
    results(x, weights, pooled, indices, y, dy)
}

fn results<const R: usize>(
    x: Tensor<R>,
    weights: Tensor<R>,
    pooled: Tensor<R>,
    indices: PoolIndices<R>,
    y: Tensor<R>,
    dy: Tensor<R>,
) -> Vec<TensorData> {
    let grads = (y.clone() * weights).sum().backward();
    let dx = x.grad(&grads).expect("a gradient for x");
    vec![
        pooled.into_data(),
        indices.into_tensor().into_data().convert::<i64>(),
        y.into_data(),
        dx.into_data(),
        dy.into_data(),
    ]
}

/// A call the op refuses, on `device`; `turn` picks which: an index out of range (raw, checked:
/// on a GPU the refusal comes from a device read-back) or a pool whose window does not fit.
fn refused_call(device: &Device, turn: usize) {
    let message = outcome(|| {
        if turn.is_multiple_of(2) {
            let x = Tensor::<3>::ones([1, 2, 4], device);
            let indices = Tensor::<3, Int>::from_ints([[[0, 1, 2, 9], [3, 2, 1, 0]]], device);
            let _ = max_unpool(x, indices, MaxUnpoolOptions::new([2])).into_data();
        } else {
            let x = Tensor::<4>::ones([1, 1, 2, 2], device);
            let _ = max_pool_with_indices(x, MaxPoolOptions::new([3, 3]));
        }
    })
    .expect_err("a refused call panics");
    let expected = ["is out of range", "does not fit"][turn % 2];
    assert!(message.contains(expected), "refused with: {message}");
}

/// The refusals' panics are expected: they are not printed (others are, by the default hook).
fn quiet_refusals() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or("");
            let refused = message.contains("is out of range") || message.contains("does not fit");
            if !refused {
                default(info);
            }
        }));
    });
}

#[test]
fn threads_sharing_a_device_get_the_bits_of_each_job_run_alone() {
    let _serial = serial();
    quiet_refusals();
    let jobs = jobs();
    for (name, device) in devices() {
        let alone: Vec<Vec<TensorData>> = jobs.iter().map(|job| run(job, &device)).collect();
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let (jobs, alone, device) = (&jobs, &alone, &device);
                scope.spawn(move || {
                    // Each thread takes the jobs in its own order, so that the shapes running
                    // at once differ, and a refused call between jobs.
                    for call in 0..ROUNDS * jobs.len() {
                        let at = (call + 2 * thread) % jobs.len();
                        let results = run(&jobs[at], device);
                        for (part, (got, expected)) in results.iter().zip(&alone[at]).enumerate() {
                            let context = format!(
                                "{name}, thread {thread}, call {call}: job {at} {:?}, result {part}",
                                jobs[at].shape
                            );
                            assert_bit_equal(got, expected, &context);
                        }
                        refused_call(device, thread + call);
                    }
                });
            }
        });
    }
}

/// What may be shared between threads: devices, tensors, the pools' indices, options and modules.
#[test]
fn the_shared_types_are_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<Device>();
    shared::<Tensor<4>>();
    shared::<Tensor<4, Int>>();
    shared::<PoolIndices<4>>();
    shared::<MaxUnpoolOptions<2>>();
    shared::<burn_unpool::UnpoolPlan>();
    shared::<MaxUnpool2d>();
    shared::<burn_unpool::nn::MaxUnpool1d>();
    shared::<burn_unpool::nn::MaxUnpool3d>();
    shared::<burn_unpool::nn::MaxPool3d>();
}

/// How far resident memory may grow over a soak once warm.
#[cfg(target_os = "linux")]
const SOAK_GROWTH_KIB: u64 = 1024;

/// The process's resident memory in KiB (Linux's `/proc/self/status`).
#[cfg(target_os = "linux")]
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    line.split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in kB")
}

#[cfg(target_os = "linux")]
#[test]
fn a_soak_of_varying_shapes_keeps_resident_memory_flat() {
    let _serial = serial();
    quiet_refusals();
    let calls: usize = std::env::var("BURN_UNPOOL_SOAK_CALLS")
        .ok()
        .map(|calls| calls.parse().expect("BURN_UNPOOL_SOAK_CALLS: a number"))
        .unwrap_or(2000);
    let jobs = jobs();
    for (name, device) in devices() {
        // Warm: every job twice, so that the allocators hold every size the soak asks for.
        for call in 0..2 * jobs.len() {
            run(&jobs[call % jobs.len()], &device);
            refused_call(&device, call);
        }
        let warm = resident_kib();
        let mut peak = warm;
        for call in 0..calls {
            run(&jobs[(call * 5) % jobs.len()], &device);
            refused_call(&device, call);
            peak = peak.max(resident_kib());
        }
        let last = resident_kib();
        eprintln!(
            "{name}: resident {warm} KiB warm, {last} KiB after {calls} calls, peak {peak} KiB"
        );
        assert!(
            peak <= warm + SOAK_GROWTH_KIB,
            "{name}: resident memory grew from {warm} KiB to {peak} KiB over {calls} calls \
             (at most {SOAK_GROWTH_KIB} KiB allowed)"
        );
    }
}
