//! What the page's script calls (wasm-bindgen). A browser cannot wait for its GPU, so the device
//! comes up with `init_async` and the scores are read with `into_data_async`, on every device.

use std::cell::RefCell;

use burn::tensor::Device;
use segnet::data::SYNTHETIC_CLASSES;
use wasm_bindgen::prelude::*;

use crate::{Prediction, Segmenter, class_colours, rgba};

thread_local! {
    /// The browser's WebGPU device, once brought up: Burn initialises a runtime once per page.
    static WEBGPU: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// Panics reach the browser's console with their message (a WebAssembly panic aborts the module).
#[wasm_bindgen(start)]
fn start() {
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

    /// Held-out scene `index`, segmented.
    pub async fn segment(&self, index: u32) -> Result<Frame, JsError> {
        let scene = self.segmenter.scene(index as usize);
        let scores = self
            .segmenter
            .logits(&scene.image)
            .into_data_async()
            .await
            .map_err(|e| JsError::new(&format!("reading the scores back: {e:?}")))?
            .try_to_vec::<f32>()
            .map_err(|e| JsError::new(&format!("the scores: {e:?}")))?;
        let prediction = Prediction::new(&scores, self.segmenter.num_classes(), &scene.labels);
        Ok(Frame {
            width: scene.image.width(),
            height: scene.image.height(),
            image: rgba(&scene.image),
            truth: class_colours(scene.labels.as_raw()),
            prediction: class_colours(&prediction.classes),
            classes: prediction.classes,
            scores,
            pixel_accuracy: prediction.pixel_accuracy,
        })
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

/// One segmented scene: what the page draws and what its check reads.
#[wasm_bindgen(getter_with_clone)]
pub struct Frame {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// The scene, RGBA.
    pub image: Vec<u8>,
    /// The true classes in their colours, RGBA.
    pub truth: Vec<u8>,
    /// The predicted classes in their colours, RGBA.
    pub prediction: Vec<u8>,
    /// The predicted class per pixel, row-major.
    pub classes: Vec<u8>,
    /// The network's scores, `[classes, height, width]`.
    pub scores: Vec<f32>,
    /// Right pixels over labelled pixels.
    pub pixel_accuracy: f64,
}
