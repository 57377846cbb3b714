// ${ banner }
//
// Attention backward main loop, portable tensor-core path (sm_80 and later):
// mma.sync m16n8k16 BF16 -> FP32, ldmatrix, cp.async double buffering.
//
// One CTA runs one work unit. It keeps K_j and V_j in shared memory and dK_j, dV_j
// in registers, and walks the unit's visit list (schedule.cuh). Per visit (Q tile i):
//   S  = Q_i K_j^T                      dP = dO_i V_j^T
//   P  = exp2(S * scale * log2e - LSE_i * log2e)
//   dS = P o (dP - D_i)
//   dQ_i += dS K_j   (partial, reduced across CTAs in the schedule's rank order)
//   dV_j += P^T dO_i                    dK_j += dS^T Q_i
// The Q_i / dO_i tiles of visit t+1 are loaded (cp.async) while visit t computes.
// The softmax scale of dQ is applied once in the postprocess kernel, that of dK in
// the epilogue here.
#pragma once

#include <cuda_bf16.h>
#include <cstdint>

#include "bwd_params.h"
#include "bwd_postprocess.cuh"
#include "dq_semaphore.cuh"
#include "schedule.cuh"

namespace dashc {

// ---------------------------------------------------------------------------
// Compile-time configuration and the warp tilings derived from it.
// ---------------------------------------------------------------------------

template <int HEAD_DIM_, int BLOCK_M_, int BLOCK_N_, bool IS_CAUSAL_, bool DETERMINISTIC_, bool TRACE_>
struct BwdConfig {
  static constexpr int HEAD_DIM = HEAD_DIM_;
  static constexpr int BLOCK_M = BLOCK_M_;
  static constexpr int BLOCK_N = BLOCK_N_;
  static constexpr bool IS_CAUSAL = IS_CAUSAL_;
  static constexpr bool DETERMINISTIC = DETERMINISTIC_;
  static constexpr bool TRACE = TRACE_;

  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;

  // S and dP (BLOCK_M x BLOCK_N): warps split rows by 32, the rest split columns.
  static constexpr int kSdpWarpsM = BLOCK_M / 32 < kWarps ? BLOCK_M / 32 : kWarps;
  static constexpr int kSdpWarpsN = kWarps / kSdpWarpsM;
  static constexpr int kSdpWarpTileM = BLOCK_M / kSdpWarpsM;
  static constexpr int kSdpWarpTileN = BLOCK_N / kSdpWarpsN;

  // dK and dV (BLOCK_N x HEAD_DIM): warps split KV rows by 32, the rest split the head dim.
  static constexpr int kDkvWarpsN = BLOCK_N / 32 < kWarps ? BLOCK_N / 32 : kWarps;
  static constexpr int kDkvWarpsD = kWarps / kDkvWarpsN;
  static constexpr int kDkvWarpTileN = BLOCK_N / kDkvWarpsN;
  static constexpr int kDkvWarpTileD = HEAD_DIM / kDkvWarpsD;

  // dQ partial (BLOCK_M x HEAD_DIM): same split as S over rows.
  static constexpr int kDqWarpsM = kSdpWarpsM;
  static constexpr int kDqWarpsD = kWarps / kDqWarpsM;
  static constexpr int kDqWarpTileM = BLOCK_M / kDqWarpsM;
  static constexpr int kDqWarpTileD = HEAD_DIM / kDqWarpsD;

  // The swizzle below needs at least 8 chunks of 16 bytes per shared-memory row,
  // and every B operand is fetched as pairs of n8 tiles (one ldmatrix.x4).
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim must be 64 or 128");
  static_assert(HEAD_DIM >= 64 && BLOCK_N >= 64, "shared rows need >= 8 swizzle chunks");
  static_assert(BLOCK_M % 32 == 0 && BLOCK_N % 32 == 0, "tiles are multiples of 32");
  static_assert(kSdpWarpTileM % 16 == 0 && kSdpWarpTileN % 16 == 0, "S warp tile");
  static_assert(kDkvWarpTileN % 16 == 0 && kDkvWarpTileD % 16 == 0, "dK/dV warp tile");
  static_assert(kDqWarpTileM % 16 == 0 && kDqWarpTileD % 16 == 0, "dQ warp tile");

