// ${ banner }
//
// Backward postprocessing: dQ = bf16(dq_accum * softmax_scale). The scale is
// applied here, once per element, rather than to every partial in the main loop.
#pragma once

#include <cuda_bf16.h>

#include "bwd_params.h"

namespace dashc {

constexpr int kPostprocessRows = 32;
constexpr int kPostprocessThreads = 256;

template <int HEAD_DIM>
__global__ void __launch_bounds__(kPostprocessThreads) bwd_postprocess_kernel(const BwdParams p) {
  const int bh = blockIdx.y;
  const int b = bh / p.heads;
  const int h = bh % p.heads;
  const int row0 = blockIdx.x * kPostprocessRows;
  constexpr int kPairsPerRow = HEAD_DIM / 2;
  for (int i = threadIdx.x; i < kPostprocessRows * kPairsPerRow; i += kPostprocessThreads) {
    const int row = row0 + i / kPairsPerRow;
    const int col = (i % kPairsPerRow) * 2;
    if (row >= p.seqlen_q) break;  // rows only grow with i
    const float2 a = *reinterpret_cast<const float2*>(p.dq_accum + ((size_t)bh * p.seqlen_q_pad + row) * HEAD_DIM + col);
    const size_t off = (((size_t)b * p.seqlen_q + row) * p.heads + h) * HEAD_DIM + col;
    *reinterpret_cast<__nv_bfloat162*>(p.dq + off) =
        __floats2bfloat162_rn(a.x * p.softmax_scale, a.y * p.softmax_scale);
  }
}

}  // namespace dashc
