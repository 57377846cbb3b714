// Compile-only spike for issue 6 (docs/hopper-plan.md, "Register budget"). Question: does the consumer
// side of the planned sm90 backward main loop fit the 240 registers that setmaxnreg gives it, with no
// spills, and does it compile to HGMMA? Setting: head dim 128, BLOCK_M 64, BLOCK_N 128, 2 consumer
// warpgroups, the five products as SS wgmma from 128-byte-swizzled shared memory (CuTe atoms, CUTLASS
// 4.2 headers).
//
// Out of scope: TMA, the producer and the dQ writer, the schedule and the real epilogue (the causal
// mask is in, with a per-visit diagonal offset standing in for the schedule's tile coordinates). The
// operand tiles are taken as resident, and each visit runs only the math and the P/dS/dQ stores, so
// that ptxas reports what the consumers need. This is not a kernel: it is never run.
//
// Answer (nvcc 13.0, kernels/spikes/compile.sh): 32 HGMMA, no spills, highest register R234. That
// holds only with the warp-slice partitions rebuilt inside the visit loop from an opaque thread index
// (fresh_tid), the same trick the portable kernel uses. Built once outside the loop, as CuTe examples
// do, they are hoisted, and the build spills 768 bytes at the 240 cap.
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

using namespace cute;
using T = cutlass::bfloat16_t;

constexpr int kBM = 64, kBN = 128, kD = 128;
using BM = Int<kBM>;
using BN = Int<kBN>;
using HD = Int<kD>;

// Row-major tiles, 128-byte swizzle, K-major for the products that contract over the head dim.
using AtomK = GMMA::Layout_K_SW128_Atom<T>;
using SmemQ = decltype(tile_to_shape(AtomK{}, Shape<BM, HD>{}));    // Q, dO: (m, d)
using SmemK = decltype(tile_to_shape(AtomK{}, Shape<BN, HD>{}));    // K, V: (n, d)
using SmemP = decltype(tile_to_shape(AtomK{}, Shape<BM, BN>{}));    // P, dS: (m, n)
// Transposed views of the same bytes (d, m), (d, n) and (n, m): MN-major operands.
using SmemQt = decltype(composition(SmemQ{}, make_layout(Shape<HD, BM>{}, Stride<BM, _1>{})));
using SmemKt = decltype(composition(SmemK{}, make_layout(Shape<HD, BN>{}, Stride<BN, _1>{})));
using SmemPt = decltype(composition(SmemP{}, make_layout(Shape<BN, BM>{}, Stride<BM, _1>{})));

// S = Q K^T, dP = dO V^T: (64 x 128) over d; the two warpgroups split N.
using MmaSdP = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::K>{},
                                       Layout<Shape<_1, _2, _1>>{}));
// dV += P^T dO, dK += dS^T Q: (128 x 128) over m; the two warpgroups split M (KV rows).
using MmaKV = decltype(make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS<GMMA::Major::MN, GMMA::Major::MN>{},
                                      Layout<Shape<_2, _1, _1>>{}));
// dQ = dS K: (64 x 128) over n; the two warpgroups split N (head dim).
using MmaDQ = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{},
                                      Layout<Shape<_1, _2, _1>>{}));

struct Smem {
  alignas(1024) T k[cosize_v<SmemK>];
  alignas(1024) T v[cosize_v<SmemK>];
  alignas(1024) T q[cosize_v<SmemQ>];
  alignas(1024) T dout[cosize_v<SmemQ>];
  alignas(1024) T p[cosize_v<SmemP>];
  alignas(1024) T ds[cosize_v<SmemP>];
  alignas(1024) float dq[kBM * kD];
  float lse[kBM];
  float dsum[kBM];
};

// The consumer thread index through a volatile read: what is derived from it is recomputed inside
// the visit loop instead of being hoisted and held in registers for the whole kernel.
__device__ __forceinline__ int fresh_tid() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t - 128;
}

