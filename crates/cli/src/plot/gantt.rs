//! The Gantt chart of one or more schedules of one problem: one lane per SM, time on x, one panel per
//! schedule on a shared time axis, so that the panels compare at a glance. The schedules may come from several
//! timeline files of that problem (a prediction and a measurement); each panel then names its file and source.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use schedulers::SegmentKind;

use super::raster::{Paint, Span, rasterize, runs};
use super::{Figure, bold, drawing, font, hex, text_width, wrap};
use crate::exit::bad_input;
use crate::output::num;
use crate::timeline::{TimelineFile, TimelineSchedule, time_unit_label};

/// The schedules of one timeline file to draw, in order, and the name its panels go by when several files
/// share the chart (the file's name, so that a prediction and a measurement are told apart at a glance).
pub struct Part<'a> {
    pub file: &'a TimelineFile,
    pub schedules: Vec<&'a TimelineSchedule>,
    pub name: String,
}

const MARGIN: i32 = 14;
const TITLE_LINE_H: i32 = 26;
const SUBTITLE_LINE_H: i32 = 20;
const TITLE_FONT: f64 = 19.0;
const SUBTITLE_FONT: f64 = 14.0;
const LEGEND_ROW_H: i32 = 24;
const CAPTION_H: i32 = 26;
const X_AXIS_H: i32 = 48;
const Y_AXIS_W: i32 = 64;
const RIGHT_PAD: i32 = 24;
const LEGEND_FONT: f64 = 14.0;

/// The colours of the paints: Okabe-Ito's colour-blind-safe palette for the phases, with waits in its most
/// saturated warm colours so they stand out against the blues and greens of useful work.
fn colour(p: Paint) -> RGBColor {
    match p {
        Paint::Compute { odd_head: false } => hex(0x0072B2),
        Paint::Compute { odd_head: true } => hex(0x56B4E9),
        Paint::Reduce => hex(0x009E73),
        Paint::Wait => hex(0xD55E00),
        Paint::DkvReduce => hex(0xE69F00),
        Paint::DkvWait => hex(0x882255),
        Paint::Start => hex(0xBBBBBB),
        Paint::Finish => hex(0x666666),
        Paint::Idle => WHITE,
    }
}

const MAKESPAN_COLOUR: RGBColor = RGBColor(0, 0, 0);
const BOUND_COLOUR: RGBColor = hex(0xAA3377);

enum Swatch {
    Boxes(Vec<Paint>),
    Line {
        dashed: bool,
    },
    /// Text only.
    Note,
}

struct LegendItem {
    swatch: Swatch,
    label: &'static str,
}

const SWATCH_W: i32 = 26;
const ITEM_GAP: i32 = 22;

impl LegendItem {
    fn width(&self) -> i32 {
        let swatch = if matches!(self.swatch, Swatch::Note) { 0 } else { SWATCH_W + 6 };
        swatch + text_width(self.label, LEGEND_FONT) as i32
    }
}

struct Panel<'a> {
    schedule: &'a TimelineSchedule,
    /// What the caption adds after the schedule's name when several files share the chart, e.g.
    /// "measured, meas.json"; `None` for a chart of one file, whose subtitle says where it came from.
    origin: Option<String>,
    /// Spans of each lane (SM).
    lanes: Vec<Vec<Span>>,
    /// Compute segments (SM, start, end, Q tile, bh), for labels when bars are wide enough to hold one.
    computes: Vec<(u32, f64, f64, u32, u32)>,
}

/// A Gantt chart ready to draw.
pub struct Gantt<'a> {
    /// Title and subtitle, wrapped to the width.
    title: Vec<String>,
    subtitle: Vec<String>,
    time_label: String,
    lanes: u32,
    panels: Vec<Panel<'a>>,
    t0: f64,
    t1: f64,
    width: u32,
    /// The height asked for; the panels share it and leftover rows stay blank at the bottom.
    height: Option<u32>,
    plot_h: i32,
    legend: Vec<Vec<LegendItem>>,
}