  // Shared memory, in bf16 elements unless noted.
  static constexpr int kTileKV = BLOCK_N * HEAD_DIM;
  static constexpr int kTileQ = BLOCK_M * HEAD_DIM;
  static constexpr int kTileP = BLOCK_M * BLOCK_N;
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kTileKV;
  static constexpr int kOffQ = kOffV + kTileKV;       // 2 stages
  static constexpr int kOffDo = kOffQ + 2 * kTileQ;   // 2 stages
  static constexpr int kOffP = kOffDo + 2 * kTileQ;
  static constexpr int kOffDs = kOffP + kTileP;
  static constexpr int kBf16Elems = kOffDs + kTileP;
  // Then FP32 LSE and D, 2 stages each, the schedule reader's ring of 4 visit
  // entries (8 bytes each) and two flags (see the kernel), padded to 16 bytes.
  static constexpr int kSmemBytes = kBf16Elems * 2 + 4 * BLOCK_M * 4 + 48;
};

// ---------------------------------------------------------------------------
// PTX wrappers.
// ---------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; src_bytes = 0 zero-fills (rows past the sequence end).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <bool TRANS>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  if constexpr (TRANS) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  }
}

__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Adds two neighbouring FP32 values into global memory without reading them back.
// Hopper has a vector form, which halves the number of reduction instructions.
__device__ __forceinline__ void red_add_f32x2(float* dst, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
#endif
}

// threadIdx.x through a volatile read. Values derived from it inside the visit
// loop (fragment addresses, warp offsets) are then recomputed each visit, in a few
// integer instructions, instead of being hoisted out of the loop and pinned in
// registers for the kernel's lifetime, where they would push dK/dV into spills.
__device__ __forceinline__ int fresh_thread_index() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

// A copy of x the compiler cannot see through: values computed from it are
// recomputed where they are used instead of being hoisted out of the visit loop.
__device__ __forceinline__ int opaque_int(int x) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(x));
  return x;
}

// ---------------------------------------------------------------------------
// Shared-memory tiles: row-major, 16-byte chunks XOR-swizzled by (row % 8) so that
// the 8 rows one ldmatrix phase reads, and the 8 rows one fragment store writes,
// fall in 8 different bank groups.
// ---------------------------------------------------------------------------

template <int COLS>
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * COLS + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies ROWS x HEAD_DIM bf16 of a [.., seqlen, heads, head_dim] tensor into a
// swizzled tile. Rows at or past valid_rows are zero-filled. The thread index is
// read afresh (see fresh_thread_index) and offsets inside the tile are 32-bit, so
// the per-thread source offsets are recomputed at each call instead of being
// hoisted out of the visit loop as 64-bit values that pin two registers each.
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_rows_async(__nv_bfloat16* tile, const __nv_bfloat16* g_row0, int row_stride,
                                                int valid_rows) {
  constexpr int kChunksPerRow = Cfg::HEAD_DIM / 8;
  constexpr int kChunks = ROWS * kChunksPerRow;
  static_assert(kChunks % Cfg::kThreads == 0, "every thread copies the same number of chunks");
  const int tid = fresh_thread_index();
#pragma unroll
  for (int i = 0; i < kChunks / Cfg::kThreads; ++i) {
    const int idx = tid + i * Cfg::kThreads;
    const int row = idx / kChunksPerRow;
    const int col = (idx % kChunksPerRow) * 8;
    const bool ok = row < valid_rows;
    const __nv_bfloat16* src = g_row0 + (ok ? row * row_stride + col : 0);
    cp_async_16(smem_addr(tile + swizzled<Cfg::HEAD_DIM>(row, col)), src, ok ? 16 : 0);
  }
}

// Copies BLOCK_M floats (always in bounds: the per-row buffers are padded).
template <class Cfg>
__device__ __forceinline__ void load_row_stats_async(float* dst, const float* src) {
  const int tid = fresh_thread_index();
  if (tid < Cfg::BLOCK_M / 4) cp_async_16(smem_addr(dst + tid * 4), src + tid * 4, 16);
}

