//! The graph rewrite that hands `MaxUnpool` nodes to [`MaxUnpoolOp`](crate::MaxUnpoolOp), and
//! the `MaxPool` nodes burn-onnx cannot import to [`MaxPoolOp`](crate::MaxPoolOp).
//!
//! onnx-ir maps a default-domain `MaxUnpool` to a built-in "unsupported" node before any hook
//! runs, and burn-onnx's hooks only see nodes of other domains; moving the nodes to
//! [`DOMAIN`] (at the model's own default opset, so the opset still tells 9, 11 and 22 apart)
//! routes them to the hook.

use std::collections::BTreeMap;

use onnx_ir::{AttributeProto, AttributeType, GraphProto, ModelProto, NodeProto};

/// The domain the nodes are moved to.
pub const DOMAIN: &str = "burn.unpool";

/// The ONNX operator this crate imports.
pub const OP_TYPE: &str = "MaxUnpool";

/// The ONNX pool whose indices it inverts, imported here where burn-onnx cannot.
pub const MAX_POOL: &str = "MaxPool";

/// ONNX `TensorProto.DataType` codes of the integer types.
pub(crate) const INTEGER_TYPES: [i32; 8] = [2, 3, 4, 5, 6, 7, 12, 13];

/// The attribute that keeps a moved node's ONNX name: onnx-ir renames nodes (`custom1`, ...), and
/// build-time messages should name the node as the model does.
pub const NAME_ATTRIBUTE: &str = "onnx_node_name";

/// Moves every default-domain `MaxUnpool` node of `model` (subgraphs included) to [`DOMAIN`] and
/// imports that domain at the model's default-domain opset. Returns how many nodes moved.
///
/// ```
/// use burn_unpool_onnx::{DOMAIN, rewrite_max_unpool};
/// use burn_unpool_onnx::onnx_ir::{ModelProto, NodeProto};
///
/// let mut model = ModelProto::new();
/// let mut node = NodeProto::new();
/// node.op_type = "MaxUnpool".into();
/// model.graph.mut_or_insert_default().node.push(node);
///
/// assert_eq!(rewrite_max_unpool(&mut model), 1);
/// assert_eq!(model.graph.node[0].domain, DOMAIN);
/// ```
pub fn rewrite_max_unpool(model: &mut ModelProto) -> usize {
    move_nodes(model, &|node, _| node.op_type == OP_TYPE)
}

/// Moves the default-domain `MaxPool` nodes of `model` that burn-unpool imports to [`DOMAIN`]:
/// every pool with an `Indices` output (burn-onnx's pools with indices run Burn's pool, whose
/// edge rules differ from PyTorch's and ONNX's, and convert its indices in extra passes), 3-d pools
/// (Burn 0.22 has none; Burn 0.23's is not checked against ONNX here) and pools whose input the
/// model declares an integer tensor (a graph input, `value_info` or initializer; Burn's pools are
/// float-only). Returns how many nodes moved.
/// burn-onnx keeps the other pools: 1-d and 2-d float pools without `Indices`, which Burn's pools
/// compute as ONNX does.
///
/// ```
/// use burn_unpool_onnx::{DOMAIN, rewrite_max_pool};
/// use burn_unpool_onnx::onnx_ir::{AttributeProto, ModelProto, NodeProto};
///
/// let pool = |kernel: Vec<i64>, outputs: &[&str]| {
///     let mut node = NodeProto::new();
///     node.op_type = "MaxPool".into();
///     node.output = outputs.iter().map(|o| o.to_string()).collect();
///     let mut attribute = AttributeProto::new();
///     attribute.name = "kernel_shape".into();
///     attribute.ints = kernel;
///     node.attribute.push(attribute);
///     node
/// };
/// let mut model = ModelProto::new();
/// let graph = model.graph.mut_or_insert_default();
/// graph.node.push(pool(vec![2, 2], &["y"]));
/// graph.node.push(pool(vec![2, 2, 2], &["y3"]));
/// graph.node.push(pool(vec![2, 2], &["y2", "indices"]));
///
/// assert_eq!(rewrite_max_pool(&mut model), 2);
/// assert_eq!(model.graph.node[0].domain, "");
/// assert_eq!(model.graph.node[1].domain, DOMAIN);
/// assert_eq!(model.graph.node[2].domain, DOMAIN);
/// ```
pub fn rewrite_max_pool(model: &mut ModelProto) -> usize {
    move_nodes(model, &|node, types| {
        let three_d = node
            .attribute
            .iter()
            .any(|a| a.name == "kernel_shape" && a.ints.len() == 3);
        let integer_input = node
            .input
            .first()
            .and_then(|input| types.get(input))
            .is_some_and(|ty| INTEGER_TYPES.contains(ty));
        let with_indices = node.output.get(1).is_some_and(|i| !i.is_empty());
        node.op_type == MAX_POOL && (three_d || integer_input || with_indices)
    })
}

/// The element types a graph declares, by value name: its inputs, outputs, `value_info` and
/// initializers (with those of the graphs around it).
type DeclaredTypes = BTreeMap<String, i32>;

fn declared_types(graph: &GraphProto, outer: &DeclaredTypes) -> DeclaredTypes {
    let mut types = outer.clone();
    for info in graph
        .input
        .iter()
        .chain(&graph.output)
        .chain(&graph.value_info)
    {
        let tensor = info.type_.tensor_type();
        if tensor.elem_type != 0 {
            types.insert(info.name.clone(), tensor.elem_type);
        }
    }
    for initializer in &graph.initializer {
        types.insert(initializer.name.clone(), initializer.data_type);
    }
    types
}

