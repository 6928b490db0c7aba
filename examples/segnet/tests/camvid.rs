//! The CamVid-layout loader, on a small set this test writes itself.

use std::path::Path;

use burn::data::dataset::Dataset;
use image::{GrayImage, Luma, Rgb, RgbImage};
use segnet::data::{CAMVID_CLASSES, CamVidDataset, IGNORE};

fn write_pair(
    root: &Path,
    split: &str,
    name: &str,
    image: &RgbImage,
    labels: &image::DynamicImage,
) {
    std::fs::create_dir_all(root.join(split)).unwrap();
    std::fs::create_dir_all(root.join(format!("{split}annot"))).unwrap();
    image.save(root.join(split).join(name)).unwrap();
    labels
        .save(root.join(format!("{split}annot")).join(name))
        .unwrap();
}

fn gradient(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| Rgb([(10 * x) as u8, (20 * y) as u8, 7]))
}

#[test]
fn reads_grey_and_palette_labels_with_the_ignore_label() {
    let dir = tempfile::tempdir().unwrap();
    // a.png: grey labels 0..=10 and the ignore label 11.
    let grey = GrayImage::from_fn(4, 3, |x, y| Luma([((y * 4 + x) % 12) as u8]));
    write_pair(
        dir.path(),
        "train",
        "a.png",
        &gradient(4, 3),
        &grey.clone().into(),
    );
    // b.png: RGB labels in the CamVid palette, one pixel in a colour outside it.
    let mut palette = RgbImage::from_fn(4, 3, |x, _| Rgb(CAMVID_CLASSES[x as usize + 3].color));
    palette.put_pixel(0, 2, Rgb([1, 2, 3]));
    write_pair(
        dir.path(),
        "train",
        "b.png",
        &gradient(4, 3),
        &palette.into(),
    );

    let data = CamVidDataset::open(dir.path(), "train", 11).unwrap();
    assert_eq!(data.len(), 2);

    let a = data.get(0).unwrap();
    assert_eq!(a.image, gradient(4, 3));
    let expected: Vec<u8> = (0..12)
        .map(|i| if i == 11 { IGNORE } else { i as u8 })
        .collect();
    assert_eq!(a.labels.as_raw(), &expected);

    let b = data.get(1).unwrap();
    let mut expected: Vec<u8> = (0..3).flat_map(|_| 3..7u8).collect();
    expected[8] = IGNORE;
    assert_eq!(b.labels.as_raw(), &expected);
}

#[test]
fn resizes_images_smoothly_and_labels_by_nearest() {
    let dir = tempfile::tempdir().unwrap();
    let labels = GrayImage::from_fn(8, 4, |x, _| Luma([if x < 4 { 1 } else { 2 }]));
    write_pair(dir.path(), "val", "c.png", &gradient(8, 4), &labels.into());
    let item = CamVidDataset::open(dir.path(), "val", 11)
        .unwrap()
        .with_resize(4, 2)
        .read(0)
        .unwrap();
    assert_eq!(item.image.dimensions(), (4, 2));
    assert_eq!(item.labels.as_raw(), &vec![1, 1, 2, 2, 1, 1, 2, 2]);
}

#[test]
fn errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    let missing = CamVidDataset::open(root, "test", 11)
        .unwrap_err()
        .to_string();
    assert!(
        missing.starts_with("cannot read") && missing.contains("test"),
        "{missing}"
    );

    // A label map with a label outside the classes, and one of another size than its image.
    let read_error = |split: &str, labels: GrayImage| {
        write_pair(root, split, "a.png", &gradient(4, 3), &labels.into());
        let data = CamVidDataset::open(root, split, 11).unwrap();
        data.read(0).unwrap_err().to_string()
    };
    let bad = read_error("train", GrayImage::from_pixel(4, 3, Luma([12])));
    assert!(
        bad.contains("label 12 is neither a class (0..11) nor the ignore label 11"),
        "{bad}"
    );
    let size = read_error("val", GrayImage::new(5, 3));
    assert!(
        size.contains("image is 4 x 3 but its label map is 5 x 3"),
        "{size}"
    );

    gradient(4, 3)
        .save(root.join("train").join("lonely.png"))
        .unwrap();
    let lonely = CamVidDataset::open(root, "train", 11)
        .unwrap_err()
        .to_string();
    assert!(lonely.contains("no label map for lonely.png"), "{lonely}");
}
