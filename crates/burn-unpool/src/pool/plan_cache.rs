//! The plans of the last pools each thread ran, so that a model calling the same pool on the same
//! shape builds its plan once, not per call.

use std::cell::RefCell;

use burn::tensor::DType;

use super::error::PoolError;
use super::plan::{PoolPlan, PoolSpec};

/// Plans kept per thread: a model's distinct pool shapes (SegNet's encoder has five).
const CAPACITY: usize = 8;

thread_local! {
    /// The most recently used plan first.
    static PLANS: RefCell<Vec<(PoolSpec, PoolPlan)>> = const { RefCell::new(Vec::new()) };
}

impl PoolPlan {
    /// [`PoolPlan::new`], from this thread's cache when the same pool ran on the same shape with
    /// the same index dtype (a plan depends on nothing else). Errors are not kept: a bad pool is
    /// checked, and reported, on every call.
    pub(crate) fn cached(
        x_shape: &[usize],
        pool: &PoolSpec,
        index_dtype: DType,
    ) -> Result<Self, PoolError> {
        PLANS.with_borrow_mut(|plans| {
            let hit = plans.iter().position(|(spec, plan)| {
                plan.input_shape() == x_shape && plan.index_dtype() == index_dtype && spec == pool
            });
            let entry = match hit {
                Some(at) => plans.remove(at),
                None => (pool.clone(), Self::new(x_shape, pool, index_dtype)?),
            };
            let plan = entry.1.clone();
            plans.insert(0, entry);
            plans.truncate(CAPACITY);
            Ok(plan)
        })
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::DType;
    use burn::tensor::ops::MaxPoolOptions;

    use super::super::plan::{PoolPlan, PoolSpec};

    fn spec<const D: usize>(kernel: usize) -> PoolSpec {
        PoolSpec::from_pool(&MaxPoolOptions::new([kernel; D]))
    }

    /// Every lookup returns the plan `new` builds for the same arguments: another shape, pool or
    /// index dtype never takes a cached plan, also after the cache has filled and evicted.
    #[test]
    fn a_cached_plan_is_the_plan_of_its_own_arguments() {
        let shapes: Vec<Vec<usize>> = (1..=12).map(|n| vec![1, n, 8, 8]).collect();
        for round in 0..3 {
            for (i, shape) in shapes.iter().enumerate() {
                for kernel in [2, 3] {
                    for dtype in [DType::I32, DType::I64] {
                        let pool = spec::<2>(kernel);
                        let cached = PoolPlan::cached(shape, &pool, dtype).expect("a valid pool");
                        let built = PoolPlan::new(shape, &pool, dtype).expect("a valid pool");
                        assert_eq!(
                            cached, built,
                            "round {round}, shape {i}, k{kernel}, {dtype:?}"
                        );
                    }
                }
            }
        }
    }

    /// A pool that fails is reported on every call, not remembered as a plan.
    #[test]
    fn a_bad_pool_fails_on_every_call() {
        for _ in 0..2 {
            assert!(PoolPlan::cached(&[1, 1, 2, 2], &spec::<2>(3), DType::I32).is_err());
        }
    }
}
