//! Shared by the benchmarks: the SegNet decoder shapes, seeded pool indices and the naive
//! composition a user writes today.

#![allow(dead_code)]

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, PoolIndices, max_pool2d_with_indices, max_unpool2d};

/// The command line of the `timings` and `pools` benches (`-- --help` lists it).
#[derive(clap::Parser, Debug)]
#[command(about = "Medians of burn-unpool's ops; see the bench's doc comment")]
struct Cli {
    /// Print JSON lines (what compare_peers.py reads) instead of a table.
    #[arg(long)]
    json: bool,
    /// Batch sizes, comma-separated [default: the bench's own].
    #[arg(long, value_delimiter = ',')]
    batches: Option<Vec<usize>>,
    /// Timed runs per median, after 2 warm-up runs [default: the bench's own].
    #[arg(long)]
    runs: Option<usize>,
    /// GPU throughput mode: calls queued before one sync [default: the bench's own].
    #[arg(long)]
    calls: Option<usize>,
    /// Only the workloads of these names, comma-separated (s1..s4, v1..v3, overlap).
    #[arg(long, value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Only the rows of these names, comma-separated (e.g. forward,backward_pooled; the names of
    /// the JSON lines' "what").
    #[arg(long, value_delimiter = ',')]
    ops: Option<Vec<String>>,
    /// Only these CPU devices, comma-separated (flex, ndarray).
    #[arg(long, value_delimiter = ',')]
    backends: Option<Vec<String>>,
    /// Also time the default wgpu device (a build with `--features wgpu`).
    #[arg(long)]
    gpu: bool,
    /// Passed by `cargo bench` to every bench binary; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A bench's settings: the command line, with the bench's defaults for what it leaves out.
pub struct Args {
    pub json: bool,
    pub batches: Vec<usize>,
    pub runs: usize,
    pub calls: usize,
    pub only: Option<Vec<String>>,
    pub ops: Option<Vec<String>>,
    pub backends: Option<Vec<String>>,
    pub gpu: bool,
}

impl Args {
    /// Parses the command line (exits with clap's message on `--help` or a bad argument).
    pub fn parse(batches: &[usize], runs: usize, calls: usize) -> Self {
        let cli = <Cli as clap::Parser>::parse();
        Self {
            json: cli.json,
            batches: cli.batches.unwrap_or_else(|| batches.to_vec()),
            runs: cli.runs.unwrap_or(runs),
            calls: cli.calls.unwrap_or(calls),
            only: cli.only,
            ops: cli.ops,
            backends: cli.backends,
            gpu: cli.gpu,
        }
    }

    /// Whether the workload named `name` is to be timed (`--only`).
    pub fn wants(&self, name: &str) -> bool {
        listed(&self.only, name)
    }

    /// Whether the row named `what` is to be timed (`--ops`).
    pub fn wants_op(&self, what: &str) -> bool {
        listed(&self.ops, what)
    }

    /// The CPU devices to time (`--backends`), with the index dtype their own pool emits.
    pub fn cpu_devices(&self) -> Vec<(&'static str, Device, DType)> {
        cpu_devices()
            .into_iter()
            .filter(|(backend, ..)| listed(&self.backends, backend))
            .collect()
    }
}

/// Whether `name` is in `list`, where no list means every name.
fn listed(list: &Option<Vec<String>>, name: &str) -> bool {
    list.as_ref()
        .is_none_or(|names| names.iter().any(|n| n == name))
}

/// The CPU devices measured, with the index dtype their own pool emits: Flex (i32) and
/// NdArray (i64).
#[allow(deprecated)] // NdArray is deprecated in Burn 0.22 but still shipped; it is measured.
pub fn cpu_devices() -> [(&'static str, Device, DType); 2] {
    [
        ("flex", Device::flex(), DType::I32),
        ("ndarray", Device::ndarray(), DType::I64),
    ]
}

/// One unpooling workload.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Short name (`s1`..`s4`, `overlap`).
    pub name: &'static str,
    /// `[N, C, H, W]` of `x` and the indices.
    pub input: [usize; 4],
    /// `[H, W]` of the output.
    pub output: [usize; 2],
    /// The pool: kernel, stride, padding.
    pub pool: (usize, usize, usize),
}

impl Workload {
    /// The unpool options.
    pub fn options(&self) -> MaxUnpoolOptions<2> {
        let (k, s, p) = self.pool;
        MaxUnpoolOptions::new([k, k])
            .with_stride([s, s])
            .with_padding([p, p])
            .with_output_size(self.output)
    }

