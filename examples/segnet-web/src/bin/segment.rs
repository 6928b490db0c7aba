//! `segment`: what the page computes, natively on Flex, as JSON: the page's check
//! (`check.py`) compares the browser's scores and classes with these.

use std::path::PathBuf;
use std::process::ExitCode;

use burn::tensor::Device;
use clap::Parser;
use segnet_web::{Prediction, Segmenter};

#[derive(Parser)]
#[command(about = "Segment a held-out scene natively on Flex with the page's weights; print JSON")]
struct Cli {
    /// The training run's folder: config.json and model.bpk.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/weights"))]
    weights: PathBuf,
    /// Held-out scene to segment.
    #[arg(long, default_value_t = 0)]
    scene: usize,
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
    let scene = segmenter.scene(cli.scene);
    let scores = segmenter
        .logits(&scene.image)
        .into_data()
        .try_to_vec::<f32>()
        .map_err(|e| format!("{e:?}"))?;
    let prediction = Prediction::new(&scores, segmenter.num_classes(), &scene.labels);
    Ok(serde_json::json!({
        "scene": cli.scene,
        "width": scene.image.width(),
        "height": scene.image.height(),
        "pixel_accuracy": prediction.pixel_accuracy,
        "classes": prediction.classes,
        "scores": scores,
    })
    .to_string())
}
