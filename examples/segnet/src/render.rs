//! Prediction images: input, ground truth and prediction side by side, with captions and a legend.

use font8x8::{BASIC_FONTS, UnicodeFonts};
use image::{GrayImage, Rgb, RgbImage, imageops};

use crate::data::{ClassInfo, IGNORE};

const MARGIN: u32 = 8;
const CAPTION: u32 = 16;
const BACKGROUND: Rgb<u8> = Rgb([255, 255, 255]);
const INK: Rgb<u8> = Rgb([20, 20, 20]);
/// Colour of unlabelled pixels.
const VOID: [u8; 3] = [0, 0, 0];

/// A label map in the classes' colours (black where unlabelled).
pub fn colorize(labels: &GrayImage, classes: &[ClassInfo]) -> RgbImage {
    RgbImage::from_fn(labels.width(), labels.height(), |x, y| {
        let label = labels.get_pixel(x, y)[0];
        Rgb(match label {
            IGNORE => VOID,
            l => classes.get(usize::from(l)).map_or(VOID, |c| c.color),
        })
    })
}

/// One row: `input | ground truth | prediction`, each scaled by a whole factor to at least 192
/// pixels wide (nearest neighbour, so pixels stay visible), under captions.
pub fn panel(
    image: &RgbImage,
    truth: Option<&GrayImage>,
    prediction: &GrayImage,
    classes: &[ClassInfo],
) -> RgbImage {
    let scale = 192u32.div_ceil(image.width()).max(1);
    let (w, h) = (image.width() * scale, image.height() * scale);
    let mut tiles = vec![("input", image.clone())];
    if let Some(truth) = truth {
        tiles.push(("ground truth", colorize(truth, classes)));
    }
    tiles.push(("prediction", colorize(prediction, classes)));

    let n = tiles.len() as u32;
    let mut out = RgbImage::from_pixel(MARGIN + n * (w + MARGIN), CAPTION + h + MARGIN, BACKGROUND);
    for (i, (caption, tile)) in tiles.into_iter().enumerate() {
        let x = MARGIN + i as u32 * (w + MARGIN);
        draw_text(&mut out, caption, x, 4, INK);
        let tile = imageops::resize(&tile, w, h, imageops::FilterType::Nearest);
        imageops::replace(&mut out, &tile, i64::from(x), i64::from(CAPTION));
    }
    out
}

/// A legend strip: a swatch and the name of every class, wrapped to `width`.
pub fn legend(classes: &[ClassInfo], width: u32) -> RgbImage {
    let entries: Vec<(u32, &ClassInfo)> = classes
        .iter()
        .map(|c| (12 + 4 + 8 * c.name.len() as u32 + 12, c))
        .collect();
    let mut rows = 1;
    let mut x = MARGIN;
    for (w, _) in &entries {
        if x + w > width && x > MARGIN {
            rows += 1;
            x = MARGIN;
        }
        x += w;
    }
    let mut out = RgbImage::from_pixel(width, rows * 16 + MARGIN, BACKGROUND);
    let (mut x, mut y) = (MARGIN, 4);
    for (w, class) in entries {
        if x + w > width && x > MARGIN {
            x = MARGIN;
            y += 16;
        }
        for dy in 0..10 {
            for dx in 0..12 {
                out.put_pixel(x + dx, y + dy, Rgb(class.color));
            }
        }
        draw_text(&mut out, class.name, x + 16, y + 1, INK);
        x += w;
    }
    out
}

/// Panels stacked top to bottom, then the legend.
pub fn sheet(panels: &[RgbImage], classes: &[ClassInfo]) -> RgbImage {
    let width = panels.iter().map(RgbImage::width).max().unwrap_or(256);
    let legend = legend(classes, width);
    let height = panels.iter().map(RgbImage::height).sum::<u32>() + legend.height();
    let mut out = RgbImage::from_pixel(width, height, BACKGROUND);
    let mut y = 0;
    for panel in panels.iter().chain(std::iter::once(&legend)) {
        imageops::replace(&mut out, panel, 0, i64::from(y));
        y += panel.height();
    }
    out
}

/// Writes `text` in an 8x8 bitmap font with its top-left corner at `(x, y)`; clipped at the edges.
pub(crate) fn draw_text(image: &mut RgbImage, text: &str, x: u32, y: u32, color: Rgb<u8>) {
    for (i, ch) in text.chars().enumerate() {
        let Some(glyph) = BASIC_FONTS.get(ch) else {
            continue;
        };
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8 {
                let (px, py) = (x + 8 * i as u32 + col, y + row as u32);
                if bits >> col & 1 == 1 && px < image.width() && py < image.height() {
                    image.put_pixel(px, py, color);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLASSES: [ClassInfo; 2] = [
        ClassInfo {
            name: "a",
            color: [1, 2, 3],
        },
        ClassInfo {
            name: "b",
            color: [4, 5, 6],
        },
    ];

    #[test]
    fn colorize_uses_class_colours_and_black_for_ignored() {
        let labels = GrayImage::from_raw(3, 1, vec![0, 1, IGNORE]).unwrap();
        let rgb = colorize(&labels, &CLASSES);
        assert_eq!(rgb.as_raw(), &vec![1, 2, 3, 4, 5, 6, 0, 0, 0]);
    }

    #[test]
    fn panel_places_scaled_tiles_side_by_side() {
        let image = RgbImage::from_pixel(64, 32, Rgb([9, 9, 9]));
        let labels = GrayImage::from_pixel(64, 32, image::Luma([1]));
        let out = panel(&image, Some(&labels), &labels, &CLASSES);
        // 64 px scaled by 3 = 192 wide, three tiles with margins.
        assert_eq!(
            out.dimensions(),
            (MARGIN + 3 * (192 + MARGIN), CAPTION + 96 + MARGIN)
        );
        assert_eq!(out.get_pixel(MARGIN + 10, CAPTION + 10), &Rgb([9, 9, 9]));
        assert_eq!(
            out.get_pixel(MARGIN + 192 + MARGIN + 10, CAPTION + 10),
            &Rgb([4, 5, 6])
        );
        // Captions draw ink above the tiles.
        assert!((0..CAPTION).any(|y| (MARGIN..MARGIN + 40).any(|x| out.get_pixel(x, y) == &INK)));
    }
}
