//! Medians of forward and backward at the SegNet shapes, beside the naive composition, a zero-fill
//! and a plain copy of the same bytes, printed as a table (or
//! JSON lines with `--json`, read by `compare_peers.py`, which times ONNX Runtime and PyTorch in
//! the same run).
//!
//! `cargo bench -p burn-unpool --features ndarray --bench timings -- [--json] [--batches 1,4] [--runs 15] [--only s1]
//! [--calls 50]` (the options are described by `--help` after the `--`)
//!
//! With `--features wgpu` and `--gpu`, the same workloads run on the default wgpu device instead
//! (fused, as users get it), timed two ways: `latency`, each call followed by a device sync, and
//! `throughput`, `--calls` calls queued back to back and one sync at the end, per call (what a
//! training loop sees). The CPU devices run each call to its end, so there both are the same and
//! only `latency` is reported.
//!
//! Indices come two ways: raw (checked: on a GPU one word is read back before the op runs) and
//! `pooled`, the [`PoolIndices`](burn_unpool::PoolIndices) of this crate's pool, which need no
//! check and take the one-pass kernels where the pool's windows cannot overlap.

// NdArray is deprecated in Burn 0.22 but still shipped; it is measured beside Flex.
#![allow(deprecated)]

mod support;

use std::time::Instant;

use burn::tensor::{DType, Device, Tensor};
use burn_unpool::{max_unpool_backward, max_unpool2d};
use support::{
    Args, Mode, Workload, median, median_ms, naive_unpool, overlapping, pooled, tensors, workloads,
};

/// The command line (`-- --help`), with this bench's defaults.
fn args() -> Args {
    Args::parse(&[1, 4], 15, 50)
}

/// One measurement of `workload`.
struct Row<'a> {
    what: &'a str,
    backend: &'a str,
    index: DType,
    mode: Mode,
    ms: f64,
}

fn report(args: &Args, workload: &Workload, row: Row<'_>) {
    let index = match row.index {
        DType::I64 => "i64",
        _ => "i32",
    };
    let gbps = workload.bytes(row.index.size()) as f64 / (row.ms * 1e-3) / 1e9;
    let (batch, mode, what, backend, ms) = (
        workload.input[0],
        row.mode.name(),
        row.what,
        row.backend,
        row.ms,
    );
    if args.json {
        println!(
            r#"{{"shape":"{}","batch":{batch},"what":"{what}","backend":"{backend}","index":"{index}","mode":"{mode}","median_ms":{ms:.4},"gbps":{gbps:.2}}}"#,
            workload.name
        );
    } else {
        println!(
            "{:<8} {batch:>5} {what:<22} {backend:<8} {index:<4} {mode:<10} {ms:>9.3} ms {gbps:>7.2} GB/s",
            workload.name
        );
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
            "burn-unpool timings: f32 values, median of {} runs after 2 warm-up runs, {on}",
            args.runs
        );
        println!(
            "{:<8} {:>5} {:<22} {:<8} {:<4} {:<10} {:>12} {:>12}",
            "shape", "batch", "what", "backend", "idx", "mode", "median", "bandwidth"
        );
    }
    let mut all: Vec<Workload> = args.batches.iter().flat_map(|&b| workloads(b)).collect();
    all.push(overlapping());
    for workload in all.iter().filter(|w| args.wants(w.name)) {
        if args.gpu {
            run_gpu_workload(&args, workload);
        } else {
            run_workload(&args, workload);
        }
    }
}

#[cfg(not(feature = "wgpu"))]
fn run_gpu_workload(_: &Args, _: &Workload) {
    panic!(
        "--gpu needs the `wgpu` feature: cargo bench -p burn-unpool --features ndarray,wgpu --bench timings -- --gpu"
    );
}

/// The GPU figures on the default wgpu device, and a device copy of the same bytes (`t + 0` over
/// as many f32 as the op moves bytes / 8, read once and written once).
#[cfg(feature = "wgpu")]
fn run_gpu_workload(args: &Args, workload: &Workload) {
    let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
    for dtype in [DType::I32, DType::I64] {
        time_device(args, workload, "wgpu", &device, dtype);
    }
    let source = Tensor::<1>::ones([workload.bytes(4) / 8], &device);
    let copy = || source.clone() + 0.0;
    for mode in [Mode::Latency, Mode::Throughput] {
        let ms = time_mode(args, &device, mode, &copy);
        let row = Row {
            what: "copy_same_bytes",
            backend: "wgpu",
            index: DType::I32,
            mode,
            ms,
        };
        report(args, workload, row);
    }
}

fn run_workload(args: &Args, workload: &Workload) {
    let runs = args.runs;
    for (backend, device, dtype) in args.cpu_devices() {
        time_device(args, workload, backend, &device, dtype);
    }

    // Beside the op, the zero-fill of its output and a plain copy of the bytes it moves.
    let mut out = vec![0.0f32; workload.output_len()];
    let memory = |what, ms| Row {
        what,
        backend: "memory",
        index: DType::I32,
        mode: Mode::Latency,
        ms,
    };
    if args.wants_op("zero_fill_output") {
        let ms = median_ms(2, runs, || out.fill(0.0));
        report(args, workload, memory("zero_fill_output", ms));
    }
    if args.wants_op("copy_same_bytes") {
        let source = vec![1u8; workload.bytes(4)];
        let mut target = vec![0u8; workload.bytes(4)];
        let ms = median_ms(2, runs, || target.copy_from_slice(&source));
        report(args, workload, memory("copy_same_bytes", ms));
    }
}

