//! The modules: configs round-trip through JSON, display like Burn's pools, and pair with Burn's
//! pool modules.

use burn::nn::pool::{MaxPool1dConfig, MaxPool2dConfig};
use burn::nn::{PaddingConfig1d, PaddingConfig2d, PaddingConfig3d};
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Int, Tensor, TensorData};
use burn_unpool::nn::{
    MaxPool3dConfig, MaxPoolWithIndices, MaxUnpool1dConfig, MaxUnpool2dConfig, MaxUnpool3dConfig,
};
use burn_unpool::{IndexLayout, MaxUnpoolOptions};
use burn_unpool_tests::{assert_bit_equal, devices, outcome, reference_forward, reference_targets};

#[test]
fn configs_round_trip_through_json() {
    let config = MaxUnpool2dConfig::new([3, 3])
        .with_strides([2, 2])
        .with_padding(PaddingConfig2d::Explicit(1, 0, 0, 1))
        .with_ceil_mode(true);
    let json = serde_json::to_string(&config).unwrap();
    let back: MaxUnpool2dConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (
            back.kernel_size,
            back.strides,
            back.dilation,
            back.ceil_mode
        ),
        ([3, 3], [2, 2], [1, 1], true)
    );
    assert_eq!(back.padding, PaddingConfig2d::Explicit(1, 0, 0, 1));

    // The defaults are Burn's pool configs' defaults.
    let defaults = MaxUnpool3dConfig::new([2, 2, 2]);
    let pool = MaxPool3dConfig::new([2, 2, 2]);
    assert_eq!(
        (defaults.strides, defaults.dilation, defaults.ceil_mode),
        (pool.strides, pool.dilation, pool.ceil_mode)
    );
    assert_eq!(defaults.padding, pool.padding);
}

#[test]
fn display_matches_burns_pool_style() {
    let unpool = MaxUnpool2dConfig::new([2, 2]).init();
    assert_eq!(
        unpool.to_string(),
        "MaxUnpool2d {kernel_size: [2, 2], stride: [2, 2], padding: Valid, dilation: [1, 1], ceil_mode: false}"
    );
    // Burn's pool prints the same fields the same way.
    let pool = MaxPool2dConfig::new([2, 2]).init();
    assert_eq!(
        pool.to_string().replacen("MaxPool2d", "MaxUnpool2d", 1),
        unpool.to_string()
    );
}

#[test]
fn unpool_config_from_pool_config() {
    let pool = MaxPool2dConfig::new([3, 3])
        .with_strides([2, 2])
        .with_padding(PaddingConfig2d::Explicit(1, 0, 1, 0));
    let unpool = MaxUnpool2dConfig::from(&pool);
    assert_eq!((unpool.kernel_size, unpool.strides), ([3, 3], [2, 2]));
    assert_eq!(unpool.padding, PaddingConfig2d::Explicit(1, 0, 1, 0));
    let unpool = MaxUnpool1dConfig::from(&MaxPool1dConfig::new(4).with_stride(2));
    assert_eq!((unpool.kernel_size, unpool.stride), (4, 2));
}

/// A config pair written for Burn's pool carries over to the unpooling by renaming the type:
/// the same builder methods take the same argument types (this test fails to compile
/// otherwise), and give the config `From` gives.
#[test]
fn a_pool_config_written_by_hand_carries_over_to_the_unpool_config() {
    macro_rules! written_as {
        ($config:ident, $kernel:expr, $with_stride:ident($stride:expr), $padding:expr, $dilation:expr) => {
            $config::new($kernel)
                .$with_stride($stride)
                .with_padding($padding)
                .with_dilation($dilation)
                .with_ceil_mode(true)
        };
    }
    let pool = written_as!(
        MaxPool1dConfig,
        3,
        with_stride(2),
        PaddingConfig1d::Explicit(1, 0),
        2
    );
    let unpool = written_as!(
        MaxUnpool1dConfig,
        3,
        with_stride(2),
        PaddingConfig1d::Explicit(1, 0),
        2
    );
    let from = MaxUnpool1dConfig::from(&pool);
    assert_eq!(unpool.to_string(), from.to_string());
    let padding = PaddingConfig2d::Explicit(1, 0, 1, 0);
    let pool = written_as!(
        MaxPool2dConfig,
        [3, 3],
        with_strides([2, 1]),
        padding.clone(),
        [1, 2]
    );
    let unpool = written_as!(
        MaxUnpool2dConfig,
        [3, 3],
        with_strides([2, 1]),
        padding,
        [1, 2]
    );
    assert_eq!(
        unpool.to_string(),
        MaxUnpool2dConfig::from(&pool).to_string()
    );
    let padding = PaddingConfig3d::Explicit(1, 0, 1);
    let pool = written_as!(
        MaxPool3dConfig,
        [3, 2, 3],
        with_strides([2, 2, 1]),
        padding.clone(),
        [1, 1, 2]
    );
    let unpool = written_as!(
        MaxUnpool3dConfig,
        [3, 2, 3],
        with_strides([2, 2, 1]),
        padding,
        [1, 1, 2]
    );
    assert_eq!(
        unpool.to_string(),
        MaxUnpool3dConfig::from(&pool).to_string()
    );
    assert!(unpool.ceil_mode && from.ceil_mode);
}

