//! The index arithmetic PyTorch's exporters write around `MaxPool` and `MaxUnpool`, recognised in
//! the graph before burn-onnx sees it.
//!
//! PyTorch's pools return per-plane indices, ONNX's global ones; its exporters convert with
//! arithmetic that, imported node by node, costs a full pass over each pooled activation:
//!
//! - each pool with indices gets a second, 1x1 `MaxPool` with `Indices` over the same input, sliced
//!   to `[.., .., 0:1, 0:1]`: each plane's first global index. It becomes a `PlaneOffsets` node
//!   that reads the input's shape only.
//! - a `MaxUnpool` (from the custom symbolic users register) takes `Indices - offsets` plus
//!   `(n*C + c) * plane_len`, built from `Shape`/`Gather`/`Mul`/`Range`/`Reshape`/`Concat` (the
//!   legacy exporter) or from a constant (the dynamo exporter's form). Where its indices are traced
//!   to a pool that way, or are a pool's `Indices` directly, the unpool takes the pool's `Indices`
//!   and the pool's input shape (a third output of the pool node), so the generated code runs no
//!   arithmetic and knows the indices lie in their planes (no index check, no device read-back).
//!
//! - the dynamo exporter writes `max_unpool` as a `ScatterND` of the flattened values into a
//!   flattened zero tensor, at the flattened indices; where those indices trace to a pool, it
//!   becomes a `MaxUnpool` of the values (reshaped to the indices' shape) into `output_shape`,
//!   flattened again: burn-onnx's scatter normalises negative indices in four passes and, with
//!   duplicate indices on a GPU, depends on the order its threads run.
//!
//! Nodes left without a consumer afterwards are removed, and so are the unused `Indices` outputs
//! of pools: the generated code binds no value it does not use.

use std::collections::{BTreeMap, BTreeSet};

use onnx_ir::{
    AttributeProto, AttributeType, GraphProto, ModelProto, NodeProto, TensorData, TensorDataExt,
    TensorProto,
};

use crate::rewrite::{DOMAIN, INTEGER_TYPES, MAX_POOL, OP_TYPE, is_default_domain};

/// The node that replaces PyTorch's 1x1 base-offset pool and its slice:
/// `burn_unpool::onnx::plane_offsets` of its one input's shape.
pub const PLANE_OFFSETS: &str = "PlaneOffsets";

/// The `MaxUnpool` attribute (1) of the unpoolings that replace the dynamo exporter's `ScatterND`:
/// their indices address `output_shape` whatever the model's [`OutputShapeRule`] says, as a
/// scatter's do.
///
/// [`OutputShapeRule`]: crate::OutputShapeRule
pub const SCATTER_PLACEMENT: &str = "burn_unpool_scatter_placement";

/// The `MaxPool` attribute (1) of the pools whose `Indices` only traced unpools read: they are
/// computed in the device's default integer dtype where it holds them, as burn-unpool's own pools
/// give theirs, instead of ONNX's int64 (`burn_unpool::onnx::max_pool_onnx_for_unpool`).
pub const INDICES_FOR_UNPOOL: &str = "burn_unpool_indices_for_unpool";

/// The `MaxUnpool` attribute that holds the plane length the model re-bases a traced pool's
/// indices to (absent: the indices reach the unpool unchanged). A traced unpool also has a fourth
/// input: the pool's input shape, which the pool node gives as a third output.
pub const POOL_PLANE_STRIDE: &str = "burn_unpool_pool_plane_stride";

/// What [`rewrite_index_arithmetic`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexArithmetic {
    /// 1x1 base-offset pools (with their slices) turned into `PlaneOffsets` nodes.
    pub plane_offsets: usize,
    /// The dynamo exporter's unpoolings (`ScatterND` of a pool's indices into zeros) turned into
    /// `MaxUnpool` nodes.
    pub scatters: usize,
    /// `MaxUnpool` nodes whose indices were traced to a pool of the model.
    pub traced_unpools: usize,
    /// Nodes removed because nothing used them any more.
    pub removed_nodes: usize,
}

impl std::ops::AddAssign for IndexArithmetic {
    fn add_assign(&mut self, other: Self) {
        self.plane_offsets += other.plane_offsets;
        self.scatters += other.scatters;
        self.traced_unpools += other.traced_unpools;
        self.removed_nodes += other.removed_nodes;
    }
}

