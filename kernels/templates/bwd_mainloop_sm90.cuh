// ${ banner }
//
// Attention backward main loop, Hopper path (sm_90a): TMA loads completing on
// mbarriers, wgmma, warp specialization, and the dQ partials added into the FP32
// accumulator by bulk reduce-adds (a plain bulk copy for a tile's rank-0 partial
// in the deterministic build) from writer warps of their own.
//
// One CTA of three warpgroups (384 threads):
//   warpgroup 0, warp 0  the producer: walks the schedule (schedule.cuh's data),
//                        loads K_j/V_j once per KV tile and Q_i, dO_i, LSE_i, D_i
//                        per visit into a two-stage ring, and hands each visit's
//                        entry to the other roles through the ring.
//   warpgroup 0, warps 1, 2  the dQ writers, one per staging buffer (alternate
//                        visits): per visit, waits for the consumers' FP32
//                        dQ partial in shared memory, waits for its rank on the
//                        dQ tile (dq_semaphore.cuh; deterministic build only),
//                        adds the partial with a bulk reduce-add (stores it with a
//                        bulk copy if it is the tile's rank 0, deterministic
//                        build), and releases the rank once the write has landed.
//                        (80-row tiles: three half staging buffers; the writers
//                        still take alternate visits, see run_dq_half_writer.)
//   warpgroups 1 and 2   the consumers: the five products of every visit,
//                        S^T = K Q^T, dP^T = V dO^T (transposed, so that each
//                        warpgroup owns 64 KV rows), dV += P^T dO and
//                        dK += dS^T Q (A operand from registers), dQ = dS K
//                        (dQ^T = K^T dS^T with 80-row tiles).
//                        dK_j/dV_j live in their registers for the KV tile's run.
// Warpgroup 0 gives its registers to the consumers (setmaxnreg).
//
// The same kernel runs the in-order launch (one CTA per unit) and the persistent
// one (a CTA per SM, CTA p running units p, p + P, p + 2P, ...: the analyzer's
// static persistent policy): the roles loop over units with stride gridDim.x.
//
// The softmax scale of dQ is applied in this main loop's postprocess kernel (the
// accumulator is in fragment order: see dq_block_floats), that of dK here.
#pragma once

#include <cuda_bf16.h>
#include <cstdint>

// The 80-row tiles' S^T, dP^T and dQ^T are wgmma of N = 80, one of the shapes
// CuTe's op selectors offer only with this defined (without it they fall back to
// five N = 16 instructions). The other tiles' shapes select the same either way.
#ifndef CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#endif
// k blocks of K (of HEAD_DIM / 16) held in registers at 64-row tiles, causal and
// full masks (see BwdConfig::kKRegBlocks); overridable with -D for A/B builds.
#ifndef DASHC_K_REG_BLOCKS_CAUSAL
#define DASHC_K_REG_BLOCKS_CAUSAL 3
#endif
#ifndef DASHC_K_REG_BLOCKS_FULL
#define DASHC_K_REG_BLOCKS_FULL 0
#endif
// The row statistics (LSE, D) added by the tensor cores as one more k block of
// S^T and dP^T (BwdConfig::kStatsInMma; head dim 128 at 64-row tiles; 0 builds the
// loads of before, for A/B runs).
#ifndef DASHC_STATS_IN_MMA
#define DASHC_STATS_IN_MMA 1
#endif
// dK/dV stored through a dS buffer where one holds both (BwdConfig::kDkvThroughDs;
// 0 builds the stores through the K/V tiles, for A/B runs).
#ifndef DASHC_DKV_THROUGH_DS
#define DASHC_DKV_THROUGH_DS 1
#endif
#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

#include "bwd_params.h"
#include "dq_semaphore.cuh"
#include "schedule.cuh"

namespace dashc {
namespace sm90 {

using namespace cute;
using Element = cutlass::bfloat16_t;

// ---------------------------------------------------------------------------
// Compile-time configuration: tiles, shared-memory layouts, the three tiled MMAs
// and the TMA copy types.
// ---------------------------------------------------------------------------

template <int HEAD_DIM_, int BLOCK_M_, int BLOCK_N_, bool IS_CAUSAL_, bool DETERMINISTIC_, bool TRACE_>
struct BwdConfig {
  static constexpr int HEAD_DIM = HEAD_DIM_;
  static constexpr int BLOCK_M = BLOCK_M_;
  static constexpr int BLOCK_N = BLOCK_N_;
  static constexpr bool IS_CAUSAL = IS_CAUSAL_;
  static constexpr bool DETERMINISTIC = DETERMINISTIC_;
  static constexpr bool TRACE = TRACE_;

  static constexpr int kConsumerThreads = 256;  // two warpgroups
  static constexpr int kThreads = 128 + kConsumerThreads;
  static constexpr int kStages = 2;             // Q/dO/LSE/D ring
  // The dQ writer warps, one per FP32 staging buffer with the default tiles:
  // with two, the consumers stage a visit's partial while the writer still adds
  // the previous one. (80-row tiles: kDqBuffers half buffers, the same writers.)
  static constexpr int kDqStages = 2;
  static_assert(kDqStages == 2, "the named barrier IDs (NamedBarrier) are laid out for two staging buffers");
  // The deterministic build stores each q tile's rank-0 partial (a bulk copy)
  // instead of adding it, so its accumulator needs no zeroing (BwdParams::
  // skip_dq_accum_zeroing); the atomic build cannot know which add comes first.
  static constexpr bool kRankZeroStores = DETERMINISTIC;
  // The first kKRegBlocks k blocks (16 head-dim columns each) of K held in
  // registers as the A operand of S^T = K Q^T (register-sourced wgmma), loaded
  // once per KV tile: 32 fewer shared-memory wavefronts per visit and block. At
  // 64-row causal tiles 2 blocks were faster on every hd128 causal row (runs
  // 230-232); 3 were slower on the long rows while the LSE/D prefetch held 32
  // registers, and faster on all 6 causal rows once the statistics block freed
  // them (R234, no spills; runs 246-247); 8 spill. On full masks 2 blocks were
  // slower (runs 232, 241), so full masks keep K in shared memory. Head dim 128
  // only: the one measured (and GPU-checked) 64-row configuration; `--block-m 64`
  // at head dim 64 keeps its former build.
  static constexpr int kKRegBlocks = BLOCK_M != 64 || HEAD_DIM != 128 ? 0
                                     : IS_CAUSAL                      ? DASHC_K_REG_BLOCKS_CAUSAL
                                                                      : DASHC_K_REG_BLOCKS_FULL;
  // (V likewise, as the A operand of dP^T, 2 blocks: slower on 11 of 12 hd128
  // rows, by up to 4%, run 239; bench/scripts/variants/v-in-registers-hd128.diff.)
  // LSE and D of a thread's query columns held in registers across the S^T/dP^T
  // waits (see run_consumers): at BLOCK_M = 64 only, where the 16 + 16 fit
  // (beside at most 2 k blocks of K).
  // The row statistics by the tensor cores (BwdParams::row_stats_mma): per
  // visit one 64 x 16 bf16 block (8 columns, read twice through a zero k
  // stride) holds -LSE / scale and -D, each as three bf16 summing to the FP32
  // value; a register A operand of ones (S^T: columns 0-2, dP^T: 3-5) makes it
  // one more k block of each product, so S^T - LSE / scale and dP^T - D leave
  // the tensor cores and no thread loads the statistics (each thread loaded 16
  // LSE and 16 D values per visit: 256 of a visit's ~3250 shared-memory
  // wavefronts, bench/NOTES.md runs 221-222). The main kernel's fastest
  // repetition: faster on 12 of 12 hd128 rows on an H200 (-0.1% to -5.7%) and on
  // 11 of 12 on an H100 (-0.5% to -4.9%; causal 512 +0.3%), runs 240-241. Head
  // dim 128 at 64-row tiles only: at head dim 64 the 128-row blocks (2 KiB a
  // stage) do not fit beside the tiles, and the 80-row tiles were not tried.
  static constexpr bool kStatsInMma = DASHC_STATS_IN_MMA != 0 && BLOCK_M == 64 && HEAD_DIM == 128;
  static constexpr bool kPrefetchRowStats = BLOCK_M == 64 && kKRegBlocks <= 2 && !kStatsInMma;
  // setmaxnreg budgets. The CTA's pool is what the launch allocated: 168 per
  // thread (__launch_bounds__(384, 1): 65536 / 384, rounded down to 8) x 384 =
  // 64512. An increase waits until the pool has the registers, so the budgets
  // must fit it: 128 x 24 + 256 x 240 = 64512. (With 32 for warpgroup 0 the
  // consumers' increase never completed and the pipeline stalled.)
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(128 * kProducerRegs + kConsumerThreads * kConsumerRegs <= 168 * kThreads, "setmaxnreg pool");

  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim must be 64 or 128");
  static_assert(BLOCK_N == 128, "the two consumer warpgroups split the 128 KV rows of dK/dV");
  static_assert(BLOCK_M == 64 || BLOCK_M == 128 || (BLOCK_M == 80 && HEAD_DIM == 128 && !IS_CAUSAL),
                "BLOCK_M must be 64 or 128 (or 80 at head dim 128 on full masks)");

  // 80-row query tiles (head dim 128, full masks: FA4's tile there; 15% fewer
  // instructions per query row than 64-row tiles, bench/NOTES.md run 158). 80
  // rows are not a multiple of the wgmma's 64, so dQ is computed transposed,
  // dQ^T = K^T dS^T, each warpgroup owning 64 head-dim columns of all 80 rows.
  // The shared memory (227 KiB) then holds one dS buffer, so the dQ product is
  // not deferred to the next visit, and three FP32 staging buffers of a
  // warpgroup's half of a partial instead of two whole ones: 224 KiB of tiles.
  static constexpr bool kTransposedDq = BLOCK_M == 80;
  static constexpr bool kDeferDq = !kTransposedDq;
  static constexpr int kDsBuffers = kDeferDq ? 2 : 1;
  static constexpr int kDqBuffers = kTransposedDq ? 3 : kDqStages;
  static constexpr int kDqBufferFloats = kTransposedDq ? BLOCK_M * HEAD_DIM / 2 : BLOCK_M * HEAD_DIM;

  using BM = Int<BLOCK_M>;
  using BN = Int<BLOCK_N>;
  using HD = Int<HEAD_DIM>;

  // Operand tiles, row-major (contiguous along the head dim, or along the KV
  // columns for P and dS), 128-byte swizzle: what both TMA and the wgmma
  // descriptors read.
  using AtomK = GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutQ = decltype(tile_to_shape(AtomK{}, Shape<BM, HD>{}));   // Q, dO: (m, d)
  using SmemLayoutK = decltype(tile_to_shape(AtomK{}, Shape<BN, HD>{}));   // K, V: (n, d)
  using SmemLayoutP = decltype(tile_to_shape(AtomK{}, Shape<BM, BN>{}));   // dS: (m, n)
  // Transposed views of the same bytes, the MN-major operands of dV, dK and dQ.
  using SmemLayoutQt = decltype(composition(SmemLayoutQ{}, make_layout(Shape<HD, BM>{}, GenRowMajor{})));
  using SmemLayoutKt = decltype(composition(SmemLayoutK{}, make_layout(Shape<HD, BN>{}, GenRowMajor{})));
  using SmemLayoutPt = decltype(composition(SmemLayoutP{}, make_layout(Shape<BN, BM>{}, GenRowMajor{})));
  // dK_j/dV_j leave through a dS buffer instead of the K_j/V_j tiles where one
  // holds both (head dim 64, 128-row tiles: 32 KiB each way). Every dQ product of
  // the KV tile has completed at its end, so both dS buffers are free there; K_j
  // and V_j are released at once, and the next KV tile's loads (a DRAM round trip)
  // run while dK/dV are converted, staged and stored. Through the K/V tiles the
  // loads waited for the stores to have read them out.
  static constexpr bool kDkvThroughDs = DASHC_DKV_THROUGH_DS != 0 && kDeferDq && kDsBuffers == 2 &&
                                        2 * cosize_v<SmemLayoutK> <= cosize_v<SmemLayoutP>;

