//! The cross-crate suites a GPU run carries, in one binary: `benches/gpu_tables.py` packs it and
//! runs it first on the GPU machine (one binary fits the bundle where one per suite would not).
//! Each suite is also its own test binary; this one is built only with the feature `gpu-suites`,
//! so the test command does not run the suites twice. Run it with `--test-threads 1`: the
//! launch-counting suites read counters the others would add to.

#[path = "conformance.rs"]
mod conformance;
#[path = "determinism.rs"]
mod determinism;
#[path = "dtypes.rs"]
mod dtypes;
#[path = "gradients.rs"]
mod gradients;
#[path = "load.rs"]
mod load;
#[path = "modules.rs"]
mod modules;
#[path = "pool_edges.rs"]
mod pool_edges;
#[path = "pool_indices.rs"]
mod pool_indices;
#[path = "pools.rs"]
mod pools;