/// Recognises the index arithmetic of PyTorch's exporters in `model`'s main graph (see the
/// module's documentation): 1x1 base-offset pools become [`PLANE_OFFSETS`] nodes, unpools whose
/// indices are a pool's (directly or through the exporters' arithmetic) take that pool's
/// `Indices`, and nodes nothing uses any more are removed. Run it before
/// [`rewrite_max_unpool`](crate::rewrite_max_unpool) and
/// [`rewrite_max_pool`](crate::rewrite_max_pool); [`ModelGen`](crate::ModelGen) does.
///
/// A model without that arithmetic is left unchanged, but for unused pool `Indices` outputs and
/// nodes without consumers. Constants kept in external data files are not read (nothing is
/// traced through them); [`ModelGen`](crate::ModelGen) first reads the small int64 ones into the
/// model.
pub fn rewrite_index_arithmetic(model: &mut ModelProto) -> IndexArithmetic {
    let Some(graph) = model.graph.as_mut() else {
        return IndexArithmetic::default();
    };
    let plane_offsets = fold_plane_offsets(graph);
    let scatters = route_scatters(graph);
    let traced_unpools = trace_unpool_indices(graph);
    let removed_nodes = remove_unused(graph);
    mark_indices_for_unpool(graph);
    IndexArithmetic {
        plane_offsets,
        scatters,
        traced_unpools,
        removed_nodes,
    }
}

/// Where each value comes from and who reads it, in one graph.
struct Uses {
    producer: BTreeMap<String, usize>,
    consumers: BTreeMap<String, Vec<usize>>,
    read_elsewhere: BTreeSet<String>,
}

impl Uses {
    fn of(graph: &GraphProto) -> Self {
        let mut producer = BTreeMap::new();
        let mut consumers: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut read_elsewhere: BTreeSet<String> =
            graph.output.iter().map(|o| o.name.clone()).collect();
        for (position, node) in graph.node.iter().enumerate() {
            for output in node.output.iter().filter(|o| !o.is_empty()) {
                producer.insert(output.clone(), position);
            }
            for input in node.input.iter().filter(|i| !i.is_empty()) {
                consumers.entry(input.clone()).or_default().push(position);
            }
            // Subgraphs read values of the graph around them by name.
            for body in subgraphs(node) {
                subgraph_reads(body, &mut read_elsewhere);
            }
        }
        Self {
            producer,
            consumers,
            read_elsewhere,
        }
    }

    /// Whether `name` is read by nothing: no node, no graph output, no subgraph.
    fn unused(&self, name: &str) -> bool {
        name.is_empty()
            || (!self.consumers.contains_key(name) && !self.read_elsewhere.contains(name))
    }

    /// The nodes that read `name`, when nothing else (a graph output, a subgraph) does.
    fn only_consumers(&self, name: &str) -> Option<&[usize]> {
        if self.read_elsewhere.contains(name) {
            return None;
        }
        self.consumers.get(name).map(Vec::as_slice)
    }

    fn producer<'g>(&self, graph: &'g GraphProto, name: &str) -> Option<&'g NodeProto> {
        self.producer.get(name).map(|&p| &graph.node[p])
    }
}

fn subgraph_reads(graph: &GraphProto, reads: &mut BTreeSet<String>) {
    for node in &graph.node {
        reads.extend(node.input.iter().filter(|i| !i.is_empty()).cloned());
        for body in subgraphs(node) {
            subgraph_reads(body, reads);
        }
    }
    reads.extend(graph.output.iter().map(|o| o.name.clone()));
}

fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn ints<'n>(node: &'n NodeProto, name: &str) -> Option<&'n [i64]> {
    attribute(node, name).map(|a| a.ints.as_slice())
}

fn int(node: &NodeProto, name: &str) -> Option<i64> {
    attribute(node, name).map(|a| a.i)
}

/// An integer attribute, as this rewrite marks nodes.
fn int_attribute(name: &str, value: i64) -> AttributeProto {
    let mut attribute = AttributeProto::new();
    attribute.name = name.into();
    attribute.type_ = AttributeType::INT.into();
    attribute.i = value;
    attribute
}

fn is_op(node: &NodeProto, op_type: &str) -> bool {
    node.op_type == op_type && is_default_domain(&node.domain)
}

