//! Modules in the style of `burn::nn::pool`: `MaxUnpool{1,2,3}d`, `MaxPool3d`, and pool indices.

mod max_pool3d;
mod padding;
mod pool_fields;
mod pool_with_indices;
mod unpool;

pub use max_pool3d::{MaxPool3d, MaxPool3dConfig};
pub use pool_with_indices::MaxPoolWithIndices;
pub use unpool::{
    MaxUnpool1d, MaxUnpool1dConfig, MaxUnpool2d, MaxUnpool2dConfig, MaxUnpool3d, MaxUnpool3dConfig,
};
