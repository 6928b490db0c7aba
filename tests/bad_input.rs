//! Every bad input of the contract gets an error naming the problem and the values, from the
//! public function, on every device.

use std::cell::Cell;

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::onnx::{MaxUnpoolAttributes, max_unpool_onnx};
use burn_unpool::{
    IndexLayout, MaxUnpoolOptions, max_pool2d_with_indices, max_unpool, max_unpool_backward,
    max_unpool1d, max_unpool2d,
};
use burn_unpool_tests::{devices, outcome, panic_site};

/// The panic message of `f`, which must panic.
fn message(f: impl FnOnce()) -> String {
    outcome(f).expect_err("the call must fail")
}

fn assert_message(f: impl FnOnce(), parts: &[&str]) {
    let text = message(f);
    for part in parts {
        assert!(text.contains(part), "message {text:?} lacks {part:?}");
    }
}

fn x4(device: &Device, shape: [usize; 4]) -> Tensor<4> {
    Tensor::ones(shape, device)
}

fn i4(device: &Device, shape: [usize; 4]) -> Tensor<4, Int> {
    Tensor::zeros(shape, device)
}

#[test]
fn shapes_of_x_and_indices_differ() {
    for (_, d) in devices() {
        assert_message(
            || {
                drop(max_unpool2d(
                    x4(&d, [1, 2, 3, 3]),
                    i4(&d, [1, 2, 3, 4]),
                    MaxUnpoolOptions::new([2, 2]),
                ))
            },
            &["same shape", "[1, 2, 3, 3]", "[1, 2, 3, 4]"],
        );
    }
}

#[test]
fn rank_does_not_fit_the_options() {
    for (_, d) in devices() {
        assert_message(
            || {
                drop(max_unpool(
                    x4(&d, [1, 2, 3, 3]),
                    i4(&d, [1, 2, 3, 3]),
                    MaxUnpoolOptions::new([2]),
                ))
            },
            &["rank 3", "[1, 2, 3, 3]", "rank 4"],
        );
    }
}

#[test]
fn zero_kernel_stride_or_dilation() {
    // The builders refuse a zero as Burn's `MaxPoolOptions` do...
    assert_message(
        || drop(MaxUnpoolOptions::new([0, 2])),
        &["kernel_size", "non-zero", "[0, 2]"],
    );
    assert_message(
        || drop(MaxUnpoolOptions::new([2, 2]).with_stride([2, 0])),
        &["stride", "non-zero", "[2, 0]"],
    );
    assert_message(
        || drop(MaxUnpoolOptions::new([2, 2]).with_dilation([0, 1])),
        &["dilation", "non-zero", "[0, 1]"],
    );
    // ...and a zero written into the public fields is refused where the options are used.
    for (_, d) in devices() {
        let d = &d;
        let run = |o: MaxUnpoolOptions<2>| {
            move || drop(max_unpool2d(x4(d, [1, 1, 2, 2]), i4(d, [1, 1, 2, 2]), o))
        };
        let mut options = MaxUnpoolOptions::new([2, 2]);
        options.kernel_size = [0, 2];
        assert_message(run(options), &["kernel_size", "[0, 2]"]);
        let mut options = MaxUnpoolOptions::new([2, 2]);
        options.stride = [2, 0];
        assert_message(run(options), &["stride", "[2, 0]"]);
        let mut options = MaxUnpoolOptions::new([2, 2]);
        options.dilation = [0, 1];
        assert_message(run(options), &["dilation", "[0, 1]"]);
    }
}

#[test]
fn padding_leaves_no_output() {
    for (_, d) in devices() {
        let options = MaxUnpoolOptions::new([2, 2])
            .with_stride([1, 1])
            .with_padding_pairs([(0, 0), (2, 1)]);
        assert_message(
            || {
                drop(max_unpool2d(
                    x4(&d, [1, 1, 1, 1]),
                    i4(&d, [1, 1, 1, 1]),
                    options,
                ))
            },
            &["spatial axis 1", "padding (2 + 1)", "= -1"],
        );
    }
}

