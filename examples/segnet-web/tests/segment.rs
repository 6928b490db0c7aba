//! The `segment` binary on the page's committed weights: what the page's check compares with.

use std::process::Command;

use serde::Deserialize;

/// What `segment` prints.
#[derive(Deserialize)]
struct Segmented {
    width: usize,
    height: usize,
    pixel_accuracy: Option<f64>,
    classes: Vec<u8>,
    scores: Vec<f32>,
}

fn segment(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_segment"))
        .args(args)
        .output()
        .expect("the segment binary runs")
}

/// `segment` with `args`, which must succeed, its JSON read.
fn segmented(args: &[&str]) -> Segmented {
    let output = segment(args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// The committed network segments the held-out scene the page opens on above the page check's
/// threshold (95 % of its pixels), and its classes are the best-scoring ones.
#[test]
fn committed_weights_segment_the_page_scene() {
    let result = segmented(&["--scene", "0"]);
    let (scores, classes) = (&result.scores, &result.classes);
    let plane = result.width * result.height;
    assert_eq!(classes.len(), plane);
    assert_eq!(scores.len(), 5 * plane, "five classes of scores per pixel");
    for (pixel, &class) in classes.iter().enumerate() {
        let best = (0..5)
            .max_by(|&a, &b| scores[a * plane + pixel].total_cmp(&scores[b * plane + pixel]))
            .unwrap();
        assert_eq!(
            scores[best * plane + pixel],
            scores[usize::from(class) * plane + pixel],
            "pixel {pixel}"
        );
    }
    let accuracy = result.pixel_accuracy.expect("a scene has labels");
    assert!(accuracy >= 0.95, "pixel accuracy {accuracy}");
}

/// A scene written as PNG and given back as an image (what the page's check drops on the page)
/// segments to the same scores, without a pixel accuracy.
#[test]
fn a_saved_scene_given_back_as_an_image_segments_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("scene.png");
    let png = png.to_str().unwrap();
    let scene = segmented(&["--scene", "2", "--save-scene", png]);
    let image = segmented(&["--image", png]);
    assert_eq!((image.width, image.height), (scene.width, scene.height));
    assert_eq!(image.classes, scene.classes);
    assert_eq!(image.scores, scene.scores);
    assert!(scene.pixel_accuracy.is_some());
    assert_eq!(image.pixel_accuracy, None);
}

#[test]
fn an_unreadable_image_is_named() {
    let output = segment(&["--image", "/nonexistent/picture.png"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot read the image /nonexistent/picture.png"),
        "{stderr}"
    );
}

#[test]
fn a_missing_run_is_named() {
    let output = segment(&["--weights", "/nonexistent/run"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot read /nonexistent/run/config.json"),
        "{stderr}"
    );
}

/// An image and a scene contradict each other: refused, both named, never one of them ignored.
#[test]
fn an_image_and_a_scene_are_refused_together() {
    for args in [
        ["--image", "a.png", "--scene", "1"],
        ["--image", "a.png", "--save-scene", "b.png"],
    ] {
        let output = segment(&args);
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--image") && stderr.contains(args[2]),
            "{args:?}: {stderr}"
        );
    }
}

/// The run's held-out split has 320 scenes (its config.json): scene 320 is refused, named.
#[test]
fn a_scene_past_the_held_out_split_is_refused() {
    let output = segment(&["--scene", "320"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "there is no held-out scene 320: the run's 320 held-out scenes are numbered 0 to 319"
        ),
        "{stderr}"
    );
    assert!(segment(&["--scene", "319"]).status.success());
}

/// A file that is not an image is refused with its name and what is read.
#[test]
fn a_file_that_is_not_an_image_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.png");
    std::fs::write(&notes, "not a picture").unwrap();
    let output = segment(&["--image", notes.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}: not a PNG or JPEG image", notes.display())),
        "{stderr}"
    );
}

/// A scene saved as JPEG reads back (lossy, so near the scene's scores: the classes of most pixels
/// the same) and segments at the scene's size.
#[test]
fn a_scene_saved_as_jpeg_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let jpeg = dir.path().join("scene.jpg");
    let jpeg = jpeg.to_str().unwrap();
    let scene = segmented(&["--scene", "4", "--save-scene", jpeg]);
    assert_eq!(
        &std::fs::read(jpeg).unwrap()[..2],
        [0xFF, 0xD8],
        "a JPEG file"
    );
    let image = segmented(&["--image", jpeg]);
    assert_eq!((image.width, image.height), (scene.width, scene.height));
    let same = image
        .classes
        .iter()
        .zip(&scene.classes)
        .filter(|(a, b)| a == b)
        .count();
    assert!(
        same * 10 >= scene.classes.len() * 9,
        "{same} of {} pixels",
        scene.classes.len()
    );
}