    /// The pool whose indices the workload unpools.
    pub fn pool_options(&self) -> MaxPoolOptions<2> {
        let (k, s, p) = self.pool;
        MaxPoolOptions::new([k, k])
            .with_stride([s, s])
            .with_padding([p, p])
    }

    /// Elements of `x`.
    pub fn input_len(&self) -> usize {
        self.input.iter().product()
    }

    /// Elements of the output.
    pub fn output_len(&self) -> usize {
        self.input[0] * self.input[1] * self.output[0] * self.output[1]
    }

    /// Bytes moved by one forward: output and `x` in f32, indices of `index_bytes` each.
    pub fn bytes(&self, index_bytes: usize) -> usize {
        self.output_len() * 4 + self.input_len() * (4 + index_bytes)
    }
}

/// The SegNet (CamVid 360x480) decoder stages at `batch`, and the overlapping case.
pub fn workloads(batch: usize) -> Vec<Workload> {
    let stage = |name, c, h, w, oh, ow| Workload {
        name,
        input: [batch, c, h, w],
        output: [oh, ow],
        pool: (2, 2, 0),
    };
    vec![
        stage("s1", 64, 180, 240, 360, 480),
        stage("s2", 128, 90, 120, 180, 240),
        stage("s3", 256, 45, 60, 90, 120),
        stage("s4", 512, 22, 30, 45, 60),
    ]
}

/// Pool kernel 3, stride 2, padding 1 on 4 x 64 x 181 x 241: neighbouring windows share a border.
pub fn overlapping() -> Workload {
    Workload {
        name: "overlap",
        input: [4, 64, 91, 121],
        output: [181, 241],
        pool: (3, 2, 1),
    }
}

/// Seeded per-plane indices as the pool would produce: one position inside each window.
pub fn indices(workload: &Workload) -> Vec<i64> {
    let [n, c, h, w] = workload.input;
    let [oh, ow] = workload.output;
    let (k, s, p) = workload.pool;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(n * c * h * w);
    for _ in 0..n * c {
        for i in 0..h {
            for j in 0..w {
                let pick = |start: usize, limit: usize, r: u64| {
                    let lo = (start * s).saturating_sub(p);
                    let hi = (start * s + k).saturating_sub(p).min(limit);
                    lo + (r as usize) % (hi - lo)
                };
                let r = next();
                let (y, x) = (pick(i, oh, r & 0xffff), pick(j, ow, r >> 16));
                out.push((y * ow + x) as i64);
            }
        }
    }
    out
}

/// Seeded values of `x`.
pub fn values(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as u64 * 2_654_435_761) % 1000) as f32 / 10.0)
        .collect()
}

/// `x` and its indices on `device`, the indices of dtype `index_dtype`.
pub fn tensors(
    workload: &Workload,
    device: &Device,
    index_dtype: DType,
) -> (Tensor<4>, Tensor<4, Int>) {
    let x = Tensor::<4>::from_data(
        TensorData::new(values(workload.input_len()), workload.input),
        device,
    );
    let indices = TensorData::new(indices(workload), workload.input).convert_dtype(index_dtype);
    (
        x,
        Tensor::<4, Int>::from_data(indices, (device, index_dtype)),
    )
}

