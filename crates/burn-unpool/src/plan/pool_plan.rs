//! The checked max pool every backend receives.

use std::cell::RefCell;

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{DType, Device};
use burn_unpool_shape::pool_output_size;

use super::checks::{WIDE_INDEX_DTYPES, largest_index, supported};
use crate::error::UnpoolError;
use crate::geometry::PoolGeometry;

/// A checked max pool with indices: shapes, pool and index dtype. Every axis has an output and
/// every window an input element, so every index lies inside its own window.
///
/// ```
/// use burn::tensor::DType;
/// use burn::tensor::ops::MaxPoolOptions;
/// use burn_unpool::PoolPlan;
///
/// let pool = MaxPoolOptions::new([2, 2]).with_ceil_mode(true);
/// let plan = PoolPlan::new(&[1, 3, 5, 7], &pool, DType::I32).unwrap();
/// assert_eq!(plan.output_shape(), [1, 3, 3, 4]);
/// assert!(PoolPlan::new(&[1, 3, 5, 7], &pool, DType::I8).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolPlan {
    input_shape: Vec<usize>,
    output_shape: Vec<usize>,
    geometry: PoolGeometry,
    index_dtype: DType,
    global_indices: bool,
}

impl PoolPlan {
    /// Checks `options` on `x_shape` for indices of `index_dtype` (32 or 64 bits, holding a plane).
    pub fn new<const D: usize>(
        x_shape: &[usize],
        options: &MaxPoolOptions<D>,
        index_dtype: DType,
    ) -> Result<Self, UnpoolError> {
        let plan = Self::of(x_shape, &PoolGeometry::of(options), index_dtype)?;
        let positions = plan.input_plane_len() as u64;
        if !holds_positions(index_dtype, positions) {
            return Err(UnpoolError::PoolIndexDTypeTooNarrow {
                dtype: index_dtype,
                positions,
            });
        }
        Ok(plan)
    }

    /// [`PoolPlan::new`] for a rank-erased pool, whose index dtype the caller chose by the rule.
    pub(crate) fn of(
        x_shape: &[usize],
        pool: &PoolGeometry,
        index_dtype: DType,
    ) -> Result<Self, UnpoolError> {
        if x_shape.len() < 3 {
            return Err(UnpoolError::PoolRank {
                shape: x_shape.to_vec(),
            });
        }
        let dims = x_shape.len() - 2;
        for (name, values) in [
            ("kernel_size", &pool.kernel_size),
            ("stride", &pool.stride),
            ("dilation", &pool.dilation),
        ] {
            if values.len() != dims {
                let values = values.clone();
                return Err(UnpoolError::PoolParameterLength { name, values, dims });
            }
        }
        if let Some((name, values)) = pool.zero_parameter() {
            let values = values.to_vec();
            return Err(UnpoolError::PoolZeroParameter { name, values });
        }
        if pool.padding.len() != dims {
            let values = pool.padding.iter().flat_map(|&(b, e)| [b, e]).collect();
            let name = "padding";
            return Err(UnpoolError::PoolParameterLength { name, values, dims });
        }
        let mut plan = Self {
            input_shape: x_shape.to_vec(),
            output_shape: x_shape.to_vec(),
            geometry: pool.clone(),
            index_dtype,
            global_indices: false,
        };
        for axis in 0..dims {
            let input = x_shape[axis + 2];
            let outputs = pool_output_size(
                input,
                pool.kernel_size[axis],
                pool.stride[axis],
                pool.padding[axis],
                pool.dilation[axis],
                pool.ceil_mode,
            );
            plan.output_shape[axis + 2] = usize::try_from(outputs)
                .ok()
                .filter(|&outputs| outputs > 0)
                .ok_or(UnpoolError::PoolNoOutput {
                    axis,
                    input,
                    kernel: pool.kernel_size[axis],
                    padding: pool.padding[axis],
                    dilation: pool.dilation[axis],
                })?;
            // With dilation a window can fall between the input elements too: check every one.
            if let Some(cell) = (0..plan.outputs(axis)).find(|&c| plan.taps(axis, c).1 == 0) {
                let padding = pool.padding[axis];
                return Err(UnpoolError::WindowInPadding {
                    axis,
                    cell,
                    input,
                    padding,
                });
            }
        }
        Ok(plan)
    }