/// An `op_type` node in ONNX's domain or already moved to [`DOMAIN`].
fn is_either_domain_op(node: &NodeProto, op_type: &str) -> bool {
    node.op_type == op_type && (is_default_domain(&node.domain) || node.domain == DOMAIN)
}

/// A `MaxPool` this crate imports or burn-onnx does (either domain).
fn is_max_pool(node: &NodeProto) -> bool {
    is_either_domain_op(node, MAX_POOL)
}

/// The graphs in `node`'s attributes (the bodies of `If`, `Loop`, `Scan`).
fn subgraphs(node: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    node.attribute
        .iter()
        .flat_map(|attribute| attribute.g.as_ref().into_iter().chain(&attribute.graphs))
}

/// The integer values and shape of a constant: an initializer or a `Constant` node's output.
fn constant(graph: &GraphProto, uses: &Uses, name: &str) -> Option<(Vec<i64>, Vec<usize>)> {
    let from_tensor = |tensor: &TensorProto| {
        // Only integer tensors can be these constants: weights are not copied to find that out.
        if !INTEGER_TYPES.contains(&tensor.data_type) {
            return None;
        }
        let shape = tensor.dims.iter().map(|&d| d as usize).collect();
        let values = TensorData::try_from(tensor.clone())
            .ok()?
            .to_i64_vec()
            .ok()?;
        Some((values, shape))
    };
    if let Some(tensor) = graph.initializer.iter().find(|t| t.name == name) {
        return from_tensor(tensor);
    }
    let node = uses.producer(graph, name)?;
    if !is_op(node, "Constant") {
        return None;
    }
    let value = node.attribute.first()?;
    match value.name.as_str() {
        "value" => from_tensor(value.t.as_ref()?),
        "value_int" => Some((vec![value.i], vec![])),
        "value_ints" => Some((value.ints.clone(), vec![value.ints.len()])),
        _ => None,
    }
}

/// The integer values of a constant input, or of an attribute (`Slice` before opset 10).
fn constant_or_attribute(
    graph: &GraphProto,
    uses: &Uses,
    node: &NodeProto,
    input: usize,
    name: &str,
) -> Option<Vec<i64>> {
    match node.input.get(input).filter(|i| !i.is_empty()) {
        Some(input) => constant(graph, uses, input).map(|(values, _)| values),
        None => ints(node, name).map(<[i64]>::to_vec),
    }
}

/// Whether `node` is a `MaxPool` with `Indices` whose every window is one element at its own
/// place: kernel, strides and dilations of 1, no padding.
fn is_identity_pool(node: &NodeProto) -> bool {
    let all = |name, value: i64| ints(node, name).is_none_or(|v| v.iter().all(|&x| x == value));
    is_op(node, MAX_POOL)
        && node.output.len() == 2
        && ints(node, "kernel_shape").is_some_and(|k| !k.is_empty() && k.iter().all(|&x| x == 1))
        && all("strides", 1)
        && all("dilations", 1)
        && all("pads", 0)
}

/// Whether `slice` keeps `[0:1]` of every spatial axis of a rank-`rank` tensor, and all of the
/// others.
fn is_first_position_slice(
    graph: &GraphProto,
    uses: &Uses,
    slice: &NodeProto,
    rank: usize,
) -> bool {
    if !is_op(slice, "Slice") {
        return false;
    }
    let starts = constant_or_attribute(graph, uses, slice, 1, "starts");
    let ends = constant_or_attribute(graph, uses, slice, 2, "ends");
    let axes = constant_or_attribute(graph, uses, slice, 3, "axes");
    let steps = constant_or_attribute(graph, uses, slice, 4, "steps");
    let (Some(starts), Some(ends), Some(axes)) = (starts, ends, axes) else {
        return false;
    };
    let axes: BTreeSet<i64> = axes
        .iter()
        .map(|&a| if a < 0 { a + rank as i64 } else { a })
        .collect();
    let spatial: BTreeSet<i64> = (2..rank as i64).collect();
    starts.len() == rank - 2
        && ends.len() == rank - 2
        && starts.iter().all(|&s| s == 0)
        && ends.iter().all(|&e| e == 1)
        && axes == spatial
        && steps.is_none_or(|s| s.iter().all(|&x| x == 1))
}

