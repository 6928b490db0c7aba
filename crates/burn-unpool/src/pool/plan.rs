//! The checked description of one max pool that every backend receives, and the windows of each
//! axis it is built from.

use burn::tensor::DType;
use burn::tensor::ops::MaxPoolOptions;
use burn_unpool_shape::pool_output_size;

use super::error::PoolError;
use crate::geometry::PoolGeometry;

/// The pool: its geometry (the one its indices carry), and how it rounds its output size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PoolSpec {
    pub geometry: PoolGeometry,
    pub ceil_mode: bool,
}

impl PoolSpec {
    /// The pool of Burn's pool options.
    pub fn from_pool<const D: usize>(options: &MaxPoolOptions<D>) -> Self {
        Self {
            geometry: PoolGeometry::from_pool(options),
            ceil_mode: options.ceil_mode,
        }
    }
}

/// A checked max pool with indices: the input and output shapes, the pool's windows on each
/// spatial axis and the dtype of the indices.
///
/// Built by the pool functions ([`max_pool2d_with_indices`](crate::max_pool2d_with_indices) and
/// its siblings) after every check has passed: each axis has an output, and every window holds at
/// least one input element, so every index a backend writes lies inside its own window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolPlan {
    input_shape: Vec<usize>,
    output_shape: Vec<usize>,
    axes: Vec<AxisWindows>,
    disjoint: bool,
    index_dtype: DType,
    global_indices: bool,
}

impl PoolPlan {
    /// Checks `pool` against an input of shape `x_shape` (`[N, C, spatial..]`).
    pub(crate) fn new(
        x_shape: &[usize],
        pool: &PoolSpec,
        index_dtype: DType,
    ) -> Result<Self, PoolError> {
        if x_shape.len() < 3 {
            return Err(PoolError::Rank {
                shape: x_shape.to_vec(),
            });
        }
        let axes = AxisWindows::of(pool, &x_shape[2..])?;
        let output_shape = x_shape[..2]
            .iter()
            .copied()
            .chain(axes.iter().map(|axis| axis.outputs))
            .collect();
        Ok(Self {
            input_shape: x_shape.to_vec(),
            output_shape,
            axes,
            disjoint: pool.geometry.windows_disjoint(),
            index_dtype,
            global_indices: false,
        })
    }

