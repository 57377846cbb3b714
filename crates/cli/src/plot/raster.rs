//! Per-pixel aggregation of a Gantt lane.
//!
//! At 132 SMs and tens of thousands of tasks most bars are narrower than a pixel. Drawing them one by one
//! would let whichever bar comes last win each pixel, so a short wait could vanish under the compute drawn
//! after it, and the waits are what the chart is for. Instead each lane is cut into pixel columns and every
//! column gets one paint, decided from how much time each kind of segment covers in it:
//!
//! 1. a column that overlaps any wait shows a wait (the longer of the dQ and dK/dV waits), however short;
//! 2. otherwise the paint covering the most time wins, idle time included, ties going to busy paints.
//!
//! Waits shorter than `NOISE` of the drawn span are floating-point rounding in the simulator (two sums of the
//! same costs in a different order), not waits, and are left out.

use schedulers::SegmentKind;

/// What one pixel column of a lane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Paint {
    Idle,
    /// Loading K and V before a unit's first task.
    Start,
    /// Compute of a task; heads alternate between two shades so head boundaries stay visible.
    Compute {
        odd_head: bool,
    },
    /// Adding a dQ partial.
    Reduce,
    /// Adding a dK/dV partial (GQA).
    DkvReduce,
    /// Writing dK and dV after a unit's last task.
    Finish,
    /// Waiting for this contribution's rank on a dQ tile.
    Wait,
    /// Waiting for a rank on a dK/dV tile (GQA).
    DkvWait,
}

/// Every paint, in the order ties are broken in (earlier wins) and legends list them.
pub const PAINTS: [Paint; 9] = [
    Paint::Compute { odd_head: false },
    Paint::Compute { odd_head: true },
    Paint::Reduce,
    Paint::Wait,
    Paint::DkvReduce,
    Paint::DkvWait,
    Paint::Start,
    Paint::Finish,
    Paint::Idle,
];

impl Paint {
    /// The paint of a timeline segment of (batch, head) `bh`.
    pub fn of(kind: SegmentKind, bh: u32) -> Paint {
        match kind {
            SegmentKind::Start => Paint::Start,
            SegmentKind::Compute => Paint::Compute { odd_head: bh % 2 == 1 },
            SegmentKind::Wait => Paint::Wait,
            SegmentKind::Reduce => Paint::Reduce,
            SegmentKind::DkvWait => Paint::DkvWait,
            SegmentKind::DkvReduce => Paint::DkvReduce,
            SegmentKind::Finish => Paint::Finish,
        }
    }

    fn index(self) -> usize {
        PAINTS.iter().position(|&p| p == self).expect("every paint is listed")
    }

    pub fn is_wait(self) -> bool {
        matches!(self, Paint::Wait | Paint::DkvWait)
    }
}

/// An interval of a lane painted one way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub paint: Paint,
    pub start: f64,
    pub end: f64,
}

/// Waits shorter than this fraction of the drawn time span are rounding noise.
pub const NOISE: f64 = 1e-9;

/// The paint of each of `columns` equal pixel columns covering `[t0, t1)`, from one lane's spans (in any
/// order; parts outside the range are clipped). See the module documentation for the rule.
pub fn rasterize(spans: &[Span], t0: f64, t1: f64, columns: usize) -> Vec<Paint> {
    if columns == 0 || t1 <= t0 {
        return vec![Paint::Idle; columns];
    }
    let dt = (t1 - t0) / columns as f64;
    let noise = NOISE * (t1 - t0);
    let mut cover = vec![[0.0f64; PAINTS.len()]; columns];
    for span in spans {
        if span.paint == Paint::Idle || span.end - span.start <= 0.0 {
            continue;
        }
        if span.paint.is_wait() && span.end - span.start <= noise {
            continue;
        }
        let (s, e) = (span.start.max(t0), span.end.min(t1));
        if e <= s {
            continue;
        }
        let first = (((s - t0) / dt).floor() as usize).min(columns - 1);
        let last = ((((e - t0) / dt).ceil() as usize).max(first + 1) - 1).min(columns - 1);
        let k = span.paint.index();
        for (c, cell) in cover.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = t0 + c as f64 * dt;
            let overlap = e.min(lo + dt) - s.max(lo);
            // A wait that touches the column counts even when rounding makes its overlap look empty.
            cell[k] += if span.paint.is_wait() { overlap.max(f64::MIN_POSITIVE) } else { overlap.max(0.0) };
        }
    }
    cover.iter().map(|cell| choose(cell, dt)).collect()
}

fn choose(cell: &[f64; PAINTS.len()], dt: f64) -> Paint {
    let (wait, dkv_wait) = (cell[Paint::Wait.index()], cell[Paint::DkvWait.index()]);
    if wait > 0.0 || dkv_wait > 0.0 {
        return if wait >= dkv_wait { Paint::Wait } else { Paint::DkvWait };
    }
    // PAINTS lists busy paints before Idle, so a strict comparison hands ties among them to the earlier one.
    let mut winner = (Paint::Idle, 0.0);
    for &p in PAINTS.iter().filter(|p| !p.is_wait() && **p != Paint::Idle) {
        let x = cell[p.index()];
        if x > winner.1 {
            winner = (p, x);
        }
    }
    let idle = (dt - cell.iter().sum::<f64>()).max(0.0);
    if winner.1 > 0.0 && winner.1 >= idle { winner.0 } else { Paint::Idle }
}