/// Turns each 1x1 base-offset pool and its slices into `PlaneOffsets` nodes. Returns how many
/// slices were turned.
fn fold_plane_offsets(graph: &mut GraphProto) -> usize {
    let uses = Uses::of(graph);
    let mut replaced: Vec<(usize, NodeProto)> = Vec::new();
    let mut removed = BTreeSet::new();
    for (position, pool) in graph.node.iter().enumerate() {
        if !is_identity_pool(pool) || !uses.unused(&pool.output[0]) {
            continue;
        }
        let rank = ints(pool, "kernel_shape").map_or(0, <[i64]>::len) + 2;
        let Some(slices) = uses.only_consumers(&pool.output[1]) else {
            continue;
        };
        let all_slices = slices.iter().all(|&s| {
            let slice = &graph.node[s];
            slice.input.first() == Some(&pool.output[1])
                && is_first_position_slice(graph, &uses, slice, rank)
        });
        if !all_slices {
            continue;
        }
        for &s in slices {
            let slice = &graph.node[s];
            let mut offsets = NodeProto::new();
            offsets.op_type = PLANE_OFFSETS.into();
            offsets.domain = DOMAIN.into();
            offsets.name = slice.name.clone();
            offsets.input.push(pool.input[0].clone());
            offsets.output.push(slice.output[0].clone());
            replaced.push((s, offsets));
        }
        removed.insert(position);
    }
    let count = replaced.len();
    for (position, node) in replaced {
        graph.node[position] = node;
    }
    let mut position = 0;
    graph.node.retain(|_| {
        position += 1;
        !removed.contains(&(position - 1))
    });
    count
}

/// A pool's `Indices` output feeding an unpool, and how the model re-bases them.
struct Traced {
    /// The position of the pool node.
    pool: usize,
    /// The re-basing plane length (`None`: unchanged).
    plane_stride: Option<i64>,
}

/// The pool whose `Indices` output is `name` (row-major: `storage_order` 0).
fn pool_of_indices(graph: &GraphProto, uses: &Uses, name: &str) -> Option<usize> {
    let &position = uses.producer.get(name)?;
    let pool = &graph.node[position];
    let row_major = int(pool, "storage_order").unwrap_or(0) == 0;
    (is_max_pool(pool) && row_major && pool.output.get(1).map(String::as_str) == Some(name))
        .then_some(position)
}

/// Traces an unpool's indices `name` to a pool: its `Indices` directly, or
/// `Add(Sub(Indices, PlaneOffsets(pool input)), offsets)` with `offsets` the exporters'
/// `(n*C + c) * K`.
fn trace(graph: &GraphProto, uses: &Uses, name: &str, unpool_x: &str) -> Option<Traced> {
    if let Some(pool) = pool_of_indices(graph, uses, name) {
        return Some(Traced {
            pool,
            plane_stride: None,
        });
    }
    let add = uses.producer(graph, name).filter(|n| is_op(n, "Add"))?;
    let [a, b] = add.input.as_slice() else {
        return None;
    };
    [(a, b), (b, a)]
        .into_iter()
        .find_map(|(difference, offsets)| {
            let sub = uses
                .producer(graph, difference)
                .filter(|n| is_op(n, "Sub"))?;
            let [indices, base] = sub.input.as_slice() else {
                return None;
            };
            let pool = pool_of_indices(graph, uses, indices)?;
            let base = uses
                .producer(graph, base)
                .filter(|n| n.op_type == PLANE_OFFSETS && n.domain == DOMAIN)?;
            if base.input.first() != graph.node[pool].input.first() {
                return None;
            }
            let plane_stride = offsets_stride(graph, uses, offsets, unpool_x)?;
            Some(Traced { pool, plane_stride })
        })
}