impl<'a> Gantt<'a> {
    /// Lays out the schedules of every part, part after part, as panels on one time axis. The parts must be
    /// timelines of one problem in one time unit (the caller names the files when they are not; see
    /// `timeline::check_comparable`); the header describes the first part's problem.
    pub fn stacked(parts: Vec<Part<'a>>, width: u32, height: Option<u32>) -> Result<Self> {
        let Some(first) = parts.first().map(|p| p.file) else {
            return Err(bad_input("no schedule to draw"));
        };
        if let Some(p) = parts.iter().find(|p| p.file.time_unit != first.time_unit) {
            return Err(bad_input(format!(
                "{} is in {} but {} in {}: one chart has one time axis",
                p.name,
                time_unit_label(&p.file.time_unit),
                parts[0].name,
                time_unit_label(&first.time_unit)
            )));
        }
        let several = parts.len() > 1;
        let lanes = parts.iter().map(|p| p.file.machine.sms).max().unwrap_or(1);
        let panels: Vec<Panel> = parts
            .iter()
            .flat_map(|p| p.schedules.iter().map(move |s| (p, *s)))
            .map(|(part, s)| {
                let mut by_lane = vec![Vec::new(); lanes as usize];
                let mut computes = Vec::new();
                for seg in &s.segments {
                    let paint = Paint::of(seg.kind, seg.bh);
                    by_lane[seg.sm as usize].push(Span { paint, start: seg.start, end: seg.end });
                    if seg.kind == SegmentKind::Compute
                        && let Some(q) = seg.q
                    {
                        computes.push((seg.sm, seg.start, seg.end, q, seg.bh));
                    }
                }
                let origin = several.then(|| format!("{}, {}", part.file.source, part.name));
                Panel { schedule: s, origin, lanes: by_lane, computes }
            })
            .collect();
        let t0 = panels.iter().flat_map(|p| p.schedule.segments.iter().map(|s| s.start)).fold(0.0, f64::min);
        let end = panels
            .iter()
            .flat_map(|p| {
                let s = p.schedule;
                s.segments.iter().map(|g| g.end).chain([s.makespan, s.best_bound.unwrap_or(0.0)])
            })
            .fold(t0, f64::max);
        // A little room after the last makespan, so its line does not sit on the frame.
        let t1 = if end > t0 { end + 0.02 * (end - t0) } else { t0 + 1.0 };

        let mut items = legend_items(&panels);
        // Tell the reader when bars are merged per pixel (see `raster`), so a missing green is not a surprise.
        let plot_w = (width as i32 - 2 * MARGIN - Y_AXIS_W - RIGHT_PAD).max(1) as f64;
        let narrow = panels.iter().any(|p| {
            let n = p.computes.len().max(1) as f64;
            let mean = p.computes.iter().map(|c| c.2 - c.1).sum::<f64>() / n;
            mean / (t1 - t0) * plot_w < 3.0
        });
        if narrow {
            items.push(LegendItem {
                swatch: Swatch::Note,
                label: "(bars narrower than a pixel are merged: each pixel shows its main phase, or a wait if any)",
            });
        }
        let legend = legend_rows(items, width as i32 - 2 * MARGIN);
        let (title, subtitle) = describe(&parts, &panels);
        let text_w = (width as i32 - 2 * MARGIN).max(1) as u32;
        let title = wrap(&title, TITLE_FONT, true, text_w);
        let subtitle = wrap(&subtitle, SUBTITLE_FONT, false, text_w);
        let header = header_h(title.len(), subtitle.len(), legend.len());
        let fixed = header + panels.len() as i32 * (CAPTION_H + X_AXIS_H) + MARGIN;
        let plot_h = match height {
            Some(h) => {
                let plot_h = (h as i32 - fixed) / panels.len().max(1) as i32;
                if plot_h < 40 {
                    return Err(bad_input(format!(
                        "--height {h} leaves {plot_h} pixels per schedule; give at least {}",
                        fixed + 40 * panels.len() as i32
                    )));
                }
                plot_h
            }
            // Lanes of 3 to 24 pixels, about 360 pixels a panel; capped so that absurd SM counts stay drawable,
            // and so that the whole image stays within the largest side --height accepts.
            None => {
                let auto = (lanes as i32 * (360 / lanes.max(1) as i32).clamp(3, 24)).min(4000);
                let fits = (super::MAX_SIDE as i32 - fixed) / panels.len().max(1) as i32;
                if fits < 40 {
                    return Err(bad_input(format!(
                        "{} schedules do not fit one image of at most {} pixels at 40 pixels each: draw fewer at once",
                        panels.len(),
                        super::MAX_SIDE
                    )));
                }
                auto.min(fits)
            }
        };
        Ok(Gantt {
            title,
            subtitle,
            time_label: format!("time ({})", time_unit_label(&first.time_unit)),
            lanes,
            panels,
            t0,
            t1,
            width,
            height,
            plot_h: plot_h.max(40),
            legend,
        })
    }

