//! `training.png`: loss, pixel accuracy and mean IoU per epoch, for the training and validation
//! splits, read back from burn-train's metric logs and drawn with plotters (labels in the 8x8
//! font the prediction sheets use, so no system font is needed).

use std::fs;
use std::path::Path;

use image::{Rgb, RgbImage};
use plotters::prelude::*;

use crate::render::draw_text;

/// The plotted metrics: burn-train's log name, the title, and how an epoch's value is read from
/// its per-batch lines (the loss logs each batch's value; our metrics log the epoch's running
/// value, so its last line is the epoch's).
const METRICS: [(&str, &str, EpochValue); 3] = [
    ("Loss", "loss", EpochValue::Mean),
    ("Pixel_Accuracy", "pixel accuracy (%)", EpochValue::Last),
    ("Mean_IoU", "mean IoU", EpochValue::Last),
];
const SPLITS: [(&str, RGBColor); 2] = [
    ("train", RGBColor(31, 119, 180)),
    ("valid", RGBColor(255, 127, 14)),
];
const PANEL: (u32, u32) = (360, 280);

#[derive(Clone, Copy)]
enum EpochValue {
    Mean,
    Last,
}

/// One metric of one split, per epoch (`None` where the log lacks the epoch).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The metric's title.
    pub metric: &'static str,
    /// `train` or `valid`.
    pub split: &'static str,
    /// The value of epoch `i + 1`.
    pub values: Vec<Option<f64>>,
}

/// The per-epoch values of every plotted metric and split, from the logs under `dir` (burn-train's
/// `<split>/epoch-<n>/<Metric>.log`).
pub fn history(dir: &Path, epochs: usize) -> Vec<Series> {
    let mut series = Vec::new();
    for (file, metric, reading) in METRICS {
        for (split, _) in SPLITS {
            let values = (1..=epochs)
                .map(|epoch| {
                    let path = dir
                        .join(split)
                        .join(format!("epoch-{epoch}"))
                        .join(format!("{file}.log"));
                    epoch_value(&fs::read_to_string(path).ok()?, reading)
                })
                .collect();
            series.push(Series {
                metric,
                split,
                values,
            });
        }
    }
    series
}

/// An epoch's value from its log: lines of `value` or `value,count`.
fn epoch_value(log: &str, reading: EpochValue) -> Option<f64> {
    let entries: Vec<(f64, f64)> = log
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(',');
            let value = fields.next()?.trim().parse().ok()?;
            let count = fields
                .next()
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(1.0);
            Some((value, count))
        })
        .collect();
    match reading {
        EpochValue::Last => entries.last().map(|&(value, _)| value),
        EpochValue::Mean => {
            let total: f64 = entries.iter().map(|&(_, count)| count).sum();
            (total > 0.0).then(|| entries.iter().map(|&(v, c)| v * c).sum::<f64>() / total)
        }
    }
}

/// Draws `series` as one panel per metric, train and valid lines, into `path`.
pub fn draw(series: &[Series], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let (w, h) = (PANEL.0 * METRICS.len() as u32, PANEL.1);
    let mut buffer = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (w, h)).into_drawing_area();
        let panels = root.split_evenly((1, METRICS.len()));
        for ((_, metric, _), panel) in METRICS.iter().zip(&panels) {
            let lines: Vec<&Series> = series.iter().filter(|s| s.metric == *metric).collect();
            draw_panel(panel, &lines)?;
        }
        root.present()?;
    }
    let mut image = RgbImage::from_raw(w, h, buffer).ok_or("plot buffer size")?;
    let black = Rgb([0, 0, 0]);
    for (i, (_, metric, _)) in METRICS.iter().enumerate() {
        let x = i as u32 * PANEL.0;
        draw_text(&mut image, metric, x + 40, 8, black);
        let (low, high) = range(series.iter().filter(|s| s.metric == *metric));
        draw_text(&mut image, &format!("{high:.3}"), x + 2, 28, black);
        draw_text(&mut image, &format!("{low:.3}"), x + 2, PANEL.1 - 40, black);
        let epochs = series.first().map_or(0, |s| s.values.len());
        draw_text(&mut image, "epoch 1", x + 40, PANEL.1 - 14, black);
        let last = format!("{epochs}");
        draw_text(
            &mut image,
            &last,
            x + PANEL.0 - 20 - 8 * last.len() as u32,
            PANEL.1 - 14,
            black,
        );
        // The legend, on the axis line between the first and the last epoch.
        for (j, (split, color)) in SPLITS.iter().enumerate() {
            let at = x + 150 + 56 * j as u32;
            draw_text(
                &mut image,
                split,
                at,
                PANEL.1 - 14,
                Rgb([color.0, color.1, color.2]),
            );
        }
    }
    image.save(path)?;
    Ok(())
}

/// The smallest and largest value of `series`, widened where they are equal.
fn range<'a>(series: impl Iterator<Item = &'a Series>) -> (f64, f64) {
    let values: Vec<f64> = series
        .flat_map(|s| s.values.iter().flatten().copied())
        .collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match (low.is_finite(), high > low) {
        (false, _) => (0.0, 1.0),
        (true, true) => (low, high),
        (true, false) => (low - 0.5, high + 0.5),
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    lines: &[&Series],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let epochs = lines.first().map_or(1, |s| s.values.len()).max(2);
    let (low, high) = range(lines.iter().copied());
    let margin = (high - low) * 0.05;
    // Room for the labels drawn afterwards in the bitmap font.
    let inner = area.margin(24, 24, 56, 16);
    let mut chart = ChartBuilder::on(&inner)
        .build_cartesian_2d(1f64..epochs as f64, (low - margin)..(high + margin))?;
    chart.plotting_area().fill(&WHITE)?;
    let frame = Rectangle::new([(1.0, low - margin), (epochs as f64, high + margin)], BLACK);
    chart.draw_series(std::iter::once(frame))?;
    for series in lines {
        let color = SPLITS
            .iter()
            .find(|(s, _)| *s == series.split)
            .map_or(BLACK, |&(_, c)| c);
        let points: Vec<(f64, f64)> = series
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some(((i + 1) as f64, (*v)?)))
            .collect();
        chart.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_is_the_weighted_mean_of_its_batches_or_its_last_running_value() {
        let log = "2.0,4\n1.0,2\n";
        assert_eq!(epoch_value(log, EpochValue::Mean), Some(10.0 / 6.0));
        assert_eq!(epoch_value(log, EpochValue::Last), Some(1.0));
        assert_eq!(epoch_value("0.5\n0.7\n", EpochValue::Mean), Some(0.6));
        assert_eq!(epoch_value("", EpochValue::Mean), None);
    }
}
