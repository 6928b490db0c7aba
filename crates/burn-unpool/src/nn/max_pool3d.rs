//! `MaxPool3d`, which Burn's `nn` lacks, in the style of its `MaxPool2d`.

use burn::config::Config;
use burn::module::{Content, DisplaySettings, Module, ModuleDisplay};
use burn::nn::PaddingConfig3d;
use burn::tensor::Tensor;

use super::MaxPoolWithIndices;

/// Configuration to create a [3-d max pooling](MaxPool3d) layer.
#[derive(Config, Debug)]
pub struct MaxPool3dConfig {
    /// The size of the kernel.
    pub kernel_size: [usize; 3],
    /// The strides.
    #[config(default = "kernel_size")]
    pub strides: [usize; 3],
    /// The padding configuration.
    #[config(default = "PaddingConfig3d::Valid")]
    pub padding: PaddingConfig3d,
    /// The dilation.
    #[config(default = "[1, 1, 1]")]
    pub dilation: [usize; 3],
    /// If true, use ceiling instead of floor for output size calculation.
    #[config(default = "false")]
    pub ceil_mode: bool,
}

/// 3-d max pooling; [`MaxPoolWithIndices`](super::MaxPoolWithIndices) also returns the indices.
/// ```
/// use burn::tensor::{Device, Tensor};
/// use burn_unpool::nn::{MaxPool3dConfig, MaxPoolWithIndices, MaxUnpool3dConfig};
///
/// let device = Device::flex();
/// let pool = MaxPool3dConfig::new([2, 2, 2]).init();
/// let unpool = MaxUnpool3dConfig::new([2, 2, 2]).init();
/// let volume = Tensor::<5>::ones([1, 4, 6, 8, 8], &device);
/// let (pooled, indices) = pool.forward_with_indices(volume);
/// assert_eq!(pooled.dims(), [1, 4, 3, 4, 4]);
/// assert_eq!(unpool.forward(pooled, indices).dims(), [1, 4, 6, 8, 8]);
/// ```
#[derive(Module, Debug)]
#[module(custom_display)]
pub struct MaxPool3d {
    /// The strides.
    pub stride: [usize; 3],
    /// The size of the kernel.
    pub kernel_size: [usize; 3],
    /// The padding configuration.
    #[module(skip)]
    pub padding: PaddingConfig3d,
    /// The dilation.
    pub dilation: [usize; 3],
    /// If true, use ceiling instead of floor for output size calculation.
    pub ceil_mode: bool,
}

impl ModuleDisplay for MaxPool3d {
    fn custom_settings(&self) -> Option<DisplaySettings> {
        DisplaySettings::new()
            .with_new_line_after_attribute(false)
            .optional()
    }

    fn custom_content(&self, content: Content) -> Option<Content> {
        content
            .add("kernel_size", &format!("{:?}", self.kernel_size))
            .add("stride", &format!("{:?}", self.stride))
            .add_debug_attribute("padding", &self.padding)
            .add("dilation", &format!("{:?}", self.dilation))
            .add("ceil_mode", &self.ceil_mode)
            .optional()
    }
}

impl MaxPool3dConfig {
    /// Initialize a new [3-d max pool](MaxPool3d) module.
    pub fn init(&self) -> MaxPool3d {
        MaxPool3d {
            stride: self.strides,
            kernel_size: self.kernel_size,
            padding: self.padding.clone(),
            dilation: self.dilation,
            ceil_mode: self.ceil_mode,
        }
    }
}

impl MaxPool3d {
    /// Applies the forward pass on a `[batch_size, channels, depth, height, width]` input.
    pub fn forward(&self, input: Tensor<5>) -> Tensor<5> {
        self.forward_with_indices(input).0
    }
}
