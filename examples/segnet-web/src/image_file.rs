//! An image file's bytes as the network's RGB pixels, by the same code in the page and natively:
//! the page hands the file's bytes to the module instead of drawing them on a canvas, which keeps
//! premultiplied pixels (a transparent pixel would come back black) and converts 16-bit samples by
//! its own rounding.

use image::RgbImage;

/// The pixels of a PNG or JPEG file, in RGB with 8 bits a sample.
///
/// Transparency is dropped and the colours are kept: a pixel counts with the colour the file
/// stores for it, whatever its alpha (the network was trained on opaque scenes, and no background
/// is more right than another). A 16-bit sample `v` becomes the nearest 8-bit one,
/// `(v + 128) / 257` in whole numbers (the `image` crate's rule). Grey images become grey RGB.
///
/// # Errors
/// Where the bytes are not a PNG or JPEG file, or it cannot be decoded.
pub fn decode(bytes: &[u8]) -> Result<RgbImage, String> {
    let image = image::load_from_memory(bytes).map_err(|e| match e {
        image::ImageError::Unsupported(_) => {
            format!("not a PNG or JPEG image: {e}")
        }
        _ => format!("a PNG or JPEG file that does not decode: {e}"),
    })?;
    Ok(image.into_rgb8())
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageBuffer, ImageFormat, Rgb, Rgba};

    fn encoded<P: image::PixelWithColorType>(
        image: &ImageBuffer<P, Vec<P::Subpixel>>,
        format: ImageFormat,
    ) -> Vec<u8>
    where
        [P::Subpixel]: image::EncodableLayout,
    {
        let mut bytes = std::io::Cursor::new(Vec::new());
        image.write_to(&mut bytes, format).unwrap();
        bytes.into_inner()
    }

    /// Alpha 0, 128 and 255 over three colours: the colours come back as stored.
    #[test]
    fn transparency_is_dropped_and_the_colours_kept() {
        let pixels: [[u8; 4]; 3] = [[200, 10, 30, 0], [5, 250, 90, 128], [70, 80, 90, 255]];
        let image = ImageBuffer::from_fn(3, 1, |x, _| Rgba(pixels[x as usize]));
        let decoded = decode(&encoded(&image, ImageFormat::Png)).unwrap();
        let colours: Vec<[u8; 3]> = decoded.pixels().map(|p| p.0).collect();
        assert_eq!(colours, [[200, 10, 30], [5, 250, 90], [70, 80, 90]]);
    }

    /// 16-bit samples worked by hand: round(v / 257), where taking the high byte (v >> 8) would
    /// give 0 for 255 and 255 for 65280.
    #[test]
    fn sixteen_bit_samples_round_to_the_nearest_eight_bit_one() {
        let samples: [u16; 6] = [0, 128, 255, 32896, 65280, 65535];
        let rounded: [u8; 6] = [0, 0, 1, 128, 254, 255];
        let image = ImageBuffer::from_fn(6, 1, |x, _| Rgb([samples[x as usize]; 3]));
        let decoded = decode(&encoded(&image, ImageFormat::Png)).unwrap();
        let values: Vec<u8> = decoded.pixels().map(|p| p.0[0]).collect();
        assert_eq!(values, rounded);
        assert!(
            decoded
                .pixels()
                .all(|p| p.0[0] == p.0[1] && p.0[1] == p.0[2])
        );
    }

    /// A JPEG reads back near what was encoded (it is lossy): a flat colour within a few levels.
    #[test]
    fn jpeg_is_read() {
        let image = RgbImage::from_pixel(16, 16, Rgb([40, 120, 200]));
        let decoded = decode(&encoded(&image, ImageFormat::Jpeg)).unwrap();
        assert_eq!(decoded.dimensions(), (16, 16));
        for p in decoded.pixels() {
            for (got, want) in p.0.iter().zip([40u8, 120, 200]) {
                assert!(got.abs_diff(want) <= 3, "{:?}", p.0);
            }
        }
    }

    #[test]
    fn other_bytes_are_refused() {
        let error = decode(b"not a picture").unwrap_err();
        assert!(error.starts_with("not a PNG or JPEG image"), "{error}");
        let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";
        let error = decode(gif).unwrap_err();
        assert!(error.contains("PNG or JPEG"), "{error}");
        let truncated = &encoded(&RgbImage::new(8, 8), ImageFormat::Png)[..40];
        let error = decode(truncated).unwrap_err();
        assert!(
            error.starts_with("a PNG or JPEG file that does not decode"),
            "{error}"
        );
    }
}
