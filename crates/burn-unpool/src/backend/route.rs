//! Which implementation runs this crate's ops on a device, decided in one place.

use std::sync::Once;

use burn::tensor::Device;

/// The implementation that runs this crate's pools and unpooling on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// This crate's CPU kernels: Flex devices with the `flex` feature, NdArray ones with `ndarray`.
    CpuKernels,
    /// This crate's CubeCL kernels: features `wgpu`, `vulkan`, `metal`, for every CubeCL device of
    /// the build (CUDA and ROCm ones too, untested). Plans past them (over 3 axes, past 32-bit
    /// offsets) run the composition there.
    CubeKernels,
    /// The trait's defaults, composing Burn's ops (same results, slower): devices without kernels.
    Composition,
}

impl core::fmt::Display for Route {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::CpuKernels => "burn-unpool's CPU kernels",
            Self::CubeKernels => "burn-unpool's CubeCL kernels",
            Self::Composition => "a composition of Burn tensor ops",
        })
    }
}

/// The route this crate's ops take on `device` in this build (its features and Burn's).
pub fn route(device: &Device) -> Route {
    if crate::diagnostics::composition_forced() {
        return Route::Composition;
    }
    match device.as_dispatch().clone().inner() {
        #[cfg(feature = "flex")]
        burn::backend::DispatchDevice::Flex(_) => Route::CpuKernels,
        #[cfg(feature = "ndarray")]
        #[allow(deprecated)]
        burn::backend::DispatchDevice::NdArray(_) => Route::CpuKernels,
        #[cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))]
        burn::backend::DispatchDevice::Cube(_) => Route::CubeKernels,
        #[allow(unreachable_patterns)]
        _ => Route::Composition,
    }
}

/// What bounds one allocation on a GPU device: the op checks its outputs against it before
/// allocating, and a caller sizing its batches (a training step in micro-batches) reads it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceLimits {
    /// The largest buffer the device allocates, in bytes.
    pub largest_allocation: u64,
    /// The device's smallest plane (subgroup) size.
    pub plane_size: u32,
}

/// `device`'s [`DeviceLimits`] where it is a CubeCL device of this build's runtimes (`wgpu`,
/// `vulkan`, `metal`); `None` elsewhere, where the host's memory is the only bound.
#[cfg_attr(
    not(any(feature = "wgpu", feature = "vulkan", feature = "metal")),
    allow(unused_variables)
)]
pub fn device_limits(device: &Device) -> Option<DeviceLimits> {
    match device.as_dispatch().clone().inner() {
        #[cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))]
        burn::backend::DispatchDevice::Cube(cube) => {
            let client = cube.client();
            let properties = client.properties();
            Some(DeviceLimits {
                largest_allocation: properties.memory.max_page_size,
                plane_size: properties.hardware.plane_size_min,
            })
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

impl Route {
    /// [`route`], logging once per process when a device runs the composition for want of kernels.
    pub(crate) fn of(device: &Device) -> Self {
        static WARNED: Once = Once::new();
        let route = route(device);
        if route == Self::Composition && !crate::diagnostics::composition_forced() {
            WARNED.call_once(|| log::warn!("{}", composition_warning(device)));
        }
        route
    }
}

/// What a device without kernels in this build logs, once: the features that would give them.
fn composition_warning(device: &Device) -> String {
    format!(
        "burn-unpool: {device:?} runs max pooling and unpooling as a composition of Burn tensor \
         ops (several times slower, more memory): Flex, NdArray and CubeCL devices get kernels \
         from burn-unpool's features `flex`, `ndarray`, `wgpu`, `vulkan` and `metal`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The features of Cargo.toml that add a Burn backend, and with it this crate's kernels.
    fn backend_features() -> Vec<&'static str> {
        let manifest = include_str!("../../Cargo.toml");
        let burn_backend = |(name, value): (&'static str, &str)| {
            value.contains(&format!("\"burn/{name}\"")).then_some(name)
        };
        (manifest.lines())
            .filter_map(|line| line.split_once(" = [").and_then(burn_backend))
            .collect()
    }

    #[test]
    fn the_warning_names_every_feature_that_gives_kernels() {
        let features = backend_features();
        assert_eq!(features, ["flex", "ndarray", "wgpu", "vulkan", "metal"]);
        let quoted: Vec<String> = features.iter().map(|name| format!("`{name}`")).collect();
        let (last, rest) = quoted.split_last().unwrap();
        let list = format!("{} and {last}", rest.join(", "));
        let warning = composition_warning(&Device::flex());
        assert!(warning.ends_with(&format!("features {list}")), "{warning}");
    }
}
