//! The acceptance cases of the seed documents (`shared/seeds`): the ONNX operator doc's two
//! MaxUnpool examples, and its two MaxPool-with-indices examples round-tripped through Burn's pool
//! and the index converters. Expected values are copied from the documents.

use burn::tensor::module::max_pool2d_with_indices;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_unpool::onnx::{
    MaxUnpoolAttributes, OutputShapeRule, column_major_to_row_major, global_to_per_plane,
    max_unpool_onnx, per_plane_to_global,
};
use burn_unpool::{MaxUnpoolOptions, max_unpool2d};
use burn_unpool_tests::{assert_bit_equal, devices};

fn seed_x_5x5() -> [[[[f32; 5]; 5]; 1]; 1] {
    let mut x = [[[[0.0f32; 5]; 5]; 1]; 1];
    for (i, row) in x[0][0].iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = (i * 5 + j + 1) as f32;
        }
    }
    x
}

#[test]
fn maxunpool_without_output_shape() {
    for (name, device) in devices() {
        let x = Tensor::<4>::from_floats([[[[1.0, 2.0], [3.0, 4.0]]]], &device);
        let indices = Tensor::<4, Int>::from_data(
            TensorData::from([[[[5i64, 7], [13, 15]]]]),
            (&device, DType::I64),
        );
        let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
        let y = max_unpool_onnx(x, indices, &attributes, None);
        let expected = TensorData::from([[[
            [0.0f32, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 2.0],
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 3.0, 0.0, 4.0],
        ]]]);
        assert_bit_equal(&y.into_data(), &expected, name);
    }
}

#[test]
fn maxunpool_with_output_shape_follows_the_reference() {
    for (name, device) in devices() {
        let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], &device);
        let indices = Tensor::<4, Int>::from_data(
            TensorData::from([[[[5i64, 7], [13, 15]]]]),
            (&device, DType::I64),
        );
        let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
        assert!(
            attributes
                .rules_differ(&[1, 1, 2, 2], &[1, 1, 5, 5])
                .unwrap()
        );
        let y = max_unpool_onnx(x, indices, &attributes, Some(&[1, 1, 5, 5]));
        let expected = TensorData::from([[[
            [0.0f32, 0.0, 0.0, 0.0, 0.0],
            [0.0, 5.0, 0.0, 6.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 7.0, 0.0, 8.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0],
        ]]]);
        assert_bit_equal(&y.into_data(), &expected, name);
    }
}

#[test]
fn maxunpool_with_output_shape_under_onnx_runtime_rule() {
    // Hand-worked: read in the 5x5 output, 5 -> (1,0), 7 -> (1,2), 13 -> (2,3), 15 -> (3,0).
    for (name, device) in devices() {
        let x = Tensor::<4>::from_floats([[[[5.0, 6.0], [7.0, 8.0]]]], &device);
        let indices = Tensor::<4, Int>::from_data(
            TensorData::from([[[[5i64, 7], [13, 15]]]]),
            (&device, DType::I64),
        );
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_rule(OutputShapeRule::IndicesInOutputShape);
        let y = max_unpool_onnx(x, indices, &attributes, Some(&[1, 1, 5, 5]));
        let expected = TensorData::from([[[
            [0.0f32, 0.0, 0.0, 0.0, 0.0],
            [5.0, 0.0, 6.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 7.0, 0.0],
            [8.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0],
        ]]]);
        assert_bit_equal(&y.into_data(), &expected, name);
    }
}

