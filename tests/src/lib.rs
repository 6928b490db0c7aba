//! Shared pieces of the cross-crate tests: the devices under test, a rank-erased way to call the
//! op, the recorded conformance table, and an independent reference implementation.

// Device::ndarray is deprecated in Burn 0.22 but still shipped, and supported.
#![allow(deprecated)]

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_unpool::onnx::{MaxUnpoolAttributes, OutputShapeRule, max_unpool_onnx};
use burn_unpool::{IndexLayout, MaxUnpoolOptions, max_unpool, max_unpool_backward};
use serde::Deserialize;
use serde::de::DeserializeOwned;

mod recorded_pools;

pub use recorded_pools::{RecordedPool, pool_cases};

/// Every device the suites run on, by name: the CPU backends (NdArray with the `ndarray` feature,
/// a default one), and with the `wgpu` feature the default wgpu adapter (a software Vulkan driver
/// in CI). `BURN_UNPOOL_TEST_DEVICES` (names, comma-separated) keeps only those named: `wgpu`
/// runs the suites on a second Vulkan driver without running the CPU devices again.
pub fn devices() -> Vec<(&'static str, Device)> {
    let mut devices = vec![("flex", Device::flex())];
    #[cfg(feature = "ndarray")]
    devices.push(("ndarray", Device::ndarray()));
    #[cfg(feature = "wgpu")]
    devices.push(("wgpu", wgpu_device()));
    if let Ok(names) = std::env::var("BURN_UNPOOL_TEST_DEVICES") {
        let names: Vec<&str> = names.split(',').map(str::trim).collect();
        for name in &names {
            assert!(
                devices.iter().any(|(device, _)| device == name),
                "BURN_UNPOOL_TEST_DEVICES names {name:?}, which this build has no device of"
            );
        }
        devices.retain(|(device, _)| names.contains(device));
    }
    devices
}

/// The default wgpu adapter; where `BURN_UNPOOL_TEST_ADAPTER` is set, checked to be the adapter
/// it names (a part of the name the driver gives), so a run meant for one driver runs on no other.
#[cfg(feature = "wgpu")]
fn wgpu_device() -> Device {
    let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
    if let Ok(expected) = std::env::var("BURN_UNPOOL_TEST_ADAPTER") {
        let name = match device.as_dispatch().clone().inner() {
            burn::backend::DispatchDevice::Cube(cube) => {
                cube.client().properties().identity.name.clone()
            }
            #[allow(unreachable_patterns)]
            other => panic!("the wgpu device is no CubeCL device: {other:?}"),
        };
        assert!(
            name.contains(&expected),
            "BURN_UNPOOL_TEST_ADAPTER is {expected:?}, but the default wgpu adapter is {name:?}"
        );
    }
    device
}

/// The devices of [`devices`] that hold tensors of `rank` dimensions: NdArray holds at most 6.
pub fn devices_holding(rank: usize) -> Vec<(&'static str, Device)> {
    devices()
        .into_iter()
        .filter(|(name, _)| *name != "ndarray" || rank <= 6)
        .collect()
}

/// Runs `f` on this crate's kernels and on the composition of Burn ops that devices without them
/// run (pools and unpooling alike), with the route's name.
pub fn on_both_routes(mut f: impl FnMut(&str)) {
    f("kernels");
    burn_unpool::diagnostics::with_composition(|| f("composition"));
}

/// Whether `device` compares a subnormal f32 as zero (flushes it), by a comparison run there.
pub fn flushes_subnormals(device: &Device) -> bool {
    let smallest = Tensor::<1>::from_floats([f32::from_bits(1)], device);
    let above_zero = smallest.greater_elem(0.0).into_data();
    !above_zero.iter::<bool>().all(|above| above)
}