#[test]
fn full_output_size_with_other_batch_or_channels() {
    for (_, d) in devices() {
        let options = MaxUnpoolOptions::new([2, 2]).with_full_output_size([1, 3, 4, 4]);
        assert_message(
            || {
                drop(max_unpool2d(
                    x4(&d, [1, 2, 2, 2]),
                    i4(&d, [1, 2, 2, 2]),
                    options,
                ))
            },
            &["[1, 3, 4, 4]", "[1, 2, 2, 2]", "N and C"],
        );
        let options = MaxUnpoolOptions::new([2, 2]).with_full_output_size([1, 2, 4]);
        assert_message(
            || {
                drop(max_unpool2d(
                    x4(&d, [1, 2, 2, 2]),
                    i4(&d, [1, 2, 2, 2]),
                    options,
                ))
            },
            &["[1, 2, 4]"],
        );
    }
}

#[test]
fn index_below_zero() {
    for (name, d) in devices() {
        let indices = Tensor::<3, Int>::from_ints([[[0, 1], [2, -3]]], &d);
        assert_message(
            || {
                drop(max_unpool1d(
                    Tensor::<3>::ones([1, 2, 2], &d),
                    indices,
                    MaxUnpoolOptions::new([2]),
                ))
            },
            &["index -3", "position [0, 1, 1]", "[0, 4)", "per-plane"],
        );
        let _ = name;
    }
}

#[test]
fn index_past_the_plane() {
    for (_, d) in devices() {
        // The first bad index in row-major order is reported, even when later planes hold others.
        let indices = Tensor::<3, Int>::from_ints([[[0, 4], [9, 1]]], &d);
        assert_message(
            || {
                drop(max_unpool1d(
                    Tensor::<3>::ones([1, 2, 2], &d),
                    indices,
                    MaxUnpoolOptions::new([2]),
                ))
            },
            &["index 4", "position [0, 0, 1]", "[0, 4)"],
        );
    }
}

#[test]
fn global_index_past_the_tensor() {
    for (_, d) in devices() {
        let indices = Tensor::<3, Int>::from_ints([[[0, 5], [8, 1]]], &d);
        let options = MaxUnpoolOptions::new([2]).with_index_layout(IndexLayout::Global);
        assert_message(
            || {
                drop(max_unpool1d(
                    Tensor::<3>::ones([1, 2, 2], &d),
                    indices,
                    options,
                ))
            },
            &["index 8", "position [0, 1, 0]", "global", "[0, 8)"],
        );
    }
}

#[test]
fn explicit_output_size_too_small_for_the_indices() {
    for (_, d) in devices() {
        let indices = Tensor::<4, Int>::from_ints([[[[0, 3], [10, 15]]]], &d);
        let options = MaxUnpoolOptions::new([2, 2]).with_output_size([3, 3]);
        assert_message(
            || {
                drop(max_unpool2d(
                    Tensor::<4>::ones([1, 1, 2, 2], &d),
                    indices,
                    options,
                ))
            },
            &[
                "index 10",
                "position [0, 0, 1, 0]",
                "output shape [1, 1, 3, 3]",
                "[0, 9)",
            ],
        );
    }
}

#[test]
fn index_dtype_cannot_hold_the_indices() {
    // 2^16 x 2^16 = 2^32 positions per plane: i32 cannot address them. Checked before any
    // allocation. A GPU whose buffers cannot hold the 16 GiB output refuses it for that. A 32-bit
    // usize cannot count 2^32 positions: there 2^16 x (2^15 + 1), past i32 and inside usize.
    let (size, largest) = if usize::BITS == 64 {
        ([1 << 16, 1 << 16], "4294967295")
    } else {
        ([1 << 16, (1 << 15) + 1], "2147549183")
    };
    for (name, d) in devices() {
        let indices = Tensor::<4, Int>::from_data(
            TensorData::new(vec![0i32], [1, 1, 1, 1]),
            (&d, DType::I32),
        );
        let options = MaxUnpoolOptions::new([1, 1]).with_output_size(size);
        let text = message(|| {
            drop(max_unpool2d(
                Tensor::<4>::ones([1, 1, 1, 1], &d),
                indices,
                options,
            ))
        });
        let narrow = ["I32", largest, "use i64"]
            .iter()
            .all(|part| text.contains(part));
        let too_large = text.contains(&format!(
            "an output of shape [1, 1, {}, {}]",
            size[0], size[1]
        )) && text.contains("bytes one buffer may hold");
        // On 32 bits no allocation holds more than i32::MAX positions of any dtype, so the output
        // is refused for its bytes first: i32 indices address every output that can exist there.
        if usize::BITS == 32 {
            assert!(too_large, "{name}: {text}");
        } else {
            assert!(narrow || (name == "wgpu" && too_large), "{name}: {text}");
        }
    }
}

