//! The sweep plot: predicted relative throughput (bound / makespan, 1 = optimal) against seqlen, one line per
//! schedule, one panel per (mask, head dim), in the layout of the DASH paper's figures 8 and 9 (one row per
//! mask, one column per head dim).

use anyhow::Result;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Figure, bold, drawing, font, hex, text_width, wrap};
use crate::output::num;
use crate::sweep::{Row, SweepResult};
use schedulers::{SPLIT_SUFFIX, ScheduleKind};

const MARGIN: i32 = 14;
const TITLE_LINE_H: i32 = 26;
const SUBTITLE_LINE_H: i32 = 20;
const TITLE_FONT: f64 = 19.0;
const SUBTITLE_FONT: f64 = 14.0;
const LEGEND_H: i32 = 28;
const PANEL_W: i32 = 600;
const PANEL_H: i32 = 400;
const LEGEND_FONT: f64 = 14.0;

/// Okabe-Ito colours for the built-ins (naive in black as the baseline), then Paul Tol's wine, teal and grey for
/// other schedules (a search result, a schedule file).
const PALETTE: [u32; 10] =
    [0x000000, 0xE69F00, 0x0072B2, 0x009E73, 0xCC79A7, 0xD55E00, 0x56B4E9, 0x882255, 0x44AA99, 0x999999];

fn colour(k: usize) -> RGBColor {
    hex(PALETTE[k % PALETTE.len()])
}

/// How a schedule is drawn: its colour and marker index, and whether it is a split variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Style {
    index: usize,
    /// A split variant: drawn in its base schedule's colour and marker, dashed and hollow, so the pair reads
    /// as one schedule with and without the split.
    split: bool,
}

/// The style of a schedule: fixed for the built-ins, so a schedule looks the same in every plot whichever
/// others are beside it; other schedules (a search result) take the next ones in order. A `+split` variant
/// takes its base schedule's index.
fn style_of(name: &str, all: &[String]) -> Style {
    let (base, split) = match name.strip_suffix(SPLIT_SUFFIX) {
        Some(base) => (base, true),
        None => (name, false),
    };
    let is_builtin = |n: &str| ScheduleKind::ALL.iter().any(|k| k.name() == n);
    let index = ScheduleKind::ALL.iter().position(|k| k.name() == base).unwrap_or_else(|| {
        // The distinct other bases in order of first appearance: a split variant shares its base's place.
        let mut others: Vec<&str> = Vec::new();
        for n in all.iter().map(|n| n.strip_suffix(SPLIT_SUFFIX).unwrap_or(n)).filter(|n| !is_builtin(n)) {
            if !others.contains(&n) {
                others.push(n);
            }
        }
        ScheduleKind::ALL.len() + others.iter().take_while(|n| **n != base).count()
    });
    Style { index, split }
}

/// Each schedule also gets its own marker, so lines that coincide (as naive, descending and spt do on full
/// masks) stay distinguishable.
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

const MARKERS: [Marker; 5] = [Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond, Marker::Cross];

fn draw_marker<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, style: Style, (x, y): (i32, i32)) -> Result<()> {
    let c = colour(style.index);
    // Split variants: the same shape, hollow.
    let paint = if style.split { c.stroke_width(2) } else { c.filled() };
    let r = 5;
    match MARKERS[style.index % MARKERS.len()] {
        Marker::Circle => root.draw(&Circle::new((x, y), r, paint)),
        Marker::Square => root.draw(&Rectangle::new([(x - r + 1, y - r + 1), (x + r, y + r)], paint)),
        Marker::Triangle => {
            let corners = vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)];
            if style.split {
                root.draw(&PathElement::new(closed(corners), paint))
            } else {
                root.draw(&Polygon::new(corners, paint))
            }
        }
        Marker::Diamond => {
            let corners = vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)];
            if style.split {
                root.draw(&PathElement::new(closed(corners), paint))
            } else {
                root.draw(&Polygon::new(corners, paint))
            }
        }
        // A cross has no inside to leave hollow: the split variant's is upright (+), the plain one's diagonal.
        Marker::Cross if style.split => {
            root.draw(&PathElement::new(vec![(x - r - 1, y), (x + r + 1, y)], c.stroke_width(3))).map_err(drawing)?;
            root.draw(&PathElement::new(vec![(x, y - r - 1), (x, y + r + 1)], c.stroke_width(3)))
        }
        Marker::Cross => {
            root.draw(&PathElement::new(vec![(x - r, y - r), (x + r, y + r)], c.stroke_width(3))).map_err(drawing)?;
            root.draw(&PathElement::new(vec![(x - r, y + r), (x + r, y - r)], c.stroke_width(3)))
        }
    }
    .map_err(drawing)
}

