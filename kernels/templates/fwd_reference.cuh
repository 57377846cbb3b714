// ${ banner }
//
// Reference kernels for the harness, in plain FP32 arithmetic (no tensor cores):
//   - ref_forward_kernel: O (bf16 and FP32) and LSE, the inputs of the backward;
//   - ref_rowdot_kernel, ref_dq_kernel, ref_dkdv_kernel: an FP32 backward that the
//     generated kernel is checked against.
// They are written for being obviously right, not fast: 64 x 64 tiles in shared
// memory, 256 threads on a 16 x 16 grid, each thread owning rows ty + 16 i and
// columns tx + 16 j. None of them is timed.
#pragma once

#include <cuda_bf16.h>
#include <math_constants.h>

namespace dashc {
namespace ref {

constexpr int kTile = 64;
constexpr int kThreads = 256;

struct RefShape {
  int batch, heads, seqlen_q, seqlen_k, seqlen_q_pad;
  bool causal;
  float scale;
};

__device__ __forceinline__ bool visible(const RefShape& s, int row, int col) {
  if (row >= s.seqlen_q || col >= s.seqlen_k) return false;
  return !s.causal || col <= row + (s.seqlen_k - s.seqlen_q);
}

// Tile rows [row0, row0 + 64) of one head of a [batch, seqlen, heads, D] bf16
// tensor into FP32 shared memory with a padded stride (D + 1), zero past seqlen.
template <int D>
__device__ void load_tile(float* dst, const __nv_bfloat16* src, int b, int h, int heads, int seqlen, int row0) {
  for (int i = threadIdx.x; i < kTile * D; i += kThreads) {
    const int r = i / D, c = i % D;
    const int row = row0 + r;
    float v = 0.f;
    if (row < seqlen) v = __bfloat162float(src[(((size_t)b * seqlen + row) * heads + h) * D + c]);
    dst[r * (D + 1) + c] = v;
  }
}

// acc[i][j] = sum_k A[ty + 16 i][k] * B[tx + 16 j][k] for 64 x 64 tiles of stride D + 1.
template <int D>
__device__ void tile_abt(float (&acc)[4][4], const float* A, const float* B) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (int k = 0; k < D; ++k) {
    float a[4], bb[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = A[(ty + 16 * i) * (D + 1) + k];
#pragma unroll
    for (int j = 0; j < 4; ++j) bb[j] = B[(tx + 16 * j) * (D + 1) + k];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
  }
}

// out[i][j] += sum_k W(row = ty + 16 i, k) * X[k][tx + 16 j], W a 64 x 64 tile of
// stride 65 read as W[r][k] (TRANS_W = false) or W[k][r] (TRANS_W = true), X a
// 64 x D tile of stride D + 1.
template <int D, bool TRANS_W>
__device__ void tile_wx(float (&out)[4][D / 16], const float* W, const float* X) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  for (int k = 0; k < kTile; ++k) {
    float w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = ty + 16 * i;
      w[i] = TRANS_W ? W[k * (kTile + 1) + r] : W[r * (kTile + 1) + k];
    }
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
      const float x = X[k * (D + 1) + tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i][j] = fmaf(w[i], x, out[i][j]);
    }
  }
}

