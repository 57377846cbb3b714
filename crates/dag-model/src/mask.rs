//! Block masks: which (q-tile, kv-tile) pairs carry at least one unmasked element, and what fraction of the
//! tile is unmasked.

use serde::{Deserialize, Serialize};

use crate::{ModelError, Problem};

/// An attention mask, as the user states it.
///
/// Positional masks follow FlashAttention's convention: when seqlen_q != seqlen_k the diagonal is aligned to
/// the bottom-right corner, so query row `r` sits at key position `r + seqlen_k - seqlen_q`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Mask {
    Full,
    Causal,
    /// Keys within `left` positions before and `right` positions after the (aligned) diagonal; `None` is
    /// unbounded on that side. Causal is `left = None, right = Some(0)`.
    SlidingWindow {
        left: Option<u32>,
        right: Option<u32>,
    },
    /// Documents of the given lengths packed into one sequence; tokens attend only within their document,
    /// and only to earlier tokens when `causal`.
    Document {
        lens: Vec<u32>,
        causal: bool,
    },
    /// An explicit list of active (q-tile, kv-tile) pairs; each listed tile is fully unmasked.
    Blocks {
        pairs: Vec<(u32, u32)>,
    },
}

impl Mask {
    /// Short name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Mask::Full => "full",
            Mask::Causal => "causal",
            Mask::SlidingWindow { .. } => "sliding-window",
            Mask::Document { .. } => "document",
            Mask::Blocks { .. } => "blocks",
        }
    }

    /// At most how many tiles of one (batch, head) this mask leaves active on `problem`'s grid, found without
    /// building the `TileMask` (whose construction takes tens of bytes per active tile): exact for the full and
    /// causal masks, the whole grid (or a block mask's pair count) for the others. It lets a caller see whether
    /// the mask will fit in memory before building it.
    pub fn active_tiles_at_most(&self, problem: &Problem) -> u64 {
        let (m, n) = (problem.m_tiles() as u64, problem.n_tiles() as u64);
        match self {
            Mask::Full | Mask::SlidingWindow { .. } | Mask::Document { .. } => m * n,
            Mask::Causal => {
                let (bm, bn) = (problem.block_m() as u64, problem.block_n() as u64);
                let (sq, sk) = (problem.seqlen_q() as u64, problem.seqlen_k() as u64);
                // Row r sees keys [0, r + sk - sq + 1) (bottom-right aligned), so a Q tile's active KV tiles
                // are those its last row reaches.
                (0..m)
                    .map(|q| {
                        let last_row = ((q + 1) * bm).min(sq) - 1;
                        (last_row + sk + 1).saturating_sub(sq).min(sk).div_ceil(bn)
                    })
                    .sum()
            }
            Mask::Blocks { pairs } => (pairs.len() as u64).min(m * n),
        }
    }
}

/// The block structure of a mask on a problem's tile grid, stored both by column (per KV tile: its active Q
/// tiles ascending, with their unmasked fractions) and by row (per Q tile: its contributing KV tiles ascending).
/// The same pattern applies to every (batch, head).
#[derive(Debug, Clone, PartialEq)]
pub struct TileMask {
    m: u32,
    n: u32,
    col_ptr: Vec<u32>,
    col_q: Vec<u32>,
    col_frac: Vec<f32>,
    row_ptr: Vec<u32>,
    row_kv: Vec<u32>,
}

