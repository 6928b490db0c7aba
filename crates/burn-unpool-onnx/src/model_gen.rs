//! The build-time entry point: burn-onnx's `ModelGen`, with `MaxUnpool` support.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use burn_onnx::LoadStrategy;
use onnx_ir::{Message, ModelProto};

use crate::hook::{MaxUnpoolOp, OutputShapeRule};
use crate::index_arithmetic::{IndexArithmetic, rewrite_index_arithmetic};
use crate::plane_offsets_hook::PlaneOffsetsOp;
use crate::pool_hook::MaxPoolOp;
use crate::rewrite::{rewrite_max_pool, rewrite_max_unpool};

/// Generates Burn code for ONNX models, as `burn_onnx::ModelGen` does, with every `MaxUnpool` node
/// turned into a call to `burn_unpool::onnx::max_unpool_onnx`.
///
/// The crate that includes the generated code needs `burn`, `burn-store` and `burn-unpool` as
/// dependencies. In `build.rs`:
///
/// ```no_run
/// burn_unpool_onnx::ModelGen::new()
///     .input("src/model/segnet.onnx")
///     .out_dir("model/")
///     .run_from_script();
/// ```
///
/// and in the crate:
///
/// ```ignore
/// pub mod segnet {
///     include!(concat!(env!("OUT_DIR"), "/model/segnet.rs"));
/// }
/// ```
///
/// Where a model's `output_shape` differs from the inferred shape, the build prints which
/// [`OutputShapeRule`] places the indices (a `cargo:warning` from a build script).
#[derive(Debug, Default)]
pub struct ModelGen {
    inputs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    rule: OutputShapeRule,
    development: bool,
    load_strategy: LoadStrategy,
    simplify: Option<bool>,
    partition: Option<bool>,
    node_by_node: bool,
}

/// What one generation run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// How many `MaxUnpool` nodes were imported, over all inputs.
    pub max_unpool_nodes: usize,
    /// `MaxPool` nodes imported through burn-unpool (every pool with `Indices`, 3-d pools,
    /// integer inputs).
    pub max_pool_nodes: usize,
    /// What was recognised of PyTorch's index arithmetic, over all inputs.
    pub index_arithmetic: IndexArithmetic,
    /// Build-time notes, e.g. a node whose `output_shape` makes the two rules differ.
    pub notes: Vec<String>,
}

impl ModelGen {
    /// A generator with burn-onnx's defaults and [`OutputShapeRule::IndicesInOutputShape`]
    /// (ONNX Runtime's and PyTorch's rule; see [`OutputShapeRule`] for why).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an ONNX model to convert; the generated file is named after it.
    pub fn input(&mut self, input: impl AsRef<Path>) -> &mut Self {
        self.inputs.push(input.as_ref().to_path_buf());
        self
    }

    /// The output directory: below `$OUT_DIR` for [`run_from_script`](Self::run_from_script),
    /// as given for [`run_from_cli`](Self::run_from_cli).
    pub fn out_dir(&mut self, out_dir: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(out_dir.as_ref().to_path_buf());
        self
    }

    /// How an `output_shape` that differs from the inferred shape places the indices.
    pub fn output_shape_rule(&mut self, rule: OutputShapeRule) -> &mut Self {
        self.rule = rule;
        self
    }

    /// burn-onnx's development mode (also writes a dump of the parsed graph).
    pub fn development(&mut self, development: bool) -> &mut Self {
        self.development = development;
        self
    }

    /// burn-onnx's weight loading strategy.
    pub fn load_strategy(&mut self, strategy: LoadStrategy) -> &mut Self {
        self.load_strategy = strategy;
        self
    }

    /// burn-onnx's graph simplification (on by default).
    pub fn simplify(&mut self, simplify: bool) -> &mut Self {
        self.simplify = Some(simplify);
        self
    }

    /// burn-onnx's submodule partitioning of large models (on by default).
    pub fn partition(&mut self, partition: bool) -> &mut Self {
        self.partition = Some(partition);
        self
    }

    /// Whether PyTorch's index arithmetic is recognised ([`rewrite_index_arithmetic`], on by
    /// default). Off, every node imports as it is (the exporter's 1x1 base-offset pools run, the
    /// indices reach each `MaxUnpool` through the model's arithmetic and are checked): for
    /// comparisons, and as a way around a rewrite you doubt.
    ///
    /// [`rewrite_index_arithmetic`]: crate::rewrite_index_arithmetic
    pub fn recognise_index_arithmetic(&mut self, recognise: bool) -> &mut Self {
        self.node_by_node = !recognise;
        self
    }

    /// Runs from `build.rs`: writes below `$OUT_DIR/<out_dir>` and prints the notes as
    /// `cargo:warning`s.
    ///
    /// # Panics
    /// If a model cannot be read or a node is malformed, with a message that names the node.
    pub fn run_from_script(&self) -> Report {
        let out_dir = std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo for build.rs");
        let report = self.run(&PathBuf::from(out_dir), true);
        for note in &report.notes {
            println!("cargo:warning={note}");
        }
        for input in &self.inputs {
            println!("cargo:rerun-if-changed={}", input.display());
        }
        report
    }

