//! Burn's padding configs as padding pairs, `Same` as Burn 0.22 computes it.

use burn::nn::{PaddingConfig1d, PaddingConfig2d, PaddingConfig3d};
use burn_unpool_shape::AutoPad;

pub(crate) trait PaddingPairs<const D: usize> {
    fn explicit(&self) -> Option<[(usize, usize); D]>;

    /// The pairs over `input`; `None` for `Same` with a stride above 1 and no input size.
    fn pairs(
        &self,
        kernel: [usize; D],
        stride: [usize; D],
        input: Option<[usize; D]>,
    ) -> Option<[(usize, usize); D]> {
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
        assert_eq!(same.pairs([3, 4], [1, 1], None), Some([(1, 1), (1, 2)]));
        assert_eq!(same.pairs([3, 3], [2, 2], None), None);
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
