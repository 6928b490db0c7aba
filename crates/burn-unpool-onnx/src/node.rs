//! A `MaxUnpool` node read from the ONNX graph and checked at build time.
//!
//! Every check here names the node, so a malformed model fails the build with a message that says
//! which node and what is wrong, instead of failing later inside the generated code.

use burn_unpool_shape::{default_output_size, onnx_pads_to_pairs};

use crate::index_arithmetic::POOL_PLANE_STRIDE;
use crate::rewrite::NAME_ATTRIBUTE;
use onnx_ir::{ArgType, Argument, CustomNode, DType, ProcessError, TensorDataExt, TensorType};

/// A checked `MaxUnpool` node: its attributes and where its `output_shape` comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UnpoolNode {
    pub name: String,
    pub x: TensorType,
    pub kernel_shape: Vec<usize>,
    pub strides: Option<Vec<usize>>,
    pub pads: Option<Vec<usize>>,
    pub output_shape: OutputShapeInput,
    /// The pool the indices were traced to, by [`rewrite_index_arithmetic`](crate::rewrite_index_arithmetic).
    pub pool: Option<TracedPool>,
}

/// A pool an unpool's indices were traced to: its input's shape (the fourth input) and how the
/// model re-bases its indices.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TracedPool {
    pub input_shape: PoolShape,
    pub plane_stride: Option<usize>,
}

/// The shape of a traced pool's input.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PoolShape {
    /// Known at build time.
    Constant(Vec<usize>),
    /// A runtime shape value (`[i64; R]` in the generated code).
    Shape,
}

/// The optional third input of `MaxUnpool`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OutputShapeInput {
    /// No `output_shape`: the output has the shape inferred from the attributes.
    Absent,
    /// A constant (an initializer or a `Constant` node): known at build time.
    Constant(Vec<usize>),
    /// A runtime int64 tensor of rank 1.
    Tensor,
    /// A runtime shape value (`[i64; R]` in the generated code), e.g. from a `Shape` node.
    Shape,
}

/// What is wrong with a `MaxUnpool` or `MaxPool` node. `node` names it as
/// `MaxUnpool node 'name'`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NodeError {
    /// Not 2 to 4 inputs.
    #[error(
        "{node}: expects 2 or 3 inputs (X, I, optional output_shape), and a fourth only \
         where the import traced I to a pool (its input's shape), got {count}"
    )]
    InputCount { node: String, count: usize },
    /// An input that must be a tensor is not one.
    #[error("{node}: input {input} must be a tensor")]
    NotATensor { node: String, input: &'static str },
    /// `X` is not a float tensor.
    #[error("{node}: X must be a float tensor, got {dtype}")]
    ValueDtype { node: String, dtype: String },
    /// `I` is not int64.
    #[error("{node}: indices I must be int64 (ONNX tensor(int64)), got {dtype}")]
    IndicesDtype { node: String, dtype: String },
    /// `X` is not `[N, C, D1..Dk]` with `k` in 1..=3.
    #[error("{node}: X must have rank 3, 4 or 5 ([N, C, D1..Dk], k = 1..3), got rank {rank}")]
    Rank { node: String, rank: usize },
    /// `X` and `I` have different ranks.
    #[error("{node}: X and I must have the same rank, got X rank {x} and I rank {indices}")]
    RankMismatch {
        node: String,
        x: usize,
        indices: usize,
    },
    /// The required `kernel_shape` attribute is absent.
    #[error("{node}: the required attribute kernel_shape is missing")]
    MissingKernelShape { node: String },
    /// An attribute or `output_shape` has the wrong number of entries.
    #[error("{node}: {name} must have {expected} entries, got {} ({values:?})", .values.len())]
    Length {
        node: String,
        name: &'static str,
        expected: usize,
        values: Vec<i64>,
    },
    /// A runtime `output_shape` whose length is known at build time and wrong.
    #[error("{node}: output_shape must have {expected} entries (the rank of X), got {length}")]
    OutputShapeLength {
        node: String,
        expected: usize,
        length: usize,
    },
    /// `output_shape` is not a 1-d int64 tensor.
    #[error("{node}: output_shape must be a 1-d int64 tensor, got {found}")]
    OutputShapeType { node: String, found: String },
    /// Anything else wrong with the node, said in full.
    #[error("{node}: {what}")]
    Invalid { node: String, what: String },
    /// An attribute or `output_shape` has an entry out of its range.
    #[error("{node}: {name} entries must be {rule}, got {values:?}")]
    Value {
        node: String,
        name: &'static str,
        rule: &'static str,
        values: Vec<i64>,
    },
}