    /// Runs from a program: writes to `out_dir` as given and prints the notes to stderr.
    ///
    /// # Panics
    /// As [`run_from_script`](Self::run_from_script).
    pub fn run_from_cli(&self) -> Report {
        let report = self.run(Path::new(""), false);
        for note in &report.notes {
            eprintln!("warning: {note}");
        }
        report
    }

    fn run(&self, base: &Path, from_script: bool) -> Report {
        let out_dir = self.out_dir.clone().unwrap_or_default();
        let staging = base.join(&out_dir).join(".burn-unpool-onnx");
        fs::create_dir_all(&staging).unwrap_or_else(|e| {
            panic!("cannot create {}: {e}", staging.display());
        });
        let hook = MaxUnpoolOp::new(self.rule);
        let mut generator = burn_onnx::ModelGen::new();
        generator
            .out_dir(out_dir.to_str().expect("a UTF-8 out_dir"))
            .development(self.development)
            .load_strategy(self.load_strategy)
            .register_custom_op(hook.clone())
            .register_custom_op(MaxPoolOp)
            .register_custom_op(PlaneOffsetsOp);
        if let Some(simplify) = self.simplify {
            generator.simplify(simplify);
        }
        if let Some(partition) = self.partition {
            generator.partition(partition);
        }
        let (mut max_unpool_nodes, mut max_pool_nodes) = (0, 0);
        let mut index_arithmetic = IndexArithmetic::default();
        for input in &self.inputs {
            let (staged, moved) = stage(input, &staging, !self.node_by_node);
            max_unpool_nodes += moved.unpools;
            max_pool_nodes += moved.pools;
            index_arithmetic += moved.arithmetic;
            generator.input(staged.to_str().expect("a UTF-8 path"));
        }
        if from_script {
            generator.run_from_script();
        } else {
            generator.run_from_cli();
        }
        Report {
            max_unpool_nodes,
            max_pool_nodes,
            index_arithmetic,
            notes: hook.notes(),
        }
    }
}

/// What staging one model rewrote.
struct Staged {
    unpools: usize,
    pools: usize,
    arithmetic: IndexArithmetic,
}

/// Writes `input` with PyTorch's index arithmetic recognised and its `MaxUnpool` and `MaxPool`
/// nodes moved to burn-unpool's hooks into `staging`, under the same file name (burn-onnx names
/// the generated code after it).
fn stage(input: &Path, staging: &Path, arithmetic: bool) -> (PathBuf, Staged) {
    let bytes = fs::read(input)
        .unwrap_or_else(|e| panic!("cannot read ONNX model {}: {e}", input.display()));
    let mut model = ModelProto::parse_from_bytes(&bytes)
        .unwrap_or_else(|e| panic!("{} is not an ONNX model: {e}", input.display()));
    let model_dir = input.parent().unwrap_or(Path::new(""));
    let arithmetic = match arithmetic {
        true => {
            inline_small_integer_data(&mut model, model_dir);
            rewrite_index_arithmetic(&mut model)
        }
        false => IndexArithmetic::default(),
    };
    let unpools = rewrite_max_unpool(&mut model);
    let pools = rewrite_max_pool(&mut model);
    stage_external_data(&model, model_dir, staging);
    let name = input
        .file_name()
        .unwrap_or_else(|| panic!("{} names no file", input.display()));
    let staged = staging.join(name);
    let bytes = model
        .write_to_bytes()
        .unwrap_or_else(|e| panic!("cannot encode {}: {e}", input.display()));
    fs::write(&staged, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", staged.display()));
    let moved = Staged {
        unpools,
        pools,
        arithmetic,
    };
    (staged, moved)
}

/// The most bytes of one integer initializer that [`inline_small_integer_data`] reads into the model.
const INLINED_INTEGER_BYTES: u64 = 1 << 20;

/// Reads the int64 initializers of at most [`INLINED_INTEGER_BYTES`] that the model keeps in
/// external data files into the model itself, so that [`rewrite_index_arithmetic`] sees their
/// values: the dynamo exporter saves the plane offsets of its index arithmetic beside the weights
/// once they pass ONNX's 1 KiB threshold. Others stay where they are; one that cannot be read is
/// left for burn-onnx to report.
fn inline_small_integer_data(model: &mut ModelProto, model_dir: &Path) {
    let Some(graph) = model.graph.as_mut() else {
        return;
    };
    for tensor in &mut graph.initializer {
        let entry = |key: &str| {
            tensor
                .external_data
                .iter()
                .find(|e| e.key == key)
                .map(|e| e.value.clone())
        };
        let number = |key: &str| entry(key).map(|v| v.parse::<u64>().ok());
        let (Some(location), Some(Some(length))) = (entry("location"), number("length")) else {
            continue;
        };
        let offset = match number("offset") {
            None => 0,
            Some(Some(offset)) => offset,
            Some(None) => continue,
        };
        let relative = Path::new(&location);
        let inside = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if tensor.data_type != 7 || length > INLINED_INTEGER_BYTES || !inside {
            continue;
        }
        let Ok(bytes) = fs::read(model_dir.join(relative)) else {
            continue;
        };
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(offset + length).ok());
        let Some(data) = range.and_then(|(start, end)| bytes.get(start..end)) else {
            continue;
        };
        tensor.raw_data = data.to_vec().into();
        tensor.external_data.clear();
        tensor.data_location = Default::default();
    }
}