    /// [`Self::of`] through a per-thread cache of recent plans (errors are not kept).
    pub(crate) fn cached(
        shape: &[usize],
        pool: &PoolGeometry,
        index_dtype: DType,
    ) -> Result<Self, UnpoolError> {
        const CAPACITY: usize = 8;
        thread_local! {
            static PLANS: RefCell<Vec<PoolPlan>> = const { RefCell::new(Vec::new()) };
        }
        PLANS.with_borrow_mut(|plans| {
            let hit = plans.iter().position(|plan| {
                plan.input_shape == shape
                    && plan.index_dtype == index_dtype
                    && plan.geometry == *pool
            });
            let plan = match hit {
                Some(at) => plans.remove(at),
                None => Self::of(shape, pool, index_dtype)?,
            };
            plans.insert(0, plan.clone());
            plans.truncate(CAPACITY);
            Ok(plan)
        })
    }

    /// The same pool with indices over the whole tensor (ONNX's), for a dtype holding them all.
    ///
    /// # Panics
    /// When the plan's index dtype cannot hold every position of the input.
    pub fn with_global_indices(mut self) -> Self {
        let elements = self
            .input_shape
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d as u64));
        assert!(
            holds_positions(self.index_dtype, elements),
            "global pool indices of an input of shape {:?} do not fit {:?}",
            self.input_shape,
            self.index_dtype
        );
        self.global_indices = true;
        self
    }

    /// `[N, C, I1..Ik]`: the shape of `x`.
    pub fn input_shape(&self) -> &[usize] {
        &self.input_shape
    }

    /// `[N, C, O1..Ok]`: the shape of the pooled values and of the indices.
    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// The dtype of the indices.
    pub fn index_dtype(&self) -> DType {
        self.index_dtype
    }

    /// Whether no two windows share an input element.
    pub fn windows_disjoint(&self) -> bool {
        self.geometry.windows_disjoint()
    }

    pub(crate) fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }

    pub(crate) fn global_indices(&self) -> bool {
        self.global_indices
    }

    /// What plane `plane`'s indices add to a position inside the plane.
    #[cfg_attr(not(any(feature = "flex", feature = "ndarray")), allow(dead_code))]
    pub(crate) fn index_base(&self, plane: usize) -> usize {
        match self.global_indices {
            true => plane * self.input_plane_len(),
            false => 0,
        }
    }

    pub(crate) fn dims(&self) -> usize {
        self.geometry.dims()
    }

    pub(crate) fn input(&self, axis: usize) -> usize {
        self.input_shape[axis + 2]
    }

    pub(crate) fn outputs(&self, axis: usize) -> usize {
        self.output_shape[axis + 2]
    }

    pub(crate) fn planes(&self) -> usize {
        self.input_shape[0] * self.input_shape[1]
    }

    pub(crate) fn input_plane_len(&self) -> usize {
        self.input_shape[2..].iter().product()
    }

    pub(crate) fn output_plane_len(&self) -> usize {
        self.output_shape[2..].iter().product()
    }

    /// The input coordinate of `offset` in window `cell` of `axis`, or `None` in the padding.
    pub(crate) fn coordinate(&self, axis: usize, cell: usize, offset: usize) -> Option<usize> {
        let g = &self.geometry;
        let position = (cell as i128) * (g.stride[axis] as i128)
            + (offset as i128) * (g.dilation[axis] as i128)
            - g.padding[axis].0 as i128;
        usize::try_from(position)
            .ok()
            .filter(|&p| p < self.input(axis))
    }

    /// Window `cell`'s input elements on `axis`: first coordinate and count, `dilation` apart.
    pub(crate) fn taps(&self, axis: usize, cell: usize) -> (usize, usize) {
        let g = &self.geometry;
        let start = cell as u128 * g.stride[axis] as u128;
        let (pad, d) = (g.padding[axis].0 as u128, g.dilation[axis] as u128);
        // The offsets `k` with `pad <= start + k * d < pad + input`.
        let first = pad.saturating_sub(start).div_ceil(d);
        let end = (pad + self.input(axis) as u128)
            .checked_sub(start)
            .map_or(0, |room| room.div_ceil(d))
            .min(g.kernel_size[axis] as u128);
        if first >= end {
            return (0, 0);
        }
        ((start + first * d - pad) as usize, (end - first) as usize)
    }

    #[track_caller]
    pub(crate) fn assert_input(&self, op: &str, x: &[usize]) {
        assert!(
            x == self.input_shape.as_slice(),
            "UnpoolBackend::{op}: the plan was made for x of shape {:?}, got {x:?}",
            self.input_shape
        );
    }

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

