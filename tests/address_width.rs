//! Sizes and indices at the edges of the address space, at either pointer width. On a 32-bit target
//! (CI runs this suite on i686) `usize` is 32 bits and one allocation holds at most `isize::MAX` =
//! 2^31 - 1 bytes, so values that are merely large on 64 bits meet their narrowest case there: an
//! index of 2^32 read as a 32-bit `usize` would be 0, a valid position. Each case is written to
//! be refused in the same words at both widths (its sizes scale with `usize::BITS`).

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::onnx::{
    MaxUnpoolAttributes, column_major_to_row_major, global_to_per_plane, max_unpool_onnx,
    max_unpool_onnx_i64, per_plane_to_global,
};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool_backward, max_unpool1d, max_unpool2d};
use burn_unpool_tests::{devices, on_both_routes, outcome};

fn assert_refused(what: &str, f: impl FnOnce(), parts: &[&str]) {
    let text = outcome(f).expect_err("the call must be refused");
    for part in parts {
        assert!(text.contains(part), "{what}: {text:?} lacks {part:?}");
    }
}

/// Indices of `dtype` from `values` (i64, converted), shape `[1, 1, len]`.
fn indices(values: &[i64], dtype: DType, device: &Device) -> Tensor<3, Int> {
    let data = TensorData::new(values.to_vec(), [1, 1, values.len()]).convert_dtype(dtype);
    Tensor::from_data(data, (device, dtype))
}

#[test]
fn indices_past_u32_and_isize_are_refused_as_themselves() {
    // Each is out of range of a plane of 6 positions. Cut to 32 bits, 2^32 would be 0 and
    // 2^32 + 5 would be 5, both in range; 2^31 is isize::MAX + 1 on 32 bits (negative as an
    // isize), u32::MAX is usize::MAX there.
    let bad = [
        1i64 << 31,
        u32::MAX as i64,
        1 << 32,
        (1 << 32) + 5,
        i64::MAX,
    ];
    for (name, d) in devices() {
        for dtype in [DType::I64, DType::U64] {
            if !d.supports_dtype(dtype) {
                continue;
            }
            for &value in &bad {
                let shown = format!("index {value}");
                let what = format!("{name} {dtype:?} {value}");
                let idx = indices(&[0, value, 1], dtype, &d);
                on_both_routes(|route| {
                    let what = format!("{what} ({route})");
                    let x = Tensor::<3>::ones([1, 1, 3], &d);
                    let options = MaxUnpoolOptions::new([2]);
                    assert_refused(
                        &what,
                        || drop(max_unpool1d(x, idx.clone(), options.clone())),
                        &[&shown, "position [0, 0, 1]", "[0, 6)"],
                    );
                    let global = options.clone().with_index_layout(IndexLayout::Global);
                    let x = Tensor::<3>::ones([1, 1, 3], &d);
                    assert_refused(
                        &what,
                        || drop(max_unpool1d(x, idx.clone(), global)),
                        &[&shown, "position [0, 0, 1]", "[0, 6)"],
                    );
                    let grad = Tensor::<3>::ones([1, 1, 6], &d);
                    assert_refused(
                        &what,
                        || drop(max_unpool_backward(grad, idx.clone(), options)),
                        &[&shown, "position [0, 0, 1]", "[0, 6)"],
                    );
                });
                // ONNX: global indices, as an imported model passes them.
                let x = Tensor::<3>::ones([1, 1, 3], &d);
                let attributes = MaxUnpoolAttributes::new(vec![2]).with_strides(vec![2]);
                assert_refused(
                    &format!("{what} (onnx)"),
                    || drop(max_unpool_onnx(x, idx.clone(), &attributes, None)),
                    &[&shown, "[0, 6)"],
                );
            }
        }
    }
}

/// The refusal of unpooling one value into a `side` x `side` output on `device`.
fn square_output_refusal(side: usize, device: &Device) -> String {
    let x = Tensor::<4>::ones([1, 1, 1, 1], device);
    let idx = Tensor::<4, Int>::from_data(
        TensorData::new(vec![0i64], [1, 1, 1, 1]),
        (device, DType::I64),
    );
    let options = MaxUnpoolOptions::new([1, 1]).with_output_size([side, side]);
    outcome(|| drop(max_unpool2d(x, idx, options))).expect_err("the call must be refused")
}

#[test]
fn output_sizes_whose_element_count_passes_usize_are_refused() {
    // 2^(BITS/2) per side: 2^BITS elements, one more than usize::MAX (2^16 x 2^16 on 32 bits).
    let side = 1usize << (usize::BITS / 2);
    for (name, d) in devices() {
        let text = square_output_refusal(side, &d);
        let shape = format!("[1, 1, {side}, {side}]");
        for part in [shape.as_str(), "more elements than usize::MAX"] {
            assert!(text.contains(part), "{name}: {text:?} lacks {part:?}");
        }
    }
}