    /// The same pool with indices counted over the whole tensor (ONNX's `Indices`:
    /// `(n * C + c) * P + position`) instead of inside each plane, so that no pass after the
    /// kernel adds the plane offsets. Only for a plan whose dtype holds every element of the
    /// input (the kernels convert positions with `as`); the CPU kernels honour it, the CubeCL
    /// kernels refuse it (see `addresses`).
    pub(crate) fn with_global_indices(mut self) -> Self {
        let elements = self
            .input_shape
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d as u64));
        let largest = crate::checks::largest_index(self.index_dtype).unwrap_or(0);
        assert!(
            elements.saturating_sub(1) <= largest,
            "global pool indices of an input of shape {:?} do not fit {:?}",
            self.input_shape,
            self.index_dtype
        );
        self.global_indices = true;
        self
    }

    /// Whether the indices count over the whole tensor ([`Self::with_global_indices`]).
    pub(crate) fn global_indices(&self) -> bool {
        self.global_indices
    }

    /// What plane `plane`'s indices add to a position inside the plane: 0, or the elements of
    /// the planes before it for global indices.
    pub(crate) fn index_base(&self, plane: usize) -> usize {
        if self.global_indices {
            plane * self.input_plane_len()
        } else {
            0
        }
    }

    /// `[N, C, I1..Ik]`: the shape of `x`.
    pub fn input_shape(&self) -> &[usize] {
        &self.input_shape
    }

    /// `[N, C, O1..Ok]`: the shape of the pooled tensor and of its indices.
    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// The dtype of the indices.
    pub fn index_dtype(&self) -> DType {
        self.index_dtype
    }

    /// Whether no two windows share an input element: each element then receives the gradient of
    /// one window at most.
    pub fn windows_disjoint(&self) -> bool {
        self.disjoint
    }

    /// `N * C`.
    pub(crate) fn planes(&self) -> usize {
        self.input_shape[0] * self.input_shape[1]
    }

    /// Elements of one input plane.
    pub(crate) fn input_plane_len(&self) -> usize {
        self.input_shape[2..].iter().product()
    }

    /// Elements of one output plane.
    pub(crate) fn output_plane_len(&self) -> usize {
        self.output_shape[2..].iter().product()
    }

    /// The windows of every spatial axis.
    pub(crate) fn axes(&self) -> &[AxisWindows] {
        &self.axes
    }

    /// The windows as three spatial axes, for kernels written for three: a pool of fewer axes
    /// gets leading axes of size 1 with one window of one element, which change no position.
    /// `None` for a pool of more than three axes, which such a kernel must not be given.
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    pub(crate) fn axes3(&self) -> Option<[AxisWindows; 3]> {
        let unit = AxisWindows::UNIT;
        let lead = 3usize.checked_sub(self.axes.len())?;
        Some(std::array::from_fn(|axis| {
            axis.checked_sub(lead).map_or(unit, |axis| self.axes[axis])
        }))
    }

    /// Panics unless `x` has the shape this plan was made for.
    #[track_caller]
    #[cfg_attr(
        not(any(feature = "flex", feature = "ndarray", feature = "wgpu")),
        allow(dead_code)
    )]
    pub(crate) fn assert_input(&self, op: &str, x: &[usize]) {
        assert!(
            x == self.input_shape.as_slice(),
            "UnpoolBackend::{op}: the plan was made for x of shape {:?}, got {x:?}",
            self.input_shape
        );
    }

    /// Panics unless the output gradient and the indices have the pooled shape.
    #[track_caller]
    pub(crate) fn assert_pooled(&self, op: &str, grad: &[usize], indices: &[usize]) {
        assert!(
            grad == self.output_shape.as_slice() && indices == self.output_shape.as_slice(),
            "UnpoolBackend::{op}: the plan was made for a gradient and indices of shape {:?}, got \
             {grad:?} and {indices:?}",
            self.output_shape
        );
    }
}

/// The windows of one spatial axis: `outputs` windows, window `w` reading the padded coordinates
/// `w * stride + k * dilation` for `k < kernel`, of which those in `[pad, pad + input)` are input
/// elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AxisWindows {
    pub outputs: usize,
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub padding_begin: usize,
}

impl AxisWindows {
    /// An axis of size 1 with one window of one element: it changes no position.
    pub(crate) const UNIT: Self = Self {
        outputs: 1,
        input: 1,
        kernel: 1,
        stride: 1,
        dilation: 1,
        padding_begin: 0,
    };

    /// The windows of every axis of `pool` over a plane of spatial size `input`.
    ///
    /// Fails when a parameter has no entry per axis or is zero, an axis has no output, or a
    /// window lies entirely in the padding: the pool would have no element to report there.
    pub fn of(pool: &PoolSpec, input: &[usize]) -> Result<Vec<Self>, PoolError> {
        let dims = input.len();
        let geometry = &pool.geometry;
        for (name, values) in [
            ("kernel_size", &geometry.kernel_size),
            ("stride", &geometry.stride),
            ("dilation", &geometry.dilation),
        ] {
            if values.len() != dims {
                return Err(PoolError::Length {
                    name,
                    values: values.clone(),
                    dims,
                });
            }
        }
        if let Some((name, values)) = geometry.zero_parameter() {
            return Err(PoolError::Zero {
                name,
                values: values.to_vec(),
            });
        }
        if geometry.padding.len() != dims {
            return Err(PoolError::Length {
                name: "padding",
                values: geometry.padding.iter().flat_map(|&(b, e)| [b, e]).collect(),
                dims,
            });
        }
        (0..dims).map(|axis| Self::new(pool, input, axis)).collect()
    }

