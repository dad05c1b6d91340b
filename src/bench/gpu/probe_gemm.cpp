// bench/gpu/probe_gemm.cpp: the probe's "gemm" section: cuBLASLt GEMM throughput per precision
// (FP64, FP32 without tensor cores, TF32, FP16, BF16, FP8 E4M3, INT8) against the datasheet and
// against the peak computed from the SM clock seen while it ran.
//
// Per precision and shape:
//  1. Random inputs (gpu/fill.hpp). Candidates from cuBLASLt's heuristic (64 MiB workspace), up
//     to 8 per layout, for both the TN and the NN layout (gpu/gemm_lt.hpp) where both are
//     allowed (FP8 and INT8 are TN only), interleaved TN#0, NN#0, TN#1, NN#1, ...
//  2. Selection: each candidate gets 2 untimed GEMMs (the first loads its kernel; a candidate may
//     refuse to run) and then 5 back to back between two events; the first candidate also warms
//     the GPU up (warmup_ms) first. In full mode the 3 fastest are timed again (1 untimed + 5) in
//     the reverse of the order they first ran, and each finalist is judged on the mean of its
//     two runs: a clock that drifts during selection (the power controller stepping in after
//     ~70 ms of full load) then favours none of them. The selection time is bounded: once
//     selection_ms (3/4 of it when the finalists are re-timed) has passed, no further candidate
//     is started except the first one that runs in a layout not yet tried. Worst case: the
//     budget + one candidate (7 GEMMs) + the re-timing (18 GEMMs).
//  3. Validation before any figure: D poisoned to 0xFF bytes, one GEMM with the winner, 16 x 16
//     sampled outputs checked against a long-double CPU reference. A wrong answer is a failed
//     result with no figure.
//  4. Burst figure, probe.gemm.<p>[.<m>x<n>x<k>].tflops, measured the way torch benchmarks
//     measure: the GPU idles (250 ms at 8192^3, 100 ms at the other shapes) so the power
//     controller recovers, then 3 warm-up GEMMs and 20 GEMMs (quick mode: 10) queued back to
//     back, each one timed with its own pair of CUDA events; the median. NVML telemetry around
//     the warm-up and the timed GEMMs.
//  5. Sustained figure (8192^3, full mode only), probe.gemm.<p>.sustained.tflops: ~1.5 s of
//     back-to-back GEMMs in ~10 ms chunks timed with events, only the chunks that start after
//     the first 1.0 s kept, telemetry over that window only: what the card holds once the power
//     controller has settled (an H200's BF16 drops from ~780 to ~680 TFLOP/s after ~70 ms).
//
// Shapes: 8192^3 for every precision (the headline keys, quick mode too), and in full mode
// 4096^3 and the short-k 8192x8192x1024 (probe.gemm.<p>.<m>x<n>x<k>.tflops). A and B rotate
// over enough input sets that all sets together are at least 2x L2, so a GEMM never finds its
// inputs in L2 from its last run (8192^2 BF16 is 128 MiB per matrix: one set).
//
// Napkin math on an H200, per GEMM at 8192^3 (1.1 TFLOP): FP64 ~20 ms, FP32 ~22 ms, TF32 ~3 ms,
// FP16/BF16 ~1.4 ms, FP8/INT8 ~0.8 ms; the other two shapes are 1/8 of that.
// Full mode:
//   8192^3 selection: FP64/FP32 hit the 1.5 s budget (~8 candidates x 7 GEMMs + 18 re-timed)
//   ~1.5 s each; TF32 16 x 7 x 3 ms + 18 ~0.4 s; FP16/BF16 ~0.2 s; FP8/INT8 (8 TN) ~0.06 s:
//   ~4.4 s. Burst: 7 x 250 ms idle + 23 GEMMs (FP64 0.46 s, FP32 0.5 s, the rest < 0.07 s):
//   ~2.9 s. Sustained: 7 x ~1.55 s = ~10.9 s. NN validation copies all of A (up to 512 MiB):
//   ~0.2 s. 8192^3 total ~18.5 s.
//   Other shapes (14 cases): selection FP64/FP32 ~16 x 7 x 2.7 ms ~0.35 s, the rest < 0.05 s;
//   burst 100 ms idle + 23 GEMMs: FP64/FP32 ~0.16 s, the rest ~0.11 s: ~3.2 s for both shapes.
//   Allocation, fills and checks ~1.5 s. Cool-down after each sustained run 6 x 1.5 s = 9 s.
//   Section ~32 s (measured 20 s without the cool-down on the H200); at most ~36 s.
// Quick mode (8192^3 only; 4 candidates per layout, selection budget 0.15 s, no re-timing, no
//   sustained figure, 10 burst GEMMs): selection FP64/FP32 ~0.3 s each (one candidate per
//   layout always runs), TF32 ~0.17 s, the rest < 0.1 s: ~1 s; burst 7 x 250 ms idle + FP64/FP32
//   13 GEMMs ~0.55 s: ~2.4 s; setup and checks ~0.3 s. Section ~3.7 s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/format.hpp"
#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "gpu/check.hpp"
#include "gpu/cublaslt_lazy.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/fill.hpp"
#include "gpu/gemm_lt.hpp"
#include "gpu/host_numeric.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// Hopper's fastest cuBLASLt kernels want >= 32 MiB of workspace; 64 MiB leaves every candidate in.
constexpr std::size_t kWorkspaceBytes = 64 * kMiB;
// Left free for the CUDA context, cuBLASLt's own allocations and other sections.
constexpr std::size_t kHeadroomBytes = 256 * kMiB;
constexpr std::size_t kSampleRows = 16;  // 16 x 16 = 256 outputs checked per case
constexpr std::size_t kSampleCols = 16;
constexpr int kMaxInputSets = 4;

