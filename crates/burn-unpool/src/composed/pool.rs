//! A max pool of any rank made of Burn tensor ops, with the rules of the kernels, for what they do
//! not serve (devices without them, pools the GPU kernels do not address): every window is
//! gathered, and its first maximum picked.
//!
//! The windows are laid out on the host once per call ([`Windows`]), from the shapes alone; the
//! device then runs a `select` (all windows), a `max_dim`, a `max_dim` over weighted candidates
//! and a `gather` of each window's winner. The gradient is Burn's: the gather's backward puts each
//! window's gradient at its winner (one per window), the select's adds them into `x` in table
//! order, so it sums where overlapping windows share a maximum, in window order, deterministically.

use burn::tensor::{DType, Int, Tensor, TensorData};

use crate::UnpoolKind;
use crate::pool::{AxisWindows, PoolError, PoolSpec};

/// The position a window reports for its maximum, inside its plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexOrder {
    /// Row-major (the last axis fastest): Burn, PyTorch, ONNX `storage_order = 0`.
    RowMajor,
    /// Column-major (the first axis fastest): ONNX `storage_order = 1`.
    ColumnMajor,
}

/// Every window of a pool over one plane, as flat plane positions, row-major over
/// `(output cell, kernel offset)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Windows {
    /// The pooled spatial shape.
    pub output: Vec<usize>,
    /// Positions per window: the kernel's volume.
    pub window: usize,
    /// The row-major position each offset reads. An offset in the padding reads the window's
    /// first position inside the input instead: a value already in the window cannot change its
    /// maximum, and this works for integers, which have no `-inf`.
    pub sources: Vec<i64>,
    /// The column-major position each offset reports, for [`IndexOrder::ColumnMajor`]; row-major
    /// ones are the `sources`.
    pub column_major: Option<Vec<i64>>,
    /// `window - offset` for offsets inside the input, 0 in the padding: among the positions equal
    /// to the maximum, the largest weight is the first in scan order, as PyTorch picks.
    pub first: Vec<i64>,
    /// `offset + 1` inside the input, 0 in the padding: the largest weight among NaNs is the last
    /// NaN in scan order, which PyTorch's pools report (each NaN replaces the running maximum).
    pub last: Vec<i64>,
}

impl Windows {
    /// The windows of `pool` over a plane of spatial size `input`.
    ///
    /// Fails when an axis has no output, a window lies entirely in the padding, or the table
    /// would not fit memory.
    pub fn new(pool: &PoolSpec, input: &[usize], order: IndexOrder) -> Result<Self, PoolError> {
        let dims = input.len();
        let axes = AxisWindows::of(pool, input)?;
        let output: Vec<usize> = axes.iter().map(|a| a.outputs).collect();
        let kernel = &pool.geometry.kernel_size;
        let len = output
            .iter()
            .chain(kernel)
            .try_fold(1usize, |len, &n| len.checked_mul(n))
            .filter(|&len| len <= isize::MAX as usize / 32)
            .ok_or_else(|| PoolError::TooManyWindows {
                output: output.clone(),
                kernel: kernel.clone(),
            })?;
        // Neither factor overflows: their product did not.
        let (cells, window): (usize, usize) = (output.iter().product(), kernel.iter().product());

        let row_strides = strides(input, IndexOrder::RowMajor);
        let column_strides = strides(input, IndexOrder::ColumnMajor);
        let mut windows = Self {
            output,
            window,
            sources: Vec::with_capacity(len),
            column_major: (order == IndexOrder::ColumnMajor).then(|| Vec::with_capacity(len)),
            first: Vec::with_capacity(len),
            last: Vec::with_capacity(len),
        };
        let mut cell = vec![0; dims];
        for _ in 0..cells {
            let mut offset = vec![0; dims];
            for k in 0..window {
                let (mut source, mut column, mut inside) = (0, 0, true);
                for (a, axis) in axes.iter().enumerate() {
                    let (position, axis_inside) = position(axis, cell[a], offset[a]);
                    source += position * row_strides[a];
                    column += position * column_strides[a];
                    inside &= axis_inside;
                }
                let (first, last) = if inside {
                    ((window - k) as i64, k as i64 + 1)
                } else {
                    (0, 0)
                };
                windows.sources.push(source as i64);
                if let Some(labels) = windows.column_major.as_mut() {
                    labels.push(column as i64);
                }
                windows.first.push(first);
                windows.last.push(last);
                advance(&mut offset, &pool.geometry.kernel_size);
            }
            advance(&mut cell, &windows.output);
        }
        Ok(windows)
    }