    fn new(pool: &PoolSpec, input: &[usize], axis: usize) -> Result<Self, PoolError> {
        let geometry = &pool.geometry;
        let size = pool_output_size(
            input[axis],
            geometry.kernel_size[axis],
            geometry.stride[axis],
            geometry.padding[axis],
            geometry.dilation[axis],
            pool.ceil_mode,
        );
        let outputs = usize::try_from(size)
            .ok()
            .filter(|&outputs| outputs > 0)
            .ok_or_else(|| PoolError::NoOutput {
                axis,
                input: input[axis],
                kernel: geometry.kernel_size[axis],
                padding: geometry.padding[axis],
                dilation: geometry.dilation[axis],
            })?;
        let windows = Self {
            outputs,
            input: input[axis],
            kernel: geometry.kernel_size[axis],
            stride: geometry.stride[axis],
            dilation: geometry.dilation[axis],
            padding_begin: geometry.padding[axis].0,
        };
        // With dilation a window can fall between the input elements too: check every one.
        for cell in 0..outputs {
            if windows.taps(cell).1 == 0 {
                return Err(PoolError::WindowInPadding {
                    axis,
                    cell,
                    input: input[axis],
                    padding: geometry.padding[axis],
                });
            }
        }
        Ok(windows)
    }

    /// The input coordinate of `offset` in window `cell`, or `None` in the padding.
    pub fn coordinate(&self, cell: usize, offset: usize) -> Option<usize> {
        let position = (cell as i128) * (self.stride as i128)
            + (offset as i128) * (self.dilation as i128)
            - self.padding_begin as i128;
        usize::try_from(position).ok().filter(|&p| p < self.input)
    }

    /// The input elements of window `cell`: the first one's coordinate and how many there are
    /// (`dilation` apart).
    pub fn taps(&self, cell: usize) -> (usize, usize) {
        let (start, pad, d) = (
            cell as u128 * self.stride as u128,
            self.padding_begin as u128,
            self.dilation as u128,
        );
        let kernel = self.kernel as u128;
        // The offsets `k` with `pad <= start + k * d < pad + input`.
        let first = if start < pad {
            (pad - start).div_ceil(d)
        } else {
            0
        };
        let end = (pad + self.input as u128)
            .checked_sub(start)
            .map_or(0, |room| room.div_ceil(d))
            .min(kernel);
        if first >= end {
            return (0, 0);
        }
        let coordinate = start + first * d - pad;
        (coordinate as usize, (end - first) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad: usize,
    ) -> AxisWindows {
        AxisWindows {
            outputs: 0,
            input,
            kernel,
            stride,
            dilation,
            padding_begin: pad,
        }
    }

    #[test]
    fn taps_skip_the_padding_on_both_sides() {
        // 4 inputs, kernel 3, stride 2, padding 1: windows {pad, 0, 1}, {1, 2, 3}, {3, pad, pad}.
        let windows = axis(4, 3, 2, 1, 1);
        assert_eq!(windows.taps(0), (0, 2));
        assert_eq!(windows.taps(1), (1, 3));
        assert_eq!(windows.taps(2), (3, 1));
        // Dilation 2, padding 3: window 0 reads padded 0, 2, 4 -> only 4 - 3 = 1 is an input.
        assert_eq!(axis(5, 3, 1, 2, 3).taps(0), (1, 1));
        // A window wholly in the padding has no taps.
        assert_eq!(axis(3, 2, 1, 1, 2).taps(0), (0, 0));
    }

    #[test]
    fn taps_agree_with_coordinates() {
        for (input, kernel, stride, dilation, pad) in [
            (7, 3, 2, 2, 2),
            (5, 4, 1, 1, 3),
            (9, 2, 3, 3, 0),
            (1, 5, 1, 1, 4),
        ] {
            let windows = axis(input, kernel, stride, dilation, pad);
            for cell in 0..6 {
                let inside: Vec<usize> = (0..kernel)
                    .filter_map(|k| windows.coordinate(cell, k))
                    .collect();
                let (first, count) = windows.taps(cell);
                let taps: Vec<usize> = (0..count).map(|t| first + t * dilation).collect();
                assert_eq!(taps, inside, "cell {cell} of {windows:?}");
            }
        }
    }
}
