//! Whether a training step's tuned convolution gradients fit a GPU device, and the micro-batch
//! that makes them fit.
//!
//! With Burn's autotune (the GPU builds), the input gradient of a `k x k` convolution reading
//! `C_in` channels of `images` images of `H x W` is tuned among kernels that go through one
//! matrix product whose output is a column matrix of `C_in * k * k` by `images * H * W`
//! elements, in one buffer (`dgrad_im2col` and `conv_transpose2d_col2im` in burn-cubecl 0.22.1).
//! Where that buffer is larger than the device's largest allocation, every tuned matrix product
//! fails, CubeCL 0.11.3 keeps the naive one unmeasured, and where `images * H * W` passes
//! 65535 blocks of 8 columns its launch panics on Burn's device thread ("Cube count too big").
//! Both conditions together are the rule: on lavapipe (largest allocation 128 MiB) a single
//! convolution's gradient panicked exactly where it predicts, and nowhere else, in every
//! configuration tried (`docs/conv-grad-panic.md`). The images themselves take no gradient, so
//! the network's first convolution is left out.

use std::fmt;

use burn::tensor::Device;

use crate::model::{ConvShape, SegNetConfig};

/// Columns (`images * H * W`) past which the naive matrix product cannot launch on a device whose
/// plane (subgroup) has at least 8 units: its cubes are 8 columns wide (col2im's product) or one
/// plane tall (`dgrad_im2col`'s, whose rows are the columns here), and a cube count's dimension
/// stops at 65535 (cubek-matmul 0.3.1, `routines/naive`).
pub const NAIVE_MATMUL_MAX_COLUMNS: u64 = MAX_CUBES * 8;

/// The largest cube count in one dimension that the naive matrix product launches.
const MAX_CUBES: u64 = 65_535;

/// Whether this build has Burn's autotune: the `wgpu` feature (and `vulkan`, which implies it) adds
/// it; `wgpu-device` alone builds the GPU devices without it.
const TUNED: bool = cfg!(feature = "wgpu");

/// What the rule needs to know of a GPU device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// The largest buffer it allocates, bytes (lavapipe: 134217728).
    pub largest_allocation: u64,
    /// Its smallest plane (subgroup) size (lavapipe: 8; NVIDIA: 32).
    pub plane_size: u32,
}

impl DeviceLimits {
    /// `device`'s limits, where it is a GPU and this build tunes its kernels; `None` on the CPU
    /// devices, and in a build without Burn's autotune (the `wgpu-device` feature alone), whose
    /// direct kernels ask for no column matrix.
    pub fn of(device: &Device) -> Option<Self> {
        if !TUNED {
            return None;
        }
        burn_unpool::device_limits(device).map(|limits| Self {
            largest_allocation: limits.largest_allocation,
            plane_size: limits.plane_size,
        })
    }

    /// The columns the naive matrix product launches: [`NAIVE_MATMUL_MAX_COLUMNS`], fewer on a
    /// device whose plane is narrower than 8.
    pub fn naive_max_columns(&self) -> u64 {
        MAX_CUBES * u64::from(self.plane_size.clamp(1, 8))
    }
}

/// The column matrix the tuned input gradient of one convolution asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnMatrix {
    /// The convolution's place in the forward (0 = the first, which reads the images).
    pub layer: usize,
    /// The convolution.
    pub conv: ConvShape,
    /// Images it is taken over.
    pub images: usize,
    /// Rows: `C_in * k * k`.
    pub rows: u64,
    /// Columns: `images * H * W`.
    pub columns: u64,
    /// Bytes of the buffer: rows, columns and the float's size.
    pub bytes: u64,
}

impl ColumnMatrix {
    /// The matrix of convolution `layer` (`conv`) over `images` images of `float_bytes` floats.
    pub fn of(layer: usize, conv: ConvShape, images: usize, float_bytes: u64) -> Self {
        let [height, width] = conv.size;
        let rows = (conv.in_channels * conv.kernel * conv.kernel) as u64;
        let columns = (images * height * width) as u64;
        Self {
            layer,
            conv,
            images,
            rows,
            columns,
            bytes: rows * columns * float_bytes,
        }
    }

