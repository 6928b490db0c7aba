//! The argument checks: each returns the [`UnpoolError`] naming the problem, before backend work.

use std::fmt;

use burn::tensor::{DType, Device};

use crate::error::{PoolAxis, UnpoolError};
use crate::geometry::PoolGeometry;
use crate::{IndexLayout, default_output_size};

/// The byte width of an unpoolable value dtype: any float or integer, not `Bool` or quantized.
pub(crate) fn value_width(dtype: DType) -> Option<usize> {
    (dtype.is_float() || dtype.is_int() || dtype.is_uint()).then(|| dtype.size())
}

pub(crate) fn rank(x_shape: &[usize], dims: usize) -> Result<(), UnpoolError> {
    if x_shape.len() == dims + 2 {
        Ok(())
    } else {
        Err(UnpoolError::Rank {
            what: "x",
            expected: dims + 2,
            shape: x_shape.to_vec(),
        })
    }
}

pub(crate) fn same_shape(x_shape: &[usize], indices_shape: &[usize]) -> Result<(), UnpoolError> {
    if x_shape == indices_shape {
        Ok(())
    } else {
        Err(UnpoolError::ShapeMismatch {
            x: x_shape.to_vec(),
            indices: indices_shape.to_vec(),
        })
    }
}

pub(crate) fn geometry(geometry: &PoolGeometry) -> Result<(), UnpoolError> {
    match geometry.zero_parameter() {
        Some((name, values)) => UnpoolError::nonzero(name, values),
        None => Ok(()),
    }
}

pub(crate) fn default_output(
    geometry: &PoolGeometry,
    x_shape: &[usize],
) -> Result<Vec<usize>, UnpoolError> {
    (0..geometry.dims())
        .map(|axis| {
            let pool = PoolAxis {
                input: x_shape[axis + 2],
                kernel: geometry.kernel_size[axis],
                stride: geometry.stride[axis],
                padding: geometry.padding[axis],
                dilation: geometry.dilation[axis],
            };
            let size = default_output_size(
                pool.input,
                pool.kernel,
                pool.stride,
                pool.padding,
                pool.dilation,
            );
            if size <= 0 {
                return Err(UnpoolError::NonPositiveOutput { axis, pool, size });
            }
            usize::try_from(size).map_err(|_| UnpoolError::OutputSizeOverflow { axis, size })
        })
        .collect()
}

pub(crate) fn spatial_output_size(spatial: &[usize], dims: usize) -> Result<(), UnpoolError> {
    if spatial.len() == dims {
        Ok(())
    } else {
        Err(UnpoolError::SpatialOutputSize {
            output: spatial.to_vec(),
            dims,
        })
    }
}

pub(crate) fn full_output_size(full: &[usize], x_shape: &[usize]) -> Result<(), UnpoolError> {
    if full.len() == x_shape.len() && full[..2] == x_shape[..2] {
        Ok(())
    } else {
        Err(UnpoolError::FullOutputSize {
            output: full.to_vec(),
            x: x_shape.to_vec(),
        })
    }
}

/// The output must hold the indices: no empty axis while `x` has values, and the index plane.
pub(crate) fn output_holds_index_plane(
    x_shape: &[usize],
    output_shape: &[usize],
    index_plane: &[usize],
) -> Result<(), UnpoolError> {
    let has_values = !x_shape.contains(&0);
    if has_values && output_shape.contains(&0) {
        return Err(UnpoolError::EmptyOutput {
            output: output_shape.to_vec(),
        });
    }
    if index_plane
        .iter()
        .zip(&output_shape[2..])
        .any(|(s, o)| s > o)
    {
        return Err(UnpoolError::OutputSmallerThanIndexPlane {
            output: output_shape[2..].to_vec(),
            index_plane: index_plane.to_vec(),
        });
    }
    Ok(())
}

/// Pool indices address the pool's input per plane: the output must have its size and that layout.
pub(crate) fn pool_indices_use(
    pool_input: &[usize],
    output_spatial: &[usize],
    layout: IndexLayout,
) -> Result<(), UnpoolError> {
    let asked = if layout != IndexLayout::PerPlane {
        format!("{layout:?} indices")
    } else if output_spatial != pool_input {
        format!("output size {output_spatial:?}")
    } else {
        return Ok(());
    };
    Err(UnpoolError::PoolIndicesMisused {
        asked,
        input_size: pool_input.to_vec(),
    })
}