#[test]
fn maxpool_with_argmax_precomputed_pads_round_trips() {
    for (name, device) in devices() {
        let image = Tensor::<4>::from_floats(seed_x_5x5(), &device);
        let pool = MaxPoolOptions::new([5, 5])
            .with_stride([1, 1])
            .with_padding([2, 2]);
        let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
        let expected_y = TensorData::from([[[
            [13.0f32, 14.0, 15.0, 15.0, 15.0],
            [18.0, 19.0, 20.0, 20.0, 20.0],
            [23.0, 24.0, 25.0, 25.0, 25.0],
            [23.0, 24.0, 25.0, 25.0, 25.0],
            [23.0, 24.0, 25.0, 25.0, 25.0],
        ]]]);
        assert_bit_equal(&pooled.clone().into_data(), &expected_y, name);
        // The document's z, as global i64 indices.
        let expected_z = TensorData::from([[[
            [12i64, 13, 14, 14, 14],
            [17, 18, 19, 19, 19],
            [22, 23, 24, 24, 24],
            [22, 23, 24, 24, 24],
            [22, 23, 24, 24, 24],
        ]]]);
        let global = per_plane_to_global(indices.clone(), 25).cast(DType::I64);
        assert_bit_equal(&global.clone().into_data(), &expected_z, name);
        let back = global_to_per_plane(global, 25).cast(indices.dtype());
        assert_bit_equal(&back.into_data(), &indices.clone().into_data(), name);

        // Unpooling puts each maximum back where it came from (duplicates write equal values);
        // pooling that again gives the pooled values back.
        let unpooled = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
        let mut expected = [[[[0.0f32; 5]; 5]; 1]; 1];
        for (flat, v) in [
            (12, 13.0),
            (13, 14.0),
            (14, 15.0),
            (17, 18.0),
            (18, 19.0),
            (19, 20.0),
            (22, 23.0),
            (23, 24.0),
            (24, 25.0),
        ] {
            expected[0][0][flat / 5][flat % 5] = v;
        }
        assert_bit_equal(
            &unpooled.clone().into_data(),
            &TensorData::from(expected),
            name,
        );
        let (again, _) = max_pool2d_with_indices(unpooled, pool);
        assert_bit_equal(&again.into_data(), &expected_y, name);
    }
}

#[test]
fn maxpool_with_argmax_precomputed_strides_storage_order_1_round_trips() {
    for (name, device) in devices() {
        let image = Tensor::<4>::from_floats(seed_x_5x5(), &device);
        let pool = MaxPoolOptions::new([2, 2]).with_stride([2, 2]);
        let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
        assert_bit_equal(
            &pooled.clone().into_data(),
            &TensorData::from([[[[7.0f32, 9.0], [17.0, 19.0]]]]),
            name,
        );
        // The document's z was computed with storage_order = 1 (column-major).
        let z = Tensor::<4, Int>::from_data(
            TensorData::from([[[[6i64, 16], [8, 18]]]]),
            (&device, DType::I64),
        );
        let row_major = column_major_to_row_major(z, &[5, 5]);
        let burn_global = per_plane_to_global(indices.clone(), 25).cast(DType::I64);
        assert_bit_equal(
            &row_major.clone().into_data(),
            &burn_global.into_data(),
            name,
        );

        // The indices address the pool's 5x5 input, not the inferred 4x4 plane: unpooling them
        // into 5x5 needs ONNX Runtime's rule (the reference rule would read them in 4x4).
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_rule(OutputShapeRule::IndicesInOutputShape);
        assert!(
            attributes
                .rules_differ(&[1, 1, 2, 2], &[1, 1, 5, 5])
                .unwrap()
        );
        let unpooled = max_unpool_onnx(pooled.clone(), row_major, &attributes, Some(&[1, 1, 5, 5]));
        let burn_unpooled = max_unpool2d(
            pooled,
            indices,
            MaxUnpoolOptions::from_pool(&pool).with_output_size([5, 5]),
        );
        let mut expected = [[[[0.0f32; 5]; 5]; 1]; 1];
        for (row, col, v) in [(1, 1, 7.0), (1, 3, 9.0), (3, 1, 17.0), (3, 3, 19.0)] {
            expected[0][0][row][col] = v;
        }
        assert_bit_equal(
            &unpooled.clone().into_data(),
            &TensorData::from(expected),
            name,
        );
        assert_bit_equal(
            &burn_unpooled.into_data(),
            &TensorData::from(expected),
            name,
        );
        let (again, _) = max_pool2d_with_indices(unpooled, pool);
        assert_bit_equal(
            &again.into_data(),
            &TensorData::from([[[[7.0f32, 9.0], [17.0, 19.0]]]]),
            name,
        );
    }
}

#[test]
fn global_indices_beyond_i32_are_widened_not_truncated() {
    for (name, device) in devices() {
        // Two planes of 2^31 positions: the second plane's offsets exceed i32::MAX.
        let indices = Tensor::<3, Int>::from_data(
            TensorData::new(vec![5i32, 7], [1, 2, 1]),
            (&device, DType::I32),
        );
        let global = per_plane_to_global(indices, 1 << 31);
        assert_eq!(global.dtype(), DType::I64, "{name}");
        assert_bit_equal(
            &global.clone().into_data(),
            &TensorData::new(vec![5i64, (1i64 << 31) + 7], [1, 2, 1]),
            name,
        );
        let back = global_to_per_plane(global, 1 << 31);
        assert_bit_equal(
            &back.into_data(),
            &TensorData::new(vec![5i64, 7], [1, 2, 1]),
            name,
        );
    }
}
