//! Hostile input: sizes near `usize::MAX`, products that wrap, outputs no buffer can hold, dtypes a
//! device cannot compute with, converters given nonsense. Every call either gives the reference's
//! result or panics with a message from the public function that names the offending values;
//! nothing wraps, nothing aborts. The cases that would allocate run in a child process, so an
//! abort fails the test instead of ending the run.

use std::process::Command;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::onnx::{column_major_to_row_major, global_to_per_plane, per_plane_to_global};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool1d, max_unpool2d};
use burn_unpool_tests::{data_from_bits, devices, outcome, reference_forward, reference_targets};
use proptest::prelude::*;

fn assert_refused<T>(f: impl FnOnce() -> T, parts: &[&str], context: &str) {
    let message = match outcome(f) {
        Ok(_) => panic!("{context}: the call must be refused"),
        Err(message) => message,
    };
    for part in parts {
        assert!(
            message.contains(part),
            "{context}: {part:?} not in {message:?}"
        );
    }
}

fn one(device: &Device) -> (Tensor<4>, Tensor<4, Int>) {
    (
        Tensor::<4>::ones([1, 1, 1, 1], device),
        Tensor::<4, Int>::zeros([1, 1, 1, 1], device).cast(DType::I64),
    )
}

/// Half of `usize`'s bits: sizes of `1 << HALF` per side wrap it at either pointer width.
const HALF: u32 = usize::BITS / 2;

/// Output sizes whose element count wraps `usize`, explicit or full, including one whose product
/// wraps to exactly 1 (3 x its inverse modulo 2^64, or 2^32 on a 32-bit target).
#[test]
fn output_sizes_whose_product_wraps() {
    // (2^(BITS+1) + 1) / 3: 0xAAAA_AAAA_AAAA_AAAB on 64 bits.
    const INVERSE_OF_3: usize = usize::MAX / 3 * 2 + 1;
    assert_eq!(3usize.wrapping_mul(INVERSE_OF_3), 1);
    for (name, device) in devices() {
        let (x, indices) = one(&device);
        for size in [[1 << HALF, 1 << HALF], [3, INVERSE_OF_3], [usize::MAX, 2]] {
            let refusal = format!(
                "max_unpool: the output shape [1, 1, {}, {}] has more elements than usize::MAX",
                size[0], size[1]
            );
            let explicit = MaxUnpoolOptions::new([1, 1]).with_output_size(size);
            let full =
                MaxUnpoolOptions::new([1, 1]).with_full_output_size([1, 1, size[0], size[1]]);
            for options in [explicit, full] {
                assert_refused(
                    || max_unpool2d(x.clone(), indices.clone(), options),
                    &[&refusal],
                    &format!("{name} {size:?}"),
                );
            }
        }
        // A default size from a huge stride saturates and is refused, never wrapped small.
        let options = MaxUnpoolOptions::new([1, 1]).with_stride([usize::MAX, usize::MAX]);
        let x2 = Tensor::<4>::ones([1, 1, 2, 2], &device);
        let i2 = Tensor::<4, Int>::zeros([1, 1, 2, 2], &device);
        assert_refused(
            || max_unpool2d(x2, i2, options),
            &["default output size of spatial axis 0 overflows"],
            name,
        );
    }
}

/// A default output of `usize::MAX` positions (kernel `usize::MAX`) is refused as an output no
/// buffer can hold, whatever the indices' dtype: wider indices would not help.
#[test]
fn default_output_of_usize_max() {
    for (name, device) in devices() {
        for dtype in [DType::I64, DType::I32] {
            let x = Tensor::<3>::ones([1, 1, 1], &device);
            let indices = Tensor::<3, Int>::zeros([1, 1, 1], &device).cast(dtype);
            let options = MaxUnpoolOptions::new([usize::MAX]);
            let message = outcome(|| max_unpool1d(x, indices, options))
                .expect_err("an output of usize::MAX positions must be refused");
            assert!(
                message.contains(&format!("an output of shape [1, 1, {}]", usize::MAX))
                    && message.contains("more than the")
                    && !message.contains("cannot hold"),
                "{name} {dtype:?}: {message}"
            );
        }
    }
}

/// Outputs no buffer can hold (4 TiB, 2^64 bytes, more than `isize::MAX` bytes, a size the GPU
/// cannot bind; on a 32-bit target 1 GiB, 2^32 bytes and more than `isize::MAX` bytes) are refused
/// before any allocation, naming the shape and the bytes. Run in a child process: before these
/// checks, such calls aborted it.
#[test]
fn outputs_no_buffer_can_hold() {
    if std::env::var_os("BURN_UNPOOL_HOSTILE_CHILD").is_some() {
        return huge_outputs_in_this_process();
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["outputs_no_buffer_can_hold", "--exact", "--nocapture"])
        .env("BURN_UNPOOL_HOSTILE_CHILD", "1")
        .output()
        .expect("the test binary runs");
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child process failed or aborted ({:?}):\n{text}",
        output.status
    );
    assert!(text.contains("checked: "), "the child ran no case:\n{text}");
}

