//! `segnet`: train, evaluate and predict with SegNet / SegNet-Basic. Without a subcommand it trains
//! the default model on the built-in synthetic scenes, reports the held-out mean IoU and writes
//! prediction images.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use segnet::data::Split;
use segnet::device::DeviceChoice;
use segnet::experiment::{Artifacts, ClassWeighting, DataConfig, ExperimentConfig};
use segnet::model::{Architecture, SegNetConfig};
use segnet::run;

#[derive(Parser)]
#[command(
    version,
    about = "SegNet semantic segmentation on Burn, unpooling with burn-unpool"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model, then report its held-out metrics and write prediction images (the default).
    Train(TrainArgs),
    /// Report a trained model's pixel accuracy and IoU on a split.
    Eval(EvalArgs),
    /// Write prediction images of a trained model.
    Predict(PredictArgs),
}

#[derive(Args)]
struct Common {
    /// Folder of the run: config, checkpoints, weights, predictions.
    #[arg(long, default_value = "artifacts/segnet")]
    artifacts: PathBuf,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    device: DeviceChoice,
}

#[derive(Args)]
struct TrainArgs {
    #[command(flatten)]
    common: Common,
    /// Network: the paper's SegNet-Basic (4 stages of 7x7 convolutions) or SegNet (VGG16 encoder).
    #[arg(long, value_enum, default_value_t = Architecture::SegNetBasic)]
    arch: Architecture,
    /// Channels of the first stage (the paper uses 64; the default is narrower to train in minutes
    /// on two CPU cores).
    #[arg(long, default_value_t = 16)]
    width: usize,
    /// Passes over the training images.
    #[arg(long, default_value_t = 12)]
    epochs: usize,
    /// Images per step.
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    /// Adam's initial learning rate (cosine-annealed).
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Synthetic scenes: side in pixels.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Synthetic scenes: training, validation and held-out test counts.
    #[arg(long, num_args = 3, value_names = ["TRAIN", "VALID", "TEST"], default_values_t = [1600, 160, 320])]
    scenes: Vec<usize>,
    /// Train on a CamVid-layout folder (train/, trainannot/, val/, ...) instead of synthetic scenes.
    #[arg(long)]
    camvid: Option<PathBuf>,
    /// CamVid: scale images to WIDTH HEIGHT.
    #[arg(long, num_args = 2, value_names = ["WIDTH", "HEIGHT"])]
    resize: Option<Vec<u32>>,
    /// Class weights of the loss: median frequency balancing (as the paper), none, or auto (median
    /// for CamVid, none for the synthetic scenes).
    #[arg(long, value_enum, default_value_t = ClassWeighting::Auto)]
    class_weights: ClassWeighting,
    /// Seed of the weights, the shuffling and the synthetic scenes.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Continue from the last checkpoint in the artifacts folder (with its saved config).
    #[arg(long)]
    resume: bool,
    /// Prediction images to write after training.
    #[arg(long, default_value_t = 8)]
    predictions: usize,
}

#[derive(Args)]
struct EvalArgs {
    #[command(flatten)]
    common: Common,
    /// The split to evaluate.
    #[arg(long, value_enum, default_value = "test")]
    split: SplitArg,
}

#[derive(Args)]
struct PredictArgs {
    #[command(flatten)]
    common: Common,
    /// Segment the PNGs of this folder instead of the run's held-out split.
    #[arg(long)]
    images: Option<PathBuf>,
    /// Held-out images to segment.
    #[arg(long, default_value_t = 8)]
    count: usize,
    /// Output folder (default: <artifacts>/predictions).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SplitArg {
    Train,
    Valid,
    Test,
}

impl From<SplitArg> for Split {
    fn from(split: SplitArg) -> Self {
        match split {
            SplitArg::Train => Split::Train,
            SplitArg::Valid => Split::Valid,
            SplitArg::Test => Split::Test,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli
        .command
        .unwrap_or_else(|| Command::Train(TrainArgs::parse_defaults()));
    match execute(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

impl TrainArgs {
    fn parse_defaults() -> Self {
        #[derive(Parser)]
        struct Defaults {
            #[command(flatten)]
            args: TrainArgs,
        }
        Defaults::parse_from(["segnet"]).args
    }

    fn config(&self) -> ExperimentConfig {
        let data = DataConfig::new()
            .with_camvid(self.camvid.clone())
            .with_resize(self.resize.as_ref().map(|r| [r[0], r[1]]))
            .with_image_size(self.size)
            .with_scenes([self.scenes[0], self.scenes[1], self.scenes[2]])
            .with_seed(self.seed);
        let model = SegNetConfig::new(data.classes().len())
            .with_architecture(self.arch)
            .with_width(self.width);
        ExperimentConfig::new(model, data)
            .with_epochs(self.epochs)
            .with_batch_size(self.batch_size)
            .with_learning_rate(self.lr)
            .with_class_weighting(self.class_weights)
            .with_seed(self.seed)
    }
}

fn execute(command: Command) -> run::Result<()> {
    let start = Instant::now();
    match command {
        Command::Train(args) => {
            let artifacts = Artifacts::new(&args.common.artifacts);
            let device = args.common.device.device()?;
            let config = if args.resume && artifacts.config().is_file() {
                use burn::config::Config;
                ExperimentConfig::load(artifacts.config())?
            } else {
                args.config()
            };
            let net = run::train(&config, &artifacts, &device, args.resume)?;
            let classes = config.data.classes();
            let test = config.data.split(Split::Test)?;
            let matrix = run::evaluate(&net, &test, classes.len(), config.batch_size, &device)?;
            run::report(&matrix, classes, "held-out test split");
            run::predict_split(
                &net,
                &test,
                classes,
                args.predictions,
                &artifacts.predictions(),
                &device,
            )?;
            println!("done in {}", run::elapsed(start));
        }
        Command::Eval(args) => {
            let artifacts = Artifacts::new(&args.common.artifacts);
            let device = args.common.device.device()?;
            let (config, net) = run::load(&artifacts, &device)?;
            let classes = config.data.classes();
            let data = config.data.split(args.split.into())?;
            let matrix = run::evaluate(&net, &data, classes.len(), config.batch_size, &device)?;
            let name = format!("{:?} split", Split::from(args.split)).to_lowercase();
            run::report(&matrix, classes, &name);
        }
        Command::Predict(args) => {
            let artifacts = Artifacts::new(&args.common.artifacts);
            let device = args.common.device.device()?;
            let (config, net) = run::load(&artifacts, &device)?;
            let classes = config.data.classes();
            let out = args.out.unwrap_or_else(|| artifacts.predictions());
            match &args.images {
                Some(folder) => run::predict_folder(&net, folder, classes, &out, &device)?,
                None => run::predict_split(
                    &net,
                    &config.data.split(Split::Test)?,
                    classes,
                    args.count,
                    &out,
                    &device,
                )?,
            }
        }
    }
    Ok(())
}