    /// Whether Burn's tuned gradient panics on it on a device with `limits`: the buffer does not
    /// fit and the naive kernel cannot launch. It counts every image in one product, where
    /// col2im's may take fewer at a time on a wide plane: it can split a batch Burn would not
    /// have panicked on, never miss one that panics.
    pub fn panics(&self, limits: &DeviceLimits) -> bool {
        self.bytes > limits.largest_allocation && self.columns > limits.naive_max_columns()
    }
}

impl fmt::Display for ColumnMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ConvShape {
            in_channels,
            out_channels,
            kernel,
            size: [height, width],
        } = self.conv;
        write!(
            f,
            "the input gradient of convolution {} ({in_channels} -> {out_channels} channels, \
             {kernel}x{kernel}, {height} x {width}) over {} images asks for a column matrix of \
             {} x {} = {} bytes",
            self.layer + 1,
            self.images,
            self.rows,
            self.columns,
            self.bytes
        )
    }
}

/// The first convolution of `config`'s network on `images` images of `size` whose tuned input
/// gradient panics on a device with `limits`.
pub fn panicking_gradient(
    config: &SegNetConfig,
    size: [usize; 2],
    images: usize,
    float_bytes: u64,
    limits: &DeviceLimits,
) -> Option<ColumnMatrix> {
    config
        .convolutions(size)
        .into_iter()
        .enumerate()
        // The first convolution reads the images, which take no gradient.
        .skip(1)
        .map(|(layer, conv)| ColumnMatrix::of(layer, conv, images, float_bytes))
        .find(|matrix| matrix.panics(limits))
}

/// What a training step is, for a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPlan {
    /// Images per step.
    pub batch: usize,
    /// Images per gradient computation, at most (the whole batch where nothing needs splitting).
    pub micro_batch: usize,
    /// Why the batch is split, where it is split to fit the device.
    pub cause: Option<SplitCause>,
}

/// The column matrix that does not fit, on the device whose limits it passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitCause {
    /// The first matrix of the whole batch past the limits.
    pub matrix: ColumnMatrix,
    /// The device's limits.
    pub limits: DeviceLimits,
}

impl StepPlan {
    /// `(start, len)` of each micro-batch of the batch, in order (one where nothing is split).
    pub fn micro_batches(&self) -> Vec<(usize, usize)> {
        even_parts(self.batch, self.micro_batch)
    }

    /// What the plan changes, to say once before the first step; `None` where the whole batch
    /// takes one gradient.
    pub fn announcement(&self) -> Option<String> {
        if self.micro_batch >= self.batch {
            return None;
        }
        let split = format!(
            "micro-batches of {} images, their gradients summed into each step of {}",
            self.micro_batch, self.batch
        );
        let why = match &self.cause {
            Some(SplitCause { matrix, limits }) => format!(
                ": {matrix}, past this device's largest allocation ({} bytes), over the {} \
                 columns Burn's fallback matrix product can launch (docs/conv-grad-panic.md)",
                limits.largest_allocation,
                limits.naive_max_columns()
            ),
            None => " (--micro-batch)".to_owned(),
        };
        Some(format!(
            "{split}{why}; batch norm normalises each micro-batch on its own"
        ))
    }
}

/// `(start, len)` of the fewest parts of `total` of at most `most` each, the first ones one longer
/// where they cannot all be equal (7 at most 3 at a time: 3, 2 and 2, so that batch norm never
/// sees a micro-batch much smaller than the rest).
///
/// # Panics
/// If `most` is 0.
pub fn even_parts(total: usize, most: usize) -> Vec<(usize, usize)> {
    assert!(most > 0, "a micro-batch holds at least one image");
    let parts = total.div_ceil(most).max(1);
    let (base, longer) = (total / parts, total % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < longer);
            start += len;
            (start - len, len)
        })
        .collect()
}

/// Why no micro-batch fits, or why the one asked for does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoesNotFit {
    /// The matrix that does not fit, at the micro-batch tried.
    pub matrix: ColumnMatrix,
    /// The device's limits.
    pub limits: DeviceLimits,
    /// The largest micro-batch that fits (0: not even one image).
    pub largest_micro_batch: usize,
    /// The largest width of the network at which one image fits (0: none).
    pub largest_width: usize,
}

