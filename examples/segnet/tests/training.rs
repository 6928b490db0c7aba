//! Training on a tiny config: steps lower the loss, checkpoints resume, saved models reload and
//! predict identically.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::tensor::{Device, Distribution, Tensor};
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
    for _ in 0..15 {
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

    let first = run::train(&tiny_config(), &artifacts, &device, false).unwrap();
    assert_eq!(artifacts.last_checkpoint(), Some(1));

    // Resume for a second epoch from the first one's checkpoint.
    let second = run::train(&tiny_config().with_epochs(2), &artifacts, &device, true).unwrap();
    assert_eq!(artifacts.last_checkpoint(), Some(2));
    let done = run::train(&tiny_config().with_epochs(2), &artifacts, &device, true).unwrap_err();
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
