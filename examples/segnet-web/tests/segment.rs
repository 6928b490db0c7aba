//! The `segment` binary on the page's committed weights: what the page's check compares with.

use std::process::Command;

use serde_json::Value;

fn segment(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_segment"))
        .args(args)
        .output()
        .expect("the segment binary runs")
}

/// The committed network segments the held-out scene the page opens on above the page check's
/// threshold (95 % of its pixels), and its classes are the best-scoring ones.
#[test]
fn committed_weights_segment_the_page_scene() {
    let output = segment(&["--scene", "0"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let [width, height] = ["width", "height"].map(|key| result[key].as_u64().unwrap() as usize);
    let scores: Vec<f64> = result["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_f64().unwrap())
        .collect();
    let classes: Vec<u64> = result["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let plane = width * height;
    assert_eq!(classes.len(), plane);
    assert_eq!(scores.len(), 5 * plane, "five classes of scores per pixel");
    for (pixel, &class) in classes.iter().enumerate() {
        let best = (0..5)
            .max_by(|&a, &b| scores[a * plane + pixel].total_cmp(&scores[b * plane + pixel]))
            .unwrap();
        assert_eq!(
            scores[best * plane + pixel],
            scores[class as usize * plane + pixel],
            "pixel {pixel}"
        );
    }
    let accuracy = result["pixel_accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.95, "pixel accuracy {accuracy}");
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
