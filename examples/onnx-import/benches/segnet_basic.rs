//! One variant of SegNet-Basic's forward on one CPU device: its median time and the peak of the
//! heap bytes it allocates, as one JSON line. `benches/segnet_basic.py` exports the models, builds
//! this with them (`ONNX_IMPORT_BENCH_MODELS`), runs every variant in a process of its own and
//! prints the table.
//!
//! `cargo bench -p onnx-import --bench segnet_basic -- --variant modules|legacy|dynamo|
//! legacy-node-by-node|dynamo-node-by-node --net segnet-basic|skeleton --device flex|ndarray
//! --batch 1|4 [--size 360x480] [--runs 3]`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[cfg(not(bench_models))]
fn main() {
    eprintln!(
        "no models: run `python examples/onnx-import/benches/segnet_basic.py`, which exports \
         them and builds this bench with ONNX_IMPORT_BENCH_MODELS set"
    );
}

#[cfg(bench_models)]
fn main() {
    // A panic on Burn's device thread would leave this one waiting on it: end with the panic.
    burn_unpool_tools::exit_on_panic();
    bench::main();
}

#[cfg(bench_models)]
mod bench {
    use std::time::Instant;

    use burn::module::Module;
    use burn::nn::PaddingConfig2d;
    use burn::nn::conv::{Conv2d, Conv2dConfig};
    use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
    use burn::tensor::{Device, Distribution, Tensor};
    use burn_store::ModuleSnapshot;
    use burn_unpool::nn::{MaxPoolWithIndices, MaxUnpool2d, MaxUnpool2dConfig};
    use clap::{Parser, ValueEnum};

    use super::{LIVE, Ordering, PEAK};

    macro_rules! models {
        ($($module:ident: $file:literal,)*) => {$(
            // The node-by-node imports bind values they never read (the 1x1 pools').
            #[allow(clippy::all, unused)]
            mod $module {
                include!(concat!(env!("OUT_DIR"), "/", $file));
            }
        )*};
    }