// ---------------------------------------------------------------------------
// Warp-level GEMM: acc[MT][NT] (an (MT*16) x (NT*8) warp tile) += A * B over K.
//   A_TRANS = false: A stored [m][k] (A_COLS = its row length), else stored [k][m].
//   B_TRANS = false: B stored [n][k],                           else stored [k][n].
//
// Addressing. Every row base is a multiple of 8, so (row % 8) == (lane % 8) in every
// address a lane forms, and each lane needs one base address per operand: moving
// along rows adds a multiple of 8 rows (an immediate), moving along 16-byte chunks
// XORs the chunk index (the chunk offsets being stepped over are bit-disjoint from
// the base chunk, so + and ^ agree). One XOR per ldmatrix, no per-k multiplies,
// and nothing worth hoisting out of the visit loop into registers. Tiles start on
// a multiple of their row size, so the swizzle bits of the address are the
// chunk bits of the offset.
// ---------------------------------------------------------------------------

struct NoHook {
  __device__ __forceinline__ void operator()(int) const {}
};

template <int MT, int NT, int K, bool A_TRANS, int A_COLS, bool B_TRANS, int B_COLS, class Hook = NoHook>
__device__ __forceinline__ void warp_gemm(float (&acc)[MT][NT][4], const __nv_bfloat16* sA, int a_m0,
                                          const __nv_bfloat16* sB, int b_n0, Hook hook = Hook{}) {
  static_assert(NT % 2 == 0, "B fragments come in pairs of n8 tiles");
  static_assert((MT & (MT - 1)) == 0 && (NT & (NT - 1)) == 0, "XOR stepping needs power-of-two tiles");
  const int lane = fresh_thread_index() & 31;
  const int mi = lane >> 3;  // which 8x8 matrix of the x4 this lane addresses
  const int r8 = lane & 7;
  constexpr uint32_t kRowBytesA = A_COLS * 2, kRowBytesB = B_COLS * 2;
  uint32_t a_base, b_base;
  if constexpr (!A_TRANS) {
    a_base = smem_addr(sA) + (a_m0 + (mi & 1) * 8 + r8) * kRowBytesA + (((mi >> 1) ^ r8) << 4);
  } else {
    a_base = smem_addr(sA) + ((mi >> 1) * 8 + r8) * kRowBytesA + ((((a_m0 >> 3) + (mi & 1)) ^ r8) << 4);
  }
  if constexpr (!B_TRANS) {
    b_base = smem_addr(sB) + (b_n0 + (mi >> 1) * 8 + r8) * kRowBytesB + (((mi & 1) ^ r8) << 4);
  } else {
    b_base = smem_addr(sB) + ((mi & 1) * 8 + r8) * kRowBytesB + ((((b_n0 >> 3) + (mi >> 1)) ^ r8) << 4);
  }
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint32_t addr = !A_TRANS ? (a_base ^ (kk * 32u)) + mt * 16 * kRowBytesA
                                     : (a_base ^ (mt * 32u)) + kk * 16 * kRowBytesA;
      ldmatrix_x4<A_TRANS>(a[mt], addr);
    }
    uint32_t b[NT / 2][4];
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      const uint32_t addr = !B_TRANS ? (b_base ^ (kk * 32u)) + np * 16 * kRowBytesB
                                     : (b_base ^ (np * 32u)) + kk * 16 * kRowBytesB;
      ldmatrix_x4<B_TRANS>(b[np], addr);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        mma_bf16_16816(acc[mt][nt], a[mt], b[nt / 2][(nt & 1) * 2], b[nt / 2][(nt & 1) * 2 + 1]);
      }
    }
    hook(kk);
  }
}

template <int MT, int NT>
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
}

// Trace build only (TRACE): thread 0 of each CTA writes %globaltimer stamps (ns).
// Layout of p.trace (u64): 4 per unit first -- [unit start, unit end, %smid, 0] at
// 4 * blockIdx.x -- then 4 per visit at 4 * (num_units + visit index): compute
// start (top of the visit), arrival at the rank wait, reduce start (rank seen),
// reduce end (after the dK product and the dQ adds issued with it). File format: docs/trace-format.md.
template <class Cfg>
__device__ __forceinline__ void trace_stamp(const BwdParams& p, int visit_index, int slot) {
  if constexpr (Cfg::TRACE) {
    if (threadIdx.x == 0) p.trace[((size_t)p.num_units + visit_index) * 4 + slot] = global_timer_ns();
  }
}

