use thiserror::Error;

/// Why sources or schedule data cannot be generated (or a schedule file cannot be read back).
#[derive(Debug, Error)]
pub enum CodegenError {
    #[error("head dim {head_dim} is not supported by the generated kernels (supported: 64, 128)")]
    UnsupportedHeadDim { head_dim: u32 },
    #[error(
        "tile {block_m} x {block_n} is not supported (block_m and block_n must each be 64 or 128; block_m 80 only \
         with block_n 128 at head dim 128 on a full mask, in the sm90 main loop)"
    )]
    UnsupportedTile { block_m: u32, block_n: u32 },
    #[error(
        "tile {block_m} x {block_n} at head dim {head_dim} needs {needed} bytes of shared memory; {arch} has {limit}"
    )]
    SharedMemory { block_m: u32, block_n: u32, head_dim: u32, needed: u32, arch: &'static str, limit: u32 },
    #[error("mask {mask} is not supported by the generated kernel yet (supported: full, causal)")]
    UnsupportedMask { mask: String },
    #[error("grouped-query attention is not supported yet (heads {heads}, kv heads {kv_heads})")]
    GroupedQuery { heads: u32, kv_heads: u32 },
    #[error("no target architecture given")]
    NoArch,
    #[error("the sm90 main loop builds for sm_90a alone")]
    Sm90Arch,
    #[error("the persistent launch runs on the sm90 main loop only (the portable one launches a CTA per unit)")]
    PersistentNeedsSm90,
    #[error(
        "the schedule splits {columns} kv columns between units; their dK/dV partials are summed by the sm90 main \
         loop's fix-up kernel only (use --arch sm90, or leave out --split-tail)"
    )]
    SplitColumnsNeedSm90 { columns: usize },
    #[error(
        "the sm90 main loop needs the CUTLASS/CuTe headers: set CUTLASS_INCLUDE to a folder holding cute/ and \
         cutlass/, or run kernels/fetch-cutlass.sh"
    )]
    MissingCutlass,
    #[error("the schedule's {field} is {schedule}, but the kernel configuration has {config}")]
    ConfigMismatch { field: &'static str, schedule: String, config: String },
    #[error("{what} {value} does not fit the schedule file's 16-bit field (limit {limit})")]
    IndexTooLarge { what: &'static str, value: u32, limit: u32 },
    #[error("template {name} is missing")]
    MissingTemplate { name: String },
    #[error("template {name} failed to render: {source}")]
    Template {
        name: String,
        #[source]
        source: minijinja::Error,
    },
    #[error("schedule data, line {line}: {message}")]
    Parse { line: usize, message: String },
}
