// ${ banner }
//
// The compile-time switches of this build (filled in by the generator) and
// BwdParams, everything the backward kernels read at run time: what can change
// from launch to launch without recompiling.
#pragma once

#include <cstdint>
#include <cuda_bf16.h>

namespace dashc {

// Which main loop this build runs: 0 the portable one (bwd_mainloop_sm80.cuh,
// mma.sync), 1 the Hopper one (bwd_mainloop_sm90.cuh, wgmma and TMA, built for
// sm_90a with the CUTLASS/CuTe headers). A preprocessor switch, because the
// portable build must not include CuTe.
#define DASHC_MAINLOOP_SM90 ${ sm90_main_loop }

// Compile-time configuration. The kernels take these as template parameters
// (see BwdConfig in the main-loop headers); the harness checks the schedule file
// against them and refuses a file made for another configuration.
namespace config {
constexpr int kHeadDim = ${ head_dim };
constexpr int kBlockM = ${ block_m };
constexpr int kBlockN = ${ block_n };
constexpr bool kIsCausal = ${ is_causal };
constexpr bool kDeterministic = ${ deterministic };
constexpr bool kTrace = ${ trace };
constexpr const char* kVariantName = "${ variant_name }";
}  // namespace config

// Flag bits of a visit entry (VisitEntry::rank_flags, upper 16 bits). They are
// derived by the harness from the visit list so that the kernel never compares
// tile indices to discover where one KV tile's run of visits starts or ends.
constexpr uint32_t kVisitFirstOfKv = 1u << 0;  // load K_j/V_j, zero dK/dV before this visit
constexpr uint32_t kVisitLastOfKv = 1u << 1;   // write dK_j/dV_j after this visit
// With kVisitLastOfKv: this run holds only part of KV tile j's visits (a split
// column, docs/model.md "Split tail"), so its dK_j/dV_j are an FP32 partial,
// written to BwdParams::dkv_partial (slot dkv_slot_of_visit[visit]) and summed
// with the column's other parts, in launch order, after the main loop. sm90 only.
constexpr uint32_t kVisitPartialKv = 1u << 2;

// A KV tile split between units: its parts' FP32 partials are slots
// first_slot .. first_slot + parts - 1 of BwdParams::dkv_partial, in launch order.
struct SplitKvTile {
  int32_t bh;
  int32_t kv;
  int32_t first_slot;
  int32_t parts;
};

// One work unit (one CTA), indexed by launch position blockIdx.x.
struct UnitEntry {
  int32_t first_visit;  // index of the unit's first entry in BwdParams::visits
  int32_t num_visits;
  int32_t bh;           // batch * heads + head
  int32_t pad;          // keeps the entry 16 bytes: one vector load
};

// One visit, 8 bytes so the reader prefetches it with one 64-bit load.
struct VisitEntry {
  uint32_t kv_q;        // kv tile in bits 0..15, q tile in bits 16..31
  uint32_t rank_flags;  // rank on dQ tile (bh, q) in bits 0..15, kVisit* flags in bits 16..31
};

// Where a deterministic wait gave up. Written once (the first CTA to time out
// wins the `code` compare-and-swap), read by the host after the launch.
struct SpinError {
  int32_t code;         // 0 = no error, 1 = semaphore wait timed out, 2 = semaphore overshot the rank,
                        // 3 = the sm90 kernel's shared memory was not 1 KiB aligned (seen_value: its address)
  int32_t unit;
  int32_t bh;
  int32_t q_tile;
  int32_t wanted_rank;
  int32_t seen_value;
  int32_t abort;        // set by the failing CTA so that the others stop waiting at once
  int32_t pad;
};

// Row stride of the FP32 dQ accumulator, in floats: the head dim plus one 32-byte
// sector. Each reduction instruction of a warp adds into 8 rows at the same
// column; with rows a power of two bytes apart those 8 sectors probably fall into
// few L2 slices, which serialize the adds. The pad spreads them: 1-5% faster main
// kernel (bench/NOTES.md run 18). The pad columns are never read.
__host__ __device__ constexpr int dq_accum_row_stride(int head_dim) { return head_dim + 8; }

struct BwdParams {
  // Shape (the tile sizes and head dim are compile-time constants).
  int batch;
  int heads;
  int seqlen_q;
  int seqlen_k;
  int m_tiles;          // ceil(seqlen_q / BLOCK_M)
  int n_tiles;          // ceil(seqlen_k / BLOCK_N)
  int seqlen_q_pad;     // m_tiles * BLOCK_M: row count of the padded per-row buffers