__global__ void __launch_bounds__(384, 1) consumer_spike(float* dk_out, float* dv_out, int visits, float scale_log2, const int* diag_of_visit) {
  extern __shared__ char smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  Tensor sQ = make_tensor(make_smem_ptr(s.q), SmemQ{});
  Tensor sdO = make_tensor(make_smem_ptr(s.dout), SmemQ{});
  Tensor sK = make_tensor(make_smem_ptr(s.k), SmemK{});
  Tensor sV = make_tensor(make_smem_ptr(s.v), SmemK{});
  Tensor sP = make_tensor(make_smem_ptr(s.p), SmemP{});
  Tensor sdS = make_tensor(make_smem_ptr(s.ds), SmemP{});
  Tensor sQt = make_tensor(make_smem_ptr(s.q), SmemQt{});
  Tensor sdOt = make_tensor(make_smem_ptr(s.dout), SmemQt{});
  Tensor sKt = make_tensor(make_smem_ptr(s.k), SmemKt{});
  Tensor sPt = make_tensor(make_smem_ptr(s.p), SmemPt{});
  Tensor sdSt = make_tensor(make_smem_ptr(s.ds), SmemPt{});

  if (threadIdx.x < 128) {  // producer warpgroup: gives its registers away (its work is out of scope here)
    cutlass::arch::warpgroup_reg_dealloc<24>();
    return;
  }
  cutlass::arch::warpgroup_reg_alloc<240>();

  MmaKV mma_kv;
  Tensor acc_dv = partition_fragment_C(mma_kv, Shape<BN, HD>{});
  Tensor acc_dk = partition_fragment_C(mma_kv, Shape<BN, HD>{});
  clear(acc_dv);
  clear(acc_dk);
  for (int t = 0; t < visits; ++t) {
    const int diag = diag_of_visit[t];
    const bool need_mask = diag < 128;
    MmaSdP mma_sdp;
    auto thr_sdp = mma_sdp.get_thread_slice(fresh_tid());
    Tensor tSrQ = thr_sdp.partition_fragment_A(sQ);
    Tensor tSrK = thr_sdp.partition_fragment_B(sK);
    Tensor tSrdO = thr_sdp.partition_fragment_A(sdO);
    Tensor tSrV = thr_sdp.partition_fragment_B(sV);
    Tensor cS = thr_sdp.partition_C(make_identity_tensor(Shape<BM, BN>{}));  // (row, col) of each S element

    auto thr_kv = mma_kv.get_thread_slice(fresh_tid());
    Tensor tVrPt = thr_kv.partition_fragment_A(sPt);
    Tensor tVrdOt = thr_kv.partition_fragment_B(sdOt);
    Tensor tKrdSt = thr_kv.partition_fragment_A(sdSt);
    Tensor tKrQt = thr_kv.partition_fragment_B(sQt);

    MmaDQ mma_dq;
    auto thr_dq = mma_dq.get_thread_slice(fresh_tid());
    Tensor tQrdS = thr_dq.partition_fragment_A(sdS);
    Tensor tQrKt = thr_dq.partition_fragment_B(sKt);
    Tensor cQ = thr_dq.partition_C(make_identity_tensor(Shape<BM, HD>{}));

    // P and dS leave the accumulators as bf16 into the swizzled tiles.
    auto s2p = make_tiled_copy_C(Copy_Atom<DefaultCopy, T>{}, mma_sdp);
    auto thr_s2p = s2p.get_thread_slice(fresh_tid());
    Tensor tPsP = thr_s2p.partition_D(sP);
    Tensor tPsdS = thr_s2p.partition_D(sdS);

    // ---- S, then P = exp2(S * scale - lse), stored.
    Tensor acc_s = partition_fragment_C(mma_sdp, Shape<BM, BN>{});
    warpgroup_fence_operand(acc_s);
    warpgroup_arrive();
    mma_sdp.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tSrQ); ++k) {
      cute::gemm(mma_sdp, tSrQ(_, _, k), tSrK(_, _, k), acc_s);
      mma_sdp.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc_s);
    Tensor p_bf16 = make_tensor_like<T>(acc_s);
    CUTE_UNROLL
    for (int i = 0; i < size(acc_s); ++i) {
      const int row = get<0>(cS(i));
      const int col = get<1>(cS(i));
      const float pe = exp2f(acc_s(i) * scale_log2 - s.lse[row]);
      p_bf16(i) = T(need_mask && col > row + diag ? 0.f : pe);
    }
    copy(s2p, thr_s2p.retile_S(p_bf16), tPsP);

    // ---- dP, then dS = P o (dP - D), stored.
    Tensor acc_dp = partition_fragment_C(mma_sdp, Shape<BM, BN>{});
    warpgroup_fence_operand(acc_dp);
    warpgroup_arrive();
    mma_sdp.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tSrdO); ++k) {
      cute::gemm(mma_sdp, tSrdO(_, _, k), tSrV(_, _, k), acc_dp);
      mma_sdp.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc_dp);
    // P comes back from shared memory (this thread's own elements), so that it takes no registers
    // while dP is computed.
    Tensor p_back = make_tensor_like<T>(acc_dp);
    Tensor p_back_view = thr_s2p.retile_S(p_back);
    copy(tPsP, p_back_view);
    Tensor ds_bf16 = make_tensor_like<T>(acc_dp);
    CUTE_UNROLL
    for (int i = 0; i < size(acc_dp); ++i) {
      const int row = get<0>(cS(i));
      ds_bf16(i) = T(float(p_back(i)) * (acc_dp(i) - s.dsum[row]));
    }
    copy(s2p, thr_s2p.retile_S(ds_bf16), tPsdS);
    cutlass::arch::fence_view_async_shared();
    cutlass::arch::NamedBarrier::sync(256, 1);

    // ---- dQ = dS K, staged for the writer; dV += P^T dO; dK += dS^T Q.
    Tensor acc_dq = partition_fragment_C(mma_dq, Shape<BM, HD>{});
    warpgroup_fence_operand(acc_dq);
    warpgroup_arrive();
    mma_dq.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tQrdS); ++k) {
      cute::gemm(mma_dq, tQrdS(_, _, k), tQrKt(_, _, k), acc_dq);
      mma_dq.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(acc_dv);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tVrPt); ++k) cute::gemm(mma_kv, tVrPt(_, _, k), tVrdOt(_, _, k), acc_dv);
    warpgroup_commit_batch();
    warpgroup_fence_operand(acc_dk);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tKrdSt); ++k) cute::gemm(mma_kv, tKrdSt(_, _, k), tKrQt(_, _, k), acc_dk);
    warpgroup_commit_batch();
    warpgroup_wait<2>();  // dQ done; dV and dK may still run
    warpgroup_fence_operand(acc_dq);
    CUTE_UNROLL
    for (int i = 0; i < size(acc_dq); ++i) s.dq[get<0>(cQ(i)) * kD + get<1>(cQ(i))] = acc_dq(i);
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc_dv);
    warpgroup_fence_operand(acc_dk);
    cutlass::arch::NamedBarrier::sync(256, 1);
  }
  // Epilogue stand-in: keep dK/dV alive.
  auto thr_kv_e = mma_kv.get_thread_slice(fresh_tid());
  Tensor cKV = thr_kv_e.partition_C(make_identity_tensor(Shape<BN, HD>{}));
  CUTE_UNROLL
  for (int i = 0; i < size(acc_dk); ++i) {
    const int idx = get<0>(cKV(i)) * kD + get<1>(cKV(i));
    dk_out[idx] = acc_dk(i);
    dv_out[idx] = acc_dv(i);
  }
}
