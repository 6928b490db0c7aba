//! Turns `model/encoder_decoder.onnx` into Burn code (`$OUT_DIR/model/encoder_decoder.rs`), its
//! `MaxUnpool` nodes into calls to burn-unpool.

fn main() {
    burn_unpool_onnx::ModelGen::new()
        .input("model/encoder_decoder.onnx")
        .out_dir("model/")
        .run_from_script();
}
