//! Every decoder stage unpools to the size its encoder stage pooled from, odd sizes included.

use burn::tensor::{Device, Tensor};
use segnet::model::{Architecture, SegNetConfig};

fn decoder_sizes(
    architecture: Architecture,
    height: usize,
    width: usize,
) -> (Vec<[usize; 2]>, [usize; 4]) {
    let device = Device::flex();
    let net = SegNetConfig::new(3)
        .with_architecture(architecture)
        .with_width(2)
        .init(&device);
    let (logits, sizes) = net.forward_traced(Tensor::<4>::zeros([1, 3, height, width], &device));
    (sizes, logits.dims())
}

#[test]
fn segnet_on_camvid_sized_input() {
    // 360 x 480 pools (rounding up, as SegNet's Caffe pools) to 180 x 240, 90 x 120, 45 x 60,
    // 23 x 30 and 12 x 15. The decoders must restore 23 x 30 (the default unpool size of 12 x 15
    // would be 24 x 30) and 45 x 60 (not 46 x 60).
    let (sizes, dims) = decoder_sizes(Architecture::SegNet, 360, 480);
    assert_eq!(
        sizes,
        vec![[23, 30], [45, 60], [90, 120], [180, 240], [360, 480]]
    );
    assert_eq!(dims, [1, 3, 360, 480]);
}

#[test]
fn segnet_basic_on_camvid_sized_input() {
    let (sizes, dims) = decoder_sizes(Architecture::SegNetBasic, 360, 480);
    assert_eq!(sizes, vec![[45, 60], [90, 120], [180, 240], [360, 480]]);
    assert_eq!(dims, [1, 3, 360, 480]);
}

#[test]
fn odd_sizes_at_every_stage() {
    // 45 x 61 -> 23 x 31 -> 12 x 16 -> 6 x 8 -> 3 x 4.
    let (sizes, dims) = decoder_sizes(Architecture::SegNetBasic, 45, 61);
    assert_eq!(sizes, vec![[6, 8], [12, 16], [23, 31], [45, 61]]);
    assert_eq!(dims, [1, 3, 45, 61]);
}
