//! Index read-backs inside an imported forward (feature `__diagnostics`): none where the importer
//! traced a `MaxUnpool`'s indices to the model's own pool, one per `MaxUnpool` where the model
//! computes them otherwise. Its own test binary: the counters are per process, and no other test
//! may run beside it.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::diagnostics::counts;
use burn_unpool_tests::devices;

#[allow(clippy::all, unused)]
mod torch_segnet2d {
    include!(concat!(env!("OUT_DIR"), "/onnx/torch/segnet2d_odd.rs"));
}

#[allow(clippy::all, unused)]
mod computed_indices {
    include!(concat!(
        env!("OUT_DIR"),
        "/onnx/node/test_maxunpool_export_without_output_shape/model.rs"
    ));
}

/// The device index checks `op` ran.
fn index_checks(op: impl FnOnce()) -> usize {
    let before = counts().device_index_checks;
    op();
    counts().device_index_checks - before
}

fn ramp<const R: usize>(shape: [usize; R], device: &Device) -> Tensor<R> {
    let len = shape.iter().product::<usize>();
    let values: Vec<f32> = (0..len).map(|v| ((v * 37) % 101) as f32 - 50.0).collect();
    Tensor::from_data(TensorData::new(values, shape), (device, DType::F32))
}

#[test]
fn traced_indices_are_not_read_back_and_computed_ones_are_once_per_unpool() {
    for (name, device) in devices() {
        let gpu = name == "wgpu";
        let model = torch_segnet2d::Model::from_embedded(&device);
        let checks = index_checks(|| {
            let y = model.forward(ramp([2, 3, 9, 11], &device));
            assert_eq!(y.dims(), [2, 2, 9, 11], "{name}");
        });
        assert_eq!(
            checks, 0,
            "{name}: a PyTorch-exported encoder/decoder (two MaxUnpool) read indices back"
        );

        // The ONNX node test's indices are a graph input: checked, once for its one MaxUnpool.
        let model = computed_indices::Model::from_embedded(&device);
        let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], &device);
        let indices = Tensor::<4, Int>::from_data(
            TensorData::new(vec![5i64, 7, 13, 15], [1, 1, 2, 2]),
            (&device, DType::I64),
        );
        let checks = index_checks(|| {
            model.forward(x, indices);
        });
        assert_eq!(
            checks,
            usize::from(gpu),
            "{name}: one check per MaxUnpool on a GPU"
        );
    }
}
