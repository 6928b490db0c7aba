//! The acceptance cases of the seed documents: the ONNX operator doc's two MaxUnpool examples, and
//! its two MaxPool-with-indices examples round-tripped through Burn's pool and the index converters.
//! The inputs and expected outputs are read from the documents' own example code, copied verbatim
//! into `data/seeds` (see its README).

use std::collections::HashMap;

use burn::tensor::module::max_pool2d_with_indices;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_unpool::onnx::{
    MaxUnpoolAttributes, OutputShapeRule, column_major_to_row_major, global_to_per_plane,
    max_unpool_onnx, per_plane_to_global,
};
use burn_unpool::{MaxUnpoolOptions, max_unpool2d};
use burn_unpool_tests::{assert_bit_equal, devices, onnx_index_dtype, where_supported};

/// An array of a seed example, row-major.
#[derive(Clone, Debug)]
struct SeedArray {
    shape: Vec<usize>,
    values: Vec<f64>,
}

impl SeedArray {
    fn f32(&self) -> TensorData {
        let values: Vec<f32> = self.values.iter().map(|&v| v as f32).collect();
        TensorData::new(values, self.shape.clone())
    }

    fn i64(&self) -> TensorData {
        let values: Vec<i64> = self.values.iter().map(|&v| v as i64).collect();
        TensorData::new(values, self.shape.clone())
    }

    fn usizes(&self) -> Vec<usize> {
        self.values.iter().map(|&v| v as usize).collect()
    }
}

/// The worked examples of a seed excerpt: for each test name (`expect(.., name=..)`), the arrays
/// its code defines (`name = np.array(..)`), by variable name.
fn examples(text: &str) -> HashMap<String, HashMap<String, SeedArray>> {
    let mut examples = HashMap::new();
    let mut arrays = HashMap::new();
    for (i, part) in text.split("expect(").enumerate() {
        if i > 0 {
            let quoted = part.split("name=").nth(1).expect("expect(.., name=..)");
            let name = quoted[1..]
                .split(['"', '\''])
                .next()
                .expect("a quoted name");
            examples.insert(name.to_string(), std::mem::take(&mut arrays));
        }
        let mut rest = part;
        while let Some(at) = rest.find("np.array(") {
            let name = rest[..at]
                .trim_end()
                .trim_end_matches('=')
                .split_whitespace()
                .last();
            let mut array = &rest[at + "np.array(".len()..];
            let parsed = parse_list(&mut array);
            arrays.insert(name.expect("a variable name").to_string(), parsed);
            rest = array;
        }
    }
    examples
}

/// A nested Python list or tuple of numbers at the start of `text` (leading blanks allowed);
/// `text` is advanced past it.
fn parse_list(text: &mut &str) -> SeedArray {
    *text = text.trim_start();
    let close = match text.chars().next() {
        Some('[') => ']',
        Some('(') => ')',
        other => panic!("a list or tuple, got {other:?}"),
    };
    *text = &text[1..];
    let (mut children, mut values) = (Vec::<SeedArray>::new(), Vec::new());
    loop {
        *text = text.trim_start().trim_start_matches(',').trim_start();
        match text.chars().next() {
            Some(c) if c == close => break,
            Some('[' | '(') => children.push(parse_list(text)),
            _ => {
                let end = text
                    .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '.'))
                    .expect("a number then more");
                values.push(text[..end].parse::<f64>().expect("a number"));
                *text = &text[end..];
            }
        }
    }
    *text = &text[1..];
    if children.is_empty() {
        return SeedArray {
            shape: vec![values.len()],
            values,
        };
    }
    let shape = std::iter::once(children.len())
        .chain(children[0].shape.iter().copied())
        .collect();
    let values = children
        .into_iter()
        .flat_map(|child| child.values)
        .collect();
    SeedArray { shape, values }
}

fn maxunpool_examples() -> HashMap<String, HashMap<String, SeedArray>> {
    examples(include_str!("data/seeds/onnx_maxunpool_examples.txt"))
}

fn maxpool_examples() -> HashMap<String, HashMap<String, SeedArray>> {
    examples(include_str!(
        "data/seeds/onnx_maxpool_with_argmax_examples.txt"
    ))
}

#[test]
fn the_excerpts_hold_the_four_examples() {
    let unpool = maxunpool_examples();
    let without = &unpool["test_maxunpool_export_without_output_shape"];
    assert_eq!(without["xT"].shape, [1, 1, 2, 2]);
    assert_eq!(without["y"].shape, [1, 1, 4, 4]);
    let with = &unpool["test_maxunpool_export_with_output_shape"];
    assert_eq!(with["output_shape"].usizes(), [1, 1, 5, 5]);
    assert_eq!(with["y"].values[6], 5.0);
    let pool = maxpool_examples();
    assert_eq!(
        pool["test_maxpool_with_argmax_2d_precomputed_pads"]["z"].shape,
        [1, 1, 5, 5]
    );
    assert_eq!(
        pool["test_maxpool_with_argmax_2d_precomputed_strides"]["z"].values,
        [6.0, 16.0, 8.0, 18.0]
    );
}

#[test]
fn maxunpool_without_output_shape() {
    let example = &maxunpool_examples()["test_maxunpool_export_without_output_shape"];
    for (name, device) in devices() {
        let x = Tensor::<4>::from_data(example["xT"].f32(), &device);
        let indices = Tensor::<4, Int>::from_data(example["xI"].i64(), (&device, DType::I64));
        let attributes = MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2, 2]);
        let y = max_unpool_onnx(x, indices, &attributes, None);
        assert_bit_equal(&y.into_data(), &example["y"].f32(), name);
    }
}