#[test]
fn narrow_index_dtype_cannot_address_the_output() {
    for (_, d) in devices() {
        // u8 addresses 256 positions; the plane has 300. Integer values, as a u8 label map.
        let (x, indices) = (
            TensorData::new(vec![1u8], [1, 1, 1]),
            TensorData::new(vec![0u8], [1, 1, 1]),
        );
        if !d.supports_dtype(DType::U8) {
            continue;
        }
        let x = Tensor::<3, Int>::from_data(x, (&d, DType::U8));
        let indices = Tensor::<3, Int>::from_data(indices, (&d, DType::U8));
        let options = MaxUnpoolOptions::new([1]).with_output_size([300]);
        assert_message(
            || drop(max_unpool1d(x, indices, options)),
            &[
                "indices of dtype U8",
                "largest valid index 299",
                "use i64 or u64",
            ],
        );
    }
}

#[test]
fn unsigned_index_past_the_range_is_reported_as_itself() {
    // Read through a signed 32-bit path, 2^31 would wrap to a negative value, and 2^64 - 1 to -1.
    for (name, d) in devices() {
        for (dtype, bad, shown) in [
            (
                DType::U32,
                vec![0u32.into(), 1u64 << 31, 1],
                "index 2147483648",
            ),
            (
                DType::U64,
                vec![0, u64::MAX, 1],
                "index 18446744073709551615",
            ),
        ] {
            let data = TensorData::new(bad, [1, 1, 3]).convert_dtype(dtype);
            let indices = Tensor::<3, Int>::from_data(data, (&d, dtype));
            assert_eq!(indices.dtype(), dtype, "{name}");
            // Integer values and float values alike.
            let ints = Tensor::<3, Int>::ones([1, 1, 3], &d);
            assert_message(
                || {
                    drop(max_unpool1d(
                        ints,
                        indices.clone(),
                        MaxUnpoolOptions::new([2]),
                    ))
                },
                &[shown, "position [0, 0, 1]", "[0, 6)"],
            );
            let floats = Tensor::<3>::ones([1, 1, 3], &d);
            assert_message(
                || drop(max_unpool1d(floats, indices, MaxUnpoolOptions::new([2]))),
                &[shown, "position [0, 0, 1]", "[0, 6)"],
            );
        }
    }
}

#[test]
fn gradient_of_the_wrong_shape() {
    for (_, d) in devices() {
        assert_message(
            || {
                drop(max_unpool_backward(
                    x4(&d, [1, 1, 4, 5]),
                    i4(&d, [1, 1, 2, 2]),
                    MaxUnpoolOptions::new([2, 2]),
                ))
            },
            &["[1, 1, 4, 4]", "[1, 1, 4, 5]"],
        );
    }
}

#[test]
fn onnx_attributes_of_the_wrong_length() {
    for (_, d) in devices() {
        let d = &d;
        let run = |a: MaxUnpoolAttributes, shape: Option<Vec<usize>>| {
            move || {
                drop(max_unpool_onnx(
                    x4(d, [1, 1, 2, 2]),
                    i4(d, [1, 1, 2, 2]),
                    &a,
                    shape.as_deref(),
                ))
            }
        };
        assert_message(
            run(
                MaxUnpoolAttributes::new(vec![2, 2]).with_strides(vec![2]),
                None,
            ),
            &["`strides`", "2 values", "[2]"],
        );
        assert_message(
            run(
                MaxUnpoolAttributes::new(vec![2, 2]).with_pads(vec![0, 0]),
                None,
            ),
            &["`pads`", "4 values"],
        );
        assert_message(run(MaxUnpoolAttributes::new(vec![2]), None), &["rank 3"]);
        assert_message(
            run(MaxUnpoolAttributes::new(vec![2, 2]), Some(vec![1, 1, 5])),
            &["`output_shape`", "4 values"],
        );
        assert_message(
            run(MaxUnpoolAttributes::new(vec![2, 2]), Some(vec![2, 1, 5, 5])),
            &["[2, 1, 5, 5]", "N and C"],
        );
        assert_message(
            // The reference's rule reads the indices in the inferred 4x4 plane.
            run(
                MaxUnpoolAttributes::new(vec![2, 2])
                    .with_strides(vec![2, 2])
                    .with_rule(burn_unpool::onnx::OutputShapeRule::Reference),
                Some(vec![1, 1, 3, 5]),
            ),
            &["smaller than the inferred shape", "[4, 4]"],
        );
    }
}