/// `K` where `name` is `(n*C + c) * K` of shape `[N, C, 1, ..]` for the planes of `unpool_x`:
/// `Some(None)` where that is all zeros.
fn offsets_stride(
    graph: &GraphProto,
    uses: &Uses,
    name: &str,
    unpool_x: &str,
) -> Option<Option<i64>> {
    // The dynamo exporter's form: the offsets as a constant.
    if let Some((values, shape)) = constant(graph, uses, name) {
        let planes_only = shape.len() >= 3 && shape[2..].iter().all(|&d| d == 1);
        if !planes_only || values.len() != shape[0] * shape[1] {
            return None;
        }
        // One plane: its offset is 0 whatever K is, and the indices pass unchanged.
        let Some(&k) = values.get(1) else {
            return (values == [0]).then_some(None);
        };
        let ramp = values
            .iter()
            .enumerate()
            .all(|(p, &v)| Some(v) == (p as i64).checked_mul(k));
        return (ramp && k >= 0).then_some(Some(k));
    }
    // The legacy exporter's: Reshape(Mul(Range(0, N*C, 1), K), Concat(Shape(x)[0:2], [1, ..])).
    let reshape = uses.producer(graph, name).filter(|n| is_op(n, "Reshape"))?;
    let [ramp, target] = reshape.input.as_slice() else {
        return None;
    };
    let mul = uses.producer(graph, ramp).filter(|n| is_op(n, "Mul"))?;
    let [p, q] = mul.input.as_slice() else {
        return None;
    };
    let (range, k) = [(p, q), (q, p)].into_iter().find_map(|(range, k)| {
        let range = uses.producer(graph, range).filter(|n| is_op(n, "Range"))?;
        let (k, shape) = constant(graph, uses, k)?;
        (shape.iter().product::<usize>() == 1).then_some((range, k[0]))
    })?;
    let [start, limit, delta] = range.input.as_slice() else {
        return None;
    };
    let scalar = |name: &str, value| constant(graph, uses, name).is_some_and(|(v, _)| v == [value]);
    let is_planes = is_plane_count(graph, uses, limit, unpool_x);
    let is_target = is_planes_shape(graph, uses, target, unpool_x);
    (k > 0 && scalar(start, 0) && scalar(delta, 1) && is_planes && is_target).then_some(Some(k))
}

/// Whether `name` is a `Shape` of `x` (the whole shape).
fn is_shape_of(graph: &GraphProto, uses: &Uses, name: &str, x: &str) -> bool {
    uses.producer(graph, name).is_some_and(|shape| {
        is_op(shape, "Shape")
            && shape.input.first().map(String::as_str) == Some(x)
            && attribute(shape, "start").is_none()
            && attribute(shape, "end").is_none()
    })
}

/// Whether `name` is `N * C` of `x`: `Mul(Gather(Shape(x), 0), Gather(Shape(x), 1))`.
fn is_plane_count(graph: &GraphProto, uses: &Uses, name: &str, x: &str) -> bool {
    let Some(mul) = uses.producer(graph, name).filter(|n| is_op(n, "Mul")) else {
        return false;
    };
    let axis = |name: &str| -> Option<i64> {
        let gather = uses.producer(graph, name).filter(|n| is_op(n, "Gather"))?;
        let [shape, index] = gather.input.as_slice() else {
            return None;
        };
        let (index, dims) = constant(graph, uses, index)?;
        (int(gather, "axis").unwrap_or(0) == 0
            && dims.is_empty()
            && is_shape_of(graph, uses, shape, x))
        .then(|| index[0])
    };
    let axes: BTreeSet<Option<i64>> = mul.input.iter().map(|i| axis(i)).collect();
    mul.input.len() == 2 && axes == BTreeSet::from([Some(0), Some(1)])
}

/// Whether `name` is `[N, C, 1, ..]` of `x`: `Concat(Slice(Shape(x), [0], [2]), [1, ..])`.
fn is_planes_shape(graph: &GraphProto, uses: &Uses, name: &str, x: &str) -> bool {
    let Some(concat) = uses.producer(graph, name).filter(|n| is_op(n, "Concat")) else {
        return false;
    };
    let [head, ones] = concat.input.as_slice() else {
        return false;
    };
    let head_is_n_c = uses.producer(graph, head).is_some_and(|slice| {
        is_op(slice, "Slice")
            && slice
                .input
                .first()
                .is_some_and(|s| is_shape_of(graph, uses, s, x))
            && constant_or_attribute(graph, uses, slice, 1, "starts") == Some(vec![0])
            && constant_or_attribute(graph, uses, slice, 2, "ends") == Some(vec![2])
            && constant_or_attribute(graph, uses, slice, 3, "axes").is_none_or(|axes| axes == [0])
            && constant_or_attribute(graph, uses, slice, 4, "steps")
                .is_none_or(|steps| steps == [1])
    });
    let ones = constant(graph, uses, ones).is_some_and(|(v, _)| v.iter().all(|&d| d == 1));
    int(concat, "axis") == Some(0) && head_is_n_c && ones
}

