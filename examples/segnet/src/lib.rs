//! SegNet and SegNet-Basic on Burn, with burn-unpool's max unpooling in every decoder stage.
//!
//! - [`model`]: the networks ([`SegNetConfig`](model::SegNetConfig) picks one).
//! - [`data`]: the built-in synthetic scenes, a CamVid-layout loader, batching, class weights.
//! - [`confusion`]: pixel accuracy and intersection over union, from a confusion matrix.
//! - [`training`]: the burn-train steps, loss, metrics and progress output.
//! - [`experiment`]: what a run is configured with, and where it writes.
//! - [`fit`]: whether a step's tuned convolution gradients fit a GPU, and the micro-batch that does.
//! - [`run`]: train, evaluate and predict, as the command line calls them.
//! - [`render`]: prediction images a person can look at.
//!
//! Without the default feature `train` the crate is [`model`], [`confusion`] and the synthetic
//! scenes of [`data`] alone, which build for WebAssembly (`examples/segnet-web` segments in a browser).
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use segnet::model::{Architecture, SegNetConfig};
//!
//! let device = Device::flex();
//! let net = SegNetConfig::new(5)
//!     .with_architecture(Architecture::SegNetBasic)
//!     .with_width(4)
//!     .init(&device);
//! // Odd sizes are fine: every decoder stage unpools to its encoder's input size.
//! let logits = net.forward(Tensor::<4>::zeros([1, 3, 45, 61], &device));
//! assert_eq!(logits.dims(), [1, 5, 45, 61]);
//! ```

// Without `train` the module list above names modules that are not built.
#![cfg_attr(not(feature = "train"), allow(rustdoc::broken_intra_doc_links))]

pub mod confusion;
pub mod data;
#[cfg(feature = "train")]
pub mod device;
#[cfg(feature = "train")]
pub mod experiment;
#[cfg(feature = "train")]
pub mod fit;
pub mod model;
#[cfg(feature = "train")]
pub mod plot;
#[cfg(feature = "train")]
pub mod render;
#[cfg(feature = "train")]
pub mod run;
#[cfg(feature = "train")]
pub mod training;
