//! `--doc-random SEED`: document lengths for a packed (varlen) batch, drawn from a seed so that a document
//! mask can be named on the command line without listing its lengths.
//!
//! Every document is between `MIN_DOC` and `MAX_DOC` tokens (a sequence shorter than `MIN_DOC` is one
//! document), uniform among the lengths that still leave room for a legal remainder; the last document takes
//! what is left. The same seed and length always give the same documents.

/// Shortest document drawn.
pub const MIN_DOC: u32 = 512;
/// Longest document drawn.
pub const MAX_DOC: u32 = 8192;

/// Document lengths summing to `seqlen`, each in `MIN_DOC..=MAX_DOC` when `seqlen >= MIN_DOC`.
pub fn random_documents(seqlen: u32, seed: u64) -> Vec<u32> {
    let mut state = seed ^ 0x6a09_e667_f3bc_c909;
    let mut draw = |n: u32| -> u32 {
        // A SplitMix64 step, then the high half of a 64x32 product for a value below n.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (((z >> 32) * n as u64) >> 32) as u32
    };
    let mut lens = Vec::new();
    let mut left = seqlen;
    while left > MAX_DOC {
        // Leave at least MIN_DOC for the documents after this one.
        let hi = MAX_DOC.min(left - MIN_DOC);
        let len = MIN_DOC + draw(hi - MIN_DOC + 1);
        lens.push(len);
        left -= len;
    }
    if left > 0 {
        lens.push(left);
    }
    lens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_fill_the_sequence_within_the_range() {
        for seqlen in [512u32, 1000, 8192, 8193, 16384, 65536, 100_000] {
            for seed in 0..20 {
                let lens = random_documents(seqlen, seed);
                assert_eq!(lens.iter().map(|&l| l as u64).sum::<u64>(), seqlen as u64);
                assert!(lens.iter().all(|&l| (MIN_DOC..=MAX_DOC).contains(&l)), "{seqlen} {seed}: {lens:?}");
            }
        }
        assert_eq!(random_documents(100, 3), vec![100]);
    }

    #[test]
    fn the_seed_decides() {
        assert_eq!(random_documents(65536, 7), random_documents(65536, 7));
        assert_ne!(random_documents(65536, 7), random_documents(65536, 8));
    }
}
