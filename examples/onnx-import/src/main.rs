//! Runs the imported encoder/decoder on the device named on the command line and compares its
//! output with ONNX Runtime's.
//!
//! ```sh
//! cargo run -p onnx-import                            # Flex (CPU)
//! cargo run -p onnx-import -- ndarray
//! cargo run -p onnx-import --features wgpu -- wgpu    # the default GPU adapter
//! ```

use std::process::ExitCode;

use burn::tensor::Device;
use onnx_import::{Recorded, compare_with_onnxruntime};

/// The largest difference to ONNX Runtime accepted, relative to the output's largest value: f32
/// convolutions summed in another order differ in the last bits.
const TOLERANCE: f32 = 1e-5;

fn main() -> ExitCode {
    // A panic on Burn's device thread would leave this one waiting on it: end with the panic.
    burn_unpool_tools::exit_on_panic();
    let name = std::env::args().nth(1).unwrap_or_else(|| "flex".into());
    let device = match device(&name) {
        Ok(device) => device,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    let recorded = Recorded::load();
    let comparison = compare_with_onnxruntime(&recorded, &device);
    println!(
        "model:     model/encoder_decoder.onnx, recorded by {}",
        recorded.producer
    );
    println!("device:    {name}");
    println!(
        "input:     {:?} -> output {:?}",
        recorded.input_shape, comparison.shape
    );
    println!(
        "vs ONNX Runtime: max |difference| {:.2e} (largest |value| {:.2})",
        comparison.max_abs_diff, comparison.max_abs
    );
    if comparison.shape == recorded.output_shape
        && comparison.max_abs_diff <= TOLERANCE * comparison.max_abs.max(1.0)
    {
        println!("matches ONNX Runtime");
        ExitCode::SUCCESS
    } else {
        println!("differs from ONNX Runtime");
        ExitCode::FAILURE
    }
}

/// The device called `name`, or why this build has none of that name.
fn device(name: &str) -> Result<Device, String> {
    match name {
        "flex" | "cpu" => Ok(Device::flex()),
        #[cfg(not(burn_next))]
        #[allow(deprecated)]
        "ndarray" => Ok(Device::ndarray()),
        #[cfg(burn_next)]
        "ndarray" => Err("Burn 0.23 has no NdArray backend: use --device flex".into()),
        #[cfg(feature = "wgpu")]
        "wgpu" => Ok(Device::wgpu(burn::tensor::DeviceKind::default())),
        #[cfg(not(feature = "wgpu"))]
        "wgpu" => Err("the wgpu device needs `--features wgpu`".into()),
        other => Err(format!("unknown device {other:?}: flex, ndarray or wgpu")),
    }
}

#[cfg(test)]
mod tests {
    use super::device;

    #[test]
    fn devices_are_found_by_name_or_refused_with_the_names() {
        assert!(device("flex").is_ok() && device("cpu").is_ok());
        let ndarray = device("ndarray");
        match cfg!(burn_next) {
            false => assert!(ndarray.is_ok()),
            true => assert!(ndarray.unwrap_err().contains("--device flex")),
        }
        let unknown = device("tpu").unwrap_err();
        assert!(
            unknown.contains("\"tpu\"") && unknown.contains("flex"),
            "{unknown}"
        );
    }
}