/// [`on_both_routes`] for a pool of `values` of `shape`: the kernels order f32 by its bits, while
/// the composition compares with the device's float comparison. Where that flushes subnormals and
/// `values` hold one, only the kernels run, and only if they take the pool (up to three spatial
/// axes; the composition takes subnormals for zero there).
pub fn pool_routes(device: &Device, shape: &[usize], values: &[f32], mut f: impl FnMut(&str)) {
    if !values.iter().any(|v| v.is_subnormal()) || !flushes_subnormals(device) {
        on_both_routes(f);
    } else if shape.len() <= 5 {
        f("kernels");
    }
}

/// The pool geometry and output options of one unpooling, for any rank.
#[derive(Clone, Debug, Deserialize)]
pub struct PoolParams {
    /// Kernel size per spatial axis.
    pub kernel: Vec<usize>,
    /// Stride per spatial axis.
    pub stride: Vec<usize>,
    /// `(begin, end)` padding per spatial axis.
    pub padding: Vec<(usize, usize)>,
    /// Dilation per spatial axis.
    pub dilation: Vec<usize>,
    /// Explicit spatial output size.
    pub output_size: Option<Vec<usize>>,
}

impl PoolParams {
    /// Options of rank `D`.
    pub fn options<const D: usize>(&self, layout: IndexLayout) -> MaxUnpoolOptions<D> {
        let array = |v: &[usize]| -> [usize; D] { v.try_into().expect("one value per axis") };
        let mut options = MaxUnpoolOptions::new(array(&self.kernel))
            .with_stride(array(&self.stride))
            .with_padding_pairs(self.padding.clone().try_into().expect("one pair per axis"))
            .with_dilation(array(&self.dilation))
            .with_index_layout(layout);
        if let Some(size) = &self.output_size {
            options = options.with_output_size(array(size));
        }
        options
    }
}

/// Which direction of the op to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `max_unpool`: `input` is `x`.
    Forward,
    /// `max_unpool_backward`: `input` is the output gradient.
    Backward,
}

/// Runs the op on `device` for data of any rank 3, 4 or 5 and any value dtype (integer values
/// forward only) and returns the result's data.
pub fn run(
    direction: Direction,
    input: TensorData,
    indices: TensorData,
    geometry: &PoolParams,
    layout: IndexLayout,
    device: &Device,
) -> TensorData {
    macro_rules! rank {
        ($d:literal, $r:literal) => {{
            let dtype = input.dtype();
            let indices = Tensor::<$r, Int>::from_data(indices.clone(), (device, indices.dtype()));
            let options = geometry.options::<$d>(layout);
            if !dtype.is_float() {
                assert_eq!(
                    direction,
                    Direction::Forward,
                    "integer values have no gradient"
                );
                let input = Tensor::<$r, Int>::from_data(input, (device, dtype));
                return max_unpool(input, indices, options).into_data();
            }
            let input = Tensor::<$r>::from_data(input, (device, dtype));
            match direction {
                Direction::Forward => max_unpool(input, indices, options).into_data(),
                Direction::Backward => max_unpool_backward(input, indices, options).into_data(),
            }
        }};
    }
    match indices.shape().len() {
        3 => rank!(1, 3),
        4 => rank!(2, 4),
        5 => rank!(3, 5),
        rank => panic!("unsupported rank {rank}"),
    }
}

/// One recorded case of `tests/data/conformance.json`.
#[derive(Clone, Debug, Deserialize)]
pub struct Case {
    /// Case name.
    pub name: String,
    /// `pytorch` or `onnx_reference`.
    pub source: String,
    /// `per_plane` or `global`.
    pub layout: String,
    /// Shape of `x` and the indices.
    pub input_shape: Vec<usize>,
    /// Values of `x`.
    pub x: Vec<f64>,
    /// The indices.
    pub indices: Vec<i64>,
    /// Kernel size.
    pub kernel: Vec<usize>,
    /// Stride.
    pub stride: Vec<usize>,
    /// `(begin, end)` padding.
    pub padding: Vec<(usize, usize)>,
    /// Dilation.
    pub dilation: Vec<usize>,
    /// Explicit spatial output size (PyTorch cases).
    pub output_size: Option<Vec<usize>>,
    /// ONNX `output_shape` input (ONNX reference cases).
    #[serde(default)]
    pub onnx_output_shape: Option<Vec<usize>>,
    /// Shape of the recorded output.
    pub output_shape: Vec<usize>,
    /// The recorded output.
    pub expected: Vec<f64>,
    /// A seeded output gradient (cases without duplicates).
    #[serde(default)]
    pub grad_output: Option<Vec<f64>>,
    /// PyTorch's gradient of `x` for `grad_output`.
    #[serde(default)]
    pub grad_x: Option<Vec<f64>>,
}

