//! The pools' indices are valid by construction: at the edges where Burn's own pools put an index
//! outside its window (windows of `-inf`, padding-heavy and asymmetric padding), every device
//! returns the indices of a reference pool written here from PyTorch's rule, and unpooling with
//! the [`PoolIndices`] and with the same indices as a raw tensor gives the same output and the
//! same gradient. A property test checks random geometries and values against the reference.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device, Tensor, TensorData};
use burn_unpool::onnx::{MaxPoolAttributes, max_pool_onnx};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_pool_with_indices, max_unpool};
use burn_unpool_tests::{
    assert_bit_equal, devices, devices_holding, on_both_routes, onnx_index_dtype, outcome,
    pool_routes, reference_backward, reference_forward, reference_targets,
};
use proptest::prelude::*;

const INF: f32 = f32::INFINITY;
const NAN: f32 = f32::NAN;

/// A pool of any rank, and the input it pools.
#[derive(Clone, Debug)]
struct Pool {
    shape: Vec<usize>,
    kernel: Vec<usize>,
    stride: Vec<usize>,
    padding: Vec<(usize, usize)>,
    dilation: Vec<usize>,
    ceil_mode: bool,
    x: Vec<f32>,
}

impl Pool {
    fn options<const D: usize>(&self) -> MaxPoolOptions<D> {
        let array = |v: &[usize]| -> [usize; D] { v.try_into().expect("one value per axis") };
        MaxPoolOptions::new(array(&self.kernel))
            .with_stride(array(&self.stride))
            .with_padding_pairs(self.padding.clone().try_into().expect("one pair per axis"))
            .with_dilation(array(&self.dilation))
            .with_ceil_mode(self.ceil_mode)
    }
}

/// The reference pool's result.
#[derive(Debug)]
struct Pooled {
    shape: Vec<usize>,
    values: Vec<f32>,
    indices: Vec<i64>,
}

/// The output size of one axis as PyTorch computes it, or `None` when the window does not fit.
fn output_size(pool: &Pool, axis: usize) -> Option<usize> {
    let input = pool.shape[axis + 2] as i64;
    let (begin, end) = pool.padding[axis];
    let span = pool.dilation[axis] as i64 * (pool.kernel[axis] as i64 - 1) + 1;
    let stride = pool.stride[axis] as i64;
    // PyTorch's `pooling_output_shape`: floor division, rounded up first in ceil mode (so a
    // last window may run past the padded input's end).
    let room = input + begin as i64 + end as i64 - span;
    let round_up = if pool.ceil_mode { stride - 1 } else { 0 };
    let mut size = (room + round_up).div_euclid(stride) + 1;
    // Ceil mode drops a last window that would start in the end padding.
    if pool.ceil_mode && size > 0 && (size - 1) * stride >= input + begin as i64 {
        size -= 1;
    }
    (size > 0).then_some(size as usize)
}

