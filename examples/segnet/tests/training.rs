//! Training on a tiny config: steps lower the loss, checkpoints resume, saved models reload and
//! predict identically.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::AdamConfig;
use burn::tensor::{Device, Distribution, Tensor, Tolerance};
use burn::train::Learner;
use segnet::data::{SYNTHETIC_CLASSES, SegmentationBatcher, Split, SyntheticScenes};
use segnet::experiment::{Artifacts, DataConfig, ExperimentConfig};
use segnet::model::{Architecture, SegNetConfig};
use segnet::run;
use segnet::training::Segmenter;

fn tiny_config() -> ExperimentConfig {
    let model = SegNetConfig::new(SYNTHETIC_CLASSES.len())
        .with_architecture(Architecture::SegNetBasic)
        .with_width(4);
    let data = DataConfig::new()
        .with_image_size(32)
        .with_scenes([16, 8, 8])
        .with_seed(5);
    ExperimentConfig::new(model, data)
        .with_epochs(1)
        .with_batch_size(8)
        .with_workers(0)
}

#[test]
fn a_few_steps_lower_the_loss() {
    let device = Device::flex().autodiff();
    device.seed(1);
    let scenes = SyntheticScenes::new(Split::Train, 8, 32, 3);
    let items = (0..8).map(|i| scenes.get(i).unwrap()).collect();
    let batch = SegmentationBatcher.batch(items, &device);

    let net = tiny_config().model.init(&device);
    let mut learner = Learner::new(
        Segmenter::new(net, vec![1.0; 5]),
        AdamConfig::new().init(),
        1e-2,
    );
    let loss = |learner: &Learner<Segmenter>| -> f32 {
        learner
            .model()
            .valid()
            .forward_segmentation(batch.clone())
            .loss
            .into_scalar()
    };
    let before = loss(&learner);
    // The device's generator is shared with the tests running beside this one, so the initial
    // weights vary; 30 steps bring the loss to 0.32-0.69 of its start over seeds 1 to 8.
    for _ in 0..30 {
        let output = learner.train_step(batch.clone());
        learner.lr_step();
        learner.optimizer_step(output.grads);
    }
    let after = loss(&learner);
    assert!(after < 0.9 * before, "loss went from {before} to {after}");
}

#[test]
fn training_checkpoints_resumes_and_the_saved_model_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = Artifacts::new(dir.path());
    let device = Device::flex();

    let first = run::train(
        &tiny_config(),
        &artifacts,
        std::slice::from_ref(&device),
        false,
    )
    .unwrap();
    assert_eq!(artifacts.last_checkpoint(), Some(1));

    // Resume for a second epoch from the first one's checkpoint.
    let second = run::train(
        &tiny_config().with_epochs(2),
        &artifacts,
        std::slice::from_ref(&device),
        true,
    )
    .unwrap();
    assert_eq!(artifacts.last_checkpoint(), Some(2));
    let done = run::train(
        &tiny_config().with_epochs(2),
        &artifacts,
        std::slice::from_ref(&device),
        true,
    )
    .unwrap_err();
    assert!(done.to_string().contains("nothing to resume"), "{done}");

    // The saved weights reload into a freshly initialised network and predict identically.
    let (config, reloaded) = run::load(&artifacts, &device).unwrap();
    assert_eq!(config.epochs, 2);
    let images = Tensor::<4>::random([2, 3, 32, 32], Distribution::Default, &device);
    let expected = second.forward(images.clone()).into_data();
    reloaded
        .forward(images.clone())
        .into_data()
        .assert_eq(&expected, true);
    // The resumed epoch did train: the first epoch's network predicts otherwise.
    assert_ne!(first.forward(images).into_data(), expected);

    // Prediction images: one per scene and an overview with up to four rows and the legend.
    let test = config.data.split(Split::Test).unwrap();
    run::predict_split(
        &reloaded,
        &test,
        &SYNTHETIC_CLASSES,
        5,
        &artifacts.predictions(),
        &device,
    )
    .unwrap();
    for i in 0..5 {
        assert!(
            artifacts
                .predictions()
                .join(format!("prediction-{i:03}.png"))
                .is_file()
        );
    }
    let overview = image::open(artifacts.predictions().join("overview.png")).unwrap();
    let row = image::open(artifacts.predictions().join("prediction-000.png")).unwrap();
    assert_eq!(overview.width(), row.width());
    assert!(
        overview.height() > 3 * row.height(),
        "four rows and a legend"
    );
}

/// burn-train's multi-device strategy on two CPU devices (Flex and NdArray; Burn has one device of
/// each CPU backend, and Burn 0.23 no NdArray).
#[cfg(not(burn_next))]
#[test]
#[allow(deprecated)] // Device::ndarray: deprecated in Burn 0.22, still shipped
fn training_on_two_devices_lowers_the_loss() {
    trains_on_devices(&[Device::flex(), Device::ndarray()], None);
}

/// Steps whose gradients are taken two images at a time (batch 4) and summed.
#[test]
fn training_in_micro_batches_lowers_the_loss() {
    trains_on_devices(&[Device::flex()], Some(2));
}

/// The same with the main device on the GPU (lavapipe in CI): the CubeCL unpooling, its autodiff
/// and the pool indices under burn-train's strategy, gradients moved between GPU and CPU.
#[cfg(feature = "wgpu")]
#[test]
fn training_on_a_gpu_and_a_cpu_lowers_the_loss() {
    trains_on_devices(
        &[
            Device::wgpu(burn::tensor::DeviceKind::default()),
            Device::flex(),
        ],
        None,
    );
}