impl Case {
    /// The index layout of the case.
    pub fn layout(&self) -> IndexLayout {
        match self.layout.as_str() {
            "global" => IndexLayout::Global,
            _ => IndexLayout::PerPlane,
        }
    }

    /// The geometry of the case.
    pub fn geometry(&self) -> PoolParams {
        PoolParams {
            kernel: self.kernel.clone(),
            stride: self.stride.clone(),
            padding: self.padding.clone(),
            dilation: self.dilation.clone(),
            output_size: self.output_size.clone(),
        }
    }

    /// `x` as f32 data.
    pub fn x_data(&self) -> TensorData {
        f32_data(&self.x, &self.input_shape)
    }

    /// The indices as data of `dtype` (any integer dtype: the recorded indices are small and non-negative).
    pub fn indices_data(&self, dtype: DType) -> TensorData {
        TensorData::new(self.indices.clone(), self.input_shape.clone()).convert_dtype(dtype)
    }

    /// The case's output on `device` with indices of `dtype`: the functions, or for a case
    /// recorded from the ONNX reference, the ONNX door with the reference's `output_shape` rule.
    pub fn forward(&self, dtype: DType, device: &Device) -> TensorData {
        let Some(shape) = &self.onnx_output_shape else {
            return run(
                Direction::Forward,
                self.x_data(),
                self.indices_data(dtype),
                &self.geometry(),
                self.layout(),
                device,
            );
        };
        let pads = self
            .padding
            .iter()
            .map(|p| p.0)
            .chain(self.padding.iter().map(|p| p.1))
            .collect();
        let attributes = MaxUnpoolAttributes::new(self.kernel.clone())
            .with_rule(OutputShapeRule::Reference)
            .with_strides(self.stride.clone())
            .with_pads(pads);
        let x = Tensor::<4>::from_data(self.x_data(), device);
        let indices = Tensor::<4, Int>::from_data(self.indices_data(dtype), (device, dtype));
        max_unpool_onnx(x, indices, &attributes, Some(shape)).into_data()
    }
}

/// f64 values (exact copies of f32 ones) as f32 data.
pub fn f32_data(values: &[f64], shape: &[usize]) -> TensorData {
    TensorData::new(
        values.iter().map(|&v| v as f32).collect::<Vec<f32>>(),
        shape.to_vec(),
    )
}

/// The op copies bits, so the recorded cases hold for integer values too: `x`'s f32 bit patterns
/// read as integers of the `values` dtype (truncated or zero-extended; either maps 0 to 0, so it
/// commutes with the op) give the recorded output read the same way, with indices of the
/// `indices` dtype. Every case the functions run, on every device, for each `(values, indices)`
/// pair whose values the device computes with.
pub fn assert_recorded_cases_hold_for_integer_values(pairs: &[(DType, DType)]) {
    let as_bits = |values: &[f64], shape: &[usize], dtype: DType| {
        let bits: Vec<u64> = values
            .iter()
            .map(|&v| (v as f32).to_bits().into())
            .collect();
        data_from_bits(&bits, shape, dtype)
    };
    let cases = conformance_cases();
    for case in cases.iter().filter(|case| case.onnx_output_shape.is_none()) {
        for (device_name, device) in devices() {
            for &(values, indices) in pairs {
                let Some(actual) = where_readable(&device, values, indices, || {
                    run(
                        Direction::Forward,
                        as_bits(&case.x, &case.input_shape, values),
                        case.indices_data(indices),
                        &case.geometry(),
                        case.layout(),
                        &device,
                    )
                }) else {
                    continue;
                };
                assert_bit_equal(
                    &actual,
                    &as_bits(&case.expected, &case.output_shape, values),
                    &format!(
                        "{} on {device_name}: {values:?} values, {indices:?} indices",
                        case.name
                    ),
                );
            }
        }
    }
}