/// Puts the external data files the model names (weights saved beside it, as PyTorch's dynamo
/// exporter and every model over 2 GB do) below `staging` under the same relative locations, so
/// the staged copy finds them: burn-onnx accepts only relative locations that stay inside the
/// model's folder (no absolute paths, no `..`, no symbolic links out of it). Copies, made again
/// only when the source changed: a hard link would save the copy but makes the user's own file
/// fail the `onnx` package's checker ("multiple hard links (possible hardlink attack)"). The model
/// itself is unchanged (inlining would fail past protobuf's 2 GB).
fn stage_external_data(model: &ModelProto, model_dir: &Path, staging: &Path) {
    let Some(graph) = model.graph.as_ref() else {
        return;
    };
    let locations: BTreeSet<&str> = graph
        .initializer
        .iter()
        .flat_map(|tensor| &tensor.external_data)
        .filter(|entry| entry.key == "location")
        .map(|entry| entry.value.as_str())
        .collect();
    for location in locations {
        let relative = Path::new(location);
        // Anything else burn-onnx refuses with its own message, naming the location.
        if !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            continue;
        }
        let (source, target) = (model_dir.join(relative), staging.join(relative));
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        if !is_staged(&source, &target) {
            let _ = fs::remove_file(&target);
            fs::copy(&source, &target).unwrap_or_else(|e| {
                panic!(
                    "cannot stage the external data {} beside the rewritten model: {e}",
                    source.display()
                )
            });
        }
    }
}

/// Whether `target` is a copy of `source` made since `source` last changed: same length, and
/// modified no earlier.
fn is_staged(source: &Path, target: &Path) -> bool {
    let (Ok(source), Ok(target)) = (fs::metadata(source), fs::metadata(target)) else {
        return false;
    };
    let newer = match (source.modified(), target.modified()) {
        (Ok(source), Ok(target)) => target >= source,
        _ => false,
    };
    // A hard link to the source (as earlier versions staged) is replaced by a copy.
    #[cfg(unix)]
    let linked = {
        use std::os::unix::fs::MetadataExt;
        (source.dev(), source.ino()) == (target.dev(), target.ino())
    };
    #[cfg(not(unix))]
    let linked = false;
    source.len() == target.len() && newer && !linked
}

#[cfg(test)]
mod tests {
    use super::*;
    use onnx_ir::TensorProto;

    /// An int64 initializer of `values` kept in `file` at `offset`, as the dynamo exporter saves
    /// tensors past 1 KiB.
    fn external(name: &str, file: &str, offset: usize, values: &[i64]) -> TensorProto {
        let mut tensor = TensorProto::new();
        tensor.name = name.into();
        tensor.data_type = 7;
        tensor.dims = vec![values.len() as i64];
        for (key, value) in [
            ("location", file.to_string()),
            ("offset", offset.to_string()),
            ("length", (values.len() * 8).to_string()),
        ] {
            // StringStringEntryProto is not re-exported, but `Default` reaches it.
            tensor.external_data.push(Default::default());
            let entry = tensor.external_data.last_mut().expect("just pushed");
            entry.key = key.into();
            entry.value = value;
        }
        tensor
    }

    #[test]
    fn small_external_integers_are_read_into_the_model() {
        let dir =
            std::env::temp_dir().join(format!("burn-unpool-onnx-inline-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let values: Vec<i64> = (0..200).map(|p| p * 2700).collect();
        let mut bytes = vec![0u8; 16];
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        fs::write(dir.join("model.onnx.data"), bytes).unwrap();
        let mut model = ModelProto::new();
        let graph = model.graph.mut_or_insert_default();
        graph
            .initializer
            .push(external("offsets", "model.onnx.data", 16, &values));
        graph
            .initializer
            .push(external("outside", "../model.onnx.data", 16, &values));
        inline_small_integer_data(&mut model, &dir);
        let graph = &model.graph;
        assert!(graph.initializer[0].external_data.is_empty());
        let data = onnx_ir::TensorData::try_from(graph.initializer[0].clone()).unwrap();
        assert_eq!(onnx_ir::TensorDataExt::to_i64_vec(&data).unwrap(), values);
        // A location outside the model's folder is left for burn-onnx to refuse.
        assert_eq!(graph.initializer[1].external_data.len(), 3);
        fs::remove_dir_all(&dir).unwrap();
    }
}