    fn header_h(&self) -> i32 {
        header_h(self.title.len(), self.subtitle.len(), self.legend.len())
    }

    fn panel_h(&self) -> i32 {
        CAPTION_H + self.plot_h + X_AXIS_H
    }
}

fn header_h(title_lines: usize, subtitle_lines: usize, legend_rows: usize) -> i32 {
    MARGIN
        + title_lines as i32 * TITLE_LINE_H
        + subtitle_lines as i32 * SUBTITLE_LINE_H
        + 4
        + legend_rows as i32 * LEGEND_ROW_H
        + 6
}

/// The title (shape, mask, machine, and the schedule when there is one) and the subtitle (where the timelines
/// come from, tiles, launch, and the costs of predictions).
fn describe(parts: &[Part], panels: &[Panel]) -> (String, String) {
    let file = parts[0].file;
    let p = &file.problem;
    let kv = if p.kv_heads != p.heads { format!(" ({} kv heads)", p.kv_heads) } else { String::new() };
    let seq = if p.seqlen_q == p.seqlen_k {
        format!("seqlen {}", p.seqlen_q)
    } else {
        format!("seqlen q {} / k {}", p.seqlen_q, p.seqlen_k)
    };
    let which = match panels {
        [one] => format!("{} schedule, ", one.schedule.schedule),
        _ => String::new(),
    };
    let title = format!(
        "{which}{} mask: batch {} × {} heads{kv}, {seq}, head dim {}, {} SMs",
        file.mask.name(),
        p.batch,
        p.heads,
        p.head_dim,
        file.machine.sms
    );
    let (m, n) = (p.seqlen_q.div_ceil(p.block_m), p.seqlen_k.div_ceil(p.block_n));
    let origin = match parts {
        [one] => format!("{} timeline", one.file.source),
        _ => {
            let files: Vec<String> = parts.iter().map(|p| format!("{} ({})", p.name, p.file.source)).collect();
            format!("timelines {}", files.join(", "))
        }
    };
    let mut sub = format!(
        "{origin}; tiles {}×{} ({m} q × {n} kv per head), {} launch",
        p.block_m,
        p.block_n,
        file.machine.launch.name()
    );
    for part in parts {
        if let Some(c) = &part.file.costs {
            let whose = if parts.len() > 1 { format!(" of {}", part.name) } else { String::new() };
            sub.push_str(&format!(
                "; costs{whose}: compute {}, reduce {}, hand-off {}",
                num(c.compute),
                num(c.reduce),
                num(c.handoff)
            ));
            if c.unit_start > 0.0 || c.unit_finish > 0.0 {
                sub.push_str(&format!(", unit start {} / finish {}", num(c.unit_start), num(c.unit_finish)));
            }
            sub.push_str(&crate::output::model_switches(c));
        }
    }
    (title, sub)
}

