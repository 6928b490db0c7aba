//! The indices of this crate's pools carry their pool: unpooling with them needs no output size
//! and no index check, takes the one-pass kernels where the pool's windows cannot overlap, and
//! gives the reference's bits on every device, forward and backward, odd sizes (floor and ceil
//! mode), overlapping and dilated pools, 1-d and 2-d.
//!
//! Which path ran is read from `burn_unpool::diagnostics`, whose counters are process-wide: every
//! test here holds `SERIAL` while it runs ops.

use std::sync::{Mutex, MutexGuard};

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_unpool::diagnostics::{Counts, counts};
use burn_unpool::{
    IndexLayout, MaxUnpoolOptions, PoolIndices, max_pool1d_with_indices, max_pool2d_with_indices,
    max_unpool, max_unpool_backward,
};
use burn_unpool_tests::{
    assert_bit_equal, devices, reference_backward, reference_forward, reference_targets,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Seeded values without ties, so every device's pool picks the same maxima.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 1_000_003) as f32 / 64.0)
        .collect()
}

/// One pool to invert: `(name, input shape, pool options)`, 1-d as `[N, C, 1, L]` rows.
struct Case {
    name: &'static str,
    shape: Vec<usize>,
    pool: MaxPoolOptions<2>,
    disjoint: bool,
}

fn cases() -> Vec<Case> {
    let case = |name, shape: &[usize], pool, disjoint| Case {
        name,
        shape: shape.to_vec(),
        pool,
        disjoint,
    };
    vec![
        case("2x2 even", &[2, 3, 8, 6], MaxPoolOptions::new([2, 2]), true),
        // Rows of 16 (and pooled rows of 8): the GPU kernels' widest vectors.
        case(
            "2x2 wide rows",
            &[2, 3, 6, 16],
            MaxPoolOptions::new([2, 2]),
            true,
        ),
        case(
            "2x2 ceil, pooled rows of 12 from 23",
            &[1, 2, 5, 23],
            MaxPoolOptions::new([2, 2]).with_ceil_mode(true),
            true,
        ),
        case(
            "2x2 odd floor",
            &[2, 3, 7, 9],
            MaxPoolOptions::new([2, 2]),
            true,
        ),
        case(
            "2x2 odd ceil",
            &[1, 4, 7, 9],
            MaxPoolOptions::new([2, 2]).with_ceil_mode(true),
            true,
        ),
        case(
            "3x3 stride 2 pad 1 (overlapping)",
            &[1, 2, 11, 13],
            MaxPoolOptions::new([3, 3])
                .with_stride([2, 2])
                .with_padding([1, 1]),
            false,
        ),
        case(
            "3x3 stride 2 pad 1 on rows of 16 (overlapping, vectors)",
            &[1, 2, 9, 16],
            MaxPoolOptions::new([3, 3])
                .with_stride([2, 2])
                .with_padding([1, 1]),
            false,
        ),
        case(
            "2x2 dilation 2 stride 3 (gaps)",
            &[1, 2, 10, 11],
            MaxPoolOptions::new([2, 2])
                .with_stride([3, 3])
                .with_dilation([2, 2]),
            true,
        ),
        case(
            "1x3 stride 3 pad 1 ceil",
            &[2, 2, 1, 17],
            MaxPoolOptions::new([1, 3])
                .with_stride([1, 3])
                .with_padding_pairs([(0, 0), (1, 1)])
                .with_ceil_mode(true),
            true,
        ),
    ]
}

/// The reference's output and gradient for `pooled` and its per-plane `indices`, unpooled into
/// `shape`, with output gradient `grad`.
fn reference(
    pooled: &Tensor<4>,
    indices: &Tensor<4, Int>,
    shape: &[usize],
    grad: &[f64],
) -> (TensorData, TensorData) {
    let index_values = indices.clone().into_data().convert::<i64>();
    let targets = reference_targets(
        &index_values.try_into_vec::<i64>().unwrap(),
        &pooled.dims(),
        shape,
        &shape[2..],
        IndexLayout::PerPlane,
    )
    .expect("a pool's indices are in range");
    let x = pooled.clone().into_data().convert::<f64>();
    let y = reference_forward(&x.try_into_vec::<f64>().unwrap(), &targets, grad.len());
    let dx = reference_backward(grad, &targets);
    let f32s = |v: Vec<f64>, s: &[usize]| {
        TensorData::new(
            v.into_iter().map(|v| v as f32).collect::<Vec<_>>(),
            s.to_vec(),
        )
    };
    (f32s(y, shape), f32s(dx, &pooled.dims()))
}

