//! The memory an analysis will take, estimated before any work and checked against what the machine has.
//!
//! `Problem::new` accepts up to 2^31 tasks per schedule, far more than fits: without this check a large
//! problem was aborted or OOM-killed with no output, sometimes after minutes. The estimate is a pure function
//! of sizes (`bytes_needed`); only `available_bytes` looks at the machine, and where it cannot tell, nothing is
//! refused.
//!
//! The costs below are peak resident set sizes (`/usr/bin/time -f %M`) of the release build with
//! `RAYON_NUM_THREADS=1`, each taken as the slope between two batch sizes or head counts of one shape (so that
//! the process's fixed cost drops out), fitted over shapes of short and long columns (seqlen 512 to 65536, tall
//! and wide grids) and rounded up by 10 to 20%. Checked against whole commands (`bounds` with 1 and 8 threads,
//! `--split-tail`, `--schedule search`, `simulate --timeline`, `gantt`, `sweep`): the estimate came out between
//! 5% below and 50% above the measured peak, the fixed cost of the process included.

use anyhow::Result;

use crate::exit::bad_input;

/// What the memory of one problem grows with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    /// Tasks of one schedule: the active tiles of every (batch, head).
    pub tasks: u64,
    /// (batch, head, KV tile) columns: the most units a built-in schedule has, since each unit holds whole
    /// columns (a unit costs far more than a task: its lists, and per-unit state in validation and simulation).
    pub columns: u64,
    /// (batch, head, Q tile) rows: the dQ tiles, each with its accumulation state.
    pub rows: u64,
    /// Active tiles of one (batch, head): the tile mask, shared by every schedule of the problem.
    pub mask_tiles: u64,
}

impl Size {
    /// The larger of `self` and `other` in each term: a size that bounds both.
    pub fn max(self, other: Size) -> Size {
        Size {
            tasks: self.tasks.max(other.tasks),
            columns: self.columns.max(other.columns),
            rows: self.rows.max(other.rows),
            mask_tiles: self.mask_tiles.max(other.mask_tiles),
        }
    }
}

/// Bytes per task, per column and per row of one thing an analysis holds.
struct Cost {
    task: u64,
    column: u64,
    row: u64,
}

impl Cost {
    fn of(&self, size: &Size) -> u64 {
        size.tasks
            .saturating_mul(self.task)
            .saturating_add(size.columns.saturating_mul(self.column))
            .saturating_add(size.rows.saturating_mul(self.row))
    }
}

/// Building, validating and evaluating one schedule: the order's 8-byte visits and its units, then the
/// critical path's and the simulation's state. Measured with each built-in alone (`dashc bounds --schedule
/// NAME`): 8.2 bytes per task (full mask, seqlen 65536, head dim 128, heads 8 against 32), 190 per column and 33
/// per row (head dim 64, seqlen 512 against seqlen-k 8192 and the reverse, batch 16 against 128). With several
/// schedules the peak grows by one schedule's cost per schedule in flight (`--schedule all` on 8 threads: 5
/// causal built-ins, 42.6 bytes per task), and `--split-tail` doubles it (a schedule and its split version are
/// held together).
const SCHEDULE: Cost = Cost { task: 10, column: 220, row: 40 };
/// A schedule search: every applicable built-in held as a starting point, the plans of the list seeds, the
/// candidates and snapshots of a round. Measured with `--schedule search`, causal: 52 to 54 bytes per task at
/// seqlen 65536 (heads 4 against 16, with 1 thread and with 8), about 2600 per column at seqlen 512 and 2048.
const SEARCH: Cost = Cost { task: 60, column: 3000, row: 40 };
/// A timeline kept until it is written or drawn: its segments (a unit's start and finish among them), and the
/// file's JSON text. Measured with `simulate --timeline`: 370 bytes per task at seqlen 32768, 470 per task at
/// seqlen 512 (so about 400 per column); `gantt`, which writes no text, takes half.
const TIMELINE: Cost = Cost { task: 400, column: 450, row: 0 };
/// A schedule file's text kept for `--save-schedule` (one line per unit): 25 bytes per task at seqlen 65536,
/// 43 at seqlen 512.
const SCHEDULE_TEXT: Cost = Cost { task: 30, column: 80, row: 0 };
/// Building the tile mask, per active tile of one (batch, head): per-row lists of (tile, count) pairs, then the
/// compressed rows and columns. Measured with `--heads 1 --seqlen 262144` to `1048576`, where the mask's
/// construction is the peak: 28 bytes.
const TILE_MASK_BUILD_BYTES_PER_TILE: u64 = 32;
/// The tile mask once built: a row index, a column index and a fraction of 4 bytes each per active tile.
const TILE_MASK_BYTES_PER_TILE: u64 = 12;

