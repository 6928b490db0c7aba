//! SegNet-Basic in a web page: the network `examples/segnet` trained, loaded from its own files
//! (`config.json` and the burnpack `model.bpk`), segments the example's generated scenes, or an
//! image the user gives, on the browser's WebGPU or on the CPU (Flex).
//!
//! What runs is the same on every target: [`Segmenter`] loads the run and makes its scenes,
//! [`Segmenter::logits`] runs the network on a scene or on any image (a canvas's pixels through
//! [`rgb`]), [`Prediction`] reads the class scores. The page's bindings ([`web`], called only in
//! the WebAssembly module) read the scores back asynchronously, as a browser requires; the
//! `segment` binary does the same natively, for the page's check against the native model.
//!
//! ```
//! use burn::module::Module;
//! use burn::tensor::Device;
//! use segnet::model::SegNetConfig;
//! use segnet_web::{Prediction, Segmenter};
//!
//! // A run's files, here from an untrained network: what `segnet train` writes.
//! let device = Device::flex();
//! let model = SegNetConfig::new(5).with_width(4);
//! let weights = model.init(&device).into_record().into_bytes()?;
//! let config = serde_json::json!({"model": model, "data": {"image_size": 32, "seed": 7}});
//!
//! let segmenter = Segmenter::load(&config.to_string(), weights.to_vec(), &device)?;
//! let scene = segmenter.scene(0);
//! let scores = segmenter.logits(&scene.image).into_data().try_to_vec::<f32>()?;
//! let prediction = Prediction::new(&scores, segmenter.num_classes(), &scene.labels);
//! assert_eq!(prediction.classes.len(), 32 * 32);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::{Bytes, Device, Tensor, TensorData};
use image::RgbImage;
use segnet::data::{
    IGNORE, SYNTHETIC_CLASSES, SegmentationItem, Split, SyntheticScenes, image_values,
};
use segnet::model::{SegNet, SegNetConfig};
use serde::Deserialize;

mod prediction;
pub mod web;

pub use prediction::Prediction;

/// The parts of a training run's `config.json` (`segnet::experiment::ExperimentConfig`) the page
/// needs: the network, and the scenes it was trained on.
#[derive(Deserialize)]
struct RunConfig {
    model: SegNetConfig,
    data: SceneConfig,
}

/// The synthetic scenes of a run (the fields of `segnet::experiment::DataConfig` that make them).
#[derive(Deserialize)]
struct SceneConfig {
    image_size: usize,
    #[serde(default)]
    image_width: Option<usize>,
    seed: u64,
}

/// A trained network on a device, with the scenes of the run that trained it.
pub struct Segmenter {
    net: SegNet,
    config: SegNetConfig,
    scenes: SyntheticScenes,
    device: Device,
}

impl Segmenter {
    /// The network of a training run: `config` is the run's `config.json`, `weights` its
    /// `model.bpk` (Burn's burnpack, as `Module::save_file` wrote it).
    pub fn load(config: &str, weights: Vec<u8>, device: &Device) -> Result<Self, String> {
        let run: RunConfig =
            serde_json::from_str(config).map_err(|e| format!("the run's config.json: {e}"))?;
        if run.model.num_classes != SYNTHETIC_CLASSES.len() {
            return Err(format!(
                "the run's network has {} classes; the synthetic scenes have {} (a CamVid run \
                 cannot segment them)",
                run.model.num_classes,
                SYNTHETIC_CLASSES.len()
            ));
        }
        let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(weights))
            .map_err(|e| format!("the run's model.bpk: {e:?}"))?;
        let net = run
            .model
            .init(device)
            .try_load_record(record)
            .map_err(|e| format!("the run's model.bpk does not fit its config.json: {e:?}"))?;
        let size = [
            run.data.image_size,
            run.data.image_width.unwrap_or(run.data.image_size),
        ];
        Ok(Self {
            net,
            config: run.model,
            scenes: SyntheticScenes::with_size(Split::Test, usize::MAX, size, run.data.seed),
            device: device.clone(),
        })
    }

    /// Held-out scene `index` of the run (its test split: scenes it did not train on).
    pub fn scene(&self, index: usize) -> SegmentationItem {
        self.scenes.scene(index)
    }

    /// `[height, width]` of the scenes the network was trained on: the size an image of a user's
    /// is best scaled to (the network takes any size, but learnt its scenes' scale).
    pub fn size(&self) -> [usize; 2] {
        self.scenes.size()
    }

    /// Classes the network tells apart.
    pub fn num_classes(&self) -> usize {
        self.config.num_classes
    }

    /// Class scores `[1, classes, height, width]` of `image`, still on the device.
    pub fn logits(&self, image: &RgbImage) -> Tensor<4> {
        let (w, h) = image.dimensions();
        let values = TensorData::new(image_values(image), [1, 3, h as usize, w as usize]);
        self.net.forward(Tensor::from_data(values, &self.device))
    }
}

