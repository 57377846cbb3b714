use thiserror::Error;

/// Everything that can be wrong with a problem, a mask or an order, with the fields a user needs to fix it.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    #[error("{name} must be at least 1 (got {value})")]
    NotPositive { name: &'static str, value: i64 },
    #[error("heads ({heads}) must be a multiple of kv-heads ({kv_heads})")]
    GroupMismatch { heads: u32, kv_heads: u32 },
    #[error(
        "the problem has {tiles} tile pairs, more than the {limit} this tool handles; use larger tiles or fewer heads"
    )]
    TooLarge { tiles: u128, limit: u128 },
    #[error(
        "document lengths sum to {sum} tokens but seqlen_q is {seqlen_q} and seqlen_k is {seqlen_k}; they must all be equal"
    )]
    DocumentLengths { sum: u64, seqlen_q: u32, seqlen_k: u32 },
    /// `index` counts from 0, the message from 1, as a person counts the lengths of a list.
    #[error("document {} (counting from 1) has length 0; every document needs at least one token", index + 1)]
    EmptyDocument { index: usize },
    #[error("block ({q}, {kv}) is outside the tile grid ({m} q-tiles x {n} kv-tiles)")]
    BlockOutside { q: u32, kv: u32, m: u32, n: u32 },
    #[error("block ({q}, {kv}) is listed twice")]
    BlockRepeated { q: u32, kv: u32 },
    #[error("{tiles} {direction}-tiles per head is more than the {limit} this tool handles; use larger tiles")]
    TooManyTiles { direction: &'static str, tiles: u128, limit: u128 },
    #[error("the block mask has no active tile")]
    EmptyMask,
    #[error(
        "dependency cycle: unit {unit} (bh {bh}) waits for rank {rank} of dq tile {q}, and the units holding the earlier ranks wait on it in turn"
    )]
    Cycle { unit: usize, bh: u32, q: u32, rank: u32 },
}
