//! Generates the Burn code of the ONNX import cases (`data/onnx`, recorded by
//! `scripts/onnx_models.py` and `scripts/torch_export.py`) with burn-unpool-onnx, once per `output_shape` rule, and decodes the
//! recorded `.pb` tensors to JSON for the tests.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use burn_unpool_onnx::onnx_ir::{Message, TensorData, TensorDataExt, TensorProto};
use burn_unpool_onnx::{ModelGen, OutputShapeRule};
use serde_json::{Value, json};

const MODELS: [&str; 5] = [
    "segnet_odd",
    "segnet_even",
    "unpool1d_opset9",
    "unpool3d_opset11",
    "unpool2d_bf16_opset22",
];
/// Single MaxPool nodes: no MaxUnpool, so no rule to choose; generated once, beside ONNX
/// Runtime's rule.
const POOL_MODELS: [&str; 4] = [
    "pool3d_storage_order_1",
    "pool3d_same_lower",
    "pool1d_int8",
    "pool2d_uint8_storage_order_1",
];

const TORCH_MODELS: [&str; 6] = [
    "pool_edges",
    "segnet2d_odd",
    "segnet3d_ceil",
    "unpool1d_overlapping",
    "segnet2d_dynamo",
    "segnet3d_dynamo",
];

fn main() {
    let data = Path::new("data/onnx");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("onnx");
    println!("cargo:rerun-if-changed={}", data.display());
    let mut notes = BTreeMap::new();
    // Generates `input`'s code into `out/dir` under `rule`, keeping its build notes by `key`.
    let mut generate = |key: String, input: PathBuf, dir: PathBuf, rule| {
        let report = ModelGen::new()
            .input(input)
            .out_dir(out.join(dir))
            .output_shape_rule(rule)
            .load_strategy(burn_unpool_onnx::burn_onnx::LoadStrategy::Embedded)
            .run_from_cli();
        notes.insert(key, report.notes);
    };
    let model = |dir: &str, name: &str| data.join(dir).join(format!("{name}.onnx"));
    let default_rule = OutputShapeRule::default();
    for test in node_tests(&data.join("node")) {
        // The official tests' expected values follow the ONNX reference.
        let input = data.join("node").join(&test).join("model.onnx");
        let dir = Path::new("node").join(&test);
        generate(
            format!("node/{test}"),
            input,
            dir,
            OutputShapeRule::Reference,
        );
    }
    for (rule, dir) in [
        (OutputShapeRule::Reference, "reference"),
        (OutputShapeRule::IndicesInOutputShape, "onnxruntime"),
    ] {
        for name in MODELS {
            generate(
                format!("{dir}/{name}"),
                model("models", name),
                dir.into(),
                rule,
            );
        }
    }
    // Single pools recorded with ONNX Runtime, and models exported from PyTorch with the usual
    // custom MaxUnpool symbolic, under the default rule.
    for (names, source, dir) in [
        (&POOL_MODELS[..], "models", "onnxruntime"),
        (&TORCH_MODELS[..], "models/torch", "torch"),
    ] {
        for name in names {
            generate(
                format!("{dir}/{name}"),
                model(source, name),
                dir.into(),
                default_rule,
            );
        }
    }
    // Weights in a file beside the model, as PyTorch's dynamo exporter writes them.
    let key = "external/segnet_even".to_string();
    generate(
        key,
        model("models/external", "segnet_even"),
        "external".into(),
        default_rule,
    );
    write(&out.join("notes.json"), &json!(notes));
    write(&out.join("tensors.json"), &tensors(data));
}

/// The official node tests copied to `dir`, by name.
fn node_tests(dir: &Path) -> Vec<String> {
    let mut tests: Vec<String> = fs::read_dir(dir)
        .expect("the node tests")
        .map(|entry| {
            entry
                .expect("a dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    tests.sort();
    tests
}

/// Every `.pb` tensor under `dir`, by its path relative to `data/onnx`.
fn tensors(root: &Path) -> Value {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("a readable data dir") {
            let path = entry.expect("a dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "pb") {
                let key = path.strip_prefix(root).expect("below root");
                found.insert(key.to_string_lossy().replace('\\', "/"), tensor(&path));
            }
        }
    }
    json!(found)
}

/// `{"dtype": "F32", "shape": [...], "f32_bits": [...]}` or `{..., "i64": [...]}`: float values of
/// any width as the bits of f32 (exact; JSON has no NaN or infinity), with the recorded dtype
/// beside them.
fn tensor(path: &Path) -> Value {
    let bytes = fs::read(path).expect("a readable tensor");
    let proto = TensorProto::parse_from_bytes(&bytes).expect("a TensorProto");
    let data = TensorData::try_from(proto).expect("a decodable tensor");
    let dtype = format!("{:?}", data.dtype());
    let shape = data.shape().to_vec();
    if data.dtype().is_float() {
        let values = data.convert::<f32>().to_f32_vec().expect("f32 values");
        let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        json!({"dtype": dtype, "shape": shape, "f32_bits": bits})
    } else {
        json!({"dtype": dtype, "shape": shape, "i64": data.convert::<i64>().to_i64_vec().expect("i64 values")})
    }
}

fn write(path: &Path, value: &Value) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("an output dir");
    fs::write(path, serde_json::to_string(value).expect("json")).expect("a writable file");
}