fn legend_items(panels: &[Panel]) -> Vec<LegendItem> {
    let present = |kind: SegmentKind| panels.iter().any(|p| p.schedule.segments.iter().any(|s| s.kind == kind));
    let two_shades = panels.iter().any(|p| p.schedule.segments.iter().any(|s| s.bh % 2 == 1));
    let mut items = vec![LegendItem {
        swatch: Swatch::Boxes(if two_shades {
            vec![Paint::Compute { odd_head: false }, Paint::Compute { odd_head: true }]
        } else {
            vec![Paint::Compute { odd_head: false }]
        }),
        label: if two_shades { "compute (shade alternates by head)" } else { "compute" },
    }];
    items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::Reduce]), label: "dQ add (reduce)" });
    // The wait entry is always shown: "no red" is itself the finding for a conflict-free schedule.
    items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::Wait]), label: "waiting for its rank on dQ" });
    if present(SegmentKind::DkvReduce) {
        items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::DkvReduce]), label: "dK/dV add" });
    }
    if present(SegmentKind::DkvWait) {
        items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::DkvWait]), label: "waiting for its rank on dK/dV" });
    }
    let has_len = |kind: SegmentKind| {
        panels.iter().any(|p| p.schedule.segments.iter().any(|s| s.kind == kind && s.end > s.start))
    };
    if has_len(SegmentKind::Start) {
        items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::Start]), label: "load K, V" });
    }
    if has_len(SegmentKind::Finish) {
        items.push(LegendItem { swatch: Swatch::Boxes(vec![Paint::Finish]), label: "store dK, dV" });
    }
    items.push(LegendItem { swatch: Swatch::Line { dashed: false }, label: "makespan" });
    if panels.iter().any(|p| p.schedule.best_bound.is_some()) {
        items.push(LegendItem { swatch: Swatch::Line { dashed: true }, label: "best lower bound" });
    }
    items
}

/// Greedy line filling of the legend into rows no wider than `width`.
fn legend_rows(items: Vec<LegendItem>, width: i32) -> Vec<Vec<LegendItem>> {
    let mut rows: Vec<Vec<LegendItem>> = vec![Vec::new()];
    let mut used = 0;
    for item in items {
        let w = item.width();
        let row = rows.last_mut().expect("one row at least");
        if !row.is_empty() && used + ITEM_GAP + w > width {
            rows.push(vec![item]);
            used = w;
        } else {
            used += if row.is_empty() { w } else { ITEM_GAP + w };
            rows.last_mut().expect("one row at least").push(item);
        }
    }
    rows
}

/// The SM labels of the y axis: every `step`-th SM, with `step` a power of two that keeps labels 14 pixels
/// apart.
fn lane_label_step(lanes: u32, pitch: f64) -> u32 {
    let mut step = 1;
    while (step as f64) * pitch < 14.0 && step < lanes {
        step *= 2;
    }
    step
}

impl Figure for Gantt<'_> {
    fn size(&self) -> (u32, u32) {
        let h = self.header_h() + self.panels.len() as i32 * self.panel_h() + MARGIN;
        (self.width, self.height.unwrap_or(h as u32))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let w = self.width as i32;
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
        y += 4;
        for row in &self.legend {
            draw_legend_row(root, row, MARGIN, y)?;
            y += LEGEND_ROW_H;
        }
        let top = self.header_h();
        for (i, panel) in self.panels.iter().enumerate() {
            let y0 = top + i as i32 * self.panel_h();
            let area = root.clone().shrink((0, y0), (w as u32, self.panel_h() as u32));
            self.draw_panel(root, &area, panel)?;
        }
        Ok(())
    }
}

