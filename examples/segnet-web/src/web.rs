//! What the page's script calls (wasm-bindgen). A browser cannot wait for its GPU, so the device
//! comes up with `init_async` and the scores are read with `into_data_async`, on every device.
//!
//! Built on every target, so that the native checks see it; only the WebAssembly module's
//! bindings are called (natively, what reaches JavaScript values panics).

use std::cell::RefCell;

use burn::tensor::Device;
use image::{GrayImage, RgbImage};
use segnet::data::SYNTHETIC_CLASSES;
use wasm_bindgen::prelude::*;

use crate::{Prediction, Segmenter, class_colours, rgba};

thread_local! {
    /// The browser's WebGPU device, once brought up: Burn initialises a runtime once per page.
    static WEBGPU: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// Panics reach the browser's console with their message (a WebAssembly panic aborts the module).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The classes' names, in class order.
#[wasm_bindgen]
pub fn class_names() -> Vec<String> {
    SYNTHETIC_CLASSES
        .iter()
        .map(|c| c.name.to_string())
        .collect()
}

/// The classes' colours as CSS (`#rrggbb`), in class order.
#[wasm_bindgen]
pub fn class_colours_css() -> Vec<String> {
    SYNTHETIC_CLASSES
        .iter()
        .map(|c| format!("#{:02x}{:02x}{:02x}", c.color[0], c.color[1], c.color[2]))
        .collect()
}

/// The network of a training run on a device of the page.
#[wasm_bindgen]
pub struct Page {
    segmenter: Segmenter,
    device: String,
}

#[wasm_bindgen]
impl Page {
    /// Loads the run (`config.json` as text, `model.bpk` as bytes) on `device`: `"webgpu"` (the
    /// browser's WebGPU, an error where it has none) or `"cpu"` (Flex).
    pub async fn load(config: String, weights: Vec<u8>, device: String) -> Result<Page, JsError> {
        let burn_device = match device.as_str() {
            "cpu" => Device::flex(),
            "webgpu" => webgpu().await?,
            other => return Err(JsError::new(&format!("no device {other:?}: webgpu or cpu"))),
        };
        let segmenter =
            Segmenter::load(&config, weights, &burn_device).map_err(|e| JsError::new(&e))?;
        Ok(Page { segmenter, device })
    }

    /// The device the network runs on: `"webgpu"` or `"cpu"`.
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> String {
        self.device.clone()
    }

    /// Rows of the scenes the network was trained on: the height to scale a user's image to.
    #[wasm_bindgen(getter)]
    pub fn height(&self) -> u32 {
        self.segmenter.size()[0] as u32
    }

    /// Columns of the scenes the network was trained on: the width to scale a user's image to.
    #[wasm_bindgen(getter)]
    pub fn width(&self) -> u32 {
        self.segmenter.size()[1] as u32
    }

    /// Scenes in the run's held-out split: the page's scene numbers are 0 to one less.
    #[wasm_bindgen(getter)]
    pub fn held_out(&self) -> u32 {
        u32::try_from(self.segmenter.held_out()).unwrap_or(u32::MAX)
    }

    /// The held-out scene a scene box's or an address's text names; an error saying what the
    /// scene numbers are where it names none.
    pub fn scene_number(&self, text: &str) -> Result<u32, JsError> {
        let index = self
            .segmenter
            .scene_number(text)
            .map_err(|e| JsError::new(&e))?;
        u32::try_from(index).map_err(|_| JsError::new(&format!("scene {index} is past 2^32")))
    }

    /// Held-out scene `index`, segmented.
    pub async fn segment(&self, index: u32) -> Result<Frame, JsError> {
        let scene = self
            .segmenter
            .scene(index as usize)
            .map_err(|e| JsError::new(&e))?;
        let scores = self.scores(&scene.image).await?;
        let prediction = Prediction::new(&scores, self.segmenter.num_classes(), &scene.labels);
        Ok(Frame::new(
            &scene.image,
            Some(&scene.labels),
            prediction,
            scores,
        ))
    }

    /// A user's image file (its bytes: PNG or JPEG), read by [`Segmenter::image`] and segmented;
    /// it has no true classes, so no pixel accuracy.
    pub async fn segment_file(&self, bytes: Vec<u8>) -> Result<Frame, JsError> {
        let image = self.segmenter.image(&bytes).map_err(|e| JsError::new(&e))?;
        let (width, height) = image.dimensions();
        let scores = self.scores(&image).await?;
        let prediction =
            Prediction::unlabelled(&scores, self.segmenter.num_classes(), width, height);
        Ok(Frame::new(&image, None, prediction, scores))
    }

    /// The network's scores of `image`, read back from the device.
    async fn scores(&self, image: &RgbImage) -> Result<Vec<f32>, JsError> {
        self.segmenter
            .logits(image)
            .into_data_async()
            .await
            .map_err(|e| JsError::new(&format!("reading the scores back: {e:?}")))?
            .try_to_vec::<f32>()
            .map_err(|e| JsError::new(&format!("the scores: {e:?}")))
    }
}

/// The browser's WebGPU device, brought up on first use.
async fn webgpu() -> Result<Device, JsError> {
    if let Some(device) = WEBGPU.with_borrow(|device| device.clone()) {
        return Ok(device);
    }
    let device = Device::wgpu_options()
        .init_async()
        .await
        .map_err(|e| JsError::new(&format!("WebGPU: {e}")))?;
    WEBGPU.set(Some(device.clone()));
    Ok(device)
}

/// One segmented scene or user's image: what the page draws and what its check reads.
#[wasm_bindgen(getter_with_clone)]
pub struct Frame {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// The scene or the user's image, RGBA.
    pub image: Vec<u8>,
    /// The true classes in their colours, RGBA (transparent for an image without labels).
    pub truth: Vec<u8>,
    /// The predicted classes in their colours, RGBA.
    pub prediction: Vec<u8>,
    /// The predicted class per pixel, row-major.
    pub classes: Vec<u8>,
    /// The network's scores, `[classes, height, width]`.
    pub scores: Vec<f32>,
    /// Right pixels over labelled pixels (`undefined` for an image without labels).
    pub pixel_accuracy: Option<f64>,
}

impl Frame {
    fn new(
        image: &RgbImage,
        labels: Option<&GrayImage>,
        prediction: Prediction,
        scores: Vec<f32>,
    ) -> Self {
        let (width, height) = image.dimensions();
        Frame {
            width,
            height,
            image: rgba(image),
            truth: labels.map_or_else(
                || vec![0; 4 * width as usize * height as usize],
                |labels| class_colours(labels.as_raw()),
            ),
            prediction: class_colours(&prediction.classes),
            classes: prediction.classes,
            scores,
            pixel_accuracy: prediction.pixel_accuracy,
        }
    }
}