  // The products. S^T and dP^T (BLOCK_N x BLOCK_M over d) and dV, dK (BLOCK_N x d
  // over m): warpgroup w owns KV rows [64w, 64w + 64), and dV/dK take their A
  // operand (P^T, dS^T) from its registers. dQ (BLOCK_M x d over n): the
  // warpgroups split the rows at BLOCK_M = 128, the head dim at 64.
  static constexpr bool kSplitDqRows = BLOCK_M == 128;
  using MmaSdp = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<_64, BM, _16>, GMMA::Major::K, GMMA::Major::K>(),
      Layout<Shape<_2, _1, _1>>{}));
  // Register-sourced S^T and dP^T: S^T's k blocks of K that kKRegBlocks holds in
  // registers (ldmatrix loads them), and both products' statistics k block.
  using MmaSRegs = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, float, Shape<_64, BM, _16>, GMMA::Major::K, GMMA::Major::K>(),
      Layout<Shape<_2, _1, _1>>{}));
  using LoadAtomKv = Copy_Atom<SM75_U32x4_LDSM_N, Element>;
  using MmaDkv = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, float, Shape<_64, HD, _16>, GMMA::Major::K, GMMA::Major::MN>(),
      Layout<Shape<_2, _1, _1>>{}));
  using AtomLayoutDq = std::conditional_t<kSplitDqRows, Layout<Shape<_2, _1, _1>>, Layout<Shape<_1, _2, _1>>>;
  using TileDqWg = std::conditional_t<kSplitDqRows, Shape<_64, HD, _16>, Shape<_64, Int<HEAD_DIM / 2>, _16>>;
  using MmaDqRows = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, TileDqWg, GMMA::Major::K, GMMA::Major::MN>(), AtomLayoutDq{}));
  // Transposed (kTransposedDq): dQ^T (d x BLOCK_M over n) = K^T dS^T, A = K^T
  // (MN-major: K is contiguous along d), B = dS (K-major); warpgroup w owns
  // head-dim rows [64w, 64w + 64).
  using MmaDqT = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<_64, BM, _16>, GMMA::Major::MN, GMMA::Major::K>(),
      Layout<Shape<_2, _1, _1>>{}));
  using MmaDq = std::conditional_t<kTransposedDq, MmaDqT, MmaDqRows>;
  // The dQ product's (M, N) tile.
  using DqTile = std::conditional_t<kTransposedDq, Shape<HD, BM>, Shape<BM, HD>>;

  // A warpgroup's S^T accumulator (64 x BLOCK_M per warpgroup, the wgmma C
  // fragment ((2 columns, 2 row halves, BLOCK_M / 8 column blocks), 1, 1)) read
  // as the register A operand of an m64 x k BLOCK_M product: k block c (16
  // columns) holds column blocks 2c and 2c + 1, which is the A fragment's
  // ((2 k, 2 row halves, 2 k halves), 1 m block, BLOCK_M / 16 k blocks).
  using LayoutAregs =
      Layout<Shape<Shape<_2, _2, _2>, _1, Int<BLOCK_M / 16>>, Stride<Stride<_1, _2, _4>, _0, _8>>;

  // dS leaves the registers (as dS^T) through transposing stmatrix into the
  // row-major dS tile that dQ reads.
  using StoreAtomDst = Copy_Atom<SM90_U16x8_STSM_T, Element>;

  // Global tensors as the TMA descriptors see them: Q, dO, K, V as
  // (seqlen, d, heads, batch) over the [batch, seqlen, heads, d] layout; the FP32
  // dQ accumulator as (padded seqlen_q, d, batch * heads) with its padded rows.
  using ShapeQkv = Shape<int32_t, int32_t, int32_t, int32_t>;
  using StrideQkv = Stride<int64_t, _1, int64_t, int64_t>;
  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                      make_tensor(make_gmem_ptr(static_cast<const Element*>(nullptr)), ShapeQkv{},
                                                  StrideQkv{}),
                                      SmemLayoutQ{}));
  using TmaK = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                      make_tensor(make_gmem_ptr(static_cast<const Element*>(nullptr)), ShapeQkv{},
                                                  StrideQkv{}),
                                      SmemLayoutK{}));
  // dK_j/dV_j leave through the K_j/V_j tiles (same shape and layout) by TMA stores.
  using TmaStoreKv = decltype(make_tma_copy(SM90_TMA_STORE{},
                                            make_tensor(make_gmem_ptr(static_cast<Element*>(nullptr)), ShapeQkv{},
                                                        StrideQkv{}),
                                            SmemLayoutK{}));
  // The dK/dV accumulator fragments into those tiles (stmatrix, not transposed).
  using StoreAtomDkv = Copy_Atom<SM90_U32x4_STSM_N, Element>;

  static constexpr uint32_t kQTileBytes = BLOCK_M * HEAD_DIM * 2;
  static constexpr uint32_t kKvTileBytes = BLOCK_N * HEAD_DIM * 2;
  static constexpr uint32_t kRowStatBytes = BLOCK_M * 4;
  // kStatsInMma: the statistics block, B operand (q rows x 16 k) of the extra k
  // block, K-major without swizzle: row r's 8 values at 16 r bytes, and k 8-15
  // the same bytes as k 0-7 (stride 0; the ones operand is 0 there).
  using SmemLayoutStats = Layout<Shape<BM, Shape<_8, _2>>, Stride<_8, Stride<_1, _0>>>;
  static constexpr uint32_t kStatsBlockBytes = BLOCK_M * 16;
};

// The FP32 dQ partial of a visit travels in fragment order: float4 chunk c of
// consumer thread t (accumulator values 4c .. 4c + 3 of its dQ fragment) sits at
// float offset (c * 256 + t) * 4 of a BLOCK_M x d block, in the shared staging
// buffer and in the global accumulator alike (one block per (batch * head,
// q tile)). Each warp stores 512 contiguous bytes per instruction (no bank
// conflicts, no address arithmetic), and the writer adds the whole block with a
// single bulk reduce. The postprocess kernel puts the values back in place.
// Transposed dQ (kTransposedDq): each warpgroup stages its half on its own, so
// the block is two halves, warpgroup w's at float offset w * BLOCK_M * d / 2,
// chunk c of its thread u (0-127) at (c * 128 + u) * 4 in it.
template <class Cfg>
__host__ __device__ constexpr int dq_block_floats() {
  return Cfg::BLOCK_M * Cfg::HEAD_DIM;
}
template <class Cfg>
__host__ __device__ constexpr int dq_chunk_offset(int t, int c) {
  if constexpr (Cfg::kTransposedDq) {
    return (t / 128) * (dq_block_floats<Cfg>() / 2) + (c * 128 + t % 128) * 4;
  } else {
    return (c * Cfg::kConsumerThreads + t) * 4;
  }
}

// What the producer hands to the consumers with each stage, and the consumers to
// the dQ writer with each partial: the visit's entry and the unit's (batch, head).
struct VisitSlot {
  uint32_t kv_q;         // as VisitEntry::kv_q
  uint32_t rank_flags;   // as VisitEntry::rank_flags
  int32_t bh;
  int32_t visit;         // index in BwdParams::visits; -1: no more work (the roles leave their loops)
  int32_t unit;          // launch position of the visit's unit (trace stamps)
  int32_t last_of_unit;  // 1 on the unit's last visit (trace stamps)

  __device__ bool valid() const { return visit >= 0; }
};

// A split column's FP32 dK/dV partial (BwdParams::dkv_partial): dK then dV, each
// BLOCK_N x d floats in the consumers' fragment order (float4 chunk c of consumer
// thread t at float offset (c * 256 + t) * 4), unscaled.
template <class Cfg>
__host__ __device__ constexpr int dkv_partial_floats() {
  return 2 * Cfg::BLOCK_N * Cfg::HEAD_DIM;
}

template <class Cfg>
struct SharedStorage {
  alignas(1024) Element k[cosize_v<typename Cfg::SmemLayoutK>];
  alignas(1024) Element v[cosize_v<typename Cfg::SmemLayoutK>];
  alignas(1024) Element q[Cfg::kStages][cosize_v<typename Cfg::SmemLayoutQ>];
  alignas(1024) Element dout[Cfg::kStages][cosize_v<typename Cfg::SmemLayoutQ>];
  alignas(1024) Element ds[Cfg::kDsBuffers][cosize_v<typename Cfg::SmemLayoutP>];  // by visit parity (or one)
  alignas(128) float dq[Cfg::kDqBuffers][Cfg::kDqBufferFloats];  // fragment order (see dq_block_floats)
  // LSE * log2 e (BwdParams::lse_log2) and D, or (kStatsInMma) both in the
  // wgmma operand block of BwdParams::row_stats_mma. (A union, so that the
  // default build's layout is the one it had before the knob.)
  union RowStats {
    struct {
      float lse[Cfg::kStages][Cfg::BLOCK_M];
      float dsum[Cfg::kStages][Cfg::BLOCK_M];
    } fp32;
    Element mma[Cfg::kStages][Cfg::kStatsInMma ? Cfg::BLOCK_M * 8 : 8];
  };
  alignas(128) RowStats stats;
  VisitSlot slot[Cfg::kStages];
  VisitSlot dq_slot[Cfg::kDqStages];  // per writer: by buffer, or (80-row tiles) by visit parity
  VisitSlot deferred_slot[2];  // the slot of a visit whose dQ comes with the next visit (by visit parity)
  alignas(8) uint64_t full[Cfg::kStages];   // producer -> consumers: the stage's loads landed
  uint64_t empty[Cfg::kStages];             // consumers -> producer: the stage may be refilled
  uint64_t kv_full;                         // K_j/V_j landed
  uint64_t kv_empty;                        // K_j/V_j's tiles are free: products done, dK_j/dV_j stored out
  // Transposed dQ only: a half staging buffer is full (its warpgroup's 128
  // threads arrive) or read out (the writer arrives). Mbarriers, not named
  // barriers: both writers wait on each buffer in turn, and a phase's parity
  // says which fill a writer waits for.
  uint64_t dq_half_full[3];
  uint64_t dq_half_empty[3];
};

// ---------------------------------------------------------------------------
// Synchronization primitives (PTX): mbarriers and named barriers.
// ---------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

// Waits for the phase of the given parity to complete. Bounded: a pipeline that
// never completes (a bug, never a schedule: schedules cannot reach these waits)
// stops the kernel with a trap after the timeout instead of hanging the GPU.
// The whole loop is one asm block: written as a C++ loop around the timer and the
// trap, it made ptxas spill the consumers' dK/dV accumulators (348 bytes at head
// dim 128) and serialize their wgmma.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity, unsigned long long timeout_ns) {
  asm volatile(
      "{\n"
      ".reg .pred done, late;\n"
      ".reg .u64 start, now;\n"
      "mov.u64 start, %%globaltimer;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra DONE_%=;\n"
      "mov.u64 now, %%globaltimer;\n"
      "sub.u64 now, now, start;\n"
      "setp.gt.u64 late, now, %2;\n"
      "@late trap;\n"
      "bra WAIT_%=;\n"
      "DONE_%=:\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity), "l"(timeout_ns)
      : "memory");
}

// The bound of the pipeline waits: far above the rank wait's, so that a consumer
// held up behind a dQ writer that waits for a rank hears of the writer's timeout
// (which unblocks the pipeline) instead of trapping first.
__device__ __forceinline__ unsigned long long pipeline_timeout_ns(const BwdParams& p) {
  return 4 * p.spin_timeout_ns + 1000000000ull;
}

