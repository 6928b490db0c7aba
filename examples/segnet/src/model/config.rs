//! Which network to build, and its stages.

use burn::config::Config;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::SegNet;

/// The two networks of the SegNet paper (Badrinarayanan et al., 2017).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Architecture {
    /// VGG16-style: 13 3x3 convolutions in 5 stages of 2, 2, 3, 3, 3, widths `w, 2w, 4w, 8w, 8w`.
    #[value(name = "segnet")]
    SegNet,
    /// 4 stages of one 7x7 convolution each, all of width `w` (64 in the paper).
    #[value(name = "segnet-basic")]
    SegNetBasic,
}

impl std::fmt::Display for Architecture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Architecture::SegNet => "SegNet",
            Architecture::SegNetBasic => "SegNet-Basic",
        })
    }
}

/// One encoder stage: `convs` convolutions of size `kernel` to `channels` channels, then a 2x2 pool.
/// Its decoder mirrors it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageSpec {
    /// Convolutions in the stage.
    pub convs: usize,
    /// Output channels of every convolution in the stage.
    pub channels: usize,
    /// Convolution kernel size.
    pub kernel: usize,
}

/// Configuration to create a [`SegNet`] with [`SegNetConfig::init`].
#[derive(Config, Debug)]
pub struct SegNetConfig {
    /// Classes to predict (the ignore label is not one of them).
    pub num_classes: usize,
    /// Which network.
    #[config(default = "Architecture::SegNetBasic")]
    pub architecture: Architecture,
    /// Base width: channels of the first stage (64 in the paper for both networks).
    #[config(default = 64)]
    pub width: usize,
    /// Channels of the input images.
    #[config(default = 3)]
    pub in_channels: usize,
}

impl SegNetConfig {
    /// The encoder stages, shallow to deep.
    pub fn stages(&self) -> Vec<StageSpec> {
        let w = self.width;
        match self.architecture {
            Architecture::SegNet => [(2, w), (2, 2 * w), (3, 4 * w), (3, 8 * w), (3, 8 * w)]
                .into_iter()
                .map(|(convs, channels)| StageSpec {
                    convs,
                    channels,
                    kernel: 3,
                })
                .collect(),
            Architecture::SegNetBasic => {
                vec![
                    StageSpec {
                        convs: 1,
                        channels: w,
                        kernel: 7
                    };
                    4
                ]
            }
        }
    }

    /// Builds the network on `device` with freshly initialised weights.
    pub fn init(&self, device: &Device) -> SegNet {
        SegNet::new(self, device)
    }
}