    /// Output cells per plane.
    pub fn cells(&self) -> usize {
        self.output.iter().product()
    }
}

/// The coordinate `offset` of window `cell` reads, and whether it is inside the input: the
/// window's first coordinate inside for an offset in the padding.
fn position(axis: &AxisWindows, cell: usize, offset: usize) -> (usize, bool) {
    match axis.coordinate(cell, offset) {
        Some(position) => (position, true),
        None => (axis.taps(cell).0, false),
    }
}

/// The flat-position stride of each axis of `shape` in `order`. (The ONNX index reorder computes
/// its own in i64, as its indices are: its planes may have more positions than a 32-bit usize
/// holds, where these strides address memory that exists, so they fit usize and index it
/// without casts.)
pub(crate) fn strides(shape: &[usize], order: IndexOrder) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    let mut stride = 1;
    for axis in fastest_first(shape.len(), order) {
        strides[axis] = stride;
        stride *= shape[axis];
    }
    strides
}

/// The axes of a `dims`-axis shape in `order`, the fastest-varying first.
pub(crate) fn fastest_first(dims: usize, order: IndexOrder) -> Vec<usize> {
    match order {
        IndexOrder::RowMajor => (0..dims).rev().collect(),
        IndexOrder::ColumnMajor => (0..dims).collect(),
    }
}

/// Steps a row-major multi-index within `bounds`, wrapping to zero after the last.
fn advance(index: &mut [usize], bounds: &[usize]) {
    for axis in (0..index.len()).rev() {
        index[axis] += 1;
        if index[axis] < bounds[axis] {
            return;
        }
        index[axis] = 0;
    }
}

