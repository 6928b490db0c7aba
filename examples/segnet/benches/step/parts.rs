//! One training step, part by part: each part of the network's step run alone at the network's
//! own shapes, all its layers queued and one device sync at the end (what the step sees), median
//! of the runs after one untimed run. `segnet_basic_torch.py --parts` times the same parts the
//! same way in PyTorch, printing the same lines, so the two are compared part by part.
//!
//! The parts: every convolution's forward, its input gradient (all but the first layer's: the
//! images take none), its weight and bias gradient; batch norm with ReLU, forward and backward;
//! the pools and unpools, forward and backward; the loss, forward and backward; the Adam update.
//! What the whole step takes beyond their sum is autodiff's bookkeeping and the glue between them.
//! Each backward that starts from a `sum()` of its part's output includes that sum, on both sides.

use std::time::Instant;

use burn::backend::Dispatch;
use burn::backend::ops::ModuleOps;
use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::module::conv2d;
use burn::tensor::ops::{ConvOptions, MaxPoolOptions};
use burn::tensor::{Device, Distribution, Int, Tensor};
use burn_unpool::{MaxUnpoolOptions, max_pool2d_with_indices, max_unpool2d};
use segnet::model::SegNetConfig;
use segnet::training::segmentation_loss;

use super::CLASSES;

/// One convolution of the network: its input's shape, output channels and kernel size.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    input: [usize; 4],
    out_channels: usize,
    kernel: usize,
}

/// The shapes one step of the network works on.
pub struct Shapes {
    /// Every convolution, in the order the forward runs them (the classifier last).
    convs: Vec<Conv>,
    /// The input of every pool (each is unpooled back to it).
    pools: Vec<[usize; 4]>,
    /// The class scores.
    logits: [usize; 4],
    config: SegNetConfig,
}

impl Shapes {
    /// The shapes of `config`'s network on `batch` images of `size`: the pools round up.
    pub fn of(config: &SegNetConfig, batch: usize, size: [usize; 2]) -> Self {
        let convs = config.convolutions(size);
        // Each stage pools the output of its last encoder convolution.
        let mut pools = Vec::new();
        let mut stage_convs = 0;
        for spec in config.stages() {
            stage_convs += spec.convs;
            let last = convs[stage_convs - 1];
            let [h, w] = last.size;
            pools.push([batch, last.out_channels, h, w]);
        }
        let convs = convs
            .into_iter()
            .map(|conv| {
                let [h, w] = conv.size;
                Conv {
                    input: [batch, conv.in_channels, h, w],
                    out_channels: conv.out_channels,
                    kernel: conv.kernel,
                }
            })
            .collect();
        let [h, w] = size;
        Self {
            convs,
            pools,
            logits: [batch, CLASSES, h, w],
            config: config.clone(),
        }
    }
}

impl Conv {
    fn output(&self) -> [usize; 4] {
        let [b, _, h, w] = self.input;
        [b, self.out_channels, h, w]
    }

    fn weight(&self) -> [usize; 4] {
        [self.out_channels, self.input[1], self.kernel, self.kernel]
    }

    fn options(&self) -> ConvOptions<2> {
        let pad = self.kernel / 2;
        ConvOptions::new([1, 1], [pad, pad], [1, 1], 1)
    }
}

/// The median time (ms) of `runs` runs of `part` after one untimed run: `part` queues its work
/// and returns what it computed, which lives until the device has synced (so no result is
/// skipped as unused).
fn time<T>(device: &Device, runs: usize, mut part: impl FnMut() -> T) -> f64 {
    let mut times: Vec<f64> = (0..=runs)
        .map(|_| {
            device.sync().expect("the device syncs");
            let start = Instant::now();
            let kept = part();
            device.sync().expect("the device syncs");
            let elapsed = start.elapsed().as_secs_f64() * 1e3;
            drop(kept);
            elapsed
        })
        .skip(1)
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn random<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::random(shape, Distribution::Default, device)
}