// slot 0: unit start (also records the SM), slot 1: unit end.
template <class Cfg>
__device__ __forceinline__ void trace_unit_stamp(const BwdParams& p, int slot) {
  if constexpr (Cfg::TRACE) {
    if (threadIdx.x == 0) {
      p.trace[(size_t)blockIdx.x * 4 + slot] = global_timer_ns();
      if (slot == 0) {
        uint32_t sm;
        asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));
        p.trace[(size_t)blockIdx.x * 4 + 2] = sm;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The kernel.
// ---------------------------------------------------------------------------

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) bwd_main_kernel(const BwdParams p) {
  constexpr int D = Cfg::HEAD_DIM;
  constexpr int BM = Cfg::BLOCK_M;
  constexpr int BN = Cfg::BLOCK_N;
  constexpr int kSdpMT = Cfg::kSdpWarpTileM / 16, kSdpNT = Cfg::kSdpWarpTileN / 8;
  constexpr int kDkvMT = Cfg::kDkvWarpTileN / 16, kDkvNT = Cfg::kDkvWarpTileD / 8;
  constexpr int kDqMT = Cfg::kDqWarpTileM / 16, kDqNT = Cfg::kDqWarpTileD / 8;
  constexpr float kLog2e = 1.4426950408889634f;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  __nv_bfloat16* smem = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* sK = smem + Cfg::kOffK;
  __nv_bfloat16* sV = smem + Cfg::kOffV;
  __nv_bfloat16* sP = smem + Cfg::kOffP;
  __nv_bfloat16* sDs = smem + Cfg::kOffDs;
  float* sLse = reinterpret_cast<float*>(smem + Cfg::kBf16Elems);  // [2][BM]
  float* sDsum = sLse + 2 * BM;                                     // [2][BM]
  // In the dynamic block, so that the tiles above start on a 1 KiB boundary.
  // s_give_up: a warp's semaphore wait gave up (read by everyone after a barrier).
  // s_release_q: the dQ tile whose adds thread 0 publishes next, or -1.
  uint2* s_visit_ring = reinterpret_cast<uint2*>(sDsum + 2 * BM);  // [ScheduleReader::kRing]
  int& s_give_up = *reinterpret_cast<int*>(s_visit_ring + ScheduleReader::kRing);
  int& s_release_q = *(&s_give_up + 1);


  trace_unit_stamp<Cfg>(p, 0);
  const ScheduleReader sched(p, blockIdx.x, s_visit_ring);
  const int n_visits = sched.num_visits();
  if (n_visits == 0) return;
  const int bh = sched.bh();
  // Offsets are recomputed where they are used (a few integer operations on
  // kernel parameters) rather than kept as 64-bit pointers for the whole loop:
  // registers are the scarce resource here, not integer throughput.
  const int row_stride = p.heads * D;  // elements between consecutive sequence positions
  // Row indices (batch * seqlen + row, bh * seqlen_pad + row) fit in 32 bits: a tensor
  // with 2^31 rows would not fit in GPU memory. Only the final element offset is
  // 64-bit, so no 64-bit loop invariant is pinned in registers.
  // The batch index is derived once (an integer division that would otherwise sit
  // at the top of every visit, in the Q/dO prefetch path); the head is re-derived
  // from it at each use.
  const int batch = bh / p.heads;
  auto rows = [&](int seqlen, int row0) {
    return (size_t)(batch * seqlen + row0) * row_stride + (bh - batch * p.heads) * D;
  };
  auto q_rows = [&](int row0) { return rows(p.seqlen_q, row0); };
  auto k_rows = [&](int row0) { return rows(p.seqlen_k, row0); };
  auto stats_row = [&](int row0) { return (size_t)(bh * p.seqlen_q_pad + row0); };
  const int causal_offset = p.seqlen_k - p.seqlen_q;  // bottom-right aligned diagonal

  auto load_kv = [&](int kv) {
    const int row0 = kv * BN;
    load_rows_async<Cfg, BN>(sK, p.k + k_rows(row0), row_stride, p.seqlen_k - row0);
    load_rows_async<Cfg, BN>(sV, p.v + k_rows(row0), row_stride, p.seqlen_k - row0);
  };
  auto load_q_side = [&](int q, int stage) {
    const int row0 = q * BM;
    __nv_bfloat16* sQ = smem + Cfg::kOffQ + stage * Cfg::kTileQ;
    __nv_bfloat16* sDo = smem + Cfg::kOffDo + stage * Cfg::kTileQ;
    const size_t offset = q_rows(row0);
    load_rows_async<Cfg, BM>(sQ, p.q + offset, row_stride, p.seqlen_q - row0);
    load_rows_async<Cfg, BM>(sDo, p.dout + offset, row_stride, p.seqlen_q - row0);
    load_row_stats_async<Cfg>(sLse + stage * BM, p.lse + stats_row(row0));
    load_row_stats_async<Cfg>(sDsum + stage * BM, p.dsum + stats_row(row0));
  };

  float acc_dk[kDkvMT][kDkvNT][4];
  float acc_dv[kDkvMT][kDkvNT][4];
  zero_acc(acc_dk);
  zero_acc(acc_dv);
  if (Cfg::DETERMINISTIC && threadIdx.x == 0) {
    s_give_up = 0;
    s_release_q = -1;
  }

  {
    const Visit first = sched.first(p);
    load_kv(first.kv);
    load_q_side(first.q, 0);
    cp_async_commit();
  }

  for (int t = 0; t < n_visits; ++t) {
    const bool has_next = t + 1 < n_visits;
    const int stage = t & 1;
    const int visit_index = sched.first_visit() + t;
    trace_stamp<Cfg>(p, visit_index, 0);

    cp_async_wait_all();
    __syncthreads();
    if constexpr (Cfg::DETERMINISTIC) {
      // Publish the previous visit's dQ adds: the barrier above orders every warp's
      // adds before this point, and the release fence waits until they have landed
      // (they were issued at the end of that visit, after its products). Publishing
      // later (after this visit's S/dP phase) measured 2% faster on full masks but
      // lengthens every hand-off by that phase, and schedules whose contributions
      // to a dQ tile follow each other closely (descending on causal masks) lost
      // up to 40% (bench/NOTES.md runs 4 and 5).
      if (s_give_up) return;  // uniform across the CTA: the host reports the error
      if (fresh_thread_index() == 0 && s_release_q >= 0) release_rank(p.dq_semaphore + (size_t)bh * p.m_tiles + s_release_q);
    }
    const Visit cur = sched.current(t);
    if (has_next) {
      load_q_side(sched.next(t).q, stage ^ 1);
      sched.prefetch(p, t);
      cp_async_commit();
    }

    // Warp positions in the three tilings (see fresh_thread_index).
    const int lane = fresh_thread_index() & 31;
    const int warp = fresh_thread_index() >> 5;
    const int sdp_m0 = (warp / Cfg::kSdpWarpsN) * Cfg::kSdpWarpTileM;
    const int sdp_n0 = (warp % Cfg::kSdpWarpsN) * Cfg::kSdpWarpTileN;
    const int dkv_n0 = (warp / Cfg::kDkvWarpsD) * Cfg::kDkvWarpTileN;
    const int dkv_d0 = (warp % Cfg::kDkvWarpsD) * Cfg::kDkvWarpTileD;
    const int dq_m0 = (warp / Cfg::kDqWarpsD) * Cfg::kDqWarpTileM;
    const int dq_d0 = (warp % Cfg::kDqWarpsD) * Cfg::kDqWarpTileD;

    const __nv_bfloat16* sQ = smem + Cfg::kOffQ + stage * Cfg::kTileQ;
    const __nv_bfloat16* sDo = smem + Cfg::kOffDo + stage * Cfg::kTileQ;

    // ---- S = Q K^T, then P; dP = dO V^T, then dS -----------------------------------
    // S is turned into P and stored (bf16) before dP is computed; dS then reads each
    // thread's own P values back from shared memory (same thread, so no barrier),
    // all of them before its first dS store. The FP32 S and dP tiles are never live
    // together, and P takes no registers while dP is computed: that is what leaves
    // room for dK/dV in registers. (Holding P packed in 16 registers through the dP
    // product instead made the sm_90a non-deterministic build spill.)
    {
      const int row_first = cur.q * BM;
      const int col_first = cur.kv * BN;
      // Element masking is needed only where the tile reaches past seqlen_k or
      // crosses the causal diagonal; rows past seqlen_q already give P = 0
      // through their +inf LSE.
      bool need_mask = col_first + BN > p.seqlen_k;
      if constexpr (Cfg::IS_CAUSAL) need_mask |= col_first + BN - 1 > row_first + causal_offset;
      const float* lse_s = sLse + stage * BM;
      const float* dsum_s = sDsum + stage * BM;
      // Byte offset in the P and dS tiles of this lane's pair (row r, columns c, c + 1),
      // the same as swizzled<BN>(r, c) * 2 (see warp_gemm's addressing): the warp's
      // column chunks are bit-disjoint from nt, so stepping nt XORs the chunk index,
      // and rows step by multiples of 8 (an immediate). One base, not one register
      // per fragment.
      const uint32_t pds_base = (uint32_t)(sdp_m0 + (lane >> 2)) * (BN * 2) +
                                ((uint32_t)((sdp_n0 >> 3) ^ (lane >> 2)) << 4) + (lane & 3) * 4;
      auto pds_offset = [&](int mt, int hf, int nt) {
        return (pds_base ^ (uint32_t)(nt << 4)) + (uint32_t)((mt * 16 + hf * 8) * BN * 2);
      };

      {
        float acc_s[kSdpMT][kSdpNT][4];
        zero_acc(acc_s);
        warp_gemm<kSdpMT, kSdpNT, D, false, D, false, D>(acc_s, sQ, sdp_m0, sK, sdp_n0);
#pragma unroll
        for (int mt = 0; mt < kSdpMT; ++mt) {
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const int r = sdp_m0 + mt * 16 + (lane >> 2) + hf * 8;
            const float lse2 = lse_s[r] * kLog2e;
            // Columns of this tile at or past col_end are masked out (past seqlen_k,
            // or right of the causal diagonal); one bound per row, in tile columns.
            int col_end = p.seqlen_k - col_first;
            if constexpr (Cfg::IS_CAUSAL) col_end = min(col_end, row_first + r + causal_offset - col_first + 1);
#pragma unroll
            for (int nt = 0; nt < kSdpNT; ++nt) {
              const int c = sdp_n0 + nt * 8 + (lane & 3) * 2;
              float pv[2];
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const float pe = fast_exp2(fmaf(acc_s[mt][nt][hf * 2 + e], p.softmax_scale_log2, -lse2));
                pv[e] = need_mask && c + e >= col_end ? 0.f : pe;
              }
              *reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(sP) + pds_offset(mt, hf, nt)) =
                  pack_bf16x2(pv[0], pv[1]);
            }
          }
        }
      }
      {
        float acc_dp[kSdpMT][kSdpNT][4];
        zero_acc(acc_dp);
        warp_gemm<kSdpMT, kSdpNT, D, false, D, false, D>(acc_dp, sDo, sdp_m0, sV, sdp_n0);
        // This thread's own P values (bf16 pairs), all read before the first dS
        // store: reads after a store to another tile could not be moved above it.
        uint32_t p_pack[kSdpMT][2][kSdpNT];
#pragma unroll
        for (int mt = 0; mt < kSdpMT; ++mt)
#pragma unroll
          for (int hf = 0; hf < 2; ++hf)
#pragma unroll
            for (int nt = 0; nt < kSdpNT; ++nt)
              p_pack[mt][hf][nt] = *reinterpret_cast<const uint32_t*>(reinterpret_cast<const char*>(sP) + pds_offset(mt, hf, nt));
#pragma unroll
        for (int mt = 0; mt < kSdpMT; ++mt) {
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const int r = sdp_m0 + mt * 16 + (lane >> 2) + hf * 8;
            const float dsum = dsum_s[r];
#pragma unroll
            for (int nt = 0; nt < kSdpNT; ++nt) {
              // bf16 -> fp32 is exact: the pair's halves moved to the top 16 bits.
              const uint32_t pp = p_pack[mt][hf][nt];
              const float p_lo = __uint_as_float(pp << 16), p_hi = __uint_as_float(pp & 0xffff0000u);
              *reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(sDs) + pds_offset(mt, hf, nt)) =
                  pack_bf16x2(p_lo * (acc_dp[mt][nt][hf * 2] - dsum), p_hi * (acc_dp[mt][nt][hf * 2 + 1] - dsum));
            }
          }
        }
      }
    }

    // ---- dQ_i partial = dS K_j, reduced in rank order; dV_j, dK_j products ----------
    // Deterministic build: lane 0 of every warp reads the semaphore before the
    // barrier and the dQ product, and each warp waits for its rank on its own
    // after the product (no CTA barrier): in the common case the rank has arrived
    // and the read's round trip is hidden. Rank 0 never waits (semaphores start at 0).
    // The dV_j += P^T dO_i product is issued with the dQ product, before the wait:
    // independent accumulator tiles hide the mma and ldmatrix latencies that 2 warps
    // per scheduler cannot, and the wait comes a dV phase later, when the rank has
    // more often arrived (bench/NOTES.md runs 8 and 9). The adds are then issued in
    // slices between the k steps of dK_j += dS^T Q_i, so most have landed by the
    // time the release at the next visit's top barrier waits for them: measured
    // 4.6% faster than a burst after the products (run 16).
    int early_seen = 0;
    if constexpr (Cfg::DETERMINISTIC) {
      if (lane == 0 && cur.rank != 0) early_seen = ld_acquire_gpu(p.dq_semaphore + (size_t)bh * p.m_tiles + cur.q);
    }
    __syncthreads();
    {
      float acc_dq[kDqMT][kDqNT][4];
      zero_acc(acc_dq);
      warp_gemm<kDqMT, kDqNT, BN, false, BN, true, D>(acc_dq, sDs, dq_m0, sK, dq_d0);
      warp_gemm<kDkvMT, kDkvNT, BM, true, BN, true, D>(acc_dv, sP, dkv_n0, sDo, dkv_d0);

      bool add = true;
      if constexpr (Cfg::DETERMINISTIC) {
        trace_stamp<Cfg>(p, visit_index, 1);
        add = warp_wait_for_rank(p, p.dq_semaphore + (size_t)bh * p.m_tiles + cur.q, cur.rank, early_seen, bh,
                                 cur.q);
        if (!add) s_give_up = 1;
        trace_stamp<Cfg>(p, visit_index, 2);
      }
      // One 64-bit base per lane; every fragment is at a constant offset from it
      // (an immediate in the reduction instruction, not an address register each).
      constexpr int kAccumStride = dq_accum_row_stride(D);
      float* dq_lane;
      if constexpr (Cfg::DETERMINISTIC) {
        dq_lane = p.dq_accum + (stats_row(cur.q * BM) + dq_m0 + (lane >> 2)) * kAccumStride + dq_d0 + (lane & 3) * 2;
      } else {
        // The same address in two parts: the tile's base, the same for the whole CTA, and a 32-bit lane
        // offset. In the form above, the atomic hd128 build spills 8 bytes on sm_90a under nvcc 13.0; in this
        // form the deterministic build compiles differently, and it is kept in the form measured in run 19.
        float* dq_tile = p.dq_accum + stats_row(cur.q * BM) * kAccumStride;
        dq_lane = dq_tile + ((dq_m0 + (lane >> 2)) * kAccumStride + dq_d0 + (lane & 3) * 2);
      }
      // The adds are spread over the dK product's k steps, so that the reductions
      // leave the SM between tensor-core work instead of in one burst (a burst
      // after the product measured 4.6% slower at hd128 full; bursts over half the steps 6%
      // slower: bench/NOTES.md run 16).
      constexpr int kAdds = kDqMT * 2 * kDqNT;
      constexpr int kSteps = BM / 16;
      constexpr int kPerStep = (kAdds + kSteps - 1) / kSteps;
      auto add_some = [&](int kk) {
        if (!add) return;
#pragma unroll
        for (int i = 0; i < kAdds; ++i) {
          if (i / kPerStep != kk) continue;
          const int mt = i / (2 * kDqNT), hf = (i / kDqNT) % 2, nt = i % kDqNT;
          red_add_f32x2(dq_lane + (mt * 16 + hf * 8) * kAccumStride + nt * 8, acc_dq[mt][nt][hf * 2],
                        acc_dq[mt][nt][hf * 2 + 1]);
        }
      };
      warp_gemm<kDkvMT, kDkvNT, BM, true, BN, true, D>(acc_dk, sDs, dkv_n0, sQ, dkv_d0, add_some);
      // Published by thread 0 at the top of the next visit (or after the loop).
      if (Cfg::DETERMINISTIC && fresh_thread_index() == 0) s_release_q = cur.q;
    }

    trace_stamp<Cfg>(p, visit_index, 3);

    // ---- End of this KV tile's visits: write dK_j, dV_j, load the next K/V -------
    if (cur.last_of_kv()) {
      const int row0 = cur.kv * BN;
#pragma unroll
      for (int mt = 0; mt < kDkvMT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int r = dkv_n0 + mt * 16 + (lane >> 2) + hf * 8;
          if (row0 + r < p.seqlen_k) {
            const size_t g = k_rows(row0 + r);
#pragma unroll
            for (int nt = 0; nt < kDkvNT; ++nt) {
              const int c = dkv_d0 + nt * 8 + (lane & 3) * 2;
              *reinterpret_cast<uint32_t*>(p.dk + g + c) =
                  pack_bf16x2(acc_dk[mt][nt][hf * 2] * p.softmax_scale, acc_dk[mt][nt][hf * 2 + 1] * p.softmax_scale);
              *reinterpret_cast<uint32_t*>(p.dv + g + c) =
                  pack_bf16x2(acc_dv[mt][nt][hf * 2], acc_dv[mt][nt][hf * 2 + 1]);
            }
          }
        }
      zero_acc(acc_dk);
      zero_acc(acc_dv);
      if (has_next) {
        // Every warp must be done reading K_j/V_j before they are overwritten.
        __syncthreads();
        load_kv(sched.next(t).kv);
        cp_async_commit();
      }
    }
  }
  if constexpr (Cfg::DETERMINISTIC) {
    __syncthreads();
    if (threadIdx.x == 0 && !s_give_up) release_rank(p.dq_semaphore + (size_t)bh * p.m_tiles + s_release_q);
  }
  trace_unit_stamp<Cfg>(p, 1);
}