impl TileMask {
    pub fn new(problem: &Problem, mask: &Mask) -> Result<Self, ModelError> {
        let m = problem.m_tiles();
        let n = problem.n_tiles();
        let (bm, bn) = (problem.block_m() as u64, problem.block_n() as u64);
        let (sq, sk) = (problem.seqlen_q() as u64, problem.seqlen_k() as u64);
        let area = (bm * bn) as f64;
        // Per Q tile: the list of (kv tile, unmasked element count), ascending in kv.
        let mut rows: Vec<Vec<(u32, u64)>> = Vec::with_capacity(m as usize);
        match mask {
            Mask::Blocks { pairs } => {
                let mut grid: Vec<Vec<(u32, u64)>> = vec![Vec::new(); m as usize];
                for &(q, kv) in pairs {
                    if q >= m || kv >= n {
                        return Err(ModelError::BlockOutside { q, kv, m, n });
                    }
                    let rows_in = (sq - q as u64 * bm).min(bm);
                    let cols_in = (sk - kv as u64 * bn).min(bn);
                    grid[q as usize].push((kv, rows_in * cols_in));
                }
                for (q, row) in grid.iter_mut().enumerate() {
                    row.sort_unstable();
                    if let Some(w) = row.windows(2).find(|w| w[0].0 == w[1].0) {
                        return Err(ModelError::BlockRepeated { q: q as u32, kv: w[0].0 });
                    }
                }
                rows = grid;
            }
            _ => {
                let intervals = RowIntervals::new(problem, mask)?;
                let mut full_diff = vec![0i64; n as usize + 1];
                let mut partial = vec![0u64; n as usize];
                for q in 0..m as u64 {
                    full_diff.iter_mut().for_each(|x| *x = 0);
                    partial.iter_mut().for_each(|x| *x = 0);
                    let r_end = ((q + 1) * bm).min(sq);
                    for r in q * bm..r_end {
                        let (lo, hi) = intervals.at(r);
                        if lo >= hi {
                            continue;
                        }
                        let (jl, jh) = (lo / bn, (hi - 1) / bn);
                        if jl == jh {
                            partial[jl as usize] += hi - lo;
                        } else {
                            partial[jl as usize] += (jl + 1) * bn - lo;
                            partial[jh as usize] += hi - jh * bn;
                            full_diff[jl as usize + 1] += 1;
                            full_diff[jh as usize] -= 1;
                        }
                    }
                    let mut running = 0i64;
                    let mut row = Vec::new();
                    for j in 0..n as usize {
                        running += full_diff[j];
                        let count = running as u64 * bn + partial[j];
                        if count > 0 {
                            row.push((j as u32, count));
                        }
                    }
                    rows.push(row);
                }
            }
        }

        let mut row_ptr = Vec::with_capacity(m as usize + 1);
        let mut row_kv = Vec::new();
        let mut col_len = vec![0u32; n as usize];
        row_ptr.push(0u32);
        for row in &rows {
            for &(kv, _) in row {
                row_kv.push(kv);
                col_len[kv as usize] += 1;
            }
            row_ptr.push(row_kv.len() as u32);
        }
        if row_kv.is_empty() {
            return Err(ModelError::EmptyMask);
        }
        let mut col_ptr = Vec::with_capacity(n as usize + 1);
        col_ptr.push(0u32);
        for len in &col_len {
            col_ptr.push(col_ptr.last().unwrap() + len);
        }
        let mut fill: Vec<u32> = col_ptr[..n as usize].to_vec();
        let mut col_q = vec![0u32; row_kv.len()];
        let mut col_frac = vec![0f32; row_kv.len()];
        // Rows are visited in ascending q, so each column's list comes out ascending.
        for (q, row) in rows.iter().enumerate() {
            for &(kv, count) in row {
                let at = fill[kv as usize] as usize;
                col_q[at] = q as u32;
                col_frac[at] = (count as f64 / area) as f32;
                fill[kv as usize] += 1;
            }
        }
        Ok(TileMask { m, n, col_ptr, col_q, col_frac, row_ptr, row_kv })
    }

    /// Q tiles per (batch, head).
    pub fn m(&self) -> u32 {
        self.m
    }
    /// KV tiles per (batch, head).
    pub fn n(&self) -> u32 {
        self.n
    }
    /// Active Q tiles of KV tile `kv`, ascending.
    pub fn column(&self, kv: u32) -> &[u32] {
        &self.col_q[self.col_ptr[kv as usize] as usize..self.col_ptr[kv as usize + 1] as usize]
    }
    /// Unmasked fractions (of a full block_m x block_n tile) of `column(kv)`, in the same order.
    pub fn column_fractions(&self, kv: u32) -> &[f32] {
        &self.col_frac[self.col_ptr[kv as usize] as usize..self.col_ptr[kv as usize + 1] as usize]
    }
    /// Unmasked fraction of tile (q, kv), 0 when the tile is inactive.
    pub fn fraction(&self, q: u32, kv: u32) -> f32 {
        let col = self.column(kv);
        match col.binary_search(&q) {
            Ok(at) => self.column_fractions(kv)[at],
            Err(_) => 0.0,
        }
    }
    /// KV tiles contributing to dQ tile `q`, ascending.
    pub fn row(&self, q: u32) -> &[u32] {
        &self.row_kv[self.row_ptr[q as usize] as usize..self.row_ptr[q as usize + 1] as usize]
    }
    /// Number of active tiles in the rows before `q` (the row's offset in row-major CSR order).
    pub fn row_offset(&self, q: u32) -> u32 {
        self.row_ptr[q as usize]
    }
    /// Active tiles per (batch, head).
    pub fn active_tiles(&self) -> u64 {
        self.row_kv.len() as u64
    }
    /// Sum of unmasked fractions over the active tiles of one (batch, head).
    pub fn unmasked_tile_equivalents(&self) -> f64 {
        self.col_frac.iter().map(|&f| f as f64).sum()
    }
    /// Whether every active tile of column `kv` forms one contiguous run of Q tiles.
    pub fn column_is_contiguous(&self, kv: u32) -> bool {
        let col = self.column(kv);
        col.windows(2).all(|w| w[1] == w[0] + 1)
    }
}