/// The op on `device`: with raw indices of `dtype` (checked, and without the check) and with the
/// pool's own indices, forward and backward, beside the naive composition; the backward under
/// autodiff.
fn time_device(args: &Args, workload: &Workload, backend: &str, device: &Device, dtype: DType) {
    let (x, indices) = tensors(workload, device, dtype);
    let (pooled_x, pool_indices) = pooled(workload, device);
    let options = workload.options();
    let unchecked = options.clone().without_index_check();
    let grad = max_unpool2d(x.clone(), indices.clone(), options.clone());
    let ops: [(&str, &dyn Fn() -> Tensor<4>); 6] = [
        ("forward", &|| {
            max_unpool2d(x.clone(), indices.clone(), options.clone())
        }),
        ("forward_pooled", &|| {
            max_unpool2d(pooled_x.clone(), pool_indices.clone(), options.clone())
        }),
        ("forward_unchecked", &|| {
            max_unpool2d(x.clone(), indices.clone(), unchecked.clone())
        }),
        ("forward_naive", &|| {
            naive_unpool(x.clone(), indices.clone(), workload.output)
        }),
        ("backward", &|| {
            max_unpool_backward(grad.clone(), indices.clone(), options.clone())
        }),
        ("backward_pooled", &|| {
            max_unpool_backward(grad.clone(), pool_indices.clone(), options.clone())
        }),
    ];
    let modes: &[Mode] = if args.gpu {
        &[Mode::Latency, Mode::Throughput]
    } else {
        &[Mode::Latency]
    };
    // Every op runs once before any is timed, as in the pools bench: the first op timed on a
    // workload would otherwise pay for its first large allocations.
    let ops = ops.into_iter().filter(|(what, _)| args.wants_op(what));
    for (_, op) in ops.clone() {
        drop(op());
    }
    device.sync().expect("the device syncs");
    for (what, op) in ops {
        let index = if what.ends_with("pooled") {
            pool_indices.tensor().dtype()
        } else {
            dtype
        };
        for &mode in modes {
            let ms = time_mode(args, device, mode, op);
            let row = Row {
                what,
                backend,
                index,
                mode,
                ms,
            };
            report(args, workload, row);
        }
    }
    autodiff_backwards(args, workload, backend, &device.clone().autodiff(), dtype);
}

/// The median time per call of `op` on `device` in `mode`.
fn time_mode<const R: usize>(
    args: &Args,
    device: &Device,
    mode: Mode,
    op: &dyn Fn() -> Tensor<R>,
) -> f64 {
    support::time_mode(args.runs, args.calls, device, mode, op)
}

/// The backward under autodiff, ours and the naive composition's: `backward()` only is timed;
/// the forward builds the graph untimed.
fn autodiff_backwards(
    args: &Args,
    workload: &Workload,
    backend: &str,
    device: &Device,
    dtype: DType,
) {
    let (x, indices) = tensors(workload, device, dtype);
    let options = workload.options();
    let sync = || device.sync().expect("the device syncs");
    let ours = || {
        median_autodiff_backward(args.runs, sync, || {
            max_unpool2d(x.clone().require_grad(), indices.clone(), options.clone())
        })
    };
    let naive = || {
        median_autodiff_backward(args.runs, sync, || {
            naive_unpool(x.clone().require_grad(), indices.clone(), workload.output)
        })
    };
    // A training step's share: the op under autodiff, a `sum()` loss, `backward()`, and the
    // gradient of `x` read with a `sum()`; the same as PyTorch's side in `compare_peers.py`.
    let step = || {
        support::time_mode(args.runs, args.calls, device, Mode::Latency, &|| {
            let x = x.clone().require_grad();
            let grads = max_unpool2d(x.clone(), indices.clone(), options.clone())
                .sum()
                .backward();
            let dx = x.grad(&grads).expect("x requires its gradient");
            dx.sum().into_scalar::<f32>()
        })
    };
    let [n, c, _, _] = workload.input;
    let output = [n, c, workload.output[0], workload.output[1]];
    let burn = || support::loss_and_read(args.runs, device, output, workload.input);
    let rows: [(&str, &dyn Fn() -> f64); 4] = [
        ("backward_autodiff", &ours),
        ("backward_autodiff_naive", &naive),
        ("step", &step),
        ("step_loss_and_read", &burn),
    ];
    for (what, time) in rows {
        if !args.wants_op(what) {
            continue;
        }
        let row = Row {
            what,
            backend,
            index: dtype,
            mode: Mode::Latency,
            ms: time(),
        };
        report(args, workload, row);
    }
}

/// Median time of `backward()` (then `sync`), after a forward built and `sync`ed untimed.
fn median_autodiff_backward(
    runs: usize,
    sync: impl Fn(),
    mut forward: impl FnMut() -> Tensor<4>,
) -> f64 {
    median(
        (0..runs + 2)
            .map(|_| {
                let y = forward();
                sync();
                let start = Instant::now();
                let grads = y.backward();
                sync();
                let elapsed = start.elapsed().as_secs_f64() * 1e3;
                drop(grads);
                elapsed
            })
            .skip(2),
    )
}
