//! `MaxUnpool{1,2,3}d`: one definition, instantiated per rank.

use burn::config::Config;
use burn::module::{Content, DisplaySettings, Module, ModuleDisplay};
use burn::nn::pool::{MaxPool1dConfig, MaxPool2dConfig};
use burn::tensor::Tensor;

use super::padding::PaddingPairs;
use crate::{MaxUnpoolOptions, UnpoolIndices, UnpoolKind, max_unpool};

macro_rules! unpool_module {
    (
        $module:ident, $config:ident, $dims:literal, $rank:literal,
        defaults: ($padding:literal, $dilation:literal),
        example: $example:literal
    ) => {
        #[doc = concat!("Configuration to create a [", stringify!($dims), "-d max unpooling](", stringify!($module), ") layer using the [init function](", stringify!($config), "::init).")]
        ///
        /// The fields are those of the pool being inverted; they decide the default output size.
        #[derive(Config, Debug)]
        pub struct $config {
            /// The size of the pool's kernel.
            pub kernel_size: [usize; $dims],
            /// The pool's strides.
            #[config(default = "kernel_size")]
            pub strides: [usize; $dims],
            /// The pool's padding as `(begin, end)` pairs.
            #[config(default = $padding)]
            pub padding: [(usize, usize); $dims],
            /// The pool's dilation.
            #[config(default = $dilation)]
            pub dilation: [usize; $dims],
            /// Whether `forward` must be told the output size: true for the inverse of a pool
            /// whose input size does not follow from its output size (`ceil_mode`, or `Same`
            /// padding with a stride above 1). `forward` then refuses, and
            /// `forward_with_output_size` takes the pool's input size.
            #[config(default = false)]
            pub requires_output_size: bool,
        }

        #[doc = concat!("Applies ", stringify!($dims), "-d max unpooling with the indices of a max pool.")]
        ///
        #[doc = concat!("Should be created with [", stringify!($config), "].")]
        ///
        /// ```
        #[doc = $example]
        /// ```
        #[derive(Module, Debug)]
        #[module(custom_display)]
        pub struct $module {
            /// The size of the pool's kernel.
            pub kernel_size: [usize; $dims],
            /// The pool's strides.
            pub stride: [usize; $dims],
            /// The pool's padding as `(begin, end)` pairs.
            pub padding: [(usize, usize); $dims],
            /// The pool's dilation.
            pub dilation: [usize; $dims],
            /// Whether `forward` must be told the output size.
            pub requires_output_size: bool,
        }

        impl ModuleDisplay for $module {
            fn custom_settings(&self) -> Option<DisplaySettings> {
                DisplaySettings::new()
                    .with_new_line_after_attribute(false)
                    .optional()
            }

            fn custom_content(&self, content: Content) -> Option<Content> {
                content
                    .add("kernel_size", &format!("{:?}", self.kernel_size))
                    .add("stride", &format!("{:?}", self.stride))
                    .add("padding", &format!("{:?}", self.padding))
                    .add("dilation", &format!("{:?}", self.dilation))
                    .add("requires_output_size", &self.requires_output_size)
                    .optional()
            }
        }

        impl $config {
            #[doc = concat!("Initialize a new [", stringify!($module), "] module.")]
            pub fn init(&self) -> $module {
                $module {
                    kernel_size: self.kernel_size,
                    stride: self.strides,
                    padding: self.padding,
                    dilation: self.dilation,
                    requires_output_size: self.requires_output_size,
                }
            }
        }

        impl $module {
            /// The options this layer unpools with.
            pub fn options(&self) -> MaxUnpoolOptions<$dims> {
                MaxUnpoolOptions::new(self.kernel_size)
                    .with_stride(self.stride)
                    .with_padding_pairs(self.padding)
                    .with_dilation(self.dilation)
            }

            /// Unpools `x` (float or integer values) with `indices`: the [`PoolIndices`](crate::PoolIndices) of the pool this layer inverts
            /// (the output then has the pool's input size), or raw per-plane indices (the output
            /// then has the default size).
            ///
            /// # Shapes
            /// - x, indices: `[batch_size, channels, spatial_in..]`
            /// - output: `[batch_size, channels, spatial_out..]`
            ///
            /// # Panics
            /// As [`max_unpool`], and for raw indices when the layer
            #[doc = concat!("[requires the output size](", stringify!($config), "::requires_output_size).")]
            pub fn forward<K: UnpoolKind>(
                &self,
                x: Tensor<$rank, K>,
                indices: impl Into<UnpoolIndices<$rank>>,
            ) -> Tensor<$rank, K> {
                let indices = indices.into();
                assert!(
                    !self.requires_output_size || indices.is_pooled(),
                    "{}::forward: the pool this layer inverts (ceil_mode, or Same padding with a \
                     stride above 1) does not determine its input size from its output size \
                     {:?}; pass the pool's PoolIndices, or its input size to \
                     forward_with_output_size",
                    stringify!($module),
                    &x.dims()[2..],
                );
                max_unpool(x, indices, self.options())
            }

            /// Unpools `x` with `indices` into the spatial size `output_size`, typically the size
            /// of the pool's input (needed where the pool's input had an odd size).
            pub fn forward_with_output_size<K: UnpoolKind>(
                &self,
                x: Tensor<$rank, K>,
                indices: impl Into<UnpoolIndices<$rank>>,
                output_size: [usize; $dims],
            ) -> Tensor<$rank, K> {
                max_unpool(x, indices, self.options().with_output_size(output_size))
            }
        }
    };
}