/// For every query row, the half-open interval of visible keys. Every positional mask (full, causal, sliding
/// window, documents) is of this form, which lets a tile's unmasked count be summed row by row.
struct RowIntervals<'a> {
    mask: &'a Mask,
    offset: i64,
    seqlen_k: i64,
    doc_of_row: Vec<(u64, u64)>,
}

impl<'a> RowIntervals<'a> {
    fn new(problem: &Problem, mask: &'a Mask) -> Result<Self, ModelError> {
        let mut doc_of_row = Vec::new();
        if let Mask::Document { lens, .. } = mask {
            if let Some(index) = lens.iter().position(|&l| l == 0) {
                return Err(ModelError::EmptyDocument { index });
            }
            let sum: u64 = lens.iter().map(|&l| l as u64).sum();
            if sum != problem.seqlen_q() as u64 || sum != problem.seqlen_k() as u64 {
                return Err(ModelError::DocumentLengths {
                    sum,
                    seqlen_q: problem.seqlen_q(),
                    seqlen_k: problem.seqlen_k(),
                });
            }
            let mut start = 0u64;
            for &l in lens {
                let end = start + l as u64;
                doc_of_row.extend(std::iter::repeat_n((start, end), l as usize));
                start = end;
            }
        }
        Ok(RowIntervals {
            mask,
            offset: problem.seqlen_k() as i64 - problem.seqlen_q() as i64,
            seqlen_k: problem.seqlen_k() as i64,
            doc_of_row,
        })
    }