// Selection (see the top of the file).
constexpr int kSelectionWarmup = 2;  // untimed GEMMs per candidate (the first one loads it)
constexpr int kSelectionTimed = 5;   // timed GEMMs per candidate
constexpr int kFinalists = 3;        // re-timed in reverse order in full mode

// Burst protocol.
constexpr int kBurstWarmup = 3;
constexpr double kIdleMsHeadline = 250;  // the power controller recovers
constexpr double kIdleMsOther = 100;
constexpr double kCooldownMs = 1500;  // after a sustained run, before the next case (6 x 1.5 s)

// Sustained protocol (8192^3, full mode).
constexpr double kSustainedTotalMs = 1500;
constexpr double kSustainedDiscardMs = 1000;
constexpr double kSustainedChunkMs = 10;
constexpr int kMaxGemmsPerChunk = 64;
constexpr std::size_t kSustainedInFlight = 4;  // chunks queued ahead of the one waited for
constexpr std::size_t kMaxSustainedChunks = 4000;

constexpr gpu::GemmShape kHeadlineShape{8192, 8192, 8192};
constexpr gpu::GemmShape kExtraShapes[] = {{4096, 4096, 4096}, {8192, 8192, 1024}};

struct GemmCase {
  GemmPrecision precision;
  gpu::GemmShape shape;
  bool headline;  // 8192^3: the key without the shape, and the sustained figure
};

// How much time a case may spend.
struct Budget {
  int candidates_per_layout = 8;  // heuristic candidates asked for, per layout
  double warmup_ms = 30;          // before selection: clocks up to speed before candidates compete
  double selection_ms_headline = 1500;
  double selection_ms_other = 400;
  bool retime_finalists = true;
  int burst_gemms = 20;
  bool sustained = true;
};

Budget budget_for(bool quick) {
  Budget b;
  if (quick) {
    b.candidates_per_layout = 4;
    b.warmup_ms = 15;
    b.selection_ms_headline = 150;
    b.selection_ms_other = 150;  // no other shapes in quick mode
    b.retime_finalists = false;
    b.burst_gemms = 10;
    b.sustained = false;
  }
  return b;
}

// Headline shape for every precision first (what Ctrl-C keeps), then the other shapes.
std::vector<GemmCase> gemm_cases(bool quick) {
  std::vector<GemmCase> cases;
  for (const GemmPrecision p : kAllGemmPrecisions) cases.push_back({p, kHeadlineShape, true});
  if (quick) return cases;
  for (const gpu::GemmShape& s : kExtraShapes)
    for (const GemmPrecision p : kAllGemmPrecisions) cases.push_back({p, s, false});
  return cases;
}

std::string gib(double bytes) {
  return fixed(bytes / (1024.0 * kMiB), 1) + " GiB";
}

std::string case_key(const GemmCase& c) {
  std::string key = "probe.gemm.";
  key += precision_key(c.precision);
  if (!c.headline) {
    key += '.';
    key += c.shape.to_string();
  }
  key += ".tflops";
  return key;
}

std::string sustained_key(const GemmCase& c) {
  return "probe.gemm." + std::string(precision_key(c.precision)) + ".sustained.tflops";
}

std::string case_label(const GemmCase& c) {
  return "GEMM " + std::string(precision_label(c.precision)) + " " + c.shape.to_string();
}

std::string sustained_label(const GemmCase& c) {
  return case_label(c) + " sustained (power-limited)";
}

std::string case_name(const GemmCase& c) {  // for progress lines: "bf16 8192x8192x8192"
  return std::string(precision_key(c.precision)) + " " + c.shape.to_string();
}

bool has_sustained(const GemmCase& c, const Budget& budget) {
  return c.headline && budget.sustained;
}

std::uint64_t case_seed(const GemmCase& c) {
  std::uint64_t s = gpu::mix64(static_cast<std::uint64_t>(c.precision) + 1);
  s = gpu::mix64(s ^ static_cast<std::uint64_t>(c.shape.m));
  s = gpu::mix64(s ^ static_cast<std::uint64_t>(c.shape.n));
  return gpu::mix64(s ^ static_cast<std::uint64_t>(c.shape.k));
}

// Distinct A/B sets so that all of them together are at least 2x L2: by the time a set comes
// round again, the others have pushed it out of L2.
int input_sets(std::size_t ab_bytes, double l2_bytes) {
  const double want = std::ceil(2.0 * l2_bytes / static_cast<double>(ab_bytes));
  return std::clamp(static_cast<int>(want), 1, kMaxInputSets);
}

struct GemmBuffers {
  std::vector<gpu::DeviceBuffer> a, b;
  gpu::DeviceBuffer d;
};

