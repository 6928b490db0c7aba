//! Train, evaluate and predict: what the command line runs.

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use burn::config::Config;
use burn::data::dataloader::DataLoaderBuilder;
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::tensor::{Device, Tensor, TensorData};
use burn::train::metric::LossMetric;
use burn::train::{
    ExecutionStrategy, Learner, MultiDeviceOptim, SupervisedTraining, TrainingStrategy,
};
use image::{GrayImage, RgbImage};

use crate::data::{
    ClassInfo, SegmentationBatcher, Split, class_frequencies, image_values,
    median_frequency_weights,
};
use crate::experiment::{Artifacts, ClassWeighting, ExperimentConfig, SplitData};
use crate::fit;
use crate::model::SegNet;
use crate::render;
use crate::training::{
    ConfusionMatrix, EpochRenderer, MeanIouMetric, PixelAccuracyMetric, Segmenter,
};

/// Boxed errors: every failure here ends the command with its message.
pub type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Trains `config` on `devices`, saving the config, per-epoch checkpoints and the final weights
/// under `artifacts`. With `resume`, continues from the last complete checkpoint there.
///
/// With several devices, burn-train's multi-device strategy runs each step's batches on them in
/// parallel and sums the gradients on the first device, which holds the model and validates.
pub fn train(
    config: &ExperimentConfig,
    artifacts: &Artifacts,
    devices: &[Device],
    resume: bool,
) -> Result<SegNet> {
    let device = devices.first().ok_or("train: no device given")?;
    let train = config.data.split(Split::Train)?;
    let valid = config.data.split(Split::Valid)?;
    // Before anything is written: a step that cannot run leaves the run's folder as it was.
    let micro_batch = micro_batch(config, &train, devices)?;
    std::fs::create_dir_all(artifacts.dir())?;
    config.save(artifacts.config())?;
    device.seed(config.seed);

    let classes = config.data.classes();
    let weights = match config.class_weighting.resolve(&config.data) {
        ClassWeighting::MedianFrequency => {
            let items = (0..train.len())
                .map(|i| train.get(i))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let weights = median_frequency_weights(&class_frequencies(&items, classes.len()));
            let shown: Vec<String> = classes
                .iter()
                .zip(&weights)
                .map(|(c, w)| format!("{} {w:.2}", c.name))
                .collect();
            println!(
                "class weights (median frequency balancing): {}",
                shown.join(", ")
            );
            weights
        }
        ClassWeighting::None | ClassWeighting::Auto => {
            println!("class weights: none (every labelled pixel counts the same)");
            vec![1.0; classes.len()]
        }
    };

    // Parameters live on the autodiff form of the device; validation runs on the plain one.
    let net = config.model.init(&device.clone().autodiff());
    println!(
        "{} (width {}, {} parameters), {} training and {} validation images, batch {}, {} epochs",
        config.model.architecture,
        config.model.width,
        net.num_params(),
        train.len(),
        valid.len(),
        config.batch_size,
        config.epochs
    );
    let steps = config.epochs * train.len().div_ceil(config.batch_size);
    let loader_train = DataLoaderBuilder::new(SegmentationBatcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.workers)
        .set_device(device.clone())
        .build(train);
    let loader_valid = DataLoaderBuilder::new(SegmentationBatcher)
        .batch_size(config.batch_size)
        .num_workers(config.workers)
        .set_device(device.clone())
        .build(valid);

    let scheduler = CosineAnnealingLrSchedulerConfig::new(config.learning_rate, steps.max(1))
        .with_min_lr(config.learning_rate * 0.01)
        .init()?;
    let learner = Learner::new(
        Segmenter::new(net, weights).with_micro_batch(micro_batch),
        AdamConfig::new().init(),
        scheduler,
    );
    let k = classes.len();
    let mut training = SupervisedTraining::new(artifacts.dir(), loader_train, loader_valid)
        .metric_train_numeric(LossMetric::new())
        .metric_valid_numeric(LossMetric::new())
        .metric_train_numeric(PixelAccuracyMetric::new(k))
        .metric_valid_numeric(PixelAccuracyMetric::new(k))
        .metric_train_numeric(MeanIouMetric::new(k))
        .metric_valid_numeric(MeanIouMetric::new(k))
        .with_default_checkpointers()
        .renderer(Box::new(EpochRenderer::default()))
        .num_epochs(config.epochs);
    if devices.len() > 1 {
        let names: Vec<String> = devices.iter().map(|d| format!("{d:?}")).collect();
        println!(
            "training on {} devices (burn-train multi-device, gradients summed on the first): {}",
            devices.len(),
            names.join(", ")
        );
        training = training.with_training_strategy(TrainingStrategy::Default(
            ExecutionStrategy::multi(devices.to_vec(), MultiDeviceOptim::OptimMainDevice),
        ));
    }
    if resume {
        match artifacts.last_checkpoint() {
            Some(epoch) if epoch >= config.epochs => {
                return Err(format!("{} already holds the checkpoint of the last epoch ({epoch}); nothing to resume", artifacts.dir().display()).into());
            }
            Some(epoch) => {
                println!(
                    "resuming after epoch {epoch} from {}",
                    artifacts.checkpoints().display()
                );
                training = training.checkpoint(epoch);
            }
            None => println!(
                "no checkpoint in {}: starting from scratch",
                artifacts.checkpoints().display()
            ),
        }
    }

    let result = training.launch(learner);
    if let Some(error) = result.error {
        return Err(format!("training stopped: {error}").into());
    }
    let net = result.model.net;
    net.clone().save_file(artifacts.model())?;
    println!("saved {}", artifacts.model().display());
    let plot = artifacts.dir().join("training.png");
    crate::plot::draw(&crate::plot::history(artifacts.dir(), config.epochs), &plot)?;
    println!(
        "wrote {} (loss, pixel accuracy and mean IoU per epoch)",
        plot.display()
    );
    Ok(net)
}