    /// Visible keys [lo, hi) of query row `r`.
    fn at(&self, r: u64) -> (u64, u64) {
        let diag = r as i64 + self.offset;
        let clamp = |lo: i64, hi: i64| {
            let lo = lo.clamp(0, self.seqlen_k);
            let hi = hi.clamp(0, self.seqlen_k);
            (lo as u64, hi.max(lo) as u64)
        };
        match self.mask {
            Mask::Full => (0, self.seqlen_k as u64),
            Mask::Causal => clamp(0, diag + 1),
            Mask::SlidingWindow { left, right } => {
                let lo = left.map_or(0, |l| diag - l as i64);
                let hi = right.map_or(self.seqlen_k, |rr| diag + rr as i64 + 1);
                clamp(lo, hi)
            }
            Mask::Document { causal, .. } => {
                let (start, end) = self.doc_of_row[r as usize];
                if *causal { (start, r + 1) } else { (start, end) }
            }
            Mask::Blocks { .. } => unreachable!("block masks are not positional"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProblemSpec;

    fn problem(sq: u32, sk: u32, bm: u32, bn: u32) -> Problem {
        Problem::new(ProblemSpec {
            batch: 1,
            heads: 1,
            kv_heads: 1,
            seqlen_q: sq,
            seqlen_k: sk,
            head_dim: 64,
            block_m: bm,
            block_n: bn,
        })
        .unwrap()
    }

    /// Brute force: count unmasked elements of every tile element by element.
    fn brute(p: &Problem, visible: impl Fn(u64, u64) -> bool) -> Vec<Vec<f32>> {
        let (bm, bn) = (p.block_m() as u64, p.block_n() as u64);
        let mut out = vec![vec![0f32; p.n_tiles() as usize]; p.m_tiles() as usize];
        for r in 0..p.seqlen_q() as u64 {
            for c in 0..p.seqlen_k() as u64 {
                if visible(r, c) {
                    out[(r / bm) as usize][(c / bn) as usize] += 1.0;
                }
            }
        }
        out.iter_mut().flatten().for_each(|x| *x /= (bm * bn) as f32);
        out
    }

    fn check(p: &Problem, mask: &Mask, visible: impl Fn(u64, u64) -> bool) {
        let tm = TileMask::new(p, mask).unwrap();
        let want = brute(p, visible);
        for q in 0..p.m_tiles() {
            for kv in 0..p.n_tiles() {
                let w = want[q as usize][kv as usize];
                assert!((tm.fraction(q, kv) - w).abs() < 1e-6, "tile ({q},{kv}) of {mask:?}");
                assert_eq!(tm.row(q).contains(&kv), w > 0.0);
            }
        }
    }

    #[test]
    fn positional_masks_match_element_by_element_count() {
        for (sq, sk) in [(100, 100), (100, 37), (37, 100), (96, 128)] {
            let p = problem(sq, sk, 16, 8);
            let off = sk as i64 - sq as i64;
            check(&p, &Mask::Full, |_, _| true);
            check(&p, &Mask::Causal, |r, c| c as i64 <= r as i64 + off);
            let sw = Mask::SlidingWindow { left: Some(20), right: Some(3) };
            check(&p, &sw, |r, c| {
                let (r, c) = (r as i64 + off, c as i64);
                c >= r - 20 && c <= r + 3
            });
            let left_only = Mask::SlidingWindow { left: Some(5), right: None };
            check(&p, &left_only, |r, c| c as i64 >= r as i64 + off - 5);
        }
        let p = problem(100, 100, 16, 8);
        let docs = [30u64, 50, 20];
        let doc = |x: u64| {
            docs.iter()
                .scan(0, |s, &l| {
                    *s += l;
                    Some(*s)
                })
                .position(|e| x < e)
                .unwrap()
        };
        let lens: Vec<u32> = docs.iter().map(|&l| l as u32).collect();
        check(&p, &Mask::Document { lens: lens.clone(), causal: false }, |r, c| doc(r) == doc(c));
        check(&p, &Mask::Document { lens, causal: true }, |r, c| doc(r) == doc(c) && c <= r);
    }

    #[test]
    fn active_tiles_at_most_is_exact_for_full_and_causal_and_a_bound_otherwise() {
        let masks = [
            Mask::Full,
            Mask::Causal,
            Mask::SlidingWindow { left: Some(20), right: Some(3) },
            Mask::Document { lens: vec![30, 50, 20], causal: true },
            Mask::Blocks { pairs: vec![(0, 0), (3, 1)] },
        ];
        for (sq, sk, bm, bn) in
            [(100, 100, 16, 8), (100, 37, 16, 8), (37, 100, 16, 8), (96, 128, 32, 64), (100, 100, 7, 13)]
        {
            let p = problem(sq, sk, bm, bn);
            for mask in &masks {
                let Ok(tm) = TileMask::new(&p, mask) else { continue };
                let at_most = mask.active_tiles_at_most(&p);
                if matches!(mask, Mask::Full | Mask::Causal) {
                    assert_eq!(at_most, tm.active_tiles(), "{mask:?} on {sq}x{sk} in {bm}x{bn} tiles");
                } else {
                    assert!(at_most >= tm.active_tiles(), "{mask:?} on {sq}x{sk} in {bm}x{bn} tiles");
                }
            }
        }
    }

    #[test]
    fn causal_square_grid_is_lower_triangle() {
        let p = problem(512, 512, 64, 64);
        let tm = TileMask::new(&p, &Mask::Causal).unwrap();
        for kv in 0..8 {
            assert_eq!(tm.column(kv), (kv..8).collect::<Vec<_>>().as_slice());
            assert_eq!(tm.column_fractions(kv)[0], (64.0 * 65.0 / 2.0) / (64.0 * 64.0));
        }
        assert_eq!(tm.active_tiles(), 36);
    }

    #[test]
    fn blocks_are_checked_against_the_grid() {
        let p = problem(256, 256, 64, 64);
        let ok = Mask::Blocks { pairs: vec![(0, 0), (3, 1)] };
        let tm = TileMask::new(&p, &ok).unwrap();
        assert_eq!(tm.row(3), &[1]);
        let outside = Mask::Blocks { pairs: vec![(4, 0)] };
        assert_eq!(TileMask::new(&p, &outside), Err(ModelError::BlockOutside { q: 4, kv: 0, m: 4, n: 4 }));
        let twice = Mask::Blocks { pairs: vec![(1, 1), (1, 1)] };
        assert_eq!(TileMask::new(&p, &twice), Err(ModelError::BlockRepeated { q: 1, kv: 1 }));
        assert_eq!(TileMask::new(&p, &Mask::Blocks { pairs: vec![] }), Err(ModelError::EmptyMask));
    }

    #[test]
    fn document_lengths_must_cover_the_sequence() {
        let p = problem(100, 100, 16, 16);
        let bad = Mask::Document { lens: vec![50, 40], causal: true };
        assert!(matches!(TileMask::new(&p, &bad), Err(ModelError::DocumentLengths { sum: 90, .. })));
        let zero = Mask::Document { lens: vec![100, 0], causal: true };
        assert_eq!(TileMask::new(&p, &zero), Err(ModelError::EmptyDocument { index: 1 }));
    }
}