/// Runs of equal paint: (first column, one past the last column, paint), idle runs left out.
pub fn runs(columns: &[Paint]) -> Vec<(usize, usize, Paint)> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=columns.len() {
        if i == columns.len() || columns[i] != columns[start] {
            if columns[start] != Paint::Idle {
                out.push((start, i, columns[start]));
            }
            start = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVEN: Paint = Paint::Compute { odd_head: false };
    const ODD: Paint = Paint::Compute { odd_head: true };

    fn span(paint: Paint, start: f64, end: f64) -> Span {
        Span { paint, start, end }
    }

    #[test]
    fn wide_bars_map_to_their_columns() {
        let spans = [span(EVEN, 0.0, 4.0), span(Paint::Reduce, 4.0, 6.0), span(ODD, 6.0, 8.0)];
        let cols = rasterize(&spans, 0.0, 10.0, 10);
        let want = [EVEN, EVEN, EVEN, EVEN, Paint::Reduce, Paint::Reduce, ODD, ODD, Paint::Idle, Paint::Idle];
        assert_eq!(cols, want);
    }

    #[test]
    fn a_wait_far_narrower_than_a_pixel_still_paints_its_column() {
        // 1000 tasks in 10 columns: each column holds 100 computes and reduces, and one holds a tiny wait.
        let mut spans = Vec::new();
        for t in 0..1000 {
            let s = t as f64;
            spans.push(span(EVEN, s, s + 0.8));
            spans.push(span(Paint::Reduce, s + 0.8, s + 1.0));
        }
        spans.push(span(Paint::Wait, 537.0, 537.001));
        let cols = rasterize(&spans, 0.0, 1000.0, 10);
        assert_eq!(cols[5], Paint::Wait);
        assert!(cols.iter().enumerate().all(|(i, &p)| i == 5 || p == EVEN), "{cols:?}");
    }

    #[test]
    fn without_waits_the_dominant_paint_wins_and_idle_competes() {
        let spans = [span(EVEN, 0.0, 0.3), span(ODD, 0.3, 0.7), span(Paint::Reduce, 1.0, 1.2)];
        let cols = rasterize(&spans, 0.0, 2.0, 2);
        // Column 0: odd compute 0.4 beats even 0.3 and idle 0.3. Column 1: idle 0.8 beats reduce 0.2.
        assert_eq!(cols, [ODD, Paint::Idle]);
    }

    #[test]
    fn ties_go_to_busy_paints() {
        let cols = rasterize(&[span(Paint::Reduce, 0.0, 0.5)], 0.0, 1.0, 1);
        assert_eq!(cols, [Paint::Reduce]);
        let cols = rasterize(&[span(ODD, 0.0, 0.5), span(EVEN, 0.5, 1.0)], 0.0, 1.0, 1);
        assert_eq!(cols, [EVEN]);
    }

    #[test]
    fn the_longer_wait_kind_wins_a_column_with_both() {
        let spans = [span(Paint::Wait, 0.0, 0.1), span(Paint::DkvWait, 0.2, 0.5), span(EVEN, 0.5, 1.0)];
        assert_eq!(rasterize(&spans, 0.0, 1.0, 1), [Paint::DkvWait]);
    }

    #[test]
    fn rounding_noise_is_not_a_wait_and_spans_are_clipped() {
        let spans = [span(EVEN, -5.0, 5.0), span(Paint::Wait, 3.0, 3.0 + 1e-13), span(Paint::Reduce, 8.5, 20.0)];
        let cols = rasterize(&spans, 0.0, 10.0, 5);
        assert_eq!(cols, [EVEN, EVEN, EVEN, Paint::Idle, Paint::Reduce]);
    }

    #[test]
    fn every_column_touched_by_a_wait_shows_a_wait() {
        // A cheap property check over pseudo-random lanes: no wait is ever lost, and no column shows a wait
        // that no wait touches.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..200 {
            let mut spans = Vec::new();
            let mut t = 0.0;
            while t < 100.0 {
                let len = next() * 3.0;
                let paint = match (next() * 4.0) as u32 {
                    0 => Paint::Wait,
                    1 => Paint::Reduce,
                    2 => ODD,
                    _ => EVEN,
                };
                spans.push(span(paint, t, t + len));
                t += len + if next() < 0.2 { next() } else { 0.0 };
            }
            let columns = 1 + (next() * 300.0) as usize;
            let cols = rasterize(&spans, 0.0, 100.0, columns);
            let dt = 100.0 / columns as f64;
            for (c, &p) in cols.iter().enumerate() {
                let (lo, hi) = (c as f64 * dt, (c + 1) as f64 * dt);
                let touched = spans
                    .iter()
                    .any(|s| s.paint == Paint::Wait && s.end - s.start > 1e-7 && s.start < hi && s.end > lo);
                let touched_at_all =
                    spans.iter().any(|s| s.paint == Paint::Wait && s.end > s.start && s.start <= hi && s.end >= lo);
                if touched {
                    assert_eq!(p, Paint::Wait, "column {c} of {columns}");
                }
                if p == Paint::Wait {
                    assert!(touched_at_all, "column {c} of {columns} shows a wait that is not there");
                }
            }
        }
    }

    #[test]
    fn runs_merge_equal_columns_and_skip_idle() {
        let cols = [EVEN, EVEN, Paint::Idle, Paint::Wait, Paint::Wait, ODD];
        assert_eq!(runs(&cols), [(0, 2, EVEN), (3, 5, Paint::Wait), (5, 6, ODD)]);
        assert!(runs(&[]).is_empty());
    }
}