// The results of a case that produced no figure: the burst key and, where the case has one,
// the sustained key, with the same status and reason.
std::vector<Result> no_figure(const GemmCase& c, const Budget& budget, Status status,
                              const std::string& reason) {
  const std::string unit(precision_unit(c.precision));
  std::vector<Result> out;
  out.push_back(Result::skipped(case_key(c), case_label(c), unit, reason));
  if (has_sustained(c, budget))
    out.push_back(Result::skipped(sustained_key(c), sustained_label(c), unit, reason));
  for (Result& r : out) r.status = status;  // fail: a wrong fast result is a failure, not a number
  return out;
}

void add_references(const ProbeContext& ctx, GemmPrecision p, const Telemetry& telemetry,
                    const std::string& window, Result& r) {
  if (ctx.spec && ctx.spec->peak(p) > 0)
    r.reference("datasheet", ctx.spec->peak(p),
                std::string(ctx.spec->name) + " datasheet: " + std::string(ctx.spec->source));

  const DeviceFacts& dev = ctx.device;
  double clock_mhz = 0;
  std::string clock_source;
  if (telemetry.sm_clock_mhz_mean && *telemetry.sm_clock_mhz_mean > 0) {
    clock_mhz = *telemetry.sm_clock_mhz_mean;
    clock_source = "mean SM clock during " + window + " (NVML)";
  } else {
    clock_mhz = dev.sm_clock_max_mhz;
    clock_source =
        "maximum SM clock (CUDA device attribute); no NVML clock samples" +
        (ctx.nvml_missing_reason.empty() ? std::string() : " (" + ctx.nvml_missing_reason + ")");
  }
  const auto rate = flops_per_sm_per_clock(dev.cc_major, dev.cc_minor, p);
  const auto peak = computed_peak_tflops(dev.cc_major, dev.cc_minor, dev.sm_count, clock_mhz, p);
  if (rate && peak) {
    const char* op = p == GemmPrecision::int8 ? " OP" : " FLOP";
    r.reference("clock_adjusted", *peak,
                std::to_string(dev.sm_count) + " SMs x " + fixed(*rate, 0) + op + "/clk/SM x " +
                    fixed(clock_mhz, 0) + " MHz, " + clock_source);
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One heuristic candidate of one layout and its selection times (ms per GEMM).
struct Candidate {
  const gpu::GemmLt* gemm = nullptr;
  gpu::GemmAlgo algo;
  double first_ms = 0;              // first timing
  std::optional<double> second_ms;  // the finalists' re-timing
  std::size_t order = 0;            // position among the candidates that ran
  double score() const { return second_ms ? (first_ms + *second_ms) / 2 : first_ms; }
  std::string name() const {  // "NN#0"
    return std::string(gpu::layout_name(gemm->layout())) + "#" +
           std::to_string(algo.heuristic_rank);
  }
};

// Timed GEMMs: milliseconds per GEMM per sample, and what NVML saw meanwhile.
struct Timed {
  std::vector<double> ms_per_gemm;
  Telemetry telemetry;
};

// Burst protocol: idle, kBurstWarmup warm-up GEMMs, then `gemms` GEMMs queued back to back with
// an event between consecutive ones (GEMM i is timed by events i and i + 1, the way torch
// benchmarks time each iteration with its own event pair), all on the GPU before the host
// waits once, so no launch gap lands inside a sample.
Timed time_burst(const ProbeContext& ctx, cudaStream_t s, double idle_ms, int gemms,
                 const std::function<void()>& run_one) {
  std::vector<gpu::Event> events;
  events.reserve(static_cast<std::size_t>(gemms) + 1);
  for (int i = 0; i <= gemms; ++i) events.push_back(gpu::Event::create());
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(idle_ms));
  throw_if_cancelled();

  sys::TelemetrySampler sampler(ctx.nvml);
  sampler.start();
  for (int i = 0; i < kBurstWarmup; ++i) run_one();
  events[0].record(s);
  for (std::size_t i = 1; i < events.size(); ++i) {
    run_one();
    events[i].record(s);
  }
  events.back().synchronize();
  Timed out;
  out.telemetry = sampler.stop();
  for (std::size_t i = 1; i < events.size(); ++i)
    out.ms_per_gemm.push_back(gpu::Event::elapsed_ms(events[i - 1], events[i]));
  return out;
}

// Sustained protocol: chunks of `chunk_gemms` GEMMs back to back with an event after each, for
// ~kSustainedTotalMs of GPU time. The host stays kSustainedInFlight chunks ahead (it waits for
// the chunk that far back), which keeps the GPU busy and tells it where the GPU is: the
// telemetry sampler starts once the GPU has run kSustainedDiscardMs, and only the chunks that
// start after that are kept.
Timed time_sustained(const ProbeContext& ctx, cudaStream_t s, int chunk_gemms,
                     const std::function<void()>& run_one) {
  std::vector<gpu::Event> events;  // events[0] is the origin; events[j] ends chunk j
  events.reserve(kMaxSustainedChunks + 1);
  events.push_back(gpu::Event::create());
  events[0].record(s);
  sys::TelemetrySampler sampler(ctx.nvml);
  bool sampling = false;
  for (std::size_t chunk = 0; chunk < kMaxSustainedChunks; ++chunk) {
    for (int i = 0; i < chunk_gemms; ++i) run_one();
    events.push_back(gpu::Event::create());
    events.back().record(s);
    if (events.size() <= kSustainedInFlight + 1) continue;
    const gpu::Event& done = events[events.size() - 1 - kSustainedInFlight];
    done.synchronize();
    const double gpu_ms = gpu::Event::elapsed_ms(events[0], done);
    if (!sampling && gpu_ms >= kSustainedDiscardMs) {
      sampler.start();
      sampling = true;
    }
    if (gpu_ms >= kSustainedTotalMs) break;
    throw_if_cancelled();
  }
  events.back().synchronize();
  if (!sampling) sampler.start();  // only when kMaxSustainedChunks ran out first
  Timed out;
  out.telemetry = sampler.stop();
  for (std::size_t j = 1; j < events.size(); ++j) {
    if (gpu::Event::elapsed_ms(events[0], events[j - 1]) < kSustainedDiscardMs) continue;
    out.ms_per_gemm.push_back(gpu::Event::elapsed_ms(events[j - 1], events[j]) / chunk_gemms);
  }
  return out;
}

std::vector<double> to_tflops(const gpu::GemmShape& shape, const std::vector<double>& ms) {
  std::vector<double> tflops;
  for (const double t : ms) tflops.push_back(shape.flop() / (t * 1e-3) / 1e12);
  return tflops;
}

// NVIDIA_TF32_OVERRIDE=0 makes cuBLAS ignore the TF32 request: the figure would be FP32.
void check_tf32_override(GemmPrecision p, Result& r) {
  if (const char* v = std::getenv("NVIDIA_TF32_OVERRIDE");
      p == GemmPrecision::tf32 && v && std::string(v) == "0") {
    r.status = Status::invalid;
    r.reason = "NVIDIA_TF32_OVERRIDE=0 is set: cuBLAS runs this TF32 request as plain FP32";
  }
}

// Step 1: one GemmLt per layout (FP8 and INT8: TN only) and the heuristic's candidates. FP32 is
// asked for with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no emulation through tensor cores). Should
// a cuBLASLt refuse it or offer no algorithm, plain CUBLAS_COMPUTE_32F is the same arithmetic for
// FP32 inputs (it only down-converts when asked to by a _FAST_ compute type); the "types"
// parameter says which one ran. Candidates point into `gemms`: a plan stays where it was built.
struct CasePlan {
  std::vector<gpu::GemmLayout> layouts;
  std::optional<gpu::GemmLt> gemms[2];
  std::vector<Candidate> cands;  // interleaved over the layouts: TN#0, NN#0, TN#1, NN#1, ...
  std::string layouts_text;      // "TN or NN"

  CasePlan() = default;
  CasePlan(const CasePlan&) = delete;
  CasePlan& operator=(const CasePlan&) = delete;
  const gpu::GemmLt& first() const { return *gemms[0]; }
  std::size_t layout_index(const Candidate& cand) const {
    return cand.gemm->layout() == layouts[0] ? 0 : 1;
  }
};

// Builds the plan; the reason there is no figure when the heuristic offers nothing.
std::optional<std::string> plan_case(const ProbeContext& ctx, const GemmCase& c,
                                     const Budget& budget, cublasLtHandle_t handle,
                                     CasePlan& plan) {
  const GemmPrecision p = c.precision;
  plan.layouts = {gpu::GemmLayout::tn};
  if (gpu::layout_allowed(p, gpu::GemmLayout::nn)) plan.layouts.push_back(gpu::GemmLayout::nn);
  std::vector<gpu::GemmAlgo> algos[2];
  for (std::size_t li = 0; li < plan.layouts.size(); ++li) {
    gpu::GemmOptions options;
    options.layout = plan.layouts[li];
    try {
      plan.gemms[li].emplace(handle, p, c.shape, options);
      algos[li] = plan.gemms[li]->algorithms(kWorkspaceBytes, budget.candidates_per_layout);
    } catch (const Error& e) {
      if (p != GemmPrecision::fp32 || e.kind() != ErrorKind::runtime) throw;
    }
    if (algos[li].empty() && p == GemmPrecision::fp32) {
      options.compute = CUBLAS_COMPUTE_32F;
      plan.gemms[li].emplace(handle, p, c.shape, options);
      algos[li] = plan.gemms[li]->algorithms(kWorkspaceBytes, budget.candidates_per_layout);
    }
  }
  for (std::size_t rank = 0;; ++rank) {
    bool any = false;
    for (std::size_t li = 0; li < plan.layouts.size(); ++li) {
      if (rank >= algos[li].size()) continue;
      any = true;
      Candidate cand;
      cand.gemm = &*plan.gemms[li];
      cand.algo = algos[li][rank];
      plan.cands.push_back(cand);
    }
    if (!any) break;
  }
  for (const gpu::GemmLayout l : plan.layouts)
    plan.layouts_text +=
        (plan.layouts_text.empty() ? "" : " or ") + std::string(gpu::layout_name(l));
  if (!plan.cands.empty()) return std::nullopt;
  const DeviceFacts& dev = ctx.device;
  return "cuBLASLt's heuristic returned no algorithm for " +
         gpu::describe_types(plan.first().types()) + ", " + plan.layouts_text + ", " +
         c.shape.to_string() + " on compute capability " + std::to_string(dev.cc_major) + "." +
         std::to_string(dev.cc_minor) + " (workspace limit 64 MiB)";
}

// The case's buffers on the device and the GEMMs that run on them: A and B rotate over `sets`
// input sets, D is shared. Both layouts store the same number of elements, so one set of
// buffers serves both.
class CaseRunner {
 public:
  CaseRunner(const gpu::DeviceBuffer& workspace, cudaStream_t s) : workspace_(workspace), s_(s) {}

  // Allocates one set of A, B and D with headroom, more input sets while they fit (up to 2x
  // L2), and fills them; the reason there is no figure when memory is short.
  std::optional<std::string> prepare(const GemmCase& c, const gpu::GemmLt& gemm0,
                                     double l2_bytes) {
    ab_bytes_ = gemm0.a_bytes() + gemm0.b_bytes();
    d_bytes_ = gemm0.d_bytes();
    std::size_t free_bytes = 0, total_bytes = 0;
    GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (ab_bytes_ + d_bytes_ + kHeadroomBytes > free_bytes)
      return "out of device memory: A, B and D need " +
             gib(static_cast<double>(ab_bytes_ + d_bytes_)) + ", " +
             gib(static_cast<double>(free_bytes)) + " free";
    sets_ = input_sets(ab_bytes_, l2_bytes);
    while (sets_ > 1 && sets_ * ab_bytes_ + d_bytes_ + kHeadroomBytes > free_bytes) --sets_;
    try {
      for (int i = 0; i < sets_; ++i) {
        buf_.a.emplace_back(gemm0.a_bytes());
        buf_.b.emplace_back(gemm0.b_bytes());
      }
      buf_.d = gpu::DeviceBuffer(d_bytes_);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::runtime || cudaGetLastError() != cudaErrorMemoryAllocation)
        throw;
      return std::string("out of device memory: ") + e.what();
    }
    const std::uint64_t seed = case_seed(c);
    for (int i = 0; i < sets_; ++i) {
      const auto set_seed = seed + 2 * static_cast<std::uint64_t>(i);
      gpu::fill_uniform(buf_.a[i].data(), gemm0.types().ab, gemm0.a_elements(), set_seed, s_);
      gpu::fill_uniform(buf_.b[i].data(), gemm0.types().ab, gemm0.b_elements(), set_seed + 1,
                        s_);
    }
    return std::nullopt;
  }

  // One GEMM on the next input set.
  void run(const Candidate& cand) {
    cand.gemm->run(cand.algo, buf_.a[next_set_].data(), buf_.b[next_set_].data(), buf_.d.data(),
                   workspace_.data(), workspace_.bytes(), s_);
    next_set_ = (next_set_ + 1) % static_cast<std::size_t>(sets_);
  }
  // The first GEMM of a candidate, which may refuse to run.
  cublasStatus_t try_run(const Candidate& cand) {
    return cand.gemm->try_run(cand.algo, buf_.a[0].data(), buf_.b[0].data(), buf_.d.data(),
                              workspace_.data(), workspace_.bytes(), s_);
  }
  // ms per GEMM over `gemms` back to back between two events.
  double time(const Candidate& cand, int gemms) {
    start_.record(s_);
    for (int r = 0; r < gemms; ++r) run(cand);
    stop_.record(s_);
    stop_.synchronize();
    return gpu::Event::elapsed_ms(start_, stop_) / gemms;
  }
  // Step 3: D poisoned to all-ones bytes (NaN for the float types, -1 for int32) so an output
  // the GEMM did not write cannot pass, one GEMM, sampled outputs against the CPU reference.
  gpu::GemmCheck check(const GemmCase& c, const Candidate& cand) {
    const std::uint64_t seed = case_seed(c);
    GB_CHECK_CUDA(cudaMemsetAsync(buf_.d.data(), 0xFF, d_bytes_, s_));
    cand.gemm->run(cand.algo, buf_.a[0].data(), buf_.b[0].data(), buf_.d.data(),
                   workspace_.data(), workspace_.bytes(), s_);
    const auto rows = gpu::sample_indices(c.shape.m, kSampleRows, seed ^ 0x5A);
    const auto cols = gpu::sample_indices(c.shape.n, kSampleCols, seed ^ 0xA5);
    return gpu::check_gemm_on_device(*cand.gemm, buf_.a[0].data(), buf_.b[0].data(),
                                     buf_.d.data(), rows, cols, s_);
  }
  cudaStream_t stream() const { return s_; }
  int sets() const { return sets_; }
  std::size_t ab_bytes() const { return ab_bytes_; }

 private:
  const gpu::DeviceBuffer& workspace_;
  cudaStream_t s_;
  GemmBuffers buf_;
  int sets_ = 1;
  std::size_t ab_bytes_ = 0, d_bytes_ = 0, next_set_ = 0;
  gpu::Event start_ = gpu::Event::create(), stop_ = gpu::Event::create();
};

