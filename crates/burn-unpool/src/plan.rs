//! The validated description of one unpooling that every backend receives.

use crate::IndexLayout;

/// A checked unpooling: shapes, the plane the indices are read in, and their layout.
///
/// Built by the public functions after every argument check has passed (see [`crate::checks`]), so
/// a backend only has to check the index *values*, which it reads anyway.
///
/// ```
/// use burn_unpool::{MaxUnpoolOptions, checks};
///
/// let plan = checks::plan(&[2, 3, 22, 30], &[2, 3, 22, 30], &MaxUnpoolOptions::new([2, 2]).with_output_size([45, 60])).unwrap();
/// assert_eq!(plan.output_shape, [2, 3, 45, 60]);
/// assert_eq!((plan.planes(), plan.input_plane_len(), plan.output_plane_len()), (6, 660, 2700));
/// assert_eq!(plan.index_range_end(), 2700);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnpoolPlan {
    /// `[N, C, D1..Dk]`: the shape of `x` and of the indices.
    pub input_shape: Vec<usize>,
    /// `[N, C, O1..Ok]`: the shape of the output.
    pub output_shape: Vec<usize>,
    /// `[S1..Sk]`: the plane shape in whose row-major order the indices are read.
    ///
    /// Equal to the output's spatial shape, except under the ONNX reference rule for an explicit
    /// `output_shape`, where indices are read in the inferred shape and that block is placed at
    /// the origin of the larger output.
    pub index_plane: Vec<usize>,
    /// How the indices address the output.
    pub layout: IndexLayout,
}

impl UnpoolPlan {
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

    /// Elements of the plane the indices are read in, `S1*..*Sk`.
    pub fn index_plane_len(&self) -> usize {
        self.index_plane.iter().product()
    }

    /// The exclusive upper bound of valid index values for this layout.
    pub fn index_range_end(&self) -> usize {
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
}