/// A layer refuses the indices of a pool it does not invert, naming both values, instead of
/// unpooling with the pool's geometry.
#[test]
fn a_layer_refuses_the_indices_of_a_pool_it_does_not_invert() {
    let pool_config = MaxPool2dConfig::new([2, 2]);
    let cases = [
        (
            MaxUnpool2dConfig::new([3, 3]),
            "kernel_size [3, 3] (the pool's: [2, 2])",
        ),
        (
            MaxUnpool2dConfig::new([2, 2]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)),
            "padding [(1, 1), (1, 1)] (the pool's: [(0, 0), (0, 0)])",
        ),
        (
            MaxUnpool2dConfig::new([2, 2]).with_ceil_mode(true),
            "ceil_mode true (the pool's: false)",
        ),
    ];
    for (name, device) in devices() {
        let (pooled, indices) = pool_config
            .init()
            .forward_with_indices(ramp(&device, [1, 2, 4, 4]));
        for (config, part) in &cases {
            let unpool = config.init();
            let text = panic_message(|| drop(unpool.forward(pooled.clone(), indices.clone())));
            assert!(text.contains(part), "{name}: {text:?} lacks {part:?}");
            let text = panic_message(|| {
                drop(unpool.forward_with_output_size(pooled.clone(), indices.clone(), [4, 4]))
            });
            assert!(text.contains(part), "{name}: {text:?} lacks {part:?}");
        }
    }
}

#[test]
fn pool_with_indices_then_unpool_restores_the_maxima() {
    for (name, device) in devices() {
        // Maxima at known positions of a 4x5 plane: (0,1)=9, (1,3)=8, (3,0)=7, (2,2)=6 (2x2 pool).
        let mut image = [[[[0.0f32; 5]; 4]; 1]; 1];
        for (r, c, v) in [(0, 1, 9.0), (1, 3, 8.0), (3, 0, 7.0), (2, 2, 6.0)] {
            image[0][0][r][c] = v;
        }
        let pool_config = MaxPool2dConfig::new([2, 2]);
        let (pooled, indices) = pool_config
            .init()
            .forward_with_indices(Tensor::<4>::from_floats(image, &device));
        let restored = MaxUnpool2dConfig::from(&pool_config)
            .init()
            .forward_with_output_size(pooled, indices, [4, 5]);
        assert_bit_equal(&restored.into_data(), &TensorData::from(image), name);
    }
}

/// The unpooling of `pooled` with its per-plane `indices` into `output` `[H, W]`, by the tests'
/// own reference.
fn reference_unpool(pooled: Tensor<4>, indices: Tensor<4, Int>, output: [usize; 2]) -> TensorData {
    let [n, c, _, _] = pooled.dims();
    let shape = [n, c, output[0], output[1]];
    let targets = reference_targets(
        &indices
            .into_data()
            .convert::<i64>()
            .try_into_vec::<i64>()
            .unwrap(),
        &pooled.dims(),
        &shape,
        &output,
        IndexLayout::PerPlane,
    )
    .expect("pool indices are in range");
    let x = pooled
        .into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .unwrap();
    let values = reference_forward(&x, &targets, shape.iter().product());
    TensorData::new(
        values.into_iter().map(|v| v as f32).collect::<Vec<_>>(),
        shape,
    )
}

fn ramp(device: &burn::tensor::Device, shape: [usize; 4]) -> Tensor<4> {
    let len = shape.iter().product::<usize>();
    let values: Vec<f32> = (0..len).map(|v| ((v * 37) % 101) as f32).collect();
    Tensor::<4>::from_data(TensorData::new(values, shape), device)
}

#[test]
fn same_padding_pool_with_stride_is_inverted_with_the_input_size() {
    let pool_config = MaxPool2dConfig::new([3, 3])
        .with_strides([2, 2])
        .with_padding(PaddingConfig2d::Same);
    let unpool = MaxUnpool2dConfig::from(&pool_config).init();
    assert!(
        unpool.requires_output_size(),
        "Same with stride 2 hides the input size"
    );
    for (name, device) in devices() {
        let (pooled, indices) = pool_config
            .init()
            .forward_with_indices(ramp(&device, [1, 2, 5, 7]));
        assert_eq!(
            pooled.dims(),
            [1, 2, 3, 4],
            "{name}: Same keeps ceil(size / stride)"
        );
        let raw = indices.tensor().clone();
        let expected = reference_unpool(pooled.clone(), raw.clone(), [5, 7]);
        let restored = unpool.forward_with_output_size(pooled.clone(), raw.clone(), [5, 7]);
        assert_bit_equal(&restored.into_data(), &expected, name);
        // The pool's indices know the input size; raw ones do not.
        let restored = unpool.forward(pooled.clone(), indices);
        assert_bit_equal(&restored.into_data(), &expected, name);
        let message = panic_message(|| drop(unpool.forward(pooled, raw)));
        assert!(
            message.contains("MaxUnpool2d::forward") && message.contains("[3, 4]"),
            "{name}: {message}"
        );
    }
}

