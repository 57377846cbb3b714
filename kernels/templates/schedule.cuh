// ${ banner }
//
// Device-side schedule reader. The kernel never decides an order itself: each CTA
// reads its unit (by launch position) and walks the visit list the harness
// uploaded. Entries are copied two visits ahead, so the 8-byte load is hidden
// behind a whole visit of work.
#pragma once

#include "bwd_params.h"

namespace dashc {

struct Visit {
  int kv;
  int q;
  int rank;
  uint32_t flags;

  __device__ bool first_of_kv() const { return flags & kVisitFirstOfKv; }
  __device__ bool last_of_kv() const { return flags & kVisitLastOfKv; }
};

__device__ __forceinline__ Visit decode_visit(VisitEntry e) {
  Visit v;
  v.kv = int(e.kv_q & 0xffffu);
  v.q = int(e.kv_q >> 16);
  v.rank = int(e.rank_flags & 0xffffu);
  v.flags = e.rank_flags >> 16;
  return v;
}

// Keeps the unit's upcoming visit entries in a ring of kRing entries in shared
// memory. At the top of visit t (after the barrier that follows the wait for the
// previous prefetch) entries t and t + 1 are in the ring: the kernel needs t + 1
// there to prefetch its Q/dO tiles. Thread 0 then copies entry t + 2 into the ring
// with cp.async, in the same group as that prefetch, so it lands, and becomes
// visible, together with the Q/dO tiles at the top of visit t + 1. Nothing of the
// look-ahead stays in registers across the visit: registers are the main loop's
// scarce resource (dK/dV live there).
class ScheduleReader {
 public:
  static constexpr int kRing = 4;  // slot (t + 2) % 4 was last read at the top of visit t - 2

  // Every thread reads the unit entry (one broadcast transaction); thread 0 puts
  // entries 0 and 1 in the ring, made visible by the kernel's first barrier.
  __device__ ScheduleReader(const BwdParams& p, int unit_index, uint2* ring) : ring_(ring) {
    const int4 u = __ldg(reinterpret_cast<const int4*>(p.units) + unit_index);
    first_visit_ = u.x;
    num_visits_ = u.y;
    bh_ = u.z;
    if (threadIdx.x == 0) {
      for (int t = 0; t < 2 && t < num_visits_; ++t) ring_[t] = entry_address(p, t)[0];
    }
  }

  __device__ int bh() const { return bh_; }
  __device__ int num_visits() const { return num_visits_; }
  __device__ int first_visit() const { return first_visit_; }

  // Visit 0 straight from global memory, for the loads issued before the loop.
  __device__ Visit first(const BwdParams& p) const { return decode(__ldg(entry_address(p, 0))); }
  // Visit t, from the top of visit t (after its barrier) to the top of visit t + 2.
  __device__ Visit current(int t) const { return decode(ring_[t % kRing]); }
  // Visit t + 1 (meaningless when t + 1 == num_visits()), over the same span.
  __device__ Visit next(int t) const { return decode(ring_[(t + 1) % kRing]); }

  // Thread 0 starts copying entry t + 2 into the ring; call between the top-of-visit
  // barrier of visit t and the commit of that visit's prefetch group.
  __device__ void prefetch(const BwdParams& p, int t) const {
    if (threadIdx.x == 0 && t + 2 < num_visits_) {
      const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring_ + (t + 2) % kRing));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(entry_address(p, t + 2)));
    }
  }

 private:
  // Formed from the kernel parameter at each use rather than kept as a 64-bit
  // pointer for the kernel's lifetime.
  __device__ const uint2* entry_address(const BwdParams& p, int t) const {
    return reinterpret_cast<const uint2*>(p.visits) + first_visit_ + t;
  }
  __device__ static Visit decode(uint2 raw) { return decode_visit(VisitEntry{raw.x, raw.y}); }

  uint2* ring_;
  int first_visit_;
  int num_visits_;
  int bh_;
};

}  // namespace dashc
