//! The built-in dataset: procedurally generated scenes, so the example runs without a download.
//!
//! Each scene has a textured, noisy background and 2 to 5 shapes (discs, squares, triangles and
//! crosses) of random size, position, rotation and texture; later shapes cover earlier ones.
//! Like the classes of real street scenes (grey road, green trees, blue sky), each shape class has a
//! colour family: hues 60 degrees wide around 0, 90, 180 and 270 degrees, saturation 0.45 to 0.95,
//! brightness 0.55 to 1, plain or striped. The background is muted (saturation below 0.35), with a
//! gradient and waves; every pixel carries noise. What the network has to get right is where each
//! shape ends, where shapes cover each other, and what a striped or dim shape is.

use std::f32::consts::{PI, TAU};

#[cfg(feature = "train")]
use burn::data::dataset::{Dataset, DatasetError};
use image::{GrayImage, Rgb, RgbImage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{ClassInfo, SegmentationItem};

/// The classes of the synthetic scenes; index 0 is the background.
pub const SYNTHETIC_CLASSES: [ClassInfo; 5] = [
    ClassInfo::new("background", [40, 40, 40]),
    ClassInfo::new("disc", [230, 57, 70]),
    ClassInfo::new("square", [255, 183, 3]),
    ClassInfo::new("triangle", [42, 157, 143]),
    ClassInfo::new("cross", [69, 123, 237]),
];

/// Which part of the data: scenes of different splits never coincide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Scenes to learn from.
    Train,
    /// Scenes to pick checkpoints with.
    Valid,
    /// Held-out scenes for the final figures.
    Test,
}

/// `len` generated scenes of `height x width` pixels; scene `i` depends only on
/// `(seed, split, i)`.
#[derive(Clone, Debug)]
pub struct SyntheticScenes {
    split: Split,
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    len: usize,
    size: [usize; 2],
    seed: u64,
}

impl SyntheticScenes {
    /// The square scenes of `split`, `size x size` pixels.
    pub fn new(split: Split, len: usize, size: usize, seed: u64) -> Self {
        Self::with_size(split, len, [size, size], seed)
    }

    /// The scenes of `split`, `[height, width]` pixels (a square one is the scene of
    /// [`new`](Self::new)).
    pub fn with_size(split: Split, len: usize, size: [usize; 2], seed: u64) -> Self {
        let [height, width] = size;
        assert!(
            height >= 16 && width >= 16,
            "synthetic scenes need at least 16 x 16 pixels, got {height} x {width}"
        );
        Self {
            split,
            len,
            size,
            seed,
        }
    }

    /// `[height, width]` of every scene.
    pub fn size(&self) -> [usize; 2] {
        self.size
    }