/// Replaces MemAvailable (a number of bytes), so that tests of the refusal do not depend on the machine
/// that runs them. For tests only.
pub const AVAILABLE_OVERRIDE: &str = "DASHC_MEMORY_AVAILABLE";

/// What an analysis holds at its peak: how many of each thing, each of the problem's `size` (the largest
/// configuration's, for a family of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    pub size: Size,
    /// Problems in flight, each with its tile mask.
    pub problems_at_once: u64,
    /// Schedules built and evaluated at once: one per rayon thread at most, each with its split-tail version
    /// where asked for.
    pub schedules_at_once: u64,
    /// Searches running at once. In one problem the search follows the built-ins, so the larger of the two
    /// phases counts, not their sum.
    pub searches_at_once: u64,
    /// Schedules held throughout (one loaded with `--schedule-file`).
    pub schedules_held: u64,
    /// Schedules whose timeline is kept to the end (`simulate --timeline`, `gantt`: every one).
    pub timelines_kept: u64,
    /// Schedules whose schedule-file text is kept (`--save-schedule`: one).
    pub texts_kept: u64,
}

/// The bytes `load` takes at its peak.
pub fn bytes_needed(load: &Load) -> u64 {
    let size = &load.size;
    let working = load
        .schedules_at_once
        .saturating_mul(SCHEDULE.of(size))
        .max(load.searches_at_once.saturating_mul(SEARCH.of(size)));
    working
        .saturating_add(load.schedules_held.saturating_mul(SCHEDULE.of(size)))
        .saturating_add(load.timelines_kept.saturating_mul(TIMELINE.of(size)))
        .saturating_add(load.texts_kept.saturating_mul(SCHEDULE_TEXT.of(size)))
        .saturating_add(load.problems_at_once.saturating_mul(size.mask_tiles.saturating_mul(TILE_MASK_BYTES_PER_TILE)))
}

/// The bytes that building a tile mask of `tiles` active tiles takes at its peak.
pub fn tile_mask_build_bytes(tiles: u64) -> u64 {
    tiles.saturating_mul(TILE_MASK_BUILD_BYTES_PER_TILE)
}

/// The one-line refusal when `needed` bytes do not fit in `available`, `None` when they do: "`subject` needs
/// about N GB for `purpose`, M GB are available: `hint`".
pub fn refusal(needed: u64, available: u64, subject: &str, purpose: &str, hint: &str) -> Option<String> {
    (needed > available).then(|| {
        format!("{subject} needs about {} for {purpose}, {} are available: {hint}", amount(needed), amount(available))
    })
}

/// Refuses `needed` bytes as bad input if the machine does not have them available (see `refusal`).
pub fn check(needed: u64, subject: &str, purpose: &str, hint: &str) -> Result<()> {
    match available_bytes()?.and_then(|available| refusal(needed, available, subject, purpose, hint)) {
        Some(message) => Err(bad_input(message)),
        None => Ok(()),
    }
}

/// Refuses (bad input) the load `load_on(threads)` if it does not fit in the memory available on the rayon
/// threads this process runs. Where it would fit on one thread, the message says so.
pub fn check_load(load_on: impl Fn(u64) -> Load, subject: &str, hint: &str) -> Result<()> {
    let Some(available) = available_bytes()? else {
        return Ok(());
    };
    let threads = rayon::current_num_threads() as u64;
    let needed = bytes_needed(&load_on(threads));
    let hint = if threads > 1 && bytes_needed(&load_on(1)) <= available {
        format!("{hint}, or fewer threads (RAYON_NUM_THREADS=1)")
    } else {
        hint.to_string()
    };
    match refusal(needed, available, subject, "its task graphs", &hint) {
        Some(message) => Err(bad_input(message)),
        None => Ok(()),
    }
}