/// `x` and its indices as this crate's pool returns them ([`PoolIndices`], in the device's int
/// dtype): the pool of an image whose maxima sit at the workload's seeded indices (`x + 1`
/// unpooled there, zeros elsewhere).
pub fn pooled(workload: &Workload, device: &Device) -> (Tensor<4>, PoolIndices<4>) {
    let (x, indices) = tensors(workload, device, DType::I64);
    let image = max_unpool2d(x + 1.0, indices, workload.options());
    max_pool2d_with_indices(image, workload.pool_options())
}

/// The composition a user writes today: `zeros` + `scatter(.., Assign)` over flattened planes.
/// Burn leaves duplicates undefined with `Assign`; it is here as the speed baseline.
pub fn naive_unpool(x: Tensor<4>, indices: Tensor<4, Int>, output: [usize; 2]) -> Tensor<4> {
    let [n, c, h, w] = x.dims();
    let out = Tensor::<3>::zeros([n, c, output[0] * output[1]], &x.device());
    out.scatter(
        2,
        indices.reshape([n, c, h * w]),
        x.reshape([n, c, h * w]),
        IndexingUpdateOp::Assign,
    )
    .reshape([n, c, output[0], output[1]])
}

/// Median of `runs` timings of `f` in milliseconds, after `warmup` untimed calls. `f` returns
/// what it produced, dropped after the clock stops.
pub fn median_ms<T>(warmup: usize, runs: usize, mut f: impl FnMut() -> T) -> f64 {
    for _ in 0..warmup {
        drop(f());
    }
    median((0..runs).map(|_| {
        let start = std::time::Instant::now();
        let out = f();
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        drop(out);
        elapsed
    }))
}

/// How a time was taken.
#[derive(Clone, Copy)]
pub enum Mode {
    /// One call, then a device sync.
    Latency,
    /// Calls queued back to back, one sync at the end, per call.
    Throughput,
}

impl Mode {
    /// The mode's name in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Latency => "latency",
            Mode::Throughput => "throughput",
        }
    }
}

/// The median time per call of `op` on `device` in `mode`, over `runs` runs after warming up
/// (throughput: `calls` calls a run).
pub fn time_mode<T>(
    runs: usize,
    calls: usize,
    device: &Device,
    mode: Mode,
    op: &dyn Fn() -> T,
) -> f64 {
    let sync = || device.sync().expect("the device syncs");
    match mode {
        Mode::Latency => median_ms(2, runs, || {
            let out = op();
            sync();
            out
        }),
        Mode::Throughput => {
            // The results live until the sync: a fused device may skip work whose result is
            // dropped before it runs (a dropped `t + 0` was never computed).
            let batch = || {
                sync();
                let start = std::time::Instant::now();
                let results: Vec<T> = (0..calls).map(|_| op()).collect();
                sync();
                let per_call = start.elapsed().as_secs_f64() * 1e3 / calls as f64;
                drop(results);
                per_call
            };
            batch();
            median((0..runs).map(|_| batch()))
        }
    }
}

/// The part of a training step's work that is Burn's, not the op's: the `sum()` loss over an
/// op output of `output` shape, its `backward()` (Burn materialises the loss's gradient at that
/// shape), and the `sum()` that reads a gradient of `input` shape. `device` is an autodiff device.
pub fn loss_and_read<const R: usize>(
    runs: usize,
    device: &Device,
    output: [usize; R],
    input: [usize; R],
) -> f64 {
    let y = Tensor::<R>::zeros(output, device).require_grad();
    let dx = Tensor::<R>::zeros(input, device);
    time_mode(runs, 1, device, Mode::Latency, &|| {
        drop(y.clone().sum().backward());
        dx.clone().sum().into_scalar::<f32>()
    })
}

/// The median of `times`.
pub fn median(times: impl Iterator<Item = f64>) -> f64 {
    let mut times: Vec<f64> = times.collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