fn draw_legend_row<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    row: &[LegendItem],
    x0: i32,
    y: i32,
) -> Result<()> {
    let mut x = x0;
    let mid = y + LEGEND_ROW_H / 2 - 2;
    for item in row {
        match &item.swatch {
            Swatch::Boxes(paints) => {
                let part = SWATCH_W / paints.len() as i32;
                for (k, &p) in paints.iter().enumerate() {
                    let a = x + k as i32 * part;
                    root.draw(&Rectangle::new([(a, mid - 7), (a + part, mid + 7)], colour(p).filled()))
                        .map_err(drawing)?;
                }
            }
            Swatch::Line { dashed } => {
                draw_line_sample(root, x, x + SWATCH_W, mid, *dashed)?;
            }
            Swatch::Note => {}
        }
        let (tx, ink) = match item.swatch {
            Swatch::Note => (x, hex(0x555555)),
            _ => (x + SWATCH_W + 6, BLACK),
        };
        let style = font(LEGEND_FONT).color(&ink).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(item.label, (tx, mid), style)).map_err(drawing)?;
        x += item.width() + ITEM_GAP;
    }
    Ok(())
}

/// A horizontal legend sample of the makespan (solid) or bound (dashed) line.
fn draw_line_sample<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    x0: i32,
    x1: i32,
    y: i32,
    dashed: bool,
) -> Result<()> {
    if dashed {
        let mut x = x0;
        while x < x1 {
            let e = (x + 5).min(x1);
            root.draw(&Rectangle::new([(x, y - 1), (e, y + 1)], BOUND_COLOUR.filled())).map_err(drawing)?;
            x += 9;
        }
    } else {
        root.draw(&Rectangle::new([(x0, y - 1), (x1, y + 1)], MAKESPAN_COLOUR.filled())).map_err(drawing)?;
    }
    Ok(())
}

