//! Burn's pool padding configs as the `(begin, end)` pairs an unpooling works with.

use burn::nn::{PaddingConfig1d, PaddingConfig2d, PaddingConfig3d};
use burn_unpool_shape::AutoPad;

/// A pool's padding config, resolved to one `(begin, end)` pair per spatial axis.
pub(crate) trait PaddingPairs<const D: usize> {
    /// The pairs of `Valid` and `Explicit` padding; `None` for `Same`.
    fn explicit(&self) -> Option<[(usize, usize); D]>;

    /// The pairs for a pool of `kernel` and `stride` over an input of spatial size `input`.
    ///
    /// `None` when the pairs depend on an input size that is not given: `Same` padding with a
    /// stride above 1. (With stride 1, `Same` pads `kernel - 1` in all, whatever the size.)
    fn pairs(
        &self,
        kernel: [usize; D],
        stride: [usize; D],
        input: Option<[usize; D]>,
    ) -> Option<[(usize, usize); D]> {
        self.explicit().or_else(|| same(kernel, stride, input))
    }
}

/// Implements [`PaddingPairs`] for a Burn padding config whose `Explicit` variant's fields map
/// to pairs by `$pairs`.
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

/// Burn's `Same` padding of one axis (`burn-nn`'s `calculate_same_padding`): the output has
/// `ceil(size / stride)` elements, and the odd padding element goes at the end, as ONNX's
/// `SAME_UPPER`.
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
        assert_eq!(same.pairs([3, 4], [1, 1], None), Some([(1, 1), (1, 2)]));
        assert_eq!(same.pairs([3, 3], [2, 2], None), None);
        // 5 x 7 with kernel 3, stride 2: outputs 3 x 4, paddings 2 and 2 in all.
        assert_eq!(
            same.pairs([3, 3], [2, 2], Some([5, 7])),
            Some([(1, 1), (1, 1)])
        );
        assert_eq!(
            PaddingConfig1d::Explicit(2, 1).pairs([3], [2], None),
            Some([(2, 1)])
        );
    }
}
