//! SegNet and SegNet-Basic: encoders that pool with indices, decoders that unpool with them.

mod block;
mod config;
mod segnet;
mod stage;

pub use block::ConvBlock;
pub use config::{Architecture, ConvShape, SegNetConfig, StageSpec};
pub use segnet::SegNet;
pub use stage::{DecoderStage, EncoderStage, IndexPath};
