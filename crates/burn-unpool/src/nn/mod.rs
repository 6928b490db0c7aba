//! Modules in the style of `burn::nn::pool`: `MaxUnpool{1,2,3}d` with their configs, and
//! `forward_with_indices` for Burn's own max pool modules.

mod padding;
mod pool_with_indices;
mod unpool;

pub use pool_with_indices::MaxPoolWithIndices;
pub use unpool::{
    MaxUnpool1d, MaxUnpool1dConfig, MaxUnpool2d, MaxUnpool2dConfig, MaxUnpool3d, MaxUnpool3dConfig,
};
