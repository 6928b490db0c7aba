//! `--device`: where the example runs.

use burn::tensor::Device;

/// A device the command line can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// The faster CPU backend for this network (Flex; see the example's README for the measurement).
    Cpu,
    /// Burn's Flex CPU backend.
    Flex,
    /// Burn's NdArray CPU backend.
    Ndarray,
    /// wgpu's default adapter (build with `--features wgpu`; kernels in WGSL unless the build
    /// also has `vulkan`).
    Wgpu,
    /// Vulkan through CubeCL's SPIR-V compiler (build with `--features vulkan`).
    Vulkan,
}

impl DeviceChoice {
    /// The device, or why this build cannot make it.
    pub fn device(self) -> Result<Device, String> {
        #[allow(deprecated)]
        match self {
            DeviceChoice::Cpu | DeviceChoice::Flex => Ok(Device::flex()),
            #[cfg(not(burn_next))]
            DeviceChoice::Ndarray => Ok(Device::ndarray()),
            #[cfg(burn_next)]
            DeviceChoice::Ndarray => {
                Err("Burn 0.23 has no NdArray backend: use --device flex".into())
            }
            DeviceChoice::Wgpu | DeviceChoice::Vulkan => gpu(self),
        }
    }
}

/// The GPU device for `choice`, or the cargo feature this build lacks for it.
fn gpu(choice: DeviceChoice) -> Result<Device, String> {
    #[cfg(feature = "vulkan-device")]
    if choice == DeviceChoice::Vulkan {
        return Ok(Device::vulkan(burn::tensor::DeviceKind::default()));
    }
    #[cfg(feature = "wgpu-device")]
    if choice == DeviceChoice::Wgpu {
        return Ok(Device::wgpu(burn::tensor::DeviceKind::default()));
    }
    // Each GPU device is named after the cargo feature that adds it.
    let name = match choice {
        DeviceChoice::Vulkan => "vulkan",
        _ => "wgpu",
    };
    Err(format!(
        "--device {name} needs a GPU build: cargo run --release -p segnet --features {name} -- ..."
    ))
}

#[cfg(test)]
mod tests {
    use super::DeviceChoice;

    #[cfg(not(feature = "vulkan-device"))]
    #[test]
    fn a_build_without_vulkan_names_the_feature_that_adds_it() {
        assert_names_its_feature(DeviceChoice::Vulkan, "vulkan");
    }

    #[cfg(not(feature = "wgpu-device"))]
    #[test]
    fn a_build_without_wgpu_names_the_feature_that_adds_it() {
        assert_names_its_feature(DeviceChoice::Wgpu, "wgpu");
    }

    /// `vulkan` implies `wgpu`: without `vulkan`, at least one GPU device is missing.
    #[cfg(not(feature = "vulkan-device"))]
    fn assert_names_its_feature(choice: DeviceChoice, name: &str) {
        let error = choice.device().unwrap_err();
        assert!(error.contains(&format!("--device {name}")), "{error}");
        assert!(error.contains(&format!("--features {name}")), "{error}");
    }

    #[test]
    fn the_cpu_devices_need_no_feature() {
        for choice in [DeviceChoice::Cpu, DeviceChoice::Flex] {
            assert!(choice.device().is_ok(), "{choice:?}");
        }
        let ndarray = DeviceChoice::Ndarray.device();
        match cfg!(burn_next) {
            false => assert!(ndarray.is_ok()),
            true => assert!(ndarray.unwrap_err().contains("--device flex")),
        }
    }
}
