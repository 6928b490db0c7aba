//! What a run is configured with (saved beside its results) and where it writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::config::Config;
use burn::data::dataset::Dataset;

use crate::data::{
    CAMVID_CLASSES, CamVidDataset, CamVidError, ClassInfo, SYNTHETIC_CLASSES, SegmentationItem,
    Split, SyntheticScenes,
};
use crate::model::SegNetConfig;

/// Where the images come from.
#[derive(Config, Debug)]
pub struct DataConfig {
    /// A CamVid-layout folder; `None` for the built-in synthetic scenes.
    #[config(default = "None")]
    pub camvid: Option<PathBuf>,
    /// CamVid: the grey label value of unlabelled pixels.
    #[config(default = 11)]
    pub ignore_label: u8,
    /// CamVid: scale images to `[width, height]` (`None` keeps 480 x 360).
    #[config(default = "None")]
    pub resize: Option<[u32; 2]>,
    /// Synthetic: the scenes' height in pixels, and their width unless `image_width` says.
    #[config(default = 64)]
    pub image_size: usize,
    /// Synthetic: the scenes' width where it differs from their height (`None`: square scenes).
    #[config(default = "None")]
    pub image_width: Option<usize>,
    /// Synthetic: scenes per split (train, validation, held-out test).
    #[config(default = "[1600, 160, 320]")]
    pub scenes: [usize; 3],
    /// Synthetic: the seed every scene derives from.
    #[config(default = 42)]
    pub seed: u64,
}

/// A split of the data, behind one type whatever its source.
pub type SplitData = Arc<dyn Dataset<SegmentationItem>>;

impl DataConfig {
    /// The classes the data is labelled with.
    pub fn classes(&self) -> &'static [ClassInfo] {
        match self.camvid {
            Some(_) => &CAMVID_CLASSES,
            None => &SYNTHETIC_CLASSES,
        }
    }

    /// The synthetic scenes' `[height, width]`.
    pub fn scene_size(&self) -> [usize; 2] {
        [self.image_size, self.image_width.unwrap_or(self.image_size)]
    }

    /// One split (`val` in the CamVid folder for [`Split::Valid`]).
    pub fn split(&self, split: Split) -> Result<SplitData, CamVidError> {
        match &self.camvid {
            Some(root) => {
                let name = match split {
                    Split::Train => "train",
                    Split::Valid => "val",
                    Split::Test => "test",
                };
                let mut data = CamVidDataset::open(root, name, self.ignore_label)?;
                if let Some([w, h]) = self.resize {
                    data = data.with_resize(w, h);
                }
                Ok(Arc::new(data))
            }
            None => {
                let len = self.scenes[split as usize];
                Ok(Arc::new(SyntheticScenes::with_size(
                    split,
                    len,
                    self.scene_size(),
                    self.seed,
                )))
            }
        }
    }
}

/// How the loss weighs the classes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
pub enum ClassWeighting {
    /// Median frequency balancing for CamVid (as the paper), none for the synthetic scenes: there
    /// the background, weighted 0.09, bled into the shapes (held-out mean IoU 0.78, against 0.9
    /// unweighted; see the README).
    #[value(name = "auto")]
    Auto,
    /// `median(freq) / freq(c)`, as the SegNet paper: rare classes count more.
    #[value(name = "median")]
    MedianFrequency,
    /// Every labelled pixel counts the same.
    #[value(name = "none")]
    None,
}

impl ClassWeighting {
    /// What [`Auto`](Self::Auto) means for `data`; the others as they are.
    pub fn resolve(self, data: &DataConfig) -> Self {
        match (self, &data.camvid) {
            (Self::Auto, Some(_)) => Self::MedianFrequency,
            (Self::Auto, None) => Self::None,
            (other, _) => other,
        }
    }
}

/// Everything a training run is configured with.
#[derive(Config, Debug)]
pub struct ExperimentConfig {
    /// The network.
    pub model: SegNetConfig,
    /// The data.
    pub data: DataConfig,
    /// Passes over the training split.
    #[config(default = 12)]
    pub epochs: usize,
    /// Images per step.
    #[config(default = 8)]
    pub batch_size: usize,
    /// Adam's initial learning rate (cosine-annealed to 1 % of it over the run).
    #[config(default = 3e-3)]
    pub learning_rate: f64,
    /// Seed of the weights and the shuffling.
    #[config(default = 42)]
    pub seed: u64,
    /// Class weights of the loss.
    #[config(default = "ClassWeighting::Auto")]
    pub class_weighting: ClassWeighting,
    /// Images per gradient computation within a step, summed into the step's gradient (`None`:
    /// the whole batch, or what fits the device; see [`crate::fit`]).
    #[config(default = "None")]
    pub micro_batch: Option<usize>,
    /// Threads preparing batches.
    #[config(default = 2)]
    pub workers: usize,
}

impl ExperimentConfig {
    /// The example's default run: SegNet-Basic on the built-in synthetic scenes, at width 16
    /// rather than the paper's 64 so that it trains in minutes on two CPU cores. Every other
    /// value is the configs' own default; the command line's defaults are these.
    pub fn default_run() -> Self {
        let data = DataConfig::new();
        let model = SegNetConfig::new(data.classes().len()).with_width(16);
        Self::new(model, data)
    }
}

/// The files of a run, all under one folder.
#[derive(Clone, Debug)]
pub struct Artifacts {
    dir: PathBuf,
}

impl Artifacts {
    /// The run stored in `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run's [`ExperimentConfig`].
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// The trained network's weights (burnpack).
    pub fn model(&self) -> PathBuf {
        self.dir.join("model.bpk")
    }

    /// Per-epoch checkpoints of burn-train (model, optimizer and scheduler).
    pub fn checkpoints(&self) -> PathBuf {
        self.dir.join("checkpoint")
    }

    /// Prediction images.
    pub fn predictions(&self) -> PathBuf {
        self.dir.join("predictions")
    }

    /// The last epoch with a complete checkpoint, if any.
    pub fn last_checkpoint(&self) -> Option<usize> {
        let entries = std::fs::read_dir(self.checkpoints()).ok()?;
        let epochs: Vec<usize> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|name| {
                name.strip_prefix("model-")?
                    .strip_suffix(".bpk")?
                    .parse()
                    .ok()
            })
            .collect();
        epochs
            .into_iter()
            .filter(|epoch| {
                ["optim", "scheduler"].iter().all(|part| {
                    self.checkpoints()
                        .join(format!("{part}-{epoch}.bpk"))
                        .is_file()
                })
            })
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_weighting_is_median_for_camvid_and_none_for_synthetic_scenes() {
        let synthetic = DataConfig::new();
        let camvid = DataConfig::new().with_camvid(Some("CamVid".into()));
        assert_eq!(
            ClassWeighting::Auto.resolve(&synthetic),
            ClassWeighting::None
        );
        assert_eq!(
            ClassWeighting::Auto.resolve(&camvid),
            ClassWeighting::MedianFrequency
        );
        assert_eq!(
            ClassWeighting::MedianFrequency.resolve(&synthetic),
            ClassWeighting::MedianFrequency
        );
        assert_eq!(ClassWeighting::None.resolve(&camvid), ClassWeighting::None);
    }
}