/// `max_unpool_backward` of every recorded case with a PyTorch gradient (those without
/// duplicates) against that gradient, on every device; returns how many cases were checked.
pub fn assert_recorded_gradients() -> usize {
    let mut checked = 0;
    for case in conformance_cases() {
        let (Some(grad_output), Some(grad_x)) = (&case.grad_output, &case.grad_x) else {
            continue;
        };
        let expected = f32_data(grad_x, &case.input_shape);
        for (device_name, device) in devices() {
            // PyTorch's int64 indices where the device has them, else the widest it reads.
            let index_dtype = [DType::I64, DType::I32]
                .into_iter()
                .find(|&dtype| device.supports_dtype(dtype))
                .expect("a device with 32-bit integers");
            let actual = run(
                Direction::Backward,
                f32_data(grad_output, &case.output_shape),
                case.indices_data(index_dtype),
                &case.geometry(),
                case.layout(),
                &device,
            );
            assert_bit_equal(
                &actual,
                &expected,
                &format!("gradient of {} on {device_name}", case.name),
            );
        }
        checked += 1;
    }
    checked
}

/// The recorded conformance table.
pub fn conformance_cases() -> Vec<Case> {
    recorded_cases(include_str!("../data/conformance.json"))
}

/// The `cases` of a recorded table (`{"cases": [...], ..}`).
pub fn recorded_cases<T: DeserializeOwned>(json: &str) -> Vec<T> {
    #[derive(Deserialize)]
    #[serde(bound = "T: DeserializeOwned")]
    struct Table<T> {
        cases: Vec<T>,
    }
    serde_json::from_str::<Table<T>>(json)
        .expect("a valid recorded table")
        .cases
}

/// Every integer dtype Burn has.
pub const INTEGER_DTYPES: [DType; 8] = [
    DType::I64,
    DType::I32,
    DType::I16,
    DType::I8,
    DType::U64,
    DType::U32,
    DType::U16,
    DType::U8,
];

/// Data of `dtype` from bit patterns, each the low bytes of a `u64` (little-endian).
pub fn data_from_bits(bits: &[u64], shape: &[usize], dtype: DType) -> TensorData {
    let width = dtype.size();
    let bytes = bits
        .iter()
        .flat_map(|b| b.to_le_bytes()[..width].to_vec())
        .collect();
    TensorData::from_bytes_vec(bytes, shape.to_vec(), dtype)
}

/// What `f` returns, or the message it panics with.
pub fn outcome<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// The float dtypes a value may be; with [`INTEGER_DTYPES`], every dtype a refusal names.
const FLOAT_DTYPES: [DType; 4] = [DType::F64, DType::F32, DType::F16, DType::BF16];

/// The dtype ONNX's int64 indices are held in on `device`: I64 where it computes with 64-bit
/// integers, else I32 (the contract's rule for devices without them, where the indices fit).
pub fn onnx_index_dtype(device: &Device) -> DType {
    match device.supports_dtype(DType::I64) {
        true => DType::I64,
        false => DType::I32,
    }
}

/// Whether `device` reads indices of `dtype` on the route its ops take now: every dtype it
/// computes with, and 64-bit ones on the CubeCL kernels, which read each as two 32-bit words.
pub fn reads_indices(device: &Device, dtype: DType) -> bool {
    device.supports_dtype(dtype)
        || (matches!(dtype, DType::I64 | DType::U64)
            && burn_unpool::route(device) == burn_unpool::Route::CubeKernels)
}

