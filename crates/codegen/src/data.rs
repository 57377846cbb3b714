//! The schedule as data: the text file the harness reads (format: `docs/schedule-data.md`).

use std::fmt::Write as _;

use schedulers::{LaunchPolicy, Schedule};

use crate::{CodegenError, KernelMask};

/// Largest tile index or rank the kernel's 16-bit visit fields hold.
const FIELD_LIMIT: u32 = u16::MAX as u32;

/// One visit of a unit: KV tile, Q tile, and the rank of this contribution on dQ tile (bh, q).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataVisit {
    pub kv: u32,
    pub q: u32,
    pub rank: u32,
}

/// One unit (one CTA) in launch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUnit {
    pub bh: u32,
    pub visits: Vec<DataVisit>,
}

/// How the harness launches the units: what the analyzer validated the schedule for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataLaunch {
    /// One CTA per unit, in launch order.
    InOrder,
    /// A grid of `ctas` CTAs (the analyzer's P); CTA p runs units p, p + P, p + 2P, ...
    Persistent { ctas: u32 },
}

/// Everything the schedule file carries: a name, the problem it was made for, the launch, and the units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleData {
    pub name: String,
    pub batch: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub seqlen_q: u32,
    pub seqlen_k: u32,
    pub head_dim: u32,
    pub block_m: u32,
    pub block_n: u32,
    pub mask: KernelMask,
    pub launch: DataLaunch,
    pub units: Vec<DataUnit>,
}

impl ScheduleData {
    /// The data of a validated schedule. Fails if the mask has no kernel implementation or an index does
    /// not fit the file's 16-bit fields.
    pub fn from_schedule(schedule: &Schedule) -> Result<Self, CodegenError> {
        let p = schedule.problem();
        let mask = KernelMask::of(schedule.mask())?;
        let fits = |what, value: u32| {
            if value > FIELD_LIMIT {
                Err(CodegenError::IndexTooLarge { what, value, limit: FIELD_LIMIT })
            } else {
                Ok(())
            }
        };
        fits("q tile count", p.m_tiles())?;
        fits("kv tile count", p.n_tiles())?;
        let units = schedule
            .units()
            .iter()
            .map(|u| {
                let visits = u
                    .visits
                    .iter()
                    .map(|v| {
                        // `u32::from` accepts the model's index type whether it is u16 or u32.
                        let (kv, q, rank) = (u32::from(v.kv), u32::from(v.q), u32::from(v.rank));
                        fits("rank", rank)?;
                        Ok(DataVisit { kv, q, rank })
                    })
                    .collect::<Result<Vec<_>, CodegenError>>()?;
                Ok(DataUnit { bh: u.bh, visits })
            })
            .collect::<Result<Vec<_>, CodegenError>>()?;
        let machine = schedule.machine();
        let launch = match machine.launch {
            LaunchPolicy::InOrder => DataLaunch::InOrder,
            LaunchPolicy::Persistent => DataLaunch::Persistent { ctas: machine.sms },
        };
        Ok(ScheduleData {
            name: schedule.name().to_string(),
            batch: p.batch(),
            heads: p.heads(),
            kv_heads: p.kv_heads(),
            seqlen_q: p.seqlen_q(),
            seqlen_k: p.seqlen_k(),
            head_dim: p.head_dim(),
            block_m: p.block_m(),
            block_n: p.block_n(),
            mask,
            launch,
            units,
        })
    }

    pub fn num_visits(&self) -> usize {
        self.units.iter().map(|u| u.visits.len()).sum()
    }

