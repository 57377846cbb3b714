// ${ banner }
//
// Host harness: reads a schedule file, makes seeded random inputs, runs the
// reference forward (O, LSE), the generated backward and an FP32 reference
// backward, and prints exactly one JSON line on stdout:
// correctness (relative L2 error of dQ, dK, dV), a poison check that every output
// element was written, bitwise repeatability, and CUDA-event timings.
// Diagnostics go to stderr. Exit codes: 0 ok, 1 a check failed or a semaphore wait
// timed out, 2 bad arguments or schedule file, 3 no usable GPU.
//
// The FP32 reference runs by default when max(seqlen_q, seqlen_k) <= 4096;
// --check forces it, --no-check skips it.
//
// --placement-trials N (a diagnostic): after the timing, the main kernel is timed
// again N times, the even trials with the dQ accumulator in a freshly allocated
// buffer behind a pad of a different size, the odd ones with the first buffer
// again (which separates where the buffer lies from when the trial runs), to
// show whether its time depends on where that buffer lies (bench/NOTES.md,
// runs 133-137: one schedule's main kernel measured 4.9 and 5.4 ms at the same
// clock from one run to the next).
//
// Every main kernel timed alone is listed in order ("main_reps": ms, SM clock,
// board power, limit flags, read from NVML while it ran), every whole backward
// too ("total_reps": ms). --idle-ms MS leaves the GPU idle that long before the
// warmup, so that the timed series starts from a GPU at rest: its power
// controller lets the first tens of milliseconds of load run about 10% faster
// than sustained load (bench/NOTES.md, run 138).
//
// Usage: harness SCHEDULE_FILE [--reps N] [--warmup N] [--repeat-runs N]
//                [--check | --no-check] [--seed S]
//                [--spin-timeout-ms MS] [--trace PATH] [--placement-trials N] [--idle-ms MS]
//                [--batch B --heads H --seqlen-q SQ --seqlen-k SK]  (asserted against the file)

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bwd_params.h"
#include "schedule.cuh"
#if DASHC_MAINLOOP_SM90
#include "bwd_mainloop_sm90.cuh"
#else
#include "bwd_mainloop_sm80.cuh"
#endif
#include "bwd_preprocess.cuh"
#include "fwd_reference.cuh"

using namespace dashc;

#if DASHC_MAINLOOP_SM90
using MainLoop = sm90::MainLoop<sm90::BwdConfig<config::kHeadDim, config::kBlockM, config::kBlockN, config::kIsCausal,
                                                config::kDeterministic, config::kTrace>>;
static constexpr const char* kMainLoopName = "sm90";
#else
using MainLoop = Sm80MainLoop<BwdConfig<config::kHeadDim, config::kBlockM, config::kBlockN, config::kIsCausal,
                                        config::kDeterministic, config::kTrace>>;
static constexpr const char* kMainLoopName = "sm80";
#endif

static constexpr int kExitOk = 0, kExitCheckFailed = 1, kExitBadInput = 2, kExitNoGpu = 3;

#define CHECK_CUDA(call)                                                                             \
  do {                                                                                               \
    const cudaError_t err_ = (call);                                                                 \
    if (err_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "cuda error: %s (%s) at %s:%d\n", cudaGetErrorString(err_), #call, __FILE__, \
                   __LINE__);                                                                        \
      std::exit(kExitCheckFailed);                                                                   \
    }                                                                                                \
  } while (0)

// After a launch: configuration errors now, execution errors at the next sync.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

[[noreturn]] static void fail_input(const char* msg, const std::string& detail = "") {
  std::fprintf(stderr, "bad input: %s%s%s\n", msg, detail.empty() ? "" : ": ", detail.c_str());
  std::exit(kExitBadInput);
}

// ---------------------------------------------------------------------------
// Schedule file (format: docs/schedule-data.md).
// ---------------------------------------------------------------------------

struct ScheduleFile {
  std::string name;
  int batch = 0, heads = 0, kv_heads = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0, block_m = 0, block_n = 0;
  std::string mask;
  int persistent_ctas = 0;  // 0: in-order launch (a CTA per unit); P > 0: persistent grid of P CTAs
  std::vector<UnitEntry> units;
  std::vector<VisitEntry> visits;
  bool kv_uncovered = false;  // some (bh, kv tile) has no visit: its dK/dV must be zeroed
  bool q_uncovered = false;   // some (bh, q tile) has no visit: its dQ accumulator must be zeroed
  // Split columns (a KV tile's visits in more than one unit): per visit the
  // partial slot of a partial run's last visit (-1 elsewhere), and the split
  // tiles with their slots, in launch order (kVisitPartialKv).
  std::vector<int> dkv_slot_of_visit;
  std::vector<SplitKvTile> split_tiles;
  int dkv_slots = 0;
};