// What the selection (step 2) did, for the params and the winner.
struct Selection {
  std::vector<std::size_t> ran;        // indices into the plan's candidates, in the order run
  std::vector<std::size_t> finalists;  // re-timed (full mode)
  int refused = 0, not_started = 0;
  cublasStatus_t refusal = CUBLAS_STATUS_SUCCESS;
  std::size_t best = 0;
  double seconds = 0;
  std::string tried;  // "TN#0 1.402, NN#0 1.398 ms; re-timed in reverse order: ..."
};

// The first timing of every candidate the time budget allows (the first one in each layout
// always runs); the first candidate that runs also warms the GPU up.
void first_timing(const GemmCase& c, const Budget& budget, CasePlan& plan, CaseRunner& runner,
                  Selection& sel) {
  const auto started = std::chrono::steady_clock::now();
  const double budget_ms = (c.headline ? budget.selection_ms_headline : budget.selection_ms_other) *
                           (budget.retime_finalists ? 0.75 : 1.0);
  bool ran_in_layout[2] = {false, false};
  bool warmed_up = false;
  for (std::size_t i = 0; i < plan.cands.size(); ++i) {
    Candidate& cand = plan.cands[i];
    const std::size_t li = plan.layout_index(cand);
    if (ran_in_layout[li] && ms_since(started) >= budget_ms) {
      ++sel.not_started;
      continue;
    }
    throw_if_cancelled();
    const cublasStatus_t st = runner.try_run(cand);  // untimed GEMM 1 (loads the kernel)
    if (st != CUBLAS_STATUS_SUCCESS) {
      sel.refusal = st;
      ++sel.refused;
      continue;
    }
    if (!warmed_up) {  // the GPU's clocks up to speed before the first candidate is judged
      warmed_up = true;
      const double once_ms = std::max(runner.time(cand, 1), 1e-3);
      const int more = std::min(static_cast<int>(budget.warmup_ms / once_ms), 1000);
      for (int r = 0; r < more; ++r) runner.run(cand);
    }
    runner.run(cand);  // untimed GEMM 2
    cand.first_ms = runner.time(cand, kSelectionTimed);
    cand.order = sel.ran.size();
    sel.ran.push_back(i);
    ran_in_layout[li] = true;
  }
  for (const std::size_t i : sel.ran)
    sel.tried += (sel.tried.empty() ? "" : ", ") + plan.cands[i].name() + " " +
                 fixed(plan.cands[i].first_ms, 3);
  sel.tried += " ms";
}