/// [`where_supported`] for an unpooling of `values` with indices of `indices`: `f()` where the
/// device computes with `values` and [`reads_indices`] of `indices`, else the refusal's check.
pub fn where_readable<T>(
    device: &Device,
    values: DType,
    indices: DType,
    f: impl FnOnce() -> T,
) -> Option<T> {
    let mut missing = Vec::new();
    if !device.supports_dtype(values) {
        missing.push(values);
    }
    if !reads_indices(device, indices) {
        missing.push(indices);
    }
    refused_unless_empty(device, &missing, f)
}

/// `f()` where `device` computes with every dtype of `dtypes`; else `None`, once `f` has panicked
/// with a refusal that names one of the missing dtypes and lists only dtypes the device has.
pub fn where_supported<T>(device: &Device, dtypes: &[DType], f: impl FnOnce() -> T) -> Option<T> {
    let missing: Vec<DType> = dtypes
        .iter()
        .copied()
        .filter(|&dtype| !device.supports_dtype(dtype))
        .collect();
    refused_unless_empty(device, &missing, f)
}

/// `f()` where nothing is `missing`, else `None` once `f` has panicked with a refusal naming one.
fn refused_unless_empty<T>(device: &Device, missing: &[DType], f: impl FnOnce() -> T) -> Option<T> {
    if missing.is_empty() {
        return Some(f());
    }
    let Err(message) = outcome(f) else {
        panic!("{device:?} ran an op on {missing:?}, which it lacks, instead of refusing it");
    };
    assert!(
        missing
            .iter()
            .any(|dtype| message.contains(&format!("of dtype {dtype:?} cannot be"))),
        "the refusal names none of {missing:?}: {message}"
    );
    assert_lists_dtypes_of(&message, device);
    None
}

/// The dtypes a refusal's message lists last (after its last "of dtype ") are all dtypes the
/// device computes with (or, for a list of indices, [`reads_indices`]), and there is at least one.
pub fn assert_lists_dtypes_of(message: &str, device: &Device) {
    let (before, list) = message
        .rsplit_once("of dtype ")
        .unwrap_or_else(|| panic!("no dtype list in: {message}"));
    let of_indices = before.ends_with("reads indices ");
    let list = list.split([';', ')']).next().unwrap_or_default();
    let listed: Vec<DType> = list
        .split(", ")
        .map(|name| {
            let name = name.trim();
            FLOAT_DTYPES
                .into_iter()
                .chain(INTEGER_DTYPES)
                .find(|dtype| format!("{dtype:?}") == name)
                .unwrap_or_else(|| panic!("{name:?} is no dtype, in: {message}"))
        })
        .collect();
    for dtype in listed {
        assert!(
            device.supports_dtype(dtype) || (of_indices && reads_indices(device, dtype)),
            "the refusal offers {dtype:?}, which {device:?} lacks: {message}"
        );
    }
}

/// Where `f`, which must panic, panicked (`file:line`, as `#[track_caller]` reports it), and its
/// message. The panic hook records the site per thread and then prints as before.
pub fn panic_site(f: impl FnOnce()) -> (String, String) {
    thread_local! {
        static SITE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let site = info
                .location()
                .map(|at| format!("{}:{}", at.file(), at.line()));
            SITE.with(|recorded| *recorded.borrow_mut() = site);
            previous(info);
        }));
    });
    let message = outcome(f).expect_err("the call must panic");
    let site = SITE.with(|recorded| recorded.borrow_mut().take());
    (site.expect("a panic with a location"), message)
}

