//! The pools' indices are valid by construction: at the edges where Burn's own pools put an index
//! outside its window (windows of `-inf`, padding-heavy and asymmetric padding), every device
//! returns the indices of a reference pool written here from PyTorch's rule, and unpooling with
//! the [`PoolIndices`] and with the same indices as a raw tensor gives the same output and the
//! same gradient. A property test checks random geometries and values against the reference.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Tensor, TensorData};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_pool_with_indices, max_unpool};
use burn_unpool_tests::{
    assert_bit_equal, devices, outcome, reference_backward, reference_forward, reference_targets,
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

/// Small integers, so sums are exact in any order.
fn gradient_values(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 5) % 9) as f32 - 4.0).collect()
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
    let (pooled, indices) = max_pool_with_indices(x.clone(), &options);
    let expected = reference_pool(pool).expect("a pool the crate accepts is valid");
    let expected_values = TensorData::new(expected.values.clone(), expected.shape.clone());
    assert_bit_equal(&pooled.clone().into_data(), &expected_values, context);
    assert_eq!(
        indices.tensor().clone().into_data().convert::<i64>(),
        TensorData::new(expected.indices.clone(), expected.shape.clone()),
        "{context}: indices"
    );

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

fn check_any_rank(pool: &Pool, device: &Device, context: &str) {
    match pool.shape.len() {
        3 => check::<1, 3>(pool, device, context),
        4 => check::<2, 4>(pool, device, context),
        5 => check::<3, 5>(pool, device, context),
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
    ]
}

#[test]
fn pools_keep_every_index_in_its_window_and_unpool_as_raw_indices_do() {
    for (name, pool) in edge_cases() {
        for (device_name, device) in devices() {
            check_any_rank(&pool, &device, &format!("{name} on {device_name}"));
        }
    }
}

#[test]
fn a_window_wholly_in_the_padding_is_refused_on_every_device() {
    for (_, device) in devices() {
        let x = Tensor::<3>::ones([1, 1, 3], &device);
        let options = MaxPoolOptions::new([2]).with_padding([2]);
        let err = outcome(|| max_pool_with_indices(x, &options)).unwrap_err();
        assert_eq!(
            err,
            "max_pool: window 0 of axis 0 (size 3, padding (2, 2)) lies entirely in the padding; \
             the padding must leave every window an input element"
        );
        let x = Tensor::<4>::ones([1, 1, 4, 4], &device);
        let options = MaxPoolOptions::new([1, 2]).with_padding_pairs([(0, 0), (3, 0)]);
        let err = outcome(|| max_pool_with_indices(x, &options)).unwrap_err();
        assert!(
            err.contains("window 0 of axis 1 (size 4, padding (3, 0))"),
            "{err}"
        );
    }
}

/// Random pools of rank 1 to 3: sizes, kernels, strides, dilations, asymmetric paddings and
/// ceil mode, over values with ties, `-inf`, `+inf` and NaN.
fn random_pool() -> impl Strategy<Value = Pool> {
    (1usize..=3)
        .prop_flat_map(|dims| {
            let axis = (
                1usize..=7,
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
            let palette = [f32::NEG_INFINITY, -1.0, 0.0, 1.0, 2.0, INF, NAN, 2.0, -1.0];
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
        for (name, device) in devices() {
            let context = format!("{pool:?} on {name}");
            if valid {
                check_any_rank(&pool, &device, &context);
            } else {
                let err = outcome(|| check_any_rank(&pool, &device, &context)).unwrap_err();
                prop_assert!(err.starts_with("max_pool: "), "{context}: {err}");
            }
        }
    }
}