#[test]
fn pool_indices_match_the_reference_on_every_device() {
    let _serial = serial();
    for case in cases() {
        let len: usize = case.shape.iter().product();
        let grad: Vec<f64> = (0..len).map(|i| (i % 97) as f64 - 48.0).collect();
        for (name, device) in devices() {
            let context = format!("{} on {name}", case.name);
            let image = Tensor::<4>::from_data(
                TensorData::new(values(len, 1), case.shape.clone()),
                &device,
            );
            let (pooled, indices) = max_pool2d_with_indices(image, case.pool.clone());
            assert_eq!(indices.input_size(), &case.shape[2..], "{context}");
            let (expected_y, expected_dx) =
                reference(&pooled, indices.tensor(), &case.shape, &grad);
            let options = MaxUnpoolOptions::from_pool(&case.pool);

            let y = max_unpool(pooled.clone(), indices.clone(), options.clone());
            assert_bit_equal(&y.into_data(), &expected_y, &context);
            let grad_tensor = Tensor::<4>::from_data(
                TensorData::new(grad.iter().map(|&g| g as f32).collect(), case.shape.clone()),
                &device,
            );
            let dx = max_unpool_backward(grad_tensor.clone(), indices.clone(), options.clone());
            assert_bit_equal(&dx.into_data(), &expected_dx, &context);

            // Raw indices with the pool's input size: every check, the same bits.
            let raw = options
                .clone()
                .with_output_size([case.shape[2], case.shape[3]]);
            let y = max_unpool(pooled.clone(), indices.tensor().clone(), raw.clone());
            assert_bit_equal(&y.into_data(), &expected_y, &format!("{context}, raw"));
            let dx = max_unpool_backward(grad_tensor.clone(), indices.clone().into_tensor(), raw);
            assert_bit_equal(&dx.into_data(), &expected_dx, &format!("{context}, raw"));

            // Under autodiff the pooled values get the exact gradient.
            let autodiff = device.clone().autodiff();
            let x = Tensor::<4>::from_data(pooled.into_data(), &autodiff).require_grad();
            let indices = indices_on(&indices, &autodiff, &case.pool, &case.shape);
            let y = max_unpool(x.clone(), indices, options);
            let grads = (y * Tensor::from_data(grad_tensor.into_data(), &autodiff))
                .sum()
                .backward();
            let dx = x.grad(&grads).expect("a gradient for x");
            assert_bit_equal(
                &dx.into_data(),
                &expected_dx,
                &format!("{context}, autodiff"),
            );
        }
    }
}

/// The same pool's indices for the same image on `device` (pooled there).
fn indices_on(
    indices: &PoolIndices<4>,
    device: &Device,
    pool: &MaxPoolOptions<2>,
    shape: &[usize],
) -> PoolIndices<4> {
    let len = shape.iter().product();
    let image = Tensor::<4>::from_data(TensorData::new(values(len, 1), shape.to_vec()), device);
    let (_, on_device) = max_pool2d_with_indices(image, pool.clone());
    assert_eq!(
        on_device.tensor().clone().into_data().convert::<i64>(),
        indices.tensor().clone().into_data().convert::<i64>()
    );
    on_device
}

#[test]
fn one_dimensional_pools_carry_their_indices_too() {
    let _serial = serial();
    let pool = MaxPoolOptions::new([3]).with_ceil_mode(true);
    for (name, device) in devices() {
        let image =
            Tensor::<3>::from_data(TensorData::new(values(2 * 3 * 10, 2), [2, 3, 10]), &device);
        let (pooled, indices) = max_pool1d_with_indices(image.clone(), pool.clone());
        let y = max_unpool(pooled.clone(), indices, MaxUnpoolOptions::from_pool(&pool));
        assert_eq!(
            y.dims(),
            [2, 3, 10],
            "{name}: the pool's input size, not 4 * 3 = 12"
        );
        // Every maximum back at its place: pooling again gives the same values.
        let (again, _) = max_pool1d_with_indices(y, pool.clone());
        assert_bit_equal(&again.into_data(), &pooled.into_data(), name);
    }
}