#[test]
fn same_padding_at_stride_1_and_ceil_mode_pools() {
    // Stride 1: Same pads kernel - 1 in all whatever the size, so the default size is the input's.
    let same = MaxPool2dConfig::new([3, 2])
        .with_strides([1, 1])
        .with_padding(PaddingConfig2d::Same);
    let unpool = MaxUnpool2dConfig::from(&same);
    assert!(!unpool.requires_output_size());
    // ceil_mode: a 5-wide input and a 6-wide one pool to the same 3 columns.
    let ceil = MaxPool2dConfig::new([2, 2]).with_ceil_mode(true);
    assert!(MaxUnpool2dConfig::from(&ceil).requires_output_size());
    let ceil_1d = MaxPool1dConfig::new(2).with_ceil_mode(true);
    assert!(MaxUnpool1dConfig::from(&ceil_1d).requires_output_size());

    for (name, device) in devices() {
        let (pooled, indices) = same
            .init()
            .forward_with_indices(ramp(&device, [2, 1, 4, 5]));
        let raw = indices.tensor().clone();
        let expected = reference_unpool(pooled.clone(), raw.clone(), [4, 5]);
        let restored = unpool.init().forward(pooled.clone(), raw);
        assert_bit_equal(&restored.into_data(), &expected, name);
        let restored = unpool.init().forward(pooled, indices);
        assert_bit_equal(&restored.into_data(), &expected, name);

        let (pooled, indices) = ceil
            .init()
            .forward_with_indices(ramp(&device, [1, 3, 5, 5]));
        let raw = indices.tensor().clone();
        let expected = reference_unpool(pooled.clone(), raw.clone(), [5, 5]);
        let unpool = MaxUnpool2dConfig::from(&ceil).init();
        let restored = unpool.forward_with_output_size(pooled.clone(), raw, [5, 5]);
        assert_bit_equal(&restored.into_data(), &expected, name);
        let restored = unpool.forward(pooled, indices);
        assert_bit_equal(&restored.into_data(), &expected, name);
    }
}

fn panic_message(f: impl FnOnce()) -> String {
    outcome(f).expect_err("the call must panic")
}

/// A layer of a `ceil_mode` pool refuses raw indices without an output size as the functions do
/// (one rule, one message), naming the layer's way to pass the size.
#[test]
fn a_ceil_mode_layer_refuses_raw_indices_as_the_functions_do() {
    let ceil = MaxPool2dConfig::new([2, 2]).with_ceil_mode(true);
    let unpool = MaxUnpool2dConfig::from(&ceil).init();
    for (name, device) in devices() {
        let (pooled, indices) = ceil
            .init()
            .forward_with_indices(ramp(&device, [1, 2, 5, 7]));
        let raw = indices.into_tensor();
        let message = panic_message(|| drop(unpool.forward(pooled.clone(), raw.clone())));
        let function = panic_message(|| {
            drop(burn_unpool::max_unpool2d(
                pooled,
                raw,
                MaxUnpoolOptions::from_pool(&MaxPoolOptions::new([2, 2]).with_ceil_mode(true)),
            ))
        });
        assert_eq!(message, function, "{name}");
        assert!(
            message.contains("the pool had ceil_mode")
                && message.contains("[3, 4]")
                && message.contains("forward_with_output_size"),
            "{name}: {message}"
        );
    }
}

/// Burn 0.23's `MaxPool3d` pools with indices too: its values as its own `forward` gives them
/// (on Flex: Burn 0.23.0-pre.1's 3-d pool kernel does not compile to WGSL, `f32(-Inf)`), and the
/// indices unpool to the pool's input with every maximum in place.
#[cfg(burn_next)]
#[test]
fn burns_own_3d_pool_module_pools_with_indices() {
    let pool_config = burn::nn::pool::MaxPool3dConfig::new([2, 2, 2]).with_ceil_mode(true);
    let pool = pool_config.init();
    let ramp = |device: &burn::tensor::Device| -> Tensor<5> {
        Tensor::<1, Int>::arange(0..60, device)
            .float()
            .reshape([1, 1, 3, 4, 5])
    };
    let burns = pool
        .forward(ramp(&burn::tensor::Device::flex()))
        .into_data();
    for (name, device) in devices() {
        let x = ramp(&device);
        let (pooled, indices) = pool.forward_with_indices(x.clone());
        assert_bit_equal(&pooled.to_data(), &burns, name);
        let restored = MaxUnpool3dConfig::from(&pool_config)
            .init()
            .forward(pooled.clone(), indices);
        // 2 x 2 x 3 windows (ceil mode): each maximum back at its place, zeros elsewhere. The
        // only zero of `x` (its first element) is no maximum, so 12 + 1 elements equal `x`.
        assert_eq!(pooled.dims(), [1, 1, 2, 2, 3], "{name}");
        let kept = restored.clone().equal(x).int().sum().into_scalar::<i64>();
        let placed = restored
            .not_equal_elem(0.0)
            .int()
            .sum()
            .into_scalar::<i64>();
        assert_eq!((kept, placed), (13, 12), "{name}");
    }
}
