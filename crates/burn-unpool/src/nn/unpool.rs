//! `MaxUnpool{1,2,3}d`, configured as Burn's pools are, so a pool's config carries over.

use burn::config::Config;
use burn::module::{Content, DisplaySettings, Module, ModuleDisplay};
use burn::nn::pool::{MaxPool1dConfig, MaxPool2dConfig};
use burn::nn::{PaddingConfig1d, PaddingConfig2d, PaddingConfig3d};
use burn::tensor::Tensor;

use super::MaxPool3dConfig;
use super::pool_fields::PoolFields;
use crate::{UnpoolIndices, UnpoolKind, max_unpool};

trait Axes<const D: usize>: Copy {
    fn axes(self) -> [usize; D];
}

impl Axes<1> for usize {
    fn axes(self) -> [usize; 1] {
        [self]
    }
}

impl<const D: usize> Axes<D> for [usize; D] {
    fn axes(self) -> [usize; D] {
        self
    }
}

/// `From<&$pool_config>` for the unpooling config `$config`: the same fields, carried over.
macro_rules! from_pool_config {
    ($pool_config:ty, $config:ident, $stride:ident) => {
        impl From<&$pool_config> for $config {
            fn from(pool: &$pool_config) -> Self {
                Self {
                    kernel_size: pool.kernel_size,
                    $stride: pool.$stride,
                    padding: pool.padding.clone(),
                    dilation: pool.dilation,
                    ceil_mode: pool.ceil_mode,
                }
            }
        }
    };
}

macro_rules! unpool_module {
    (
        $module:ident, $config:ident, $pool_config:ty, $dims:literal, $rank:literal,
        axes: $axes:ty, stride: $stride:ident, padding: $padding:ty,
        defaults: ($padding_default:literal, $dilation_default:literal)
    ) => {
        #[doc = concat!("Configuration to create a [", stringify!($dims), "-d max unpooling](", stringify!($module), ") layer using the [init function](", stringify!($config), "::init).")]
        ///
        #[doc = concat!("The fields are those of [`", stringify!($pool_config), "`], with the same names, types and defaults: a pool's config carries over as written, or with `From`.")]
        #[derive(Config, Debug)]
        pub struct $config {
            /// The size of the pool's kernel.
            pub kernel_size: $axes,
            /// The pool's stride.
            #[config(default = "kernel_size")]
            pub $stride: $axes,
            /// The pool's padding (`Same` with a stride above 1 needs the pool's input size).
            #[config(default = $padding_default)]
            pub padding: $padding,
            /// The pool's dilation.
            #[config(default = $dilation_default)]
            pub dilation: $axes,
            /// The pool's `ceil_mode` (its input size then does not follow from its output size).
            #[config(default = "false")]
            pub ceil_mode: bool,
        }

        #[doc = concat!("Applies ", stringify!($dims), "-d max unpooling with the indices of a max pool.")]
        #[doc = concat!("Should be created with [", stringify!($config), "].")]
        #[derive(Module, Debug)]
        #[module(custom_display)]
        pub struct $module {
            /// The pool's stride.
            pub stride: $axes,
            /// The size of the pool's kernel.
            pub kernel_size: $axes,
            /// The pool's padding configuration.
            #[module(skip)]
            pub padding: $padding,
            /// The pool's dilation.
            pub dilation: $axes,
            /// The pool's `ceil_mode`.
            pub ceil_mode: bool,
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
                    .add_debug_attribute("padding", &self.padding)
                    .add("dilation", &format!("{:?}", self.dilation))
                    .add("ceil_mode", &self.ceil_mode)
                    .optional()
            }
        }

        impl $config {
            #[doc = concat!("Initialize a new [", stringify!($module), "] module.")]
            pub fn init(&self) -> $module {
                $module {
                    stride: self.$stride,
                    kernel_size: self.kernel_size,
                    padding: self.padding.clone(),
                    dilation: self.dilation,
                    ceil_mode: self.ceil_mode,
                }
            }

            /// Whether `forward` takes only the pool's indices (`ceil_mode`, or strided `Same`).
            pub fn requires_output_size(&self) -> bool {
                self.init().requires_output_size()
            }
        }

        from_pool_config!($pool_config, $config, $stride);

        impl $module {
            fn inverted_pool(&self) -> PoolFields<'_, $dims, $padding> {
                PoolFields {
                    kernel: self.kernel_size.axes(),
                    stride: self.stride.axes(),
                    padding: &self.padding,
                    dilation: self.dilation.axes(),
                    ceil_mode: self.ceil_mode,
                }
            }

            #[doc = concat!("See [`", stringify!($config), "::requires_output_size`].")]
            pub fn requires_output_size(&self) -> bool {
                self.inverted_pool().requires_output_size()
            }

            /// Unpools `x` with the [`PoolIndices`](crate::PoolIndices) of its pool, or raw ones.
            /// # Panics
            /// As [`max_unpool`]; for raw indices when the layer
            #[doc = concat!("[requires the output size](", stringify!($config), "::requires_output_size);")]
            /// for the indices of a pool of another geometry than the layer's.
            #[track_caller]
            pub fn forward<K: UnpoolKind>(
                &self,
                x: Tensor<$rank, K>,
                indices: impl Into<UnpoolIndices<$rank>>,
            ) -> Tensor<$rank, K> {
                let indices = indices.into();
                let options =
                    self.inverted_pool()
                        .unpool_options(stringify!($module), &x.dims(), &indices, None);
                max_unpool(x, indices, options)
            }

            /// Unpools `x` with `indices` into `output_size`, the spatial size of the pool's input.
            /// # Panics
            /// As [`forward`](Self::forward), and when `output_size` does not fit the indices.
            #[track_caller]
            pub fn forward_with_output_size<K: UnpoolKind>(
                &self,
                x: Tensor<$rank, K>,
                indices: impl Into<UnpoolIndices<$rank>>,
                output_size: [usize; $dims],
            ) -> Tensor<$rank, K> {
                let indices = indices.into();
                let options = self.inverted_pool().unpool_options(
                    stringify!($module),
                    &x.dims(),
                    &indices,
                    Some(output_size),
                );
                max_unpool(x, indices, options)
            }
        }
    };
}

unpool_module!(MaxUnpool1d, MaxUnpool1dConfig, MaxPool1dConfig, 1, 3,
    axes: usize, stride: stride, padding: PaddingConfig1d,
    defaults: ("PaddingConfig1d::Valid", "1"));

unpool_module!(MaxUnpool2d, MaxUnpool2dConfig, MaxPool2dConfig, 2, 4,
    axes: [usize; 2], stride: strides, padding: PaddingConfig2d,
    defaults: ("PaddingConfig2d::Valid", "[1, 1]"));

unpool_module!(MaxUnpool3d, MaxUnpool3dConfig, MaxPool3dConfig, 3, 5,
    axes: [usize; 3], stride: strides, padding: PaddingConfig3d,
    defaults: ("PaddingConfig3d::Valid", "[1, 1, 1]"));

// Burn 0.23's own `MaxPool3dConfig` carries over as this crate's does.
#[cfg(burn_next)]
from_pool_config!(burn::nn::pool::MaxPool3dConfig, MaxUnpool3dConfig, strides);