/// A `ScatterND` the dynamo exporter writes for `max_unpool`, read from the graph.
struct Scatter {
    position: usize,
    /// The unflattened indices, which trace to a pool.
    indices: String,
    /// The pool whose `Indices` they are.
    pool: usize,
    /// The constant output shape the zeros were made in.
    output_shape: String,
    rank: usize,
    updates: String,
}

/// The input of a `Reshape(input, [-1])` (a flattening), or of an `Unsqueeze(input, [-1])` of
/// one-dimensional `input`.
fn flattened<'g>(graph: &'g GraphProto, uses: &Uses, name: &str) -> Option<&'g str> {
    let reshape = uses.producer(graph, name).filter(|n| is_op(n, "Reshape"))?;
    let [input, target] = reshape.input.as_slice() else {
        return None;
    };
    (constant(graph, uses, target)?.0 == [-1]).then_some(input.as_str())
}

/// The `ScatterND` at `position`, where it scatters into zeros at indices traced to a pool.
fn scatter(graph: &GraphProto, uses: &Uses, position: usize) -> Option<Scatter> {
    let node = &graph.node[position];
    let [data, indices, updates] = node.input.as_slice() else {
        return None;
    };
    if !is_op(node, "ScatterND")
        || attribute(node, "reduction").is_some_and(|r| &r.s[..] != b"none")
    {
        return None;
    }
    // Zeros of a constant shape, flattened.
    let zeros = uses
        .producer(graph, flattened(graph, uses, data)?)
        .filter(|n| is_op(n, "ConstantOfShape"))?;
    let value_is_zero = match attribute(zeros, "value").and_then(|a| a.t.as_ref()) {
        None => true,
        Some(value) => TensorData::try_from(value.clone())
            .ok()
            .and_then(|v| v.to_f64_vec().ok())
            .is_some_and(|v| v.iter().all(|&x| x == 0.0)),
    };
    let output_shape = zeros.input.first()?;
    let (shape, _) = constant(graph, uses, output_shape)?;
    // Indices: Unsqueeze(flattened indices, [-1]) (axes an input from opset 13, before it an
    // attribute).
    let unsqueeze = uses
        .producer(graph, indices)
        .filter(|n| is_op(n, "Unsqueeze"))?;
    let axes = constant_or_attribute(graph, uses, unsqueeze, 1, "axes")?;
    if !matches!(axes.as_slice(), [-1] | [1]) {
        return None;
    }
    let indices = flattened(graph, uses, unsqueeze.input.first()?)?;
    let rank = shape.len();
    let traced = trace(graph, uses, indices, "")?;
    (value_is_zero && rank >= 3).then(|| Scatter {
        position,
        indices: indices.to_string(),
        pool: traced.pool,
        output_shape: output_shape.clone(),
        rank,
        updates: updates.clone(),
    })
}

/// Turns every `ScatterND` the dynamo exporter writes for `max_unpool` into `Reshape` (the values
/// to the indices' shape), `MaxUnpool` and `Reshape` (flat again, as the scatter's output was).
/// Returns how many were turned.
fn route_scatters(graph: &mut GraphProto) -> usize {
    let uses = Uses::of(graph);
    let scatters: Vec<Scatter> = (0..graph.node.len())
        .filter_map(|position| scatter(graph, &uses, position))
        .collect();
    if scatters.is_empty() {
        return 0;
    }
    let flat = format!("{DOMAIN}.flat_shape");
    if !graph.initializer.iter().any(|t| t.name == flat) {
        let mut minus_one = TensorProto::new();
        minus_one.name = flat.clone();
        minus_one.data_type = 7; // int64
        minus_one.dims = vec![1];
        minus_one.int64_data = vec![-1];
        graph.initializer.push(minus_one);
    }
    // From the back, so that inserting nodes keeps the earlier positions.
    for found in scatters.iter().rev() {
        let output = graph.node[found.position].output[0].clone();
        // The shape of the pool's `Indices` (that of its values): the unpool reads them after
        // this, so the shape is taken from a clone and keeps no tensor alive.
        let pool_indices = graph.node[found.pool].output[1].clone();
        let (shape, values, unpooled) = (
            format!("{output}_values_shape"),
            format!("{output}_values"),
            format!("{output}_unpooled"),
        );
        let node = |op: &str, inputs: &[&str], output: &str| {
            let mut node = NodeProto::new();
            node.op_type = op.into();
            node.name = output.to_string();
            node.input = inputs.iter().map(|i| i.to_string()).collect();
            node.output.push(output.to_string());
            node
        };
        let ones: Vec<i64> = vec![1; found.rank - 2];
        let mut unpool = node(
            OP_TYPE,
            &[&values, &found.indices, &found.output_shape],
            &unpooled,
        );
        for name in ["kernel_shape", "strides"] {
            let mut ints = AttributeProto::new();
            ints.name = name.into();
            ints.type_ = AttributeType::INTS.into();
            ints.ints = ones.clone();
            unpool.attribute.push(ints);
        }
        unpool.attribute.push(int_attribute(SCATTER_PLACEMENT, 1));
        let replacement = [
            node("Shape", &[&pool_indices], &shape),
            node("Reshape", &[&found.updates, &shape], &values),
            unpool,
            node("Reshape", &[&unpooled, &flat], &output),
        ];
        graph
            .node
            .splice(found.position..=found.position, replacement);
    }
    scatters.len()
}

