//! A small deterministic random number generator (a SplitMix64-style mixer over a counter).
//!
//! The search needs reproducible streams keyed by (seed, round, candidate), so that a candidate is the same
//! whichever thread proposes it; a counter-based generator gives that directly.

pub(crate) struct Rng {
    state: u64,
}

/// A bijective scramble of 64 bits: adjacent inputs give unrelated outputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl Rng {
    /// The stream of one (seed, round, candidate) triple.
    pub fn new(seed: u64, round: u64, candidate: u64) -> Rng {
        let s = mix(seed ^ GOLDEN);
        let s = mix(s ^ round.wrapping_mul(GOLDEN));
        Rng { state: mix(s ^ candidate.wrapping_add(1).wrapping_mul(0xd1b5_4a32_d192_ed03)) }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// Uniform in `0..n` (`n > 0`), by the high half of a 128-bit product (the bias is below 2^-32 for
    /// the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..hi` (`lo < hi`).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |s, r, c| {
            let mut g = Rng::new(s, r, c);
            (0..4).map(|_| g.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 2, 3), draw(1, 2, 3));
        assert_ne!(draw(1, 2, 3), draw(1, 2, 4));
        assert_ne!(draw(1, 2, 3), draw(1, 3, 3));
        assert_ne!(draw(1, 2, 3), draw(2, 2, 3));
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut g = Rng::new(7, 0, 0);
        let mut seen = [false; 5];
        for _ in 0..200 {
            let x = g.below(5);
            seen[x] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
