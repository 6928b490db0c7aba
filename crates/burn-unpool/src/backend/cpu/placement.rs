//! Where a (chunk-relative) index lands in the output.

use crate::plan::UnpoolPlan;

/// Maps an index of the index plane `[S1..Sk]` to an offset in the output plane `[O1..Ok]`: itself
/// when the planes are equal (all but ONNX's `output_shape` rule), else at the same coordinates.
#[derive(Clone, Debug)]
pub(crate) enum Placement {
    /// The index is the output offset.
    Identity,
    /// The index's coordinates in the index plane are its coordinates in the output plane.
    Embed {
        index_plane: Vec<usize>,
        output_strides: Vec<usize>,
        index_plane_len: usize,
        output_plane_len: usize,
    },
}

impl Placement {
    pub(crate) fn of(plan: &UnpoolPlan) -> Self {
        if plan.indices_address_output_plane() {
            return Self::Identity;
        }
        let output_plane = &plan.output_shape()[2..];
        let mut output_strides = vec![1; output_plane.len()];
        for axis in (0..output_plane.len().saturating_sub(1)).rev() {
            output_strides[axis] = output_strides[axis + 1] * output_plane[axis + 1];
        }
        Self::Embed {
            index_plane: plan.index_plane().to_vec(),
            output_strides,
            index_plane_len: plan.index_plane_len(),
            output_plane_len: plan.output_plane_len(),
        }
    }

    /// The output offset of the chunk-relative index `index`; a chunk may span several planes.
    #[inline(always)]
    pub(crate) fn place(&self, index: usize) -> usize {
        match self {
            Self::Identity => index,
            Self::Embed {
                index_plane,
                output_strides,
                index_plane_len,
                output_plane_len,
            } => {
                let (plane, mut rest) = (index / index_plane_len, index % index_plane_len);
                let mut offset = plane * output_plane_len;
                for (dim, stride) in index_plane.iter().zip(output_strides).rev() {
                    offset += (rest % dim) * stride;
                    rest /= dim;
                }
                offset
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Placement;
    use crate::plan::{IndexPlane, UnpoolRequest};
    use crate::{IndexLayout, MaxUnpoolOptions};

    #[test]
    fn embeds_a_4x4_block_in_a_5x5_plane() {
        // The ONNX `with_output_shape` example: indices 5, 7, 13, 15 of a 4x4 plane land at
        // (1,1), (1,3), (3,1), (3,3) of the 5x5 output: offsets 6, 8, 16, 18.
        let options = MaxUnpoolOptions::new([2, 2])
            .with_full_output_size([1, 1, 5, 5])
            .with_index_layout(IndexLayout::Global);
        let request = UnpoolRequest {
            index_plane: IndexPlane::Inferred,
            ..UnpoolRequest::new(&options)
        };
        let plan = request.plan(&[1, 1, 2, 2], &[1, 1, 2, 2]).unwrap();
        let placement = Placement::of(&plan);
        let placed: Vec<usize> = [5, 7, 13, 15].map(|i| placement.place(i)).to_vec();
        assert_eq!(placed, [6, 8, 16, 18]);
        // The second plane of a two-plane chunk starts at 25.
        assert_eq!(placement.place(16 + 5), 25 + 6);
    }
}