#[test]
fn maxunpool_with_output_shape_follows_the_reference() {
    let example = &maxunpool_examples()["test_maxunpool_export_with_output_shape"];
    let output_shape = example["output_shape"].usizes();
    for (name, device) in devices() {
        let x = Tensor::<4>::from_data(example["xT"].f32(), &device);
        let indices = Tensor::<4, Int>::from_data(example["xI"].i64(), (&device, DType::I64));
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_rule(OutputShapeRule::Reference);
        assert!(attributes.rules_differ(&x.dims(), &output_shape).unwrap());
        let y = max_unpool_onnx(x, indices, &attributes, Some(&output_shape));
        assert_bit_equal(&y.into_data(), &example["y"].f32(), name);
    }
}

#[test]
fn maxunpool_with_output_shape_under_onnx_runtime_rule() {
    // The same inputs read in the 5x5 output, worked by hand: 5 -> (1,0), 7 -> (1,2),
    // 13 -> (2,3), 15 -> (3,0).
    let example = &maxunpool_examples()["test_maxunpool_export_with_output_shape"];
    for (name, device) in devices() {
        let x = Tensor::<4>::from_data(example["xT"].f32(), &device);
        let indices = Tensor::<4, Int>::from_data(example["xI"].i64(), (&device, DType::I64));
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_rule(OutputShapeRule::IndicesInOutputShape);
        let y = max_unpool_onnx(
            x,
            indices,
            &attributes,
            Some(&example["output_shape"].usizes()),
        );
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

/// `values` at their flat `indices` of a zero plane of `len` values, the last write winning: what
/// unpooling a pool's own output with its own indices must give (hand-written, not the crate's).
fn scatter_plane(values: &[f64], indices: &[f64], len: usize) -> Vec<f32> {
    let mut plane = vec![0.0f32; len];
    for (&value, &index) in values.iter().zip(indices) {
        plane[index as usize] = value as f32;
    }
    plane
}

#[test]
fn maxpool_with_argmax_precomputed_pads_round_trips() {
    let example = &maxpool_examples()["test_maxpool_with_argmax_2d_precomputed_pads"];
    let (y, z) = (&example["y"], &example["z"]);
    for (name, device) in devices() {
        let image = Tensor::<4>::from_data(example["x"].f32(), &device);
        let pool = MaxPoolOptions::new([5, 5])
            .with_stride([1, 1])
            .with_padding([2, 2]);
        let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
        assert_bit_equal(&pooled.clone().into_data(), &y.f32(), name);
        // One plane: the document's global z equals Burn's per-plane indices.
        let wide = onnx_index_dtype(&device);
        let global = per_plane_to_global(indices.clone(), 25).cast(wide);
        assert_bit_equal(
            &global.clone().into_data(),
            &z.i64().convert_dtype(wide),
            name,
        );
        let back = global_to_per_plane(global, 25).cast(indices.dtype());
        assert_bit_equal(&back.into_data(), &indices.clone().into_data(), name);

        // Unpooling puts each maximum back where it came from (duplicates write equal values);
        // pooling that again gives the pooled values back.
        let unpooled = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
        let expected = TensorData::new(scatter_plane(&y.values, &z.values, 25), [1, 1, 5, 5]);
        assert_bit_equal(&unpooled.clone().into_data(), &expected, name);
        let (again, _) = max_pool2d_with_indices(unpooled, pool);
        assert_bit_equal(&again.into_data(), &y.f32(), name);
    }
}

#[test]
fn maxpool_with_argmax_precomputed_strides_storage_order_1_round_trips() {
    let example = &maxpool_examples()["test_maxpool_with_argmax_2d_precomputed_strides"];
    let (y, z) = (&example["y"], &example["z"]);
    for (name, device) in devices() {
        let image = Tensor::<4>::from_data(example["x"].f32(), &device);
        let pool = MaxPoolOptions::new([2, 2]).with_stride([2, 2]);
        let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
        assert_bit_equal(&pooled.clone().into_data(), &y.f32(), name);
        // The document's z was computed with storage_order = 1 (column-major).
        let wide = onnx_index_dtype(&device);
        let z_tensor = Tensor::<4, Int>::from_data(z.i64().convert_dtype(wide), (&device, wide));
        let row_major = column_major_to_row_major(z_tensor, &[5, 5]);
        let burn_global = per_plane_to_global(indices.clone(), 25).cast(wide);
        assert_bit_equal(
            &row_major.clone().into_data(),
            &burn_global.clone().into_data(),
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
        let row_major_z: Vec<f64> = burn_global
            .into_data()
            .convert::<i64>()
            .iter::<i64>()
            .map(|v| v as f64)
            .collect();
        let expected = TensorData::new(scatter_plane(&y.values, &row_major_z, 25), [1, 1, 5, 5]);
        assert_bit_equal(&unpooled.clone().into_data(), &expected, name);
        assert_bit_equal(&burn_unpooled.into_data(), &expected, name);
        let (again, _) = max_pool2d_with_indices(unpooled, pool);
        assert_bit_equal(&again.into_data(), &y.f32(), name);
    }
}

#[test]
fn global_indices_beyond_i32_are_widened_not_truncated() {
    // Where the device has no I64, the conversion refuses them by name.
    for (name, device) in devices() {
        where_supported(&device, &[DType::I64], || {
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
        });
    }
}