/// Without the index check, an out-of-range index is skipped on every device (it is never written, not
/// even into another plane), where the checked call reports it.
#[test]
fn unchecked_call_skips_bad_indices_on_every_device() {
    for (name, d) in devices() {
        for dtype in [DType::I32, DType::I64] {
            // Plane 0: 4 is past its plane [0, 4) and -1 below it; plane 1 is valid.
            let indices = || {
                Tensor::<3, Int>::from_data(
                    TensorData::from([[[3i64, 4, -1], [2, 0, 1]]]).convert_dtype(dtype),
                    (&d, dtype),
                )
            };
            let x = || Tensor::<3>::from_floats([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]], &d);
            let options = || MaxUnpoolOptions::new([2]).with_output_size([4]);
            assert_message(
                || drop(max_unpool1d(x(), indices(), options())),
                &["index 4", "position [0, 0, 1]", "[0, 4)"],
            );
            let unchecked = max_unpool1d(x(), indices(), options().without_index_check())
                .into_data()
                .try_into_vec::<f32>()
                .expect("f32 values");
            assert_eq!(
                unchecked,
                [0.0, 0.0, 0.0, 1.0, 5.0, 6.0, 4.0, 0.0],
                "{name} {dtype:?}"
            );
        }
    }
}

/// A plan made for other tensors is refused by every backend with a message, before any kernel
/// touches memory (on the GPU, a kernel launched with a lying plan could read past a buffer).
#[test]
fn a_plan_made_for_other_tensors_is_refused_by_the_backend() {
    use burn::backend::Dispatch;
    use burn_unpool::{UnpoolBackend, UnpoolPlan};

    let plan = UnpoolPlan::new(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
    for (name, d) in devices() {
        let x = || Tensor::<3>::ones([1, 1, 8], &d).into_dispatch();
        let indices = || Tensor::<3, Int>::zeros([1, 1, 8], &d).into_dispatch();
        let sync = || d.sync().expect("the device syncs");
        let text = message(|| {
            drop(<Dispatch as UnpoolBackend>::max_unpool(
                x(),
                indices(),
                plan.clone(),
            ));
            sync();
        });
        assert!(
            text.contains("UnpoolBackend::max_unpool: the plan was made for x of shape [1, 1, 2]")
                && text.contains("got x [1, 1, 8] and indices [1, 1, 8]"),
            "{name}: {text}"
        );
        let text = message(|| {
            drop(<Dispatch as UnpoolBackend>::max_unpool_backward(
                x(),
                indices(),
                plan.clone(),
            ));
            sync();
        });
        assert!(
            text.contains("the plan was made for the output gradient of shape [1, 1, 4]"),
            "{name}: {text}"
        );
        let text = message(|| {
            drop(<Dispatch as UnpoolBackend>::max_unpool_index_check(
                indices(),
                plan.clone(),
            ));
            sync();
        });
        assert!(
            text.contains("indices of shape [1, 1, 2], got [1, 1, 8]"),
            "{name}: {text}"
        );
    }
}

#[test]
fn values_and_indices_on_different_devices() {
    let devices = devices();
    for pair in devices.windows(2) {
        let [(_, values), (_, indices)] = pair else {
            unreachable!()
        };
        assert_message(
            || {
                drop(max_unpool1d(
                    Tensor::<3>::ones([1, 1, 2], values),
                    Tensor::zeros([1, 1, 2], indices),
                    MaxUnpoolOptions::new([2]),
                ))
            },
            &[
                "one device",
                &format!("{values:?}"),
                &format!("{indices:?}"),
            ],
        );
    }
}

#[test]
fn pool_indices_with_options_that_ask_another_layout_or_size() {
    use burn::tensor::ops::MaxPoolOptions;
    for (name, d) in devices() {
        let pool = MaxPoolOptions::new([2, 2]);
        let (pooled, indices) =
            burn_unpool::max_pool2d_with_indices(Tensor::<4>::ones([1, 1, 5, 5], &d), pool.clone());
        let global = MaxUnpoolOptions::from_pool(&pool).with_index_layout(IndexLayout::Global);
        let text = message(|| drop(max_unpool2d(pooled.clone(), indices.clone(), global)));
        assert!(
            text.contains("input size [5, 5]") && text.contains("Global indices"),
            "{name}: {text}"
        );
        let other_size = MaxUnpoolOptions::from_pool(&pool).with_output_size([4, 4]);
        let text = message(|| drop(max_unpool2d(pooled, indices, other_size)));
        assert!(
            text.contains("input size [5, 5]") && text.contains("[4, 4]"),
            "{name}: {text}"
        );
    }
}

/// Options that contradict the pool that made the indices are refused, naming both values: they
/// were once replaced by the pool's without a word (a 2x2 pool's indices with options of kernel
/// 3 gave a 6 x 6 output, where the same indices as a raw tensor give 9 x 9).
#[test]
fn pool_indices_with_options_of_another_geometry() {
    use burn::tensor::ops::MaxPoolOptions;
    let pool = MaxPoolOptions::new([2, 2]);
    let from_pool = || MaxUnpoolOptions::from_pool(&pool);
    let contradictions: [(MaxUnpoolOptions<2>, &[&str]); 5] = [
        (
            MaxUnpoolOptions::new([3, 3]),
            &[
                "kernel_size [3, 3] (the pool's: [2, 2])",
                "stride [3, 3] (the pool's: [2, 2])",
            ],
        ),
        (
            from_pool().with_stride([1, 2]),
            &["stride [1, 2] (the pool's: [2, 2])"],
        ),
        (
            from_pool().with_padding_pairs([(1, 0), (0, 0)]),
            &["padding [(1, 0), (0, 0)] (the pool's: [(0, 0), (0, 0)])"],
        ),
        (
            from_pool().with_dilation([2, 1]),
            &["dilation [2, 1] (the pool's: [1, 1])"],
        ),
        (
            from_pool().with_ceil_mode(true),
            &["ceil_mode true (the pool's: false)"],
        ),
    ];
    for (name, d) in devices() {
        let image = Tensor::<4>::ones([1, 1, 6, 6], &d);
        let (pooled, indices) = burn_unpool::max_pool2d_with_indices(image, pool.clone());
        for (options, parts) in &contradictions {
            let forward = || {
                drop(max_unpool2d(
                    pooled.clone(),
                    indices.clone(),
                    options.clone(),
                ))
            };
            let text = message(forward);
            assert!(text.contains("contradict"), "{name}: {text}");
            for part in *parts {
                assert!(text.contains(part), "{name}: {text:?} lacks {part:?}");
            }
            let grad = Tensor::<4>::ones([1, 1, 6, 6], &d);
            let backward = || {
                drop(max_unpool_backward(
                    grad.clone(),
                    indices.clone(),
                    options.clone(),
                ))
            };
            assert_message(backward, parts);
        }
        // The same indices as a raw tensor follow the options.
        let raw = indices.clone().into_tensor();
        let unpooled = max_unpool2d(pooled.clone(), raw, MaxUnpoolOptions::new([3, 3]));
        assert_eq!(unpooled.dims(), [1, 1, 9, 9], "{name}");
        // And the pool's own options pass.
        let unpooled = max_unpool2d(pooled, indices, from_pool());
        assert_eq!(unpooled.dims(), [1, 1, 6, 6], "{name}");
    }
}

/// A ceil-mode pool's `ceil_mode` is not dropped by `from_pool`: its input size does not follow
/// from its output size (5 and 6 both pool to 3 here), so raw indices need the size, and the
/// pool's own indices, which know it, need none. Once the default size (6) came out silently.
#[test]
fn raw_indices_of_a_ceil_mode_pool_without_an_output_size() {
    use burn::tensor::ops::MaxPoolOptions;
    let pool = MaxPoolOptions::new([2, 2]).with_ceil_mode(true);
    assert!(MaxUnpoolOptions::from_pool(&pool).ceil_mode);
    for (name, d) in devices() {
        let (pooled, indices) =
            burn_unpool::max_pool2d_with_indices(Tensor::<4>::ones([1, 1, 5, 5], &d), pool.clone());
        let raw = indices.clone().into_tensor();
        let options = MaxUnpoolOptions::from_pool(&pool);
        let text = message(|| drop(max_unpool2d(pooled.clone(), raw.clone(), options.clone())));
        assert!(
            text.contains("ceil_mode") && text.contains("output size [3, 3]"),
            "{name}: {text}"
        );
        let sized = options.clone().with_output_size([5, 5]);
        assert_eq!(
            max_unpool2d(pooled.clone(), raw, sized).dims(),
            [1, 1, 5, 5],
            "{name}"
        );
        assert_eq!(
            max_unpool2d(pooled, indices, options).dims(),
            [1, 1, 5, 5],
            "{name}"
        );
    }
}

/// ONNX's `pads` and `auto_pad` cannot both be set: explicit pads beside an `auto_pad` that
/// computes the padding were once dropped without a word.
#[test]
fn onnx_pool_with_pads_and_auto_pad() {
    use burn_unpool::onnx::{AutoPad, MaxPoolAttributes, max_pool_onnx};
    for (name, d) in devices() {
        let x = Tensor::<4>::ones([1, 1, 5, 5], &d);
        let attributes = MaxPoolAttributes::new(vec![3, 3])
            .with_strides(vec![2, 2])
            .with_pads(vec![1, 1, 0, 0])
            .with_auto_pad(AutoPad::SameUpper);
        let text = message(|| drop(max_pool_onnx(x.clone(), &attributes)));
        assert!(
            text.contains("pads [1, 1, 0, 0] contradict auto_pad SameUpper"),
            "{name}: {text}"
        );
        // Zero pads say nothing, so they sit beside auto_pad as exporters write them.
        let zeros = attributes.with_pads(vec![0; 4]);
        let (y, _) = max_pool_onnx(x, &zeros);
        assert_eq!(y.dims(), [1, 1, 3, 3], "{name}");
    }
}

/// The index check's word keeps its contract on every backend: bit 0 exactly when some index is
/// out of range; bit 1 clear only where every index has an output position of its own (the
/// backends that do not look always set it).
#[test]
fn the_index_check_word_keeps_its_contract() {
    use burn::backend::Dispatch;
    use burn_unpool::{INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE, UnpoolBackend, UnpoolPlan};

    // Kernel 2 over an output of 6: cells [0, 2), [2, 4), [4, 6).
    let plan = UnpoolPlan::new(&[1, 1, 3], &[1, 1, 3], &MaxUnpoolOptions::new([2])).unwrap();
    let cases: [([i64; 3], bool, bool); 4] = [
        ([1, 2, 5], false, false), // each in its own cell
        ([1, 1, 5], false, true),  // two share position 1
        ([3, 2, 5], false, true),  // distinct, but 3 lies outside the first cell
        ([1, 6, 5], true, false),  // 6 is past the output (and never written)
    ];
    for (name, d) in devices() {
        for (indices, out_of_range, shared) in cases {
            let tensor =
                Tensor::<3, Int>::from_data(TensorData::new(indices.to_vec(), [1, 1, 3]), &d);
            let word = Tensor::<1, Int>::from_dispatch(
                <Dispatch as UnpoolBackend>::max_unpool_index_check(
                    tensor.into_dispatch(),
                    plan.clone(),
                ),
            )
            .into_data()
            .iter::<u32>()
            .next()
            .expect("one word");
            let context = format!("{name} {indices:?}: word {word:#b}");
            assert_eq!(
                word & !(INDEX_OUT_OF_RANGE | INDEX_MAY_SHARE_TARGET),
                0,
                "{context}"
            );
            assert_eq!(word & INDEX_OUT_OF_RANGE != 0, out_of_range, "{context}");
            if shared {
                assert_ne!(word & INDEX_MAY_SHARE_TARGET, 0, "{context}");
            }
        }
    }
}

/// A refused pool and a refused unpooling panic at the caller's line, not inside the crate.
#[test]
fn refusals_point_at_the_callers_line() {
    let device = Device::flex();
    let line = Cell::new(0);
    // A 3 x 3 window over a 2 x 2 plane: no output.
    let (site, message) = panic_site(|| {
        line.set(line!() + 1);
        max_pool2d_with_indices(x4(&device, [1, 1, 2, 2]), MaxPoolOptions::new([3, 3]));
    });
    assert!(message.starts_with("max_pool"), "{message}");
    assert_eq!(site, format!("{}:{}", file!(), line.get()), "{message}");
    // Indices of another shape than x.
    let (site, message) = panic_site(|| {
        let indices = Tensor::<4, Int>::zeros([1, 1, 2, 3], &device);
        line.set(line!() + 1);
        max_unpool2d(
            x4(&device, [1, 1, 2, 2]),
            indices,
            MaxUnpoolOptions::new([2, 2]),
        );
    });
    assert!(message.starts_with("max_unpool"), "{message}");
    assert_eq!(site, format!("{}:{}", file!(), line.get()), "{message}");
}