// Full mode: the fastest again, last-run first, each judged on the mean of both timings.
void retime_finalists(const Budget& budget, CasePlan& plan, CaseRunner& runner, Selection& sel) {
  if (!budget.retime_finalists || sel.ran.size() < 2) return;
  std::vector<Candidate>& cands = plan.cands;
  sel.finalists = sel.ran;
  std::sort(sel.finalists.begin(), sel.finalists.end(),
            [&](std::size_t x, std::size_t y) { return cands[x].first_ms < cands[y].first_ms; });
  sel.finalists.resize(std::min<std::size_t>(sel.finalists.size(), kFinalists));
  std::sort(sel.finalists.begin(), sel.finalists.end(),
            [&](std::size_t x, std::size_t y) { return cands[x].order > cands[y].order; });
  std::string retimed;
  for (const std::size_t i : sel.finalists) {
    throw_if_cancelled();
    runner.run(cands[i]);  // untimed
    cands[i].second_ms = runner.time(cands[i], kSelectionTimed);
    retimed += (retimed.empty() ? "" : ", ") + cands[i].name() + " " +
               fixed(*cands[i].second_ms, 3);
  }
  sel.tried += "; re-timed in reverse order: " + retimed + " ms";
}

// Step 2, the whole selection; `ran` is empty when no candidate would run.
Selection select_algorithm(const GemmCase& c, const Budget& budget, CasePlan& plan,
                           CaseRunner& runner) {
  const auto started = std::chrono::steady_clock::now();
  Selection sel;
  first_timing(c, budget, plan, runner, sel);
  if (sel.ran.empty()) return sel;
  retime_finalists(budget, plan, runner, sel);
  if (sel.refused > 0)
    sel.tried += "; " + std::to_string(sel.refused) + " refused to run (last status " +
                 gpu::cublas_status_name(sel.refusal) + ")";
  if (sel.not_started > 0)
    sel.tried += "; " + std::to_string(sel.not_started) + " not started (selection time budget)";
  std::optional<std::size_t> best;
  for (const std::size_t i : (sel.finalists.empty() ? sel.ran : sel.finalists))
    if (!best || plan.cands[i].score() < plan.cands[*best].score()) best = i;
  sel.best = *best;
  sel.seconds = ms_since(started) / 1e3;
  return sel;
}