// Named barriers 1-15, all the hardware has (0 is __syncthreads). bar.arrive
// does not wait; bar.sync waits for `count` threads in all, arrivals included.
// A named barrier cannot count a second phase before the first completes, so each
// dQ staging buffer and each dS buffer has its own, per warpgroup where the two
// warpgroups pass at different times. A warpgroup cannot arrive twice on one
// before the other has synced: its next arrival needs something the other does
// after that sync (bench/NOTES.md run 62 gives the argument per barrier; with
// one dS buffer, 80-row tiles, a warpgroup's next DsReady arrival needs the
// other's DsFree arrival, which follows its DsReady sync, and likewise).
// The 80-row tiles' half staging buffers use mbarriers instead (SharedStorage).
enum NamedBarrier : uint32_t {
  kBarConsumers = 1,  // the 256 consumer threads
  kBarDqFull = 2,     // + buffer: consumers arrive (dQ partial staged), the writer syncs
  kBarDqEmpty = 4,    // + 2 * buffer + warpgroup: the writer arrives (staging read out), the warpgroup syncs
  kBarDsReady = 8,    // + 2 * dS buffer + warpgroup: its half of dS is stored (it arrives, the other syncs)
  kBarDsFree = 12,    // + 2 * dS buffer + warpgroup: its dQ product has read the buffer (likewise)
};
// The IDs above are laid out for two dQ staging buffers and two dS buffers (the
// 80-row tiles use dS buffer 0 only and no DqFull/DqEmpty).

__device__ __forceinline__ void named_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(uint32_t id, uint32_t count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Shared memory written by ordinary stores and read next by the async proxy
// (wgmma operands, the bulk reduce-add's source).
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Global memory between the generic proxy (the semaphore) and the async proxy
// (the bulk reduce-adds).
__device__ __forceinline__ void fence_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// 1-D bulk copy global -> shared completing on an mbarrier (LSE and D rows).
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

// Adds `bytes` of FP32 from shared to global memory (one bulk reduce, async proxy).
__device__ __forceinline__ void bulk_reduce_add_s2g(float* dst, const float* src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
}

// Copies `bytes` of FP32 from shared to global memory (one bulk copy, async proxy).
__device__ __forceinline__ void bulk_copy_s2g(float* dst, const float* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(smem_u32(src)),
               "r"(bytes)
               : "memory");
}

// Waits until every bulk operation this thread committed has completed, writes
// included (cute::tma_store_wait waits only until their sources have been read).
__device__ __forceinline__ void bulk_wait_all_complete() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// threadIdx.x through a volatile read: what is derived from it inside the visit
// loop (fragment coordinates, partitions) is recomputed there instead of being
// hoisted and pinned in registers for the kernel's lifetime, which would push
// dK/dV into spills (a compile-only spike of this loop's consumers, since
// retired, spilled 760 bytes with the partitions built once before the loop).
__device__ __forceinline__ int fresh_thread_index() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

// A visit slot read through volatile loads, so that the fields are read where
// they are used rather than kept in registers across the products.
__device__ __forceinline__ VisitSlot read_slot(const VisitSlot& s) {
  const volatile VisitSlot& v = s;
  return VisitSlot{v.kv_q, v.rank_flags, v.bh, v.visit, v.unit, v.last_of_unit};
}
// One field of a slot, read the same way. The consumers read only the fields
// they use: reading whole slots (six loads each time) cost up to 4% at head dim
// 128 (run 45).
template <class T>
__device__ __forceinline__ T read_field(const T& field) {
  return *static_cast<const volatile T*>(&field);
}

// The wgmma shared-memory descriptors of a fragment, advanced (per k block) by
// 64-bit adds. CuTe's iterator adds to the low word and copies the high word
// (GMMA::DescriptorIterator), which ptxas materializes again, as a constant, before
// every wgmma (two UMOVs per SS wgmma, one per RS wgmma); a 64-bit add is one
// UIADD3.64. Same values: the low word (start address, 14 bits; leading byte
// offset, bits 16-29) plus an in-tile offset never carries into the high word.
struct DescIter64 : GMMA::DescriptorIterator {
  template <class Index>
  CUTE_HOST_DEVICE constexpr DescIter64 operator+(Index const& offset) const {
    DescIter64 r;
    r.desc_.desc_ = desc_.desc_ + uint64_t(offset);
    return r;
  }
  template <class Index>
  CUTE_HOST_DEVICE constexpr GmmaDescriptor operator[](Index const& i) const {
    return (*this + i).desc_;
  }
};
// mma_unpack recasts the operand to uint64_t: keep the iterator (as CuTe's does).
template <class NewT>
CUTE_HOST_DEVICE constexpr DescIter64 recast_ptr(DescIter64 const& it) {
  static_assert(std::is_same<NewT, uint64_t>::value, "a descriptor iterator recasts to uint64_t only");
  return it;
}
template <class Frag>
__device__ __forceinline__ auto desc64(Frag const& frag) {
  uint64_t d = frag.data().desc_.desc_;
  // Hides the base's known zero low bits from NVVM, which otherwise rewrites the
  // small offsets' adds into ORs of the low word alone (and the high word is
  // materialized again).
  asm("mov.b64 %0, %0;" : "+l"(d));
  DescIter64 it;
  it.desc_.desc_ = d;
  return make_tensor(it, frag.layout());
}

// ---------------------------------------------------------------------------
// Kernel parameters: BwdParams plus the TMA descriptors (built on the host).
// ---------------------------------------------------------------------------

template <class Cfg>
struct KernelParams {
  BwdParams p;
  typename Cfg::TmaQ tma_q;
  typename Cfg::TmaQ tma_do;
  typename Cfg::TmaK tma_k;
  typename Cfg::TmaK tma_v;
  typename Cfg::TmaStoreKv tma_dk;
  typename Cfg::TmaStoreKv tma_dv;
};

template <class Cfg>
__host__ __device__ typename Cfg::ShapeQkv qkv_shape(const BwdParams& p, int seqlen) {
  return typename Cfg::ShapeQkv{seqlen, int32_t(Cfg::HEAD_DIM), p.heads, p.batch};
}

// Trace build only (TRACE): %globaltimer stamps in the layout of the portable
// kernel (docs/trace-format.md): per unit [start, end, %smid, 0], per visit
// [compute start, arrival at the rank wait, reduce start, reduce end]. Here the
// compute start is stamped by the first consumer thread when the visit's loads
// have landed, the other three by the dQ writer.
template <class Cfg>
__device__ __forceinline__ void trace_visit(const BwdParams& p, int visit_index, int slot) {
  if constexpr (Cfg::TRACE) p.trace[((size_t)p.num_units + visit_index) * 4 + slot] = global_timer_ns();
}
// Unit start (the producer, with the SM id).
template <class Cfg>
__device__ __forceinline__ void trace_unit_start(const BwdParams& p, int unit) {
  if constexpr (Cfg::TRACE) {
    p.trace[(size_t)unit * 4] = global_timer_ns();
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));
    p.trace[(size_t)unit * 4 + 2] = sm;
  }
}
// Unit end: the later of the consumers' last dK/dV write and the writer's last
// release, so both stamp and the larger stays.
template <class Cfg>
__device__ __forceinline__ void trace_unit_end(const BwdParams& p, int unit) {
  if constexpr (Cfg::TRACE) atomicMax(p.trace + (size_t)unit * 4 + 1, global_timer_ns());
}
// The consumers' own end of the unit (its dK/dV written: the later of the two
// warpgroups), in the unit's fourth slot: the model fits the epilogue from it
// (docs/trace-format.md).
template <class Cfg>
__device__ __forceinline__ void trace_unit_compute_end(const BwdParams& p, int unit) {
  if constexpr (Cfg::TRACE) atomicMax(p.trace + (size_t)unit * 4 + 3, global_timer_ns());
}

// ---------------------------------------------------------------------------
// The roles.
// ---------------------------------------------------------------------------

// Producer (one thread). Stage s of visit number c (counted over all the CTA's
// units) is s = c % kStages, filled for the (c / kStages)-th time.
template <class Cfg>
__device__ void run_producer(const KernelParams<Cfg>& kp, SharedStorage<Cfg>& ss) {
  const BwdParams& p = kp.p;
  Tensor sK = make_tensor(make_smem_ptr(ss.k), typename Cfg::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(ss.v), typename Cfg::SmemLayoutK{});

  Tensor mQ = kp.tma_q.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_q));
  Tensor mDo = kp.tma_do.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_q));
  Tensor mK = kp.tma_k.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_k));
  Tensor mV = kp.tma_v.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_k));
  auto tma_q = kp.tma_q.get_slice(_0{});
  auto tma_do = kp.tma_do.get_slice(_0{});
  auto tma_k = kp.tma_k.get_slice(_0{});
  auto tma_v = kp.tma_v.get_slice(_0{});

  uint32_t count = 0;     // visits issued
  uint32_t kv_count = 0;  // K/V tiles issued
  for (int unit = blockIdx.x; unit < p.num_units; unit += gridDim.x) {
    const UnitEntry u = p.units[unit];
    const int batch = u.bh / p.heads, head = u.bh - batch * p.heads;
    trace_unit_start<Cfg>(p, unit);
    for (int t = 0; t < u.num_visits; ++t) {
      const VisitEntry e = p.visits[u.first_visit + t];
      const Visit v = decode_visit(e);
      const int s = count % Cfg::kStages;
      mbar_wait(&ss.empty[s], ((count / Cfg::kStages) & 1) ^ 1, pipeline_timeout_ns(p));
      ss.slot[s] = VisitSlot{e.kv_q, e.rank_flags, u.bh, u.first_visit + t, unit, t + 1 == u.num_visits};
      mbar_arrive_expect_tx(&ss.full[s], 2 * Cfg::kQTileBytes +
                                             (Cfg::kStatsInMma ? Cfg::kStatsBlockBytes : 2 * Cfg::kRowStatBytes));
      Tensor gQ = local_tile(mQ(_, _, head, batch), Shape<typename Cfg::BM, typename Cfg::HD>{}, make_coord(v.q, 0));
      Tensor gDo = local_tile(mDo(_, _, head, batch), Shape<typename Cfg::BM, typename Cfg::HD>{}, make_coord(v.q, 0));
      Tensor sQ = make_tensor(make_smem_ptr(&ss.q[s][0]), typename Cfg::SmemLayoutQ{});
      Tensor sDo = make_tensor(make_smem_ptr(&ss.dout[s][0]), typename Cfg::SmemLayoutQ{});
      copy(kp.tma_q.with(ss.full[s]), tma_q.partition_S(gQ), tma_q.partition_D(sQ));
      copy(kp.tma_do.with(ss.full[s]), tma_do.partition_S(gDo), tma_do.partition_D(sDo));
      const size_t stats = (size_t)u.bh * p.seqlen_q_pad + (size_t)v.q * Cfg::BLOCK_M;
      if constexpr (Cfg::kStatsInMma) {
        bulk_copy_g2s(ss.stats.mma[s], p.row_stats_mma + stats * 8, Cfg::kStatsBlockBytes, &ss.full[s]);
      } else {
        bulk_copy_g2s(ss.stats.fp32.lse[s], p.lse_log2 + stats, Cfg::kRowStatBytes, &ss.full[s]);
        bulk_copy_g2s(ss.stats.fp32.dsum[s], p.dsum + stats, Cfg::kRowStatBytes, &ss.full[s]);
      }
      ++count;
      // K_j/V_j after the visit's Q/dO: the previous KV tile's last visit is
      // still computing, and this stage's loads need not wait for it.
      if (v.first_of_kv()) {
        mbar_wait(&ss.kv_empty, (kv_count & 1) ^ 1, pipeline_timeout_ns(p));
        mbar_arrive_expect_tx(&ss.kv_full, 2 * Cfg::kKvTileBytes);
        Tensor gK = local_tile(mK(_, _, head, batch), Shape<typename Cfg::BN, typename Cfg::HD>{}, make_coord(v.kv, 0));
        Tensor gV = local_tile(mV(_, _, head, batch), Shape<typename Cfg::BN, typename Cfg::HD>{}, make_coord(v.kv, 0));
        copy(kp.tma_k.with(ss.kv_full), tma_k.partition_S(gK), tma_k.partition_D(sK));
        copy(kp.tma_v.with(ss.kv_full), tma_v.partition_S(gV), tma_v.partition_D(sV));
        ++kv_count;
      }
    }
  }
  // No more work: an empty stage with an invalid slot.
  const int s = count % Cfg::kStages;
  mbar_wait(&ss.empty[s], ((count / Cfg::kStages) & 1) ^ 1, pipeline_timeout_ns(p));
  ss.slot[s].visit = -1;
  mbar_arrive(&ss.full[s]);
}