static ScheduleFile read_schedule(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) fail_input("cannot open schedule file", path);
  ScheduleFile s;
  char word[256], mask[64], name[256];
  int version = 0;
  if (std::fscanf(f, "%255s %d", word, &version) != 2 || std::strcmp(word, "dashc-schedule") != 0 || version != 2)
    fail_input("schedule file does not start with 'dashc-schedule 2'", path);
  if (std::fscanf(f, " name %255s", name) != 1) fail_input("schedule file: missing 'name' line");
  s.name = name;
  if (std::fscanf(f, " problem %d %d %d %d %d %d %d %d %63s", &s.batch, &s.heads, &s.kv_heads, &s.seqlen_q,
                  &s.seqlen_k, &s.head_dim, &s.block_m, &s.block_n, mask) != 9)
    fail_input("schedule file: malformed 'problem' line");
  s.mask = mask;
  char launch[64];
  if (std::fscanf(f, " launch %63s", launch) != 1) fail_input("schedule file: missing 'launch' line");
  if (std::strcmp(launch, "persistent") == 0) {
    if (std::fscanf(f, "%d", &s.persistent_ctas) != 1 || s.persistent_ctas <= 0)
      fail_input("schedule file: 'launch persistent' needs a CTA count");
  } else if (std::strcmp(launch, "in-order") != 0) {
    fail_input("schedule file: launch must be 'in-order' or 'persistent P'", launch);
  }
  long long num_units = 0, num_visits = 0;
  if (std::fscanf(f, " counts %lld %lld", &num_units, &num_visits) != 2) fail_input("schedule file: malformed 'counts' line");
  if (s.batch <= 0 || s.heads <= 0 || s.seqlen_q <= 0 || s.seqlen_k <= 0) fail_input("schedule file: empty problem");
  if (num_units <= 0 || num_units > (1ll << 31) - 1 || num_visits < 0 || num_visits > (1ll << 31) - 1)
    fail_input("schedule file: unit or visit count out of range");

  const int m_tiles = (s.seqlen_q + s.block_m - 1) / std::max(s.block_m, 1);
  const int n_tiles = (s.seqlen_k + s.block_n - 1) / std::max(s.block_n, 1);
  if (m_tiles > 65535 || n_tiles > 65535) fail_input("schedule file: more than 65535 tiles per sequence");
  s.units.reserve(num_units);
  s.visits.reserve(num_visits);
  const long long bh_count = (long long)s.batch * s.heads;
  std::vector<int> rank_count((size_t)bh_count * m_tiles, 0);
  std::vector<int> rank_seen;  // filled below, once the counts are known
  std::vector<unsigned char> kv_seen((size_t)bh_count * n_tiles, 0);
  struct Raw { int kv, q, rank, bh; };
  std::vector<Raw> raw;
  raw.reserve(num_visits);
  for (long long u = 0; u < num_units; ++u) {
    long long bh = -1, n = -1;
    if (std::fscanf(f, " u %lld %lld", &bh, &n) != 2) fail_input("schedule file: malformed unit line", std::to_string(u));
    if (bh < 0 || bh >= bh_count) fail_input("schedule file: unit bh out of range", std::to_string(u));
    if (n < 0 || (long long)raw.size() + n > num_visits) fail_input("schedule file: visit count mismatch", std::to_string(u));
    UnitEntry e{(int)raw.size(), (int)n, (int)bh, 0};
    s.units.push_back(e);
    int prev_kv = -1;
    std::vector<int> finished_kv;
    for (long long t = 0; t < n; ++t) {
      int kv, q, rank;
      if (std::fscanf(f, "%d %d %d", &kv, &q, &rank) != 3) fail_input("schedule file: malformed visit", std::to_string(u));
      if (kv < 0 || kv >= n_tiles || q < 0 || q >= m_tiles || rank < 0 || rank > 65535)
        fail_input("schedule file: visit out of range", "unit " + std::to_string(u));
      if (kv != prev_kv) {
        // A unit's visits of one KV tile must be contiguous: dK/dV live in
        // registers only between the first and the last of them.
        if (std::find(finished_kv.begin(), finished_kv.end(), kv) != finished_kv.end())
          fail_input("schedule file: a unit returns to a KV tile it left", "unit " + std::to_string(u));
        if (prev_kv >= 0) finished_kv.push_back(prev_kv);
        prev_kv = kv;
      }
      rank_count[(size_t)bh * m_tiles + q]++;
      kv_seen[(size_t)bh * n_tiles + kv] = 1;
      raw.push_back(Raw{kv, q, rank, (int)bh});
    }
  }
  if ((long long)raw.size() != num_visits) fail_input("schedule file: fewer visits than 'counts' says");
  if (std::fscanf(f, " %255s", word) != 1 || std::strcmp(word, "end") != 0) fail_input("schedule file: missing 'end' line");
  std::fclose(f);

  // The ranks of every dQ tile must be exactly 0 .. count - 1; anything else would
  // leave some CTA waiting for a rank that never comes.
  std::vector<size_t> rank_offset(rank_count.size() + 1, 0);
  for (size_t i = 0; i < rank_count.size(); ++i) rank_offset[i + 1] = rank_offset[i] + rank_count[i];
  rank_seen.assign(raw.size(), 0);
  for (const Raw& r : raw) {
    const size_t tile = (size_t)r.bh * m_tiles + r.q;
    if (r.rank >= rank_count[tile]) fail_input("schedule file: rank not below the tile's contribution count");
    int& slot = rank_seen[rank_offset[tile] + r.rank];
    if (slot) fail_input("schedule file: a rank is used twice on one dQ tile");
    slot = 1;
  }
  for (unsigned char seen : kv_seen) s.kv_uncovered |= !seen;
  for (int count : rank_count) s.q_uncovered |= count == 0;

  // Runs per (bh, kv tile): more than one makes a split column, whose runs each
  // write an FP32 partial. Slots are numbered tile by tile (in the order of the
  // tiles' first runs), each tile's parts in launch order.
  std::vector<int> runs_of_tile((size_t)bh_count * n_tiles, 0);
  for (const UnitEntry& u : s.units) {
    for (int t = 0; t < u.num_visits; ++t) {
      const Raw& r = raw[u.first_visit + t];
      if (t + 1 == u.num_visits || raw[u.first_visit + t + 1].kv != r.kv) runs_of_tile[(size_t)r.bh * n_tiles + r.kv]++;
    }
  }
  std::vector<int> split_index((size_t)bh_count * n_tiles, -1);  // into s.split_tiles
  std::vector<int> parts_placed;
  s.dkv_slot_of_visit.assign(raw.size(), -1);

  // Visit entries with first/last-of-KV (and partial) flags.
  for (const UnitEntry& u : s.units) {
    for (int t = 0; t < u.num_visits; ++t) {
      const Raw& r = raw[u.first_visit + t];
      uint32_t flags = 0;
      if (t == 0 || raw[u.first_visit + t - 1].kv != r.kv) flags |= kVisitFirstOfKv;
      if (t + 1 == u.num_visits || raw[u.first_visit + t + 1].kv != r.kv) {
        flags |= kVisitLastOfKv;
        const size_t tile = (size_t)r.bh * n_tiles + r.kv;
        if (runs_of_tile[tile] > 1) {
          flags |= kVisitPartialKv;
          if (split_index[tile] < 0) {
            split_index[tile] = (int)s.split_tiles.size();
            s.split_tiles.push_back(SplitKvTile{r.bh, r.kv, s.dkv_slots, runs_of_tile[tile]});
            parts_placed.push_back(0);
            s.dkv_slots += runs_of_tile[tile];
          }
          const int i = split_index[tile];
          s.dkv_slot_of_visit[u.first_visit + t] = s.split_tiles[i].first_slot + parts_placed[i]++;
        }
      }
      s.visits.push_back(VisitEntry{(uint32_t)r.kv | ((uint32_t)r.q << 16), (uint32_t)r.rank | (flags << 16)});
    }
  }
  if (s.split_tiles.empty()) s.dkv_slot_of_visit.clear();
  return s;
}

