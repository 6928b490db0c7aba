//! What an importer knows of a model's indices: the plane offsets from the shape alone, and pool
//! indices re-based by the model's own arithmetic, unpooled without an index check.
#![cfg(feature = "flex")]

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::onnx::{MaxUnpoolAttributes, PoolIndexSource, max_unpool_onnx, plane_offsets};

#[test]
fn plane_offsets_read_the_shape_only() {
    let side: usize = if cfg!(target_pointer_width = "64") {
        1 << 20
    } else {
        1 << 14
    };
    let offsets = plane_offsets([2, 3, side, side], &Device::flex());
    let plane = (side * side) as i64;
    let expected = TensorData::from([
        [[[0i64]], [[plane]], [[2 * plane]]],
        [[[3 * plane]], [[4 * plane]], [[5 * plane]]],
    ]);
    offsets.into_data().assert_eq(&expected, false);
}

#[test]
#[should_panic(expected = "has more elements than")]
fn plane_offsets_refuse_a_shape_no_index_addresses() {
    #[cfg(target_pointer_width = "64")]
    plane_offsets([2, 1, 1 << 62], &Device::flex());
    #[cfg(target_pointer_width = "32")]
    plane_offsets([2, 1, 1 << 31], &Device::flex());
}

fn unpool_of_pool_indices(plane_stride: Option<usize>, output: [usize; 4]) -> Vec<f32> {
    let device = Device::flex();
    let x = Tensor::<4>::from_floats([[[[1.0, 2.0]], [[3.0, 4.0]]]], &device);
    let indices = Tensor::<4, Int>::from_data(
        TensorData::new(vec![5i64, 2, 8, 15], [1, 2, 1, 2]),
        (&device, DType::I64),
    );
    let source = PoolIndexSource::new(&[1, 2, 2, 4], plane_stride);
    let attributes = MaxUnpoolAttributes::new(vec![2, 2])
        .with_strides(vec![2, 2])
        .with_pool_indices(source);
    let y = max_unpool_onnx(x, indices, &attributes, Some(&output));
    y.into_data().try_to_vec::<f32>().expect("f32 values")
}

#[test]
fn traced_pool_indices_unpool_as_the_models_arithmetic_computes_them() {
    let same = unpool_of_pool_indices(Some(8), [1, 2, 2, 4]);
    let expected = [
        0., 0., 2., 0., 0., 1., 0., 0., 3., 0., 0., 0., 0., 0., 0., 4.,
    ];
    assert_eq!(same, expected);
    assert_eq!(unpool_of_pool_indices(None, [1, 2, 2, 4]), expected);
    let wider = unpool_of_pool_indices(Some(10), [1, 2, 2, 5]);
    let mut expected = vec![0.0; 20];
    (expected[5], expected[2], expected[10], expected[17]) = (1.0, 2.0, 3.0, 4.0);
    assert_eq!(wider, expected);
}

#[test]
#[should_panic(
    expected = "max_unpool_onnx: the indices' pool has input shape [1, 3, 2, 4], \
                           but x has shape [1, 2, 1, 2]: the rank, N and C must be x's"
)]
fn a_pool_of_other_planes_than_x_is_refused() {
    let device = Device::flex();
    let x = Tensor::<4>::zeros([1, 2, 1, 2], &device);
    let indices = Tensor::<4, Int>::zeros([1, 2, 1, 2], &device);
    let attributes = MaxUnpoolAttributes::new(vec![2, 2])
        .with_strides(vec![2, 2])
        .with_pool_indices(PoolIndexSource::new(&[1, 3, 2, 4], None));
    max_unpool_onnx(x, indices, &attributes, Some(&[1, 2, 2, 4]));
}

#[test]
#[should_panic(expected = "index 11 at position [0, 1, 0, 1] is out of range")]
fn re_based_indices_out_of_range_are_still_reported() {
    unpool_of_pool_indices(Some(4), [1, 2, 1, 4]);
}