// A wrong answer: the failed results, naming the error, the types, layout and algorithm.
std::vector<Result> wrong_result(const GemmCase& c, const Budget& budget, const Candidate& win,
                                 const gpu::GemmCheck& check) {
  const std::string types = gpu::describe_types(win.gemm->types());
  std::string reason = "wrong result: rel err " + gpu::format_sci(check.rel_err) + " > tol " +
                       gpu::format_sci(check.tolerance) + " (" + std::to_string(check.samples) +
                       " sampled outputs";
  if (check.nonfinite > 0) reason += ", " + std::to_string(check.nonfinite) + " NaN or inf";
  reason += "; " + types + "; " + std::string(gpu::layout_name(win.gemm->layout())) +
            "; algorithm " + win.algo.describe() + ")";
  std::vector<Result> out = no_figure(c, budget, Status::fail, reason);
  for (Result& r : out)
    r.param("types", types)
        .param("layout", gpu::describe_layout(win.gemm->layout()))
        .param("algorithm", win.algo.describe());
  return out;
}

// The params both figures of a case carry: shape, types, the winner and how it was chosen.
void add_case_params(Result& r, const GemmCase& c, const CasePlan& plan, const Selection& sel,
                     const CaseRunner& runner, const gpu::GemmCheck& check) {
  const Candidate& win = plan.cands[sel.best];
  const gpu::GemmLt& gemm = *win.gemm;
  const GemmPrecision p = c.precision;
  r.param("m", static_cast<double>(c.shape.m), "", 0)
      .param("n", static_cast<double>(c.shape.n), "", 0)
      .param("k", static_cast<double>(c.shape.k), "", 0)
      .param("flop_per_gemm", c.shape.flop(), "FLOP", 0)
      .param("types", gpu::describe_types(gemm.types()))
      .param("layout", gpu::describe_layout(gemm.layout()))
      .param("algorithm", win.algo.describe())
      .param("heuristic_rank", static_cast<double>(win.algo.heuristic_rank), "", 0)
      .param("workspace_bytes", static_cast<double>(win.algo.workspace_bytes), "B", 0)
      .param("candidates", std::to_string(sel.ran.size()) + " of " +
                               std::to_string(plan.cands.size()) + " (" + plan.layouts_text +
                               ") ran: " + sel.tried)
      .param("selection",
             std::to_string(kSelectionWarmup) + " untimed + " + std::to_string(kSelectionTimed) +
                 " timed GEMMs per candidate" +
                 (sel.finalists.empty() ? std::string()
                                        : "; the " + std::to_string(sel.finalists.size()) +
                                              " fastest re-timed in reverse order, judged on "
                                              "the mean of both") +
                 "; " + fixed(sel.seconds, 2) + " s")
      .param("input_sets", std::to_string(runner.sets()) + " (A+B " +
                               gib(static_cast<double>(runner.ab_bytes())) + " each)")
      .param("inputs", p == GemmPrecision::int8 ? "uniform [-128, 127]"
                                                : "uniform [-1, 1) rounded to the type")
      .param("validation", check.describe() + ", long-double CPU reference");
  if (p == GemmPrecision::fp8)
    r.param("fp8_fast_accum", "off (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0; scales 1)");
}