fn huge_outputs_in_this_process() {
    for (name, device) in devices() {
        let (x, indices) = one(&device);
        // 64 bits: 2^40 f32 = 4 TiB; 2^62 f32 = 2^64 bytes; under 2^63 elements, past isize::MAX
        // bytes. 32 bits: 2^28 f32 = 1 GiB; 2^30 f32 = 2^32 bytes; under 2^31 elements.
        let large: usize = if usize::BITS == 64 { 1 << 20 } else { 1 << 14 };
        let large_bytes = (4 * large as u128 * large as u128).to_string();
        let all_bytes = format!("{} bytes", 1u128 << usize::BITS);
        for (size, parts) in [
            ([large, large], &[large_bytes.as_str()][..]),
            (
                [1 << (HALF - 1), 1 << (HALF - 1)],
                &[all_bytes.as_str()][..],
            ),
            ([(1 << (HALF - 1)) - 1, (1 << HALF) + 1], &[][..]),
        ] {
            let options = MaxUnpoolOptions::new([1, 1]).with_output_size(size);
            let message = match outcome(|| max_unpool2d(x.clone(), indices.clone(), options)) {
                // A host whose OS overcommits memory may grant the first size in untouched zero pages: a
                // correct result then, and nothing aborted.
                Ok(y) if name != "wgpu" && size == [large, large] => {
                    assert_eq!(y.dims(), [1, 1, size[0], size[1]], "{name}");
                    println!("checked: {name} {size:?}: granted by the OS");
                    continue;
                }
                Ok(y) => panic!("{name} {size:?}: made an output of {:?}", y.dims()),
                Err(message) => message,
            };
            let shape = format!("[1, 1, {}, {}]", size[0], size[1]);
            // Refused by size (every device) or, on the CPU, by the allocator: either names the
            // shape and the bytes.
            assert!(
                message.contains(&shape)
                    && (message.contains("more than the")
                        || message.contains("could not allocate"))
                    && parts.iter().all(|part| message.contains(part)),
                "{name} {size:?}: {message}"
            );
            println!("checked: {name} {size:?}: {message}");
        }
    }
}

/// A float dtype a device reports it cannot compute with (bf16 on lavapipe, where Burn's own
/// kernels read such tensors as zeros) is refused, naming the dtype and the device; every float
/// dtype a device has gives the CPU's bits (`conformance.rs`).
#[test]
fn float_dtypes_a_device_cannot_compute_with() {
    let bits = [0x3fc0u64, 0xc000, 0x7fc1, 0x8000];
    for (name, device) in devices() {
        for dtype in [DType::BF16, DType::F16] {
            if device.supports_dtype(dtype) {
                continue;
            }
            let data = data_from_bits(&bits, &[1, 1, 2, 2], dtype);
            // NdArray cannot even hold them; where a device holds them, the op refuses them.
            let Ok(x) = outcome(|| Tensor::<4>::from_data(data, (&device, dtype))) else {
                continue;
            };
            let indices = Tensor::<4, Int>::zeros([1, 1, 2, 2], &device);
            assert_refused(
                || max_unpool2d(x, indices, MaxUnpoolOptions::new([1, 1])),
                &[&format!(
                    "values of dtype {dtype:?} cannot be unpooled on device Device<"
                )],
                name,
            );
        }
    }
}

