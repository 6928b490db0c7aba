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

/// A CamVid-layout folder as the SegNet tutorial ships it (`train/`, `trainannot/`, `val/`, ...),
/// with grey and palette labels, runs end to end: the paper's median-frequency weights come out
/// as worked by hand, and a run trains, plots and evaluates on it, as a user pointing `--camvid`
/// at the real set would.
#[test]
fn a_camvid_folder_trains_with_median_frequency_weights() {
    use segnet::data::{Split, class_frequencies, median_frequency_weights};
    use segnet::experiment::{Artifacts, ClassWeighting, DataConfig, ExperimentConfig};
    use segnet::model::{Architecture, SegNetConfig};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("CamVid");
    // a: 6 pixels of class 0 (sky), 2 of class 1 (building), as grey labels.
    let a = GrayImage::from_fn(4, 2, |x, y| Luma([u8::from(y == 1 && x >= 2)]));
    // b: 4 pixels of class 0 and 4 of class 2 (pole), in the palette.
    let b = RgbImage::from_fn(4, 2, |x, _| {
        Rgb(CAMVID_CLASSES[if x < 2 { 0 } else { 2 }].color)
    });
    for split in ["train", "val", "test"] {
        write_pair(&root, split, "a.png", &gradient(4, 2), &a.clone().into());
        write_pair(&root, split, "b.png", &gradient(4, 2), &b.clone().into());
    }
    let data = DataConfig::new().with_camvid(Some(root.clone()));
    let train = data.split(Split::Train).unwrap();
    let items: Vec<_> = (0..train.len()).map(|i| train.get(i).unwrap()).collect();
    let frequencies = class_frequencies(&items, CAMVID_CLASSES.len());
    // freq(c) = pixels of c / pixels of the images holding c: 10/16, 2/8, 4/8; the rest absent.
    assert_eq!(&frequencies[..3], &[0.625, 0.25, 0.5]);
    assert!(frequencies[3..].iter().all(|&f| f == 0.0));
    // Median of the present ones: 0.5; weight = median / freq, 0 for absent classes.
    let weights = median_frequency_weights(&frequencies);
    assert_eq!(&weights[..3], &[0.8, 2.0, 1.0]);
    assert!(weights[3..].iter().all(|&w| w == 0.0));
    assert_eq!(
        ClassWeighting::Auto.resolve(&data),
        ClassWeighting::MedianFrequency
    );

    let model = SegNetConfig::new(CAMVID_CLASSES.len())
        .with_architecture(Architecture::SegNetBasic)
        .with_width(4);
    let config = ExperimentConfig::new(model, data)
        .with_epochs(2)
        .with_batch_size(2)
        .with_workers(0);
    let artifacts = Artifacts::new(dir.path().join("run"));
    let device = burn::tensor::Device::flex();
    let net =
        segnet::run::train(&config, &artifacts, std::slice::from_ref(&device), false).unwrap();
    assert!(artifacts.dir().join("training.png").is_file());
    let test = config.data.split(Split::Test).unwrap();
    let matrix = segnet::run::evaluate(&net, &test, CAMVID_CLASSES.len(), 2, &device).unwrap();
    assert_eq!(
        matrix.total(),
        16,
        "every labelled test pixel is counted once"
    );
}
