//! Real data in the CamVid layout of the SegNet tutorial: `<root>/<split>/*.png` images and
//! `<root>/<split>annot/*.png` label maps of the same file names.
//!
//! Label maps are either grey (the class index per pixel, `ignore_label` for unlabelled pixels) or
//! RGB in the CamVid palette ([`CAMVID_CLASSES`]; colours outside it are unlabelled).

use std::fmt;
use std::path::{Path, PathBuf};

use burn::data::dataset::{Dataset, DatasetError};
use image::{DynamicImage, GrayImage, Luma, imageops::FilterType};

use super::{ClassInfo, IGNORE, SegmentationItem};

/// The 11 CamVid classes SegNet is trained on, in label order, with the dataset's colours.
pub const CAMVID_CLASSES: [ClassInfo; 11] = [
    ClassInfo::new("sky", [128, 128, 128]),
    ClassInfo::new("building", [128, 0, 0]),
    ClassInfo::new("pole", [192, 192, 128]),
    ClassInfo::new("road", [128, 64, 128]),
    ClassInfo::new("pavement", [60, 40, 222]),
    ClassInfo::new("tree", [128, 128, 0]),
    ClassInfo::new("sign", [192, 128, 128]),
    ClassInfo::new("fence", [64, 64, 128]),
    ClassInfo::new("car", [64, 0, 128]),
    ClassInfo::new("pedestrian", [64, 64, 0]),
    ClassInfo::new("bicyclist", [0, 128, 192]),
];

/// Why a CamVid folder could not be read.
#[derive(Debug)]
pub enum CamVidError {
    /// A folder or file could not be read.
    Io(PathBuf, std::io::Error),
    /// A PNG could not be decoded.
    Image(PathBuf, image::ImageError),
    /// An image without a label map of the same name.
    MissingLabels(PathBuf),
    /// The split folder holds no images.
    Empty(PathBuf),
    /// Image and label map differ in size.
    SizeMismatch {
        image: PathBuf,
        image_size: (u32, u32),
        label_size: (u32, u32),
    },
    /// A grey label map holds a value that is neither a class nor the ignore label.
    BadLabel {
        path: PathBuf,
        value: u8,
        num_classes: usize,
        ignore_label: u8,
    },
}

impl fmt::Display for CamVidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            Self::Image(path, e) => write!(f, "cannot decode {}: {e}", path.display()),
            Self::MissingLabels(path) => write!(
                f,
                "no label map for {} (expected {})",
                path.file_name().unwrap_or_default().to_string_lossy(),
                path.display()
            ),
            Self::Empty(path) => write!(f, "no .png images in {}", path.display()),
            Self::SizeMismatch {
                image,
                image_size,
                label_size,
            } => write!(
                f,
                "{}: image is {} x {} but its label map is {} x {}",
                image.display(),
                image_size.0,
                image_size.1,
                label_size.0,
                label_size.1
            ),
            Self::BadLabel {
                path,
                value,
                num_classes,
                ignore_label,
            } => write!(
                f,
                "{}: label {value} is neither a class (0..{num_classes}) nor the ignore label {ignore_label}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for CamVidError {}

/// One split of a CamVid-layout folder, read lazily (one image per `get`).
#[derive(Clone, Debug)]
pub struct CamVidDataset {
    pairs: Vec<(PathBuf, PathBuf)>,
    ignore_label: u8,
    resize: Option<(u32, u32)>,
}

impl CamVidDataset {
    /// The split `split` (`train`, `val` or `test`) of `root`. Pixels labelled `ignore_label` in a
    /// grey label map (11, "void", in the SegNet tutorial's files) are ignored.
    pub fn open(
        root: impl AsRef<Path>,
        split: &str,
        ignore_label: u8,
    ) -> Result<Self, CamVidError> {
        let images = root.as_ref().join(split);
        let annotations = root.as_ref().join(format!("{split}annot"));
        let entries = std::fs::read_dir(&images).map_err(|e| CamVidError::Io(images.clone(), e))?;
        let mut pairs = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| CamVidError::Io(images.clone(), e))?
                .path();
            if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("png"))
            {
                let labels = annotations.join(path.file_name().expect("a file"));
                if !labels.is_file() {
                    return Err(CamVidError::MissingLabels(labels));
                }
                pairs.push((path, labels));
            }
        }
        if pairs.is_empty() {
            return Err(CamVidError::Empty(images));
        }
        pairs.sort();
        Ok(Self {
            pairs,
            ignore_label,
            resize: None,
        })
    }

    /// Scale every image (bilinear) and label map (nearest) to `width x height`.
    pub fn with_resize(mut self, width: u32, height: u32) -> Self {
        self.resize = Some((width, height));
        self
    }

    /// Reads pair `index`.
    pub fn read(&self, index: usize) -> Result<SegmentationItem, CamVidError> {
        let (image_path, label_path) = &self.pairs[index];
        let open =
            |path: &PathBuf| image::open(path).map_err(|e| CamVidError::Image(path.clone(), e));
        let mut image = open(image_path)?.to_rgb8();
        let mut labels = self.labels(label_path, open(label_path)?)?;
        if image.dimensions() != labels.dimensions() {
            return Err(CamVidError::SizeMismatch {
                image: image_path.clone(),
                image_size: image.dimensions(),
                label_size: labels.dimensions(),
            });
        }
        if let Some((w, h)) = self.resize {
            image = image::imageops::resize(&image, w, h, FilterType::Triangle);
            labels = image::imageops::resize(&labels, w, h, FilterType::Nearest);
        }
        Ok(SegmentationItem { image, labels })
    }

    fn labels(&self, path: &Path, map: DynamicImage) -> Result<GrayImage, CamVidError> {
        let num_classes = CAMVID_CLASSES.len();
        match map {
            DynamicImage::ImageLuma8(grey) => {
                let mut labels = grey;
                for Luma([value]) in labels.pixels_mut() {
                    *value = match *value {
                        v if v == self.ignore_label => IGNORE,
                        v if usize::from(v) < num_classes => v,
                        v => {
                            return Err(CamVidError::BadLabel {
                                path: path.to_path_buf(),
                                value: v,
                                num_classes,
                                ignore_label: self.ignore_label,
                            });
                        }
                    };
                }
                Ok(labels)
            }
            colour => {
                let rgb = colour.to_rgb8();
                Ok(GrayImage::from_fn(rgb.width(), rgb.height(), |x, y| {
                    let pixel = rgb.get_pixel(x, y).0;
                    let class = CAMVID_CLASSES.iter().position(|c| c.color == pixel);
                    Luma([class.map_or(IGNORE, |c| c as u8)])
                }))
            }
        }
    }
}

impl Dataset<SegmentationItem> for CamVidDataset {
    fn get(&self, index: usize) -> Result<SegmentationItem, DatasetError> {
        self.read(index).map_err(DatasetError::new)
    }

    fn len(&self) -> usize {
        self.pairs.len()
    }
}
