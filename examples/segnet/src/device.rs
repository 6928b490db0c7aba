//! `--device`: where the example runs.

use burn::tensor::Device;

/// A device the command line can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// The faster CPU backend for this network (Flex; see the README's measurement).
    Cpu,
    /// Burn's Flex CPU backend.
    Flex,
    /// Burn's NdArray CPU backend.
    Ndarray,
    /// wgpu's default adapter (build with `--features wgpu`).
    Wgpu,
    /// Vulkan through CubeCL's SPIR-V compiler (build with `--features wgpu`).
    Vulkan,
}

impl DeviceChoice {
    /// The device, or why this build cannot make it.
    pub fn device(self) -> Result<Device, String> {
        #[allow(deprecated)]
        match self {
            DeviceChoice::Cpu | DeviceChoice::Flex => Ok(Device::flex()),
            DeviceChoice::Ndarray => Ok(Device::ndarray()),
            DeviceChoice::Wgpu | DeviceChoice::Vulkan => gpu(self),
        }
    }
}

#[cfg(feature = "wgpu")]
fn gpu(choice: DeviceChoice) -> Result<Device, String> {
    use burn::tensor::DeviceKind;
    Ok(match choice {
        DeviceChoice::Vulkan => Device::vulkan(DeviceKind::default()),
        _ => Device::wgpu(DeviceKind::default()),
    })
}

#[cfg(not(feature = "wgpu"))]
fn gpu(choice: DeviceChoice) -> Result<Device, String> {
    Err(format!(
        "--device {} needs a GPU build: cargo run --release -p segnet --features wgpu -- ...",
        format!("{choice:?}").to_lowercase()
    ))
}
