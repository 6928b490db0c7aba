//! Each malformed `MaxUnpool` node fails the generation with a message that names the node and
//! the problem. The models are written by `tests/scripts/onnx_models.py` (one defect each, beside
//! a `good` one that imports).

use std::panic;
use std::path::PathBuf;

use burn_unpool_onnx::ModelGen;

fn model(name: &str) -> PathBuf {
    // Cargo sets the variable for the test run too: read there, the path follows the checkout
    // under test even where a build shared between checkouts made this binary elsewhere.
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    crate_dir
        .join("../../tests/data/onnx/malformed")
        .join(format!("{name}.onnx"))
}

/// Generates code for the model `name`; the panic message if generation fails.
fn generate(name: &str) -> Result<usize, String> {
    let out = std::env::temp_dir().join(format!(
        "burn-unpool-onnx-malformed-{}-{name}",
        std::process::id()
    ));
    let result = panic::catch_unwind(|| {
        ModelGen::new()
            .input(model(name))
            .out_dir(&out)
            .run_from_cli()
            .max_unpool_nodes
    });
    let _ = std::fs::remove_dir_all(&out);
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn assert_rejected(name: &str, expected: &[&str]) {
    let message = generate(name).expect_err("a malformed node must fail the generation");
    for part in ["MaxUnpool node 'bad_unpool'"].iter().chain(expected) {
        assert!(message.contains(part), "{name}: '{part}' not in: {message}");
    }
}

#[test]
fn the_well_formed_node_imports() {
    assert_eq!(generate("good"), Ok(1));
}

#[test]
fn missing_kernel_shape() {
    assert_rejected(
        "missing_kernel_shape",
        &["the required attribute kernel_shape is missing"],
    );
}

#[test]
fn strides_of_the_wrong_length() {
    assert_rejected(
        "strides_length",
        &["strides must have 2 entries, got 3 ([2, 2, 2])"],
    );
}

#[test]
fn pads_of_the_wrong_length() {
    assert_rejected("pads_length", &["pads must have 4 entries, got 2 ([0, 0])"]);
}

#[test]
fn kernel_shape_of_the_wrong_length() {
    assert_rejected(
        "kernel_shape_length",
        &["kernel_shape must have 2 entries, got 1 ([2])"],
    );
}

#[test]
fn output_shape_of_the_wrong_length() {
    assert_rejected(
        "output_shape_length",
        &["output_shape must have 4 entries, got 3 ([1, 1, 4])"],
    );
}

#[test]
fn indices_that_are_not_int64() {
    assert_rejected("int32_indices", &["indices I must be int64", "got I32"]);
}

#[test]
fn x_and_indices_of_different_ranks() {
    assert_rejected(
        "rank_mismatch",
        &["X and I must have the same rank, got X rank 4 and I rank 3"],
    );
}

/// ONNX forbids `pads` beside `auto_pad`; the pool that feeds the unpooling is refused by name.
#[test]
fn a_pool_with_both_pads_and_auto_pad() {
    let message =
        generate("pool_pads_and_auto_pad").expect_err("the pool must fail the generation");
    for part in [
        "MaxPool node 'bad_pool'",
        "pads [1, 1, 1, 1] contradict auto_pad",
    ] {
        assert!(message.contains(part), "'{part}' not in: {message}");
    }
}
