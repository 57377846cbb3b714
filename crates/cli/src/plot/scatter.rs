//! Predicted against measured time, one point per (configuration, schedule), on log-log axes with the
//! diagonal and ±5% / ±15% bands; calibration points and held-out points in different colours.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Figure, drawing, font, hex};

/// One point: measured and predicted time (µs), and whether it was in the calibration set.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub measured: f64,
    pub predicted: f64,
    pub calibration: bool,
    pub causal: bool,
}

pub struct Scatter {
    pub title: String,
    pub points: Vec<Point>,
}

const W: u32 = 900;
const H: u32 = 820;

impl Figure for Scatter {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let all = self.points.iter().flat_map(|p| [p.measured, p.predicted]);
        let lo = all.clone().fold(f64::INFINITY, f64::min).max(1e-3) / 1.25;
        let hi = all.fold(0.0, f64::max).max(lo * 2.0) * 1.25;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, font(18.0))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(76)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("measured main-kernel time (µs)")
            .y_desc("predicted makespan (µs)")
            .x_label_formatter(&decade_label)
            .y_label_formatter(&decade_label)
            .label_style(font(14.0))
            .axis_desc_style(font(15.0))
            .draw()
            .map_err(drawing)?;
        let line = |f: f64| vec![(lo, lo * f), (hi, hi * f)];
        let grey = hex(0x999999);
        chart
            .draw_series(LineSeries::new(line(1.0), BLACK.stroke_width(1)))
            .map_err(drawing)?
            .label("predicted = measured")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
        for f in [0.95, 1.05] {
            chart.draw_series(LineSeries::new(line(f), grey.stroke_width(1))).map_err(drawing)?;
        }
        for f in [0.85, 1.15] {
            chart.draw_series(DashedLineSeries::new(line(f), 4, 4, grey.stroke_width(1))).map_err(drawing)?;
        }
        let groups: [(&str, bool, bool, RGBColor); 4] = [
            ("held out, full", false, false, hex(0x0072B2)),
            ("held out, causal", false, true, hex(0xD55E00)),
            ("calibration set, full", true, false, hex(0x56B4E9)),
            ("calibration set, causal", true, true, hex(0xE69F00)),
        ];
        for (label, calib, causal, colour) in groups {
            let pts: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| p.calibration == calib && p.causal == causal)
                .map(|p| (p.measured, p.predicted))
                .collect();
            let filled = !calib;
            chart
                .draw_series(pts.iter().map(|&(x, y)| {
                    if filled {
                        Circle::new((x, y), 5, colour.filled())
                    } else {
                        Circle::new((x, y), 5, colour.stroke_width(2))
                    }
                }))
                .map_err(drawing)?
                .label(label)
                .legend(move |(x, y)| {
                    if filled {
                        Circle::new((x + 10, y), 5, colour.filled())
                    } else {
                        Circle::new((x + 10, y), 5, colour.stroke_width(2))
                    }
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(font(14.0))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(drawing)?;
        Ok(())
    }
}

/// A log axis's tick label: 1 to 5 times a power of ten only. Plotters ticks every multiple of the decade, and
/// near the decade's top (6000, 7000, 8000, ...) those labels run into each other.
fn decade_label(v: &f64) -> String {
    if !v.is_finite() || *v <= 0.0 {
        return String::new();
    }
    // The decade with a little slack, so that 999.9999 (a tick computed as 10^e * k) counts as 1000.
    let decade = 10f64.powf((v.log10() + 1e-9).floor());
    let mantissa = v / decade;
    let nearest = mantissa.round();
    if (1.0..=5.0).contains(&nearest) && (mantissa - nearest).abs() < 1e-6 * nearest {
        let exact = nearest * decade;
        // At most three decimals below 10: 0.30000000000000004 prints as 0.3.
        if exact >= 10.0 { format!("{exact:.0}") } else { format!("{}", (exact * 1000.0).round() / 1000.0) }
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::decade_label;

    #[test]
    fn only_one_to_five_per_decade_are_labelled() {
        let labels: Vec<String> =
            [1000.0, 2000.0, 3000.0, 5000.0, 7000.0, 10000.0, 0.5, 0.1 * 3.0, 999.9999999999, 6000.0]
                .iter()
                .map(decade_label)
                .collect();
        assert_eq!(labels, ["1000", "2000", "3000", "5000", "", "10000", "0.5", "0.3", "1000", ""]);
    }
}