// Step 4: the burst figure.
Result burst_figure(const ProbeContext& ctx, const GemmCase& c, const Budget& budget,
                    CaseRunner& runner, const Candidate& win) {
  const double idle_ms = c.headline ? kIdleMsHeadline : kIdleMsOther;
  const Timed burst = time_burst(ctx, runner.stream(), idle_ms, budget.burst_gemms,
                                 [&] { runner.run(win); });
  Result r = Result::measured(case_key(c), case_label(c), std::string(precision_unit(c.precision)),
                              to_tflops(c.shape, burst.ms_per_gemm), /*higher_is_better=*/true);
  r.telemetry = burst.telemetry;
  add_references(ctx, c.precision, burst.telemetry, "the warm-up and timed GEMMs", r);
  r.param("protocol", "burst: " + fixed(idle_ms, 0) + " ms idle, " +
                          std::to_string(kBurstWarmup) + " warm-up, " +
                          std::to_string(budget.burst_gemms) +
                          " GEMMs each timed with CUDA events (as torch benchmarks do)")
      .param("time_ms_median", compute_stats(burst.ms_per_gemm).median, "ms", 4)
      .param("gemms_per_sample", 1.0, "", 0);
  return r;
}

// Step 5: the sustained figure (skipped when no chunk started after the discarded window).
Result sustained_figure(const ProbeContext& ctx, const GemmCase& c, CaseRunner& runner,
                        const Candidate& win, double burst_tflops) {
  const std::string unit(precision_unit(c.precision));
  const int chunk_gemms =
      std::clamp(static_cast<int>(std::lround(kSustainedChunkMs / std::max(win.score(), 1e-3))),
                 1, kMaxGemmsPerChunk);
  const Timed sustained =
      time_sustained(ctx, runner.stream(), chunk_gemms, [&] { runner.run(win); });
  if (sustained.ms_per_gemm.empty())
    return Result::skipped(sustained_key(c), sustained_label(c), unit,
                           "no chunk of GEMMs started after the first " +
                               fixed(kSustainedDiscardMs / 1e3, 1) + " s");
  Result r = Result::measured(sustained_key(c), sustained_label(c), unit,
                              to_tflops(c.shape, sustained.ms_per_gemm),
                              /*higher_is_better=*/true);
  r.telemetry = sustained.telemetry;
  add_references(ctx, c.precision, sustained.telemetry, "the kept window of the sustained load",
                 r);
  r.param("protocol",
          "sustained: " + fixed(kSustainedTotalMs / 1e3, 1) + " s of back-to-back GEMMs in "
          "chunks of " + std::to_string(chunk_gemms) + " (~" + fixed(kSustainedChunkMs, 0) +
          " ms) timed with CUDA events; only the chunks after the first " +
          fixed(kSustainedDiscardMs / 1e3, 1) + " s kept, telemetry over that window")
      .param("time_ms_median", compute_stats(sustained.ms_per_gemm).median, "ms", 4)
      .param("gemms_per_sample", static_cast<double>(chunk_gemms), "", 0)
      .param("burst_tflops", burst_tflops, "TFLOP/s", 1);
  if (burst_tflops > 0 && r.value)
    r.param("sustained_vs_burst_pct", 100.0 * *r.value / burst_tflops, "%", 1);
  return r;
}