impl Gantt<'_> {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
    ) -> Result<()> {
        let lanes = self.lanes.max(1);
        let mut chart = ChartBuilder::on(area)
            .margin_top(CAPTION_H as u32)
            .margin_left((MARGIN - 4) as u32)
            .margin_right(RIGHT_PAD as u32)
            .x_label_area_size(X_AXIS_H as u32)
            .y_label_area_size(Y_AXIS_W as u32)
            .build_cartesian_2d(self.t0..self.t1, 0.0..lanes as f64)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(12)
            .x_label_formatter(&|x| num(*x))
            .x_desc(self.time_label.clone())
            .y_desc("SM")
            .label_style(font(13.0))
            .axis_desc_style(font(14.0))
            .light_line_style(TRANSPARENT)
            .bold_line_style(hex(0xE4E4E4))
            .draw()
            .map_err(drawing)?;
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let columns = (xr.end - xr.start).max(1) as usize;
        let dt = (self.t1 - self.t0) / columns as f64;
        let pitch = (yr.end - yr.start) as f64 / lanes as f64;
        let gap = if pitch >= 6.0 { 1 } else { 0 };
        let lane_y = |i: u32| -> (i32, i32) {
            let a = yr.start + (i as f64 * pitch).floor() as i32;
            let b = yr.start + ((i + 1) as f64 * pitch).floor() as i32 - gap;
            (a, b.max(a + 1))
        };
        let x_of = |t: f64| xr.start + ((t - self.t0) / dt).round() as i32;

        // Caption: schedule, makespan, bound and the gap between them.
        let s = panel.schedule;
        let mut caption = match &panel.origin {
            Some(origin) => format!("{} ({origin}): makespan {}", s.schedule, num(s.makespan)),
            None => format!("{}: makespan {}", s.schedule, num(s.makespan)),
        };
        if let Some(b) = s.best_bound {
            let gap = if b > 0.0 { (s.makespan / b - 1.0) * 100.0 } else { 0.0 };
            caption.push_str(&format!(", best lower bound {} ({:+.1}% above it)", num(b), gap));
        }
        let cap_style = bold(15.0).pos(Pos::new(HPos::Left, VPos::Bottom));
        root.draw(&Text::new(caption, (xr.start, area.get_base_pixel().1 + CAPTION_H - 6), cap_style))
            .map_err(drawing)?;

        // Bars: one rectangle per run of equal paint in each lane.
        for (i, spans) in panel.lanes.iter().enumerate() {
            let (ya, yb) = lane_y(i as u32);
            let cols = rasterize(spans, self.t0, self.t1, columns);
            for (a, b, paint) in runs(&cols) {
                let rect =
                    Rectangle::new([(xr.start + a as i32, ya), (xr.start + b as i32, yb)], colour(paint).filled());
                root.draw(&rect).map_err(drawing)?;
            }
        }

        // Q-tile labels inside compute bars, when bars are wide and tall enough to hold them.
        if pitch >= 14.0 {
            for &(sm, start, end, q, bh) in &panel.computes {
                let (xa, xb) = (x_of(start), x_of(end));
                let label = format!("Q{q}");
                if xb - xa < text_width(&label, 11.0) as i32 + 6 {
                    continue;
                }
                let (ya, yb) = lane_y(sm);
                // Dark ink on the light shade of odd heads, white on the dark shade of even ones.
                let ink = if bh % 2 == 1 { BLACK } else { WHITE };
                let style = font(11.0).color(&ink).pos(Pos::new(HPos::Center, VPos::Center));
                root.draw(&Text::new(label, ((xa + xb) / 2, (ya + yb) / 2), style)).map_err(drawing)?;
            }
        }

        // SM labels at lane centres, on a power-of-two step.
        let step = lane_label_step(lanes, pitch);
        let style = font(12.0).pos(Pos::new(HPos::Right, VPos::Center));
        for sm in (0..lanes).step_by(step as usize) {
            let (ya, yb) = lane_y(sm);
            root.draw(&Text::new(sm.to_string(), (xr.start - 6, (ya + yb) / 2), style.clone())).map_err(drawing)?;
        }

        // The bound (dashed) first, so a makespan on the bound stays visible as the solid line over it.
        if let Some(b) = s.best_bound {
            let x = x_of(b);
            let mut y = yr.start;
            while y < yr.end {
                let e = (y + 7).min(yr.end);
                root.draw(&Rectangle::new([(x - 1, y), (x + 1, e)], BOUND_COLOUR.filled())).map_err(drawing)?;
                y += 11;
            }
        }
        let x = x_of(s.makespan);
        root.draw(&Rectangle::new([(x - 1, yr.start), (x + 1, yr.end)], MAKESPAN_COLOUR.filled())).map_err(drawing)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The automatic height keeps within the largest side `--height` accepts, however many SMs and schedules.
    #[test]
    fn the_automatic_height_stays_within_the_largest_side() {
        use crate::timeline::SegmentJson;
        let sms = 4096;
        let schedule = |name: &str| TimelineSchedule {
            schedule: name.to_string(),
            makespan: 1.0,
            best_bound: None,
            segments: vec![SegmentJson {
                sm: sms - 1,
                unit: 0,
                bh: 0,
                kv: 0,
                q: Some(0),
                kind: SegmentKind::Compute,
                start: 0.0,
                end: 1.0,
            }],
        };
        let file = TimelineFile {
            format: "dashc-timeline".into(),
            schema_version: 1,
            source: "predicted".into(),
            time_unit: "tile-compute".into(),
            problem: dag_model::ProblemSpec {
                batch: 1,
                heads: 1,
                kv_heads: 1,
                seqlen_q: 128,
                seqlen_k: 128,
                head_dim: 64,
                block_m: 128,
                block_n: 128,
            },
            mask: dag_model::Mask::Full,
            machine: schedulers::Machine { sms, launch: schedulers::LaunchPolicy::InOrder },
            costs: None,
            schedules: (0..7).map(|i| schedule(&format!("s{i}"))).collect(),
        };
        let part = Part { file: &file, schedules: file.schedules.iter().collect(), name: "t".into() };
        let chart = Gantt::stacked(vec![part], 1600, None).unwrap();
        let (_, h) = chart.size();
        assert!(h <= super::super::MAX_SIDE && h > 7 * 40, "{h}");
    }

    #[test]
    fn lane_labels_stay_apart() {
        assert_eq!(lane_label_step(8, 24.0), 1);
        assert_eq!(lane_label_step(132, 3.0), 8);
        assert_eq!(lane_label_step(1, 2.0), 1);
    }
}
