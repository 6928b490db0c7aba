//! The modules: configs round-trip through JSON, display like Burn's pools, and pair with Burn's
//! pool modules.

use burn::nn::PaddingConfig2d;
use burn::nn::pool::{MaxPool1dConfig, MaxPool2dConfig};
use burn::tensor::{Tensor, TensorData};
use burn_unpool::nn::{
    MaxPoolWithIndices, MaxUnpool1dConfig, MaxUnpool2dConfig, MaxUnpool3dConfig,
};
use burn_unpool_tests::{assert_bit_equal, devices};

#[test]
fn configs_round_trip_through_json() {
    let config = MaxUnpool2dConfig::new([3, 3])
        .with_strides([2, 2])
        .with_padding([(1, 0), (0, 1)]);
    let json = serde_json::to_string(&config).unwrap();
    let back: MaxUnpool2dConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (back.kernel_size, back.strides, back.padding, back.dilation),
        ([3, 3], [2, 2], [(1, 0), (0, 1)], [1, 1])
    );

    let defaults = MaxUnpool3dConfig::new([2, 2, 2]);
    assert_eq!(
        (defaults.strides, defaults.padding, defaults.dilation),
        ([2, 2, 2], [(0, 0); 3], [1, 1, 1])
    );
}

#[test]
fn display_matches_burns_pool_style() {
    let unpool = MaxUnpool2dConfig::new([2, 2]).init();
    assert_eq!(
        unpool.to_string(),
        "MaxUnpool2d {kernel_size: [2, 2], stride: [2, 2], padding: [(0, 0), (0, 0)], dilation: [1, 1]}"
    );
}

#[test]
fn unpool_config_from_pool_config() {
    let pool = MaxPool2dConfig::new([3, 3])
        .with_strides([2, 2])
        .with_padding(PaddingConfig2d::Explicit(1, 0, 1, 0));
    let unpool = MaxUnpool2dConfig::from(&pool);
    assert_eq!(
        (unpool.kernel_size, unpool.strides, unpool.padding),
        ([3, 3], [2, 2], [(1, 1), (0, 0)])
    );
    let unpool = MaxUnpool1dConfig::from(&MaxPool1dConfig::new(4).with_stride(2));
    assert_eq!((unpool.kernel_size, unpool.strides), ([4], [2]));
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

#[test]
fn same_padding_pool_is_inverted_with_the_input_size() {
    for (name, device) in devices() {
        let pool_config = MaxPool2dConfig::new([3, 3])
            .with_strides([2, 2])
            .with_padding(PaddingConfig2d::Same);
        let image = Tensor::<4>::from_data(
            TensorData::new((0..35).map(|v| v as f32).collect::<Vec<_>>(), [1, 1, 5, 7]),
            &device,
        );
        let (pooled, indices) = pool_config.init().forward_with_indices(image);
        assert_eq!(
            pooled.dims(),
            [1, 1, 3, 4],
            "{name}: Same keeps ceil(size / stride)"
        );
        let restored = MaxUnpool2dConfig::from(&pool_config)
            .init()
            .forward_with_output_size(pooled.clone(), indices, [5, 7]);
        // Every pooled value is a maximum put back at its own position, so the sum is preserved.
        let sum = |t: Tensor<4>| t.sum().into_scalar::<f32>();
        assert_eq!(sum(restored), sum(pooled), "{name}");
    }
}
