//! Burn's padding configs as padding pairs, `Same` as the Burn version in use computes it.

use burn::nn::{PaddingConfig1d, PaddingConfig2d, PaddingConfig3d};
use burn_unpool_shape::AutoPad;

pub(crate) trait PaddingPairs<const D: usize> {
    fn explicit(&self) -> Option<[(usize, usize); D]>;

    /// The pairs over `input`; `None` for `Same` with a stride above 1 and no input size.
    fn pairs(
        &self,
        kernel: [usize; D],
        stride: [usize; D],
        dilation: [usize; D],
        input: Option<[usize; D]>,
    ) -> Option<[(usize, usize); D]> {
        let kernel = std::array::from_fn(|axis| same_kernel(kernel[axis], dilation[axis]));
        self.explicit().or_else(|| same(kernel, stride, input))
    }
}

macro_rules! padding_pairs {
    ($config:ty, $dims:literal, |$($field:ident),*| $pairs:expr) => {
        impl PaddingPairs<$dims> for $config {
            fn explicit(&self) -> Option<[(usize, usize); $dims]> {
                match *self {
                    Self::Valid => Some([(0, 0); $dims]),
                    Self::Explicit($($field),*) => Some($pairs),
                    Self::Same => None,
                }
            }
        }
    };
}

padding_pairs!(PaddingConfig1d, 1, |begin, end| [(begin, end)]);
padding_pairs!(PaddingConfig2d, 2, |top, left, bottom, right| [
    (top, bottom),
    (left, right)
]);
padding_pairs!(PaddingConfig3d, 3, |depth, height, width| [
    (depth, depth),
    (height, height),
    (width, width)
]);

fn same<const D: usize>(
    kernel: [usize; D],
    stride: [usize; D],
    input: Option<[usize; D]>,
) -> Option<[(usize, usize); D]> {
    let input = match input {
        Some(input) => input,
        None if stride == [1; D] => kernel,
        None => return None,
    };
    Some(std::array::from_fn(|axis| {
        same_padding(kernel[axis], stride[axis], input[axis])
    }))
}

/// The window `Same` padding covers: Burn 0.23's pools count the dilation, 0.22.1's do not.
fn same_kernel(kernel: usize, dilation: usize) -> usize {
    match cfg!(burn_next) {
        true => (kernel - 1) * dilation + 1,
        false => kernel,
    }
}

/// Burn's `Same` padding of one axis: as ONNX's `SAME_UPPER`, the odd element at the end.
fn same_padding(kernel: usize, stride: usize, size: usize) -> (usize, usize) {
    AutoPad::SameUpper
        .padding(size, kernel, stride, 1)
        .expect("SAME_UPPER pads")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_padding_is_known_without_the_input_size_only_at_stride_1() {
        let same = PaddingConfig2d::Same;
        let one = [1, 1];
        assert_eq!(same.pairs([3, 4], one, one, None), Some([(1, 1), (1, 2)]));
        assert_eq!(same.pairs([3, 3], [2, 2], one, None), None);
        assert_eq!(
            same.pairs([3, 3], [2, 2], one, Some([5, 7])),
            Some([(1, 1), (1, 1)])
        );
        assert_eq!(
            PaddingConfig1d::Explicit(2, 1).pairs([3], [2], [1], None),
            Some([(2, 1)])
        );
    }

    /// A kernel of 3 at dilation 2 spans 5 elements: Burn 0.22.1 pads `Same` for 3 (1 + 1), Burn
    /// 0.23 for 5 (2 + 2). Burn's own pool module, read by its output length, agrees either way.
    #[test]
    fn same_padding_with_dilation_follows_the_burn_version_in_use() {
        use burn::nn::pool::MaxPool1dConfig;
        use burn::tensor::{Device, Tensor};

        let ours = PaddingConfig1d::Same
            .pairs([3], [1], [2], Some([8]))
            .unwrap()[0];
        let by_hand = if cfg!(burn_next) { (2, 2) } else { (1, 1) };
        assert_eq!(ours, by_hand);
        let burn_pool = MaxPool1dConfig::new(3)
            .with_stride(1)
            .with_padding(PaddingConfig1d::Same)
            .with_dilation(2)
            .init();
        let pooled = burn_pool.forward(Tensor::<3>::ones([1, 1, 8], &Device::flex()));
        // At stride 1, Burn's output length is 8 + its padding - 5 + 1.
        assert_eq!(pooled.dims()[2] + 4 - 8, ours.0 + ours.1);
    }
}