#[test]
fn outputs_past_isize_max_bytes_are_refused_before_any_allocation() {
    // 2^(BITS/2 - 1) per side: 2^(BITS-2) f32 elements, a count a usize holds, and 2^BITS bytes,
    // past isize::MAX (2^15 x 2^15 on 32 bits: 4 GiB, where one allocation holds under 2 GiB).
    let side = 1usize << (usize::BITS / 2 - 1);
    let bytes = 4 * (side as u128) * (side as u128);
    for (name, d) in devices() {
        let text = square_output_refusal(side, &d);
        let (shape, needs) = (
            format!("[1, 1, {side}, {side}]"),
            format!("needs {bytes} bytes"),
        );
        for part in [shape.as_str(), needs.as_str(), "one buffer may hold"] {
            assert!(text.contains(part), "{name}: {text:?} lacks {part:?}");
        }
    }
}

#[test]
fn onnx_output_shapes_past_usize_are_refused_as_themselves() {
    // 2^32 + 2 does not fit a 32-bit usize; cut to 32 bits it would be 2, a valid size. On 64
    // bits it fits, and the output is refused for its element count (past 2^64) instead.
    let wide = (1i64 << 32) + 2;
    for (name, d) in devices() {
        let x = Tensor::<4>::ones([1, 1, 1, 1], &d);
        let idx = Tensor::<4, Int>::zeros([1, 1, 1, 1], &d);
        let attributes = MaxUnpoolAttributes::new(vec![1, 1]);
        let text = outcome(|| {
            drop(max_unpool_onnx_i64(
                x,
                idx,
                &attributes,
                &[1, 1, wide, wide],
            ))
        })
        .expect_err("the call must be refused");
        assert!(text.contains(&wide.to_string()), "{name}: {text}");
        let reason = if usize::BITS == 32 {
            "past usize::MAX"
        } else {
            "more elements than usize::MAX"
        };
        assert!(text.contains(reason), "{name}: {text}");
    }
}

/// Index values of `indices` (i64), in row-major order.
fn values<const R: usize>(indices: Tensor<R, Int>) -> Vec<i64> {
    indices
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap()
}

#[test]
fn onnx_index_conversions_past_u32_give_the_same_values_at_both_widths() {
    // Index arithmetic, not memory: planes of 2^32 positions and strides past u32 are as valid on
    // a 32-bit target as on a 64-bit one. Expected values worked by hand from the positions.
    for (name, d) in devices() {
        if !d.supports_dtype(DType::I64) {
            continue;
        }
        let i64s = |v: Vec<i64>| {
            let len = v.len();
            Tensor::<4, Int>::from_data(TensorData::new(v, [1, len, 1, 1]), (&d, DType::I64))
        };
        // A 65536 x 65536 plane (2^32 positions): (row 1, column 2) is 2 * 65536 + 1 column-major
        // and 65536 + 2 row-major; the second plane starts at 2^32.
        let plane = 1i64 << 32;
        let converted =
            column_major_to_row_major(i64s(vec![131_073, plane + 131_073]), &[1 << 16, 1 << 16]);
        assert_eq!(values(converted), [65_538, plane + 65_538], "{name}");
        // A [2, 2^31, 4] plane: (1, 3, 2) is 1 + 3 * 2 + 2 * 2^32 column-major and
        // 1 * 2^33 + 3 * 4 + 2 row-major (a row-major stride of 2^33, past u32).
        let one = Tensor::<5, Int>::from_data(
            TensorData::new(vec![(2i64 << 32) + 7], [1, 1, 1, 1, 1]),
            (&d, DType::I64),
        );
        let converted = column_major_to_row_major(one, &[2, 1 << 31, 4]);
        assert_eq!(values(converted), [(1i64 << 33) + 14], "{name}");
        // Planes of u32::MAX positions: the second plane's index 7 is u32::MAX + 7 globally.
        let plane_len = u32::MAX as usize;
        let per_plane = Tensor::<3, Int>::from_data(
            TensorData::new(vec![5i64, 7], [1, 2, 1]),
            (&d, DType::I64),
        );
        let global = per_plane_to_global(per_plane, plane_len);
        let expected = vec![5i64, u32::MAX as i64 + 7];
        let got = global
            .clone()
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>();
        assert_eq!(got.unwrap(), expected, "{name}");
        let back = global_to_per_plane(global, plane_len)
            .into_data()
            .convert::<i64>();
        assert_eq!(back.try_to_vec::<i64>().unwrap(), [5, 7], "{name}");
    }
}