// Forward: O = softmax(scale Q K^T) V with exact FP32 online softmax.
// Grid (ceil(seqlen_q / 64), batch * heads). LSE rows past seqlen_q, and rows that
// see no key, get +inf so that every P computed from them is exactly 0.
template <int D>
__global__ void __launch_bounds__(kThreads) ref_forward_kernel(RefShape s, const __nv_bfloat16* q,
                                                               const __nv_bfloat16* k, const __nv_bfloat16* v,
                                                               __nv_bfloat16* o, float* o32, float* lse) {
  extern __shared__ float smem[];
  float* sQ = smem;                    // 64 x (D + 1)
  float* sKV = sQ + kTile * (D + 1);   // 64 x (D + 1), K then V
  float* sS = sKV + kTile * (D + 1);   // 64 x 65
  float* sRowMax = sS + kTile * (kTile + 1);
  float* sRowSum = sRowMax + kTile;
  float* sCorr = sRowSum + kTile;
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int row0 = blockIdx.x * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;

  load_tile<D>(sQ, q, b, h, s.heads, s.seqlen_q, row0);
  if (threadIdx.x < kTile) {
    sRowMax[threadIdx.x] = -CUDART_INF_F;
    sRowSum[threadIdx.x] = 0.f;
  }
  float acc[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < D / 16; ++j) acc[i][j] = 0.f;

  const int n_kv = (s.seqlen_k + kTile - 1) / kTile;
  for (int kt = 0; kt < n_kv; ++kt) {
    const int col0 = kt * kTile;
    // Causal: tiles right of the last row's diagonal are fully masked.
    if (s.causal && col0 > row0 + kTile - 1 + (s.seqlen_k - s.seqlen_q)) break;
    __syncthreads();
    load_tile<D>(sKV, k, b, h, s.heads, s.seqlen_k, col0);
    __syncthreads();
    float sc[4][4];
    tile_abt<D>(sc, sQ, sKV);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = ty + 16 * i, c = tx + 16 * j;
        sS[r * (kTile + 1) + c] = visible(s, row0 + r, col0 + c) ? sc[i][j] * s.scale : -CUDART_INF_F;
      }
    __syncthreads();
    // Online softmax: one thread per row (64 rows), plain and exact.
    if (threadIdx.x < kTile) {
      const int r = threadIdx.x;
      float m = sRowMax[r];
      for (int c = 0; c < kTile; ++c) m = fmaxf(m, sS[r * (kTile + 1) + c]);
      const float corr = (m == -CUDART_INF_F) ? 1.f : expf(sRowMax[r] - m);
      float sum = 0.f;
      for (int c = 0; c < kTile; ++c) {
        const float x = sS[r * (kTile + 1) + c];
        const float pe = (x == -CUDART_INF_F) ? 0.f : expf(x - m);
        sS[r * (kTile + 1) + c] = pe;
        sum += pe;
      }
      sRowMax[r] = m;
      sRowSum[r] = sRowSum[r] * corr + sum;
      sCorr[r] = corr;
    }
    __syncthreads();
    load_tile<D>(sKV, v, b, h, s.heads, s.seqlen_k, col0);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < D / 16; ++j) acc[i][j] *= sCorr[ty + 16 * i];
    tile_wx<D, false>(acc, sS, sKV);
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ty + 16 * i, row = row0 + r;
    if (row >= s.seqlen_q) continue;
    const float l = sRowSum[r];
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
      const size_t off = (((size_t)b * s.seqlen_q + row) * s.heads + h) * D + tx + 16 * j;
      o[off] = __float2bfloat16(acc[i][j] * inv);
      if (o32) o32[off] = acc[i][j] * inv;
    }
  }
  // Rows of the forward's grid past seqlen_q_pad are not stored: with 80-row
  // backward tiles the padded rows can end before the grid's last 64-row tile.
  if (threadIdx.x < kTile && row0 + (int)threadIdx.x < s.seqlen_q_pad) {
    const int row = row0 + threadIdx.x;
    const float l = sRowSum[threadIdx.x];
    lse[(size_t)bh * s.seqlen_q_pad + row] =
        (row < s.seqlen_q && l > 0.f) ? sRowMax[threadIdx.x] + logf(l) : CUDART_INF_F;
  }
}

// LSE for padded rows past the forward's grid (seqlen_q_pad may exceed
// ceil(seqlen_q / 64) * 64 when BLOCK_M is 80 or 128).
__global__ void ref_pad_lse_kernel(RefShape s, float* lse) {
  const int bh = blockIdx.y;
  const int row = ((s.seqlen_q + kTile - 1) / kTile) * kTile + blockIdx.x * blockDim.x + threadIdx.x;
  if (row < s.seqlen_q_pad) lse[(size_t)bh * s.seqlen_q_pad + row] = CUDART_INF_F;
}

// D_ref = rowsum(dO o O) with the FP32 output of the reference forward.
template <int D>
__global__ void ref_rowdot_kernel(RefShape s, const __nv_bfloat16* dout, const float* o32, float* dsum) {
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= s.seqlen_q) return;
  const size_t off = (((size_t)b * s.seqlen_q + row) * s.heads + h) * D;
  float sum = 0.f;
  for (int d = 0; d < D; ++d) sum += __bfloat162float(dout[off + d]) * o32[off + d];
  dsum[(size_t)bh * s.seqlen_q_pad + row] = sum;
}

// P and dS of one (64 x 64) tile pair into sP / sDs, from S = Q K^T and dP = dO V^T.
template <int D>
__device__ void ref_p_ds(const RefShape& s, const float* sQ, const float* sDo, const float* sK, const float* sV,
                         const float* lse_bh, const float* dsum_bh, int row0, int col0, float* sP, float* sDs) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  float sc[4][4], dp[4][4];
  tile_abt<D>(sc, sQ, sK);
  tile_abt<D>(dp, sDo, sV);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = ty + 16 * i, c = tx + 16 * j;
      const int row = row0 + r, col = col0 + c;
      float pe = 0.f, ds = 0.f;
      if (visible(s, row, col)) {
        pe = expf(sc[i][j] * s.scale - lse_bh[row]);
        ds = pe * (dp[i][j] - dsum_bh[row]);
      }
      if (sP) sP[r * (kTile + 1) + c] = pe;
      sDs[r * (kTile + 1) + c] = ds;
    }
}