/// The index converters check their shape arguments as the op does.
#[test]
fn converters_refuse_nonsense_shapes() {
    let device = Device::flex();
    let indices = || Tensor::<4, Int>::zeros([2, 3, 2, 2], &device);
    assert_refused(
        || column_major_to_row_major(indices(), &[5]),
        &["one size per spatial axis", "[2, 3, 2, 2]", "[5]"],
        "rank",
    );
    assert_refused(
        || column_major_to_row_major(indices(), &[5, 0]),
        &["no zero size", "[5, 0]"],
        "zero",
    );
    // Past i64::MAX at either width (on 32 bits a plane of 2^32 positions is valid arithmetic).
    let side = usize::MAX;
    assert_refused(
        || column_major_to_row_major(indices(), &[side, side]),
        &["more elements than i64::MAX", &format!("[{side}, {side}]")],
        "overflow",
    );
    for (op, convert) in [
        (
            "per_plane_to_global",
            per_plane_to_global::<4> as fn(_, _) -> _,
        ),
        ("global_to_per_plane", global_to_per_plane::<4>),
    ] {
        assert_refused(
            || convert(indices(), 0),
            &[op, "plane_len must be non-zero"],
            op,
        );
        if usize::BITS == 64 {
            assert_refused(
                || convert(indices(), usize::MAX / 2),
                &[op, "6 planes", "more positions than i64::MAX"],
                op,
            );
        } else {
            // 6 planes of usize::MAX positions: past usize, inside i64, where global indices live.
            let converted = outcome(|| convert(indices(), usize::MAX)).unwrap();
            if op == "per_plane_to_global" {
                assert_eq!(converted.dtype(), DType::I64, "{op}");
            }
        }
    }
    // Unsigned global indices of another plane come out negative, not wrapped.
    let global = Tensor::<3, Int>::from_data(
        TensorData::new(vec![1u32, 0], [1, 2, 1]),
        (&device, DType::U32),
    );
    let per_plane = global_to_per_plane(global, 4).into_data();
    assert_eq!(
        per_plane.convert::<i64>().try_to_vec::<i64>().unwrap(),
        [1, -4]
    );
}

/// Small or astronomically large: sizes that either run or must be refused without allocating
/// (an output of 2^(BITS-2) elements or more needs more than `isize::MAX` bytes, whatever the OS
/// would grant).
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        8 => 1usize..8,
        1 => (usize::BITS - 2..usize::BITS).prop_map(|bits| 1usize << bits),
        1 => Just(usize::MAX),
        1 => Just(usize::MAX / 3),
    ]
}

fn small_or_huge() -> impl Strategy<Value = usize> {
    prop_oneof![16 => 1usize..4, 1 => Just(usize::MAX), 1 => Just(1usize << (usize::BITS - 2))]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Arbitrary geometry, output sizes and index values on every device: a result equal to the
    /// reference, or a refusal from the public function that says what is wrong.
    #[test]
    fn arbitrary_arguments_give_the_reference_or_a_clear_refusal(
        shape in [1usize..3, 1usize..3, 1usize..4, 1usize..4],
        kernel in [small_or_huge(), small_or_huge()],
        stride in [small_or_huge(), small_or_huge()],
        padding in [0usize..2, 0usize..2],
        dilation in [small_or_huge(), small_or_huge()],
        output in proptest::option::of([size(), size()]),
        global in any::<bool>(),
        index_values in proptest::collection::vec(prop_oneof![12 => 0i64..9, 1 => any::<i64>()], 36),
    ) {
        let len: usize = shape.iter().product();
        let indices: Vec<i64> = index_values[..len].to_vec();
        let x: Vec<f32> = (0..len).map(|v| v as f32 + 1.0).collect();
        let layout = if global { IndexLayout::Global } else { IndexLayout::PerPlane };
        let mut options = MaxUnpoolOptions::new(kernel)
            .with_stride(stride)
            .with_padding(padding)
            .with_dilation(dilation)
            .with_index_layout(layout);
        if let Some(size) = output {
            options = options.with_output_size(size);
        }
        for (name, device) in devices() {
            let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), shape), &device);
            let it = Tensor::<4, Int>::from_data(TensorData::new(indices.clone(), shape), (&device, DType::I64));
            match outcome(|| max_unpool2d(xt, it, options.clone()).into_data()) {
                Ok(data) => {
                    // The output shape, worked out here without wrapping.
                    let spatial: Vec<usize> = match output {
                        Some(size) => size.to_vec(),
                        None => (0..2).map(|a| {
                            let [i, k, s, p, d] = [shape[a + 2], kernel[a], stride[a], padding[a], dilation[a]].map(|v| v as i128);
                            usize::try_from((i - 1) * s - 2 * p + d * (k - 1) + 1).expect("a size that ran fits usize")
                        }).collect(),
                    };
                    let out_shape: Vec<usize> = shape[..2].iter().copied().chain(spatial).collect();
                    prop_assert_eq!(data.shape().to_vec(), out_shape.clone(), "{}", name);
                    let targets = reference_targets(&indices, &shape, &out_shape, &out_shape[2..], layout)
                        .expect("a result only for indices in range");
                    let x64: Vec<f64> = x.iter().map(|&v| v.into()).collect();
                    let expected: Vec<f32> = reference_forward(&x64, &targets, data.num_elements())
                        .into_iter().map(|v| v as f32).collect();
                    prop_assert_eq!(data.try_to_vec::<f32>().unwrap(), expected, "{}", name);
                }
                Err(message) => {
                    prop_assert!(
                        message.starts_with("max_unpool: ") && !message.contains("attempt to"),
                        "{}: {:?}", name, message
                    );
                }
            }
        }
    }
}
