// ${ banner }
//
// Backward postprocessing: dQ = bf16(dq_accum * softmax_scale). The scale is
// applied here, once per element, rather than to every partial in the main loop.
// Each thread converts 4 neighbouring values (16-byte loads, 8-byte stores).
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
  constexpr int kQuadsPerRow = HEAD_DIM / 4;
  static_assert(kPostprocessRows * kQuadsPerRow % kPostprocessThreads == 0, "every pass is whole");
#pragma unroll
  for (int pass = 0; pass < kPostprocessRows * kQuadsPerRow / kPostprocessThreads; ++pass) {
    const int i = pass * kPostprocessThreads + threadIdx.x;
    const int row = row0 + i / kQuadsPerRow;
    const int col = (i % kQuadsPerRow) * 4;
    if (row >= p.seqlen_q) break;  // rows only grow with i
    const float4 a = *reinterpret_cast<const float4*>(p.dq_accum + ((size_t)bh * p.seqlen_q_pad + row) * dq_accum_row_stride(HEAD_DIM) + col);
    const size_t off = (((size_t)b * p.seqlen_q + row) * p.heads + h) * HEAD_DIM + col;
    __nv_bfloat162 out[2] = {__floats2bfloat162_rn(a.x * p.softmax_scale, a.y * p.softmax_scale),
                             __floats2bfloat162_rn(a.z * p.softmax_scale, a.w * p.softmax_scale)};
    *reinterpret_cast<uint2*>(p.dq + off) = *reinterpret_cast<const uint2*>(out);
  }
}

}  // namespace dashc
