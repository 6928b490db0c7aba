//! The portable routes: compositions of Burn's own tensor ops that run on any device, for the
//! devices and plans this crate's kernels do not serve.

pub(crate) mod pool;
mod unpool;

pub(crate) use unpool::run;
