//! Turns `model/encoder_decoder.onnx` into Burn code (`$OUT_DIR/model/encoder_decoder.rs`), its
//! `MaxUnpool` nodes into calls to burn-unpool.
//!
//! With `ONNX_IMPORT_BENCH_MODELS` set (by `benches/segnet_basic.py`), also imports the benchmark's
//! exported SegNet-Basic models from that folder into `$OUT_DIR/bench/`, each twice: with PyTorch's
//! index arithmetic recognised, and node by node.

use std::path::Path;

fn main() {
    burn_unpool_onnx::ModelGen::new()
        .input("model/encoder_decoder.onnx")
        .out_dir("model/")
        .run_from_script();

    println!("cargo::rerun-if-env-changed=ONNX_IMPORT_BENCH_MODELS");
    println!("cargo::rustc-check-cfg=cfg(bench_models)");
    let Some(dir) = std::env::var_os("ONNX_IMPORT_BENCH_MODELS") else {
        return;
    };
    let dir = Path::new(&dir);
    for net in ["segnet_basic", "skeleton"] {
        for exporter in ["legacy", "dynamo"] {
            for batch in [1, 4] {
                let input = dir.join(format!("{net}_{exporter}_b{batch}.onnx"));
                for (recognise, out) in [(true, "bench/"), (false, "bench/node_by_node/")] {
                    burn_unpool_onnx::ModelGen::new()
                        .input(&input)
                        .out_dir(out)
                        .load_strategy(burn_unpool_onnx::burn_onnx::LoadStrategy::Embedded)
                        .recognise_index_arithmetic(recognise)
                        .run_from_script();
                }
            }
        }
    }
    println!("cargo::rustc-cfg=bench_models");
}
