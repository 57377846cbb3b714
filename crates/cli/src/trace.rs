//! GPU traces (`dashc-trace`, docs/trace-format.md): the per-task %globaltimer stamps a trace build of the
//! kernel writes, read back, checked against the schedule that ran, and turned into a measured timeline.

use std::path::Path;

use anyhow::Result;
use schedulers::calibrate::{TaskStamps, UnitStamps};
use schedulers::{Schedule, SegmentKind};

use crate::exit::bad_input;
use crate::output::SCHEMA_VERSION;
use crate::setup::Setup;
use crate::timeline::{FORMAT, SegmentJson, TimelineFile, TimelineSchedule};

/// The header of a trace: what ran.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceHeader {
    pub schedule: String,
    /// batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, block_m, block_n.
    pub shape: [u32; 8],
    pub mask: String,
    pub units: usize,
    pub visits: usize,
}

/// A parsed trace: times in µs from the earliest stamp.
#[derive(Debug, Clone)]
pub struct Trace {
    pub header: TraceHeader,
    pub units: Vec<UnitStamps>,
}

/// Parses the text of a trace; `what` names it in messages.
pub fn parse(text: &str, what: &str) -> Result<Trace> {
    let bad = |line: usize, why: &str| bad_input(format!("invalid trace {what}, line {line}: {why}"));
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.split_whitespace().collect::<Vec<_>>()));
    let mut next = |expect: &str| -> Result<(usize, Vec<&str>)> {
        let (n, words) = lines.next().ok_or_else(|| bad(0, &format!("ends before the '{expect}' line")))?;
        if words.first() != Some(&expect) {
            return Err(bad(n, &format!("expected a '{expect}' line")));
        }
        Ok((n, words))
    };
    let (n, w) = next("dashc-trace")?;
    if w.get(1) != Some(&"1") {
        return Err(bad(n, "not a version 1 trace"));
    }
    let (_, w) = next("name")?;
    let schedule = w.get(1).map(|s| s.to_string()).unwrap_or_default();
    let (n, w) = next("problem")?;
    if w.len() != 10 {
        return Err(bad(n, "the problem line needs 8 numbers and a mask"));
    }
    let mut shape = [0u32; 8];
    for (k, x) in w[1..9].iter().enumerate() {
        shape[k] = x.parse().map_err(|_| bad(n, "problem: not a number"))?;
    }
    let mask = w[9].to_string();
    let (n, w) = next("counts")?;
    let count =
        |k: usize| -> Result<usize> { w.get(k).and_then(|x| x.parse().ok()).ok_or_else(|| bad(n, "bad counts")) };
    let (nu, nv) = (count(1)?, count(2)?);
    let (n, w) = next("clock")?;
    if w.get(1) != Some(&"globaltimer-ns") {
        return Err(bad(n, "only the globaltimer-ns clock is known"));
    }
    let num = |n: usize, s: &str| -> Result<u64> { s.parse().map_err(|_| bad(n, "not a number")) };
    // Per unit: SM, [start, end], the compute side's end (sm90), and the tasks' four stamps (ns).
    type RawUnit = (u32, [u64; 2], Option<u64>, Vec<[u64; 4]>);
    let mut raw: Vec<RawUnit> = Vec::with_capacity(nu);
    let mut visits = 0usize;
    for _ in 0..nu {
        let (n, w) = next("u")?;
        if w.len() != 5 && w.len() != 6 {
            return Err(bad(n, "a unit line is 'u SM START END TASKS [COMPUTE_END]'"));
        }
        let sm = num(n, w[1])? as u32;
        let (start, end, tasks) = (num(n, w[2])?, num(n, w[3])?, num(n, w[4])? as usize);
        let compute_end = w.get(5).map(|x| num(n, x)).transpose()?;
        let mut stamps = Vec::with_capacity(tasks);
        for _ in 0..tasks {
            let (n, w) = next("v")?;
            if w.len() != 5 {
                return Err(bad(n, "a task line is 'v COMPUTE ARRIVAL REDUCE_START REDUCE_END'"));
            }
            stamps.push([num(n, w[1])?, num(n, w[2])?, num(n, w[3])?, num(n, w[4])?]);
        }
        visits += tasks;
        raw.push((sm, [start, end], compute_end, stamps));
    }
    next("end")?;
    if visits != nv {
        return Err(bad(0, &format!("counts says {nv} tasks, the units hold {visits}")));
    }
    // A stamp of 0 was never written: the kernel did not reach that point (it gave up, or this is not a
    // trace build of the deterministic kernel).
    let all = raw.iter().flat_map(|(_, u, c, t)| u.iter().chain(c.iter()).chain(t.iter().flatten()));
    let t0 = all.clone().copied().min().unwrap_or(0);
    if t0 == 0 && visits > 0 {
        let unit =
            raw.iter().position(|(_, u, c, t)| u.contains(&0) || *c == Some(0) || t.iter().flatten().any(|&x| x == 0));
        return Err(bad_input(format!(
            "invalid trace {what}: unit {} has stamps that were never written",
            unit.unwrap_or(0)
        )));
    }
    let us = |t: u64| (t - t0) as f64 / 1000.0;
    let units = raw
        .into_iter()
        .map(|(sm, [start, end], compute_end, tasks)| UnitStamps {
            sm,
            start: us(start),
            end: us(end),
            compute_end: compute_end.map(us),
            tasks: tasks
                .into_iter()
                .map(|[a, b, c, d]| TaskStamps {
                    compute_start: us(a),
                    arrival: us(b),
                    reduce_start: us(c),
                    reduce_end: us(d),
                })
                .collect(),
        })
        .collect();
    Ok(Trace { header: TraceHeader { schedule, shape, mask, units: nu, visits }, units })
}