impl fmt::Display for DoesNotFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, past this device's largest allocation ({} bytes), over {} columns, past the \
             {} that Burn's fallback matrix product can launch: Burn's tuned kernels panic on it \
             (docs/conv-grad-panic.md). ",
            self.matrix,
            self.limits.largest_allocation,
            self.matrix.columns,
            self.limits.naive_max_columns()
        )?;
        match self.largest_micro_batch {
            0 => write!(f, "Not even one image fits. ")?,
            n => write!(
                f,
                "Micro-batches of up to {n} images fit: --micro-batch {n}. "
            )?,
        }
        write!(f, "Remedies: a smaller --size, ")?;
        match self.largest_width {
            0 => write!(f, "a smaller --width, ")?,
            w => write!(f, "--width {w} or less, ")?,
        }
        write!(f, "or the CPU (--device cpu)")
    }
}

impl std::error::Error for DoesNotFit {}

/// The step for `batch` images of `size` on a device with `limits` (`None`: none, as on the
/// CPU), with the micro-batch the user asked for, if any. Without one, a batch that does not fit
/// is split into the fewest micro-batches that do; the plan's size is the largest of them, the
/// sizes as even as they can be (`accumulate` splits the batch that way).
///
/// # Errors
/// Where the asked micro-batch does not fit, or not even one image does.
pub fn plan_step(
    config: &SegNetConfig,
    size: [usize; 2],
    batch: usize,
    float_bytes: u64,
    limits: Option<DeviceLimits>,
    requested: Option<usize>,
) -> Result<StepPlan, DoesNotFit> {
    // What is asked, evened out: batch 4 at most 3 at a time runs as 2 and 2.
    let asked = requested.unwrap_or(batch).min(batch).max(1);
    let wanted = even_parts(batch.max(1), asked)[0].1;
    let whole = StepPlan {
        batch,
        micro_batch: wanted,
        cause: None,
    };
    let Some(limits) = limits else {
        return Ok(whole);
    };
    let panics = |images| panicking_gradient(config, size, images, float_bytes, &limits);
    let Some(matrix) = panics(wanted) else {
        return Ok(whole);
    };
    // Both conditions grow with the images, so the images that fit are 1..=largest.
    let largest = (1..wanted)
        .rev()
        .find(|&m| panics(m).is_none())
        .unwrap_or(0);
    if requested.is_some() || largest == 0 {
        let largest_width = (1..config.width)
            .rev()
            .find(|&w| {
                let narrower = config.clone().with_width(w);
                panicking_gradient(&narrower, size, 1, float_bytes, &limits).is_none()
            })
            .unwrap_or(0);
        return Err(DoesNotFit {
            matrix,
            limits,
            largest_micro_batch: largest,
            largest_width,
        });
    }
    // The first part is the longest.
    Ok(StepPlan {
        batch,
        micro_batch: even_parts(batch, largest)[0].1,
        cause: Some(SplitCause { matrix, limits }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Architecture;

    /// Read off lavapipe (Mesa 22.3.6) by `examples/conv_grad_panic.rs`.
    const LAVAPIPE: DeviceLimits = DeviceLimits {
        largest_allocation: 134_217_728,
        plane_size: 8,
    };

    fn segnet_basic(width: usize) -> SegNetConfig {
        SegNetConfig::new(11)
            .with_architecture(Architecture::SegNetBasic)
            .with_width(width)
    }

    fn conv(in_channels: usize, kernel: usize, size: [usize; 2]) -> ConvShape {
        ConvShape {
            in_channels,
            out_channels: in_channels,
            kernel,
            size,
        }
    }

    /// The panic recorded on an H200 (SegNet-Basic width 64, batch 4 of 360 x 480, f32): "Cube
    /// count too big (98, 86400, 1)", the naive kernel's cubes of 32 rows (the device's plane)
    /// by 8 columns over the decoder convolution's 3136 x 691200 matrix.
    #[test]
    fn the_h200_panic_is_the_decoder_convolutions_matrix() {
        // The card's largest allocation was not read; 4 GiB stands for it. The run refused the
        // 8.67 GB buffer ("can't allocate buffer of size: 8670412800", docs/benchmarks.md).
        let h200 = DeviceLimits {
            largest_allocation: 4 << 30,
            plane_size: 32,
        };
        let matrix = panicking_gradient(&segnet_basic(64), [360, 480], 4, 4, &h200)
            .expect("past 4 GiB and 524280 columns");
        assert_eq!((matrix.rows, matrix.columns), (3136, 691_200));
        assert_eq!(matrix.bytes, 8_670_412_800);
        assert_eq!(
            (matrix.rows.div_ceil(32), matrix.columns.div_ceil(8)),
            (98, 86_400)
        );
        // At batch 1 its 172800 columns are within the naive kernel's launch, whatever the buffer.
        assert!(panicking_gradient(&segnet_basic(64), [360, 480], 1, 4, &h200).is_none());
        // A device whose largest allocation holds the 8.67 GB matrix never gets to the naive kernel.
        let larger = DeviceLimits {
            largest_allocation: 9 << 30,
            ..h200
        };
        assert!(panicking_gradient(&segnet_basic(64), [360, 480], 4, 4, &larger).is_none());
    }

    /// Single convolutions' input gradients on lavapipe (largest allocation 134217728 bytes),
    /// run with `examples/conv_grad_panic.rs` of burn-unpool (docs/conv-grad-panic.md): which
    /// panicked and which did not.
    #[test]
    fn the_rule_predicts_what_lavapipe_did() {
        // (images, channels, kernel, size, panicked)
        let runs = [
            (1, 2, 7, [360, 480], false),
            (2, 2, 7, [360, 480], false),
            (3, 2, 7, [360, 480], false),
            (4, 2, 7, [360, 480], true),
            (1, 2, 7, [724, 724], false),
            (1, 2, 7, [725, 725], true),
            (4, 1, 7, [360, 480], true),
            (4, 1, 5, [360, 480], false),
        ];
        for (images, channels, kernel, size, panicked) in runs {
            let matrix = ColumnMatrix::of(1, conv(channels, kernel, size), images, 4);
            assert_eq!(
                matrix.panics(&LAVAPIPE),
                panicked,
                "{images} x {channels} channels, {kernel}x{kernel}, {size:?}: {matrix}"
            );
        }
    }

    #[test]
    fn a_plane_narrower_than_8_launches_fewer_columns() {
        let narrow = DeviceLimits {
            plane_size: 4,
            ..LAVAPIPE
        };
        assert_eq!(narrow.naive_max_columns(), 262_140);
        assert_eq!(LAVAPIPE.naive_max_columns(), NAIVE_MATMUL_MAX_COLUMNS);
        // 2 x 360 x 480 = 345600 columns, 98 rows: 135 MB, past 128 MiB.
        let matrix = ColumnMatrix::of(1, conv(2, 7, [360, 480]), 2, 4);
        assert!(matrix.panics(&narrow));
        assert!(!matrix.panics(&LAVAPIPE));
    }

    #[test]
    fn the_images_take_no_gradient() {
        // SegNet width 2 (3x3 convolutions), 8 images of 360 x 480: 1382400 columns. The first
        // convolution reads the 3 image channels, 27 rows, 149 MB: past 128 MiB. Every other
        // one at full size reads 2 channels, 18 rows, 99.5 MB; the deeper ones have a quarter
        // of the columns or less, under 524280.
        let segnet = SegNetConfig::new(11)
            .with_architecture(Architecture::SegNet)
            .with_width(2);
        let convs = segnet.convolutions([360, 480]);
        assert!(ColumnMatrix::of(0, convs[0], 8, 4).panics(&LAVAPIPE));
        assert_eq!(
            panicking_gradient(&segnet, [360, 480], 8, 4, &LAVAPIPE),
            None
        );
        // With width 3 the second convolution reads 27 rows too, and is the one named.
        let wider = segnet.with_width(3);
        let matrix = panicking_gradient(&wider, [360, 480], 8, 4, &LAVAPIPE).expect("27 rows");
        assert_eq!((matrix.layer, matrix.rows), (1, 27));
    }

    #[test]
    fn a_batch_that_does_not_fit_is_split_evenly() {
        let config = segnet_basic(2);
        let plan = plan_step(&config, [360, 480], 4, 4, Some(LAVAPIPE), None).unwrap();
        // 3 images fit (518400 columns); two micro-batches of 2 rather than 3 + 1. The first
        // matrix past the limits is the last decoder convolution's (the 8th: full resolution, 2
        // channels in, 98 x 4*360*480 f32 = 270950400 bytes); the 2nd, at half resolution, takes
        // 98 x 172800 f32 = 67.7 MB and 172800 columns, inside both limits.
        assert_eq!(plan.micro_batch, 2);
        assert_eq!(plan.micro_batches(), [(0, 2), (2, 2)]);
        let announcement = plan.announcement().expect("a split is said");
        assert!(
            announcement.starts_with(
                "micro-batches of 2 images, their gradients summed into each step of 4: the \
                 input gradient of convolution 8 (2 -> 2 channels, 7x7, 360 x 480)"
            ) && announcement.contains("(134217728 bytes), over the 524280 columns"),
            "{announcement}"
        );
        let cause = plan.cause.expect("split for a reason").matrix;
        assert_eq!((cause.images, cause.rows, cause.columns), (4, 98, 691_200));

        // 7 images: at most 3 at a time, taken as 3, 2 and 2.
        let plan = plan_step(&config, [360, 480], 7, 4, Some(LAVAPIPE), None).unwrap();
        assert_eq!(plan.micro_batch, 3);
        assert_eq!(plan.micro_batches(), [(0, 3), (3, 2), (5, 2)]);
    }

    #[test]
    fn micro_batches_are_as_even_as_they_can_be() {
        assert_eq!(even_parts(7, 3), [(0, 3), (3, 2), (5, 2)]);
        assert_eq!(even_parts(4, 3), [(0, 2), (2, 2)]);
        assert_eq!(even_parts(4, 4), [(0, 4)]);
        assert_eq!(even_parts(5, 1).len(), 5);
        for total in 1..40 {
            for most in 1..=total {
                let parts = even_parts(total, most);
                // Contiguous, covering the total, none over `most`, no two differing by more
                // than one, and no fewer parts would do.
                assert_eq!(parts.iter().map(|&(_, len)| len).sum::<usize>(), total);
                assert!(parts.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
                let longest = parts.iter().map(|&(_, len)| len).max().unwrap();
                let shortest = parts.iter().map(|&(_, len)| len).min().unwrap();
                assert!(
                    longest <= most && longest - shortest <= 1,
                    "{total} by {most}"
                );
                assert_eq!(parts.len(), total.div_ceil(most), "{total} by {most}");
            }
        }
    }

    #[test]
    fn what_fits_is_not_split() {
        let config = segnet_basic(64);
        let fits = StepPlan {
            batch: 4,
            micro_batch: 4,
            cause: None,
        };
        assert_eq!(
            plan_step(&config, [360, 480], 4, 4, None, None),
            Ok(fits.clone())
        );
        assert_eq!(fits.announcement(), None);
        let small = plan_step(&config, [64, 64], 8, 4, Some(LAVAPIPE), None).unwrap();
        assert_eq!(small.micro_batch, 8);
        let asked = plan_step(&config, [64, 64], 8, 4, Some(LAVAPIPE), Some(3)).unwrap();
        assert_eq!(asked.micro_batch, 3);
        let announcement = asked.announcement().expect("a split is said");
        assert!(
            announcement.starts_with("micro-batches of 3 images, their gradients summed into each step of 8 (--micro-batch)"),
            "{announcement}"
        );
    }

    #[test]
    fn a_micro_batch_asked_for_that_does_not_fit_is_refused_with_what_fits() {
        let error = plan_step(&segnet_basic(2), [360, 480], 4, 4, Some(LAVAPIPE), Some(4))
            .expect_err("4 images panic");
        assert_eq!(error.largest_micro_batch, 3);
        let message = error.to_string();
        for part in [
            "134217728 bytes",
            "98 x 691200 = 270950400 bytes",
            "--micro-batch 3",
            "--size",
            "--device cpu",
        ] {
            assert!(message.contains(part), "{part:?} not in {message}");
        }
    }

    #[test]
    fn where_one_image_does_not_fit_the_step_is_refused() {
        // One 1024 x 1024 image: 1048576 columns; width 64 gives 3136 rows, 13 GB.
        let error = plan_step(&segnet_basic(64), [1024, 1024], 2, 4, Some(LAVAPIPE), None)
            .expect_err("not even one image fits");
        assert_eq!(error.largest_micro_batch, 0);
        // Width w: 49 w rows x 1048576 columns x 4 bytes is 205 MB at w = 1: no width fits.
        assert_eq!(error.largest_width, 0);
        assert!(error.to_string().contains("Not even one image fits"));
        // At 1024 x 512 one image has 524288 columns (past 524280): width 8 (392 rows) is past
        // 128 MiB, width 1 (49 rows, 102760448 bytes) within it.
        let error = plan_step(&segnet_basic(8), [1024, 512], 1, 4, Some(LAVAPIPE), None)
            .expect_err("width 8: 392 rows");
        assert_eq!(error.largest_width, 1);
        assert!(error.to_string().contains("--width 1 or less"));
    }
}