/// A straightforward reference, written from the contract and independent of the crate's kernels:
/// the target of every element of `x`, as a flat offset into the output, in row-major order of `x`.
///
/// `index_plane` is the plane shape indices are read in; it is placed at the origin of the output
/// plane. Returns `None` for an out-of-range index.
pub fn reference_targets(
    indices: &[i64],
    input_shape: &[usize],
    output_shape: &[usize],
    index_plane: &[usize],
    layout: IndexLayout,
) -> Option<Vec<usize>> {
    let planes = input_shape[0] * input_shape[1];
    let in_plane: usize = input_shape[2..].iter().product();
    let s_plane: usize = index_plane.iter().product();
    let o_plane: usize = output_shape[2..].iter().product();
    let mut targets = Vec::with_capacity(indices.len());
    for (element, &index) in indices.iter().enumerate() {
        let own_plane = element / in_plane;
        let (plane, local) = match layout {
            IndexLayout::PerPlane => (own_plane, index),
            IndexLayout::Global => {
                if index < 0 || index as usize >= planes * s_plane {
                    return None;
                }
                (index as usize / s_plane, (index as usize % s_plane) as i64)
            }
            layout => panic!("the reference knows no index layout {layout:?}"),
        };
        if local < 0 || local as usize >= s_plane {
            return None;
        }
        // Coordinates in the index plane, then the same coordinates in the output plane.
        let mut coords = vec![0; index_plane.len()];
        let mut rest = local as usize;
        for axis in (0..index_plane.len()).rev() {
            coords[axis] = rest % index_plane[axis];
            rest /= index_plane[axis];
        }
        let mut offset = 0;
        for (axis, &c) in coords.iter().enumerate() {
            offset = offset * output_shape[2 + axis] + c;
        }
        targets.push(plane * o_plane + offset);
    }
    Some(targets)
}

/// Reference forward: zero output, then every value written at its target in order.
pub fn reference_forward(x: &[f64], targets: &[usize], output_len: usize) -> Vec<f64> {
    let mut out = vec![0.0; output_len];
    for (&v, &t) in x.iter().zip(targets) {
        out[t] = v;
    }
    out
}

/// Reference backward: `dx[p] = grad[t]` for the last element writing `t`, zero for the others.
pub fn reference_backward(grad: &[f64], targets: &[usize]) -> Vec<f64> {
    let mut last_writer = std::collections::HashMap::new();
    for (element, &t) in targets.iter().enumerate() {
        last_writer.insert(t, element);
    }
    targets
        .iter()
        .enumerate()
        .map(|(element, &t)| {
            if last_writer[&t] == element {
                grad[t]
            } else {
                0.0
            }
        })
        .collect()
}

/// Asserts two data are equal bit for bit (dtype, shape and every value's bits).
pub fn assert_bit_equal(actual: &TensorData, expected: &TensorData, context: &str) {
    assert_eq!(actual.dtype(), expected.dtype(), "{context}: dtype");
    assert_eq!(actual.shape(), expected.shape(), "{context}: shape");
    assert_eq!(
        &actual.bytes()[..],
        &expected.bytes()[..],
        "{context}: values differ\nactual:   {actual}\nexpected: {expected}"
    );
}

/// Every page's Rust examples run as doctests, so what the docs show stays true: one hidden
/// module per Markdown page with Rust code (the guide's run in burn-unpool, whose `guide` module
/// it is).
macro_rules! doctested_pages {
    ($($module:ident: $path:literal),* $(,)?) => {$(
        #[doc = include_str!($path)]
        mod $module {}
    )*};
}

doctested_pages! {
    readme: "../../README.md",
    pytorch: "../../docs/pytorch.md",
    troubleshooting: "../../docs/troubleshooting.md",
    burn_pool_edges: "../../docs/burn-pool-edges.md",
    lavapipe_spirv: "../../docs/lavapipe-spirv.md",
    flex_sum: "../../docs/flex-sum.md",
    conv_grad_panic: "../../docs/conv-grad-panic.md",
    segnet_readme: "../../examples/segnet/README.md",
    onnx_import_readme: "../../examples/onnx-import/README.md",
}
