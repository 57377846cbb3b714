// ${ banner }
//
// Backward preprocessing: D = rowsum(dO o O) per query row, and the zeroing of
// the FP32 dQ accumulator and of the dQ semaphores, which the main kernel's
// reduction assumes. One CTA covers 32 rows of one (batch, head).
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
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  constexpr int kWarps = kPreprocessThreads / 32;

  // D for this CTA's rows: one warp per row, lanes striding the head dim so that
  // a warp's loads are contiguous. Padded rows (>= seqlen_q) get D = 0.
  for (int i = warp; i < kPreprocessRows; i += kWarps) {
    const int row = row0 + i;
    float sum = 0.f;
    if (row < p.seqlen_q) {
      const size_t off = (((size_t)b * p.seqlen_q + row) * p.heads + h) * HEAD_DIM;
      for (int d = lane; d < HEAD_DIM; d += 32) {
        sum += __bfloat162float(p.dout[off + d]) * __bfloat162float(p.o[off + d]);
      }
    }
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    if (lane == 0) p.dsum[(size_t)bh * p.seqlen_q_pad + row] = sum;
  }

  // The accumulator rows of this CTA (padded rows included: the main kernel adds
  // zeros into them and reads nothing back, but they must hold numbers).
  float4* acc = reinterpret_cast<float4*>(p.dq_accum + ((size_t)bh * p.seqlen_q_pad + row0) * HEAD_DIM);
  for (int i = threadIdx.x; i < kPreprocessRows * HEAD_DIM / 4; i += kPreprocessThreads) {
    acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  }

  if (blockIdx.x == 0) {
    for (int i = threadIdx.x; i < p.m_tiles; i += kPreprocessThreads) p.dq_semaphore[(size_t)bh * p.m_tiles + i] = 0;
  }
}

}  // namespace dashc
