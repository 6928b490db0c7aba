//! `segnet`: train, evaluate and predict with SegNet / SegNet-Basic. Without a subcommand it trains
//! (the default run: SegNet-Basic on the built-in synthetic scenes), reports the held-out mean IoU
//! and writes prediction images.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use burn::config::Config;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use segnet::data::Split;
use segnet::device::DeviceChoice;
use segnet::experiment::{Artifacts, ClassWeighting, ExperimentConfig};
use segnet::model::Architecture;
use segnet::run;

#[derive(Parser)]
#[command(
    version,
    about = "SegNet semantic segmentation on Burn, unpooling with burn-unpool",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand: `train` with these options.
    #[command(flatten)]
    train: TrainArgs,
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

/// The training options. Those left out keep the default run's values
/// ([`ExperimentConfig::default_run`]), which `--help` shows.
#[derive(Args)]
struct TrainArgs {
    #[command(flatten)]
    common: Common,
    /// Network: the paper's SegNet-Basic (4 stages of 7x7 convolutions) or SegNet (VGG16 encoder).
    #[arg(long, value_enum)]
    arch: Option<Architecture>,
    /// Channels of the first stage (the paper uses 64).
    #[arg(long)]
    width: Option<usize>,
    /// Passes over the training images (with --resume: the new total).
    #[arg(long)]
    epochs: Option<usize>,
    /// Images per step.
    #[arg(long)]
    batch_size: Option<usize>,
    /// Take each step's gradients this many images at a time and sum them (gradient
    /// accumulation; batch norm then sees one micro-batch at a time). Without it, a GPU step
    /// whose tuned convolution gradients would not fit the device is split so that they do.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    micro_batch: Option<u64>,
    /// Adam's initial learning rate (cosine-annealed).
    #[arg(long)]
    lr: Option<f64>,
    /// Synthetic scenes: side in pixels, or HEIGHTxWIDTH (the paper's 360x480).
    #[arg(long, conflicts_with = "camvid", value_parser = scene_size)]
    size: Option<[usize; 2]>,
    /// Synthetic scenes: training, validation and held-out test counts.
    #[arg(long, num_args = 3, value_names = ["TRAIN", "VALID", "TEST"], conflicts_with = "camvid")]
    scenes: Option<Vec<usize>>,
    /// Synthetic scenes: the seed every scene derives from.
    #[arg(long, conflicts_with = "camvid")]
    data_seed: Option<u64>,
    /// Train on a CamVid-layout folder (train/, trainannot/, val/, ...) instead of synthetic scenes.
    #[arg(long)]
    camvid: Option<PathBuf>,
    /// CamVid: scale images to WIDTH HEIGHT.
    #[arg(long, num_args = 2, value_names = ["WIDTH", "HEIGHT"], requires = "camvid")]
    resize: Option<Vec<u32>>,
    /// Class weights of the loss: median frequency balancing (as the paper), none, or auto (median
    /// for CamVid, none for the synthetic scenes).
    #[arg(long, value_enum)]
    class_weights: Option<ClassWeighting>,
    /// Seed of the weights and the shuffling.
    #[arg(long)]
    seed: Option<u64>,
    /// Continue from the last checkpoint in the artifacts folder, with its saved config (only
    /// --epochs and --micro-batch may change it).
    #[arg(long, conflicts_with_all = [
        "arch", "width", "batch_size", "lr", "size", "scenes", "data_seed", "camvid", "resize",
        "class_weights", "seed",
    ])]
    resume: bool,
    /// Prediction images to write after training.
    #[arg(long, default_value_t = 8)]
    predictions: usize,
    /// Train one model on several devices (comma-separated, e.g. `flex,ndarray` or `wgpu,cpu`)
    /// with burn-train's multi-device strategy: each step splits its batches over the devices and
    /// sums their gradients on the first, which also holds the model, validates and predicts.
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1.., conflicts_with = "device")]
    devices: Vec<DeviceChoice>,
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

