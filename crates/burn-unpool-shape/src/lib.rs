#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

/// The default output size of one spatial axis: the input size of the pool being inverted,
/// `O = (I - 1) * stride - (pad_begin + pad_end) + dilation * (kernel - 1) + 1`.
///
/// With dilation 1 this is the ONNX and PyTorch formula `(I - 1) * s - pads + k`; including the
/// dilation makes a dilated pool invertible. The result may be zero or negative for a padding that
/// is too large, or larger than any size (`usize::MAX`), which callers report. It is computed in
/// `i128` and saturates there, so it never wraps.
///
/// ```
/// use burn_unpool_shape::default_output_size;
///
/// assert_eq!(default_output_size(180, 2, 2, (0, 0), 1), 360);
/// assert_eq!(default_output_size(3, 3, 1, (0, 0), 2), 7);
/// assert_eq!(default_output_size(1, 1, 1, (2, 2), 1), -3);
/// ```
pub fn default_output_size(
    input: usize,
    kernel: usize,
    stride: usize,
    padding: (usize, usize),
    dilation: usize,
) -> i128 {
    let [i, k, s, d] = [input, kernel, stride, dilation].map(|v| v as i128);
    let pads = padding.0 as i128 + padding.1 as i128;
    (i - 1)
        .saturating_mul(s)
        .saturating_add(d.saturating_mul(k - 1))
        .saturating_sub(pads)
        .saturating_add(1)
}

/// The output size of one spatial axis of a max pool, as PyTorch and ONNX compute it:
/// `(I + pad_begin + pad_end - span) / stride + 1`, rounded down, or up with `ceil_mode`, where
/// `span = dilation * (kernel - 1) + 1`. With `ceil_mode` a last window that would start in the
/// end padding is dropped, so every window starts inside the input or its begin padding.
///
/// Computed in `i128`, saturating, so it never wraps; zero or negative when the window does not
/// fit, which callers report.
///
/// ```
/// use burn_unpool_shape::pool_output_size;
///
/// assert_eq!(pool_output_size(5, 2, 2, (0, 0), 1, false), 2);
/// assert_eq!(pool_output_size(5, 2, 2, (0, 0), 1, true), 3);
/// // ONNX `maxpool_2d_ceil_output_size_reduce_by_one`: a window starting at 2 would read only
/// // padding, so ceil mode keeps 1 window, not 2.
/// assert_eq!(pool_output_size(2, 1, 2, (0, 0), 1, true), 1);
/// ```
pub fn pool_output_size(
    input: usize,
    kernel: usize,
    stride: usize,
    padding: (usize, usize),
    dilation: usize,
    ceil_mode: bool,
) -> i128 {
    let [i, k, s, d] = [input, kernel, stride, dilation].map(|v| v as i128);
    let s = s.max(1);
    let span = d.saturating_mul(k - 1).saturating_add(1);
    let room = i
        .saturating_add(padding.0 as i128)
        .saturating_add(padding.1 as i128)
        .saturating_sub(span);
    let steps = if ceil_mode {
        room.div_euclid(s) + i128::from(room.rem_euclid(s) != 0)
    } else {
        room.div_euclid(s)
    };
    let mut size = steps.saturating_add(1);
    if ceil_mode && size > 0 && (size - 1).saturating_mul(s) >= i.saturating_add(padding.0 as i128)
    {
        size -= 1;
    }
    size
}

/// ONNX's `auto_pad` attribute of pooling and convolution nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AutoPad {
    /// `NOTSET`: the `pads` attribute applies.
    #[default]
    NotSet,
    /// `VALID`: no padding.
    Valid,
    /// `SAME_UPPER`: `ceil(I / stride)` outputs; an odd total padding puts the extra one at the end.
    SameUpper,
    /// `SAME_LOWER`: as `SAME_UPPER`, with the extra padding at the beginning.
    SameLower,
}

impl AutoPad {
    /// The attribute's value as ONNX spells it, or `None` for an unknown one.
    ///
    /// ```
    /// use burn_unpool_shape::AutoPad;
    ///
    /// assert_eq!(AutoPad::parse("SAME_LOWER"), Some(AutoPad::SameLower));
    /// assert_eq!(AutoPad::parse("same"), None);
    /// ```
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "NOTSET" | "" => Some(Self::NotSet),
            "VALID" => Some(Self::Valid),
            "SAME_UPPER" => Some(Self::SameUpper),
            "SAME_LOWER" => Some(Self::SameLower),
            _ => None,
        }
    }

    /// The `(begin, end)` padding of one axis of input size `input`, or `None` for `NotSet`
    /// (the `pads` attribute applies). `SAME_*` pads `(ceil(I / s) - 1) * s + span - I` in all
    /// (never less than 0), so that the pool has `ceil(I / s)` outputs.
    ///
    /// ```
    /// use burn_unpool_shape::AutoPad;
    ///
    /// // 5 inputs, kernel 2, stride 1: 1 padding, at the end (upper) or the beginning (lower).
    /// assert_eq!(AutoPad::SameUpper.padding(5, 2, 1, 1), Some((0, 1)));
    /// assert_eq!(AutoPad::SameLower.padding(5, 2, 1, 1), Some((1, 0)));
    /// assert_eq!(AutoPad::Valid.padding(5, 2, 1, 1), Some((0, 0)));
    /// ```
    pub fn padding(
        self,
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
    ) -> Option<(usize, usize)> {
        let same = || {
            let stride = stride.max(1);
            let outputs = input.div_ceil(stride);
            let span = dilation
                .saturating_mul(kernel.saturating_sub(1))
                .saturating_add(1);
            outputs
                .saturating_sub(1)
                .saturating_mul(stride)
                .saturating_add(span)
                .saturating_sub(input)
        };
        match self {
            Self::NotSet => None,
            Self::Valid => Some((0, 0)),
            Self::SameUpper => {
                let total = same();
                Some((total / 2, total - total / 2))
            }
            Self::SameLower => {
                let total = same();
                Some((total - total / 2, total / 2))
            }
        }
    }
}