/// Pool indices bring the pool's geometry: other options contradict them (rank: the rank check).
pub(crate) fn pool_geometry_use(
    pool: &PoolGeometry,
    asked: &PoolGeometry,
) -> Result<(), UnpoolError> {
    if pool.dims() != asked.dims() {
        return Ok(());
    }
    let field = |name, asked: &dyn fmt::Debug, pool: &dyn fmt::Debug| {
        (name, format!("{asked:?}"), format!("{pool:?}"))
    };
    let fields = [
        field("kernel_size", &asked.kernel_size, &pool.kernel_size),
        field("stride", &asked.stride, &pool.stride),
        field("padding", &asked.padding, &pool.padding),
        field("dilation", &asked.dilation, &pool.dilation),
        field("ceil_mode", &asked.ceil_mode, &pool.ceil_mode),
    ];
    let differences: Vec<String> = fields
        .into_iter()
        .filter(|(_, asked, pool)| asked != pool)
        .map(|(name, asked, pool)| format!("{name} {asked} (the pool's: {pool})"))
        .collect();
    if differences.is_empty() {
        Ok(())
    } else {
        Err(UnpoolError::PoolGeometryContradicted {
            differences: differences.join(", "),
        })
    }
}

pub(crate) fn largest_index(dtype: DType) -> Option<u64> {
    Some(match dtype {
        DType::I64 => i64::MAX as u64,
        DType::I32 => i32::MAX as u64,
        DType::I16 => i16::MAX as u64,
        DType::I8 => i8::MAX as u64,
        DType::U64 => u64::MAX,
        DType::U32 => u32::MAX.into(),
        DType::U16 => u16::MAX.into(),
        DType::U8 => u8::MAX.into(),
        _ => return None,
    })
}

/// Indices must be of an integer dtype that holds every valid index, `0..range_end`.
pub(crate) fn index_dtype(dtype: DType, range_end: usize) -> Result<(), UnpoolError> {
    let max_index = range_end.saturating_sub(1) as u64;
    let largest = largest_index(dtype).ok_or(UnpoolError::IndexDType { dtype })?;
    if max_index <= largest {
        Ok(())
    } else {
        Err(UnpoolError::IndexDTypeTooNarrow {
            dtype,
            max_index: max_index as usize,
        })
    }
}

/// `x` (or the output gradient) and the indices must be on one device (autodiff aside).
pub(crate) fn same_device(values: &Device, indices: &Device) -> Result<(), UnpoolError> {
    if values.clone().inner() == indices.clone().inner() {
        Ok(())
    } else {
        Err(UnpoolError::Devices {
            values: format!("{values:?}"),
            indices: format!("{indices:?}"),
        })
    }
}

pub(crate) fn element_count(what: &'static str, shape: &[usize]) -> Result<usize, UnpoolError> {
    shape
        .iter()
        .try_fold(1usize, |count, &dim| count.checked_mul(dim))
        .ok_or_else(|| UnpoolError::ShapeOverflow {
            what,
            shape: shape.to_vec(),
        })
}

/// A result must fit one buffer: `isize::MAX` bytes and any GPU `device_limit` (as `u32`s too).
pub(crate) fn output_bytes(
    shape: &[usize],
    dtype: DType,
    device: &Device,
    device_limit: Option<u64>,
) -> Result<(), UnpoolError> {
    let elements = element_count("output", shape)? as u128;
    let bytes = elements * dtype.size() as u128;
    let limit = device_limit.map_or(isize::MAX as u64, |limit| limit.min(isize::MAX as u64));
    let widest = match device_limit {
        Some(_) => bytes.max(elements * 4),
        None => bytes,
    };
    if widest <= u128::from(limit) {
        Ok(())
    } else {
        Err(UnpoolError::OutputTooLarge {
            shape: shape.to_vec(),
            dtype,
            bytes,
            limit,
            device: format!("{device:?}"),
        })
    }
}

/// The integer dtypes, widest and signed first: what indices may be.
const INDEX_DTYPES: [DType; 8] = [
    DType::I64,
    DType::I32,
    DType::U64,
    DType::U32,
    DType::I16,
    DType::U16,
    DType::I8,
    DType::U8,
];

/// The index dtypes of 32 bits or more: what a pool writes its indices in.
pub(crate) const WIDE_INDEX_DTYPES: &[DType] = INDEX_DTYPES.split_at(4).0;

/// The float and integer dtypes: what values may be.
const VALUE_DTYPES: [DType; 12] = [
    DType::F64,
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I64,
    DType::I32,
    DType::I16,
    DType::I8,
    DType::U64,
    DType::U32,
    DType::U16,
    DType::U8,
];