// A dQ writer (one warp per staging buffer: writer b takes the visits whose
// count is b modulo kDqStages). Per partial: wait until it is staged, wait for
// the rank, reduce-add it into the accumulator (or store it: rank 0, deterministic
// build), let the consumers restage as soon as the source has been read, and
// release the rank once the write has landed.
// With one writer, that completion wait (about a microsecond of L2 round trip)
// held up the next visit's partial: the consumers waited for the writer for 13%
// of their time (Nsight Compute, hd128 full 16384). With a writer per buffer,
// each has two visits' time for it, and no release waits behind another visit's
// rank wait, so the hand-off order is the schedule's.
template <class Cfg>
__device__ void run_dq_writer(const KernelParams<Cfg>& kp, SharedStorage<Cfg>& ss, int b) {
  const BwdParams& p = kp.p;
  const int lane = threadIdx.x & 31;

  bool give_up = false;  // a rank wait failed: the host reports it; the adds stop

  auto buffer_empty = [&] {  // to each consumer warpgroup
    named_arrive(kBarDqEmpty + 2 * b, 32 + 128);
    named_arrive(kBarDqEmpty + 2 * b + 1, 32 + 128);
  };
  buffer_empty();  // the buffer starts empty
  for (;;) {
    named_sync(kBarDqFull + b, 32 + Cfg::kConsumerThreads);
    const VisitSlot slot = read_slot(ss.dq_slot[b]);
    if (!slot.valid()) break;
    const Visit v = decode_visit(VisitEntry{slot.kv_q, slot.rank_flags});
    int* sem = p.dq_semaphore + (size_t)slot.bh * p.m_tiles + v.q;
    if (lane == 0) trace_visit<Cfg>(p, slot.visit, 1);
    if constexpr (Cfg::DETERMINISTIC) {
      if (!give_up) give_up = !warp_wait_for_rank(p, sem, v.rank, v.rank == 0 ? 0 : -1, slot.bh, v.q);
    }
    if (lane == 0) trace_visit<Cfg>(p, slot.visit, 2);
    if (lane == 0) {
      if (!give_up) {
        // The semaphore was read (acquire) by the generic proxy; the add goes
        // through the async proxy.
        if constexpr (Cfg::DETERMINISTIC) fence_async_global();
        float* dst = p.dq_accum + ((size_t)slot.bh * p.m_tiles + v.q) * dq_block_floats<Cfg>();
        if (Cfg::kRankZeroStores && v.rank == 0) {
          bulk_copy_s2g(dst, &ss.dq[b][0], dq_block_floats<Cfg>() * 4);
        } else {
          bulk_reduce_add_s2g(dst, &ss.dq[b][0], dq_block_floats<Cfg>() * 4);
        }
      }
      tma_store_arrive();
      tma_store_wait<0>();  // the staged partial has been read out
    }
    __syncwarp();
    buffer_empty();
    if constexpr (Cfg::DETERMINISTIC) {
      if (lane == 0 && !give_up) {
        bulk_wait_all_complete();  // the add (or store) has landed in global memory
        fence_async_global();
        release_rank(sem);
      }
    }
    if (lane == 0) {
      trace_visit<Cfg>(p, slot.visit, 3);
      // Every release, not only the last visit's: the other writer may release
      // an earlier visit later.
      trace_unit_end<Cfg>(p, slot.unit);
    }
  }
}

// The dQ writers of the transposed dQ (kTransposedDq). A visit's partial comes
// as two halves, one per consumer warpgroup, through three half staging buffers
// taken in turn: half h = 2n + w (the CTA's visit n, warpgroup w) goes to buffer
// h % 3, its (h / 3)-th fill. Writer b takes the visits n = b (mod 2), as the
// other main loop's writers do, and adds both halves of each once its rank has
// come; it counts the CTA's visits from the schedule instead of waiting for an
// end-of-work slot.
template <class Cfg>
__device__ void run_dq_half_writer(const KernelParams<Cfg>& kp, SharedStorage<Cfg>& ss, int b) {
  static_assert(Cfg::kTransposedDq && Cfg::kDqStages == 2, "two writers of half partials");
  const BwdParams& p = kp.p;
  const int lane = threadIdx.x & 31;
  int visits = 0;
  for (int unit = blockIdx.x; unit < p.num_units; unit += gridDim.x) visits += p.units[unit].num_visits;

  bool give_up = false;  // a rank wait failed: the host reports it; the adds stop
#pragma unroll 1
  for (int n = b; n < visits; n += 2) {
    // Opaque to the loop optimizer: the buffers' addresses are derived from n
    // afresh each time instead of being carried as induction variables, which
    // spilled within warpgroup 0's 24 registers.
    asm volatile("" : "+r"(n));
    const uint32_t h0 = 2 * n, h1 = 2 * n + 1;
    const int b0 = h0 % 3, b1 = h1 % 3;
    // The order of these two waits, and of the two empty arrivals below (b0, then
    // b1), is what keeps every parity wait within one phase of its barrier: the
    // b1 wait relies on warpgroup 0 having filled half h0 - 2 before h0, and
    // warpgroup 0's empty wait on half h0 - 6 being read out before h0 - 5.
    mbar_wait(&ss.dq_half_full[b0], (h0 / 3) & 1, pipeline_timeout_ns(p));
    mbar_wait(&ss.dq_half_full[b1], (h1 / 3) & 1, pipeline_timeout_ns(p));
    // Only the fields this writer uses (warpgroup 0 has 24 registers a thread);
    // the slot stays in place until both halves are read out.
    const VisitSlot& slot = ss.dq_slot[b];
    const Visit v = decode_visit(VisitEntry{read_field(slot.kv_q), read_field(slot.rank_flags)});
    const int bh = read_field(slot.bh);
    int* sem = p.dq_semaphore + (size_t)bh * p.m_tiles + v.q;
    int trace_visit_index = 0, trace_unit = 0;
    if constexpr (Cfg::TRACE) {
      trace_visit_index = read_field(slot.visit);
      trace_unit = read_field(slot.unit);
    }
    if (lane == 0) trace_visit<Cfg>(p, trace_visit_index, 1);
    if constexpr (Cfg::DETERMINISTIC) {
      if (!give_up) give_up = !warp_wait_for_rank(p, sem, v.rank, v.rank == 0 ? 0 : -1, bh, v.q);
    }
    if (lane == 0) {
      trace_visit<Cfg>(p, trace_visit_index, 2);
      if (!give_up) {
        if constexpr (Cfg::DETERMINISTIC) fence_async_global();
        float* dst = p.dq_accum + ((size_t)bh * p.m_tiles + v.q) * dq_block_floats<Cfg>();
        constexpr uint32_t kHalfBytes = Cfg::kDqBufferFloats * 4;
        if (Cfg::kRankZeroStores && v.rank == 0) {
          bulk_copy_s2g(dst, &ss.dq[b0][0], kHalfBytes);
          bulk_copy_s2g(dst + Cfg::kDqBufferFloats, &ss.dq[b1][0], kHalfBytes);
        } else {
          bulk_reduce_add_s2g(dst, &ss.dq[b0][0], kHalfBytes);
          bulk_reduce_add_s2g(dst + Cfg::kDqBufferFloats, &ss.dq[b1][0], kHalfBytes);
        }
      }
      tma_store_arrive();
      tma_store_wait<0>();  // both halves have been read out
      mbar_arrive(&ss.dq_half_empty[b0]);
      mbar_arrive(&ss.dq_half_empty[b1]);
      if constexpr (Cfg::DETERMINISTIC) {
        if (!give_up) {
          bulk_wait_all_complete();  // the adds (or stores) have landed in global memory
          fence_async_global();
          release_rank(sem);
        }
      }
      trace_visit<Cfg>(p, trace_visit_index, 3);
      trace_unit_end<Cfg>(p, trace_unit);
    }
    __syncwarp();
  }
}

// One product into a fresh accumulator, acc = A B over the k blocks, issued as
// one wgmma batch: committed, not waited for (S^T, dP^T and dQ; dV and dK
// accumulate across visits and issue their own).
template <class Mma, class TA, class TB, class Acc>
__device__ __forceinline__ void issue_product(Mma& mma, const TA& tA, const TB& tB, Acc& acc) {
  warpgroup_fence_operand(acc);
  warpgroup_arrive();
  mma.accumulate_ = GMMA::ScaleOut::Zero;
  CUTE_UNROLL
  for (int k = 0; k < size<2>(tA); ++k) {
    cute::gemm(mma, tA(_, _, k), tB(_, _, k), acc);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
}

// No statistics block: what issue_product_split passes when kStatsInMma is off.
struct NoStatsBlock {};

// The same with the first kRegBlocks k blocks of A from registers (tAr, a
// register-sourced wgmma: mma_r, with tBr the B operand's matching descriptors)
// and the rest from shared memory, then, with tOnes and tStats given, one more k
// block: the statistics block (BwdConfig::kStatsInMma), A = tOnes from registers,
// B = tStats, added last (after the other k blocks, where the accumulator is no
// larger than the product). One batch; issue_product when there is neither. With
// kRegBlocks 0, tAr and tBr are not read.
template <int kRegBlocks, class MmaR, class TAr, class TBr, class Mma, class TA, class TB, class Acc,
          class TO = NoStatsBlock, class TS = NoStatsBlock>
__device__ __forceinline__ void issue_product_split(MmaR& mma_r, TAr& tAr, const TBr& tBr, Mma& mma, const TA& tA,
                                                    const TB& tB, Acc& acc, TO&& tOnes = {}, const TS& tStats = {}) {
  constexpr bool kStatsBlock = !std::is_same_v<std::decay_t<TO>, NoStatsBlock>;
  if constexpr (kRegBlocks == 0 && !kStatsBlock) {
    issue_product(mma, tA, tB, acc);
  } else {
    warpgroup_fence_operand(acc);
    if constexpr (kRegBlocks > 0) warpgroup_fence_operand(tAr);
    if constexpr (kStatsBlock) warpgroup_fence_operand(tOnes);
    warpgroup_arrive();
    mma_r.accumulate_ = GMMA::ScaleOut::Zero;
    mma.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tA); ++k) {
      if (k < kRegBlocks) {
        cute::gemm(mma_r, tAr(_, _, k), tBr(_, _, k), acc);
      } else {
        cute::gemm(mma, tA(_, _, k), tB(_, _, k), acc);
      }
      mma_r.accumulate_ = GMMA::ScaleOut::One;
      mma.accumulate_ = GMMA::ScaleOut::One;
    }
    if constexpr (kStatsBlock) cute::gemm(mma_r, tOnes, tStats, acc);
    warpgroup_commit_batch();
    if constexpr (kRegBlocks > 0) warpgroup_fence_operand(tAr);
    if constexpr (kStatsBlock) warpgroup_fence_operand(tOnes);
  }
}

// A consumer thread's stmatrix destinations of dS^T in a dS buffer, the swizzle
// applied to the offset in the buffer (position-independent: every dS buffer is
// 1 KiB aligned, the swizzle's period) rather than to each store's address. The
// partition's layout is static: the thread's part is all in the pointer.
template <class Cfg>
__device__ __forceinline__ auto ds_store_partition(int tid, Element* buffer) {
  typename Cfg::MmaSdp mma;
  auto thr_store = make_tiled_copy_C(typename Cfg::StoreAtomDst{}, mma).get_thread_slice(tid);
  return thr_store.partition_D(
      as_position_independent_swizzle_tensor(make_tensor(make_smem_ptr(buffer), typename Cfg::SmemLayoutPt{})));
}