/// Memory the process may still take: `DASHC_MEMORY_AVAILABLE` if set, else the smaller of MemAvailable of
/// `/proc/meminfo` and the headroom of the process's memory cgroup and its ancestors (a container's limit; Linux);
/// `None` where none of them says.
pub fn available_bytes() -> Result<Option<u64>> {
    if let Ok(text) = std::env::var(AVAILABLE_OVERRIDE) {
        return match text.trim().parse::<u64>() {
            Ok(bytes) => Ok(Some(bytes)),
            Err(_) => Err(bad_input(format!("{AVAILABLE_OVERRIDE} must be a number of bytes (got '{text}')"))),
        };
    }
    let machine = std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(mem_available);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| cgroup_headroom(&text, |path| std::fs::read_to_string(path).ok()));
    Ok(match (machine, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// MemAvailable of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// The files of one memory cgroup: its limit, its usage, and its statistics (for the reclaimable page cache).
#[derive(Debug, PartialEq, Eq)]
struct CgroupFiles {
    dir: String,
    limit: &'static str,
    usage: &'static str,
    inactive_file_key: &'static str,
}

/// The memory cgroup directories of a `/proc/self/cgroup` text, the process's own first, then each ancestor up
/// to the mount's root: a limit set on any of them binds. cgroup v1's `memory` controller is preferred to the v2
/// unified line (`0::`) when both appear; either way the path is taken under the usual mount point.
fn cgroup_dirs(proc_self_cgroup: &str) -> Vec<CgroupFiles> {
    let mut v1 = None;
    let mut v2 = None;
    for line in proc_self_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path);
        } else if controllers.is_empty() {
            v2 = Some(path);
        }
    }
    let (root, limit, usage, inactive_file_key, path) = match (v1, v2) {
        (Some(path), _) => {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", path)
        }
        (None, Some(path)) => ("/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file", path),
        (None, None) => return Vec::new(),
    };
    let mut dirs = Vec::new();
    let mut path = path.trim_end_matches('/');
    loop {
        dirs.push(CgroupFiles { dir: format!("{root}{path}"), limit, usage, inactive_file_key });
        match path.rfind('/') {
            Some(cut) => path = &path[..cut],
            None => break,
        }
    }
    dirs
}

/// Limits at or above this are no limit (cgroup v1 writes "unlimited" as a page-rounded 2^63 - 1).
const UNLIMITED: u64 = 1 << 60;

/// What one cgroup still allows: its limit less its working set (usage less the inactive page cache, which the
/// kernel reclaims before it kills anything), `None` if it has no limit or its files do not say.
fn headroom(limit: &str, usage: &str, stat: Option<&str>, inactive_file_key: &str) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok()?; // "max" (v2): no limit
    if limit >= UNLIMITED {
        return None;
    }
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive_file = stat
        .and_then(|stat| {
            stat.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == inactive_file_key).then(|| value.trim().parse::<u64>().ok()).flatten()
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive_file)))
}

/// The least headroom of the process's memory cgroup and its ancestors, `None` where none has a limit; `read`
/// gives a file's text by path (the filesystem, or a test's).
fn cgroup_headroom(proc_self_cgroup: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    cgroup_dirs(proc_self_cgroup)
        .iter()
        .filter_map(|files| {
            let file = |name: &str| read(&format!("{}/{name}", files.dir));
            headroom(&file(files.limit)?, &file(files.usage)?, file("memory.stat").as_deref(), files.inactive_file_key)
        })
        .min()
}

