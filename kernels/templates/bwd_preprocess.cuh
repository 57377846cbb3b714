// ${ banner }
//
// Backward preprocessing: D = rowsum(dO o O) and LSE * log2(e) per query row
// (padded rows: D = 0, and +inf from their LSE), the zeroing of the dQ
// semaphores, and, unless BwdParams::skip_dq_accum_zeroing, of the FP32 dQ
// accumulator, which the main kernel's reduction adds into. One CTA covers 32
// rows of one (batch, head). The sm90 deterministic loop stores each q tile's
// rank-0 partial instead (with a bulk copy where the others use a bulk
// reduce-add), which saves writing the 140 MB accumulator of 16384 x 2048
// values here (run 49). (In the portable loop the same change slowed the main
// kernel by more than it saved at head dim 128: bench/NOTES.md run 16.)
#pragma once

#include <cuda_bf16.h>

#include "bwd_params.h"

namespace dashc {

constexpr int kPreprocessRows = 32;
constexpr int kPreprocessThreads = 256;

template <int HEAD_DIM>
__global__ void __launch_bounds__(kPreprocessThreads) bwd_preprocess_kernel(const BwdParams p) {
  const int bh = blockIdx.y;
  const int b = bh / p.heads;
  const int h = bh % p.heads;
  const int row0 = blockIdx.x * kPreprocessRows;

  // D for this CTA's rows: each row is read as 16-byte chunks of 8 values by a
  // group of HEAD_DIM / 8 consecutive lanes (whole 32-byte sectors per lane pair),
  // summed in the group with shuffles. Padded rows (>= seqlen_q) get D = 0.
  constexpr int kLanesPerRow = HEAD_DIM / 8;
  constexpr int kRowsPerPass = kPreprocessThreads / kLanesPerRow;
  static_assert(kLanesPerRow <= 32 && 32 % kLanesPerRow == 0, "a row's lanes sit in one warp");
  static_assert(kPreprocessRows % kRowsPerPass == 0, "every pass covers whole rows");
  const int chunk = threadIdx.x % kLanesPerRow;
#pragma unroll
  for (int pass = 0; pass < kPreprocessRows / kRowsPerPass; ++pass) {
    const int row = row0 + pass * kRowsPerPass + threadIdx.x / kLanesPerRow;
    float sum = 0.f;
    if (row < p.seqlen_q) {
      const size_t off = (((size_t)b * p.seqlen_q + row) * p.heads + h) * HEAD_DIM + chunk * 8;
      const uint4 dov = *reinterpret_cast<const uint4*>(p.dout + off);
      const uint4 ov = *reinterpret_cast<const uint4*>(p.o + off);
      const __nv_bfloat162* d2 = reinterpret_cast<const __nv_bfloat162*>(&dov);
      const __nv_bfloat162* o2 = reinterpret_cast<const __nv_bfloat162*>(&ov);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 df = __bfloat1622float2(d2[i]), of = __bfloat1622float2(o2[i]);
        sum = fmaf(df.x, of.x, fmaf(df.y, of.y, sum));
      }
    }
#pragma unroll
    for (int s = kLanesPerRow / 2; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    if (chunk == 0 && row < p.seqlen_q_pad) {
      const size_t stat = (size_t)bh * p.seqlen_q_pad + row;
      p.dsum[stat] = sum;
      p.lse_log2[stat] = p.lse[stat] * 1.4426950408889634f;
      if (p.row_stats_mma != nullptr) {
        const float neg_lse = p.lse[stat] == INFINITY ? -1e30f : -p.lse[stat] / p.softmax_scale;
        const float values[2] = {neg_lse, -sum};
        __align__(16) __nv_bfloat16 parts[8];
#pragma unroll
        for (int v = 0; v < 2; ++v) {
          // Three bf16 of 8 significant bits each: the FP32 value, exactly for
          // most and to within its last bit for all.
          float rest = values[v];
#pragma unroll
          for (int part = 0; part < 3; ++part) {
            parts[3 * v + part] = __float2bfloat16_rn(rest);
            rest -= __bfloat162float(parts[3 * v + part]);
          }
        }
        parts[6] = parts[7] = __float2bfloat16_rn(0.f);
        *reinterpret_cast<uint4*>(p.row_stats_mma + stat * 8) = *reinterpret_cast<const uint4*>(parts);
      }
    }
  }

  // The accumulator rows of this CTA (padded rows included: the main kernel adds
  // zeros into them and reads nothing back, but they must hold numbers).
  // Skipped where the main loop stores the first partial of every tile.
  float4* acc = reinterpret_cast<float4*>(p.dq_accum + ((size_t)bh * p.seqlen_q_pad + row0) * dq_accum_row_stride(HEAD_DIM));
  // (The last CTA's rows may pass seqlen_q_pad, a multiple of BLOCK_M, which 80 is not of 32.)
  const int rows = min(kPreprocessRows, p.seqlen_q_pad - row0);
  const int zero_floats = p.skip_dq_accum_zeroing ? 0 : rows * dq_accum_row_stride(HEAD_DIM);
  for (int i = threadIdx.x; i < zero_floats / 4; i += kPreprocessThreads) {
    acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  }

  if (blockIdx.x == 0) {
    for (int i = threadIdx.x; i < p.m_tiles; i += kPreprocessThreads) p.dq_semaphore[(size_t)bh * p.m_tiles + i] = 0;
  }
}

}  // namespace dashc