impl From<NodeError> for ProcessError {
    fn from(error: NodeError) -> Self {
        ProcessError::Custom(error.to_string())
    }
}

impl UnpoolNode {
    /// Reads and checks `node`.
    pub fn read(node: &CustomNode) -> Result<Self, NodeError> {
        let name = node
            .attrs
            .get_string(NAME_ATTRIBUTE)
            .unwrap_or(&node.name)
            .to_string();
        let label = format!("MaxUnpool node '{name}'");
        if !(2..=4).contains(&node.inputs.len()) {
            return Err(NodeError::InputCount {
                node: label,
                count: node.inputs.len(),
            });
        }
        let x = tensor(&node.inputs[0], &label, "X")?;
        let indices = tensor(&node.inputs[1], &label, "I")?;
        if !x.dtype.is_float() {
            return Err(NodeError::ValueDtype {
                node: label,
                dtype: format!("{:?}", x.dtype),
            });
        }
        if indices.dtype != DType::I64 {
            return Err(NodeError::IndicesDtype {
                node: label,
                dtype: format!("{:?}", indices.dtype),
            });
        }
        if !(3..=5).contains(&x.rank) {
            return Err(NodeError::Rank {
                node: label,
                rank: x.rank,
            });
        }
        if indices.rank != x.rank {
            return Err(NodeError::RankMismatch {
                node: label,
                x: x.rank,
                indices: indices.rank,
            });
        }
        let dims = x.rank - 2;
        let Some(kernel) = node.attrs.get_i64s("kernel_shape") else {
            return Err(NodeError::MissingKernelShape { node: label });
        };
        let kernel_shape = entries(&label, "kernel_shape", kernel, dims, Positive)?;
        let strides = node
            .attrs
            .get_i64s("strides")
            .map(|s| entries(&label, "strides", s, dims, Positive))
            .transpose()?;
        let pads = node
            .attrs
            .get_i64s("pads")
            .map(|p| entries(&label, "pads", p, 2 * dims, NonNegative))
            .transpose()?;
        let output_shape = match node.inputs.get(2) {
            None => OutputShapeInput::Absent,
            Some(arg) if arg.name.is_empty() => OutputShapeInput::Absent,
            Some(arg) => output_shape(arg, &label, x.rank)?,
        };
        let pool = match node.inputs.get(3) {
            None => None,
            Some(arg) => Some(traced_pool(node, arg, &label, x.rank)?),
        };
        Ok(Self {
            name,
            x,
            kernel_shape,
            strides,
            pads,
            output_shape,
            pool,
        })
    }

    /// The spatial shape inferred from the attributes, where `X`'s spatial shape is known at build
    /// time: `(I - 1) * stride - (pad_begin + pad_end) + kernel` per axis.
    pub fn inferred_spatial(&self) -> Option<Vec<i128>> {
        let static_shape = self.x.static_shape.as_ref()?;
        let dims = self.kernel_shape.len();
        let pads = self.pads.clone().unwrap_or_else(|| vec![0; 2 * dims]);
        let padding = onnx_pads_to_pairs(&pads);
        (0..dims)
            .map(|a| {
                let input = static_shape.get(2 + a).copied().flatten()?;
                let stride = self.strides.as_ref().map_or(1, |s| s[a]);
                let kernel = self.kernel_shape[a];
                Some(default_output_size(input, kernel, stride, padding[a], 1))
            })
            .collect()
    }

    /// The output's static shape, where it is known at build time.
    pub fn static_output_shape(&self) -> Option<Vec<Option<usize>>> {
        match &self.output_shape {
            OutputShapeInput::Constant(shape) => Some(shape.iter().map(|&d| Some(d)).collect()),
            OutputShapeInput::Absent => {
                let batch = self.x.static_shape.as_ref()?;
                let spatial = self.inferred_spatial()?;
                let spatial = spatial.into_iter().map(|d| usize::try_from(d).ok());
                Some(batch[..2].iter().copied().chain(spatial).collect())
            }
            OutputShapeInput::Tensor | OutputShapeInput::Shape => None,
        }
    }