// The consumers. Warpgroup w owns KV rows [64w, 64w + 64) of S^T, dP^T, dV and
// dK: S and dP are computed transposed (S^T = K Q^T, dP^T = V dO^T), so that
// each warpgroup's P^T and dS^T, converted to bf16 in registers, are directly
// the A operand of its dV += P^T dO and dK += dS^T Q (wgmma with A from
// registers). P never goes to shared memory; dS goes there once (transposed by
// stmatrix) for dQ = dS K, in one of two buffers (by visit parity): a
// warpgroup stores dS of visit n + 2 once the other's dQ product of visit n has
// read that buffer, which leaves it a visit of slack. (80-row tiles: one dS
// buffer and dQ^T = K^T dS^T within its visit; see BwdConfig::kTransposedDq.)
template <class Cfg>
__device__ void run_consumers(const KernelParams<Cfg>& kp, SharedStorage<Cfg>& ss) {
  using BM = typename Cfg::BM;
  using BN = typename Cfg::BN;
  using HD = typename Cfg::HD;
  const BwdParams& p = kp.p;

  Tensor sK = make_tensor(make_smem_ptr(ss.k), typename Cfg::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(ss.v), typename Cfg::SmemLayoutK{});
  Tensor sKt = make_tensor(make_smem_ptr(ss.k), typename Cfg::SmemLayoutKt{});

  typename Cfg::MmaDkv mma_dkv;
  Tensor acc_dk = partition_fragment_C(mma_dkv, Shape<BN, HD>{});
  Tensor acc_dv = partition_fragment_C(mma_dkv, Shape<BN, HD>{});
  clear(acc_dk);
  clear(acc_dv);

  const int causal_offset = p.seqlen_k - p.seqlen_q;  // bottom-right aligned diagonal
  // This thread's consumer warpgroup (0 or 1), warp-uniform.
  const int wg = __shfl_sync(0xffffffffu, int(fresh_thread_index()) - 128, 0) >> 7;
  // The K_j and V_j operand descriptors of S^T and dP^T: the same every visit
  // (uniform registers), built once.
  typename Cfg::MmaSdp mma_sdp_kv;
  Tensor tSrK = desc64(mma_sdp_kv.get_thread_slice(wg * 128).partition_fragment_A(sK));
  Tensor tSrV = desc64(mma_sdp_kv.get_thread_slice(wg * 128).partition_fragment_A(sV));
  // This thread's K fragment (the register A operand of S^T), of which the first
  // kKRegBlocks k blocks are loaded at each KV tile's first visit (none at full
  // masks: then only the statistics block's ones below use mma_s_regs).
  typename Cfg::MmaSRegs mma_s_regs;
  const int consumer_tid = [] {
    const int t = fresh_thread_index() - 128;
    __builtin_assume(t >= 0 && t < Cfg::kConsumerThreads);
    return t;
  }();
  Tensor tSrKr = mma_s_regs.get_thread_slice(consumer_tid).partition_fragment_A(sK);
  auto load_kv = make_tiled_copy_A(typename Cfg::LoadAtomKv{}, mma_s_regs);
  auto thr_load_kv = load_kv.get_thread_slice(consumer_tid);
  Tensor tKsK = thr_load_kv.partition_S(sK);
  Tensor tKrK = thr_load_kv.retile_D(tSrKr);
  // kStatsInMma: the ones of the statistics k block, A operand of S^T (k 0-2: -LSE
  // / scale) and of dP^T (k 3-5: -D); zero elsewhere. Built once.
  Tensor tSrOnesLse = make_fragment_like(tSrKr(_, _, 0));
  Tensor tSrOnesD = make_fragment_like(tSrKr(_, _, 0));
  if constexpr (Cfg::kStatsInMma) {
    Tensor cA = mma_s_regs.get_thread_slice(consumer_tid).partition_A(make_identity_tensor(Shape<BN, HD>{}));
    CUTE_UNROLL
    for (int i = 0; i < size(tSrOnesLse); ++i) {
      const int k = get<1>(cA(_, _, 0)(i));
      tSrOnesLse(i) = Element(k < 3 ? 1.f : 0.f);
      tSrOnesD(i) = Element(k >= 3 && k < 6 ? 1.f : 0.f);
    }
  }
  // This thread's dS store offset in a dS buffer (elements, the same in both),
  // computed once: one register instead of recomputing it from the thread index
  // every visit.
  using DsStoreLayout = typename decltype(ds_store_partition<Cfg>(0, nullptr))::layout_type;
  static_assert(is_static<DsStoreLayout>::value, "the thread's part of the dS store partition is in its pointer");
  const int ds_store_offset = [&] {
    const int t = fresh_thread_index() - 128;
    __builtin_assume(t >= 0 && t < Cfg::kConsumerThreads);
    return int(raw_pointer_cast(ds_store_partition<Cfg>(t, &ss.ds[0][0]).data()) - &ss.ds[0][0]);
  }();
  uint32_t count = 0, kv_count = 0;
  const unsigned long long timeout_ns = pipeline_timeout_ns(p);
  for (;; ++count) {
    const int s = count % Cfg::kStages;
    mbar_wait(&ss.full[s], (count / Cfg::kStages) & 1, timeout_ns);
    // The slot's (kv, q) and rank/flags words are read once, here, together: two
    // registers across the visit. Read where each was needed, every read was a
    // round trip the warp waited for, and the (kv, q) read after the S^T/dP^T
    // issue queued behind the wgmma operand fetches and held up the dP^T issue
    // (the warps' largest stall in the loop, 6% of all samples at hd128 causal;
    // Nsight Compute, run 148). The rest of the slot stays in shared memory until
    // the stage is released.
    const int slot_visit = read_field(ss.slot[s].visit);
    const uint32_t slot_rank_flags = read_field(ss.slot[s].rank_flags);
    const uint32_t slot_kv_q = read_field(ss.slot[s].kv_q);
    if (slot_visit < 0) break;
    const Visit cur = decode_visit(VisitEntry{slot_kv_q, slot_rank_flags});
    if (cur.first_of_kv()) {
      mbar_wait(&ss.kv_full, kv_count & 1, timeout_ns);
      ++kv_count;
      CUTE_UNROLL
      for (int k = 0; k < Cfg::kKRegBlocks; ++k) copy(load_kv, tKsK(_, _, k), tKrK(_, _, k));
    }
    const int tid = fresh_thread_index() - 128;
    // Consumer threads are 128-383. Known to be in range, the fragment coordinates'
    // divisions by powers of two are plain shifts (no sign fix-ups).
    __builtin_assume(tid >= 0 && tid < Cfg::kConsumerThreads);
    if constexpr (Cfg::TRACE) {
      if (tid == 0) trace_visit<Cfg>(p, slot_visit, 0);
    }

    Tensor sQ = make_tensor(make_smem_ptr(&ss.q[s][0]), typename Cfg::SmemLayoutQ{});
    Tensor sDo = make_tensor(make_smem_ptr(&ss.dout[s][0]), typename Cfg::SmemLayoutQ{});
    Tensor sQt = make_tensor(make_smem_ptr(&ss.q[s][0]), typename Cfg::SmemLayoutQt{});
    Tensor sDot = make_tensor(make_smem_ptr(&ss.dout[s][0]), typename Cfg::SmemLayoutQt{});
    Element* ds_buffer = &ss.ds[Cfg::kDeferDq ? count % 2 : 0][0];
    const float* lse = ss.stats.fp32.lse[s];
    const float* dsum = ss.stats.fp32.dsum[s];

    typename Cfg::MmaSdp mma_sdp;
    // The shared-memory operands' descriptors depend only on the warpgroup: they
    // are partitioned for its first thread, a warp-uniform index, so that their
    // arithmetic can run on the uniform datapath. The accumulators' coordinates
    // (cSt) are per thread.
    const int warpgroup_tid = wg * 128;  // wg is warp-uniform already (a uniform register)
    auto thr_sdp = mma_sdp.get_thread_slice(tid);
    auto ops_sdp = mma_sdp.get_thread_slice(warpgroup_tid);
    auto ops_dkv = mma_dkv.get_thread_slice(warpgroup_tid);
    // (kv row, q column) of each S^T element, in the tile.
    Tensor cSt = thr_sdp.partition_C(make_identity_tensor(Shape<BN, BM>{}));
    // The LSE or D of elements i and i + 1 (i even), neighbouring columns: the
    // pair read ahead into registers, or one 8-byte shared-memory read.
    auto stat_pair = [&](const auto& ahead, const float* stats, int i) {
      if constexpr (Cfg::kPrefetchRowStats) {
        return ahead[i / 4];
      } else {
        return *reinterpret_cast<const float2*>(stats + get<1>(cSt(i)));
      }
    };

    // (With the statistics block, kStatsInMma, the tensor cores subtract LSE and D,
    // and nothing of this is read.) Otherwise, at BLOCK_M = 64 the LSE of this
    // thread's column pairs is read now, before the S^T/dP^T issue: read after it,
    // the loads queued behind the wgmma operand fetches in the shared-memory pipe,
    // and the first exp2 FFMAs waited for them (6.4% of the stall samples, run 66);
    // read first, +1.7% to +2.0% (run 67).
    constexpr int kPairs = Cfg::kPrefetchRowStats ? Cfg::BLOCK_M / 8 : 1;
    float2 lse2[kPairs];
    if constexpr (Cfg::kPrefetchRowStats) {
      CUTE_UNROLL
      for (int j = 0; j < kPairs; ++j) lse2[j] = *reinterpret_cast<const float2*>(lse + get<1>(cSt(4 * j)));
    }

    // ---- S^T = K Q^T and dP^T = V dO^T, issued together ----
    Tensor acc_s = partition_fragment_C(mma_sdp, Shape<BN, BM>{});
    Tensor acc_dp = partition_fragment_C(mma_sdp, Shape<BN, BM>{});
    {
      Tensor tSrQ = desc64(ops_sdp.partition_fragment_B(sQ));
      Tensor tSrDo = desc64(ops_sdp.partition_fragment_B(sDo));
      auto ops_s_regs = mma_s_regs.get_thread_slice(warpgroup_tid);
      if constexpr (Cfg::kStatsInMma) {
        Tensor sStats = make_tensor(make_smem_ptr(&ss.stats.mma[s][0]), typename Cfg::SmemLayoutStats{});
        Tensor tSrStats = desc64(ops_s_regs.partition_fragment_B(sStats));
        issue_product_split<Cfg::kKRegBlocks>(mma_s_regs, tSrKr, desc64(ops_s_regs.partition_fragment_B(sQ)),
                                              mma_sdp, tSrK, tSrQ, acc_s, tSrOnesLse, tSrStats(_, _, 0));
        issue_product_split<0>(mma_s_regs, tSrKr, tSrStats, mma_sdp, tSrV, tSrDo, acc_dp, tSrOnesD,
                               tSrStats(_, _, 0));
      } else {
        issue_product_split<Cfg::kKRegBlocks>(mma_s_regs, tSrKr, desc64(ops_s_regs.partition_fragment_B(sQ)),
                                              mma_sdp, tSrK, tSrQ, acc_s);
        issue_product(mma_sdp, tSrV, tSrDo, acc_dp);
      }
    }

    // ---- P^T = exp2(S^T * scale * log2e - LSE * log2e), in place, in FP32 ----
    // Masked elements of S^T (only where the tile reaches past seqlen_k or crosses
    // the causal diagonal) become -inf first, so that one exp2 loop serves every
    // tile: exp2(-inf - LSE) is 0 for every finite LSE and for the +inf LSE of
    // query columns past seqlen_q or with no key (the preprocess's convention).
    // The accumulator fragment is ((2 columns, 2 row halves, BLOCK_M / 8 column
    // blocks), 1, 1): element i sits in column pair i / 4. LSE * log2 e comes from
    // the preprocess (BwdParams::lse_log2), so each element is one FFMA and one
    // exp2 (with the statistics block, one FMUL and one exp2). At BLOCK_M = 64 the LSE of this thread's column pairs was read before
    // the S^T/dP^T issue (above); at BLOCK_M = 128 (head dim 64) the 32 registers
    // that takes cost more than they save (3-6% slower, run 41): the values are
    // read where they are used instead.
    // P^T stays in FP32 until dS^T = P^T o (dP^T - D) is computed, and both are
    // converted to bf16 there, as FA2-FA4 do: converted right after the exp2 and
    // unpacked again for dS (one more instruction per element), the main kernel
    // was up to 3.9% slower per round (once 0.7% faster, hd128 causal; runs
    // 70-71). ptxas then issues most of the exp2s after the wait for dP^T rather
    // than under it, and the kernel is faster all the same.
    static_assert(decltype(size(acc_s))::value == Cfg::BLOCK_M / 2, "one 64-row accumulator per warpgroup");
    const Visit& tile = cur;
    warpgroup_wait<1>();
    warpgroup_fence_operand(acc_s);
    {
      const int row_first = tile.q * Cfg::BLOCK_M;
      const int col_first = tile.kv * Cfg::BLOCK_N;
      bool need_mask = col_first + Cfg::BLOCK_N > p.seqlen_k;
      if constexpr (Cfg::IS_CAUSAL) need_mask |= col_first + Cfg::BLOCK_N - 1 > row_first + causal_offset;
      if (need_mask) {
        const int kv_limit = p.seqlen_k - col_first;            // KV rows at or past it are masked
        const int diag = row_first + causal_offset - col_first;  // causal: kv - q > diag is masked
        CUTE_UNROLL
        for (int i = 0; i < size(acc_s); ++i) {
          const int kv = get<0>(cSt(i));
          bool masked = kv >= kv_limit;
          if constexpr (Cfg::IS_CAUSAL) masked |= kv - get<1>(cSt(i)) > diag;
          if (masked) acc_s(i) = -INFINITY;
        }
      }
      if constexpr (Cfg::kStatsInMma) {
        CUTE_UNROLL
        for (int i = 0; i < size(acc_s); ++i) acc_s(i) = fast_exp2(acc_s(i) * p.softmax_scale_log2);
      } else {
        CUTE_UNROLL
        for (int i = 0; i < size(acc_s); i += 2) {
          const float2 l = stat_pair(lse2, lse, i);
          acc_s(i) = fast_exp2(fmaf(acc_s(i), p.softmax_scale_log2, -l.x));
          acc_s(i + 1) = fast_exp2(fmaf(acc_s(i + 1), p.softmax_scale_log2, -l.y));
        }
      }
    }

    // ---- dS^T = P^T o (dP^T - D); dS stored (transposed) for dQ; dV += P^T dO ----
    float2 dsum2[kPairs];  // D of this thread's column pairs, read before the wait as the LSE
    if constexpr (Cfg::kPrefetchRowStats) {
      CUTE_UNROLL
      for (int j = 0; j < kPairs; ++j) dsum2[j] = *reinterpret_cast<const float2*>(dsum + get<1>(cSt(4 * j)));
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc_dp);
    // P^T and dS^T in bf16, written a pair of neighbouring columns at a time (one
    // conversion into one 32-bit register, the unit of the wgmma A fragment):
    // converted one value at a time, the pairs were packed right before each dV
    // wgmma, and ptxas fenced every one of them separately.
    Tensor p_bf16 = make_tensor_like<Element>(acc_s);
    __nv_bfloat162* p_pairs = reinterpret_cast<__nv_bfloat162*>(raw_pointer_cast(p_bf16.data()));
    Tensor ds_bf16 = make_tensor_like<Element>(acc_dp);
    __nv_bfloat162* ds_pairs = reinterpret_cast<__nv_bfloat162*>(raw_pointer_cast(ds_bf16.data()));
    CUTE_UNROLL
    for (int i = 0; i < size(acc_dp); i += 2) {
      if constexpr (Cfg::kStatsInMma) {  // acc_dp holds dP^T - D already
        ds_pairs[i / 2] = __floats2bfloat162_rn(acc_s(i) * acc_dp(i), acc_s(i + 1) * acc_dp(i + 1));
      } else {
        const float2 d = stat_pair(dsum2, dsum, i);
        ds_pairs[i / 2] = __floats2bfloat162_rn(acc_s(i) * (acc_dp(i) - d.x), acc_s(i + 1) * (acc_dp(i + 1) - d.y));
      }
      p_pairs[i / 2] = __floats2bfloat162_rn(acc_s(i), acc_s(i + 1));
    }
    // The other warpgroup's dQ product of visit count - 2 (count - 1 with one dS
    // buffer) has read this buffer. (The arrivals for a CTA's last visits are
    // never synced: no later code of the CTA uses these barriers.)
    if constexpr (Cfg::kDeferDq) {
      if (count >= 2) named_sync(kBarDsFree + 2 * (count % 2) + (1 - wg), Cfg::kConsumerThreads);
    } else {
      if (count >= 1) named_sync(kBarDsFree + (1 - wg), Cfg::kConsumerThreads);
    }
    {
      auto store_ds = make_tiled_copy_C(typename Cfg::StoreAtomDst{}, mma_sdp);
      auto thr_store = store_ds.get_thread_slice(tid);
      copy(store_ds, thr_store.retile_S(ds_bf16), make_tensor(make_smem_ptr(ds_buffer + ds_store_offset), DsStoreLayout{}));
    }
    // The bf16 fragments of P^T and dS^T, regrouped as the A operand of the dV
    // and dK products (their k runs over the q columns). dV goes after the dS
    // stores: issued before the wait for dP^T instead (to fill the tensor cores
    // while dS is computed) it measured 0-2% slower (bench/NOTES.md, run 35).
    Tensor tVrP = make_tensor(p_bf16.data(), typename Cfg::LayoutAregs{});
    Tensor tKrDs = make_tensor(ds_bf16.data(), typename Cfg::LayoutAregs{});
    {
      Tensor tVrDot = desc64(ops_dkv.partition_fragment_B(sDot));
      warpgroup_fence_operand(acc_dv);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tVrP); ++k) cute::gemm(mma_dkv, tVrP(_, _, k), tVrDot(_, _, k), acc_dv);
      warpgroup_commit_batch();
    }
    // The dQ partial of visit n: its product from dS buffer n % 2 (the one dS
    // buffer with 80-row tiles) and K, once the other warpgroup's half of that dS
    // is stored. dQ = dS K, or transposed (kTransposedDq) dQ^T = K^T dS^T: the
    // same two operands, swapped.
    auto issue_dq = [&](auto& mma_dq, auto& acc_dq, uint32_t n) {
      const int buffer = Cfg::kDeferDq ? n % 2 : 0;
      named_sync(kBarDsReady + 2 * buffer + (1 - wg), Cfg::kConsumerThreads);
      Tensor sDsN = make_tensor(make_smem_ptr(&ss.ds[buffer][0]), typename Cfg::SmemLayoutP{});
      auto ops_dq = mma_dq.get_thread_slice(warpgroup_tid);
      if constexpr (Cfg::kTransposedDq) {
        issue_product(mma_dq, desc64(ops_dq.partition_fragment_A(sKt)), desc64(ops_dq.partition_fragment_B(sDsN)),
                      acc_dq);
      } else {
        issue_product(mma_dq, desc64(ops_dq.partition_fragment_A(sDsN)), desc64(ops_dq.partition_fragment_B(sKt)),
                      acc_dq);
      }
    };
    auto stage_dq = [&](auto& acc_dq, uint32_t n) {
      const int b = n % Cfg::kDqStages;
      named_arrive(kBarDsFree + 2 * (n % 2) + wg, Cfg::kConsumerThreads);  // this warpgroup is done with dS n
      named_sync(kBarDqEmpty + 2 * b + wg, 32 + 128);
      // In fragment order (see dq_block_floats): one 16-byte store per 4 values.
      static_assert(decltype(size(acc_dq))::value * Cfg::kConsumerThreads == dq_block_floats<Cfg>(), "dQ fragment");
      float4* dq_stage = reinterpret_cast<float4*>(&ss.dq[b][0]) + tid;
      CUTE_UNROLL
      for (int c = 0; c < size(acc_dq) / 4; ++c) {
        dq_stage[c * Cfg::kConsumerThreads] =
            make_float4(acc_dq(4 * c), acc_dq(4 * c + 1), acc_dq(4 * c + 2), acc_dq(4 * c + 3));
      }
      if (tid == 0) ss.dq_slot[b] = read_slot(ss.deferred_slot[n % 2]);
      return b;
    };
    // Transposed dQ: this warpgroup's half staged (half 2n + wg, in buffer
    // (2n + wg) % 3: see run_dq_half_writer).
    auto stage_dq_half = [&](auto& acc_dq, uint32_t n) {
      const uint32_t h = 2 * n + wg;
      const int b = h % 3;
      named_arrive(kBarDsFree + wg, Cfg::kConsumerThreads);  // this warpgroup is done with dS n
      mbar_wait(&ss.dq_half_empty[b], ((h / 3) & 1) ^ 1, timeout_ns);  // fill h / 3 - 1 read out
      static_assert(decltype(size(acc_dq))::value * 128 == Cfg::kDqBufferFloats, "dQ^T fragment");
      float4* dq_stage = reinterpret_cast<float4*>(&ss.dq[b][0]) + (tid & 127);
      CUTE_UNROLL
      for (int c = 0; c < size(acc_dq) / 4; ++c) {
        dq_stage[c * 128] = make_float4(acc_dq(4 * c), acc_dq(4 * c + 1), acc_dq(4 * c + 2), acc_dq(4 * c + 3));
      }
      // Warpgroup 0's half carries the slot (the writer reads it after both halves).
      if (tid == 0) {
        ss.dq_slot[n % 2] = VisitSlot{slot_kv_q, slot_rank_flags, read_field(ss.slot[s].bh), slot_visit,
                                      read_field(ss.slot[s].unit), read_field(ss.slot[s].last_of_unit)};
      }
      return b;
    };

    // This warpgroup's half of dS is in shared memory, for the dQ products of
    // both (async proxy). With the default tiles the dQ product of a visit comes
    // with the next visit of the KV tile (or at the tile's end): the two
    // warpgroups then never wait for each other inside a visit, and drift apart,
    // one computing exp2 and dS while the other keeps the tensor cores busy.
    // Waiting for both halves within the visit (one barrier of the 256
    // consumers, as FA3 and FA4 do) kept them in lockstep: 3-6% slower at head
    // dim 64, level at 128 (bench/NOTES.md run 62). The slot of this visit is
    // kept for its dQ partial.
    fence_async_shared();
    named_arrive(kBarDsReady + 2 * (Cfg::kDeferDq ? count % 2 : 0) + wg, Cfg::kConsumerThreads);
    if (Cfg::kDeferDq && tid == 0) {
      ss.deferred_slot[count % 2] = VisitSlot{slot_kv_q, slot_rank_flags, read_field(ss.slot[s].bh), slot_visit,
                                              read_field(ss.slot[s].unit), read_field(ss.slot[s].last_of_unit)};
    }

    auto issue_dk = [&] {
      Tensor tKrQt = desc64(ops_dkv.partition_fragment_B(sQt));
      warpgroup_fence_operand(acc_dk);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tKrDs); ++k) cute::gemm(mma_dkv, tKrDs(_, _, k), tKrQt(_, _, k), acc_dk);
      warpgroup_commit_batch();
    };
    // ---- Transposed dQ: dQ^T = K^T dS^T of this visit (staged for the writer); dK += dS^T Q ----
    if constexpr (Cfg::kTransposedDq) {
      typename Cfg::MmaDq mma_dq;
      Tensor acc_dq = partition_fragment_C(mma_dq, typename Cfg::DqTile{});
      issue_dq(mma_dq, acc_dq, count);
      issue_dk();
      warpgroup_wait<1>();  // dV and dQ^T done, dK may still run
      warpgroup_fence_operand(acc_dv);
      warpgroup_fence_operand(acc_dq);
      const int b = stage_dq_half(acc_dq, count);
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc_dk);
      fence_async_shared();
      mbar_arrive(&ss.dq_half_full[b]);
    }
    // ---- dQ = dS K (staged for the writer); dK += dS^T Q ----
    if constexpr (Cfg::kDeferDq) {
      // The previous visit's dQ, unless this visit starts a KV tile (the previous
      // tile's last dQ was done at its end).
      const bool dq_now = !cur.first_of_kv();
      const uint32_t dq_visit = count - 1;
      // Two straight-line paths rather than one with tests around the dQ
      // product: ptxas serializes every wgmma of the kernel when an accumulator
      // is read on a path it cannot match to its product.
      if (dq_now) {
        typename Cfg::MmaDq mma_dq;
        Tensor acc_dq = partition_fragment_C(mma_dq, Shape<BM, HD>{});
        issue_dq(mma_dq, acc_dq, dq_visit);
        issue_dk();
        // dV and dQ are done (groups retire in order), dK may still run: stage dQ
        // as soon as the writer has read out the previous partial.
        warpgroup_wait<1>();
        warpgroup_fence_operand(acc_dv);
        warpgroup_fence_operand(acc_dq);
        const int b = stage_dq(acc_dq, dq_visit);
        // The proxy fence waits for this thread's stores to land: placed after the
        // wait for dK, the stores have landed meanwhile (before it, the fence
        // stalled the consumers for 4% of their time). The writer has slack.
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc_dk);
        fence_async_shared();
        named_arrive(kBarDqFull + b, 32 + Cfg::kConsumerThreads);
      } else {
        issue_dk();
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc_dv);
        warpgroup_fence_operand(acc_dk);
      }
    }
    // This warp is done with the stage (Q, dO, LSE, D): one arrival per warp.
    // K and V are released after the KV tile's dK/dV have left through their tiles.
    // What the rest of the visit needs of the slot, read before the stage goes
    // back: bh at a KV tile's end only; unit and last_of_unit in the trace build
    // only.
    struct {
      int bh = 0, unit = 0, last_of_unit = 0;
    } slot;
    if (cur.last_of_kv()) slot.bh = read_field(ss.slot[s].bh);
    if constexpr (Cfg::TRACE) {
      slot.unit = read_field(ss.slot[s].unit);
      slot.last_of_unit = read_field(ss.slot[s].last_of_unit);
    }
    __syncwarp();  // the whole warp has read the slot
    if ((fresh_thread_index() & 31) == 0) {
      mbar_arrive(&ss.empty[s]);
    }

    // ---- End of this KV tile's visits: write dK_j, dV_j ----
    // Through the K_j/V_j tiles, which both warpgroups' products have finished
    // reading once all consumers pass the barrier: stmatrix into them, then one
    // thread stores both tiles with TMA (whole 128-byte lines; rows past seqlen_k
    // are clipped by the tensor's bounds) and frees them for the next KV tile once
    // the stores have read them out. Direct stores of the accumulator fragments
    // (4 bytes a thread, 8 rows a warp instruction) took 2.4 us (head dim 64) to
    // 5.1 us (head dim 128) per unit.
    if (cur.last_of_kv()) {
      if constexpr (Cfg::kDeferDq) {
        // This visit's dQ, before K is overwritten.
        typename Cfg::MmaDq mma_dq;
        Tensor acc_dq = partition_fragment_C(mma_dq, Shape<BM, HD>{});
        issue_dq(mma_dq, acc_dq, count);
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc_dq);
        const int b = stage_dq(acc_dq, count);
        fence_async_shared();
        named_arrive(kBarDqFull + b, 32 + Cfg::kConsumerThreads);
      }
      named_sync(kBarConsumers, Cfg::kConsumerThreads);
      if (cur.flags & kVisitPartialKv) {
        // A part of a split column: the products are done with K_j/V_j (the
        // barrier above), so the tiles go back to the producer at once, and
        // dK/dV leave as an FP32 partial in fragment order (one 16-byte store
        // per 4 values, as the dQ staging), summed by the fix-up kernel.
        if (tid == 0) mbar_arrive(&ss.kv_empty);
        float4* dst = reinterpret_cast<float4*>(p.dkv_partial + (size_t)p.dkv_slot_of_visit[slot_visit] *
                                                                    dkv_partial_floats<Cfg>()) +
                      tid;
        constexpr int kChunks = decltype(size(acc_dk))::value / 4;
        CUTE_UNROLL
        for (int c = 0; c < kChunks; ++c) {
          dst[c * Cfg::kConsumerThreads] = make_float4(acc_dk(4 * c), acc_dk(4 * c + 1), acc_dk(4 * c + 2), acc_dk(4 * c + 3));
        }
        CUTE_UNROLL
        for (int c = 0; c < kChunks; ++c) {
          dst[(kChunks + c) * Cfg::kConsumerThreads] =
              make_float4(acc_dv(4 * c), acc_dv(4 * c + 1), acc_dv(4 * c + 2), acc_dv(4 * c + 3));
        }
      } else {
        // kDkvThroughDs: the products are done with K_j/V_j (the barrier above),
        // so the producer may load the next KV tile now; dK/dV go out through
        // dS buffer count % 2 (dK in its first half, dV in its second).
        if (Cfg::kDkvThroughDs && tid == 0) mbar_arrive(&ss.kv_empty);
        Element* dk_tile = ss.k;
        Element* dv_tile = ss.v;
        if constexpr (Cfg::kDkvThroughDs) {
          dk_tile = &ss.ds[count % 2][0];
          dv_tile = dk_tile + cosize_v<typename Cfg::SmemLayoutK>;
        }
        Tensor sDk = make_tensor(make_smem_ptr(dk_tile), typename Cfg::SmemLayoutK{});
        Tensor sDv = make_tensor(make_smem_ptr(dv_tile), typename Cfg::SmemLayoutK{});
        auto store_dkv = make_tiled_copy_C(typename Cfg::StoreAtomDkv{}, mma_dkv);
        auto thr_store = store_dkv.get_thread_slice(tid);
        {
          Tensor out = make_tensor_like<Element>(acc_dk);
          CUTE_UNROLL
          for (int i = 0; i < size(acc_dk); ++i) out(i) = Element(acc_dk(i) * p.softmax_scale);
          copy(store_dkv, thr_store.retile_S(out), thr_store.partition_D(sDk));
        }
        {
          Tensor out = make_tensor_like<Element>(acc_dv);
          CUTE_UNROLL
          for (int i = 0; i < size(acc_dv); ++i) out(i) = Element(acc_dv(i));
          copy(store_dkv, thr_store.retile_S(out), thr_store.partition_D(sDv));
        }
        fence_async_shared();
        named_sync(kBarConsumers, Cfg::kConsumerThreads);
        if (tid == 0) {
          const int batch = slot.bh / p.heads, head = slot.bh - batch * p.heads;
          Tensor mDk = kp.tma_dk.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_k));
          Tensor mDv = kp.tma_dv.get_tma_tensor(qkv_shape<Cfg>(p, p.seqlen_k));
          Tensor gDk = local_tile(mDk(_, _, head, batch), Shape<BN, HD>{}, make_coord(cur.kv, 0));
          Tensor gDv = local_tile(mDv(_, _, head, batch), Shape<BN, HD>{}, make_coord(cur.kv, 0));
          auto tma_dk = kp.tma_dk.get_slice(_0{});
          auto tma_dv = kp.tma_dv.get_slice(_0{});
          copy(kp.tma_dk, tma_dk.partition_S(sDk), tma_dk.partition_D(gDk));
          copy(kp.tma_dv, tma_dv.partition_S(sDv), tma_dv.partition_D(gDv));
          tma_store_arrive();
          tma_store_wait<0>();  // both tiles read out
          if (!Cfg::kDkvThroughDs) mbar_arrive(&ss.kv_empty);
        }
        // The dS buffer is read out before any consumer stores dS into it again
        // (the next KV tile's second visit). The next tile's loads, issued at the
        // top, take longer than this: the consumers would wait for them anyway.
        if (Cfg::kDkvThroughDs) named_sync(kBarConsumers, Cfg::kConsumerThreads);
      }
      clear(acc_dk);
      clear(acc_dv);
    }
    if constexpr (Cfg::TRACE) {
      if ((fresh_thread_index() & 127) == 0 && slot.last_of_unit) {  // one thread per warpgroup
        trace_unit_compute_end<Cfg>(p, slot.unit);
        trace_unit_end<Cfg>(p, slot.unit);
      }
    }
  }
  // The dK/dV stores have landed before the CTA (and its shared memory) goes.
  if (fresh_thread_index() == 128) bulk_wait_all_complete();
  // Tell every writer there is no more work, each in its turn. (The writers of
  // half partials count their visits.)
  for (int i = 0; i < (Cfg::kTransposedDq ? 0 : Cfg::kDqStages); ++i) {
    const int b = (count + i) % Cfg::kDqStages;
    named_sync(kBarDqEmpty + 2 * b + wg, 32 + 128);
    if (fresh_thread_index() == 128) ss.dq_slot[b].visit = -1;
    named_arrive(kBarDqFull + b, 32 + Cfg::kConsumerThreads);
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) bwd_main_kernel(const __grid_constant__ KernelParams<Cfg> kp) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The swizzled tiles need 1 KiB alignment. The kernel has no static shared
  // memory, so the dynamic block starts the CTA's window, which is 1 KiB aligned;
  // there is no room for alignment slack at head dim 64 (the storage fills the
  // 227 KiB). Checked rather than assumed: a misaligned block would swizzle
  // differently from what TMA and wgmma expect, so it is reported (code 3) and
  // the kernel does nothing.
  if (smem_u32(smem_raw) & 1023u) {
    if (threadIdx.x == 0) report_spin_error(kp.p, 3, -1, -1, -1, int(smem_u32(smem_raw)));
    return;
  }
  auto& ss = *reinterpret_cast<SharedStorage<Cfg>*>(smem_raw);
  const int warp = threadIdx.x / 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(&ss.full[s], 1);
      mbar_init(&ss.empty[s], 8);  // one arrival per consumer warp
    }
    mbar_init(&ss.kv_full, 1);
    mbar_init(&ss.kv_empty, 1);  // the consumer thread that stores dK/dV out
    if constexpr (Cfg::kTransposedDq) {
      for (int b = 0; b < 3; ++b) {
        mbar_init(&ss.dq_half_full[b], 128);  // a warpgroup's threads
        mbar_init(&ss.dq_half_empty[b], 1);   // the writer
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    cute::prefetch_tma_descriptor(kp.tma_q.get_tma_descriptor());
    cute::prefetch_tma_descriptor(kp.tma_do.get_tma_descriptor());
    cute::prefetch_tma_descriptor(kp.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(kp.tma_v.get_tma_descriptor());
    cute::prefetch_tma_descriptor(kp.tma_dk.get_tma_descriptor());
    cute::prefetch_tma_descriptor(kp.tma_dv.get_tma_descriptor());
  }
  __syncthreads();

  if (warp < 4) {
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if (warp == 0) {
      if (cute::elect_one_sync()) run_producer<Cfg>(kp, ss);
    } else if (warp <= Cfg::kDqStages) {
      if constexpr (Cfg::kTransposedDq) {
        run_dq_half_writer<Cfg>(kp, ss, warp - 1);
      } else {
        run_dq_writer<Cfg>(kp, ss, warp - 1);
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    run_consumers<Cfg>(kp, ss);
  }
}

// dK, dV of the split columns (kVisitPartialKv): sums each split tile's FP32
// partials in launch order (a fixed order: the result does not depend on which
// part finished first) and writes the bf16 tiles. One CTA of 256 threads per
// (split tile, tensor, fragment chunk c): thread t sums float4 chunk c of what
// consumer thread t held, across the parts, and the dK/dV product's accumulator
// partition gives each value's row and column. With one CTA per tile (each
// thread looping over every chunk) the few split tiles of a problem took 4 SMs
// and 71-103 us (hd64, 33 parts a tile; bench/NOTES.md run 114). The CTAs are
// the postprocess kernel's first ones (one launch less; launch_postprocess).
template <class Cfg>
__host__ __device__ constexpr int dkv_fixup_blocks_per_tile() {
  return dkv_partial_floats<Cfg>() / (4 * Cfg::kConsumerThreads);
}
template <class Cfg>
__device__ void dkv_fixup_block(const BwdParams& p, int tile_index, int chunk_block) {
  const SplitKvTile tile = p.split_kv_tiles[tile_index];
  const int t = threadIdx.x;
  typename Cfg::MmaDkv mma_dkv;
  Tensor cDkv = mma_dkv.get_thread_slice(t).partition_C(
      make_identity_tensor(Shape<typename Cfg::BN, typename Cfg::HD>{}));
  constexpr int kChunks = decltype(size(cDkv))::value / 4;  // float4 per thread, per tensor
  static_assert(kChunks * 4 * Cfg::kConsumerThreads * 2 == dkv_partial_floats<Cfg>(), "dK/dV fragment");
  const int tensor = chunk_block / kChunks, c = chunk_block % kChunks;  // tensor 0: dK, 1: dV
  const float4* src = reinterpret_cast<const float4*>(p.dkv_partial + (size_t)tile.first_slot * dkv_partial_floats<Cfg>()) +
                      (size_t)chunk_block * Cfg::kConsumerThreads + t;
  constexpr int kSlotFloat4s = dkv_partial_floats<Cfg>() / 4;
  float4 sum = src[0];
#pragma unroll 4
  for (int part = 1; part < tile.parts; ++part) {
    const float4 v = src[(size_t)part * kSlotFloat4s];
    sum.x += v.x;
    sum.y += v.y;
    sum.z += v.z;
    sum.w += v.w;
  }
  const int batch = tile.bh / p.heads, head = tile.bh - batch * p.heads;
  const size_t row_stride = (size_t)p.heads * Cfg::HEAD_DIM;
  __nv_bfloat16* out = (tensor == 0 ? p.dk : p.dv) +
                       ((size_t)batch * p.seqlen_k + (size_t)tile.kv * Cfg::BLOCK_N) * row_stride +
                       (size_t)head * Cfg::HEAD_DIM;
  const float scale = tensor == 0 ? p.softmax_scale : 1.0f;
  const int rows = p.seqlen_k - tile.kv * Cfg::BLOCK_N;
  const float pair[2][2] = {{sum.x, sum.y}, {sum.z, sum.w}};
  CUTE_UNROLL
  for (int k = 0; k < 2; ++k) {
    // Values 4c + 2k and 4c + 2k + 1 are neighbouring columns of one row.
    const int row = get<0>(cDkv(4 * c + 2 * k)), col = get<1>(cDkv(4 * c + 2 * k));
    if (row < rows) {
      *reinterpret_cast<__nv_bfloat162*>(out + (size_t)row * row_stride + col) =
          __floats2bfloat162_rn(pair[k][0] * scale, pair[k][1] * scale);
    }
  }
}

// dQ = bf16(dq_accum * softmax_scale) from the main loop's fragment-ordered
// blocks (dq_block_floats): one CTA of the consumers' 256 threads per
// (batch * head, q tile). Thread t reads the chunks that consumer thread t
// stored (coalesced 16-byte loads, all issued before any is used) and finds each
// value's (row, column) through the dQ product's accumulator partition, the
// layout they came from. The bf16 block is put together in shared memory and
// leaves in 16-byte chunks, whole rows at a time. Written straight from the
// fragments (4-byte stores, 16 bytes of a row per warp instruction, one load and
// its stores after another) this kernel took 163 us for 16384 x 2048 values,
// at 31% of the memory bandwidth (run 48).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kConsumerThreads) bwd_postprocess_kernel(const BwdParams p) {
  // Rows padded by 16 bytes: a warp's fragment stores (8 rows x 4 threads) hit 32
  // banks, and every row starts 16-byte aligned.
  constexpr int kRowElems = Cfg::HEAD_DIM + 8;
  constexpr int kChunks = dq_block_floats<Cfg>() / (4 * Cfg::kConsumerThreads);  // float4 per thread
  __shared__ __align__(16) __nv_bfloat16 tile[Cfg::BLOCK_M * kRowElems];

  // The first rows of CTAs sum the split columns' dK/dV (dkv_fixup_block): first,
  // so that their longer reads start early.
  constexpr int kPerTile = dkv_fixup_blocks_per_tile<Cfg>();
  const int fixup_blocks = p.num_split_kv_tiles * kPerTile;
  const int fixup_rows = (fixup_blocks + gridDim.x - 1) / gridDim.x;
  if ((int)blockIdx.y < fixup_rows) {
    const int index = blockIdx.y * gridDim.x + blockIdx.x;
    if (index < fixup_blocks) dkv_fixup_block<Cfg>(p, index / kPerTile, index % kPerTile);
    return;
  }
  const int q_tile = blockIdx.x, bh = blockIdx.y - fixup_rows;
  const int t = threadIdx.x;
  typename Cfg::MmaDq mma_dq;
  Tensor cDq = mma_dq.get_thread_slice(t).partition_C(make_identity_tensor(typename Cfg::DqTile{}));
  static_assert(decltype(size(cDq))::value == 4 * kChunks, "dQ fragment");
  const float* block = p.dq_accum + ((size_t)bh * p.m_tiles + q_tile) * dq_block_floats<Cfg>();
  float4 v[kChunks];
  CUTE_UNROLL
  for (int c = 0; c < kChunks; ++c) v[c] = *reinterpret_cast<const float4*>(block + dq_chunk_offset<Cfg>(t, c));
  CUTE_UNROLL
  for (int c = 0; c < kChunks; ++c) {
    const float pair[2][2] = {{v[c].x, v[c].y}, {v[c].z, v[c].w}};
    CUTE_UNROLL
    for (int k = 0; k < 2; ++k) {
      // Values 4c + 2k and 4c + 2k + 1 are neighbouring columns of one row of the
      // product: of dQ, or of dQ^T (neighbouring rows of dQ, one column).
      if constexpr (Cfg::kTransposedDq) {
        const int col = get<0>(cDq(4 * c + 2 * k)), row = get<1>(cDq(4 * c + 2 * k));
        tile[row * kRowElems + col] = __float2bfloat16_rn(pair[k][0] * p.softmax_scale);
        tile[(row + 1) * kRowElems + col] = __float2bfloat16_rn(pair[k][1] * p.softmax_scale);
      } else {
        const int row = get<0>(cDq(4 * c + 2 * k)), col = get<1>(cDq(4 * c + 2 * k));
        *reinterpret_cast<__nv_bfloat162*>(&tile[row * kRowElems + col]) =
            __floats2bfloat162_rn(pair[k][0] * p.softmax_scale, pair[k][1] * p.softmax_scale);
      }
    }
  }
  __syncthreads();

  const int batch = bh / p.heads, head = bh - batch * p.heads;
  const size_t row_stride = (size_t)p.heads * Cfg::HEAD_DIM;
  __nv_bfloat16* dq = p.dq + ((size_t)batch * p.seqlen_q + (size_t)q_tile * Cfg::BLOCK_M) * row_stride +
                      (size_t)head * Cfg::HEAD_DIM;
  const int rows = p.seqlen_q - q_tile * Cfg::BLOCK_M;  // rows of this tile inside the sequence
  constexpr int kRowChunks = Cfg::HEAD_DIM / 8;          // 16-byte chunks per row
  CUTE_UNROLL
  for (int i = t; i < Cfg::BLOCK_M * kRowChunks; i += Cfg::kConsumerThreads) {
    const int row = i / kRowChunks, chunk = i % kRowChunks;
    if (row < rows) {
      *reinterpret_cast<uint4*>(dq + (size_t)row * row_stride + chunk * 8) =
          *reinterpret_cast<const uint4*>(&tile[row * kRowElems + chunk * 8]);
    }
  }
}

// ---------------------------------------------------------------------------
// Host side.
// ---------------------------------------------------------------------------

template <class Cfg>
struct MainLoop {
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kSmemBytes = int(sizeof(SharedStorage<Cfg>));
  // The roles loop over units with stride gridDim.x: a grid smaller than the
  // unit count is the persistent launch.
  static constexpr bool kPersistent = true;
  static constexpr bool kRankZeroStores = Cfg::kRankZeroStores;
  static constexpr bool kRowStatsInMma = Cfg::kStatsInMma;  // the harness then allocates BwdParams::row_stats_mma
  using Params = KernelParams<Cfg>;

  static const void* kernel() { return reinterpret_cast<const void*>(&bwd_main_kernel<Cfg>); }

  // The TMA descriptors of the problem's tensors (cuTensorMapEncodeTiled, through
  // the runtime's driver entry point: no -lcuda).
  static Params prepare(const BwdParams& p) {
    Params kp{};
    kp.p = p;
    const int64_t row = (int64_t)p.heads * Cfg::HEAD_DIM;
    auto qkv = [&](const __nv_bfloat16* ptr, int seqlen) {
      return make_tensor(make_gmem_ptr(reinterpret_cast<const Element*>(ptr)), qkv_shape<Cfg>(p, seqlen),
                         typename Cfg::StrideQkv{row, _1{}, (int64_t)Cfg::HEAD_DIM, (int64_t)seqlen * row});
    };
    kp.tma_q = make_tma_copy(SM90_TMA_LOAD{}, qkv(p.q, p.seqlen_q), typename Cfg::SmemLayoutQ{});
    kp.tma_do = make_tma_copy(SM90_TMA_LOAD{}, qkv(p.dout, p.seqlen_q), typename Cfg::SmemLayoutQ{});
    kp.tma_k = make_tma_copy(SM90_TMA_LOAD{}, qkv(p.k, p.seqlen_k), typename Cfg::SmemLayoutK{});
    kp.tma_v = make_tma_copy(SM90_TMA_LOAD{}, qkv(p.v, p.seqlen_k), typename Cfg::SmemLayoutK{});
    auto kv_out = [&](__nv_bfloat16* ptr) {
      return make_tensor(make_gmem_ptr(reinterpret_cast<Element*>(ptr)), qkv_shape<Cfg>(p, p.seqlen_k),
                         typename Cfg::StrideQkv{row, _1{}, (int64_t)Cfg::HEAD_DIM, (int64_t)p.seqlen_k * row});
    };
    kp.tma_dk = make_tma_copy(SM90_TMA_STORE{}, kv_out(p.dk), typename Cfg::SmemLayoutK{});
    kp.tma_dv = make_tma_copy(SM90_TMA_STORE{}, kv_out(p.dv), typename Cfg::SmemLayoutK{});
    return kp;
  }

  static void launch(const Params& kp, int grid, cudaStream_t stream) {
    bwd_main_kernel<Cfg><<<grid, kThreads, kSmemBytes, stream>>>(kp);
  }

  // dQ from the accumulator, in this main loop's layout, and dK/dV of the split
  // columns, if any.
  static constexpr bool kSplitColumns = true;
  static constexpr int kDkvPartialFloats = dkv_partial_floats<Cfg>();
  static void launch_postprocess(const BwdParams& p, cudaStream_t stream) {
    // Rows of m_tiles CTAs before the (batch * head) ones sum the split columns' dK/dV.
    const int fixup_blocks = p.num_split_kv_tiles * dkv_fixup_blocks_per_tile<Cfg>();
    const int fixup_rows = (fixup_blocks + p.m_tiles - 1) / p.m_tiles;
    bwd_postprocess_kernel<Cfg>
        <<<dim3(p.m_tiles, p.batch * p.heads + fixup_rows), Cfg::kConsumerThreads, 0, stream>>>(p);
  }
};

}  // namespace sm90
}  // namespace dashc
