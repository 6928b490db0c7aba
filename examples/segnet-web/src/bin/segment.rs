//! `segment`: what the page computes, natively on Flex, as JSON: the page's check
//! (`check.py`) compares the browser's scores and classes with these.

use std::path::PathBuf;
use std::process::ExitCode;

use burn::tensor::Device;
use clap::Parser;
use segnet_web::{Prediction, Segmenter};

#[derive(Parser)]
#[command(
    about = "Segment a held-out scene, or an image, natively on Flex with the page's weights; \
             print JSON"
)]
struct Cli {
    /// The training run's folder: config.json and model.bpk.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/weights"))]
    weights: PathBuf,
    /// Held-out scene to segment.
    #[arg(long, default_value_t = 0, conflicts_with = "image")]
    scene: usize,
    /// Also write the scene's image to this file (PNG or JPEG, by its extension), as a user would
    /// give it to the page.
    #[arg(long, value_name = "PATH", conflicts_with = "image")]
    save_scene: Option<PathBuf>,
    /// Segment this image (PNG or JPEG) instead of a scene, read as the page reads it (alpha
    /// dropped, scaled to the scenes' size unless it is that size); it has no true classes, so
    /// `pixel_accuracy` is null.
    #[arg(long, value_name = "PATH")]
    image: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<String, String> {
    let read = |name: &str| {
        let path = cli.weights.join(name);
        std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let config = String::from_utf8(read("config.json")?).map_err(|e| e.to_string())?;
    let segmenter = Segmenter::load(&config, read("model.bpk")?, &Device::flex())?;
    let (image, labels) = match &cli.image {
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| format!("cannot read the image {}: {e}", path.display()))?;
            let image = segmenter
                .image(&bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            (image, None)
        }
        None => {
            let scene = segmenter.scene(cli.scene)?;
            if let Some(path) = &cli.save_scene {
                scene
                    .image
                    .save(path)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            (scene.image, Some(scene.labels))
        }
    };
    let scores = segmenter
        .logits(&image)
        .into_data()
        .try_to_vec::<f32>()
        .map_err(|e| format!("{e:?}"))?;
    let (width, height) = image.dimensions();
    let classes = segmenter.num_classes();
    let prediction = match &labels {
        Some(labels) => Prediction::new(&scores, classes, labels),
        None => Prediction::unlabelled(&scores, classes, width, height),
    };
    Ok(serde_json::json!({
        "scene": cli.image.is_none().then_some(cli.scene),
        "width": width,
        "height": height,
        "pixel_accuracy": prediction.pixel_accuracy,
        "classes": prediction.classes,
        "scores": scores,
    })
    .to_string())
}
