//! Medians of forward and backward at the SegNet shapes, beside the naive composition, a zero-fill
//! and a plain copy of the same bytes, printed as a table (or JSON lines with `--json`, read by
//! `compare_peers.py`, which times ONNX Runtime and PyTorch in the same run).
//!
//! `cargo bench -p burn-unpool --bench timings -- [--json] [--batches 1,4] [--runs 15] [--only s1]`
//!
//! With `--features wgpu` and `--gpu`, the same workloads run on the default wgpu device instead
//! (fused, as users get it), each timed call followed by a device sync.

// NdArray is deprecated in Burn 0.22 but still shipped; it is measured beside Flex.
#![allow(deprecated)]

mod support;

use burn::tensor::{DType, Device, Tensor};
use burn_unpool::{UnpoolPlan, bench_support, max_unpool_backward, max_unpool2d};
use support::{Workload, median_ms, naive_unpool, overlapping, tensors, workloads};

struct Args {
    json: bool,
    batches: Vec<usize>,
    runs: usize,
    only: Option<String>,
    gpu: bool,
}

fn args() -> Args {
    let mut args = Args {
        json: false,
        batches: vec![1, 4],
        runs: 15,
        only: None,
        gpu: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--batches" => {
                args.batches = it
                    .next()
                    .expect("--batches 1,4")
                    .split(',')
                    .map(|b| b.parse().expect("a batch size"))
                    .collect()
            }
            "--runs" => args.runs = it.next().expect("--runs N").parse().expect("a count"),
            "--only" => args.only = it.next(),
            "--gpu" => args.gpu = true,
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

fn report(args: &Args, workload: &Workload, what: &str, backend: &str, index: &str, ms: f64) {
    let index_bytes = if index == "i64" { 8 } else { 4 };
    let gbps = workload.bytes(index_bytes) as f64 / (ms * 1e-3) / 1e9;
    let batch = workload.input[0];
    if args.json {
        println!(
            r#"{{"shape":"{}","batch":{batch},"what":"{what}","backend":"{backend}","index":"{index}","median_ms":{ms:.4},"gbps":{gbps:.2}}}"#,
            workload.name
        );
    } else {
        println!(
            "{:<8} {batch:>5} {what:<22} {backend:<10} {index:<4} {ms:>9.3} ms {gbps:>7.2} GB/s",
            workload.name
        );
    }
}

fn main() {
    let args = args();
    let threads = rayon::current_num_threads();
    if !args.json {
        let on = if args.gpu {
            "the default wgpu device, synced after each call".to_string()
        } else {
            format!("{threads} threads")
        };
        println!(
            "burn-unpool timings: f32 values, median of {} runs after 2 warm-up runs, {on}",
            args.runs
        );
        println!(
            "{:<8} {:>5} {:<22} {:<10} {:<4} {:>12} {:>12}",
            "shape", "batch", "what", "backend", "idx", "median", "bandwidth"
        );
    }
    let mut all: Vec<Workload> = args.batches.iter().flat_map(|&b| workloads(b)).collect();
    all.push(overlapping());
    for workload in all
        .iter()
        .filter(|w| args.only.as_deref().is_none_or(|o| o == w.name))
    {
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
        "--gpu needs the `wgpu` feature: cargo bench -p burn-unpool --features wgpu --bench timings -- --gpu"
    );
}

/// The GPU figures: the op checked (one word read back before it runs) and unchecked, the backward
/// alone and under autodiff, the naive composition, and a device copy of the same bytes
/// (`t + 0` over as many f32 as the op moves bytes / 8, read once and written once).
#[cfg(feature = "wgpu")]
fn run_gpu_workload(args: &Args, workload: &Workload) {
    let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
    let runs = args.runs;
    for dtype in [DType::I32, DType::I64] {
        time_device(args, workload, "wgpu", &device, dtype);
    }
    let floats = workload.bytes(4) / 8;
    let source = Tensor::<1>::ones([floats], &device);
    let ms = median_ms(2, runs, || {
        let copy = source.clone() + 0.0;
        device.sync().expect("the device syncs");
        copy
    });
    report(args, workload, "copy_same_bytes", "wgpu", "i32", ms);
}

fn run_workload(args: &Args, workload: &Workload) {
    let runs = args.runs;
    let options = workload.options();
    for (backend, device, dtype) in support::cpu_devices() {
        time_device(args, workload, backend, &device, dtype);
    }

    // Where the forward's time goes: the kernel into a reused, zero-filled buffer (what ONNX
    // Runtime does), the zero-fill alone, and a plain copy of the bytes the op moves.
    let plan =
        UnpoolPlan::new(&workload.input, &workload.input, &options).expect("a valid workload");
    let x = support::values(workload.input_len());
    let indices: Vec<i32> = support::indices(workload)
        .into_iter()
        .map(|i| i as i32)
        .collect();
    let mut out = vec![0.0f32; workload.output_len()];
    let ms = median_ms(2, runs, || {
        out.fill(0.0);
        bench_support::unpool_forward_into(&x, &indices, &plan, &mut out);
    });
    report(args, workload, "forward_reused_buffer", "kernel", "i32", ms);
    let ms = median_ms(2, runs, || out.fill(0.0));
    report(args, workload, "zero_fill_output", "memory", "i32", ms);
    let source = vec![1u8; workload.bytes(4)];
    let mut target = vec![0u8; workload.bytes(4)];
    let ms = median_ms(2, runs, || target.copy_from_slice(&source));
    report(args, workload, "copy_same_bytes", "memory", "i32", ms);
}

/// The op on `device` with indices of `dtype`: the forward with and without the index check, the
/// naive composition, the backward alone and under autodiff. Every timed call ends with a device
/// sync (which returns at once on the CPU devices).
fn time_device(args: &Args, workload: &Workload, backend: &str, device: &Device, dtype: DType) {
    let index = if dtype == DType::I32 { "i32" } else { "i64" };
    let (x, indices) = tensors(workload, device, dtype);
    let options = workload.options();
    let time = |what: &str, op: &dyn Fn() -> Tensor<4>| {
        let ms = median_ms(2, args.runs, || {
            let out = op();
            device.sync().expect("the device syncs");
            out
        });
        report(args, workload, what, backend, index, ms);
    };
    let unchecked = options.clone().without_index_check();
    time("forward", &|| {
        max_unpool2d(x.clone(), indices.clone(), options.clone())
    });
    time("forward_unchecked", &|| {
        max_unpool2d(x.clone(), indices.clone(), unchecked.clone())
    });
    time("forward_naive", &|| {
        naive_unpool(x.clone(), indices.clone(), workload.output)
    });
    let grad = max_unpool2d(x.clone(), indices.clone(), options.clone());
    time("backward", &|| {
        max_unpool_backward(grad.clone(), indices.clone(), options.clone())
    });
    autodiff_backwards(args, workload, backend, &device.clone().autodiff(), dtype);
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
    let index = if dtype == DType::I32 { "i32" } else { "i64" };
    let (x, indices) = tensors(workload, device, dtype);
    let options = workload.options();
    let sync = || device.sync().expect("the device syncs");
    let ms = median_autodiff_backward(args.runs, sync, || {
        max_unpool2d(x.clone().require_grad(), indices.clone(), options.clone())
    });
    report(args, workload, "backward_autodiff", backend, index, ms);
    let ms = median_autodiff_backward(args.runs, sync, || {
        naive_unpool(x.clone().require_grad(), indices.clone(), workload.output)
    });
    report(
        args,
        workload,
        "backward_autodiff_naive",
        backend,
        index,
        ms,
    );
}

/// Median time of `backward()` (then `sync`), after a forward built and `sync`ed untimed.
fn median_autodiff_backward(
    runs: usize,
    sync: impl Fn(),
    mut forward: impl FnMut() -> Tensor<4>,
) -> f64 {
    let mut times: Vec<f64> = (0..runs + 2)
        .map(|_| {
            let y = forward();
            sync();
            let start = std::time::Instant::now();
            let grads = y.backward();
            sync();
            let elapsed = start.elapsed().as_secs_f64() * 1e3;
            drop(grads);
            elapsed
        })
        .skip(2)
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