/// The `candidates` the device computes with, as its refusals list them.
pub(crate) fn supported(device: &Device, candidates: &[DType]) -> Vec<DType> {
    candidates
        .iter()
        .copied()
        .filter(|&dtype| device.supports_dtype(dtype))
        .collect()
}

/// Indices must be of a dtype the device computes with, or 64-bit where `words` (kernels that
/// read them as pairs of 32-bit words, on devices without 64-bit integers too).
pub(crate) fn index_dtype_on(
    dtype: DType,
    device: &Device,
    words: bool,
) -> Result<(), UnpoolError> {
    let readable = |dtype: DType| device.supports_dtype(dtype) || (words && dtype.size() == 8);
    if readable(dtype) {
        Ok(())
    } else {
        Err(UnpoolError::IndexDTypeOnDevice {
            dtype,
            device: format!("{device:?}"),
            readable: INDEX_DTYPES.into_iter().filter(|&d| readable(d)).collect(),
        })
    }
}

/// An index conversion computes in `dtype` with Burn's ops: the device must compute with it.
pub(crate) fn index_arithmetic(
    op: &'static str,
    what: &str,
    dtype: DType,
    device: &Device,
) -> Result<(), UnpoolError> {
    if device.supports_dtype(dtype) {
        Ok(())
    } else {
        Err(UnpoolError::IndexArithmetic {
            op,
            what: what.to_string(),
            dtype,
            device: format!("{device:?}"),
            supported: supported(device, &INDEX_DTYPES),
        })
    }
}

pub(crate) fn value_dtype(dtype: DType, device: &Device) -> Result<(), UnpoolError> {
    if value_width(dtype).is_some() && device.supports_dtype(dtype) {
        Ok(())
    } else {
        Err(UnpoolError::ValueDType {
            dtype,
            device: format!("{device:?}"),
            supported: supported(device, &VALUE_DTYPES),
        })
    }
}

/// A pool's values must be of a dtype the device computes with (its indices' dtype is chosen so).
pub(crate) fn pool_value_dtype(dtype: DType, device: &Device) -> Result<(), UnpoolError> {
    if device.supports_dtype(dtype) {
        Ok(())
    } else {
        Err(UnpoolError::PoolValueDType {
            dtype,
            device: format!("{device:?}"),
            supported: supported(device, &VALUE_DTYPES),
        })
    }
}

pub(crate) fn gradient_shape(grad: &[usize], output: &[usize]) -> Result<(), UnpoolError> {
    if grad == output {
        Ok(())
    } else {
        Err(UnpoolError::GradientShape {
            expected: output.to_vec(),
            got: grad.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::DType;

    use crate::{MaxUnpoolOptions, UnpoolPlan};

    #[test]
    #[cfg(target_pointer_width = "32")]
    fn i32_indices_are_refused_for_planes_past_their_range() {
        // 2^31 + 2^16 positions: past i32, inside u32 and a 32-bit usize.
        let options = MaxUnpoolOptions::new([1, 1]).with_output_size([1 << 16, (1 << 15) + 1]);
        let plan = UnpoolPlan::new(&[1, 1, 1, 1], &[1, 1, 1, 1], &options).unwrap();
        let err = super::index_dtype(DType::I32, plan.index_range_end()).unwrap_err();
        assert!(err.to_string().contains("2147549183"), "{err}");
        assert!(super::index_dtype(DType::U32, plan.index_range_end()).is_ok());
        assert!(super::index_dtype(DType::I64, plan.index_range_end()).is_ok());
        // 2^32 positions: no 32-bit usize counts them, so the plan itself is refused.
        let options = MaxUnpoolOptions::new([1, 1]).with_output_size([1 << 16, 1 << 16]);
        let err = UnpoolPlan::new(&[1, 1, 1, 1], &[1, 1, 1, 1], &options).unwrap_err();
        assert!(err.to_string().contains("output"), "{err}");
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn i32_indices_are_refused_for_planes_past_their_range() {
        let options = MaxUnpoolOptions::new([1, 1]).with_output_size([1 << 16, 1 << 16]);
        let plan = UnpoolPlan::new(&[1, 1, 1, 1], &[1, 1, 1, 1], &options).unwrap();
        assert!(super::index_dtype(DType::I64, plan.index_range_end()).is_ok());
        let err = super::index_dtype(DType::I32, plan.index_range_end()).unwrap_err();
        assert!(err.to_string().contains("4294967295"), "{err}"); // 2^32 positions
        assert!(super::index_dtype(DType::U32, plan.index_range_end()).is_ok());
        assert!(super::index_dtype(DType::U16, plan.index_range_end()).is_err());
        assert!(super::index_dtype(DType::F32, plan.index_range_end()).is_err());
    }
}