/// A polygon's outline: its corners with the first repeated at the end.
fn closed(mut corners: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    corners.push(corners[0]);
    corners
}

/// A line in a schedule's style between two pixels: solid, or dashed for a split variant.
fn draw_line<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    style: Style,
    a: (i32, i32),
    b: (i32, i32),
) -> Result<()> {
    let paint = colour(style.index).stroke_width(2);
    if style.split {
        root.draw(&DashedPathElement::new(vec![a, b], 6, 4, paint)).map_err(drawing)
    } else {
        root.draw(&PathElement::new(vec![a, b], paint)).map_err(drawing)
    }
}

/// The width of one legend entry: its line sample, the name, and the gap to the next.
fn legend_item_w(name: &str) -> i32 {
    38 + text_width(name, LEGEND_FONT) as i32 + 26
}

/// Greedy line filling of the legend's names into rows no wider than `width` (at least one name a row).
fn legend_rows(names: &[String], width: i32) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    for name in names {
        let w = legend_item_w(name);
        match rows.last_mut() {
            Some(row) if used + w <= width => row.push(name.clone()),
            _ => {
                rows.push(vec![name.clone()]);
                used = 0;
            }
        }
        used += w;
    }
    rows
}

/// The sweep plot of a result.
pub struct SweepPlot<'a> {
    result: &'a SweepResult,
    /// (mask, head dim, heads) of each panel, row-major.
    masks: Vec<&'static str>,
    head_dims: Vec<(u32, u32)>,
    /// The bottom of the y axis of each row (mask).
    y_lo: Vec<f64>,
    x_range: (f64, f64),
    /// Title and subtitle, wrapped to the width.
    title: Vec<String>,
    subtitle: Vec<String>,
    /// The schedules' names, wrapped into rows that fit the width.
    legend: Vec<Vec<String>>,
}

