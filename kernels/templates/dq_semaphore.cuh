// ${ banner }
//
// The deterministic dQ hand-off, shared by every main loop: one semaphore per
// (batch, head, Q tile) counts the contributions added so far. A CTA waits until
// the count equals its rank on the tile (bounded: on timeout it records who waited
// for what and raises an abort flag that the host reports), adds its partial, and
// publishes the add with a release increment once the add has landed.
#pragma once

#include <cstdint>

#include "bwd_params.h"

namespace dashc {

// Nanoseconds since an arbitrary origin, the same on every SM: bounds the spins
// (and stamps the trace build's events).
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// A semaphore read that orders the reader's later accesses after it.
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Records the first failed wait (who waited for which rank of which tile, and what
// it saw) and raises the abort flag that every other waiter polls.
__device__ __forceinline__ void report_spin_error(const BwdParams& p, int code, int bh, int q_tile, int rank,
                                               int seen) {
  SpinError* e = p.spin_error;
  if (atomicCAS(&e->code, 0, code) == 0) {
    e->unit = blockIdx.x;
    e->bh = bh;
    e->q_tile = q_tile;
    e->wanted_rank = rank;
    e->seen_value = seen;
  }
  __threadfence();
  atomicExch(&e->abort, 1);
}

// Lane 0 of the calling warp spins until the semaphore equals `rank`, starting
// from `seen`, a value it read earlier (the early poll, issued before the dQ
// product so that its round trip to L2 hides behind the product). Gives up (and
// reports) after spin_timeout_ns, when the semaphore is already past `rank` (the
// schedule gave one rank twice), or when another CTA has reported and raised the
// abort flag. Returns the same verdict to every lane; the __syncwarp orders the
// lane's acquire before the warp's adds.
__device__ __forceinline__ bool warp_wait_for_rank(const BwdParams& p, const int* sem, int rank, int seen, int bh,
                                                   int q_tile) {
  bool ok = true;
  if ((threadIdx.x & 31) == 0 && seen != rank) {
    const unsigned long long start = global_timer_ns();
    for (uint32_t polls = 1;; ++polls) {
      if (seen > rank) {
        report_spin_error(p, 2, bh, q_tile, rank, seen);
        ok = false;
        break;
      }
      seen = ld_acquire_gpu(sem);
      if (seen == rank) break;
      // Reading the clock and the abort flag every poll would slow the hand-off
      // path, so they are checked every 32 polls.
      if ((polls & 31) == 0) {
        if (*reinterpret_cast<volatile const int*>(&p.spin_error->abort)) {
          ok = false;
          break;
        }
        if (global_timer_ns() - start > p.spin_timeout_ns) {
          report_spin_error(p, 1, bh, q_tile, rank, seen);
          ok = false;
          break;
        }
      }
    }
  }
  __syncwarp();
  return __shfl_sync(0xffffffffu, ok, 0);
}

// Publishes a CTA's dQ add: called by one thread after a __syncthreads that
// follows every thread's reductions. The release (a fence at GPU scope, then the
// increment) makes the adds visible -- landed in L2, not merely issued -- before
// the increment can be observed; it is cumulative over the adds that the barrier
// ordered before it. The portable kernel calls this at the top of its next visit;
// its adds were issued during that visit's dK product, so they have mostly landed.
__device__ __forceinline__ void release_rank(int* sem) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sem) : "memory");
}

}  // namespace dashc
