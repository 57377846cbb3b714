use serde::{Deserialize, Serialize};

use crate::ModelError;

/// Upper limit on (batch * heads * q-tiles * kv-tiles): beyond it the tables of a schedule no longer fit in
/// memory comfortably, and indices no longer fit in `u32`.
const MAX_TILE_PAIRS: u128 = 1 << 31;
/// Tile indices and ranks are stored in 16 bits (see `Visit`).
const MAX_TILES_PER_DIRECTION: u128 = u16::MAX as u128;

/// The fields of a problem before validation; `Problem::new` checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemSpec {
    pub batch: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub seqlen_q: u32,
    pub seqlen_k: u32,
    pub head_dim: u32,
    pub block_m: u32,
    pub block_n: u32,
}

/// A validated attention-backward problem: sizes are positive, heads divide into KV groups, and the tile grid
/// is small enough to schedule. The last tile in each direction may be partial; it is still a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "ProblemSpec")]
pub struct Problem {
    spec: ProblemSpec,
}

impl From<Problem> for ProblemSpec {
    fn from(p: Problem) -> Self {
        p.spec
    }
}

/// FlashAttention-style tile sizes of the backward pass for a head dimension: (block_m, block_n).
///
/// Head dim up to 64 uses 128 x 128 tiles; up to 128 uses 64 x 128 (the Q tile shrinks so the K/V tiles and
/// the dK/dV accumulators still fit in registers); larger head dims use 64 x 64.
pub fn default_blocks(head_dim: u32) -> (u32, u32) {
    match head_dim {
        0..=64 => (128, 128),
        65..=128 => (64, 128),
        _ => (64, 64),
    }
}

impl Problem {
    pub fn new(spec: ProblemSpec) -> Result<Self, ModelError> {
        let fields = [
            ("batch", spec.batch),
            ("heads", spec.heads),
            ("kv-heads", spec.kv_heads),
            ("seqlen", spec.seqlen_q),
            ("seqlen-k", spec.seqlen_k),
            ("head-dim", spec.head_dim),
            ("block-m", spec.block_m),
            ("block-n", spec.block_n),
        ];
        for (name, value) in fields {
            if value == 0 {
                return Err(ModelError::NotPositive { name, value: 0 });
            }
        }
        if !spec.heads.is_multiple_of(spec.kv_heads) {
            return Err(ModelError::GroupMismatch { heads: spec.heads, kv_heads: spec.kv_heads });
        }
        let m = spec.seqlen_q.div_ceil(spec.block_m) as u128;
        let n = spec.seqlen_k.div_ceil(spec.block_n) as u128;
        for (name, tiles) in [("q", m), ("kv", n)] {
            if tiles > MAX_TILES_PER_DIRECTION {
                return Err(ModelError::TooManyTiles { direction: name, tiles, limit: MAX_TILES_PER_DIRECTION });
            }
        }
        let tiles = spec.batch as u128 * spec.heads as u128 * m * n;
        if tiles > MAX_TILE_PAIRS {
            return Err(ModelError::TooLarge { tiles, limit: MAX_TILE_PAIRS });
        }
        Ok(Problem { spec })
    }

    pub fn spec(&self) -> ProblemSpec {
        self.spec
    }
    pub fn batch(&self) -> u32 {
        self.spec.batch
    }
    pub fn heads(&self) -> u32 {
        self.spec.heads
    }
    pub fn kv_heads(&self) -> u32 {
        self.spec.kv_heads
    }
    /// Query heads per KV head (1 for multi-head attention).
    pub fn group(&self) -> u32 {
        self.spec.heads / self.spec.kv_heads
    }
    pub fn seqlen_q(&self) -> u32 {
        self.spec.seqlen_q
    }
    pub fn seqlen_k(&self) -> u32 {
        self.spec.seqlen_k
    }
    pub fn head_dim(&self) -> u32 {
        self.spec.head_dim
    }
    pub fn block_m(&self) -> u32 {
        self.spec.block_m
    }
    pub fn block_n(&self) -> u32 {
        self.spec.block_n
    }
    /// Number of Q tiles per (batch, head), the partial last one included.
    pub fn m_tiles(&self) -> u32 {
        self.spec.seqlen_q.div_ceil(self.spec.block_m)
    }
    /// Number of KV tiles per (batch, head), the partial last one included.
    pub fn n_tiles(&self) -> u32 {
        self.spec.seqlen_k.div_ceil(self.spec.block_n)
    }
    /// Number of (batch, head) pairs; `bh = b * heads + h`.
    pub fn bh_count(&self) -> u32 {
        self.spec.batch * self.spec.heads
    }
    /// The (batch, KV head) pair that query pair `bh` reads K and V from.
    pub fn kv_group_of(&self, bh: u32) -> u32 {
        let b = bh / self.spec.heads;
        let h = bh % self.spec.heads;
        b * self.spec.kv_heads + h / self.group()
    }
    /// Forward FLOPs of the unmasked problem, 4·B·H·Sq·Sk·d; the backward is counted as 2.5 times this.
    pub fn forward_flops_full(&self) -> f64 {
        4.0 * self.spec.batch as f64
            * self.spec.heads as f64
            * self.spec.seqlen_q as f64
            * self.spec.seqlen_k as f64
            * self.spec.head_dim as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProblemSpec {
        ProblemSpec {
            batch: 2,
            heads: 8,
            kv_heads: 2,
            seqlen_q: 1000,
            seqlen_k: 3000,
            head_dim: 128,
            block_m: 64,
            block_n: 128,
        }
    }

    #[test]
    fn partial_last_tiles_are_counted() {
        let p = Problem::new(spec()).unwrap();
        assert_eq!(p.m_tiles(), 16);
        assert_eq!(p.n_tiles(), 24);
        assert_eq!(p.group(), 4);
        assert_eq!(p.kv_group_of(8 + 5), 2 + 1);
    }

    #[test]
    fn zero_sizes_and_bad_groups_are_rejected() {
        let mut s = spec();
        s.seqlen_k = 0;
        assert_eq!(Problem::new(s), Err(ModelError::NotPositive { name: "seqlen-k", value: 0 }));
        let mut s = spec();
        s.kv_heads = 3;
        assert!(matches!(Problem::new(s), Err(ModelError::GroupMismatch { .. })));
        let mut s = spec();
        s.batch = 1 << 20;
        s.seqlen_q = 1 << 20;
        assert!(matches!(Problem::new(s), Err(ModelError::TooLarge { .. })));
    }
}