// One case, in the steps of the top of the file: check, plan, buffers, selection, validation,
// burst and sustained figures.
std::vector<Result> measure_case(const ProbeContext& ctx, const GemmCase& c, const Budget& budget,
                                 cublasLtHandle_t handle, const gpu::DeviceBuffer& workspace,
                                 cudaStream_t s) {
  const DeviceFacts& dev = ctx.device;
  if (const auto why = gpu::gemm_unsupported_reason(c.precision, dev.cc_major, dev.cc_minor))
    return no_figure(c, budget, Status::skipped, *why);
  CasePlan plan;
  if (const auto why = plan_case(ctx, c, budget, handle, plan))
    return no_figure(c, budget, Status::skipped, *why);
  CaseRunner runner(workspace, s);
  if (const auto why = runner.prepare(c, plan.first(), dev.l2_bytes))
    return no_figure(c, budget, Status::skipped, *why);
  const Selection sel = select_algorithm(c, budget, plan, runner);
  if (sel.ran.empty())
    return no_figure(c, budget, Status::skipped,
                     "none of the " + std::to_string(plan.cands.size()) +
                         " algorithms cuBLASLt offered would run (last status " +
                         gpu::cublas_status_name(sel.refusal) + ")");
  const Candidate& win = plan.cands[sel.best];
  const gpu::GemmCheck check = runner.check(c, win);
  if (!check.ok()) return wrong_result(c, budget, win, check);

  std::vector<Result> out;
  out.push_back(burst_figure(ctx, c, budget, runner, win));
  const double burst_tflops = out.back().value.value_or(0);
  if (has_sustained(c, budget)) {
    throw_if_cancelled();
    out.push_back(sustained_figure(ctx, c, runner, win, burst_tflops));
  }
  for (Result& r : out) {
    if (r.status == Status::skipped) continue;
    add_case_params(r, c, plan, sel, runner, check);
    check_tf32_override(c.precision, r);
  }
  return out;
}

std::string progress_line(const GemmCase& c, const Result& r) {
  std::string line = "gemm " + case_name(c);
  if (r.key.find(".sustained.") != std::string::npos) line += " sustained";
  line += ": ";
  switch (r.status) {
    case Status::skipped: return line + "skipped: " + r.reason;
    case Status::fail: return line + "FAILED: " + r.reason;
    default: break;
  }
  line += r.value ? fixed(*r.value, 1) + " " + r.unit : "no value";
  std::string notes;
  if (const auto layout = r.text_param("layout")) notes = layout->substr(0, 2);
  if (const Reference* ref = r.find_reference("datasheet"))
    notes += (notes.empty() ? "" : ", ") + fixed(ref->ratio * 100, 0) + " % of datasheet";
  if (const auto pct = r.number_param("sustained_vs_burst_pct"))
    notes += (notes.empty() ? "" : ", ") + fixed(*pct, 1) + " % of burst";
  if (!notes.empty()) line += " (" + notes + ")";
  if (r.status == Status::invalid) line += " INVALID: " + r.reason;
  return line;
}

}  // namespace

void probe_gemm(const ProbeContext& ctx, ResultSink& sink) {
  const Budget budget = budget_for(ctx.options.quick);
  // cuBLASLt is opened on first use (gpu/cublaslt_lazy): without it every case is skipped with
  // the loader's reason, and the probe's other sections still run.
  if (!gpu::cublaslt_available()) {
    for (const GemmCase& c : gemm_cases(ctx.options.quick))
      for (Result& r : no_figure(c, budget, Status::skipped, gpu::cublaslt_load_error())) {
        sink.progress(progress_line(c, r));
        sink.add(std::move(r));
      }
    return;
  }
  const gpu::CublasLtHandle handle = gpu::CublasLtHandle::create();
  const gpu::Stream stream = gpu::Stream::create();
  const gpu::DeviceBuffer workspace(kWorkspaceBytes);

  bool after_sustained = false;
  for (const GemmCase& c : gemm_cases(ctx.options.quick)) {
    throw_if_cancelled();
    // After 1.5 s at the power cap the controller's averaging window still holds the clock
    // down for about a second (v2 on the H200: the FP8 case after BF16's sustained run chose
    // and timed kernels at 1334 instead of 1434 TFLOP/s). Let the card recover first, so each
    // precision starts from the same state, as a stand-alone benchmark would.
    if (after_sustained)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kCooldownMs));
    std::vector<Result> results;
    try {
      results = measure_case(ctx, c, budget, handle.get(), workspace, stream.get());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::runtime) throw;
      // A failed call that left the device usable (a cuBLASLt refusal, a failed allocation)
      // skips this case; a sticky error (a faulting kernel) ends the section.
      (void)cudaGetLastError();
      if (cudaStreamSynchronize(stream.get()) != cudaSuccess ||
          cudaDeviceSynchronize() != cudaSuccess)
        throw;
      results = no_figure(c, budget, Status::skipped, std::string("could not run: ") + e.what());
    }
    after_sustained = false;
    for (Result& r : results) {
      if (r.key.ends_with(".sustained.tflops") && r.value) after_sustained = true;
      sink.progress(progress_line(c, r));
      sink.add(std::move(r));
    }
  }
}

}  // namespace gb::bench