/// Row-major multi-indices of `bounds`.
fn positions(bounds: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &bound in bounds {
        all = all
            .into_iter()
            .flat_map(|prefix| {
                (0..bound).map(move |i| {
                    let mut next = prefix.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    all
}

/// PyTorch's rule, as written: scan each window's input elements in row-major order; an element
/// replaces the running maximum when it is larger or NaN. `Err` for a pool PyTorch would refuse or
/// whose window lies wholly in the padding.
fn reference_pool(pool: &Pool) -> Result<Pooled, String> {
    let dims = pool.kernel.len();
    let spatial = &pool.shape[2..];
    let out: Vec<usize> = (0..dims)
        .map(|axis| output_size(pool, axis).ok_or(format!("no output on axis {axis}")))
        .collect::<Result<_, _>>()?;
    let planes = pool.shape[0] * pool.shape[1];
    let in_plane: usize = spatial.iter().product();
    let (mut values, mut indices) = (vec![], vec![]);
    for plane in 0..planes {
        for cell in positions(&out) {
            let mut best: Option<(f32, usize)> = None;
            for offset in positions(&pool.kernel) {
                let mut flat = 0usize;
                let mut inside = true;
                for axis in 0..dims {
                    let c = (cell[axis] * pool.stride[axis] + offset[axis] * pool.dilation[axis])
                        as i64
                        - pool.padding[axis].0 as i64;
                    inside &= c >= 0 && (c as usize) < spatial[axis];
                    flat = flat * spatial[axis] + c.max(0) as usize;
                }
                if !inside {
                    continue;
                }
                let value = pool.x[plane * in_plane + flat];
                match best {
                    Some((max, _)) if !(value > max || value.is_nan()) => {}
                    _ => best = Some((value, flat)),
                }
            }
            let (value, index) = best.ok_or(format!("window {cell:?} lies in the padding"))?;
            values.push(value);
            indices.push(index as i64);
        }
    }
    let shape = pool.shape[..2].iter().copied().chain(out).collect();
    Ok(Pooled {
        shape,
        values,
        indices,
    })
}

/// The gradient PyTorch's pool gives `x`: each window's gradient added at its index.
fn reference_pool_gradient(pool: &Pool, pooled: &Pooled, grad: &[f32]) -> Vec<f32> {
    let in_plane: usize = pool.shape[2..].iter().product();
    let out_plane: usize = pooled.shape[2..].iter().product();
    let mut dx = vec![0.0f32; pool.x.len()];
    for (cell, (&index, &g)) in pooled.indices.iter().zip(grad).enumerate() {
        dx[(cell / out_plane) * in_plane + index as usize] += g;
    }
    dx
}

/// Small integers, so sums are exact in any order, with `-0.0` for zero: the pool's gradient, a
/// sum into zeros, turns it into `+0.0`; the unpooling's, a gather, keeps it.
fn gradient_values(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| match ((i * 5) % 9) as f32 - 4.0 {
            0.0 => -0.0,
            g => g,
        })
        .collect()
}

/// Pools `pool` on `device` and checks values, indices and the pool's gradient against the
/// reference; then unpools with the pool's indices and with the same indices as a raw tensor and
/// checks both against the contract's reference, forward and gradient.
fn check<const D: usize, const R: usize>(pool: &Pool, device: &Device, context: &str) {
    let autodiff = device.clone().autodiff();
    let x = Tensor::<R>::from_data(
        TensorData::new(pool.x.clone(), pool.shape.clone()),
        &autodiff,
    )
    .require_grad();
    let options = pool.options::<D>();
    let (pooled, indices) = max_pool_with_indices(x.clone(), options.clone());
    let expected = reference_pool(pool).expect("a pool the crate accepts is valid");
    let expected_values = TensorData::new(expected.values.clone(), expected.shape.clone());
    assert_bit_equal(&pooled.clone().into_data(), &expected_values, context);
    assert_eq!(
        indices.tensor().clone().into_data().convert::<i64>(),
        TensorData::new(expected.indices.clone(), expected.shape.clone()),
        "{context}: indices"
    );

    // ONNX MaxPool (any rank; without ceil mode, whose ONNX rule is the same by construction):
    // the same values, and global indices.
    if !pool.ceil_mode {
        let pads = [
            pool.padding.iter().map(|p| p.0).collect::<Vec<_>>(),
            pool.padding.iter().map(|p| p.1).collect(),
        ]
        .concat();
        let attributes = MaxPoolAttributes::new(pool.kernel.clone())
            .with_strides(pool.stride.clone())
            .with_pads(pads)
            .with_dilations(pool.dilation.clone());
        let x = Tensor::<R>::from_data(TensorData::new(pool.x.clone(), pool.shape.clone()), device);
        let (y, global) = max_pool_onnx(x, &attributes);
        assert_bit_equal(
            &y.into_data(),
            &expected_values,
            &format!("{context}: ONNX"),
        );
        let (in_plane, out_plane) = (
            pool.shape[2..].iter().product::<usize>(),
            expected.shape[2..].iter().product::<usize>(),
        );
        let expected_global: Vec<i64> = (expected.indices.iter().enumerate())
            .map(|(cell, &index)| index + ((cell / out_plane) * in_plane) as i64)
            .collect();
        let wide = onnx_index_dtype(device);
        assert_eq!(
            global.into_data(),
            TensorData::new(expected_global, expected.shape.clone()).convert_dtype(wide),
            "{context}: ONNX indices"
        );
    }

    let grad = gradient_values(expected.values.len());
    let weights = Tensor::<R>::from_data(
        TensorData::new(grad.clone(), expected.shape.clone()),
        &autodiff,
    );
    let grads = (pooled.clone() * weights).sum().backward();
    let dx = x.grad(&grads).expect("a gradient for x").into_data();
    let expected_dx = reference_pool_gradient(pool, &expected, &grad);
    assert_bit_equal(
        &dx,
        &TensorData::new(expected_dx, pool.shape.clone()),
        &format!("{context}: pool gradient"),
    );

    // Unpool the pooled values (finite ones, so that NaN and infinity compare as bits) with both
    // kinds of indices.
    let finite: Vec<f32> = (0..expected.values.len()).map(|i| i as f32 + 1.0).collect();
    let values = TensorData::new(finite.clone(), expected.shape.clone());
    let input_size: [usize; D] = pool.shape[2..].try_into().expect("D spatial axes");
    let unpool = |indices: burn_unpool::UnpoolIndices<R>, options: MaxUnpoolOptions<D>| {
        let v = Tensor::<R>::from_data(values.clone(), &autodiff).require_grad();
        let y = max_unpool(v.clone(), indices, options);
        let out_grad: Vec<f32> = gradient_values(pool.x.len());
        let w = Tensor::<R>::from_data(TensorData::new(out_grad, pool.shape.clone()), &autodiff);
        let grads = (y.clone() * w).sum().backward();
        let dv = v
            .grad(&grads)
            .expect("a gradient for the values")
            .into_data();
        (y.into_data(), dv)
    };
    let from_pool = MaxUnpoolOptions::from_pool(&options);
    let (y_pooled, dv_pooled) = unpool(indices.clone().into(), from_pool.clone());
    let raw = from_pool.with_output_size(input_size);
    let (y_raw, dv_raw) = unpool(indices.into_tensor().into(), raw);
    assert_bit_equal(
        &y_pooled,
        &y_raw,
        &format!("{context}: unpool, pool vs raw"),
    );
    assert_bit_equal(
        &dv_pooled,
        &dv_raw,
        &format!("{context}: gradient, pool vs raw"),
    );

    let targets = reference_targets(
        &expected.indices,
        &expected.shape,
        &pool.shape,
        &pool.shape[2..],
        IndexLayout::PerPlane,
    )
    .expect("the pool's indices are in range");
    let finite: Vec<f64> = finite.iter().map(|&v| v as f64).collect();
    let y = reference_forward(&finite, &targets, pool.x.len());
    let y: Vec<f32> = y.into_iter().map(|v| v as f32).collect();
    assert_bit_equal(
        &y_pooled,
        &TensorData::new(y, pool.shape.clone()),
        &format!("{context}: unpool vs reference"),
    );
    let out_grad: Vec<f64> = gradient_values(pool.x.len())
        .iter()
        .map(|&v| v as f64)
        .collect();
    let dv: Vec<f32> = reference_backward(&out_grad, &targets)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    assert_bit_equal(
        &dv_pooled,
        &TensorData::new(dv, expected.shape.clone()),
        &format!("{context}: unpool gradient vs reference"),
    );
}

/// [`check`] on this crate's kernels and on the composition of Burn ops that devices without
/// them run.
fn check_any_rank(pool: &Pool, device: &Device, context: &str) {
    pool_routes(device, &pool.shape, &pool.x, |route| {
        check_at_rank(pool, device, &format!("{context}, {route}"))
    });
}

/// [`check`] at the rank of `pool`: 1 to 6 spatial axes.
fn check_at_rank(pool: &Pool, device: &Device, context: &str) {
    match pool.shape.len() {
        3 => check::<1, 3>(pool, device, context),
        4 => check::<2, 4>(pool, device, context),
        5 => check::<3, 5>(pool, device, context),
        6 => check::<4, 6>(pool, device, context),
        7 => check::<5, 7>(pool, device, context),
        8 => check::<6, 8>(pool, device, context),
        rank => panic!("no pool of rank {rank}"),
    }
}

/// A pool with stride equal to the kernel, no padding, dilation 1.
fn pool(shape: &[usize], kernel: &[usize], x: Vec<f32>) -> Pool {
    let dims = kernel.len();
    assert_eq!(x.len(), shape.iter().product::<usize>());
    Pool {
        shape: shape.to_vec(),
        kernel: kernel.to_vec(),
        stride: kernel.to_vec(),
        padding: vec![(0, 0); dims],
        dilation: vec![1; dims],
        ceil_mode: false,
        x,
    }
}

/// Seeded values from `palette`.
fn values(len: usize, seed: usize, palette: &[f32]) -> Vec<f32> {
    (0..len)
        .map(|i| palette[(i * 7 + seed * 13 + i / 3) % palette.len()])
        .collect()
}

fn edge_cases() -> Vec<(&'static str, Pool)> {
    let neg = f32::NEG_INFINITY;
    let mostly_neg_inf = [neg, neg, neg, 1.0, neg, neg, 2.0, neg, -INF, 0.5];
    let with_nan = [1.0, NAN, 3.0, -1.0, NAN, neg, 2.0];
    let ties = [1.0, 1.0, 0.0, 1.0, 2.0, 2.0];
    // -0.0 and +0.0 compare equal (the first wins); subnormals compare by value, also on a
    // device that flushes them.
    let tiny = f32::from_bits(1);
    let zeros_and_subnormals = [-0.0, 0.0, tiny, -tiny, 1.0e-39, -0.0, 2.0 * tiny, 0.0];
    vec![
        (
            "a window of -inf (1-d, disjoint)",
            pool(&[1, 1, 4], &[2], vec![5.0, 1.0, neg, neg]),
        ),
        (
            "every window of -inf (2-d, overlapping, padded)",
            Pool {
                stride: vec![2, 1],
                padding: vec![(1, 1), (1, 0)],
                ..pool(&[1, 2, 5, 4], &[3, 2], vec![neg; 40])
            },
        ),
        (
            "asymmetric padding (0, 0), (3, 1) on width 4",
            Pool {
                stride: vec![1, 2],
                padding: vec![(0, 0), (3, 1)],
                ..pool(
                    &[1, 1, 2, 4],
                    &[1, 4],
                    vec![3.0, 1.0, 2.0, 0.0, neg, neg, 1.0, 1.0],
                )
            },
        ),
        (
            "padding-heavy asymmetric 1-d, -inf",
            Pool {
                stride: vec![2],
                padding: vec![(3, 1)],
                ..pool(&[2, 2, 6], &[4], values(24, 1, &mostly_neg_inf))
            },
        ),
        (
            "-inf, overlapping 2-d, ceil mode",
            Pool {
                stride: vec![2, 2],
                padding: vec![(1, 1), (1, 1)],
                ceil_mode: true,
                ..pool(&[1, 3, 7, 8], &[3, 3], values(168, 2, &mostly_neg_inf))
            },
        ),
        (
            "NaN, asymmetric padding, overlapping 2-d",
            Pool {
                stride: vec![1, 1],
                padding: vec![(1, 0), (0, 2)],
                ..pool(&[1, 2, 5, 5], &[3, 3], values(50, 3, &with_nan))
            },
        ),
        (
            "ties, disjoint 2-d",
            pool(&[2, 2, 4, 6], &[2, 2], values(96, 4, &ties)),
        ),
        (
            "ties, overlapping 2-d",
            Pool {
                stride: vec![1, 1],
                padding: vec![(1, 1), (1, 1)],
                ..pool(&[1, 2, 5, 6], &[3, 3], values(60, 5, &ties))
            },
        ),
        (
            "dilated, padded, ceil mode 2-d",
            Pool {
                stride: vec![2, 1],
                padding: vec![(2, 2), (0, 3)],
                dilation: vec![2, 2],
                ceil_mode: true,
                ..pool(&[1, 1, 9, 7], &[3, 2], values(63, 6, &mostly_neg_inf))
            },
        ),
        (
            "padding-heavy asymmetric 3-d, -inf and NaN",
            Pool {
                stride: vec![2, 2, 1],
                padding: vec![(2, 0), (0, 1), (1, 1)],
                ..pool(
                    &[1, 2, 4, 5, 3],
                    &[3, 3, 2],
                    values(120, 7, &[neg, neg, NAN, 1.0, neg, 0.0, neg]),
                )
            },
        ),
        (
            "disjoint 3-d of -inf",
            pool(&[1, 1, 4, 4, 4], &[2, 2, 2], values(64, 8, &mostly_neg_inf)),
        ),
        (
            "signed zeros and subnormals, overlapping 2-d",
            Pool {
                stride: vec![1, 1],
                ..pool(&[1, 2, 4, 5], &[2, 3], values(40, 9, &zeros_and_subnormals))
            },
        ),
        (
            "signed zeros and subnormals, disjoint 1-d",
            pool(&[2, 1, 12], &[3], values(24, 10, &zeros_and_subnormals)),
        ),
        (
            "4 axes of distinct values, window 2 on each",
            pool(&[1, 2, 4, 4, 4, 4], &[2; 4], distinct(512)),
        ),
        (
            "4 axes, overlapping, padded, dilated, ceil mode, NaN and -inf",
            Pool {
                stride: vec![1, 2, 1, 2],
                padding: vec![(1, 0), (0, 1), (1, 1), (0, 0)],
                dilation: vec![1, 1, 2, 1],
                ceil_mode: true,
                ..pool(
                    &[1, 2, 3, 4, 5, 3],
                    &[2, 2, 2, 2],
                    values(360, 11, &[neg, 1.0, NAN, 2.0, neg, -0.0, 0.0, 2.0]),
                )
            },
        ),
        (
            "5 axes of distinct values, mixed windows",
            Pool {
                stride: vec![1, 2, 1, 1, 2],
                ..pool(&[2, 1, 3, 4, 2, 3, 4], &[2, 2, 1, 3, 2], distinct(576))
            },
        ),
        (
            "6 axes, ties, padded",
            Pool {
                padding: vec![(0, 0), (1, 0), (0, 0), (0, 1), (0, 0), (1, 1)],
                stride: vec![1, 2, 1, 2, 1, 2],
                ..pool(
                    &[1, 2, 2, 3, 2, 3, 2, 4],
                    &[2, 2, 1, 2, 2, 3],
                    values(576, 12, &ties),
                )
            },
        ),
    ]
}

/// Distinct values, shuffled so that no axis is monotonic.
fn distinct(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 37 + 11) % len) as f32).collect()
}

#[test]
fn pools_keep_every_index_in_its_window_and_unpool_as_raw_indices_do() {
    for (name, pool) in edge_cases() {
        for (device_name, device) in devices_holding(pool.shape.len()) {
            check_any_rank(&pool, &device, &format!("{name} on {device_name}"));
        }
    }
}

#[test]
fn a_window_wholly_in_the_padding_is_refused_on_every_device() {
    for (_, device) in devices() {
        let x = Tensor::<3>::ones([1, 1, 3], &device);
        let options = MaxPoolOptions::new([2]).with_padding([2]);
        let err = outcome(|| max_pool_with_indices(x, options.clone())).unwrap_err();
        assert_eq!(
            err,
            "max_pool: window 0 of axis 0 (size 3, padding (2, 2)) lies entirely in the padding; \
             the padding must leave every window an input element"
        );
        let x = Tensor::<4>::ones([1, 1, 4, 4], &device);
        let options = MaxPoolOptions::new([1, 2]).with_padding_pairs([(0, 0), (3, 0)]);
        let err = outcome(|| max_pool_with_indices(x, options.clone())).unwrap_err();
        assert!(
            err.contains("window 0 of axis 1 (size 4, padding (3, 0))"),
            "{err}"
        );
    }
}

/// Random pools of 1 to 5 spatial axes: sizes, kernels, strides, dilations, asymmetric paddings
/// and ceil mode, over values with ties, `-inf`, `+inf`, NaN, signed zeros and subnormals.
fn random_pool() -> impl Strategy<Value = Pool> {
    (1usize..=5)
        .prop_flat_map(|dims| {
            let axis = (
                1usize..=(if dims > 3 { 4 } else { 7 }),
                1usize..=4,
                1usize..=3,
                1usize..=3,
                0usize..=3,
                0usize..=3,
            );
            (
                1usize..=2,
                1usize..=2,
                proptest::collection::vec(axis, dims),
                any::<bool>(),
                any::<u64>(),
            )
        })
        .prop_map(|(n, c, axes, ceil_mode, seed)| {
            let spatial: Vec<usize> = axes.iter().map(|a| a.0).collect();
            let shape: Vec<usize> = [n, c].into_iter().chain(spatial).collect();
            let len = shape.iter().product();
            let tiny = f32::from_bits(3);
            let palette = [
                f32::NEG_INFINITY,
                -1.0,
                0.0,
                1.0,
                2.0,
                INF,
                NAN,
                2.0,
                -1.0,
                -0.0,
                tiny,
                -tiny,
            ];
            let x = (0..len)
                .map(|i| {
                    let mixed = (seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 7;
                    palette[(mixed % palette.len() as u64) as usize]
                })
                .collect();
            Pool {
                shape,
                kernel: axes.iter().map(|a| a.1).collect(),
                stride: axes.iter().map(|a| a.2).collect(),
                dilation: axes.iter().map(|a| a.3).collect(),
                padding: axes.iter().map(|a| (a.4, a.5)).collect(),
                ceil_mode,
                x,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_pools_match_the_reference_on_every_device(pool in random_pool()) {
        let valid = reference_pool(&pool).is_ok();
        for (name, device) in devices_holding(pool.shape.len()) {
            let context = format!("{pool:?} on {name}");
            if valid {
                check_any_rank(&pool, &device, &context);
            } else {
                // Refused before either route runs.
                let err = outcome(|| check_at_rank(&pool, &device, &context)).unwrap_err();
                prop_assert!(err.starts_with("max_pool: "), "{context}: {err}");
            }
        }
    }
}

/// Whether two f32 values are the same: equal bits, or both NaN (a NaN's payload may change
/// through a narrower dtype).
fn same_value(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// `R`-rank data of `pool`'s shape from `values`, as `dtype`.
fn data_of(values: &[f32], shape: &[usize], dtype: DType) -> TensorData {
    TensorData::new(values.to_vec(), shape.to_vec()).convert_dtype(dtype)
}

/// The pooled values, indices and gradient of a 2-d `pool` whose values are of `dtype`, as f32
/// and i64, with `grad` as the pooled values' gradient.
fn pool_2d(
    pool: &Pool,
    dtype: DType,
    grad: &[f32],
    device: &Device,
) -> (Vec<f32>, Vec<i64>, Vec<f32>) {
    let autodiff = device.clone().autodiff();
    let x = Tensor::<4>::from_data(data_of(&pool.x, &pool.shape, dtype), (&autodiff, dtype))
        .require_grad();
    let (pooled, indices) = max_pool_with_indices(x.clone(), pool.options::<2>());
    let shape = pooled.dims();
    let weights = Tensor::<4>::from_data(data_of(grad, &shape, dtype), (&autodiff, dtype));
    let grads = (pooled.clone() * weights).sum().backward();
    let dx = x.grad(&grads).expect("a gradient for x");
    let f32s = |data: TensorData| data.convert::<f32>().try_to_vec::<f32>().unwrap();
    (
        f32s(pooled.into_data()),
        indices
            .into_tensor()
            .into_data()
            .convert::<i64>()
            .try_to_vec()
            .unwrap(),
        f32s(dx.into_data()),
    )
}

#[test]
fn pools_of_f64_f16_and_bf16_values_match_the_reference_on_every_route() {
    let neg = f32::NEG_INFINITY;
    let pool = Pool {
        stride: vec![1, 2],
        padding: vec![(1, 0), (0, 1)],
        ..pool(
            &[1, 2, 4, 5],
            &[2, 3],
            values(40, 13, &[neg, 1.0, NAN, 2.0, -0.0, 0.0, 0.5, -3.0, 2.0]),
        )
    };
    let expected = reference_pool(&pool).expect("a valid pool");
    let grad = gradient_values(expected.values.len());
    let expected_dx = reference_pool_gradient(&pool, &expected, &grad);
    let mut ran = 0;
    for (device_name, device) in devices() {
        for dtype in [DType::F64, DType::F16, DType::BF16] {
            if !device.supports_dtype(dtype) {
                continue;
            }
            on_both_routes(|route| {
                let context = format!("{dtype:?} on {device_name}, {route}");
                let (values, indices, dx) = pool_2d(&pool, dtype, &grad, &device);
                assert_eq!(indices, expected.indices, "{context}: indices");
                for (what, actual, expected) in [
                    ("values", &values, &expected.values),
                    ("gradient", &dx, &expected_dx),
                ] {
                    let same = actual.iter().zip(expected).all(|(&a, &b)| same_value(a, b));
                    assert!(
                        same,
                        "{context}: {what}\nactual:   {actual:?}\nexpected: {expected:?}"
                    );
                }
                ran += 1;
            });
        }
    }
    // Flex has f64, f16 and bf16; NdArray f64: two routes each.
    let cpu_runs: usize = (devices().iter())
        .map(|(name, _)| match *name {
            "flex" => 6,
            "ndarray" => 2,
            _ => 0,
        })
        .sum();
    assert!(ran >= cpu_runs, "only {ran} runs");
}

#[test]
fn overlapping_pool_gradients_are_the_sums_in_window_order_on_every_run() {
    // Kernel 3, stride 1: every element lies in up to 9 windows, and ties let several windows
    // pick it; gradients of mixed magnitudes make the sum depend on its order.
    let pool = Pool {
        stride: vec![1, 1],
        padding: vec![(1, 1), (1, 1)],
        ..pool(
            &[2, 3, 6, 7],
            &[3, 3],
            values(252, 14, &[1.0, 2.0, 2.0, 0.5]),
        )
    };
    let expected = reference_pool(&pool).expect("a valid pool");
    let grad: Vec<f32> = (0..expected.values.len())
        .map(|i| [1.0e8, 1.0, -1.0e8, 3.3e-3, 7.0e3][i % 5] * (1.0 + i as f32 / 97.0))
        .collect();
    let expected_dx = reference_pool_gradient(&pool, &expected, &grad);
    for (device_name, device) in devices() {
        on_both_routes(|route| {
            for run in 0..2 {
                let context = format!("{device_name}, {route}, run {run}");
                let (_, indices, dx) = pool_2d(&pool, DType::F32, &grad, &device);
                assert_eq!(indices, expected.indices, "{context}: indices");
                assert_bit_equal(
                    &TensorData::new(dx, pool.shape.clone()),
                    &TensorData::new(expected_dx.clone(), pool.shape.clone()),
                    &context,
                );
            }
        });
    }
}

#[test]
fn empty_batches_and_channels_pool_and_unpool_on_every_route() {
    for (device_name, device) in devices() {
        for shape in [[0, 2, 4, 6], [2, 0, 4, 6], [0, 0, 4, 6]] {
            on_both_routes(|route| {
                let context = format!("{shape:?} on {device_name}, {route}");
                let autodiff = device.clone().autodiff();
                let x = Tensor::<4>::zeros(shape, &autodiff).require_grad();
                let options = MaxPoolOptions::new([2, 2]);
                let (pooled, indices) = max_pool_with_indices(x.clone(), options.clone());
                let pooled_shape = [shape[0], shape[1], 2, 3];
                assert_eq!(pooled.dims(), pooled_shape, "{context}: pooled");
                assert_eq!(indices.tensor().dims(), pooled_shape, "{context}: indices");
                let restored = max_unpool(pooled, indices, MaxUnpoolOptions::from_pool(&options));
                assert_eq!(restored.dims(), shape, "{context}: unpooled");
                let grads = restored.sum().backward();
                let dx = x.grad(&grads).expect("a gradient for x");
                assert_eq!(dx.dims(), shape, "{context}: gradient");
            });
        }
    }
}