// ---------------------------------------------------------------------------
// Inputs: counter-based hash -> approximately normal bf16, so any element can be
// regenerated from (seed, tensor, index) alone.
// ---------------------------------------------------------------------------

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_normal_kernel(__nv_bfloat16* dst, size_t n, uint64_t seed, uint64_t tensor) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t r = splitmix64(seed * 0x100000001b3ull ^ (tensor << 56) ^ i);
    const float u1 = ((uint32_t)(r >> 40) + 1) * (1.0f / 16777217.0f);  // (0, 1]
    const float u2 = (uint32_t)(r & 0xffffff) * (1.0f / 16777216.0f);
    dst[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

// ---------------------------------------------------------------------------
// Host utilities.
// ---------------------------------------------------------------------------

static float bf16_to_float(uint16_t bits) {
  uint32_t x = (uint32_t)bits << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

struct ErrorStats {
  double rel_l2 = NAN;
  bool finite = true;
};

static ErrorStats rel_l2(const std::vector<uint16_t>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  ErrorStats e;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = bf16_to_float(got[i]);
    if (!std::isfinite(g)) e.finite = false;
    num += (g - want[i]) * (g - want[i]);
    den += (double)want[i] * want[i];
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

static bool all_finite(const std::vector<uint16_t>& v) {
  for (uint16_t x : v)
    if ((x & 0x7f80u) == 0x7f80u) return false;
  return true;
}

static constexpr uint16_t kPoison = 0xffffu;  // a NaN no kernel writes: bytes 0xff
static bool unpoisoned(const std::vector<uint16_t>& v) {
  for (uint16_t x : v)
    if (x == kPoison) return false;
  return true;
}

static double median(std::vector<float> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static std::string json_num(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// The SM clock, the board power and the clock-event (throttle) reasons while the
// timed runs execute, read from NVML. NVML comes with the driver
// (libnvidia-ml.so.1), not with the toolkit that builds this harness, so it is
// opened at run time and its few entry points are declared here (their C
// signatures, stable across NVML versions). Without it the harness reports no
// clocks and times as before.
class ClockSampler {
 public:
  // One reading taken while a timed kernel still ran.
  struct Reading {
    unsigned mhz = 0;
    double watts = NAN;  // NaN where NVML gives no power reading
    bool limited = false;
  };
  explicit ClockSampler(int cuda_device) {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib_, "nvmlDeviceGetPowerUsage"));
    energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
    reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!reasons_)  // the name before NVML 12.2
      reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
          dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    shutdown_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown"));
    if (!init || !by_bus || !clock_ || !shutdown_ || init() != 0) return;
    initialized_ = true;
    // The CUDA device's PCI address names the same GPU in NVML whatever CUDA_VISIBLE_DEVICES says.
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess || by_bus(bus, &device_) != 0) device_ = nullptr;
  }
  ~ClockSampler() {
    if (initialized_) shutdown_();
    if (lib_) dlclose(lib_);
  }
  // A reading of the kernels that `done` ends, or false if the GPU had finished them
  // by the time the reading was taken: a short backward can be over before NVML
  // answers, and an idle GPU's clock says nothing about the run.
  bool read(cudaEvent_t done, Reading& r) {
    if (!device_) return false;
    if (clock_(device_, /* NVML_CLOCK_SM */ 1, &r.mhz) != 0) return false;
    unsigned milliwatts = 0;
    r.watts = power_ && power_(device_, &milliwatts) == 0 ? milliwatts * 1e-3 : NAN;
    unsigned long long why = 0;
    // Power or thermal limits: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
    constexpr unsigned long long kLimited = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
    r.limited = reasons_ && reasons_(device_, &why) == 0 && (why & kLimited);
    const cudaError_t state = cudaEventQuery(done);
    // The runtime may keep the "not ready" answer as its last error, and the next launch's
    // cudaGetLastError check would take it for a failure (PyTorch clears it the same way).
    if (state == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return state == cudaErrorNotReady;
  }
  // The board's energy counter (mJ since the driver loaded), or false where NVML has none.
  // NVML integrates sampled power (not every millisecond is sampled), so only the
  // difference over a steady series of seconds says much.
  bool energy_mj(unsigned long long& mj) const { return device_ && energy_ && energy_(device_, &mj) == 0; }
  // One sample of the timed backward whose end `done` records, kept for "clocks".
  void sample(cudaEvent_t done) {
    Reading r;
    if (!read(done, r)) return;
    sm_mhz_.push_back(static_cast<float>(r.mhz));
    if (std::isfinite(r.watts)) watts_.push_back(static_cast<float>(r.watts));
    if (r.limited) ++limited_;
  }
  // The JSON value of "clocks": null without samples.
  std::string json() const {
    if (sm_mhz_.empty()) return "null";
    const float lowest = *std::min_element(sm_mhz_.begin(), sm_mhz_.end());
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "{\"sm_mhz_median\":%.0f,\"sm_mhz_min\":%.0f,\"samples\":%zu,\"limited\":%d,\"power_w_median\":%s}",
                  median(sm_mhz_), lowest, sm_mhz_.size(), limited_,
                  json_num(watts_.empty() ? NAN : median(watts_)).c_str());
    return buf;
  }

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  bool initialized_ = false;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
  int (*shutdown_)() = nullptr;
  std::vector<float> sm_mhz_, watts_;
  int limited_ = 0;
};

template <class T>
static T* device_alloc(size_t count) {
  T* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  return p;
}

template <class T>
static std::vector<T> to_host(const T* d, size_t count) {
  std::vector<T> h(count);
  CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

struct Args {
  const char* schedule = nullptr;
  int reps = 20, warmup = 3, repeat_runs = 5;
  int check = -1;  // -1: default (seqlen <= 4096), 0: off, 1: forced
  uint64_t seed = 1;
  double spin_timeout_ms = 2000.0;
  const char* trace = nullptr;
  const char* dump = nullptr;  // directory for dq.bf16, dk.bf16, dv.bf16 (compared across variants by dashc)
  int placement_trials = 0;    // see the header comment
  int idle_ms = 0;             // see the header comment
  int batch = -1, heads = -1, seqlen_q = -1, seqlen_k = -1;
};

static Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) fail_input("missing value after", s);
      return argv[++i];
    };
    if (s == "--reps") a.reps = std::atoi(value());
    else if (s == "--warmup") a.warmup = std::atoi(value());
    else if (s == "--repeat-runs") a.repeat_runs = std::atoi(value());
    else if (s == "--check" || s == "--force-check") a.check = 1;
    else if (s == "--no-check") a.check = 0;
    else if (s == "--seed") a.seed = std::strtoull(value(), nullptr, 10);
    else if (s == "--spin-timeout-ms") a.spin_timeout_ms = std::atof(value());
    else if (s == "--trace") a.trace = value();
    else if (s == "--dump") a.dump = value();
    else if (s == "--placement-trials") a.placement_trials = std::atoi(value());
    else if (s == "--idle-ms") a.idle_ms = std::atoi(value());
    else if (s == "--batch") a.batch = std::atoi(value());
    else if (s == "--heads") a.heads = std::atoi(value());
    else if (s == "--seqlen-q") a.seqlen_q = std::atoi(value());
    else if (s == "--seqlen-k") a.seqlen_k = std::atoi(value());
    else if (!s.empty() && s[0] == '-') fail_input("unknown option", s);
    else if (!a.schedule) a.schedule = argv[i];
    else fail_input("more than one schedule file given", s);
  }
  if (!a.schedule) fail_input("usage: harness SCHEDULE_FILE [options]");
  if (a.reps < 1 || a.repeat_runs < 2 || a.warmup < 0) fail_input("--reps >= 1, --repeat-runs >= 2, --warmup >= 0");
  if (a.placement_trials < 0 || a.placement_trials > 64) fail_input("--placement-trials takes 0 to 64");
  if (a.idle_ms < 0 || a.idle_ms > 60000) fail_input("--idle-ms takes 0 to 60000");
  return a;
}

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);

  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "no usable CUDA device\n");
    return kExitNoGpu;
  }

  const ScheduleFile sf = read_schedule(args.schedule);
  const std::string expected_mask = config::kIsCausal ? "causal" : "full";
  if (sf.head_dim != config::kHeadDim || sf.block_m != config::kBlockM || sf.block_n != config::kBlockN ||
      sf.mask != expected_mask) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "file has head_dim=%d block_m=%d block_n=%d mask=%s, this build has %d %d %d %s",
                  sf.head_dim, sf.block_m, sf.block_n, sf.mask.c_str(), config::kHeadDim, config::kBlockM,
                  config::kBlockN, expected_mask.c_str());
    fail_input("schedule was made for another configuration", buf);
  }
  if (sf.kv_heads != sf.heads) fail_input("grouped-query attention (kv_heads != heads) is not supported yet");
  if ((args.batch >= 0 && args.batch != sf.batch) || (args.heads >= 0 && args.heads != sf.heads) ||
      (args.seqlen_q >= 0 && args.seqlen_q != sf.seqlen_q) || (args.seqlen_k >= 0 && args.seqlen_k != sf.seqlen_k))
    fail_input("shape options disagree with the schedule file");

  const int B = sf.batch, H = sf.heads, SQ = sf.seqlen_q, SK = sf.seqlen_k, D = config::kHeadDim;
  const int BH = B * H;
  const int m_tiles = (SQ + config::kBlockM - 1) / config::kBlockM;
  const int n_tiles = (SK + config::kBlockN - 1) / config::kBlockN;
  const int sq_pad = m_tiles * config::kBlockM;
  const bool do_check = args.check == 1 || (args.check == -1 && std::max(SQ, SK) <= 4096);

  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (sf.persistent_ctas > 0 && !MainLoop::kPersistent)
    fail_input("the persistent launch needs the sm90 main loop; this build runs the portable one");
  if (!sf.split_tiles.empty() && !MainLoop::kSplitColumns)
    fail_input("split columns (a KV tile's visits in more than one unit) need the sm90 main loop; this build runs the portable one");
  // The sm90 postprocess grid is (q tiles, batch * heads + the fix-up rows), and a
  // grid's y extent is at most 65535. Its fix-up rows: one CTA of 256 threads per
  // 1024 floats of each split tile's partial slot.
  if (!sf.split_tiles.empty()) {
    const int m_tiles_ = (sf.seqlen_q + sf.block_m - 1) / sf.block_m;
    const long long fixup_blocks = (long long)sf.split_tiles.size() * (MainLoop::kDkvPartialFloats / 1024);
    if ((long long)sf.batch * sf.heads + (fixup_blocks + m_tiles_ - 1) / m_tiles_ > 65535)
      fail_input("too many (batch, head) pairs and split tiles for the postprocess grid (65535 rows at most)");
  }
  // Every CTA of a persistent grid must be resident at once (one per SM), or a
  // CTA could wait for a rank owed by one that never starts.
  if (sf.persistent_ctas > prop.multiProcessorCount)
    fail_input("persistent grid larger than the GPU's SM count",
               std::to_string(sf.persistent_ctas) + " > " + std::to_string(prop.multiProcessorCount));
  const int grid = sf.persistent_ctas > 0 ? std::min<int>(sf.persistent_ctas, (int)sf.units.size()) : (int)sf.units.size();

  const size_t nq = (size_t)B * SQ * H * D, nk = (size_t)B * SK * H * D;
  __nv_bfloat16 *q = device_alloc<__nv_bfloat16>(nq), *k = device_alloc<__nv_bfloat16>(nk),
                *v = device_alloc<__nv_bfloat16>(nk), *o = device_alloc<__nv_bfloat16>(nq),
                *dout = device_alloc<__nv_bfloat16>(nq), *dq = device_alloc<__nv_bfloat16>(nq),
                *dk = device_alloc<__nv_bfloat16>(nk), *dv = device_alloc<__nv_bfloat16>(nk);
  float* lse = device_alloc<float>((size_t)BH * sq_pad);
  float* dsum = device_alloc<float>((size_t)BH * sq_pad);
  float* lse_log2 = device_alloc<float>((size_t)BH * sq_pad);
  __nv_bfloat16* row_stats_mma = MainLoop::kRowStatsInMma ? device_alloc<__nv_bfloat16>((size_t)BH * sq_pad * 8) : nullptr;
  const size_t dq_accum_floats = (size_t)BH * sq_pad * dq_accum_row_stride(D);
  float* dq_accum = device_alloc<float>(dq_accum_floats);
  int* sems = device_alloc<int>((size_t)BH * m_tiles);
  UnitEntry* d_units = device_alloc<UnitEntry>(sf.units.size());
  VisitEntry* d_visits = device_alloc<VisitEntry>(sf.visits.size());
  SpinError* d_err = device_alloc<SpinError>(1);
  int* d_dkv_slot_of_visit = nullptr;
  float* d_dkv_partial = nullptr;
  SplitKvTile* d_split_tiles = nullptr;
  if (!sf.split_tiles.empty()) {
    d_dkv_slot_of_visit = device_alloc<int>(sf.dkv_slot_of_visit.size());
    d_dkv_partial = device_alloc<float>((size_t)sf.dkv_slots * MainLoop::kDkvPartialFloats);
    d_split_tiles = device_alloc<SplitKvTile>(sf.split_tiles.size());
    CHECK_CUDA(cudaMemcpy(d_dkv_slot_of_visit, sf.dkv_slot_of_visit.data(), sf.dkv_slot_of_visit.size() * sizeof(int),
                          cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_split_tiles, sf.split_tiles.data(), sf.split_tiles.size() * sizeof(SplitKvTile),
                          cudaMemcpyHostToDevice));
  }
  CHECK_CUDA(cudaMemcpy(d_units, sf.units.data(), sf.units.size() * sizeof(UnitEntry), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_visits, sf.visits.data(), sf.visits.size() * sizeof(VisitEntry), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_err, 0, sizeof(SpinError)));
  unsigned long long* d_trace = nullptr;
  if (config::kTrace) {
    // 4 stamps per unit, then 4 per visit (layout: docs/trace-format.md).
    d_trace = device_alloc<unsigned long long>((sf.units.size() + sf.visits.size()) * 4);
    CHECK_CUDA(cudaMemset(d_trace, 0, (sf.units.size() + sf.visits.size()) * 4 * sizeof(unsigned long long)));
  }

  fill_normal_kernel<<<1024, 256>>>(q, nq, args.seed, 1);
  CHECK_LAUNCH();
  fill_normal_kernel<<<1024, 256>>>(k, nk, args.seed, 2);
  CHECK_LAUNCH();
  fill_normal_kernel<<<1024, 256>>>(v, nk, args.seed, 3);
  CHECK_LAUNCH();
  fill_normal_kernel<<<1024, 256>>>(dout, nq, args.seed, 4);
  CHECK_LAUNCH();

  // Forward: O, LSE (and O in FP32 for the reference D).
  const ref::RefShape rs{B, H, SQ, SK, sq_pad, config::kIsCausal, 1.0f / std::sqrt((float)D)};
  float* o32 = do_check ? device_alloc<float>(nq) : nullptr;
  {
    constexpr int smem = ref::forward_smem_bytes<config::kHeadDim>();
    CHECK_CUDA(cudaFuncSetAttribute(ref::ref_forward_kernel<config::kHeadDim>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid((SQ + ref::kTile - 1) / ref::kTile, BH);
    ref::ref_forward_kernel<config::kHeadDim><<<grid, ref::kThreads, smem>>>(rs, q, k, v, o, o32, lse);
    CHECK_LAUNCH();
    ref::ref_pad_lse_kernel<<<dim3((sq_pad + 255) / 256, BH), 256>>>(rs, lse);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
  }

  BwdParams p{};
  p.batch = B;
  p.heads = H;
  p.seqlen_q = SQ;
  p.seqlen_k = SK;
  p.m_tiles = m_tiles;
  p.n_tiles = n_tiles;
  p.seqlen_q_pad = sq_pad;
  p.softmax_scale = 1.0f / std::sqrt((float)D);
  p.softmax_scale_log2 = p.softmax_scale * 1.4426950408889634f;
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.dout = dout;
  p.lse = lse;
  p.dsum = dsum;
  p.skip_dq_accum_zeroing = MainLoop::kRankZeroStores && !sf.q_uncovered;
  p.lse_log2 = lse_log2;
  p.row_stats_mma = row_stats_mma;
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.dq_accum = dq_accum;
  p.dq_semaphore = sems;
  p.units = d_units;
  p.visits = d_visits;
  p.num_units = (int)sf.units.size();
  p.spin_timeout_ns = (unsigned long long)(args.spin_timeout_ms * 1e6);
  p.spin_error = d_err;
  p.trace = d_trace;
  p.dkv_slot_of_visit = d_dkv_slot_of_visit;
  p.dkv_partial = d_dkv_partial;
  p.split_kv_tiles = d_split_tiles;
  p.num_split_kv_tiles = (int)sf.split_tiles.size();

  CHECK_CUDA(cudaFuncSetAttribute(MainLoop::kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, MainLoop::kSmemBytes));
  cudaFuncAttributes main_attr;
  CHECK_CUDA(cudaFuncGetAttributes(&main_attr, MainLoop::kernel()));
  // The TMA descriptors (Hopper main loop) are built once: they describe the buffers, not a run.
  MainLoop::Params main_params = MainLoop::prepare(p);  // rebuilt by --placement-trials

  cudaEvent_t ev0, ev1;
  CHECK_CUDA(cudaEventCreate(&ev0));
  CHECK_CUDA(cudaEventCreate(&ev1));

  auto launch_pre = [&]() {
    // A KV tile that no unit visits gets no dK/dV from the main kernel: zero them
    // here (counted in the whole-backward time; never the case for full/causal).
    if (sf.kv_uncovered) {
      CHECK_CUDA(cudaMemsetAsync(dk, 0, nk * sizeof(__nv_bfloat16)));
      CHECK_CUDA(cudaMemsetAsync(dv, 0, nk * sizeof(__nv_bfloat16)));
    }
    bwd_preprocess_kernel<config::kHeadDim><<<dim3((sq_pad + kPreprocessRows - 1) / kPreprocessRows, BH), kPreprocessThreads>>>(p);
    CHECK_LAUNCH();
  };
  auto launch_main = [&]() {
    MainLoop::launch(main_params, grid, 0);
    CHECK_LAUNCH();
  };
  auto launch_post = [&]() {
    MainLoop::launch_postprocess(p, 0);
    CHECK_LAUNCH();
  };
  // Returns false (after printing the error) when a semaphore wait gave up.
  SpinError spin{};
  auto spin_ok = [&]() {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(&spin, d_err, sizeof spin, cudaMemcpyDeviceToHost));
    return spin.code == 0;
  };

  // ---- Poisoned, repeated runs: written-everywhere check and bitwise repeatability.
  std::vector<uint16_t> first_dq, first_dk, first_dv;
  bool poison_ok = true, repeatable = true, finite = true, timed_out = false;
  for (int run = 0; run < args.repeat_runs && !timed_out; ++run) {
    CHECK_CUDA(cudaMemset(dq, 0xff, nq * 2));
    CHECK_CUDA(cudaMemset(dk, 0xff, nk * 2));
    CHECK_CUDA(cudaMemset(dv, 0xff, nk * 2));
    // Where nothing zeroes the accumulator, every q tile's rank-0 partial must
    // overwrite it: NaN there would show in dQ (finite and FP32 checks).
    if (p.skip_dq_accum_zeroing) {
      CHECK_CUDA(cudaMemset(dq_accum, 0xff, dq_accum_floats * sizeof(float)));
    }
    // Every split column's part must write its whole partial slot: NaN left in one
    // would show in dK/dV (finite and FP32 checks).
    if (d_dkv_partial) {
      CHECK_CUDA(cudaMemset(d_dkv_partial, 0xff, (size_t)sf.dkv_slots * MainLoop::kDkvPartialFloats * sizeof(float)));
    }
    launch_pre();
    launch_main();
    launch_post();
    if (!spin_ok()) {
      timed_out = true;
      break;
    }
    auto hq = to_host(reinterpret_cast<uint16_t*>(dq), nq);
    auto hk = to_host(reinterpret_cast<uint16_t*>(dk), nk);
    auto hv = to_host(reinterpret_cast<uint16_t*>(dv), nk);
    poison_ok &= unpoisoned(hq) && unpoisoned(hk) && unpoisoned(hv);
    finite &= all_finite(hq) && all_finite(hk) && all_finite(hv);
    if (run == 0) {
      first_dq = std::move(hq);
      first_dk = std::move(hk);
      first_dv = std::move(hv);
    } else {
      repeatable &= std::memcmp(hq.data(), first_dq.data(), nq * 2) == 0 &&
                    std::memcmp(hk.data(), first_dk.data(), nk * 2) == 0 &&
                    std::memcmp(hv.data(), first_dv.data(), nk * 2) == 0;
    }
  }

  // ---- Reference backward and errors.
  ErrorStats e_dq, e_dk, e_dv;
  if (do_check && !timed_out) {
    float* dsum_ref = device_alloc<float>((size_t)BH * sq_pad);
    float* dq32 = device_alloc<float>(nq);
    float* dk32 = device_alloc<float>(nk);
    float* dv32 = device_alloc<float>(nk);
    ref::ref_rowdot_kernel<config::kHeadDim><<<dim3((SQ + 255) / 256, BH), 256>>>(rs, dout, o32, dsum_ref);
    CHECK_LAUNCH();
    constexpr int smem = ref::backward_smem_bytes<config::kHeadDim>();
    CHECK_CUDA(cudaFuncSetAttribute(ref::ref_dq_kernel<config::kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK_CUDA(cudaFuncSetAttribute(ref::ref_dkdv_kernel<config::kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    ref::ref_dq_kernel<config::kHeadDim><<<dim3((SQ + ref::kTile - 1) / ref::kTile, BH), ref::kThreads, smem>>>(
        rs, q, k, v, dout, lse, dsum_ref, dq32);
    CHECK_LAUNCH();
    ref::ref_dkdv_kernel<config::kHeadDim><<<dim3((SK + ref::kTile - 1) / ref::kTile, BH), ref::kThreads, smem>>>(
        rs, q, k, v, dout, lse, dsum_ref, dk32, dv32);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    e_dq = rel_l2(first_dq, to_host(dq32, nq));
    e_dk = rel_l2(first_dk, to_host(dk32, nk));
    e_dv = rel_l2(first_dv, to_host(dv32, nk));
    CHECK_CUDA(cudaFree(dsum_ref));
    CHECK_CUDA(cudaFree(dq32));
    CHECK_CUDA(cudaFree(dk32));
    CHECK_CUDA(cudaFree(dv32));
  }

  // ---- Timing: the whole backward and the main kernel alone (its accumulator and
  // semaphores still need the preprocess before every run), one of each per
  // repetition, in alternating order, so that both see the same clocks. Timed as
  // two loops one after the other, the second loop's fastest main kernel was often
  // slower than the first loop's fastest whole backward, which contains it
  // (bench/NOTES.md, run 82).
  std::vector<float> t_total, t_main;
  ClockSampler clocks(0);
  // Every main kernel timed alone, in order, with an NVML reading taken while it ran
  // (where it was still running once NVML answered): "main_reps" in the JSON, to
  // show how its time moves within a process and with the power drawn.
  struct MainRep {
    float ms;
    bool have;  // whether `reading` was taken while the kernel ran
    ClockSampler::Reading reading;
  };
  std::vector<MainRep> main_reps;
  std::string energy_json = "null";  // the timed series' energy, where NVML reads it
  // One main kernel alone, from its own start (the preprocess before it, the postprocess after it), in ms.
  auto main_alone_ms = [&] {
    launch_pre();
    CHECK_CUDA(cudaEventRecord(ev0));
    launch_main();
    CHECK_CUDA(cudaEventRecord(ev1));
    launch_post();
    MainRep rep{};
    rep.have = clocks.read(ev1, rep.reading);
    CHECK_CUDA(cudaEventSynchronize(ev1));
    CHECK_CUDA(cudaEventElapsedTime(&rep.ms, ev0, ev1));
    main_reps.push_back(rep);
    return rep.ms;
  };
  if (!timed_out) {
    if (args.idle_ms > 0) {
      CHECK_CUDA(cudaDeviceSynchronize());
      std::this_thread::sleep_for(std::chrono::milliseconds(args.idle_ms));
    }
    for (int i = 0; i < args.warmup; ++i) {
      launch_pre();
      launch_main();
      launch_post();
    }
    auto time_total = [&] {
      CHECK_CUDA(cudaEventRecord(ev0));
      launch_pre();
      launch_main();
      launch_post();
      CHECK_CUDA(cudaEventRecord(ev1));
      clocks.sample(ev1);  // the launches return at once: the GPU is running this backward now
      CHECK_CUDA(cudaEventSynchronize(ev1));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev0, ev1));
      t_total.push_back(ms);
    };
    auto time_main = [&] { t_main.push_back(main_alone_ms()); };
    // The board's energy over the timed series (every repetition is two whole
    // backwards: the timed one and the one around the main kernel alone), for the
    // energy per backward: under sustained load the board runs at its power limit,
    // and the energy a backward takes sets its speed there (bench/NOTES.md, runs
    // 138-142).
    CHECK_CUDA(cudaDeviceSynchronize());
    unsigned long long mj_start = 0, mj_end = 0;
    const bool have_energy = clocks.energy_mj(mj_start);
    const auto wall_start = std::chrono::steady_clock::now();
    for (int i = 0; i < args.reps; ++i) {
      if (i % 2 == 0) {
        time_total();
        time_main();
      } else {
        time_main();
        time_total();
      }
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (have_energy && clocks.energy_mj(mj_end) && mj_end >= mj_start) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "{\"joules\":%s,\"backwards\":%d,\"wall_s\":%s}",
                    json_num((mj_end - mj_start) * 1e-3).c_str(), 2 * args.reps, json_num(wall_s).c_str());
      energy_json = buf;
    }
    timed_out = !spin_ok();
  }

  // The outputs of the first poisoned run, raw little-endian bf16 in the layout of the
  // inputs ([batch, seqlen, heads, head_dim]): dashc compares the deterministic build
  // with the atomic one where the FP32 reference does not run (docs/gpu.md).
  if (args.dump && !timed_out) {
    const std::pair<const char*, const std::vector<uint16_t>*> outputs[] = {
        {"dq.bf16", &first_dq}, {"dk.bf16", &first_dk}, {"dv.bf16", &first_dv}};
    for (const auto& [name, data] : outputs) {
      const std::string path = std::string(args.dump) + "/" + name;
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) fail_input("cannot write output dump", path);
      const size_t written = std::fwrite(data->data(), sizeof(uint16_t), data->size(), f);
      if (std::fclose(f) != 0 || written != data->size()) fail_input("cannot write output dump", path);
    }
  }

  // ---- Diagnostic (--placement-trials): the main kernel against where the dQ accumulator lies.
  std::string placement_json = "[]";
  if (args.placement_trials > 0 && !timed_out) {
    std::vector<void*> held;  // kept until the end, so that every trial's buffer lies somewhere new
    placement_json = "[";
    for (int t = 0; t < args.placement_trials; ++t) {
      const size_t pad_bytes = t % 2 ? 0 : (size_t)(t + 1) * (1u << 20) + (size_t)t * (64u << 10);
      float* acc = dq_accum;
      if (pad_bytes > 0) {
        void* pad = nullptr;
        CHECK_CUDA(cudaMalloc(&pad, pad_bytes));
        held.push_back(pad);
        acc = device_alloc<float>(dq_accum_floats);
        held.push_back(acc);
      }
      p.dq_accum = acc;
      main_params = MainLoop::prepare(p);
      std::vector<float> trial_ms;
      for (int i = 0; i < args.reps; ++i) trial_ms.push_back(main_alone_ms());
      char entry[224];
      std::snprintf(entry, sizeof entry,
                    "%s{\"pad_bytes\":%zu,\"address\":\"0x%llx\",\"main_median\":%s,\"main_min\":%s}", t ? "," : "",
                    pad_bytes, (unsigned long long)(uintptr_t)acc, json_num(median(trial_ms)).c_str(),
                    json_num(*std::min_element(trial_ms.begin(), trial_ms.end())).c_str());
      placement_json += entry;
    }
    placement_json += "]";
    p.dq_accum = dq_accum;
    main_params = MainLoop::prepare(p);
    for (void* h : held) CHECK_CUDA(cudaFree(h));
  }

  // The stamps of the last timed run, in the text format of docs/trace-format.md. Written to a
  // temporary name and renamed, so that a failed write leaves no file that looks complete.
  if (config::kTrace && args.trace && !timed_out) {
    const size_t nu = sf.units.size();
    auto tr = to_host(d_trace, (nu + sf.visits.size()) * 4);
    const std::string tmp = std::string(args.trace) + ".partial";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) fail_input("cannot write trace file", tmp);
    std::fprintf(f, "dashc-trace 1\nname %s\nproblem %d %d %d %d %d %d %d %d %s\ncounts %zu %zu\nclock globaltimer-ns\n",
                 sf.name.c_str(), sf.batch, sf.heads, sf.kv_heads, sf.seqlen_q, sf.seqlen_k, sf.head_dim, sf.block_m,
                 sf.block_n, sf.mask.c_str(), nu, sf.visits.size());
    for (size_t u = 0; u < nu; ++u) {
      // The fourth slot, when a main loop fills it (sm90: the consumers' end of the unit), follows the count.
      std::fprintf(f, "u %llu %llu %llu %d", tr[u * 4 + 2], tr[u * 4], tr[u * 4 + 1], sf.units[u].num_visits);
      if (tr[u * 4 + 3] != 0) std::fprintf(f, " %llu", tr[u * 4 + 3]);
      std::fprintf(f, "\n");
      for (int t = 0; t < sf.units[u].num_visits; ++t) {
        const size_t i = (nu + (size_t)sf.units[u].first_visit + t) * 4;
        std::fprintf(f, "v %llu %llu %llu %llu\n", tr[i], tr[i + 1], tr[i + 2], tr[i + 3]);
      }
    }
    std::fprintf(f, "end\n");
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), args.trace) != 0) fail_input("cannot write trace file", args.trace);
  }

  std::string total_reps_json, main_reps_json;
  for (size_t i = 0; i < t_total.size(); ++i) total_reps_json += (i ? "," : "") + json_num(t_total[i]);
  for (const MainRep& m : main_reps) {
    const ClockSampler::Reading& r = m.reading;
    main_reps_json += std::string(main_reps_json.empty() ? "" : ",") + "[" + json_num(m.ms) + "," +
                      (m.have ? std::to_string(r.mhz) : "null") + "," + json_num(m.have ? r.watts : NAN) + "," +
                      (m.have ? (r.limited ? "1" : "0") : "null") + "]";
  }
  const double flops = 4.0 * B * H * (double)SQ * SK * D * (config::kIsCausal ? 0.5 : 1.0) * 2.5;
  const double ms_total = median(t_total), ms_main = median(t_main);
  const double tol = 2e-2;
  const bool errors_ok = !do_check || (e_dq.rel_l2 <= tol && e_dk.rel_l2 <= tol && e_dv.rel_l2 <= tol);
  // A non-deterministic build may differ run to run: that is reported, not failed.
  const bool pass = !timed_out && poison_ok && finite && errors_ok && (repeatable || !config::kDeterministic);

  static const char* const kKernelErrors[] = {"ok", "spin_timeout", "rank_overshoot", "smem_misaligned"};
  std::string status = timed_out ? kKernelErrors[spin.code >= 1 && spin.code <= 3 ? spin.code : 1]
                       : pass    ? "ok"
                                 : "check_failed";
  std::printf(
      "{\"schema_version\":1,\"tool\":\"${ tool }\",\"status\":\"%s\",\"schedule\":\"%s\",\"variant\":\"%s\","
      "\"device\":\"%s\",\"sm_count\":%d,\"main_loop\":\"%s\",\"launch\":\"%s\",\"grid\":%d,"
      "\"shape\":{\"batch\":%d,\"heads\":%d,\"seqlen_q\":%d,\"seqlen_k\":%d,\"head_dim\":%d,\"block_m\":%d,"
      "\"block_n\":%d,\"mask\":\"%s\"},"
      "\"deterministic\":%s,\"units\":%zu,\"visits\":%zu,\"reps\":%d,"
      "\"time_ms\":{\"total_median\":%s,\"main_median\":%s,\"total_min\":%s,\"main_min\":%s},"
      "\"tflops\":{\"total\":%s,\"main\":%s},"
      "\"check\":{\"ran\":%s,\"rel_l2_dq\":%s,\"rel_l2_dk\":%s,\"rel_l2_dv\":%s,\"tolerance\":%g},"
      "\"finite\":%s,\"poison_ok\":%s,\"repeatable\":%s,\"repeat_runs\":%d,"
      "\"main_kernel\":{\"registers\":%d,\"local_bytes\":%zu,\"smem_bytes\":%d},\"clocks\":%s,\"energy\":%s,\"placement_trials\":%s,"
      "\"main_reps\":[%s],\"total_reps\":[%s],"
      "\"spin_error\":{\"code\":%d,\"unit\":%d,\"bh\":%d,\"q_tile\":%d,\"wanted_rank\":%d,\"seen\":%d}}\n",
      status.c_str(), sf.name.c_str(), config::kVariantName, prop.name, prop.multiProcessorCount, kMainLoopName,
      sf.persistent_ctas > 0 ? "persistent" : "in-order", grid, B, H, SQ, SK, D, config::kBlockM, config::kBlockN, expected_mask.c_str(), config::kDeterministic ? "true" : "false", sf.units.size(),
      sf.visits.size(), args.reps, json_num(ms_total).c_str(), json_num(ms_main).c_str(),
      json_num(t_total.empty() ? NAN : *std::min_element(t_total.begin(), t_total.end())).c_str(),
      json_num(t_main.empty() ? NAN : *std::min_element(t_main.begin(), t_main.end())).c_str(),
      json_num(flops / (ms_total * 1e-3) / 1e12).c_str(), json_num(flops / (ms_main * 1e-3) / 1e12).c_str(),
      do_check && !timed_out ? "true" : "false", json_num(e_dq.rel_l2).c_str(), json_num(e_dk.rel_l2).c_str(),
      json_num(e_dv.rel_l2).c_str(), tol, finite ? "true" : "false", poison_ok ? "true" : "false",
      repeatable ? "true" : "false", args.repeat_runs, main_attr.numRegs, main_attr.localSizeBytes,
      MainLoop::kSmemBytes, clocks.json().c_str(), energy_json.c_str(), placement_json.c_str(), main_reps_json.c_str(), total_reps_json.c_str(), spin.code, spin.unit, spin.bh, spin.q_tile, spin.wanted_rank, spin.seen_value);
  if (timed_out && spin.code == 3) {
    std::fprintf(stderr, "error: the main kernel's shared memory starts at 0x%x, not 1 KiB aligned; nothing ran\n",
                 (unsigned)spin.seen_value);
    return kExitCheckFailed;
  }
  if (timed_out) {
    std::fprintf(stderr,
                 "error: %s: unit %d waited on dQ tile (bh %d, q %d) for rank %d, semaphore stayed at %d\n",
                 spin.code == 2 ? "semaphore passed the wanted rank" : "semaphore wait timed out", spin.unit, spin.bh,
                 spin.q_tile, spin.wanted_rank, spin.seen_value);
    return kExitCheckFailed;
  }
  if (!pass) {
    std::fprintf(stderr, "error: check failed (see the JSON line)\n");
    return kExitCheckFailed;
  }
  return kExitOk;
}