    /// The output's type: `X`'s dtype and rank.
    pub fn output_type(&self) -> ArgType {
        ArgType::Tensor(TensorType {
            dtype: self.x.dtype,
            rank: self.x.rank,
            static_shape: self.static_output_shape(),
        })
    }
}

pub(crate) fn tensor(
    arg: &Argument,
    node: &str,
    input: &'static str,
) -> Result<TensorType, NodeError> {
    match &arg.ty {
        ArgType::Tensor(tensor) => Ok(tensor.clone()),
        _ => Err(NodeError::NotATensor {
            node: node.to_string(),
            input,
        }),
    }
}

/// The range an attribute's entries must lie in.
#[derive(Clone, Copy)]
pub(crate) enum Range {
    Positive,
    NonNegative,
}
pub(crate) use Range::{NonNegative, Positive};

pub(crate) fn entries(
    node: &str,
    name: &'static str,
    values: &[i64],
    expected: usize,
    range: Range,
) -> Result<Vec<usize>, NodeError> {
    if values.len() != expected {
        return Err(NodeError::Length {
            node: node.to_string(),
            name,
            expected,
            values: values.to_vec(),
        });
    }
    let (rule, ok): (_, fn(i64) -> bool) = match range {
        Positive => ("positive", |v| v > 0),
        NonNegative => ("non-negative", |v| v >= 0),
    };
    if !values.iter().all(|&v| ok(v)) {
        return Err(NodeError::Value {
            node: node.to_string(),
            name,
            rule,
            values: values.to_vec(),
        });
    }
    Ok(values.iter().map(|&v| v as usize).collect())
}

fn output_shape(arg: &Argument, node: &str, rank: usize) -> Result<OutputShapeInput, NodeError> {
    let type_error = || NodeError::OutputShapeType {
        node: node.to_string(),
        found: format!("{:?}", arg.ty),
    };
    if let Some(data) = arg.value() {
        let values = data.to_i64_vec().map_err(|_| type_error())?;
        let shape = entries(node, "output_shape", &values, rank, NonNegative)?;
        return Ok(OutputShapeInput::Constant(shape));
    }
    let length_error = |length: usize| NodeError::OutputShapeLength {
        node: node.to_string(),
        expected: rank,
        length,
    };
    match &arg.ty {
        ArgType::Shape(length) if *length != rank => Err(length_error(*length)),
        ArgType::Shape(_) => Ok(OutputShapeInput::Shape),
        ArgType::Tensor(t) if t.rank != 1 || t.dtype != DType::I64 => Err(type_error()),
        ArgType::Tensor(t) => match t.static_shape.as_deref() {
            Some([Some(length)]) if *length != rank => Err(length_error(*length)),
            _ => Ok(OutputShapeInput::Tensor),
        },
        _ => Err(type_error()),
    }
}

/// The traced pool of an unpool's fourth input (a shape of `rank` entries) and its
/// [`POOL_PLANE_STRIDE`] attribute.
fn traced_pool(
    node: &CustomNode,
    arg: &Argument,
    label: &str,
    rank: usize,
) -> Result<TracedPool, NodeError> {
    let invalid = |what: String| NodeError::Invalid {
        node: label.to_string(),
        what,
    };
    let input_shape = match (arg.value(), &arg.ty) {
        (Some(data), _) => {
            let values = data.to_i64_vec().map_err(|_| {
                invalid(format!(
                    "the pool input shape must be int64, got {:?}",
                    arg.ty
                ))
            })?;
            PoolShape::Constant(entries(
                label,
                "the pool input shape",
                &values,
                rank,
                NonNegative,
            )?)
        }
        (None, ArgType::Shape(length)) if *length == rank => PoolShape::Shape,
        (None, other) => {
            return Err(invalid(format!(
                "the fourth input must be the shape of the pool the indices come from ({rank} \
                 entries), got {other:?}"
            )));
        }
    };
    let plane_stride = match node.attrs.get_i64(POOL_PLANE_STRIDE) {
        None => None,
        Some(stride) => Some(usize::try_from(stride).map_err(|_| {
            invalid(format!(
                "{POOL_PLANE_STRIDE} must be non-negative, got {stride}"
            ))
        })?),
    };
    Ok(TracedPool {
        input_shape,
        plane_stride,
    })
}
