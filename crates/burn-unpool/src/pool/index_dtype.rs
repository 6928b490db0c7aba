//! The dtype of a pool's indices, by one rule on every route (kernels or composition).

use burn::tensor::{DType, Device};

use super::PoolError;

/// The dtype of the indices of a pool whose planes hold `plane_len` positions on `device`: the
/// device's default int dtype when it is at least 32 bits wide and holds every position of a
/// plane (what Burn's own pools return), else `I64` where the device has it, else an error.
///
/// Narrower defaults (I8, I16, U8, U16) are never used: a plane of a few hundred elements would
/// already wrap them.
pub(crate) fn pool_index_dtype(device: &Device, plane_len: usize) -> Result<DType, PoolError> {
    let default = DType::from(device.settings().int_dtype);
    if holds_positions(default, plane_len) {
        return Ok(default);
    }
    if device.supports_dtype(DType::I64) {
        return Ok(DType::I64);
    }
    Err(PoolError::IndexDType {
        default,
        plane_len,
        device: format!("{device:?}"),
    })
}

/// Whether `dtype` is an integer dtype of at least 32 bits that holds every position below
/// `plane_len`.
fn holds_positions(dtype: DType, plane_len: usize) -> bool {
    let largest = plane_len.saturating_sub(1) as u128;
    match dtype {
        DType::I32 => largest <= i32::MAX as u128,
        DType::U32 => largest <= u32::MAX as u128,
        DType::I64 => largest <= i64::MAX as u128,
        DType::U64 => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::holds_positions;
    use burn::tensor::DType;

    #[test]
    fn only_32_and_64_bit_dtypes_that_hold_the_plane_qualify() {
        for narrow in [DType::I8, DType::I16, DType::U8, DType::U16] {
            assert!(!holds_positions(narrow, 1), "{narrow:?}");
        }
        assert!(holds_positions(DType::I32, 1 << 31));
        assert!(!holds_positions(DType::I32, (1 << 31) + 1));
        #[cfg(target_pointer_width = "32")]
        assert!(holds_positions(DType::U32, usize::MAX));
        #[cfg(target_pointer_width = "64")]
        {
            assert!(holds_positions(DType::U32, 1 << 32));
            assert!(!holds_positions(DType::U32, (1 << 32) + 1));
            assert!(holds_positions(DType::I64, 1 << 63));
            assert!(!holds_positions(DType::I64, (1 << 63) + 1));
            assert!(holds_positions(DType::U64, usize::MAX));
        }
        assert!(!holds_positions(DType::F32, 1));
    }
}
