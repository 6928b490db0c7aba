//! Cube (the wgpu, vulkan and metal devices): the composed default body, correct with duplicates,
//! until CubeCL kernels of its own replace it. Fused devices run the same body on fused ops.

use burn_cubecl::CubeBackend;

use super::UnpoolBackend;

impl UnpoolBackend for CubeBackend {}
