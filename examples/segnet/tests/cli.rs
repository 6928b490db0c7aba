//! The command line: the defaults it shows are the configs' own, and options that cannot go
//! together are refused by clap with its own message, before anything runs.

use std::process::{Command, Output};

use burn::config::Config;
use segnet::experiment::ExperimentConfig;

fn segnet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_segnet"))
        .args(args)
        .output()
        .expect("the segnet binary runs")
}

fn refused(args: &[&str], expected: &[&str]) {
    let output = segnet(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{args:?} must be a usage error: {stderr}"
    );
    for part in expected {
        assert!(stderr.contains(part), "{args:?}: {part:?} not in {stderr}");
    }
}

#[test]
fn help_shows_the_default_run_of_the_configs() {
    let run = ExperimentConfig::default_run();
    for args in [&["train", "--help"][..], &["--help"][..]] {
        let output = segnet(args);
        assert!(output.status.success());
        let help = String::from_utf8_lossy(&output.stdout);
        let [train, valid, test] = run.data.scenes;
        for shown in [
            format!("[default: {}]", run.model.width),
            format!("[default: {}]", run.epochs),
            format!("[default: {}]", run.data.image_size),
            format!("[default: {train} {valid} {test}]"),
            format!("[default: {}]", run.data.seed),
            format!("[default: {}]", run.seed),
            "[default: segnet-basic]".to_string(),
            "[default: auto]".to_string(),
        ] {
            assert!(help.contains(&shown), "{args:?}: {shown} not in\n{help}");
        }
    }
}

#[test]
fn conflicting_options_are_refused() {
    refused(
        &["train", "--resume", "--width", "8"],
        &["--resume", "cannot be used with", "--width"],
    );
    refused(
        &["--resume", "--seed", "3"],
        &["--resume", "cannot be used with", "--seed"],
    );
    refused(
        &["train", "--camvid", "CamVid", "--size", "32"],
        &["--camvid", "cannot be used with", "--size"],
    );
    refused(
        &["train", "--scenes", "8", "8", "8", "--camvid", "CamVid"],
        &["cannot be used with"],
    );
    refused(&["train", "--resize", "480", "360"], &["--camvid"]);
    refused(&["eval", "--width", "8"], &["--width"]);
    refused(
        &["train", "--devices", "flex,ndarray", "--device", "ndarray"],
        &["--devices", "cannot be used with", "--device"],
    );
    refused(
        &["train", "--devices", "flex,tpu"],
        &["invalid value 'tpu'"],
    );
}

#[test]
fn bad_sizes_and_micro_batches_are_refused() {
    refused(
        &["train", "--size", "360x"],
        &["--size", "expected SIDE or HEIGHTxWIDTH"],
    );
    refused(
        &["train", "--size", "wide"],
        &["expected SIDE or HEIGHTxWIDTH"],
    );
    refused(&["train", "--micro-batch", "0"], &["--micro-batch", "0"]);
}

/// `--size HEIGHTxWIDTH` scenes and `--micro-batch` on the CPU: the run says how it splits the
/// batch, trains, and its saved config records both.
#[test]
fn rectangular_scenes_train_in_the_micro_batches_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let output = segnet(&[
        "train",
        "--width",
        "2",
        "--size",
        "16x40",
        "--scenes",
        "4",
        "2",
        "2",
        "--epochs",
        "1",
        "--batch-size",
        "4",
        "--micro-batch",
        "3",
        "--predictions",
        "1",
        "--artifacts",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(
            "micro-batches of 2 images, their gradients summed into each step of 4 (--micro-batch)"
        ),
        "{stdout}"
    );
    let config = ExperimentConfig::load(dir.path().join("config.json")).unwrap();
    assert_eq!(config.data.scene_size(), [16, 40]);
    assert_eq!(config.micro_batch, Some(3));
    assert!(dir.path().join("predictions/prediction-000.png").is_file());
}