/// Bytes for a message, in decimal units: "85 GB", "2.7 GB", "300 MB".
fn amount(bytes: u64) -> String {
    let gb = bytes as f64 / 1e9;
    if gb >= 9.95 {
        format!("{gb:.0} GB")
    } else if gb >= 0.995 {
        format!("{gb:.1} GB")
    } else {
        format!("{:.0} MB", bytes as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: Size = Size { tasks: 1_000_000, columns: 10_000, rows: 20_000, mask_tiles: 1_000 };
    /// One schedule of `SIZE`, and its tile mask.
    const ONE: u64 = 1_000_000 * 10 + 10_000 * 220 + 20_000 * 40;
    const MASK: u64 = 1_000 * 12;

    #[test]
    fn schedules_in_flight_add_up_and_a_search_replaces_them() {
        let one = Load { size: SIZE, problems_at_once: 1, schedules_at_once: 1, ..Load::default() };
        assert_eq!(bytes_needed(&one), ONE + MASK);
        let four = Load { schedules_at_once: 4, ..one };
        assert_eq!(bytes_needed(&four), 4 * ONE + MASK);
        // The search runs after the built-ins: the larger phase counts.
        let search = Load { searches_at_once: 1, ..four };
        let searching = 1_000_000 * 60 + 10_000 * 3000 + 20_000 * 40;
        assert_eq!(bytes_needed(&search), searching + MASK);
        let wide = Load { schedules_at_once: 64, ..search };
        assert_eq!(bytes_needed(&wide), 64 * ONE + MASK);
        let kept = Load { schedules_held: 1, timelines_kept: 2, texts_kept: 1, problems_at_once: 3, ..one };
        let timeline = 1_000_000 * 400 + 10_000 * 450;
        let text = 1_000_000 * 30 + 10_000 * 80;
        assert_eq!(bytes_needed(&kept), 2 * ONE + 2 * timeline + text + 3 * MASK);
    }

    #[test]
    fn the_largest_problem_on_many_threads_does_not_overflow() {
        let size = Size { tasks: 1 << 31, columns: 1 << 31, rows: 1 << 31, mask_tiles: 1 << 32 };
        let huge = Load { size, problems_at_once: u64::MAX, schedules_at_once: u64::MAX, ..Load::default() };
        assert_eq!(bytes_needed(&huge), u64::MAX);
        assert_eq!(tile_mask_build_bytes(1 << 32), 32 << 32);
    }

    #[test]
    fn refusal_names_both_sizes_and_the_fix() {
        let size = Size { tasks: 1 << 31, ..Size::default() };
        let (needed, available) =
            (bytes_needed(&Load { size, schedules_at_once: 4, ..Load::default() }), 21_000_000_000);
        assert_eq!(
            refusal(needed, available, "this problem", "its task graphs", "use a shorter --seqlen").as_deref(),
            Some("this problem needs about 86 GB for its task graphs, 21 GB are available: use a shorter --seqlen")
        );
        assert_eq!(refusal(available, available, "this problem", "its task graphs", "-"), None);
        assert_eq!(amount(2_684_354_560), "2.7 GB");
        assert_eq!(amount(300_000_000), "300 MB");
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let meminfo = "MemTotal:       24684092 kB\nMemFree:         1000 kB\nMemAvailable:   24011252 kB\n";
        assert_eq!(mem_available(meminfo), Some(24_011_252 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn cgroup_dirs_walk_from_the_process_up_to_the_root() {
        let v1 = "5:devices:/\n4:memory:/box/job\n0::/\n";
        let dirs: Vec<_> = cgroup_dirs(v1).into_iter().map(|f| (f.dir, f.limit)).collect();
        assert_eq!(
            dirs,
            [
                ("/sys/fs/cgroup/memory/box/job".to_string(), "memory.limit_in_bytes"),
                ("/sys/fs/cgroup/memory/box".to_string(), "memory.limit_in_bytes"),
                ("/sys/fs/cgroup/memory".to_string(), "memory.limit_in_bytes"),
            ]
        );
        let v2: Vec<_> = cgroup_dirs("0::/user.slice/a.scope\n").into_iter().map(|f| (f.dir, f.usage)).collect();
        assert_eq!(
            v2,
            [
                ("/sys/fs/cgroup/user.slice/a.scope".to_string(), "memory.current"),
                ("/sys/fs/cgroup/user.slice".to_string(), "memory.current"),
                ("/sys/fs/cgroup".to_string(), "memory.current"),
            ]
        );
        // A namespaced container sees its own cgroup as the root; v1 lists memory among other controllers.
        let root: Vec<_> = cgroup_dirs("3:cpu,memory:/\n").into_iter().map(|f| f.dir).collect();
        assert_eq!(root, ["/sys/fs/cgroup/memory"]);
        assert!(cgroup_dirs("").is_empty());
    }

    #[test]
    fn cgroup_headroom_is_the_limit_less_the_working_set() {
        let stat = "cache 500\ntotal_inactive_file 300\ninactive_file 100\n";
        assert_eq!(headroom("10000\n", "2000\n", Some(stat), "total_inactive_file"), Some(8300));
        assert_eq!(headroom("10000", "2000", Some(stat), "inactive_file"), Some(8100));
        assert_eq!(headroom("10000", "2000", None, "inactive_file"), Some(8000));
        // Over the limit (usage can pass it briefly): nothing left, not an overflow.
        assert_eq!(headroom("1000", "5000", None, "inactive_file"), Some(0));
        // No limit: v2 writes "max", v1 a page-rounded 2^63 - 1.
        assert_eq!(headroom("max\n", "2000", None, "inactive_file"), None);
        assert_eq!(headroom("9223372036854771712", "2000", None, "total_inactive_file"), None);
        assert_eq!(headroom("10000", "lots", None, "inactive_file"), None);
    }

    #[test]
    fn the_tightest_cgroup_on_the_way_up_binds() {
        // A job's own cgroup has no limit, its parent 8 GB with 6 GB in use (1 GB of it reclaimable page cache),
        // the root none; a folder that cannot be read (not mounted there) is passed over.
        let files: std::collections::HashMap<&str, &str> = [
            ("/sys/fs/cgroup/memory/box/job/memory.limit_in_bytes", "9223372036854771712"),
            ("/sys/fs/cgroup/memory/box/job/memory.usage_in_bytes", "100"),
            ("/sys/fs/cgroup/memory/box/memory.limit_in_bytes", "8000000000"),
            ("/sys/fs/cgroup/memory/box/memory.usage_in_bytes", "6000000000"),
            ("/sys/fs/cgroup/memory/box/memory.stat", "cache 2000000000\ntotal_inactive_file 1000000000\n"),
        ]
        .into();
        let read = |path: &str| files.get(path).map(|text| text.to_string());
        assert_eq!(cgroup_headroom("4:memory:/box/job\n", read), Some(3_000_000_000));
        assert_eq!(cgroup_headroom("4:memory:/elsewhere\n", read), None);
        assert_eq!(cgroup_headroom("0::/box/job\n", read), None, "v2 files are others");
    }
}