impl<'a> SweepPlot<'a> {
    pub fn new(result: &'a SweepResult) -> SweepPlot<'a> {
        let mut masks = Vec::new();
        let mut head_dims = Vec::new();
        for r in &result.rows {
            if !masks.contains(&r.mask) {
                masks.push(r.mask);
            }
            if !head_dims.contains(&(r.head_dim, r.heads)) {
                head_dims.push((r.head_dim, r.heads));
            }
        }
        head_dims.sort_unstable();
        // One y range per row: the panels of a mask compare directly, and a full mask's few percent are not
        // flattened by a causal row's wider spread. Each starts at a round twentieth below its data.
        let y_lo = masks
            .iter()
            .map(|m| {
                let min =
                    result.rows.iter().filter(|r| r.mask == *m).map(|r| r.relative_throughput).fold(1.0, f64::min);
                (((min - 0.03) * 20.0).floor() / 20.0).clamp(0.0, 0.95)
            })
            .collect();
        let lx: Vec<f64> = result.rows.iter().map(|r| (r.seqlen as f64).log2()).collect();
        let lo = lx.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = lx.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let width = (head_dims.len() as i32 * PANEL_W) as u32;
        let title = wrap(
            "Predicted relative throughput of the deterministic backward: best lower bound / makespan (1 = optimal)",
            TITLE_FONT,
            true,
            width,
        );
        let c = &result.costs;
        let subtitle = format!(
            "{} tokens per configuration (batch = {} / seqlen), hidden {} (heads = {} / head dim), {} SMs, {} launch; \
             costs: compute {}, reduce {}, hand-off {}{} ({}){}",
            result.tokens,
            result.tokens,
            result.hidden,
            result.hidden,
            result.machine.sms,
            result.machine.launch.name(),
            num(c.compute),
            num(c.reduce),
            num(c.handoff),
            crate::output::model_switches(c),
            if result.time_unit == "us" { "µs, calibrated" } else { "uncalibrated" },
            // The search rows depend on its budget and seed, as the table's preamble says too.
            result.search.map_or(String::new(), |u| format!("; {u}"))
        );
        let subtitle = wrap(&subtitle, SUBTITLE_FONT, false, width);
        let legend = legend_rows(&result.schedules, width as i32);
        SweepPlot { result, masks, head_dims, y_lo, x_range: (lo - 0.4, hi + 0.4), title, subtitle, legend }
    }

    fn header_h(&self) -> i32 {
        MARGIN
            + self.title.len() as i32 * TITLE_LINE_H
            + self.subtitle.len() as i32 * SUBTITLE_LINE_H
            + self.legend.len() as i32 * LEGEND_H
            + 4
    }
}

impl Figure for SweepPlot<'_> {
    fn size(&self) -> (u32, u32) {
        let w = 2 * MARGIN + self.head_dims.len() as i32 * PANEL_W;
        let h = self.header_h() + self.masks.len() as i32 * PANEL_H + MARGIN;
        (w as u32, h as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let r = self.result;
        let mut y = MARGIN;
        for line in &self.title {
            root.draw(&Text::new(line.as_str(), (MARGIN, y), bold(TITLE_FONT))).map_err(drawing)?;
            y += TITLE_LINE_H;
        }
        let grey = hex(0x444444);
        for line in &self.subtitle {
            root.draw(&Text::new(line.as_str(), (MARGIN, y), font(SUBTITLE_FONT).color(&grey))).map_err(drawing)?;
            y += SUBTITLE_LINE_H;
        }

        // Legend: one line-and-marker sample per schedule, in rows that fit the width.
        for (i, row) in self.legend.iter().enumerate() {
            let mut x = MARGIN;
            let y = y + i as i32 * LEGEND_H + LEGEND_H / 2;
            for name in row {
                let style = style_of(name, &r.schedules);
                draw_line(root, style, (x, y), (x + 30, y))?;
                draw_marker(root, style, (x + 15, y))?;
                let text = font(LEGEND_FONT).pos(Pos::new(HPos::Left, VPos::Center));
                root.draw(&Text::new(name.as_str(), (x + 38, y), text)).map_err(drawing)?;
                x += legend_item_w(name);
            }
        }

        let top = self.header_h();
        for (row, &mask) in self.masks.iter().enumerate() {
            for (col, &(head_dim, heads)) in self.head_dims.iter().enumerate() {
                let area = root.clone().shrink(
                    (MARGIN + col as i32 * PANEL_W, top + row as i32 * PANEL_H),
                    (PANEL_W as u32, PANEL_H as u32),
                );
                let rows: Vec<&Row> = r.rows.iter().filter(|x| x.mask == mask && x.head_dim == head_dim).collect();
                let caption = format!("{mask} mask, head dim {head_dim} ({heads} heads)");
                self.draw_panel(root, &area, &caption, self.y_lo[row], &rows)?;
            }
        }
        Ok(())
    }
}

impl SweepPlot<'_> {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        caption: &str,
        y_lo: f64,
        rows: &[&Row],
    ) -> Result<()> {
        let (x_lo, x_hi) = self.x_range;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, bold(16.0))
            .margin(10)
            .margin_right(22)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(x_lo..x_hi, y_lo..1.02)
            .map_err(drawing)?;
        // Ticks at whole powers of two only: the axis is log2(seqlen) and labels show the seqlen itself.
        let ticks = (x_hi.floor() - x_lo.ceil()) as usize + 1;
        chart
            .configure_mesh()
            .x_labels(ticks)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 { format!("{}", 2f64.powi(x.round() as i32)) } else { String::new() }
            })
            .y_labels(8)
            .y_label_formatter(&|y| format!("{y:.2}"))
            .x_desc("sequence length (tokens, log2 scale)")
            .y_desc("best lower bound / makespan")
            .label_style(font(13.0))
            .axis_desc_style(font(14.0))
            .light_line_style(TRANSPARENT)
            .bold_line_style(hex(0xE4E4E4))
            .draw()
            .map_err(drawing)?;
        // The optimum.
        chart
            .draw_series(LineSeries::new([(x_lo, 1.0), (x_hi, 1.0)], hex(0x999999).stroke_width(1)))
            .map_err(drawing)?;
        let n = self.result.schedules.len();
        for (position, name) in self.result.schedules.iter().enumerate() {
            let style = style_of(name, &self.result.schedules);
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| &r.schedule == name)
                .map(|r| ((r.seqlen as f64).log2(), r.relative_throughput))
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Each schedule is shifted sideways by a few pixels (a dodge), so schedules with equal values, as
            // naive, descending and spt have on full masks, show as parallel lines instead of one.
            let dodge = (position as f64 - (n as f64 - 1.0) / 2.0) * 0.05;
            let points: Vec<(f64, f64)> = points.into_iter().map(|(x, y)| (x + dodge, y)).collect();
            let pixels: Vec<(i32, i32)> = points.iter().map(|p| chart.backend_coord(p)).collect();
            for pair in pixels.windows(2) {
                draw_line(root, style, pair[0], pair[1])?;
            }
            for p in pixels {
                draw_marker(root, style, p)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_keep_their_style_whatever_else_is_plotted() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = names(&["naive", "descending", "spt", "shift", "symmetric-shift", "search"]);
        let some = names(&["search", "symmetric-shift"]);
        assert_eq!(style_of("symmetric-shift", &all), style_of("symmetric-shift", &some));
        // The first schedule that is not a built-in takes the first style after theirs, in any company.
        assert_eq!(style_of("search", &all).index, ScheduleKind::ALL.len());
        assert_eq!(style_of("search", &some).index, ScheduleKind::ALL.len());
    }

    /// With `--split-tail` a sweep has every schedule twice: a split variant shares its base's colour and
    /// marker (drawn dashed and hollow), and no two base schedules share a colour.
    #[test]
    fn split_variants_take_their_base_colour_and_no_two_schedules_share_one() {
        let mut all: Vec<String> = ScheduleKind::ALL.iter().map(|k| k.name().to_string()).collect();
        all.push("search".into());
        let bases = all.clone();
        all.extend(bases.iter().map(|n| format!("{n}{SPLIT_SUFFIX}")));
        for base in &bases {
            let (plain, split) = (style_of(base, &all), style_of(&format!("{base}{SPLIT_SUFFIX}"), &all));
            assert_eq!((plain.index, plain.split, split.split), (split.index, false, true), "{base}");
        }
        let colours: std::collections::HashSet<u32> =
            bases.iter().map(|n| PALETTE[style_of(n, &all).index % PALETTE.len()]).collect();
        assert_eq!(colours.len(), bases.len(), "{bases:?}");
    }

    /// Another schedule's index counts distinct bases, wherever their split variants stand in the list.
    #[test]
    fn other_schedules_count_distinct_bases() {
        let names: Vec<String> = ["a", "b+split", "a+split", "c"].iter().map(|s| s.to_string()).collect();
        let n = ScheduleKind::ALL.len();
        assert_eq!(style_of("a", &names).index, n);
        assert_eq!(style_of("a+split", &names).index, n);
        assert_eq!(style_of("b+split", &names).index, n + 1);
        assert_eq!(style_of("c", &names).index, n + 2);
    }

    /// The legend wraps instead of running off the image: every row fits the width, and every name is in it.
    #[test]
    fn the_legend_wraps_to_the_width() {
        let names: Vec<String> = ScheduleKind::ALL
            .iter()
            .flat_map(|k| [k.name().to_string(), format!("{}{SPLIT_SUFFIX}", k.name())])
            .collect();
        let width = 2 * PANEL_W;
        let rows = legend_rows(&names, width);
        assert!(rows.len() > 1);
        for row in &rows {
            assert!(row.len() == 1 || row.iter().map(|n| legend_item_w(n)).sum::<i32>() <= width, "{row:?}");
        }
        assert_eq!(rows.concat(), names);
    }
}
