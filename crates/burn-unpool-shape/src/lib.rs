//! The shape rules of max unpooling, without Burn.
//!
//! [burn-unpool](https://docs.rs/burn-unpool) runs the op; its build-time ONNX importer
//! (burn-unpool-onnx) must know the same rules without compiling Burn's backends for the build
//! host. Both take them from here, so the rules exist once.

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
    use super::default_output_size;

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
