//! The imported model gives ONNX Runtime's output, to f32 rounding, on every device of the build.

use burn::tensor::Device;
use onnx_import::{Recorded, compare_with_onnxruntime};

// NdArray is deprecated in Burn 0.22 but still shipped (Burn 0.23 has none).
#[allow(deprecated)]
#[cfg_attr(all(burn_next, not(feature = "wgpu")), allow(unused_mut))]
fn devices() -> Vec<(&'static str, Device)> {
    let mut devices = vec![("flex", Device::flex())];
    #[cfg(not(burn_next))]
    devices.push(("ndarray", Device::ndarray()));
    #[cfg(feature = "wgpu")]
    devices.push(("wgpu", Device::wgpu(burn::tensor::DeviceKind::default())));
    devices
}

#[test]
fn the_imported_model_matches_onnx_runtime_on_every_device() {
    let recorded = Recorded::load();
    for (name, device) in devices() {
        let comparison = compare_with_onnxruntime(&recorded, &device);
        assert_eq!(comparison.shape, recorded.output_shape, "{name}");
        // Convolutions summed in another order differ in the last bits of f32.
        assert!(
            comparison.max_abs_diff <= 1e-5 * comparison.max_abs.max(1.0),
            "{name}: {comparison:?}"
        );
        // The recording is not trivial: an output of zeros would match a broken unpooling.
        assert!(comparison.max_abs > 0.1, "{name}: {comparison:?}");
    }
}
