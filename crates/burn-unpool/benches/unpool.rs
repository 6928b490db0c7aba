//! Criterion benchmarks of forward and backward on Flex and NdArray at the SegNet decoder shapes
//! (batch 1, and s1 at batch 4), beside the naive `zeros + scatter` composition.
//!
//! `cargo bench -p burn-unpool --features ndarray --bench unpool`. For medians beside ONNX Runtime and PyTorch in one
//! run, see `compare_peers.py`.

// NdArray is deprecated in Burn 0.22 but still shipped; it is measured beside Flex.
#![allow(deprecated)]

mod support;

use burn_unpool::{max_unpool_backward, max_unpool2d};
use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use support::{Workload, cpu_devices, naive_unpool, overlapping, tensors, workloads};

fn bench(c: &mut Criterion) {
    let mut cases = workloads(1);
    cases.push(workloads(4).remove(0));
    cases.push(overlapping());
    for workload in &cases {
        let id = format!("{}_b{}", workload.name, workload.input[0]);
        let options = workload.options();
        let mut forward = group(c, "forward", workload);
        for (backend, device, dtype) in cpu_devices() {
            let (x, indices) = tensors(workload, &device, dtype);
            forward.bench_function(BenchmarkId::new(backend, &id), |b| {
                b.iter(|| max_unpool2d(x.clone(), indices.clone(), options.clone()))
            });
            forward.bench_function(BenchmarkId::new(format!("{backend}_naive"), &id), |b| {
                b.iter(|| naive_unpool(x.clone(), indices.clone(), workload.output))
            });
        }
        forward.finish();

        let mut backward = group(c, "backward", workload);
        for (backend, device, dtype) in cpu_devices() {
            let (x, indices) = tensors(workload, &device, dtype);
            let grad = max_unpool2d(x, indices.clone(), options.clone());
            backward.bench_function(BenchmarkId::new(backend, &id), |b| {
                b.iter(|| max_unpool_backward(grad.clone(), indices.clone(), options.clone()))
            });
            // The naive composition's backward is its autodiff gather, forward untimed.
            let autodiff = device.autodiff();
            let (xa, ia) = tensors(workload, &autodiff, dtype);
            backward.bench_function(
                BenchmarkId::new(format!("{backend}_naive_autodiff"), &id),
                |b| {
                    b.iter_batched(
                        || naive_unpool(xa.clone().require_grad(), ia.clone(), workload.output),
                        |y| y.backward(),
                        criterion::BatchSize::PerIteration,
                    )
                },
            );
        }
        backward.finish();
    }
}

/// A group of 10 samples, reporting the bytes the op moves with i32 indices.
fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    workload: &Workload,
) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .throughput(Throughput::Bytes(workload.bytes(4) as u64));
    group
}

criterion_group!(benches, bench);
criterion_main!(benches);