/// Times every part on `device` (without autodiff; the parts that need it add it) and prints
/// one line a part, `part NAME MS ms`, then their sum beside the whole step (`step`, ms). With
/// `micro_batches` above 1, `shapes` are one micro-batch's and every part but the optimizer is
/// counted that many times (what the step runs), and the lines say so.
pub fn report(
    shapes: &Shapes,
    device: &Device,
    runs: usize,
    step: Option<f64>,
    micro_batches: usize,
) {
    let autodiff = device.clone().autodiff();
    let inputs: Vec<_> = shapes
        .convs
        .iter()
        .map(|conv| {
            (
                random(conv.input, device),
                random(conv.weight(), device),
                random([conv.out_channels], device),
                random(conv.output(), device),
            )
        })
        .collect();
    let mut parts = Vec::new();

    parts.push((
        "conv-forward",
        time(device, runs, || {
            inputs
                .iter()
                .zip(&shapes.convs)
                .map(|((x, w, b, _), conv)| {
                    conv2d(x.clone(), w.clone(), Some(b.clone()), conv.options())
                })
                .collect::<Vec<_>>()
        }),
    ));
    // The first layer's input is the images, which take no gradient.
    parts.push((
        "conv-input-grad",
        time(device, runs, || {
            inputs
                .iter()
                .zip(&shapes.convs)
                .skip(1)
                .map(|((x, w, _, dy), conv)| {
                    Tensor::<4>::from_dispatch(
                        <Dispatch as ModuleOps<Dispatch>>::conv2d_x_backward(
                            x.clone().into_dispatch(),
                            w.clone().into_dispatch(),
                            dy.clone().into_dispatch(),
                            conv.options(),
                        ),
                    )
                })
                .collect::<Vec<_>>()
        }),
    ));
    parts.push((
        "conv-weight-grad",
        time(device, runs, || {
            inputs
                .iter()
                .zip(&shapes.convs)
                .map(|((x, w, b, dy), conv)| {
                    let dw = <Dispatch as ModuleOps<Dispatch>>::conv2d_weight_backward(
                        x.clone().into_dispatch(),
                        w.clone().into_dispatch(),
                        dy.clone().into_dispatch(),
                        conv.options(),
                    );
                    let db = <Dispatch as ModuleOps<Dispatch>>::conv2d_bias_backward(
                        x.clone().into_dispatch(),
                        b.clone().into_dispatch(),
                        dy.clone().into_dispatch(),
                    );
                    (
                        Tensor::<4>::from_dispatch(dw),
                        Tensor::<1>::from_dispatch(db),
                    )
                })
                .collect::<Vec<_>>()
        }),
    ));

    // Every convolution but the classifier is followed by batch norm and ReLU.
    let blocks = &shapes.convs[..shapes.convs.len() - 1];
    let norms: Vec<(BatchNorm, Tensor<4>)> = blocks
        .iter()
        .map(|conv| {
            let x = Tensor::from_data(random(conv.output(), device).into_data(), &autodiff);
            (BatchNormConfig::new(conv.out_channels).init(&autodiff), x)
        })
        .collect();
    parts.push((
        "batch-norm-relu",
        time(device, runs, || {
            norms
                .iter()
                .map(|(norm, x)| {
                    let x = x.clone().require_grad();
                    let grads = relu(norm.forward(x.clone())).sum().backward();
                    x.grad(&grads)
                })
                .collect::<Vec<_>>()
        }),
    ));

    let pool = MaxPoolOptions::new([2, 2]).with_ceil_mode(true);
    let unpool = MaxUnpoolOptions::from_pool(&pool);
    let pooled: Vec<Tensor<4>> = shapes
        .pools
        .iter()
        .map(|&shape| Tensor::from_data(random(shape, device).into_data(), &autodiff))
        .collect();
    parts.push((
        "pools-unpools",
        time(device, runs, || {
            pooled
                .iter()
                .map(|x| {
                    let x = x.clone().require_grad();
                    let (values, indices) = max_pool2d_with_indices(x.clone(), pool.clone());
                    let grads = max_unpool2d(values, indices, unpool.clone())
                        .sum()
                        .backward();
                    x.grad(&grads)
                })
                .collect::<Vec<_>>()
        }),
    ));

    let logits = Tensor::<4>::from_data(random(shapes.logits, device).into_data(), &autodiff);
    let [b, _, h, w] = shapes.logits;
    let targets = Tensor::<3, Int>::random(
        [b, h, w],
        Distribution::Uniform(0.0, CLASSES as f64),
        &autodiff,
    );
    let weights = vec![1.0; CLASSES];
    parts.push((
        "loss",
        time(device, runs, || {
            let logits = logits.clone().require_grad();
            let grads = segmentation_loss(logits.clone(), targets.clone(), &weights).backward();
            logits.grad(&grads)
        }),
    ));

    // Adam over the whole network with one step's gradients, computed (untimed) before each run.
    let mut net = shapes.config.init(&autodiff);
    let mut optimizer = AdamConfig::new().init();
    let images = random([b, 3, h, w], &autodiff);
    let mut times: Vec<f64> = (0..=runs)
        .map(|_| {
            let (scores, _) = net.forward_with(images.clone(), Default::default());
            let loss = segmentation_loss(scores, targets.clone(), &weights);
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            device.sync().expect("the device syncs");
            let start = Instant::now();
            net = optimizer.step(1e-3, net.clone(), grads);
            device.sync().expect("the device syncs");
            start.elapsed().as_secs_f64() * 1e3
        })
        .skip(1)
        .collect();
    times.sort_by(f64::total_cmp);
    for (_, ms) in &mut parts {
        *ms *= micro_batches as f64;
    }
    parts.push(("optimizer", times[times.len() / 2]));

    let sum: f64 = parts.iter().map(|(_, ms)| ms).sum();
    println!(
        "parts of one step ({} parameters), median of {runs} runs each, one device sync per run{}:",
        net.num_params(),
        if micro_batches > 1 {
            format!(
                "; each part but the optimizer timed at one micro-batch of {} images and counted \
                 {micro_batches} times",
                shapes.logits[0]
            )
        } else {
            String::new()
        }
    );
    for (name, ms) in &parts {
        println!(
            "part {name:<17} {ms:>10.3} ms ({:>4.1}% of the parts)",
            100.0 * ms / sum
        );
    }
    println!("part {:<17} {sum:>10.3} ms", "sum");
    if let Some(step) = step {
        println!(
            "part {:<17} {:>10.3} ms (the whole step, pool indices, less the parts' sum)",
            "rest",
            step - sum
        );
    }
}