/// Points every unpool whose indices trace to a pool at that pool's `Indices`, with the pool's
/// input shape (a third output of the pool) as a fourth input. Returns how many unpools were
/// traced.
fn trace_unpool_indices(graph: &mut GraphProto) -> usize {
    let uses = Uses::of(graph);
    let mut traced: Vec<(usize, Traced)> = Vec::new();
    for (position, node) in graph.node.iter().enumerate() {
        let unpool = is_either_domain_op(node, OP_TYPE);
        if !unpool || !(2..=3).contains(&node.input.len()) {
            continue;
        }
        if let Some(found) = trace(graph, &uses, &node.input[1], &node.input[0]) {
            traced.push((position, found));
        }
    }
    // The pool's code reads its input's shape before the input moves into the pool: no tensor is
    // kept alive for it.
    for (position, found) in &traced {
        let pool = &mut graph.node[found.pool];
        let shape = format!("{}_pool_input_shape", pool.output[1]);
        if pool.output.len() == 2 {
            pool.output.push(shape.clone());
        }
        let indices = pool.output[1].clone();
        let unpool = &mut graph.node[*position];
        unpool.input[1] = indices;
        if unpool.input.len() == 2 {
            unpool.input.push(String::new());
        }
        unpool.input.push(shape);
        if let Some(stride) = found.plane_stride {
            unpool
                .attribute
                .push(int_attribute(POOL_PLANE_STRIDE, stride));
        }
    }
    traced.len()
}

/// Removes the nodes whose outputs nothing reads, until none is left, and the unused `Indices`
/// output of every pool. Returns how many nodes were removed.
fn remove_unused(graph: &mut GraphProto) -> usize {
    let before = graph.node.len();
    loop {
        let uses = Uses::of(graph);
        let count = graph.node.len();
        graph
            .node
            .retain(|node| node.output.is_empty() || !node.output.iter().all(|o| uses.unused(o)));
        if graph.node.len() == count {
            break;
        }
    }
    let uses = Uses::of(graph);
    for node in graph.node.iter_mut().filter(|n| is_max_pool(n)) {
        if node.output.len() == 2 && uses.unused(&node.output[1]) {
            node.output.pop();
        }
    }
    before - graph.node.len()
}

/// Marks with [`INDICES_FOR_UNPOOL`] every pool whose `Indices` nothing reads but unpools traced
/// to it (which take any integer dtype that holds them) and `Shape` nodes.
fn mark_indices_for_unpool(graph: &mut GraphProto) {
    let uses = Uses::of(graph);
    let internal: Vec<usize> = graph
        .node
        .iter()
        .enumerate()
        .filter(|(_, pool)| is_max_pool(pool) && pool.output.len() == 3)
        .filter(|(_, pool)| {
            uses.only_consumers(&pool.output[1]).is_some_and(|readers| {
                readers.iter().all(|&r| {
                    let reader = &graph.node[r];
                    // A `Shape` reads the dims only (the dynamo route's reshape of the values).
                    let unpool = reader.op_type == OP_TYPE
                        && reader.input.len() == 4
                        && reader.input[1] == pool.output[1]
                        && reader.input[0] != pool.output[1]
                        && reader.input[2] != pool.output[1];
                    unpool || is_op(reader, "Shape")
                })
            })
        })
        .map(|(position, _)| position)
        .collect();
    for position in internal {
        graph.node[position]
            .attribute
            .push(int_attribute(INDICES_FOR_UNPOOL, 1));
    }
}