// dQ = scale * sum_j dS_ij K_j, FP32, layout [batch, seqlen_q, heads, D].
template <int D>
__global__ void __launch_bounds__(kThreads) ref_dq_kernel(RefShape s, const __nv_bfloat16* q,
                                                          const __nv_bfloat16* k, const __nv_bfloat16* v,
                                                          const __nv_bfloat16* dout, const float* lse,
                                                          const float* dsum, float* dq32) {
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sDo = sQ + kTile * (D + 1);
  float* sK = sDo + kTile * (D + 1);
  float* sV = sK + kTile * (D + 1);
  float* sDs = sV + kTile * (D + 1);
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int row0 = blockIdx.x * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const float* lse_bh = lse + (size_t)bh * s.seqlen_q_pad;
  const float* dsum_bh = dsum + (size_t)bh * s.seqlen_q_pad;
  load_tile<D>(sQ, q, b, h, s.heads, s.seqlen_q, row0);
  load_tile<D>(sDo, dout, b, h, s.heads, s.seqlen_q, row0);
  float acc[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < D / 16; ++j) acc[i][j] = 0.f;
  for (int col0 = 0; col0 < s.seqlen_k; col0 += kTile) {
    if (s.causal && col0 > row0 + kTile - 1 + (s.seqlen_k - s.seqlen_q)) break;
    __syncthreads();
    load_tile<D>(sK, k, b, h, s.heads, s.seqlen_k, col0);
    load_tile<D>(sV, v, b, h, s.heads, s.seqlen_k, col0);
    __syncthreads();
    ref_p_ds<D>(s, sQ, sDo, sK, sV, lse_bh, dsum_bh, row0, col0, nullptr, sDs);
    __syncthreads();
    tile_wx<D, false>(acc, sDs, sK);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty + 16 * i;
    if (row >= s.seqlen_q) continue;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) dq32[(((size_t)b * s.seqlen_q + row) * s.heads + h) * D + tx + 16 * j] = acc[i][j] * s.scale;
  }
}

// dK = scale * sum_i dS_ij^T Q_i and dV = sum_i P_ij^T dO_i, FP32, layout [batch, seqlen_k, heads, D].
template <int D>
__global__ void __launch_bounds__(kThreads) ref_dkdv_kernel(RefShape s, const __nv_bfloat16* q,
                                                            const __nv_bfloat16* k, const __nv_bfloat16* v,
                                                            const __nv_bfloat16* dout, const float* lse,
                                                            const float* dsum, float* dk32, float* dv32) {
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sDo = sQ + kTile * (D + 1);
  float* sK = sDo + kTile * (D + 1);
  float* sV = sK + kTile * (D + 1);
  float* sP = sV + kTile * (D + 1);
  float* sDs = sP + kTile * (kTile + 1);
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int col0 = blockIdx.x * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const float* lse_bh = lse + (size_t)bh * s.seqlen_q_pad;
  const float* dsum_bh = dsum + (size_t)bh * s.seqlen_q_pad;
  load_tile<D>(sK, k, b, h, s.heads, s.seqlen_k, col0);
  load_tile<D>(sV, v, b, h, s.heads, s.seqlen_k, col0);
  float acc_dk[4][D / 16], acc_dv[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < D / 16; ++j) acc_dk[i][j] = acc_dv[i][j] = 0.f;
  for (int row0 = 0; row0 < s.seqlen_q; row0 += kTile) {
    if (s.causal && col0 > row0 + kTile - 1 + (s.seqlen_k - s.seqlen_q)) continue;
    __syncthreads();
    load_tile<D>(sQ, q, b, h, s.heads, s.seqlen_q, row0);
    load_tile<D>(sDo, dout, b, h, s.heads, s.seqlen_q, row0);
    __syncthreads();
    ref_p_ds<D>(s, sQ, sDo, sK, sV, lse_bh, dsum_bh, row0, col0, sP, sDs);
    __syncthreads();
    tile_wx<D, true>(acc_dv, sP, sDo);
    tile_wx<D, true>(acc_dk, sDs, sQ);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int col = col0 + ty + 16 * i;
    if (col >= s.seqlen_k) continue;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
      const size_t off = (((size_t)b * s.seqlen_k + col) * s.heads + h) * D + tx + 16 * j;
      dk32[off] = acc_dk[i][j] * s.scale;
      dv32[off] = acc_dv[i][j];
    }
  }
}

template <int D>
constexpr int forward_smem_bytes() {
  return (2 * kTile * (D + 1) + kTile * (kTile + 1) + 3 * kTile) * 4;
}
template <int D>
constexpr int backward_smem_bytes() {
  return (4 * kTile * (D + 1) + 2 * kTile * (kTile + 1)) * 4;
}

}  // namespace ref
}  // namespace dashc