/// Three epochs on `devices`, in micro-batches of `micro_batch` images where given: the loss goes
/// down, the run draws its picture, and the model it returns (the main device's) is the same
/// numbers on every device after a transfer.
fn trains_on_devices(devices: &[Device], micro_batch: Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = Artifacts::new(dir.path());
    let config = tiny_config()
        .with_epochs(3)
        .with_batch_size(4)
        .with_micro_batch(micro_batch);
    let net = run::train(&config, &artifacts, devices, false).unwrap();
    let (first, last) = (mean_loss(dir.path(), 1), mean_loss(dir.path(), 3));
    println!("{devices:?}: mean training loss: epoch 1 {first:.4}, epoch 3 {last:.4}");
    assert!(
        last < first,
        "mean training loss went from {first} to {last}"
    );

    // The picture of the run: three panels (loss, pixel accuracy, mean IoU), train and valid.
    let plot = image::open(dir.path().join("training.png")).unwrap();
    assert_eq!((plot.width(), plot.height()), (1080, 280));
    let history = segnet::plot::history(dir.path(), 3);
    assert_eq!(history.len(), 6);
    assert!(
        history.iter().all(|s| s.values.iter().all(Option::is_some)),
        "{history:?}"
    );

    // The replicas agree: the trained weights, on either device, are the same numbers.
    let weights = |device: &Device| {
        let mut visitor = Weights(Vec::new());
        net.clone().fork(device).visit(&mut visitor);
        visitor.0
    };
    let main = weights(&devices[0]);
    assert!(!main.is_empty());
    for device in &devices[1..] {
        assert_eq!(main, weights(device), "{device:?}");
    }
    // And they compute the same function there (each backend's own convolutions and unpooling):
    // the same images give the same logits up to float rounding.
    let images = Tensor::<4>::random([2, 3, 32, 32], Distribution::Default, &devices[0]);
    let expected = net.forward(images.clone()).into_data();
    for device in &devices[1..] {
        net.clone()
            .fork(device)
            .forward(images.clone().to_device(device))
            .into_data()
            .assert_approx_eq::<f32>(&expected, Tolerance::absolute(1e-4));
    }
}

/// The mean training loss of `epoch` in the run under `dir`: burn-train's log has a line
/// `loss,count` per step, then the epoch's mean as `mean,final`.
fn mean_loss(dir: &std::path::Path, epoch: usize) -> f64 {
    let path = dir
        .join("train")
        .join(format!("epoch-{epoch}"))
        .join("Loss.log");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .find_map(|line| line.strip_suffix(",final")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{path:?} has no final line:\n{text}"))
}

/// On a GPU, a batch whose tuned convolution gradients would make Burn panic trains through the
/// example in micro-batches that fit, and says so; asked to take the whole batch at once, the
/// example refuses before the first step. On lavapipe (128 MiB) that is SegNet-Basic width 1 on
/// 4 images of 360 x 480: a 49 x 691200 f32 column matrix, 135475200 bytes (the same
/// convolution's gradient alone panics in `burn-unpool-tools`' device-thread test).
#[cfg(feature = "wgpu")]
#[test]
fn a_step_past_the_device_trains_in_micro_batches_through_the_example() {
    let device = Device::wgpu(burn::tensor::DeviceKind::default());
    let limit = segnet::fit::DeviceLimits::of(&device)
        .expect("a GPU's limits")
        .largest_allocation;
    // The narrowest width whose 7x7 column matrix over 4 x 360 x 480 passes the limit.
    let width = (limit + 1).div_ceil(49 * 4 * 360 * 480 * 4).to_string();
    let segnet = |dir: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "train",
            "--device",
            "wgpu",
            "--width",
            &width,
            "--size",
            "360x480",
            "--batch-size",
            "4",
            "--scenes",
            "8",
            "4",
            "4",
            "--epochs",
            "2",
            "--predictions",
            "1",
            "--artifacts",
        ];
        args.push(dir.to_str().unwrap());
        args.extend(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_segnet"))
            .args(&args)
            .output()
            .unwrap()
    };

    let dir = tempfile::tempdir().unwrap();
    let refused = segnet(dir.path(), &["--micro-batch", "4"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    for part in [
        "does not fit",
        "--micro-batch 3",
        &format!("({limit} bytes)"),
    ] {
        assert!(stderr.contains(part), "{part:?} not in {stderr}");
    }
    assert!(
        !dir.path().join("config.json").exists() && !dir.path().join("train").exists(),
        "refused before anything is written"
    );

    let trained = segnet(dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&trained.stdout);
    let stderr = String::from_utf8_lossy(&trained.stderr);
    assert!(trained.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("micro-batches of 2 images, their gradients summed into each step of 4"),
        "{stdout}"
    );
    let (first, last) = (mean_loss(dir.path(), 1), mean_loss(dir.path(), 2));
    println!(
        "width {width}, 360 x 480, batch 4 in micro-batches of 2: mean training loss {first:.4}, then {last:.4}"
    );
    assert!(
        last < first,
        "mean training loss went from {first} to {last}"
    );
}

/// Every float parameter's values, in visiting order.
struct Weights(Vec<Vec<f32>>);

impl ModuleVisitor for Weights {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().into_data().convert::<f32>();
        self.0.push(data.try_to_vec::<f32>().expect("f32 weights"));
    }
}
