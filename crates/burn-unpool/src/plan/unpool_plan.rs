//! The checked unpooling every backend receives, and how it is built.

use burn::tensor::{DType, TensorData};

use super::checks;
use crate::error::UnpoolError;
use crate::geometry::PoolGeometry;
use crate::options::{IndexLayout, MaxUnpoolOptions, OutputSize};

/// A checked unpooling: the shapes, the plane the indices are read in, and their layout. Never
/// changed once built; backends check their tensors against it before touching memory.
///
/// ```
/// use burn_unpool::{MaxUnpoolOptions, UnpoolPlan};
///
/// let options = MaxUnpoolOptions::new([2, 2]).with_output_size([45, 60]);
/// let plan = UnpoolPlan::new(&[2, 3, 22, 30], &[2, 3, 22, 30], &options).unwrap();
/// assert_eq!(plan.output_shape(), [2, 3, 45, 60]);
/// assert_eq!((plan.planes(), plan.input_plane_len(), plan.output_plane_len()), (6, 660, 2700));
///
/// // One pooled value from a 2-wide input (kernel 2, stride 3, padding 1): the default size,
/// // (1 - 1) * 3 - 2 + 2 = 0, is refused; the pool's input size is not.
/// let pool = MaxUnpoolOptions::new([2]).with_stride([3]).with_padding([1]);
/// assert!(UnpoolPlan::new(&[1, 1, 1], &[1, 1, 1], &pool).is_err());
/// let plan = UnpoolPlan::new(&[1, 1, 1], &[1, 1, 1], &pool.with_output_size([2])).unwrap();
/// assert_eq!(plan.output_shape(), [1, 1, 2]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnpoolPlan {
    input_shape: Vec<usize>,
    output_shape: Vec<usize>,
    index_plane: Vec<usize>,
    layout: IndexLayout,
    reports_invalid_indices: bool,
    geometry: PoolGeometry,
    indices_in_cells: bool,
}

impl UnpoolPlan {
    /// Checks the shapes of `x` and its indices against `options` (index values are checked later).
    pub fn new<const D: usize>(
        x_shape: &[usize],
        indices_shape: &[usize],
        options: &MaxUnpoolOptions<D>,
    ) -> Result<Self, UnpoolError> {
        UnpoolRequest::new(options).plan(x_shape, indices_shape)
    }

    /// `[N, C, D1..Dk]`: the shape of `x` and of the indices.
    pub fn input_shape(&self) -> &[usize] {
        &self.input_shape
    }

    /// `[N, C, O1..Ok]`: the shape of the output.
    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// `[S1..Sk]`: where indices are read: the output plane, or ONNX's inferred one at its origin.
    pub(crate) fn index_plane(&self) -> &[usize] {
        &self.index_plane
    }

    /// How the indices address the output.
    pub fn layout(&self) -> IndexLayout {
        self.layout
    }

    /// Whether an index outside its range is reported (a panic naming it) rather than skipped.
    pub(crate) fn reports_invalid_indices(&self) -> bool {
        self.reports_invalid_indices
    }