/// What `op` changed in the counters.
fn delta(op: impl FnOnce()) -> Counts {
    let before = counts();
    op();
    let after = counts();
    Counts {
        device_index_checks: after.device_index_checks - before.device_index_checks,
        one_pass_kernels: after.one_pass_kernels - before.one_pass_kernels,
        winner_kernels: after.winner_kernels - before.winner_kernels,
        kernel_launches: after.kernel_launches - before.kernel_launches,
        vectorised_launches: after.vectorised_launches - before.vectorised_launches,
        host_gathers_without_duplicates: after.host_gathers_without_duplicates
            - before.host_gathers_without_duplicates,
        host_copies: after.host_copies - before.host_copies,
    }
}

/// A training step's pool and unpooling (a `sum()` loss, `backward()`, the gradient read) copy
/// nothing on the CPU devices: the gradients Burn hands their backwards are row-major and are
/// borrowed, so the step's time beyond the ops' own is Burn's (docs/benchmarks.md). A transposed
/// input, which must be copied, shows that the counter sees copies.
#[test]
fn a_training_step_copies_no_tensor_on_the_cpu_devices() {
    let _serial = serial();
    for (name, device) in devices().into_iter().filter(|(name, _)| *name != "wgpu") {
        let device = device.autodiff();
        let image = Tensor::<4>::from_data(
            TensorData::new(values(2 * 3 * 8 * 10, 5), [2, 3, 8, 10]),
            &device,
        );
        let pool = MaxPoolOptions::new([2, 2]);
        let step = |image: Tensor<4>| {
            let x = image.require_grad();
            let (pooled, indices) = max_pool2d_with_indices(x.clone(), pool.clone());
            let unpooled = max_unpool(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
            let grads = unpooled.sum().backward();
            let dx = x.grad(&grads).expect("x requires its gradient");
            dx.sum().into_scalar::<f32>()
        };
        let row_major = delta(|| {
            step(image.clone());
        });
        assert_eq!(row_major.host_copies, 0, "{name}: {row_major:?}");
        let transposed = image.swap_dims(2, 3).swap_dims(2, 3).swap_dims(1, 2);
        let strided = delta(|| {
            step(transposed);
        });
        assert!(strided.host_copies > 0, "{name}: {strided:?}");
    }
}

#[test]
fn pool_indices_skip_the_index_check_and_take_the_one_pass_kernels() {
    let _serial = serial();
    for case in cases() {
        for (name, device) in devices() {
            let gpu = name == "wgpu";
            let context = format!("{} on {name}", case.name);
            let len = case.shape.iter().product();
            let image = Tensor::<4>::from_data(
                TensorData::new(values(len, 3), case.shape.clone()),
                &device,
            );
            let (pooled, indices) = max_pool2d_with_indices(image, case.pool.clone());
            let options = MaxUnpoolOptions::from_pool(&case.pool);
            let grad = Tensor::<4>::ones(case.shape.clone(), &device);
            let typed = delta(|| {
                let y = max_unpool(pooled.clone(), indices.clone(), options.clone());
                let dx = max_unpool_backward(grad.clone(), indices.clone(), options.clone());
                drop((y.into_data(), dx.into_data()));
            });
            assert_eq!(typed.device_index_checks, 0, "{context}: no index check");
            let (one_pass, winners) = match (gpu, case.disjoint) {
                (false, _) => (0, 0),
                (true, true) => (2, 0),
                (true, false) => (0, 2),
            };
            assert_eq!(typed.one_pass_kernels, one_pass, "{context}: {typed:?}");
            assert_eq!(typed.winner_kernels, winners, "{context}: {typed:?}");
            let host_gathers = usize::from(!gpu && case.disjoint);
            assert_eq!(
                typed.host_gathers_without_duplicates, host_gathers,
                "{context}"
            );

            // Raw indices are checked on the GPU; the check finds them in their cells where the
            // windows cannot overlap, and the one-pass kernels run then too.
            let raw = options.with_output_size([case.shape[2], case.shape[3]]);
            let checked = delta(|| {
                let y = max_unpool(pooled.clone(), indices.tensor().clone(), raw.clone());
                drop(y.into_data());
            });
            assert_eq!(checked.device_index_checks, usize::from(gpu), "{context}");
            let (one_pass, winners) = match (gpu, case.disjoint) {
                (false, _) => (0, 0),
                (true, true) => (1, 0),
                (true, false) => (0, 1),
            };
            assert_eq!(checked.one_pass_kernels, one_pass, "{context}: {checked:?}");
            assert_eq!(checked.winner_kernels, winners, "{context}: {checked:?}");
        }
    }
}

/// Raw indices that are a view into a larger tensor (a slice along the batch: the GPU backend
/// offsets the buffer rather than copying, here at offsets of 512 and 1024 bytes, which devices'
/// offset alignments divide) are read from the view's first element, i32 and i64, forward and
/// backward, on every device, and the GPU forward copies nothing first: the device check's fill,
/// the check and the kernel are its only launches.
#[test]
fn raw_indices_sliced_from_a_larger_tensor_are_read_at_their_offset() {
    let _serial = serial();
    let pool = MaxPoolOptions::new([2, 2]);
    let shape = [3, 2, 16, 16];
    let options = MaxUnpoolOptions::from_pool(&pool).with_output_size([16, 16]);
    for (name, device) in devices() {
        let image = Tensor::<4>::from_data(TensorData::new(values(3 * 2 * 256, 6), shape), &device);
        let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
        for dtype in [burn::tensor::DType::I32, burn::tensor::DType::I64] {
            if !device.supports_dtype(dtype) {
                continue;
            }
            let all = indices.tensor().clone().cast(dtype);
            for batch in [1, 2] {
                let context = format!("{name}, {dtype:?}, batch {batch} of 3");
                let x = pooled.clone().narrow(0, batch, 1);
                let view = all.clone().narrow(0, batch, 1);
                let grad: Vec<f64> = (0..2 * 256).map(|i| (i % 13) as f64 - 6.0).collect();
                let (expected_y, expected_dx) = reference(&x, &view, &[1, 2, 16, 16], &grad);
                let counted = delta(|| {
                    let y = max_unpool(x.clone(), view.clone(), options.clone());
                    assert_bit_equal(&y.into_data(), &expected_y, &context);
                });
                if name == "wgpu" {
                    assert_eq!(counted.kernel_launches, 3, "{context}: {counted:?}");
                }
                let grad = Tensor::<4>::from_data(
                    TensorData::new(grad.iter().map(|&g| g as f32).collect(), [1, 2, 16, 16]),
                    &device,
                );
                let dx = max_unpool_backward(grad, view, options.clone());
                assert_bit_equal(&dx.into_data(), &expected_dx, &context);
            }
        }
    }
}

/// Raw indices that leave their cell (here two elements of one plane swap targets, and a third
/// joins one of them) must not reach the one-pass kernel: the check sends them to the winner pass,
/// and the result is the reference's.
#[test]
fn raw_indices_outside_their_cells_take_the_winner_pass() {
    let _serial = serial();
    let shape = [1, 1, 4, 4];
    // 2x2 pool of a 4x4 plane: cells are the four 2x2 blocks. Element 0 points into block 3,
    // element 3 into block 0, element 1 onto element 3's target: a duplicate.
    let indices = vec![15i64, 15, 8, 0];
    let x = vec![1.0, 2.0, 3.0, 4.0];
    let options = MaxUnpoolOptions::new([2, 2]);
    let targets = reference_targets(
        &indices,
        &[1, 1, 2, 2],
        &shape,
        &shape[2..],
        IndexLayout::PerPlane,
    )
    .unwrap();
    let expected: Vec<f32> = reference_forward(&x, &targets, 16)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for (name, device) in devices() {
        let counted = delta(|| {
            let y = max_unpool(
                Tensor::<4>::from_data(
                    TensorData::new(x.clone(), [1, 1, 2, 2]).convert::<f32>(),
                    &device,
                ),
                Tensor::<4, Int>::from_data(
                    TensorData::new(indices.clone(), [1, 1, 2, 2]),
                    &device,
                ),
                options.clone(),
            );
            assert_bit_equal(
                &y.into_data(),
                &TensorData::new(expected.clone(), shape),
                name,
            );
        });
        assert_eq!(counted.one_pass_kernels, 0, "{name}");
        assert_eq!(
            counted.winner_kernels,
            usize::from(name == "wgpu"),
            "{name}"
        );
    }
}

/// A SegNet-Basic training step on every device, with the pool indices the encoder hands the
/// decoder: no index check inside the model (on a GPU, no device read-back).
#[test]
#[cfg_attr(
    target_pointer_width = "32",
    ignore = "Burn's CPU matmul overflows on 32-bit here: gemm-common 0.19.0 multiplies the L3 size by its associativity in a usize (cache.rs:600; 480 MiB x 15 on CI's CPU)"
)]
fn a_segnet_training_step_reads_nothing_back() {
    use segnet::model::{Architecture, SegNetConfig};

    let _serial = serial();
    for (name, device) in devices() {
        let device = device.autodiff();
        let net = SegNetConfig::new(5)
            .with_architecture(Architecture::SegNetBasic)
            .with_width(4)
            .init(&device);
        let images = Tensor::<4>::from_data(
            TensorData::new(values(2 * 3 * 19 * 23, 4), [2, 3, 19, 23]),
            &device,
        );
        let step = delta(|| {
            let loss = net.forward(images.clone()).powi_scalar(2).mean();
            drop(loss.backward());
            device.sync().expect("the device syncs");
        });
        assert_eq!(step.device_index_checks, 0, "{name}: {step:?}");
        if name == "wgpu" {
            assert_eq!(step.winner_kernels, 0, "{name}: {step:?}");
            assert!(
                step.one_pass_kernels >= 8,
                "{name}: 4 decoder stages, forward and backward"
            );
        }
    }
}

