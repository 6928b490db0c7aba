//! Progress output: a progress bar per split on a terminal, one line of metrics per split and
//! epoch everywhere.

use std::collections::HashMap;
use std::time::Instant;

use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn::train::metric::{MetricDefinition, MetricId};
use burn::train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};
use indicatif::{ProgressBar, ProgressStyle};

/// Prints `epoch 3/12 train  Loss 0.412  Pixel Accuracy 91.2 %  Mean IoU 0.734  (41.0 s)`.
pub struct EpochRenderer {
    names: HashMap<MetricId, (String, Option<String>)>,
    values: Vec<(String, String)>,
    epoch: usize,
    total_epochs: usize,
    split: String,
    bar: Option<ProgressBar>,
    split_start: Instant,
}

impl Default for EpochRenderer {
    fn default() -> Self {
        Self {
            names: HashMap::new(),
            values: Vec::new(),
            epoch: 1,
            total_epochs: 0,
            split: String::new(),
            bar: None,
            split_start: Instant::now(),
        }
    }
}

impl EpochRenderer {
    fn record(&mut self, state: MetricState) {
        let MetricState::Numeric(entry, Some(value)) = state else {
            return;
        };
        let Some((name, unit)) = self.names.get(&entry.metric_id) else {
            return;
        };
        let shown = match unit.as_deref() {
            Some(unit) => format!("{:.2} {unit}", value.current()),
            None => format!("{:.4}", value.current()),
        };
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = shown,
            None => self.values.push((name.clone(), shown)),
        }
    }
}

impl MetricsRendererTraining for EpochRenderer {
    fn update_train(&mut self, state: MetricState) {
        self.record(state);
    }

    fn update_valid(&mut self, state: MetricState) {
        self.record(state);
    }
}

impl MetricsRendererEvaluation for EpochRenderer {
    fn update_test(&mut self, _name: EvaluationName, state: MetricState) {
        self.record(state);
    }
}

impl MetricsRenderer for EpochRenderer {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        let unit = match definition.attributes {
            burn::train::metric::MetricAttributes::Numeric(attributes) => attributes.unit,
            burn::train::metric::MetricAttributes::None => None,
        };
        self.names
            .insert(definition.metric_id, (definition.name.to_string(), unit));
    }
}

impl EpochRenderer {
    fn start_training(&mut self, total_epochs: usize, starting_epoch: usize) {
        self.total_epochs = total_epochs;
        self.epoch = starting_epoch.max(1);
    }

    fn begin_split(&mut self, split: &str, total_items: Option<usize>) {
        self.split = split.to_string();
        self.values.clear();
        self.split_start = Instant::now();
        let bar = ProgressBar::new(total_items.unwrap_or(0) as u64).with_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} images, {elapsed} (eta {eta})",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(format!(
            "epoch {}/{} {}",
            self.epoch, self.total_epochs, self.split
        ));
        self.bar = Some(bar);
    }

    fn advance_split(&mut self, items_processed: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(items_processed as u64);
        }
    }

    fn finish_split(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let metrics: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        println!(
            "epoch {}/{} {:<5}  {}  ({:.1} s)",
            self.epoch,
            self.total_epochs,
            self.split,
            metrics.join("  "),
            self.split_start.elapsed().as_secs_f64()
        );
    }
}

/// burn-train's progress loggers over the renderer, for either Burn's signatures: a split's calls
/// carry a `$progress`, whose total `$total` and count `$processed` read; `$($end)*` is what
/// `end_split` and `end_test` take besides `self`.
macro_rules! progress_loggers {
    ($progress:ty, total: $total:expr, processed: $processed:expr, end: ($($end:tt)*)) => {
        impl TrainingProgressLogger for EpochRenderer {
            fn start(&mut self, epochs: usize, first: usize, _: Option<usize>, _: Option<&str>) {
                self.start_training(epochs, first);
            }
            fn update_epoch(&mut self, epoch: usize) {
                self.epoch = epoch + 1;
            }
            fn start_split(&mut self, split: &str, progress: $progress) {
                self.begin_split(split, $total(progress));
            }
            fn update_split(&mut self, progress: $progress) {
                self.advance_split($processed(progress));
            }
            fn end_split(&mut self $($end)*) {
                self.finish_split();
            }
            fn end(&mut self) {}
            fn log_event_training(&mut self, _event: String) {}
        }

        impl EvaluationProgressLogger for EpochRenderer {
            fn start_global_progress(&mut self, _total_tests: usize) {}
            fn start_test(&mut self, name: &str, progress: $progress) {
                self.begin_split(name, $total(progress));
            }
            fn update_test_progress(&mut self, progress: $progress) {
                self.advance_split($processed(progress));
            }
            fn end_test(&mut self $($end)*) {
                self.finish_split();
            }
            fn end_global_progress(&mut self) {}
            fn log_event_evaluation(&mut self, _event: String) {}
        }
    };
}

// Burn 0.22's loggers are told item counts.
#[cfg(not(burn_next))]
progress_loggers!(usize, total: Some, processed: std::convert::identity, end: ());

// Burn 0.23's loggers are given a `Progress` (its total may be unknown).
#[cfg(burn_next)]
progress_loggers!(
    &burn::data::dataloader::Progress,
    total: |progress: &burn::data::dataloader::Progress| progress.total,
    processed: |progress: &burn::data::dataloader::Progress| progress.items_processed,
    end: (, _: &burn::data::dataloader::Progress)
);

#[cfg(test)]
mod tests {
    use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};

    use super::EpochRenderer;

    /// The bar's `(position, length)`, if a split is open.
    fn bar(renderer: &EpochRenderer) -> Option<(u64, Option<u64>)> {
        renderer
            .bar
            .as_ref()
            .map(|bar| (bar.position(), bar.length()))
    }

    /// A training split of 12 images and a test of 7, 5 and 3 done, as Burn 0.22 reports them.
    #[cfg(not(burn_next))]
    fn splits(renderer: &mut EpochRenderer) -> [Option<(u64, Option<u64>)>; 3] {
        renderer.start_split("train", 12);
        renderer.update_split(5);
        let train = bar(renderer);
        renderer.end_split();
        let closed = bar(renderer);
        renderer.start_test("test", 7);
        renderer.update_test_progress(3);
        [train, closed, bar(renderer)]
    }

    /// The same splits as Burn 0.23 reports them, in a `Progress`.
    #[cfg(burn_next)]
    fn splits(renderer: &mut EpochRenderer) -> [Option<(u64, Option<u64>)>; 3] {
        use burn::data::dataloader::Progress;
        renderer.start_split("train", &Progress::new(0, 12, None));
        renderer.update_split(&Progress::new(5, 12, None));
        let train = bar(renderer);
        renderer.end_split(&Progress::new(12, 12, None));
        let closed = bar(renderer);
        renderer.start_test("test", &Progress::new(0, 7, None));
        renderer.update_test_progress(&Progress::new(3, 7, None));
        [train, closed, bar(renderer)]
    }

    /// Burn's loggers, under either version's signatures, move the split's bar: its length the
    /// split's images, its position those done; closing the split removes it.
    #[test]
    fn the_loggers_move_the_splits_bar() {
        let mut renderer = EpochRenderer::default();
        TrainingProgressLogger::start(&mut renderer, 3, 2, None, None);
        let [train, closed, test] = splits(&mut renderer);
        assert_eq!(train, Some((5, Some(12))));
        assert_eq!(closed, None);
        assert_eq!(test, Some((3, Some(7))));
        assert_eq!((renderer.epoch, renderer.total_epochs), (2, 3));
    }
}