    /// Whether every index has its own output position (own cell, output plane): no duplicates.
    #[cfg_attr(
        not(any(feature = "flex", feature = "ndarray", feature = "cube")),
        allow(dead_code)
    )]
    pub(crate) fn targets_unique(&self) -> bool {
        self.indices_in_cells && self.indices_address_output_plane()
    }

    #[cfg_attr(not(feature = "cube"), allow(dead_code))]
    pub(crate) fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }

    pub(crate) fn with_indices_trusted(mut self) -> Self {
        self.reports_invalid_indices = false;
        self
    }

    /// The same plan, after a device check found every index in its own cell.
    pub(crate) fn with_indices_in_cells(mut self) -> Self {
        self.indices_in_cells = true;
        self
    }

    /// `N * C`: the number of independent planes.
    pub fn planes(&self) -> usize {
        self.input_shape[0] * self.input_shape[1]
    }

    /// Elements of one input plane, `D1*..*Dk`.
    pub fn input_plane_len(&self) -> usize {
        self.input_shape[2..].iter().product()
    }

    /// Elements of one output plane, `O1*..*Ok`.
    pub fn output_plane_len(&self) -> usize {
        self.output_shape[2..].iter().product()
    }

    pub(crate) fn index_plane_len(&self) -> usize {
        self.index_plane.iter().product()
    }

    pub(crate) fn index_range_end(&self) -> usize {
        match self.layout {
            IndexLayout::PerPlane => self.index_plane_len(),
            IndexLayout::Global => self.planes() * self.index_plane_len(),
        }
    }

    /// Elements of `x` (and of its gradient).
    pub fn input_len(&self) -> usize {
        self.input_shape.iter().product()
    }

    /// Elements of the whole output.
    pub fn output_len(&self) -> usize {
        self.output_shape.iter().product()
    }

    pub(crate) fn argument_shape(&self, direction: Direction) -> &[usize] {
        match direction {
            Direction::Forward => &self.input_shape,
            Direction::Backward => &self.output_shape,
        }
    }

    /// The shape of what `direction` computes: the output, or the gradient of `x`.
    pub(crate) fn result_shape(&self, direction: Direction) -> &[usize] {
        self.argument_shape(direction.adjoint())
    }

    /// Whether indices are read in the output plane itself (all but the ONNX reference rule).
    pub(crate) fn indices_address_output_plane(&self) -> bool {
        self.index_plane == self.output_shape[2..]
    }

    pub(crate) fn index_error(&self, element: usize, value: i128) -> UnpoolError {
        let mut position = vec![0; self.input_shape.len()];
        let mut rest = element;
        for (p, &dim) in position.iter_mut().zip(&self.input_shape).rev() {
            *p = rest % dim;
            rest /= dim;
        }
        UnpoolError::IndexOutOfRange {
            position,
            value,
            layout: self.layout,
            range_end: self.index_range_end(),
            output: self.output_shape.clone(),
        }
    }

    #[track_caller]
    pub(crate) fn assert_inputs(
        &self,
        op: &str,
        input: &[usize],
        indices: &[usize],
        direction: Direction,
    ) {
        let name = match direction {
            Direction::Forward => "x",
            Direction::Backward => "the output gradient",
        };
        let expected = self.argument_shape(direction);
        assert!(
            input == expected && indices == self.input_shape.as_slice(),
            "UnpoolBackend::{op}: the plan was made for {name} of shape {expected:?} and indices of \
             shape {:?}, got {name} {input:?} and indices {indices:?}",
            self.input_shape
        );
    }

    pub(crate) fn first_invalid_index(&self, indices: &TensorData) -> Option<UnpoolError> {
        macro_rules! scan {
            ($($dtype:ident => $ty:ty),*) => {
                match indices.dtype() {
                    $(DType::$dtype => indices
                        .iter::<$ty>()
                        .map(i128::from)
                        .enumerate()
                        .find(|&(_, v)| v < 0 || v >= self.index_range_end() as i128),)*
                    _ => None,
                }
            };
        }
        let (element, value) = scan!(
            I64 => i64, I32 => i32, I16 => i16, I8 => i8, U64 => u64, U32 => u32, U16 => u16,
            U8 => u8
        )?;
        Some(self.index_error(element, value))
    }

    #[track_caller]
    pub(crate) fn assert_indices(&self, op: &str, indices: &[usize]) {
        assert!(
            indices == self.input_shape.as_slice(),
            "UnpoolBackend::{op}: the plan was made for indices of shape {:?}, got {indices:?}",
            self.input_shape
        );
    }
}

/// Which of the two adjoint ops runs, and so which tensor it receives beside the indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Forward,
    Backward,
}

impl Direction {
    /// The other direction: each op's derivative is the other op.
    pub(crate) fn adjoint(self) -> Self {
        match self {
            Self::Forward => Self::Backward,
            Self::Backward => Self::Forward,
        }
    }
}

/// Where indices are read: the output plane, or (ONNX's reference rule) the inferred one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexPlane {
    Output,
    Inferred,
}

/// What one unpooling asks for, any rank: `max_unpool`'s options, or ONNX attributes.
#[derive(Clone, Debug)]
pub(crate) struct UnpoolRequest {
    pub geometry: PoolGeometry,
    pub output_size: Option<OutputSize>,
    pub layout: IndexLayout,
    pub index_plane: IndexPlane,
    pub check_indices: bool,
    /// The pool's input size, for this crate's pool indices (per plane, in their windows).
    pub pool_input: Option<Vec<usize>>,
}

impl UnpoolRequest {
    pub(crate) fn new<const D: usize>(options: &MaxUnpoolOptions<D>) -> Self {
        Self {
            geometry: options.geometry(),
            output_size: options.output_size.clone(),
            layout: options.index_layout,
            index_plane: IndexPlane::Output,
            check_indices: options.check_indices,
            pool_input: None,
        }
    }