/// The device's default int dtype if 32 bits or wider and holding a plane (as Burn's), else `I64`.
pub(crate) fn pool_index_dtype(device: &Device, plane_len: usize) -> Result<DType, UnpoolError> {
    let default = DType::from(device.settings().int_dtype);
    if holds_positions(default, plane_len as u64) {
        return Ok(default);
    }
    if device.supports_dtype(DType::I64) {
        return Ok(DType::I64);
    }
    Err(UnpoolError::PoolIndexDType {
        default,
        plane_len,
        device: format!("{device:?}"),
    })
}

/// ONNX's global indices: `I64`, or `I32` on a device without 64-bit integers where it holds them.
pub(crate) fn global_index_dtype(device: &Device, shape: &[usize]) -> Result<DType, UnpoolError> {
    if device.supports_dtype(DType::I64) {
        return Ok(DType::I64);
    }
    let positions = shape.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    if device.supports_dtype(DType::I32) && holds_positions(DType::I32, positions) {
        return Ok(DType::I32);
    }
    Err(UnpoolError::GlobalIndexDType {
        shape: shape.to_vec(),
        largest: positions.saturating_sub(1),
        device: format!("{device:?}"),
        writable: supported(device, WIDE_INDEX_DTYPES),
    })
}

fn holds_positions(dtype: DType, positions: u64) -> bool {
    WIDE_INDEX_DTYPES.contains(&dtype)
        && largest_index(dtype).is_some_and(|largest| positions.saturating_sub(1) <= largest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(input: usize, kernel: usize, stride: usize, dilation: usize, pad: usize) -> PoolPlan {
        let pool = PoolGeometry {
            kernel_size: vec![kernel],
            stride: vec![stride],
            padding: vec![(pad, 0)],
            dilation: vec![dilation],
            ceil_mode: false,
        };
        let mut plan = PoolPlan::of(&[1, 1, input + 16], &pool, DType::I64).expect("a pool");
        plan.input_shape[2] = input;
        plan
    }

    #[test]
    fn taps_skip_the_padding_on_both_sides() {
        // 4 inputs, kernel 3, stride 2, padding 1: windows {pad, 0, 1}, {1, 2, 3}, {3, pad, pad}.
        let windows = plan(4, 3, 2, 1, 1);
        assert_eq!(windows.taps(0, 0), (0, 2));
        assert_eq!(windows.taps(0, 1), (1, 3));
        assert_eq!(windows.taps(0, 2), (3, 1));
        // Dilation 2, padding 3: window 0 reads padded 0, 2, 4 -> only 4 - 3 = 1 is an input.
        assert_eq!(plan(5, 3, 1, 2, 3).taps(0, 0), (1, 1));
        let pool = PoolGeometry {
            kernel_size: vec![2],
            stride: vec![1],
            padding: vec![(2, 0)],
            dilation: vec![1],
            ceil_mode: false,
        };
        let refused = PoolPlan::of(&[1, 1, 3], &pool, DType::I64).unwrap_err();
        assert!(matches!(
            refused,
            crate::UnpoolError::WindowInPadding { cell: 0, .. }
        ));
    }

    #[test]
    fn taps_agree_with_coordinates() {
        for (input, kernel, stride, dilation, pad) in [
            (7, 3, 2, 2, 2),
            (5, 4, 1, 1, 3),
            (9, 2, 3, 3, 0),
            (1, 5, 1, 1, 4),
        ] {
            let windows = plan(input, kernel, stride, dilation, pad);
            for cell in 0..6 {
                let inside: Vec<usize> = (0..kernel)
                    .filter_map(|k| windows.coordinate(0, cell, k))
                    .collect();
                let (first, count) = windows.taps(0, cell);
                let taps: Vec<usize> = (0..count).map(|t| first + t * dilation).collect();
                assert_eq!(taps, inside, "cell {cell} of {windows:?}");
            }
        }
    }

    #[test]
    fn only_32_and_64_bit_dtypes_that_hold_the_plane_qualify() {
        for narrow in [DType::I8, DType::I16, DType::U8, DType::U16, DType::F32] {
            assert!(!holds_positions(narrow, 1), "{narrow:?}");
        }
        assert!(holds_positions(DType::I32, 1 << 31));
        assert!(!holds_positions(DType::I32, (1 << 31) + 1));
        assert!(holds_positions(DType::U32, 1 << 32));
        assert!(!holds_positions(DType::U32, (1 << 32) + 1));
        assert!(holds_positions(DType::I64, 1 << 63));
        assert!(!holds_positions(DType::I64, (1 << 63) + 1));
        assert!(holds_positions(DType::U64, u64::MAX));
    }

    #[test]
    fn a_cached_plan_is_the_plan_of_its_own_arguments() {
        let shapes: Vec<Vec<usize>> = (1..=12).map(|n| vec![1, n, 8, 8]).collect();
        for round in 0..3 {
            for (i, shape) in shapes.iter().enumerate() {
                for kernel in [2, 3] {
                    for dtype in [DType::I32, DType::I64] {
                        let pool = PoolGeometry::of(&MaxPoolOptions::new([kernel; 2]));
                        let cached = PoolPlan::cached(shape, &pool, dtype).expect("a valid pool");
                        let built = PoolPlan::of(shape, &pool, dtype).expect("a valid pool");
                        let context = format!("round {round}, shape {i}, k{kernel}, {dtype:?}");
                        assert_eq!(cached, built, "{context}");
                    }
                }
            }
        }
    }

    #[test]
    fn windows_only_in_padding_are_refused() {
        // The windows are laid out from a checked plan: the plan refuses one in the padding.
        let pool = MaxPoolOptions::new([2])
            .with_stride([1])
            .with_padding_pairs([(3, 0)]);
        let err = PoolPlan::new(&[1, 1, 4], &pool, DType::I64).unwrap_err();
        assert!(
            matches!(
                err,
                UnpoolError::WindowInPadding {
                    axis: 0,
                    cell: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    /// The public constructor refuses a bad geometry with its values: kernel 2, stride 1 and 3
    /// positions of padding before 4 inputs put window 0 on positions -3 and -2, both padding.
    #[test]
    fn the_checked_constructor_names_the_window_and_its_axis() {
        let pool = MaxPoolOptions::new([2])
            .with_stride([1])
            .with_padding_pairs([(3, 0)]);
        let err = PoolPlan::new(&[1, 1, 4], &pool, DType::I64).unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_pool: window 0 of axis 0 (size 4, padding (3, 0)) lies entirely in the padding; \
             the padding must leave every window an input element"
        );
    }

    #[test]
    fn a_bad_pool_fails_on_every_call() {
        let pool = PoolGeometry::of(&MaxPoolOptions::new([3, 3]));
        for _ in 0..2 {
            assert!(PoolPlan::cached(&[1, 1, 2, 2], &pool, DType::I32).is_err());
        }
    }
}