    models! {
        segnet_basic_legacy_b1: "bench/segnet_basic_legacy_b1.rs",
        segnet_basic_legacy_b4: "bench/segnet_basic_legacy_b4.rs",
        segnet_basic_dynamo_b1: "bench/segnet_basic_dynamo_b1.rs",
        segnet_basic_dynamo_b4: "bench/segnet_basic_dynamo_b4.rs",
        skeleton_legacy_b1: "bench/skeleton_legacy_b1.rs",
        skeleton_legacy_b4: "bench/skeleton_legacy_b4.rs",
        skeleton_dynamo_b1: "bench/skeleton_dynamo_b1.rs",
        skeleton_dynamo_b4: "bench/skeleton_dynamo_b4.rs",
        segnet_basic_legacy_b1_nodes: "bench/node_by_node/segnet_basic_legacy_b1.rs",
        segnet_basic_legacy_b4_nodes: "bench/node_by_node/segnet_basic_legacy_b4.rs",
        segnet_basic_dynamo_b1_nodes: "bench/node_by_node/segnet_basic_dynamo_b1.rs",
        segnet_basic_dynamo_b4_nodes: "bench/node_by_node/segnet_basic_dynamo_b4.rs",
        skeleton_legacy_b1_nodes: "bench/node_by_node/skeleton_legacy_b1.rs",
        skeleton_legacy_b4_nodes: "bench/node_by_node/skeleton_legacy_b4.rs",
        skeleton_dynamo_b1_nodes: "bench/node_by_node/skeleton_dynamo_b1.rs",
        skeleton_dynamo_b4_nodes: "bench/node_by_node/skeleton_dynamo_b4.rs",
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
    enum Variant {
        /// The network built from burn-unpool's modules, with the legacy file's weights.
        Modules,
        Legacy,
        Dynamo,
        LegacyNodeByNode,
        DynamoNodeByNode,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
    enum Net {
        SegnetBasic,
        Skeleton,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
    enum DeviceName {
        Flex,
        Ndarray,
    }

    #[derive(Parser)]
    struct Args {
        #[arg(long, value_enum)]
        variant: Variant,
        #[arg(long, value_enum)]
        net: Net,
        #[arg(long, value_enum)]
        device: DeviceName,
        /// 1 or 4: the batches the models were exported for.
        #[arg(long)]
        batch: usize,
        /// HEIGHTxWIDTH, as exported.
        #[arg(long, default_value = "360x480")]
        size: String,
        /// Timed forwards, after one warm-up.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Accepted for `cargo bench`.
        #[arg(long, hide = true)]
        bench: bool,
    }

    /// SegNet-Basic from burn-unpool's modules: the legacy file's convolutions (batch norm folded
    /// in by the exporter), with the imported model's weights applied by field name.
    #[derive(Module, Debug)]
    struct SegNetBasic {
        conv2d1: Conv2d,
        conv2d2: Conv2d,
        conv2d3: Conv2d,
        conv2d4: Conv2d,
        conv2d5: Conv2d,
        conv2d6: Conv2d,
        conv2d7: Conv2d,
        conv2d8: Conv2d,
        conv2d9: Conv2d,
        pool: MaxPool2d,
        unpool: MaxUnpool2d,
    }

    impl SegNetBasic {
        fn new(batch: usize, device: &Device) -> Self {
            let conv = |input, output, kernel: usize| {
                let pad = kernel / 2;
                Conv2dConfig::new([input, output], [kernel, kernel])
                    .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
                    .init(device)
            };
            let mut net = Self {
                conv2d1: conv(3, 64, 7),
                conv2d2: conv(64, 64, 7),
                conv2d3: conv(64, 64, 7),
                conv2d4: conv(64, 64, 7),
                conv2d5: conv(64, 64, 7),
                conv2d6: conv(64, 64, 7),
                conv2d7: conv(64, 64, 7),
                conv2d8: conv(64, 64, 7),
                conv2d9: conv(64, 11, 1),
                pool: MaxPool2dConfig::new([2, 2]).with_ceil_mode(true).init(),
                unpool: MaxUnpool2dConfig::new([2, 2]).with_ceil_mode(true).init(),
            };
            // The imported legacy model's tensors, applied by field name.
            let tensors =
                match batch {
                    1 => segnet_basic_legacy_b1::Model::from_embedded(device)
                        .collect(None, None, false),
                    _ => segnet_basic_legacy_b4::Model::from_embedded(device)
                        .collect(None, None, false),
                };
            let applied = net.apply(tensors, None, None, false);
            assert!(
                applied.errors.is_empty() && applied.missing.is_empty(),
                "{applied:?}"
            );
            net
        }

        fn forward(&self, x: Tensor<4>, skeleton: bool) -> Tensor<4> {
            let relu = burn::tensor::activation::relu;
            let encoders = [&self.conv2d1, &self.conv2d2, &self.conv2d3, &self.conv2d4];
            let decoders = [&self.conv2d5, &self.conv2d6, &self.conv2d7, &self.conv2d8];
            let mut trail = Vec::new();
            let mut x = x;
            for conv in encoders {
                if !skeleton {
                    x = relu(conv.forward(x));
                }
                let (pooled, indices) = self.pool.forward_with_indices(x);
                trail.push(indices);
                x = pooled;
            }
            for conv in decoders {
                let indices = trail.pop().expect("one pool per stage");
                x = self.unpool.forward(x, indices);
                if !skeleton {
                    x = relu(conv.forward(x));
                }
            }
            if skeleton { x } else { self.conv2d9.forward(x) }
        }
    }

    pub fn main() {
        let args = Args::parse();
        let device = match args.device {
            DeviceName::Flex => Device::flex(),
            #[allow(deprecated)]
            DeviceName::Ndarray => Device::ndarray(),
        };
        let (height, width) = args
            .size
            .split_once('x')
            .and_then(|(h, w)| Some((h.parse().ok()?, w.parse().ok()?)))
            .expect("--size HEIGHTxWIDTH");
        let channels = match args.net {
            Net::SegnetBasic => 3,
            Net::Skeleton => 64,
        };
        let shape = [args.batch, channels, height, width];
        let x = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &device);
        let forward = model(args.variant, args.net, args.batch, &device);
        // The first forward warms the device up; the peak is the most the forwards ever held
        // above what was live before them (model and input included in neither).
        let _ = forward(x.clone()).into_data();
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let mut times = Vec::new();
        for _ in 0..args.runs {
            let start = Instant::now();
            let _ = forward(x.clone()).into_data();
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let peak = PEAK.load(Ordering::Relaxed) - base;
        times.sort_by(f64::total_cmp);
        println!(
            "{{\"median_ms\": {:.3}, \"min_ms\": {:.3}, \"max_ms\": {:.3}, \"peak_bytes\": {peak}}}",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }

    type Forward = Box<dyn Fn(Tensor<4>) -> Tensor<4>>;

    fn model(variant: Variant, net: Net, batch: usize, device: &Device) -> Forward {
        macro_rules! imported {
            ($module:ident) => {{
                let model = $module::Model::from_embedded(device);
                Box::new(move |x| model.forward(x))
            }};
        }
        use Net::*;
        use Variant::*;
        match (variant, net, batch) {
            (Modules, net, batch) => {
                let model = SegNetBasic::new(batch, device);
                Box::new(move |x| model.forward(x, net == Skeleton))
            }
            (Legacy, SegnetBasic, 1) => imported!(segnet_basic_legacy_b1),
            (Legacy, SegnetBasic, _) => imported!(segnet_basic_legacy_b4),
            (Dynamo, SegnetBasic, 1) => imported!(segnet_basic_dynamo_b1),
            (Dynamo, SegnetBasic, _) => imported!(segnet_basic_dynamo_b4),
            (Legacy, Skeleton, 1) => imported!(skeleton_legacy_b1),
            (Legacy, Skeleton, _) => imported!(skeleton_legacy_b4),
            (Dynamo, Skeleton, 1) => imported!(skeleton_dynamo_b1),
            (Dynamo, Skeleton, _) => imported!(skeleton_dynamo_b4),
            (LegacyNodeByNode, SegnetBasic, 1) => imported!(segnet_basic_legacy_b1_nodes),
            (LegacyNodeByNode, SegnetBasic, _) => imported!(segnet_basic_legacy_b4_nodes),
            (DynamoNodeByNode, SegnetBasic, 1) => imported!(segnet_basic_dynamo_b1_nodes),
            (DynamoNodeByNode, SegnetBasic, _) => imported!(segnet_basic_dynamo_b4_nodes),
            (LegacyNodeByNode, Skeleton, 1) => imported!(skeleton_legacy_b1_nodes),
            (LegacyNodeByNode, Skeleton, _) => imported!(skeleton_legacy_b4_nodes),
            (DynamoNodeByNode, Skeleton, 1) => imported!(skeleton_dynamo_b1_nodes),
            (DynamoNodeByNode, Skeleton, _) => imported!(skeleton_dynamo_b4_nodes),
        }
    }
}