/// Reads and parses a trace file.
pub fn load(path: &Path) -> Result<Trace> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("cannot read trace file {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

impl Trace {
    /// Refuses a trace of another shape, mask or schedule than `schedule`.
    pub fn check_matches(&self, schedule: &Schedule, what: &str) -> Result<()> {
        let p = schedule.problem();
        let want =
            [p.batch(), p.heads(), p.kv_heads(), p.seqlen_q(), p.seqlen_k(), p.head_dim(), p.block_m(), p.block_n()];
        let h = &self.header;
        if h.shape != want || h.mask != schedule.mask().name() {
            return Err(bad_input(format!(
                "trace {what} is of another problem: it has (batch, heads, kv heads, seqlen q, seqlen k, head dim, \
                 block m, block n) = {:?} with mask {}, expected {want:?} with mask {}",
                h.shape,
                h.mask,
                schedule.mask().name()
            )));
        }
        if h.schedule != schedule.name() {
            return Err(bad_input(format!(
                "trace {what} is of schedule '{}', expected '{}'",
                h.schedule,
                schedule.name()
            )));
        }
        let tasks: usize = schedule.units().iter().map(|u| u.visits.len()).sum();
        if h.units != schedule.units().len() || h.visits != tasks {
            return Err(bad_input(format!(
                "trace {what} has {} units and {} tasks, the schedule {} and {tasks}",
                h.units,
                h.visits,
                schedule.units().len()
            )));
        }
        Ok(())
    }

    /// End of the last unit, µs from the first stamp.
    pub fn makespan(&self) -> f64 {
        self.units.iter().map(|u| u.end).fold(0.0, f64::max)
    }
}

/// The measured timeline of one traced schedule: one lane per SM id, segments start (unit start → first
/// compute start), compute (previous reduce end → arrival), wait, reduce and finish (last reduce end → unit
/// end), in µs. The phases are cut the way `schedulers::calibrate` fits them.
pub fn measured_schedule(schedule: &Schedule, units: &[UnitStamps], decoupled: bool) -> TimelineSchedule {
    let mut segments = Vec::new();
    for (ui, (u, t)) in schedule.units().iter().zip(units).enumerate() {
        let seg = |kind, kv: u16, q: u16, start: f64, end: f64| SegmentJson {
            sm: t.sm,
            unit: ui as u32,
            bh: u.bh,
            kv: kv as u32,
            q: Some(q as u32),
            kind,
            start,
            end: end.max(start),
        };
        let Some(first) = u.visits.first() else { continue };
        segments.push(seg(SegmentKind::Start, first.kv, first.q, t.start, t.tasks[0].compute_start));
        if decoupled {
            // The sm90 main loop: the compute side runs task after task (a task lasts until the next one starts),
            // and the writers' adds run beside it; a writer's wait for its rank is not the SM's time, and the
            // compute side's waits for a staging buffer have no stamp of their own.
            for (k, (v, s)) in u.visits.iter().zip(&t.tasks).enumerate() {
                let until = t.tasks.get(k + 1).map_or(s.arrival, |next| next.compute_start);
                segments.push(seg(SegmentKind::Compute, v.kv, v.q, s.compute_start, until));
                segments.push(seg(SegmentKind::Reduce, v.kv, v.q, s.reduce_start, s.reduce_end));
            }
            let last = u.visits[u.visits.len() - 1];
            let finish_end = t.compute_end.unwrap_or(t.end);
            segments.push(seg(SegmentKind::Finish, last.kv, last.q, t.tasks[t.tasks.len() - 1].arrival, finish_end));
            continue;
        }
        for (k, (v, s)) in u.visits.iter().zip(&t.tasks).enumerate() {
            let from = if k == 0 { s.compute_start } else { t.tasks[k - 1].reduce_end };
            segments.push(seg(SegmentKind::Compute, v.kv, v.q, from, s.arrival));
            if s.reduce_start > s.arrival {
                segments.push(seg(SegmentKind::Wait, v.kv, v.q, s.arrival, s.reduce_start));
            }
            segments.push(seg(SegmentKind::Reduce, v.kv, v.q, s.reduce_start, s.reduce_end));
        }
        let last = u.visits[u.visits.len() - 1];
        segments.push(seg(SegmentKind::Finish, last.kv, last.q, t.tasks[t.tasks.len() - 1].reduce_end, t.end));
    }
    segments.sort_by(|a, b| a.sm.cmp(&b.sm).then(a.start.total_cmp(&b.start)));
    TimelineSchedule {
        schedule: schedule.name().to_string(),
        makespan: units.iter().map(|u| u.end).fold(0.0, f64::max),
        best_bound: None,
        segments,
    }
}

/// A measured timeline file of `setup`'s problem holding `schedules`.
pub fn measured_file(setup: &Setup, schedules: Vec<TimelineSchedule>) -> TimelineFile {
    let lanes = schedules.iter().flat_map(|s| s.segments.iter().map(|g| g.sm + 1)).max().unwrap_or(0);
    let mut machine = setup.machine;
    machine.sms = machine.sms.max(lanes);
    TimelineFile {
        format: FORMAT.to_string(),
        schema_version: SCHEMA_VERSION,
        source: "measured".to_string(),
        time_unit: "us".to_string(),
        problem: setup.problem.spec(),
        mask: setup.mask.clone(),
        machine,
        costs: None,
        schedules,
    }
}

/// The text of a trace of `units` for `schedule`, as the harness writes it (stamps in ns); used by tests and
/// to turn simulated stamps into a trace.
#[cfg(test)]
pub fn to_text(schedule: &Schedule, units: &[UnitStamps]) -> String {
    use std::fmt::Write as _;
    let p = schedule.problem();
    let tasks: usize = units.iter().map(|u| u.tasks.len()).sum();
    let mut out = format!(
        "dashc-trace 1\nname {}\nproblem {} {} {} {} {} {} {} {} {}\ncounts {} {tasks}\nclock globaltimer-ns\n",
        schedule.name(),
        p.batch(),
        p.heads(),
        p.kv_heads(),
        p.seqlen_q(),
        p.seqlen_k(),
        p.head_dim(),
        p.block_m(),
        p.block_n(),
        schedule.mask().name(),
        units.len()
    );
    // A base far from 0, as %globaltimer is; 0 means "never written".
    let ns = |t: f64| 1_000_000_000u64 + (t * 1000.0).round() as u64;
    for u in units {
        let compute_end = u.compute_end.map(|t| format!(" {}", ns(t))).unwrap_or_default();
        let _ = writeln!(out, "u {} {} {} {}{compute_end}", u.sm, ns(u.start), ns(u.end), u.tasks.len());
        for t in &u.tasks {
            let _ = writeln!(
                out,
                "v {} {} {} {}",
                ns(t.compute_start),
                ns(t.arrival),
                ns(t.reduce_start),
                ns(t.reduce_end)
            );
        }
    }
    out.push_str("end\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::ShapeOnly;
    use clap::Parser;
    use schedulers::calibrate::simulated_stamps;

    fn setup(args: &[&str]) -> Setup {
        let mut argv = vec!["dashc"];
        argv.extend_from_slice(args);
        Setup::from_args(&ShapeOnly::try_parse_from(argv).unwrap().shape).unwrap()
    }

    fn schedule_of(s: &Setup) -> Schedule {
        s.schedules[0].build(s.problem, s.mask.clone(), s.tile_mask.clone(), s.machine, &s.costs).unwrap()
    }

    /// Naive on a causal 2-head problem of 512 tokens, 4 SMs: small, with waits.
    fn naive_causal() -> Setup {
        setup(&[
            "--batch",
            "1",
            "--heads",
            "2",
            "--seqlen",
            "512",
            "--sms",
            "4",
            "--schedule",
            "naive",
            "--mask",
            "causal",
        ])
    }

    #[test]
    fn a_trace_becomes_the_timeline_it_came_from() {
        let s = naive_causal();
        let sched = schedule_of(&s);
        let costs = schedulers::CostModel { unit_start: 0.5, unit_finish: 0.25, handoff: 0.125, ..s.costs };
        let stamps = simulated_stamps(&sched, &costs).unwrap();
        let trace = parse(&to_text(&sched, &stamps), "t").unwrap();
        trace.check_matches(&sched, "t").unwrap();
        let measured = measured_schedule(&sched, &trace.units, false);
        let sim = schedulers::simulate(&sched, &costs, true).unwrap();
        assert!((measured.makespan - sim.makespan).abs() < 1e-9, "{} vs {}", measured.makespan, sim.makespan);
        // Same phases, same total time per kind.
        for kind in
            [SegmentKind::Compute, SegmentKind::Wait, SegmentKind::Reduce, SegmentKind::Start, SegmentKind::Finish]
        {
            let a: f64 = measured.segments.iter().filter(|g| g.kind == kind).map(|g| g.end - g.start).sum();
            let b: f64 = sim.timeline.iter().filter(|g| g.kind == kind).map(|g| g.end - g.start).sum();
            assert!((a - b).abs() < 1e-6, "{kind:?}: {a} vs {b}");
        }
        let file = measured_file(&s, vec![measured]);
        assert_eq!((file.source.as_str(), file.time_unit.as_str()), ("measured", "us"));
    }

    #[test]
    fn a_trace_of_decoupled_writers_becomes_its_timeline() {
        // The sm90 main loop's model: compute back to back, the adds beside it. The measured timeline has the
        // compute side's time (computes, starts, finishes) and the adds of the simulation it came from.
        let s = naive_causal();
        let sched = schedule_of(&s);
        let costs =
            schedulers::CostModel { unit_start: 0.5, unit_finish: 0.25, handoff: 0.125, dq_writers: 2, ..s.costs };
        let stamps = simulated_stamps(&sched, &costs).unwrap();
        let trace = parse(&to_text(&sched, &stamps), "t").unwrap();
        let measured = measured_schedule(&sched, &trace.units, true);
        let sim = schedulers::simulate(&sched, &costs, true).unwrap();
        assert!((measured.makespan - sim.makespan).abs() < 1e-9, "{} vs {}", measured.makespan, sim.makespan);
        let total = |segments: &mut dyn Iterator<Item = (SegmentKind, f64)>, kind| {
            segments.filter(|(k, _)| *k == kind).map(|(_, d)| d).sum::<f64>()
        };
        let reduce_measured =
            total(&mut measured.segments.iter().map(|g| (g.kind, g.end - g.start)), SegmentKind::Reduce);
        let reduce_sim = total(&mut sim.timeline.iter().map(|g| (g.kind, g.end - g.start)), SegmentKind::Reduce);
        assert!((reduce_measured - reduce_sim).abs() < 1e-6, "{reduce_measured} vs {reduce_sim}");
        // No segment of the compute side overlaps the next on its SM.
        let mut side: Vec<_> = measured.segments.iter().filter(|g| g.kind != SegmentKind::Reduce).collect();
        side.sort_by(|a, b| a.sm.cmp(&b.sm).then(a.start.total_cmp(&b.start)));
        for w in side.windows(2) {
            if w[0].sm == w[1].sm {
                assert!(w[0].end <= w[1].start + 1e-9, "{:?} overlaps {:?}", w[0], w[1]);
            }
        }
    }

    #[test]
    fn traces_of_other_runs_are_refused() {
        let s = setup(&["--batch", "1", "--heads", "2", "--seqlen", "512", "--sms", "4", "--schedule", "naive"]);
        let sched = schedule_of(&s);
        let text = to_text(&sched, &simulated_stamps(&sched, &s.costs).unwrap());
        let other = schedule_of(&setup(&[
            "--batch",
            "1",
            "--heads",
            "2",
            "--seqlen",
            "512",
            "--sms",
            "4",
            "--schedule",
            "descending",
        ]));
        let err = parse(&text, "t").unwrap().check_matches(&other, "t").unwrap_err().to_string();
        assert!(err.contains("schedule 'naive', expected 'descending'"), "{err}");
        let bigger = schedule_of(&setup(&[
            "--batch",
            "2",
            "--heads",
            "2",
            "--seqlen",
            "512",
            "--sms",
            "4",
            "--schedule",
            "naive",
        ]));
        assert!(
            parse(&text, "t").unwrap().check_matches(&bigger, "t").unwrap_err().to_string().contains("another problem")
        );
        // Truncated, or with a stamp never written.
        assert!(parse(&text[..text.len() / 2], "t").is_err());
        let zeroed = text.replacen("v 1", "v 0", 1);
        assert!(parse(&zeroed, "t").unwrap_err().to_string().contains("never written"));
    }
}