/// Moves the default-domain nodes `select` picks (subgraphs included) to [`DOMAIN`], imported at
/// the model's default-domain opset. Returns how many moved.
fn move_nodes(
    model: &mut ModelProto,
    select: &dyn Fn(&NodeProto, &DeclaredTypes) -> bool,
) -> usize {
    let Some(graph) = model.graph.as_mut() else {
        return 0;
    };
    let moved = rewrite_graph(graph, select, &DeclaredTypes::new());
    if moved > 0 && !model.opset_import.iter().any(|o| o.domain == DOMAIN) {
        let mut import = model
            .opset_import
            .iter()
            .find(|o| is_default_domain(&o.domain))
            .cloned()
            .unwrap_or_default();
        import.domain = DOMAIN.to_string();
        model.opset_import.push(import);
    }
    moved
}

/// ONNX's default operator domain, written either way.
pub(crate) fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

fn rewrite_graph(
    graph: &mut GraphProto,
    select: &dyn Fn(&NodeProto, &DeclaredTypes) -> bool,
    outer: &DeclaredTypes,
) -> usize {
    let types = declared_types(graph, outer);
    let mut moved = 0;
    for (position, node) in graph.node.iter_mut().enumerate() {
        if is_default_domain(&node.domain) && select(node, &types) {
            node.domain = DOMAIN.to_string();
            let name = match node.name.as_str() {
                "" => format!("#{position} (unnamed)"),
                name => name.to_string(),
            };
            let mut attribute = AttributeProto::new();
            attribute.name = NAME_ATTRIBUTE.to_string();
            attribute.type_ = AttributeType::STRING.into();
            attribute.s = name.into_bytes().into();
            node.attribute.push(attribute);
            moved += 1;
        }
        for attribute in &mut node.attribute {
            if let Some(body) = attribute.g.as_mut() {
                moved += rewrite_graph(body, select, &types);
            }
            moved += attribute
                .graphs
                .iter_mut()
                .map(|body| rewrite_graph(body, select, &types))
                .sum::<usize>();
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use onnx_ir::{AttributeProto, Message, NodeProto};

    fn node(op_type: &str, domain: &str) -> NodeProto {
        let mut node = NodeProto::new();
        node.op_type = op_type.into();
        node.domain = domain.into();
        node
    }

    /// A model importing the default domain at `opset`, with `nodes` in its graph.
    fn model(opset: i64, nodes: Vec<NodeProto>) -> ModelProto {
        // OperatorSetIdProto is not re-exported, but `Default` reaches it.
        let mut model = ModelProto::new();
        model.opset_import.push(Default::default());
        model.opset_import[0].version = opset;
        model.graph.mut_or_insert_default().node = nodes;
        model
    }

    #[test]
    fn moves_max_unpool_and_imports_the_domain_at_the_default_opset() {
        let mut m = model(11, vec![node("Conv", ""), node("MaxUnpool", "ai.onnx")]);
        assert_eq!(rewrite_max_unpool(&mut m), 1);
        assert_eq!(m.graph.node[0].domain, "");
        assert_eq!(m.graph.node[1].domain, DOMAIN);
        assert_eq!(m.graph.node[1].attribute[0].name, NAME_ATTRIBUTE);
        assert_eq!(&m.graph.node[1].attribute[0].s[..], b"#1 (unnamed)");
        let import = m.opset_import.iter().find(|o| o.domain == DOMAIN).unwrap();
        assert_eq!(import.version, 11);
    }

    #[test]
    fn a_second_rewrite_changes_nothing() {
        let mut m = model(22, vec![node("MaxUnpool", "")]);
        rewrite_max_unpool(&mut m);
        let once = m.write_to_bytes().unwrap();
        assert_eq!(rewrite_max_unpool(&mut m), 0);
        assert_eq!(m.write_to_bytes().unwrap(), once);
    }

    #[test]
    fn leaves_models_without_max_unpool_and_other_domains_alone() {
        let mut m = model(
            9,
            vec![node("MaxUnpool", "com.example"), node("MaxPool", "")],
        );
        let before = m.write_to_bytes().unwrap();
        assert_eq!(rewrite_max_unpool(&mut m), 0);
        assert_eq!(m.write_to_bytes().unwrap(), before);
    }

    #[test]
    fn moves_pools_over_declared_integer_inputs() {
        let mut pool = node("MaxPool", "");
        pool.input.push("image".into());
        let mut m = model(12, vec![pool.clone(), node("MaxPool", "")]);
        let mut input = onnx_ir::ValueInfoProto::new();
        input.name = "image".into();
        input
            .type_
            .mut_or_insert_default()
            .mut_tensor_type()
            .elem_type = 2; // uint8
        m.graph.mut_or_insert_default().input.push(input);
        assert_eq!(rewrite_max_pool(&mut m), 1);
        assert_eq!(m.graph.node[0].domain, DOMAIN);
        assert_eq!(m.graph.node[1].domain, "");
    }

    #[test]
    fn reaches_subgraphs() {
        let mut body = GraphProto::new();
        body.node.push(node("MaxUnpool", ""));
        let mut attribute = AttributeProto::new();
        attribute.name = "then_branch".into();
        attribute.g = Some(body).into();
        let mut branch = node("If", "");
        branch.attribute.push(attribute);
        let mut m = model(11, vec![branch]);
        assert_eq!(rewrite_max_unpool(&mut m), 1);
        assert_eq!(m.graph.node[0].attribute[0].g.node[0].domain, DOMAIN);
    }
}
