//! Which network to build, and its stages.

use burn::config::Config;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::SegNet;

/// The two networks of the SegNet paper (Badrinarayanan et al., 2017).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "train", derive(clap::ValueEnum))]
pub enum Architecture {
    /// VGG16-style: 13 3x3 convolutions in 5 stages of 2, 2, 3, 3, 3, widths `w, 2w, 4w, 8w, 8w`.
    #[cfg_attr(feature = "train", value(name = "segnet"))]
    SegNet,
    /// 4 stages of one 7x7 convolution each, all of width `w` (64 in the paper).
    #[cfg_attr(feature = "train", value(name = "segnet-basic"))]
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

/// One convolution of the network, for one image: what it reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Channels it reads.
    pub in_channels: usize,
    /// Channels it writes.
    pub out_channels: usize,
    /// Kernel size (square; the padding keeps the spatial size).
    pub kernel: usize,
    /// Spatial size, `[height, width]`, of its input and output.
    pub size: [usize; 2],
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

    /// Every convolution of the network on an image of `size` (`[height, width]`), in the order
    /// the forward runs them, the 1x1 classifier last. The pools round up, as the network's do.
    pub fn convolutions(&self, size: [usize; 2]) -> Vec<ConvShape> {
        let stages = self.stages();
        let inputs: Vec<usize> = std::iter::once(self.in_channels)
            .chain(stages.iter().map(|s| s.channels))
            .collect();
        let mut sizes = vec![size];
        for _ in &stages {
            let [h, w] = sizes[sizes.len() - 1];
            sizes.push([h.div_ceil(2), w.div_ceil(2)]);
        }
        let mut convs = Vec::new();
        for (i, spec) in stages.iter().enumerate() {
            for c in 0..spec.convs {
                convs.push(ConvShape {
                    in_channels: if c == 0 { inputs[i] } else { spec.channels },
                    out_channels: spec.channels,
                    kernel: spec.kernel,
                    size: sizes[i],
                });
            }
        }
        // The decoders mirror the encoders, deepest first, as `SegNet::new` builds them.
        for (i, spec) in stages.iter().enumerate().rev() {
            for c in 0..spec.convs {
                let last = c + 1 == spec.convs;
                convs.push(ConvShape {
                    in_channels: spec.channels,
                    out_channels: if !last || i == 0 {
                        spec.channels
                    } else {
                        inputs[i]
                    },
                    kernel: spec.kernel,
                    size: sizes[i],
                });
            }
        }
        convs.push(ConvShape {
            in_channels: stages[0].channels,
            out_channels: self.num_classes,
            kernel: 1,
            size,
        });
        convs
    }

    /// Builds the network on `device` with freshly initialised weights.
    pub fn init(&self, device: &Device) -> SegNet {
        SegNet::new(self, device)
    }
}