    pub(crate) fn plan(
        &self,
        x_shape: &[usize],
        indices_shape: &[usize],
    ) -> Result<UnpoolPlan, UnpoolError> {
        checks::rank(x_shape, self.geometry.dims())?;
        checks::same_shape(x_shape, indices_shape)?;
        checks::geometry(&self.geometry)?;
        // An explicit output size only has to hold the indices: the default may be empty then.
        let inferred = checks::default_output(&self.geometry, x_shape);
        let output_spatial = match (&self.output_size, &self.pool_input) {
            (None, Some(pool_input)) => pool_input.clone(),
            (None, None) if self.geometry.ceil_mode => {
                return Err(UnpoolError::OutputSizeRequired {
                    pooled: x_shape.get(2..).unwrap_or_default().to_vec(),
                });
            }
            (None, None) => inferred.clone()?,
            (Some(OutputSize::Spatial(spatial)), _) => {
                checks::spatial_output_size(spatial, self.geometry.dims())?;
                spatial.clone()
            }
            (Some(OutputSize::Full(full)), _) => {
                checks::full_output_size(full, x_shape)?;
                full[2..].to_vec()
            }
        };
        if let Some(pool_input) = &self.pool_input {
            checks::pool_indices_use(pool_input, &output_spatial, self.layout)?;
        }
        let index_plane = match self.index_plane {
            IndexPlane::Output => output_spatial.clone(),
            IndexPlane::Inferred => inferred?,
        };
        let output_shape: Vec<usize> = x_shape[..2].iter().copied().chain(output_spatial).collect();
        checks::element_count("x", x_shape)?;
        checks::element_count("output", &output_shape)?;
        checks::output_holds_index_plane(x_shape, &output_shape, &index_plane)?;
        Ok(UnpoolPlan {
            input_shape: x_shape.to_vec(),
            output_shape,
            index_plane,
            layout: self.layout,
            reports_invalid_indices: self.check_indices && self.pool_input.is_none(),
            geometry: self.geometry.clone(),
            indices_in_cells: self.pool_input.is_some() && self.geometry.windows_disjoint(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_errors_name_the_position_and_range() {
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &MaxUnpoolOptions::new([2])).unwrap();
        let message = plan.index_error(3, 9).to_string();
        assert!(
            message.contains("index 9 at position [0, 1, 1]"),
            "{message}"
        );
        assert!(message.contains("[0, 4)"), "{message}");
    }

    /// The flat position and value of the first index out of range, as the index error names them.
    fn first_invalid_index(indices: TensorData, plan: &UnpoolPlan) -> Option<(usize, i128)> {
        match plan.first_invalid_index(&indices)? {
            UnpoolError::IndexOutOfRange {
                position, value, ..
            } => {
                let shape = plan.input_shape();
                let element = position
                    .iter()
                    .zip(shape)
                    .fold(0, |flat, (&p, &dim)| flat * dim + p);
                Some((element, value))
            }
            other => panic!("not an index error: {other}"),
        }
    }

    #[test]
    fn finds_the_first_index_out_of_range_for_either_layout() {
        let per_plane = MaxUnpoolOptions::new([2]);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &per_plane).unwrap();
        assert_eq!(
            first_invalid_index(TensorData::new(vec![0i64, 3, 2, 1], [4]), &plan),
            None
        );
        assert_eq!(
            first_invalid_index(TensorData::new(vec![0i32, 3, 4, -1], [4]), &plan),
            Some((2, 4))
        );
        let global = per_plane.with_index_layout(IndexLayout::Global);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &global).unwrap();
        assert_eq!(
            first_invalid_index(TensorData::new(vec![0i64, 7, 4, 1], [4]), &plan),
            None
        );
        assert_eq!(
            first_invalid_index(TensorData::new(vec![-1i64, 8], [2]), &plan),
            Some((0, -1))
        );
        // Unsigned indices reach the check as themselves, never wrapped to a valid value.
        assert_eq!(
            first_invalid_index(TensorData::new(vec![0u32, 1 << 31], [2]), &plan),
            Some((1, 1 << 31))
        );
        assert_eq!(
            first_invalid_index(TensorData::new(vec![0u64, u64::MAX], [2]), &plan),
            Some((1, u64::MAX.into()))
        );
    }

    #[test]
    #[should_panic(
        expected = "the plan was made for x of shape [1, 1, 2] and indices of shape \
                               [1, 1, 2], got x [1, 1, 4] and indices [1, 1, 2]"
    )]
    fn a_mismatched_input_is_refused() {
        let plan = UnpoolPlan::new(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
        plan.assert_inputs("max_unpool", &[1, 1, 4], &[1, 1, 2], Direction::Forward);
    }
}