/// The micro-batch the training steps take their gradients in (`None`: the whole batch), decided
/// before the first step: the one asked for, or on a GPU where the batch's tuned convolution
/// gradients do not fit, the fewest micro-batches that do (said once, with the cause).
///
/// # Errors
/// Where the asked micro-batch does not fit a device, or not even one image does.
fn micro_batch(
    config: &ExperimentConfig,
    train: &SplitData,
    devices: &[Device],
) -> Result<Option<usize>> {
    let (width, height) = train.get(0)?.image.dimensions();
    let size = [height as usize, width as usize];
    // The tightest limits among the devices, each taken alone: each device takes whole batches.
    let limits = devices
        .iter()
        .filter_map(fit::DeviceLimits::of)
        .reduce(|a, b| fit::DeviceLimits {
            largest_allocation: a.largest_allocation.min(b.largest_allocation),
            plane_size: a.plane_size.min(b.plane_size),
        });
    let plan = fit::plan_step(
        &config.model,
        size,
        config.batch_size,
        FLOAT_BYTES,
        limits,
        config.micro_batch,
    )
    .map_err(|e| format!("the training step does not fit the device: {e}"))?;
    if let Some(announcement) = plan.announcement() {
        println!("{announcement}");
    }
    Ok((plan.micro_batch < plan.batch).then_some(plan.micro_batch))
}

/// Bytes of the float the example trains in (f32, the devices' default).
const FLOAT_BYTES: u64 = 4;

/// Loads a trained run's config and network onto `device`.
pub fn load(artifacts: &Artifacts, device: &Device) -> Result<(ExperimentConfig, SegNet)> {
    let config = ExperimentConfig::load(artifacts.config()).map_err(|e| {
        format!(
            "cannot read {}: {e} (train first)",
            artifacts.config().display()
        )
    })?;
    let net = config
        .model
        .init(device)
        .try_load_file(artifacts.model())
        .map_err(|e| format!("cannot load {}: {e:?}", artifacts.model().display()))?;
    Ok((config, net))
}