// The host-side interface the harness drives, the same for both main loops.
template <class Cfg>
struct Sm80MainLoop {
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kSmemBytes = Cfg::kSmemBytes;
  // One CTA per unit: the portable loop runs the in-order launch only.
  static constexpr bool kPersistent = false;
  // Split columns (kVisitPartialKv) need the sm90 loop's dK/dV partials.
  static constexpr bool kSplitColumns = false;
  static constexpr int kDkvPartialFloats = 0;
  // Every partial is added (deterministic or not): the accumulator must be zeroed first.
  static constexpr bool kRankZeroStores = false;
  static constexpr bool kRowStatsInMma = false;  // reads BwdParams::dsum and lse, not row_stats_mma
  using Params = BwdParams;

  static const void* kernel() { return reinterpret_cast<const void*>(&bwd_main_kernel<Cfg>); }
  static Params prepare(const BwdParams& p) { return p; }
  static void launch(const Params& p, int grid, cudaStream_t stream) {
    bwd_main_kernel<Cfg><<<grid, kThreads, kSmemBytes, stream>>>(p);
  }

  // dQ from the accumulator (row-major, padded rows: bwd_postprocess.cuh).
  static void launch_postprocess(const BwdParams& p, cudaStream_t stream) {
    bwd_postprocess_kernel<Cfg::HEAD_DIM>
        <<<dim3((p.seqlen_q + kPostprocessRows - 1) / kPostprocessRows, p.batch * p.heads), kPostprocessThreads, 0,
           stream>>>(p);
  }
};

}  // namespace dashc