#[derive(Clone, Copy, ValueEnum)]
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
    // A panic on Burn's device thread would leave this one waiting on it: end with the panic.
    burn_unpool_tools::exit_on_panic();
    let command = show_defaults(Cli::command()).mut_subcommand("train", show_defaults);
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    match execute(cli.command.unwrap_or(Command::Train(cli.train))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Adds the default run's value to the help of every training option, so that `--help` shows
/// the defaults the configs define (the one place they are written).
fn show_defaults(command: clap::Command) -> clap::Command {
    let run = ExperimentConfig::default_run();
    let [train, valid, test] = run.data.scenes;
    let defaults = [
        ("arch", value_name(run.model.architecture)),
        ("width", run.model.width.to_string()),
        ("epochs", run.epochs.to_string()),
        ("batch_size", run.batch_size.to_string()),
        ("lr", run.learning_rate.to_string()),
        ("size", run.data.image_size.to_string()),
        ("scenes", format!("{train} {valid} {test}")),
        ("data_seed", run.data.seed.to_string()),
        ("class_weights", value_name(run.class_weighting)),
        ("seed", run.seed.to_string()),
    ];
    defaults.into_iter().fold(command, |command, (id, value)| {
        command.mut_arg(id, |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            arg.help(format!("{help} [default: {value}]"))
        })
    })
}

/// How the command line spells a value.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

impl TrainArgs {
    /// The default run with the options given.
    fn config(&self) -> ExperimentConfig {
        let mut config = ExperimentConfig::default_run();
        let data = &mut config.data;
        if let Some(camvid) = &self.camvid {
            data.camvid = Some(camvid.clone());
        }
        if let Some(resize) = &self.resize {
            data.resize = Some([resize[0], resize[1]]);
        }
        if let Some(scenes) = &self.scenes {
            data.scenes = [scenes[0], scenes[1], scenes[2]];
        }
        if let Some([height, width]) = self.size {
            data.image_size = height;
            data.image_width = (width != height).then_some(width);
        }
        set(&mut data.seed, self.data_seed);
        config.model.num_classes = config.data.classes().len();
        set(&mut config.model.architecture, self.arch);
        set(&mut config.model.width, self.width);
        set(&mut config.epochs, self.epochs);
        set(&mut config.batch_size, self.batch_size);
        set(&mut config.learning_rate, self.lr);
        set(&mut config.class_weighting, self.class_weights);
        set(&mut config.seed, self.seed);
        config.micro_batch = self.micro_batch();
        config
    }

    fn micro_batch(&self) -> Option<usize> {
        self.micro_batch.map(|m| m as usize)
    }
}

/// `--size`: `SIDE` or `HEIGHTxWIDTH`, each at least 16 (the synthetic scenes' smallest).
fn scene_size(text: &str) -> Result<[usize; 2], String> {
    let parse = |v: &str| match v.parse::<usize>() {
        Ok(side) if side >= 16 => Ok(side),
        Ok(side) => Err(format!(
            "{side}: synthetic scenes are at least 16 pixels a side"
        )),
        Err(e) => Err(format!("{v:?}: {e} (expected SIDE or HEIGHTxWIDTH)")),
    };
    match text.split_once('x') {
        Some((height, width)) => Ok([parse(height)?, parse(width)?]),
        None => parse(text).map(|side| [side, side]),
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

fn execute(command: Command) -> run::Result<()> {
    let start = Instant::now();
    match command {
        Command::Train(args) => {
            let artifacts = Artifacts::new(&args.common.artifacts);
            let devices = match args.devices.as_slice() {
                [] => vec![args.common.device.device()?],
                choices => choices
                    .iter()
                    .map(|choice| choice.device())
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let device = devices[0].clone();
            let config = match args.resume && artifacts.config().is_file() {
                true => {
                    let mut saved = ExperimentConfig::load(artifacts.config())?;
                    set(&mut saved.epochs, args.epochs);
                    if args.micro_batch.is_some() {
                        saved.micro_batch = args.micro_batch();
                    }
                    saved
                }
                false => args.config(),
            };
            let net = run::train(&config, &artifacts, &devices, args.resume)?;
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