/// The kernels a GPU device launches, by name, as CubeCL's own launch observer sees them: every
/// kernel the process launches (Burn's copies, casts and fills too), on the thread that issues
/// it. The tests here hold `SERIAL`, so the launches are theirs.
#[cfg(feature = "wgpu")]
mod launches {
    use std::sync::{Arc, Mutex};

    use burn::tensor::Device;
    use cubecl::logging::{LaunchObservation, LaunchObserver};

    #[derive(Default)]
    struct Names(Mutex<Vec<&'static str>>);

    impl LaunchObserver for Names {
        fn launched(&self, kernel: &'static str) {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(kernel);
        }
    }

    /// `op`'s result and the kernels launched to compute it: the device's queue is run before
    /// (so earlier work is not counted) and after (a fused device launches when it runs it).
    pub fn during<T>(device: &Device, op: impl FnOnce() -> T) -> (T, Vec<&'static str>) {
        device.sync().expect("the device syncs");
        let names = Arc::new(Names::default());
        let observation = LaunchObservation::new(names.clone());
        let result = op();
        device.sync().expect("the device syncs");
        drop(observation);
        let names = names.0.lock().expect("no observer panicked").clone();
        (result, names)
    }
}

/// On the cube route, with pool indices, each op is one launch of this crate's kernel beside
/// the output's allocation: the pool, the unpooling, its gradient, and the pool's gradient
/// under autodiff (whose `backward()` adds Burn's own kernels around it). Counted twice: by
/// CubeCL's launch observer, which sees every kernel, and by this crate's counter. Raw indices,
/// checked, show both counting more: a fill and the device check before the kernel.
#[cfg(feature = "wgpu")]
#[test]
fn pool_indices_take_one_launch_per_op_on_the_gpu() {
    use burn::tensor::DeviceKind;

    let _serial = serial();
    let device = Device::wgpu(DeviceKind::DefaultDevice);
    for case in cases().into_iter().filter(|case| case.disjoint) {
        let len = case.shape.iter().product();
        let image =
            Tensor::<4>::from_data(TensorData::new(values(len, 4), case.shape.clone()), &device);
        let grad =
            Tensor::<4>::from_data(TensorData::new(values(len, 5), case.shape.clone()), &device);
        let options = MaxUnpoolOptions::from_pool(&case.pool);
        // `run`: the elements of the rows the kernel's vectors may not cross; f32 and i32 move
        // in vectors of 2 or 4 on wgpu, so any even run is vectorised.
        let one_launch = |op: &str, kernel: &str, names: &[&str], counted: Counts, run: usize| {
            let context = format!("{}: {op}", case.name);
            assert_eq!(names.len(), 1, "{context}: launched {names:?}");
            assert!(names[0].contains(kernel), "{context}: launched {names:?}");
            assert_eq!(counted.kernel_launches, 1, "{context}: {counted:?}");
            let vectorised = usize::from(run.is_multiple_of(2));
            assert_eq!(
                counted.vectorised_launches, vectorised,
                "{context}: rows of {run}"
            );
        };
        let width = case.shape[3];

        let mut pooled = None;
        let counted = delta(|| {
            let (result, names) = launches::during(&device, || {
                max_pool2d_with_indices(image.clone(), case.pool.clone())
            });
            pooled = Some((result, names));
        });
        let ((values_out, indices), names) = pooled.expect("the pool ran");
        let [_, _, pooled_height, pooled_width] = values_out.dims();
        one_launch("pool", "max_pool_windows", &names, counted, pooled_width);

        let mut launched = Vec::new();
        let counted = delta(|| {
            let (_, names) = launches::during(&device, || {
                max_unpool(values_out.clone(), indices.clone(), options.clone())
            });
            launched = names;
        });
        one_launch("unpool", "unpool_cells", &launched, counted, width);

        let counted = delta(|| {
            let (_, names) = launches::during(&device, || {
                max_unpool_backward(grad.clone(), indices.clone(), options.clone())
            });
            launched = names;
        });
        let plane = pooled_height * pooled_width;
        one_launch(
            "unpool backward",
            "gather_targets",
            &launched,
            counted,
            plane,
        );

        // The same indices as a raw tensor, checked: a zero-filled flag, the check, the kernel.
        let raw = options
            .clone()
            .with_output_size([case.shape[2], case.shape[3]]);
        let counted = delta(|| {
            let (_, names) = launches::during(&device, || {
                max_unpool(values_out.clone(), indices.tensor().clone(), raw.clone())
            });
            launched = names;
        });
        let context = format!("{}: raw indices", case.name);
        assert_eq!(counted.kernel_launches, 3, "{context}: {counted:?}");
        assert_eq!(launched.len(), 3, "{context}: launched {launched:?}");
        assert!(
            launched[1].contains("index_pass"),
            "{context}: {launched:?}"
        );
        assert!(
            launched[2].contains("unpool_cells"),
            "{context}: {launched:?}"
        );

        // The pool's gradient under autodiff: backward() adds Burn's kernels (the gradient it
        // starts from, and its sum into `x`'s), ours is launched once.
        let autodiff = device.clone().autodiff();
        let x = Tensor::<4>::from_data(image.clone().into_data(), &autodiff).require_grad();
        let (values_ad, _) = max_pool2d_with_indices(x.clone(), case.pool.clone());
        // The pool's forward runs first, outside the count.
        device.sync().expect("the device syncs");
        let counted = delta(|| {
            let (_, names) = launches::during(&device, || values_ad.backward());
            launched = names;
        });
        let ours: Vec<_> = launched
            .iter()
            .filter(|name| name.contains("burn_unpool"))
            .collect();
        let context = format!("{}: pool backward", case.name);
        assert_eq!(ours.len(), 1, "{context}: launched {launched:?}");
        assert!(
            ours[0].contains("max_pool_gradient"),
            "{context}: {launched:?}"
        );
        assert_eq!(counted.kernel_launches, 1, "{context}: {counted:?}");
        let vectorised = usize::from(width.is_multiple_of(2));
        assert_eq!(
            counted.vectorised_launches, vectorised,
            "{context}: rows of {width}"
        );
    }
}