    /// Scene `index` (also past `len`).
    pub fn scene(&self, index: usize) -> SegmentationItem {
        let split = match self.split {
            Split::Train => 1u64,
            Split::Valid => 2,
            Split::Test => 3,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(split << 48 | index as u64);
        render_scene(&mut rng, self.size)
    }
}

#[cfg(feature = "train")]
impl Dataset<SegmentationItem> for SyntheticScenes {
    fn get(&self, index: usize) -> Result<SegmentationItem, DatasetError> {
        assert!(index < self.len, "scene {index} of a split of {}", self.len);
        Ok(self.scene(index))
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// One shape: class, centre, circumradius, rotation, colour and stripes.
struct Shape {
    class: u8,
    center: [f32; 2],
    radius: f32,
    angle: f32,
    color: [f32; 3],
    stripes: Option<(f32, f32)>,
}

impl Shape {
    /// A shape in a scene of `[height, width]` pixels.
    fn random(rng: &mut ChaCha8Rng, [height, width]: [f32; 2]) -> Self {
        let class = rng.random_range(1..=4u8);
        // Hue families 90 degrees apart, each 60 degrees wide.
        let hue = (f32::from(class - 1) * 90.0 + rng.random_range(-30.0..30.0)).rem_euclid(360.0);
        let color = hsv(
            hue,
            rng.random_range(0.45..0.95),
            rng.random_range(0.55..1.0),
        );
        let stripes = rng
            .random_bool(0.4)
            .then(|| (rng.random_range(0.5..1.5), rng.random_range(0.0..PI)));
        Self {
            class,
            center: [
                rng.random_range(0.1..0.9) * width,
                rng.random_range(0.1..0.9) * height,
            ],
            radius: rng.random_range(0.09..0.22) * height.min(width),
            angle: rng.random_range(0.0..TAU),
            color,
            stripes,
        }
    }

    /// Whether the pixel centre `(x, y)` lies inside.
    fn contains(&self, x: f32, y: f32) -> bool {
        let (dx, dy) = (x - self.center[0], y - self.center[1]);
        let (sin, cos) = self.angle.sin_cos();
        let (u, v) = (cos * dx + sin * dy, -sin * dx + cos * dy);
        let r = self.radius;
        match self.class {
            1 => dx * dx + dy * dy <= r * r,
            2 => u.abs() <= 0.75 * r && v.abs() <= 0.75 * r,
            3 => (0..3).all(|k| {
                // Inside the three edges of an equilateral triangle with circumradius r.
                let a = self.angle + k as f32 * TAU / 3.0;
                dx * a.cos() + dy * a.sin() >= -0.5 * r
            }),
            _ => (u.abs() <= r && v.abs() <= 0.3 * r) || (v.abs() <= r && u.abs() <= 0.3 * r),
        }
    }

    fn color_at(&self, x: f32, y: f32) -> [f32; 3] {
        match self.stripes {
            Some((frequency, direction)) => {
                let t = (x * direction.cos() + y * direction.sin()) * frequency;
                let shade = 0.8 + 0.2 * t.sin();
                self.color.map(|c| c * shade)
            }
            None => self.color,
        }
    }
}

fn render_scene(rng: &mut ChaCha8Rng, [height, width]: [usize; 2]) -> SegmentationItem {
    let (h, w) = (height as f32, width as f32);
    // Background: a muted colour, a gradient and two sinusoidal textures.
    let base = hsv(
        rng.random_range(0.0..360.0),
        rng.random_range(0.0..0.35),
        rng.random_range(0.25..0.75),
    );
    let gradient: [f32; 2] = [rng.random_range(-0.3..0.3), rng.random_range(-0.3..0.3)];
    let waves: Vec<([f32; 2], f32, f32)> = (0..2)
        .map(|_| {
            let direction = rng.random_range(0.0..TAU);
            let frequency = rng.random_range(0.15..0.9);
            (
                [direction.cos() * frequency, direction.sin() * frequency],
                rng.random_range(0.0..TAU),
                rng.random_range(0.04..0.14),
            )
        })
        .collect();
    let shapes: Vec<Shape> = (0..rng.random_range(2..=5))
        .map(|_| Shape::random(rng, [h, w]))
        .collect();

    let mut image = RgbImage::new(width as u32, height as u32);
    let mut labels = GrayImage::new(width as u32, height as u32);
    for y in 0..height {
        for x in 0..width {
            let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
            let top = shapes.iter().rev().find(|shape| shape.contains(fx, fy));
            let (class, color) = match top {
                Some(shape) => (shape.class, shape.color_at(fx, fy)),
                None => {
                    let mut shade =
                        1.0 + gradient[0] * (fx / w - 0.5) + gradient[1] * (fy / h - 0.5);
                    for (k, phase, amplitude) in &waves {
                        shade += amplitude * (k[0] * fx + k[1] * fy + phase).sin();
                    }
                    (0, base.map(|c| c * shade))
                }
            };
            // Roughly Gaussian pixel noise (a sum of three uniforms), independent per channel.
            let pixel = color.map(|c| {
                let noise: f32 = (0..3).map(|_| rng.random_range(-1.0..1.0f32)).sum::<f32>() * 0.04;
                ((c + noise).clamp(0.0, 1.0) * 255.0).round() as u8
            });
            image.put_pixel(x as u32, y as u32, Rgb(pixel));
            labels.put_pixel(x as u32, y as u32, image::Luma([class]));
        }
    }
    SegmentationItem { image, labels }
}

/// HSV (hue in degrees) to RGB in `[0, 1]`.
fn hsv(hue: f32, saturation: f32, value: f32) -> [f32; 3] {
    let c = value * saturation;
    let h = hue / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = value - c;
    [r + m, g + m, b + m]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenes_are_reproducible_and_splits_differ() {
        let train = SyntheticScenes::new(Split::Train, 4, 32, 7);
        let again = SyntheticScenes::new(Split::Train, 4, 32, 7);
        let test = SyntheticScenes::new(Split::Test, 4, 32, 7);
        assert_eq!(train.scene(2).image, again.scene(2).image);
        assert_eq!(train.scene(2).labels, again.scene(2).labels);
        assert_ne!(train.scene(2).image, test.scene(2).image);
    }

    #[test]
    fn rectangular_scenes_have_their_size_and_shapes_in_both_directions() {
        let scenes = SyntheticScenes::with_size(Split::Train, 12, [24, 80], 3);
        assert_eq!(scenes.size(), [24, 80]);
        let (mut leftmost, mut rightmost) = (usize::MAX, 0);
        for i in 0..scenes.len() {
            let item = scenes.scene(i);
            assert_eq!(item.image.dimensions(), (80, 24));
            assert_eq!(item.labels.dimensions(), (80, 24));
            for (x, _, label) in item.labels.enumerate_pixels() {
                if label[0] != 0 {
                    leftmost = leftmost.min(x as usize);
                    rightmost = rightmost.max(x as usize);
                }
            }
        }
        // Centres span 10 % to 90 % of the width, not of the height.
        assert!(leftmost < 20 && rightmost > 60, "{leftmost}..{rightmost}");
    }

    /// Square scenes are the ones drawn before scenes could be rectangular: the FNV-1a hashes of
    /// their pixels and labels were recorded with the code of commit 2fb68f7 (its `render_scene`
    /// run alone, the same seeds and streams).
    #[test]
    fn square_scenes_are_the_scenes_drawn_before_rectangles() {
        let fnv = |bytes: &[u8], hash: u64| {
            bytes.iter().fold(hash, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        };
        for (split, index, size, seed, recorded) in [
            (Split::Train, 2, 32, 7, 0xa548_08f3_ff6c_18c4_u64),
            (Split::Test, 0, 48, 1, 0x5527_3a3e_329d_4bd1),
        ] {
            let item = SyntheticScenes::new(split, index + 1, size, seed).scene(index);
            let hash = fnv(
                item.labels.as_raw(),
                fnv(item.image.as_raw(), 0xcbf2_9ce4_8422_2325),
            );
            assert_eq!(
                hash, recorded,
                "{split:?} scene {index}, {size} x {size}, seed {seed}"
            );
        }
    }

    #[test]
    fn every_class_appears_and_labels_match_the_classes() {
        let scenes = SyntheticScenes::new(Split::Train, 40, 48, 1);
        let mut seen = [false; 5];
        for i in 0..scenes.len() {
            for &label in scenes.scene(i).labels.as_raw() {
                seen[usize::from(label)] = true;
            }
        }
        assert_eq!(seen, [true; 5]);
    }

    #[test]
    fn shapes_contain_their_centre_and_not_far_points() {
        for class in 1..=4 {
            let shape = Shape {
                class,
                center: [20.0, 20.0],
                radius: 8.0,
                angle: 0.3,
                color: [0.0; 3],
                stripes: None,
            };
            assert!(shape.contains(20.0, 20.0), "class {class}");
            assert!(!shape.contains(20.0 + 8.5, 20.0 + 8.5), "class {class}");
        }
    }

    #[test]
    fn hsv_primaries() {
        assert_eq!(hsv(0.0, 1.0, 1.0), [1.0, 0.0, 0.0]);
        assert_eq!(hsv(120.0, 1.0, 1.0), [0.0, 1.0, 0.0]);
        assert_eq!(hsv(240.0, 1.0, 0.5), [0.0, 0.0, 0.5]);
        assert_eq!(hsv(77.0, 0.0, 0.25), [0.25, 0.25, 0.25]);
    }
}
