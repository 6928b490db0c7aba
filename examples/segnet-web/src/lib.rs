//! SegNet-Basic in a web page: the network `examples/segnet` trained, loaded from its own files
//! (`config.json` and the burnpack `model.bpk`), segments the example's generated scenes, or an
//! image the user gives, on the browser's WebGPU or on the CPU (Flex).
//!
//! What runs is the same on every target: [`Segmenter`] loads the run and makes its scenes,
//! [`Segmenter::image`] reads an image file's bytes by one rule (the page and the `segment`
//! binary both call it), [`Segmenter::logits`] runs the network on a scene or an image,
//! [`Prediction`] reads the class scores. The page's bindings ([`web`], called only in
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
//! let data = serde_json::json!({"image_size": 32, "scenes": [16, 4, 10], "seed": 7});
//! let config = serde_json::json!({"model": model, "data": data});
//!
//! let segmenter = Segmenter::load(&config.to_string(), weights.to_vec(), &device)?;
//! let scene = segmenter.scene(segmenter.scene_number("3")?)?;
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

mod image_file;
mod prediction;
pub mod web;

pub use image_file::decode;
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
    /// Scenes per split: train, validation, held-out test.
    scenes: [usize; 3],
    seed: u64,
}

/// A trained network on a device, with the scenes of the run that trained it.
pub struct Segmenter {
    net: SegNet,
    config: SegNetConfig,
    scenes: SyntheticScenes,
    held_out: usize,
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
            scenes: SyntheticScenes::with_size(
                Split::Test,
                run.data.scenes[2],
                size,
                run.data.seed,
            ),
            held_out: run.data.scenes[2],
            device: device.clone(),
        })
    }

    /// Held-out scene `index` of the run (its test split: scenes it did not train on).
    ///
    /// # Errors
    /// Where the run's test split has no scene `index`.
    pub fn scene(&self, index: usize) -> Result<SegmentationItem, String> {
        if index >= self.held_out {
            return Err(format!(
                "there is no held-out scene {index}: {}",
                self.numbered()
            ));
        }
        Ok(self.scenes.scene(index))
    }

    /// Scenes in the run's held-out test split, numbered from 0.
    pub fn held_out(&self) -> usize {
        self.held_out
    }

    /// The held-out scene a user's text names (a scene box, an address's `?scene=`): digits, with
    /// spaces around them, of a scene the split has.
    ///
    /// # Errors
    /// Where `text` is not a whole number of digits, or names no held-out scene.
    pub fn scene_number(&self, text: &str) -> Result<usize, String> {
        let digits = text.trim();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{text:?} is not a scene number: {}",
                self.numbered()
            ));
        }
        match digits.parse::<usize>() {
            Ok(index) if index < self.held_out => Ok(index),
            _ => Err(format!(
                "there is no held-out scene {digits}: {}",
                self.numbered()
            )),
        }
    }

    fn numbered(&self) -> String {
        match self.held_out {
            0 => "the run has no held-out scenes".to_string(),
            n => format!("the run's {n} held-out scenes are numbered 0 to {}", n - 1),
        }
    }

    /// An image file's bytes (PNG or JPEG) as the network reads them, by one rule on every
    /// target: [`decode`]d, then scaled to the scenes' size (bilinear, scaled to fill and
    /// cropped at the centre), except where it already is that size (then pixel for pixel).
    ///
    /// # Errors
    /// Where the bytes are not an image of those formats.
    pub fn image(&self, bytes: &[u8]) -> Result<RgbImage, String> {
        let image = decode(bytes)?;
        let [height, width] = self.size();
        if image.dimensions() == (width as u32, height as u32) {
            return Ok(image);
        }
        Ok(image::DynamicImage::ImageRgb8(image)
            .resize_to_fill(
                width as u32,
                height as u32,
                image::imageops::FilterType::Triangle,
            )
            .into_rgb8())
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
        let data = serde_json::json!({"image_size": 32, "scenes": [16, 4, 10], "seed": 7});
        serde_json::json!({"model": model, "data": data}).to_string()
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
    fn rgba_is_the_image_opaque() {
        let image = RgbImage::from_fn(3, 2, |x, y| image::Rgb([x as u8, y as u8, 200]));
        assert_eq!(
            &rgba(&image)[..12],
            [0, 0, 200, 255, 1, 0, 200, 255, 2, 0, 200, 255]
        );
    }

    #[test]
    fn the_scenes_are_the_runs_held_out_scenes() {
        let segmenter = Segmenter::load(&config(4, 5), weights(4, 5), &Device::flex()).unwrap();
        let run = SyntheticScenes::new(Split::Test, 10, 32, 7).scene(3);
        assert_eq!(segmenter.scene(3).unwrap().image, run.image);
        assert_eq!(segmenter.scene(3).unwrap().labels, run.labels);
        assert_eq!(segmenter.size(), [32, 32]);
        assert_eq!(segmenter.held_out(), 10);
    }

    /// The run's config says 10 held-out scenes: 0 to 9 are scenes, nothing else is.
    #[test]
    fn scene_numbers_are_the_held_out_splits() {
        let segmenter = Segmenter::load(&config(4, 5), weights(4, 5), &Device::flex()).unwrap();
        assert_eq!(segmenter.scene_number("0"), Ok(0));
        assert_eq!(segmenter.scene_number(" 9 "), Ok(9));
        assert_eq!(segmenter.scene_number("007"), Ok(7));
        let numbered = "the run's 10 held-out scenes are numbered 0 to 9";
        for (text, problem) in [
            ("10", "there is no held-out scene 10"),
            ("99999999999", "there is no held-out scene 99999999999"),
            (
                "184467440737095516160",
                "there is no held-out scene 184467440737095516160",
            ),
            ("-1", "\"-1\" is not a scene number"),
            ("1.5", "\"1.5\" is not a scene number"),
            ("1e3", "\"1e3\" is not a scene number"),
            ("", "\"\" is not a scene number"),
            ("+2", "\"+2\" is not a scene number"),
        ] {
            assert_eq!(
                segmenter.scene_number(text),
                Err(format!("{problem}: {numbered}")),
                "{text:?}"
            );
        }
        assert_eq!(
            segmenter.scene(10).err().unwrap(),
            format!("there is no held-out scene 10: {numbered}")
        );
    }

    /// An image of the scenes' size is taken pixel for pixel; another is scaled to fill them and
    /// cropped at the centre: a 128 x 64 image, red but for its columns 24 to 103, which are
    /// blue, halves to 64 x 32, of which the middle 32 columns (the image's 32 to 95) are kept:
    /// all blue (a crop at the left would keep red).
    #[test]
    fn images_are_fitted_to_the_scenes_size() {
        let segmenter = Segmenter::load(&config(4, 5), weights(4, 5), &Device::flex()).unwrap();
        let png = |image: &RgbImage| {
            let mut bytes = std::io::Cursor::new(Vec::new());
            image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
            bytes.into_inner()
        };
        let scene = segmenter.scene(1).unwrap().image;
        assert_eq!(segmenter.image(&png(&scene)).unwrap(), scene);

        let wide = RgbImage::from_fn(128, 64, |x, _| {
            if (24..104).contains(&x) {
                image::Rgb([0, 0, 255])
            } else {
                image::Rgb([255, 0, 0])
            }
        });
        let fitted = segmenter.image(&png(&wide)).unwrap();
        assert_eq!(fitted.dimensions(), (32, 32));
        assert!(fitted.pixels().all(|p| p.0 == [0, 0, 255]), "{fitted:?}");
    }
}