/// Max-pools `x` (`[N, C, spatial..]`): the maxima and, per plane, the position of each in
/// `order` (the first maximum in scan order; the last NaN where a window holds NaNs), as indices
/// of `index_dtype`.
///
/// Every integer tensor of the composition has `index_dtype`, which holds every position and
/// window offset, never the device's default int dtype, which may be narrower.
pub(crate) fn max_pool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    pool: &PoolSpec,
    order: IndexOrder,
    index_dtype: DType,
) -> Result<(Tensor<R, K>, Tensor<R, Int>), PoolError> {
    let shape = x.dims();
    if R < 3 {
        return Err(PoolError::Rank {
            shape: shape.to_vec(),
        });
    }
    let windows = Windows::new(pool, &shape[2..], order)?;
    let mut out_shape = shape;
    out_shape[2..].copy_from_slice(&windows.output);
    let device = x.device();
    let planes = shape[0] * shape[1];
    let plane_len: usize = shape[2..].iter().product();
    if planes == 0 || plane_len == 0 {
        let indices = Tensor::<R, Int>::zeros(out_shape, (&device, index_dtype));
        // A reshape of the empty input keeps the result on the autodiff graph.
        let values = if out_shape.iter().product::<usize>() == 0 {
            x.reshape(out_shape)
        } else {
            Tensor::zeros(out_shape, (&device, x.dtype()))
        };
        return Ok((values, indices));
    }
    let (cells, window) = (windows.cells(), windows.window);
    let len = cells * window;
    let table = |values: Vec<i64>| {
        Tensor::<1, Int>::from_data(TensorData::new(values, [len]), (&device, index_dtype))
    };
    let weights = |values: Vec<i64>| table(values).reshape([1, cells, window]);

    let flat = x.reshape([planes, plane_len]);
    let sources = table(windows.sources);
    let gathered = flat
        .select(1, sources.clone())
        .reshape([planes, cells, window]);
    let maxima = gathered.clone().max_dim(2);
    let candidates = gathered.clone().equal(maxima).int().cast(index_dtype);
    // The largest `window - offset` among the maxima is the first one in scan order.
    let best_first = (candidates * weights(windows.first)).max_dim(2);
    let window_len =
        Tensor::<3, Int>::full([planes, cells, 1], window as i64, (&device, index_dtype));
    let mut chosen = window_len - best_first;
    if let Some(nans) = K::nan_mask(gathered.clone()) {
        let last_nan = (nans.int().cast(index_dtype) * weights(windows.last)).max_dim(2);
        let any_nan = last_nan.clone().greater_elem(0);
        chosen = chosen.mask_where(any_nan, last_nan.sub_scalar(1));
    }
    // The winner's entry in the (cell, offset) table.
    let cell_start = Tensor::<1, Int>::arange_step(0..len as i64, window, (&device, index_dtype))
        .reshape([1, cells, 1]);
    let entry = (chosen.clone() + cell_start).reshape([planes * cells]);
    let positions = sources.select(0, entry.clone()).reshape([planes, cells]);
    let labels = match windows.column_major {
        None => positions,
        Some(labels) => table(labels).select(0, entry).reshape([planes, cells]),
    };
    // The winners picked from the gathered windows, not from `x` at their positions: the
    // gradient then scatters one value per window (no two into one place) and sums into `x`
    // through the `select`, whose backward adds in table order, on every device: the pool's
    // gradient in window order, the same bits every run, with no float atomics.
    let values = gathered
        .gather(2, chosen.reshape([planes, cells, 1]))
        .reshape(out_shape);
    Ok((values, labels.reshape(out_shape)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::PoolGeometry;

    fn spec(
        kernel: &[usize],
        stride: &[usize],
        padding: &[(usize, usize)],
        ceil: bool,
    ) -> PoolSpec {
        PoolSpec {
            geometry: PoolGeometry {
                kernel_size: kernel.to_vec(),
                stride: stride.to_vec(),
                padding: padding.to_vec(),
                dilation: vec![1; kernel.len()],
            },
            ceil_mode: ceil,
        }
    }

    #[test]
    fn a_ceil_mode_window_past_the_end_reads_its_first_position_with_no_weight() {
        // 5 inputs, kernel 2, stride 2, ceil: windows {0, 1}, {2, 3}, {4, pad}.
        let pool = spec(&[2], &[2], &[(0, 0)], true);
        let w = Windows::new(&pool, &[5], IndexOrder::RowMajor).unwrap();
        assert_eq!(w.output, [3]);
        assert_eq!(w.sources, [0, 1, 2, 3, 4, 4]);
        assert_eq!(w.first, [2, 1, 2, 1, 2, 0]);
        assert_eq!(w.last, [1, 2, 1, 2, 1, 0]);
    }

    #[test]
    fn begin_padding_substitutes_the_first_position_inside() {
        // 4 inputs, kernel 3, stride 2, padding 1: windows {pad, 0, 1}, {1, 2, 3}.
        let pool = spec(&[3], &[2], &[(1, 1)], false);
        let w = Windows::new(&pool, &[4], IndexOrder::RowMajor).unwrap();
        assert_eq!(w.sources, [0, 0, 1, 1, 2, 3]);
        assert_eq!(w.first, [0, 2, 1, 3, 2, 1]);
    }

    #[test]
    fn column_major_labels_count_the_first_axis_fastest() {
        // A 2 x 3 plane, one 2 x 3 window: row-major sources 0..6, column-major labels.
        let pool = spec(&[2, 3], &[1, 1], &[(0, 0), (0, 0)], false);
        let w = Windows::new(&pool, &[2, 3], IndexOrder::ColumnMajor).unwrap();
        assert_eq!(w.sources, [0, 1, 2, 3, 4, 5]);
        assert_eq!(w.column_major, Some(vec![0, 2, 4, 1, 3, 5]));
    }

    #[test]
    fn windows_only_in_padding_are_refused() {
        let pool = spec(&[2], &[1], &[(3, 0)], false);
        let err = Windows::new(&pool, &[4], IndexOrder::RowMajor).unwrap_err();
        assert!(
            matches!(
                err,
                PoolError::WindowInPadding {
                    axis: 0,
                    cell: 0,
                    ..
                }
            ),
            "{err}"
        );
    }
}