    /// The file text. Names are written with spaces replaced by '_' (the field is one token).
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(32 + self.num_visits() * 12);
        // Writing into a String cannot fail.
        let _ = writeln!(s, "dashc-schedule 2");
        let _ = writeln!(s, "name {}", self.name.replace(char::is_whitespace, "_"));
        let _ = writeln!(
            s,
            "problem {} {} {} {} {} {} {} {} {}",
            self.batch,
            self.heads,
            self.kv_heads,
            self.seqlen_q,
            self.seqlen_k,
            self.head_dim,
            self.block_m,
            self.block_n,
            self.mask.name()
        );
        match self.launch {
            DataLaunch::InOrder => s.push_str("launch in-order\n"),
            DataLaunch::Persistent { ctas } => {
                let _ = writeln!(s, "launch persistent {ctas}");
            }
        }
        let _ = writeln!(s, "counts {} {}", self.units.len(), self.num_visits());
        for u in &self.units {
            let _ = writeln!(s, "u {} {}", u.bh, u.visits.len());
            for v in &u.visits {
                let _ = writeln!(s, "{} {} {}", v.kv, v.q, v.rank);
            }
        }
        s.push_str("end\n");
        s
    }

    /// Reads a schedule file back (the inverse of [`ScheduleData::to_text`]); checks its structure, not the
    /// schedule's validity.
    pub fn parse(text: &str) -> Result<Self, CodegenError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
        let mut next = |what: &str| {
            lines.next().ok_or_else(|| CodegenError::Parse { line: 0, message: format!("file ends before {what}") })
        };
        let err = |line: usize, message: String| CodegenError::Parse { line, message };
        let numbers = |line: usize, fields: &[&str]| -> Result<Vec<u32>, CodegenError> {
            fields.iter().map(|f| f.parse::<u32>().map_err(|_| err(line, format!("'{f}' is not a number")))).collect()
        };

        let (n, l) = next("the magic line")?;
        if l != "dashc-schedule 2" {
            return Err(err(n, format!("expected 'dashc-schedule 2', found '{l}'")));
        }
        let (n, l) = next("the name line")?;
        let name = l.strip_prefix("name ").ok_or_else(|| err(n, "expected 'name NAME'".into()))?.to_string();
        let (n, l) = next("the problem line")?;
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 10 || f[0] != "problem" {
            return Err(err(n, "expected 'problem' and 9 fields".into()));
        }
        let v = numbers(n, &f[1..9])?;
        let mask = match f[9] {
            "full" => KernelMask::Full,
            "causal" => KernelMask::Causal,
            other => return Err(err(n, format!("unknown mask '{other}'"))),
        };
        let (n, l) = next("the launch line")?;
        let f: Vec<&str> = l.split_whitespace().collect();
        let launch = match f.as_slice() {
            ["launch", "in-order"] => DataLaunch::InOrder,
            ["launch", "persistent", p] => match p.parse::<u32>() {
                Ok(ctas) if ctas > 0 => DataLaunch::Persistent { ctas },
                _ => return Err(err(n, format!("'{p}' is not a CTA count"))),
            },
            _ => return Err(err(n, "expected 'launch in-order' or 'launch persistent P'".into())),
        };
        let (n, l) = next("the counts line")?;
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 3 || f[0] != "counts" {
            return Err(err(n, "expected 'counts UNITS VISITS'".into()));
        }
        let counts = numbers(n, &f[1..])?;
        let mut units = Vec::with_capacity(counts[0] as usize);
        for _ in 0..counts[0] {
            let (n, l) = next("a unit line")?;
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 3 || f[0] != "u" {
                return Err(err(n, "expected 'u BH NVISITS'".into()));
            }
            let u = numbers(n, &f[1..])?;
            let mut visits = Vec::with_capacity(u[1] as usize);
            for _ in 0..u[1] {
                let (n, l) = next("a visit line")?;
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() != 3 {
                    return Err(err(n, "expected 'KV Q RANK'".into()));
                }
                let x = numbers(n, &f)?;
                visits.push(DataVisit { kv: x[0], q: x[1], rank: x[2] });
            }
            units.push(DataUnit { bh: u[0], visits });
        }
        let (n, l) = next("the end line")?;
        if l != "end" {
            return Err(err(n, format!("expected 'end', found '{l}'")));
        }
        let data = ScheduleData {
            name,
            batch: v[0],
            heads: v[1],
            kv_heads: v[2],
            seqlen_q: v[3],
            seqlen_k: v[4],
            head_dim: v[5],
            block_m: v[6],
            block_n: v[7],
            mask,
            launch,
            units,
        };
        if data.num_visits() != counts[1] as usize {
            return Err(err(n, format!("counts says {} visits, the units hold {}", counts[1], data.num_visits())));
        }
        Ok(data)
    }
}
