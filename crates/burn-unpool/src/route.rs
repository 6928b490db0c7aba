//! Which implementation runs this crate's ops on a device in this build, and a warning when a
//! device runs the composition only because a feature of this crate is off.

use std::sync::Once;

use burn::backend::DeviceOps;
use burn::backend::DispatchDeviceId;
use burn::tensor::Device;

/// The implementation that runs this crate's pools and unpooling on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// This crate's CPU kernels: Flex devices with the `flex` feature, NdArray devices with
    /// `ndarray`.
    CpuKernels,
    /// This crate's CubeCL kernels: CubeCL devices (wgpu, Vulkan, Metal, ...) with the `wgpu`
    /// feature, for pools of 1 to 3 spatial axes and tensors addressed by 32-bit offsets; other
    /// shapes on those devices run the composition. CUDA and ROCm devices are CubeCL devices too
    /// and take this route, untested: Burn 0.22.1's CUDA backend does not build where this crate
    /// is tested (docs/platforms.md).
    CubeKernels,
    /// A composition of Burn's own tensor ops: the same results, several times slower and with
    /// more memory. Devices of backends this build has no kernels for take it.
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

/// The route this crate's ops take on `device` in this build (its features and Burn's). It only
/// answers: the warning about a missing feature comes from the first op that runs.
///
/// ```
/// use burn::tensor::Device;
/// use burn_unpool::{Route, route};
///
/// // The `flex` feature (on by default) gives Flex devices the CPU kernels.
/// assert_eq!(route(&Device::flex()), Route::CpuKernels);
/// ```
pub fn route(device: &Device) -> Route {
    match Kernels::decide(device) {
        Kernels::Host => Route::CpuKernels,
        Kernels::Cube => Route::CubeKernels,
        Kernels::None => Route::Composition,
    }
}

/// This crate's kernels for a device, by its backend: only the backends whose feature this build
/// has get theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernels {
    /// The CPU kernels (Flex, NdArray).
    #[cfg_attr(not(any(feature = "flex", feature = "ndarray")), allow(dead_code))]
    Host,
    /// The CubeCL kernels (wgpu), for the plans they address.
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    Cube,
    /// None: the device runs the composition of Burn's own ops.
    None,
}

impl Kernels {
    /// The kernels that run an op on `device`. The first op that runs the composition only
    /// because this build lacks its backend's feature logs a warning (`route` asks silently).
    pub(crate) fn of(device: &Device) -> Self {
        let kernels = Self::decide(device);
        if kernels == Self::None {
            warn_if_feature_missing(device);
        }
        kernels
    }

    /// The kernels of `device`'s backend in this build.
    fn decide(device: &Device) -> Self {
        if crate::diagnostics::composition_forced() {
            return Self::None;
        }
        match device.as_dispatch().clone().inner() {
            #[cfg(feature = "flex")]
            burn::backend::DispatchDevice::Flex(_) => Self::Host,
            #[cfg(feature = "ndarray")]
            burn::backend::DispatchDevice::NdArray(_) => Self::Host,
            #[cfg(feature = "wgpu")]
            burn::backend::DispatchDevice::Cube(_) => Self::Cube,
            _ => Self::None,
        }
    }
}

/// The feature of this crate with kernels for the backend of `device`, whether on or not.
fn backend_feature(device: &Device) -> Option<&'static str> {
    let type_id = device.as_dispatch().id().type_id;
    // Burn's dispatch device keeps its backend in the upper byte of the type id.
    match DispatchDeviceId::try_from(type_id >> 8).ok()? {
        DispatchDeviceId::Flex => Some("flex"),
        DispatchDeviceId::NdArray => Some("ndarray"),
        DispatchDeviceId::Cube => Some("wgpu"),
        _ => None,
    }
}

/// The feature of this crate with kernels for the backend of `device`, where this build lacks it.
fn missing_feature(device: &Device) -> Option<&'static str> {
    backend_feature(device).filter(|feature| match *feature {
        "flex" => !cfg!(feature = "flex"),
        "ndarray" => !cfg!(feature = "ndarray"),
        _ => !cfg!(feature = "wgpu"),
    })
}

/// Logs, once per process, that `device` runs the composition because this build lacks the
/// feature with its backend's kernels.
fn warn_if_feature_missing(device: &Device) {
    static WARNED: Once = Once::new();
    if let Some(feature) = missing_feature(device) {
        WARNED.call_once(|| {
            log::warn!(
                "burn-unpool: {device:?} runs max pooling and unpooling as a composition of Burn \
                 tensor ops (several times slower, more memory): enable burn-unpool's feature \
                 `{feature}` for its kernels"
            );
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `device`'s backend is named by `feature`, which this build has, so it takes `expected`.
    #[cfg(any(feature = "flex", feature = "ndarray", feature = "wgpu"))]
    fn assert_takes(device: Device, feature: &str, expected: Route) {
        assert_eq!(backend_feature(&device), Some(feature));
        assert_eq!(missing_feature(&device), None);
        assert_eq!(route(&device), expected);
    }

    #[test]
    #[cfg(feature = "flex")]
    fn a_flex_device_takes_the_cpu_kernels_of_the_flex_feature() {
        assert_takes(Device::flex(), "flex", Route::CpuKernels);
    }

    #[test]
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    fn an_ndarray_device_takes_the_cpu_kernels_of_the_ndarray_feature() {
        assert_takes(Device::ndarray(), "ndarray", Route::CpuKernels);
    }

    #[test]
    #[cfg(feature = "wgpu")]
    fn a_wgpu_device_takes_the_cube_kernels_of_the_wgpu_feature() {
        let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
        assert_takes(device, "wgpu", Route::CubeKernels);
    }
}