  float softmax_scale;       // 1 / sqrt(head_dim)
  float softmax_scale_log2;  // softmax_scale * log2(e): P = exp2(S * this - LSE * log2(e))

  // Inputs, layout [batch, seqlen, heads, head_dim], contiguous.
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const __nv_bfloat16* o;
  const __nv_bfloat16* dout;
  // Per-row statistics, layout [batch * heads, seqlen_q_pad]. Rows past seqlen_q
  // hold LSE = +inf and D = 0 so that padded rows contribute exactly nothing.
  const float* lse;
  float* dsum;              // D = rowsum(dO * O), written by the preprocess kernel
  // LSE * log2(e), written by the preprocess kernel (same layout; +inf past
  // seqlen_q): the sm90 main loop's P = exp2(S * softmax_scale_log2 - this) is
  // one FFMA per element with no scaling of the row statistic in the loop.
  float* lse_log2;
  // The sm90 loop's row statistics as a bf16 wgmma operand (MainLoop::kRowStatsInMma;
  // null elsewhere), written by the preprocess kernel: per padded row, 8 values
  // [-LSE / softmax_scale as hi, mid, lo; -D as hi, mid, lo; 0, 0], each triple
  // summing to the FP32 value. A register A operand of ones turns them into a k
  // block of S^T and dP^T, so the products come out as S^T - LSE / scale and
  // dP^T - D with no per-element loads of the statistics (+inf LSE: -1e30).
  __nv_bfloat16* row_stats_mma;

  // Outputs, layout [batch, seqlen, heads, head_dim].
  __nv_bfloat16* dq;
  __nv_bfloat16* dk;
  __nv_bfloat16* dv;

  // dQ accumulator (FP32), [batch * heads, seqlen_q_pad, dq_accum_row_stride(head_dim)]
  // floats, zeroed by the preprocess kernel unless skip_dq_accum_zeroing. The portable main loop uses it in
  // that layout; the sm90 one as one fragment-ordered block of BLOCK_M x head_dim
  // floats per (bh, q tile) (dq_block_floats in its header). Each main loop's
  // postprocess reads its own layout. One semaphore per (bh, q tile), layout
  // [batch * heads, m_tiles].
  float* dq_accum;
  int* dq_semaphore;
  // 0 (the default): the preprocess zeroes dq_accum. 1 only where the main loop
  // stores the rank-0 partial of every q tile instead of adding it
  // (MainLoop::kRankZeroStores, in the deterministic build) and every q tile has
  // a visit.
  int skip_dq_accum_zeroing;

  // The schedule: units in launch order and their visits.
  const UnitEntry* units;
  const VisitEntry* visits;
  int num_units;

  // Bounded spinning: a wait that lasts longer than this gives up and reports.
  unsigned long long spin_timeout_ns;
  SpinError* spin_error;

  // Split columns (kVisitPartialKv; null and 0 when there are none): per visit,
  // the partial slot of a partial run's last visit (-1 elsewhere); the slots,
  // each 2 x BLOCK_N x head_dim floats (dK then dV, unscaled, in the main loop's
  // fragment order); and the split tiles, summed by the dK/dV fix-up kernel.
  const int* dkv_slot_of_visit;
  float* dkv_partial;
  const SplitKvTile* split_kv_tiles;
  int num_split_kv_tiles;

  // Per-visit timestamps when TRACE is compiled in (4 x u64 per visit), else null.
  unsigned long long* trace;
};

}  // namespace dashc