unpool_module!(MaxUnpool1d, MaxUnpool1dConfig, 1, 3, defaults: ("[(0, 0)]", "[1]"), example: r#"
use burn::tensor::{Device, Int, Tensor};
use burn_unpool::nn::MaxUnpool1dConfig;

let device = Device::flex();
let unpool = MaxUnpool1dConfig::new([2]).init();
let x = Tensor::<3>::from_floats([[[4.0, 8.0, 6.0]]], &device);
let indices = Tensor::<3, Int>::from_ints([[[0, 3, 4]]], &device);
assert_eq!(unpool.forward(x.clone(), indices.clone()).dims(), [1, 1, 6]);
assert_eq!(unpool.forward_with_output_size(x, indices, [7]).dims(), [1, 1, 7]);
assert_eq!(
    unpool.to_string(),
    "MaxUnpool1d {kernel_size: [2], stride: [2], padding: [(0, 0)], dilation: [1], requires_output_size: false}"
);
"#);

unpool_module!(MaxUnpool2d, MaxUnpool2dConfig, 2, 4, defaults: ("[(0, 0); 2]", "[1; 2]"), example: r#"
use burn::nn::pool::MaxPool2dConfig;
use burn::tensor::{Device, Tensor};
use burn_unpool::nn::{MaxPoolWithIndices, MaxUnpool2dConfig};

let device = Device::flex();
let pool_config = MaxPool2dConfig::new([2, 2]);
let (pool, unpool) = (pool_config.init(), MaxUnpool2dConfig::from(&pool_config).init());
let image = Tensor::<4>::ones([1, 3, 5, 5], &device);
let (pooled, indices) = pool.forward_with_indices(image);
// 5 is odd: the default size would be 4, so pass the pool's input size.
let restored = unpool.forward_with_output_size(pooled, indices, [5, 5]);
assert_eq!(restored.dims(), [1, 3, 5, 5]);
"#);

unpool_module!(MaxUnpool3d, MaxUnpool3dConfig, 3, 5, defaults: ("[(0, 0); 3]", "[1; 3]"), example: r#"
use burn::tensor::{Device, Int, Tensor};
use burn_unpool::nn::MaxUnpool3dConfig;

let device = Device::flex();
let unpool = MaxUnpool3dConfig::new([2, 2, 2]).init();
let x = Tensor::<5>::ones([2, 4, 3, 3, 3], &device);
let indices = Tensor::<5, Int>::zeros([2, 4, 3, 3, 3], &device);
assert_eq!(unpool.forward(x, indices).dims(), [2, 4, 6, 6, 6]);
"#);

/// The unpooling of a pool config: its kernel, stride, padding and dilation. A pool whose
/// input size does not follow from its output size (`ceil_mode`, or `Same` padding with a stride
/// above 1) gives a config that [requires the output size](MaxUnpool2dConfig::requires_output_size).
macro_rules! from_pool_config {
    ($pool:ty => $unpool:ident, |$p:ident| ($kernel:expr, $stride:expr, $dilation:expr)) => {
        impl From<&$pool> for $unpool {
            fn from($p: &$pool) -> Self {
                let (kernel, stride) = ($kernel, $stride);
                let padding = $p.padding.pairs(kernel, stride, None);
                Self::new(kernel)
                    .with_strides(stride)
                    .with_padding(padding.unwrap_or_default())
                    .with_dilation($dilation)
                    .with_requires_output_size(padding.is_none() || $p.ceil_mode)
            }
        }
    };
}

from_pool_config!(MaxPool1dConfig => MaxUnpool1dConfig, |pool| (
    [pool.kernel_size],
    [pool.stride],
    [pool.dilation]
));
from_pool_config!(MaxPool2dConfig => MaxUnpool2dConfig, |pool| (
    pool.kernel_size,
    pool.strides,
    pool.dilation
));