/// Class indices (row-major) in the classes' colours, RGBA; unlabelled pixels transparent.
pub fn class_colours(classes: &[u8]) -> Vec<u8> {
    classes
        .iter()
        .flat_map(|&class| match SYNTHETIC_CLASSES.get(usize::from(class)) {
            Some(info) if class != IGNORE => [info.color[0], info.color[1], info.color[2], 255],
            _ => [0, 0, 0, 0],
        })
        .collect()
}

/// `image` as RGBA, the layout a canvas takes.
pub fn rgba(image: &RgbImage) -> Vec<u8> {
    image
        .as_raw()
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect()
}

/// An RGBA image (a canvas's pixels) as RGB, its alpha dropped.
///
/// # Errors
/// Where `rgba` is not `width * height` pixels of four bytes, or the image has no pixel.
pub fn rgb(rgba: Vec<u8>, width: u32, height: u32) -> Result<RgbImage, String> {
    let pixels = width as usize * height as usize;
    if pixels == 0 {
        return Err(format!(
            "an image of {width} x {height} pixels has no pixel to segment"
        ));
    }
    if rgba.len() != 4 * pixels {
        return Err(format!(
            "an image of {width} x {height} pixels takes {} RGBA bytes, not {}",
            4 * pixels,
            rgba.len()
        ));
    }
    let rgb = rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    Ok(RgbImage::from_raw(width, height, rgb).expect("3 bytes a pixel"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(width: usize, classes: usize) -> Vec<u8> {
        let device = Device::flex();
        let net = SegNetConfig::new(classes).with_width(width).init(&device);
        net.into_record().into_bytes().unwrap().to_vec()
    }

    fn config(width: usize, classes: usize) -> String {
        let model = SegNetConfig::new(classes).with_width(width);
        serde_json::json!({"model": model, "data": {"image_size": 32, "seed": 7}}).to_string()
    }

    #[test]
    fn weights_of_another_width_are_refused() {
        let error = Segmenter::load(&config(8, 5), weights(4, 5), &Device::flex())
            .err()
            .expect("a refusal");
        assert!(error.contains("does not fit its config.json"), "{error}");
    }

    #[test]
    fn a_network_of_other_classes_is_refused() {
        let error = Segmenter::load(&config(4, 11), weights(4, 11), &Device::flex())
            .err()
            .expect("a refusal");
        assert!(
            error.contains("11 classes; the synthetic scenes have 5"),
            "{error}"
        );
    }

    #[test]
    fn rgba_and_rgb_are_each_others_inverse_but_for_alpha() {
        let image = RgbImage::from_fn(3, 2, |x, y| image::Rgb([x as u8, y as u8, 200]));
        let rgba = rgba(&image);
        assert_eq!(&rgba[..8], [0, 0, 200, 255, 1, 0, 200, 255]);
        assert_eq!(rgb(rgba, 3, 2).unwrap(), image);
        let error = rgb(vec![0; 20], 3, 2).unwrap_err();
        assert_eq!(
            error,
            "an image of 3 x 2 pixels takes 24 RGBA bytes, not 20"
        );
        assert_eq!(
            rgb(Vec::new(), 0, 5).unwrap_err(),
            "an image of 0 x 5 pixels has no pixel to segment"
        );
    }

    #[test]
    fn the_scenes_are_the_runs_held_out_scenes() {
        let segmenter = Segmenter::load(&config(4, 5), weights(4, 5), &Device::flex()).unwrap();
        let run = SyntheticScenes::new(Split::Test, 10, 32, 7).scene(3);
        assert_eq!(segmenter.scene(3).image, run.image);
        assert_eq!(segmenter.scene(3).labels, run.labels);
        assert_eq!(segmenter.size(), [32, 32]);
    }
}