/// The most likely class of every pixel of `images` (all of one size).
pub fn segment(net: &SegNet, images: &[&RgbImage], device: &Device) -> Vec<GrayImage> {
    let (w, h) = images[0].dimensions();
    let values: Vec<f32> = images
        .iter()
        .flat_map(|image| image_values(image))
        .collect();
    let batch = Tensor::<4>::from_data(
        TensorData::new(values, [images.len(), 3, h as usize, w as usize]),
        device,
    );
    let classes = net.forward(batch).argmax(1).into_data().convert::<u8>();
    let classes = classes.as_slice::<u8>().expect("u8 after convert");
    let plane = (w * h) as usize;
    (0..images.len())
        .map(|i| {
            GrayImage::from_raw(w, h, classes[i * plane..(i + 1) * plane].to_vec())
                .expect("w x h labels")
        })
        .collect()
}

/// The confusion matrix of `net` over `data`, with a progress bar on a terminal.
pub fn evaluate(
    net: &SegNet,
    data: &SplitData,
    num_classes: usize,
    batch_size: usize,
    device: &Device,
) -> Result<ConfusionMatrix> {
    let net = net.valid();
    let bar = indicatif::ProgressBar::new(data.len() as u64);
    let mut matrix = ConfusionMatrix::new(num_classes);
    for start in (0..data.len()).step_by(batch_size) {
        let items = (start..(start + batch_size).min(data.len()))
            .map(|i| data.get(i))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let images: Vec<&RgbImage> = items.iter().map(|item| &item.image).collect();
        for (item, predicted) in items.iter().zip(segment(&net, &images, device)) {
            matrix.add(predicted.as_raw(), item.labels.as_raw());
        }
        bar.inc(items.len() as u64);
    }
    bar.finish_and_clear();
    Ok(matrix)
}

/// Prints pixel accuracy, mean IoU and the IoU of every class.
pub fn report(matrix: &ConfusionMatrix, classes: &[ClassInfo], split: &str) {
    println!(
        "{split}: pixel accuracy {:.2} %, mean IoU {:.4} over {} labelled pixels",
        100.0 * matrix.pixel_accuracy(),
        matrix.mean_iou(),
        matrix.total()
    );
    let per_class: Vec<String> = classes
        .iter()
        .zip(matrix.iou())
        .map(|(c, iou)| {
            format!(
                "{} {}",
                c.name,
                iou.map_or("-".to_string(), |v| format!("{v:.3}"))
            )
        })
        .collect();
    println!("  IoU per class: {}", per_class.join(", "));
}

/// Writes `prediction-NNN.png` (input, ground truth, prediction) for the first `count` items of
/// `data` and an `overview.png` of up to four of them with the legend, into `out`.
pub fn predict_split(
    net: &SegNet,
    data: &SplitData,
    classes: &[ClassInfo],
    count: usize,
    out: &Path,
    device: &Device,
) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let net = net.valid();
    let mut panels = Vec::new();
    for i in 0..count.min(data.len()) {
        let item = data.get(i)?;
        let predicted = segment(&net, &[&item.image], device).remove(0);
        let panel = render::panel(&item.image, Some(&item.labels), &predicted, classes);
        render::sheet(std::slice::from_ref(&panel), classes)
            .save(out.join(format!("prediction-{i:03}.png")))?;
        panels.push(panel);
    }
    panels.truncate(4);
    render::sheet(&panels, classes).save(out.join("overview.png"))?;
    println!(
        "wrote {} predictions and overview.png to {}",
        count.min(data.len()),
        out.display()
    );
    Ok(())
}

/// Segments every PNG in `images` (no ground truth) into `out`.
pub fn predict_folder(
    net: &SegNet,
    images: &Path,
    classes: &[ClassInfo],
    out: &Path,
    device: &Device,
) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let net = net.valid();
    let mut paths: Vec<_> = std::fs::read_dir(images)
        .map_err(|e| format!("cannot read {}: {e}", images.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("png")))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no .png images in {}", images.display()).into());
    }
    for path in &paths {
        let image = image::open(path)
            .map_err(|e| format!("cannot decode {}: {e}", path.display()))?
            .to_rgb8();
        let predicted = segment(&net, &[&image], device).remove(0);
        let panel = render::panel(&image, None, &predicted, classes);
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        render::sheet(&[panel], classes).save(out.join(format!("{name}-prediction.png")))?;
    }
    println!("wrote {} predictions to {}", paths.len(), out.display());
    Ok(())
}

/// Seconds since `start`, for the closing summary.
pub fn elapsed(start: Instant) -> String {
    let s = start.elapsed().as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}