/// ONNX `pads` (`[x1_begin, x2_begin.., x1_end, x2_end..]`) as one `(begin, end)` pair per axis.
///
/// ```
/// use burn_unpool_shape::onnx_pads_to_pairs;
///
/// assert_eq!(onnx_pads_to_pairs(&[1, 2, 3, 4]), [(1, 3), (2, 4)]);
/// ```
///
/// # Panics
/// If `pads` has an odd length; callers check the length against the rank first.
pub fn onnx_pads_to_pairs(pads: &[usize]) -> Vec<(usize, usize)> {
    assert!(
        pads.len().is_multiple_of(2),
        "ONNX pads hold a begin and an end per axis, got {} values",
        pads.len()
    );
    let (begins, ends) = pads.split_at(pads.len() / 2);
    begins.iter().copied().zip(ends.iter().copied()).collect()
}

/// How an ONNX `MaxUnpool` with an `output_shape` input places its indices when `output_shape`
/// differs from the shape inferred from the attributes.
///
/// Without `output_shape`, or where it equals the inferred shape, both rules agree.
///
/// The default is ONNX Runtime's rule: it is PyTorch's (`max_unpool` with `output_size`), so the
/// models users export from PyTorch, and validate with ONNX Runtime, run as they were trained; the
/// reference rule cannot place their indices wherever the pool's input size differs from the
/// inferred one (odd sizes, overlapping or ceil-mode pools).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputShapeRule {
    /// The ONNX reference implementation and the official backend test
    /// (`test_maxunpool_export_with_output_shape`): the indices are read in the inferred shape and
    /// that block is placed at the origin of the `output_shape` output.
    Reference,
    /// ONNX Runtime (and PyTorch): the indices are read in `output_shape` itself.
    #[default]
    IndicesInOutputShape,
}

#[cfg(test)]
mod tests {
    use super::{AutoPad, default_output_size, pool_output_size};

    #[test]
    fn pool_output_size_follows_pytorch() {
        // torch.nn.MaxPool2d(3, 2, padding=1) on 181: 91; ceil mode on 6 with kernel 2, stride 2
        // stays 3 (no partial window), on 7 becomes 4.
        assert_eq!(pool_output_size(181, 3, 2, (1, 1), 1, false), 91);
        assert_eq!(pool_output_size(6, 2, 2, (0, 0), 1, true), 3);
        assert_eq!(pool_output_size(7, 2, 2, (0, 0), 1, true), 4);
        // Dilation 2, kernel 3 spans 5: 7 inputs give 3 windows at stride 1.
        assert_eq!(pool_output_size(7, 3, 1, (0, 0), 2, false), 3);
        // A window wider than the padded input: no output.
        assert_eq!(pool_output_size(2, 5, 1, (0, 0), 1, false), -2);
        assert!(pool_output_size(usize::MAX, 1, 1, (usize::MAX, usize::MAX), 1, true) > 0);
    }

    #[test]
    fn same_padding_gives_ceil_of_input_over_stride_outputs() {
        for (input, kernel, stride) in [(5, 3, 2), (6, 3, 2), (7, 2, 3), (32, 4, 1)] {
            for auto_pad in [AutoPad::SameUpper, AutoPad::SameLower] {
                let padding = auto_pad.padding(input, kernel, stride, 1).unwrap();
                let outputs = pool_output_size(input, kernel, stride, padding, 1, false);
                assert_eq!(
                    outputs,
                    input.div_ceil(stride) as i128,
                    "{input} {kernel} {stride}"
                );
            }
        }
    }

    #[test]
    fn matches_onnx_formula_without_dilation() {
        // ONNX MaxUnpool doc, `without_output_shape`: 2x2 input, kernel 2, stride 2 -> 4x4.
        assert_eq!(default_output_size(2, 2, 2, (0, 0), 1), 4);
        // Overlapping pool of 181 with kernel 3, stride 2, padding 1 gives 91; 91 -> 181.
        assert_eq!(default_output_size(91, 3, 2, (1, 1), 1), 181);
    }

    #[test]
    fn dilation_widens_the_window() {
        // Pool of 7 with kernel 3, dilation 2, stride 1: window span 5, output 3; 3 -> 7.
        assert_eq!(default_output_size(3, 3, 1, (0, 0), 2), 7);
    }

    #[test]
    fn too_much_padding_goes_non_positive() {
        assert_eq!(default_output_size(1, 2, 1, (1, 1), 1), 0);
        assert_eq!(default_output_size(1, 1, 1, (2, 2), 1), -3);
    }

    #[test]
    fn huge_sizes_do_not_wrap() {
        let size = default_output_size(usize::MAX, usize::MAX, usize::MAX, (0, 0), usize::MAX);
        assert!(size > usize::MAX as i128);
        let size = default_output_size(0, 1, usize::MAX, (usize::MAX, usize::MAX), 1);
        assert!(size < -(usize::MAX as i128));
    }
}
