//! The default output size of an unpooling: the input size of the pool it inverts.

/// `O = (I - 1) * stride - (pad_begin + pad_end) + dilation * (kernel - 1) + 1`, per axis.
///
/// With dilation 1 this is the ONNX and PyTorch formula `(I - 1) * s - pads + k`; including the
/// dilation makes a dilated pool invertible. The result may be zero or negative for a padding
/// that is too large, which the caller reports; it is computed in `i128` so it never overflows.
///
/// ```
/// use burn_unpool::default_output_size;
///
/// assert_eq!(default_output_size(180, 2, 2, (0, 0), 1), 360);
/// assert_eq!(default_output_size(3, 3, 1, (0, 0), 2), 7);
/// ```
pub fn default_output_size(
    input: usize,
    kernel: usize,
    stride: usize,
    padding: (usize, usize),
    dilation: usize,
) -> i128 {
    let [i, k, s, d] = [input, kernel, stride, dilation].map(|v| v as i128);
    (i - 1) * s - (padding.0 as i128 + padding.1 as i128) + d * (k - 1) + 1
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
}
