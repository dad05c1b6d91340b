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

std::vector<Result> measure_case(const ProbeContext& ctx, const GemmCase& c, const Budget& budget,
                                 cublasLtHandle_t handle, const gpu::DeviceBuffer& workspace,
                                 cudaStream_t s) {
  const GemmPrecision p = c.precision;
  const std::string unit(precision_unit(p));
  const DeviceFacts& dev = ctx.device;

  if (const auto why = gpu::gemm_unsupported_reason(p, dev.cc_major, dev.cc_minor))
    return no_figure(c, budget, Status::skipped, *why);

  // One GemmLt per layout (FP8 and INT8: TN only). FP32 is asked for with
  // CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no emulation through tensor cores). Should a cuBLASLt
  // refuse it or offer no algorithm, plain CUBLAS_COMPUTE_32F is the same arithmetic for FP32
  // inputs (it only down-converts when asked to by a _FAST_ compute type); the "types"
  // parameter says which one ran.
  std::vector<gpu::GemmLayout> layouts = {gpu::GemmLayout::tn};
  if (gpu::layout_allowed(p, gpu::GemmLayout::nn)) layouts.push_back(gpu::GemmLayout::nn);
  std::optional<gpu::GemmLt> gemms[2];
  std::vector<gpu::GemmAlgo> algos[2];
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    gpu::GemmOptions options;
    options.layout = layouts[li];
    try {
      gemms[li].emplace(handle, p, c.shape, options);
      algos[li] = gemms[li]->algorithms(kWorkspaceBytes, budget.candidates_per_layout);
    } catch (const Error& e) {
      if (p != GemmPrecision::fp32 || e.kind() != ErrorKind::runtime) throw;
    }
    if (algos[li].empty() && p == GemmPrecision::fp32) {
      options.compute = CUBLAS_COMPUTE_32F;
      gemms[li].emplace(handle, p, c.shape, options);
      algos[li] = gemms[li]->algorithms(kWorkspaceBytes, budget.candidates_per_layout);
    }
  }
  // Candidates interleaved over the layouts in heuristic order: TN#0, NN#0, TN#1, NN#1, ...
  std::vector<Candidate> cands;
  for (std::size_t rank = 0;; ++rank) {
    bool any = false;
    for (std::size_t li = 0; li < layouts.size(); ++li) {
      if (rank >= algos[li].size()) continue;
      any = true;
      Candidate cand;
      cand.gemm = &*gemms[li];
      cand.algo = algos[li][rank];
      cands.push_back(cand);
    }
    if (!any) break;
  }
  std::string layouts_text;
  for (const gpu::GemmLayout l : layouts)
    layouts_text += (layouts_text.empty() ? "" : " or ") + std::string(gpu::layout_name(l));
  const gpu::GemmLt& gemm0 = *gemms[0];
  if (cands.empty())
    return no_figure(c, budget, Status::skipped,
                     "cuBLASLt's heuristic returned no algorithm for " +
                         gpu::describe_types(gemm0.types()) + ", " + layouts_text + ", " +
                         c.shape.to_string() + " on compute capability " +
                         std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
                         " (workspace limit 64 MiB)");

  // Memory: one set of A, B and D must fit with headroom; more input sets only if they fit too.
  // Both layouts store the same number of elements, so one set of buffers serves both.
  const std::size_t ab_bytes = gemm0.a_bytes() + gemm0.b_bytes();
  const std::size_t d_bytes = gemm0.d_bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (ab_bytes + d_bytes + kHeadroomBytes > free_bytes)
    return no_figure(c, budget, Status::skipped,
                     "out of device memory: A, B and D need " +
                         gib(static_cast<double>(ab_bytes + d_bytes)) + ", " +
                         gib(static_cast<double>(free_bytes)) + " free");
  int sets = input_sets(ab_bytes, dev.l2_bytes);
  while (sets > 1 && sets * ab_bytes + d_bytes + kHeadroomBytes > free_bytes) --sets;

  GemmBuffers buf;
  try {
    for (int i = 0; i < sets; ++i) {
      buf.a.emplace_back(gemm0.a_bytes());
      buf.b.emplace_back(gemm0.b_bytes());
    }
    buf.d = gpu::DeviceBuffer(d_bytes);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime || cudaGetLastError() != cudaErrorMemoryAllocation) throw;
    return no_figure(c, budget, Status::skipped, std::string("out of device memory: ") + e.what());
  }
  const std::uint64_t seed = case_seed(c);
  for (int i = 0; i < sets; ++i) {
    const auto set_seed = seed + 2 * static_cast<std::uint64_t>(i);
    gpu::fill_uniform(buf.a[i].data(), gemm0.types().ab, gemm0.a_elements(), set_seed, s);
    gpu::fill_uniform(buf.b[i].data(), gemm0.types().ab, gemm0.b_elements(), set_seed + 1, s);
  }

  std::size_t next_set = 0;
  auto run = [&](const Candidate& cand) {
    cand.gemm->run(cand.algo, buf.a[next_set].data(), buf.b[next_set].data(), buf.d.data(),
                   workspace.data(), workspace.bytes(), s);
    next_set = (next_set + 1) % static_cast<std::size_t>(sets);
  };
  const gpu::Event start = gpu::Event::create();
  const gpu::Event stop = gpu::Event::create();
  auto time_candidate = [&](const Candidate& cand) {  // ms per GEMM over kSelectionTimed
    start.record(s);
    for (int r = 0; r < kSelectionTimed; ++r) run(cand);
    stop.record(s);
    stop.synchronize();
    return gpu::Event::elapsed_ms(start, stop) / kSelectionTimed;
  };

  // Selection, first timing: see the top of the file.
  const auto selection_start = std::chrono::steady_clock::now();
  const double selection_budget_ms =
      (c.headline ? budget.selection_ms_headline : budget.selection_ms_other) *
      (budget.retime_finalists ? 0.75 : 1.0);
  std::vector<std::size_t> ran;  // indices into cands, in the order they ran
  bool ran_in_layout[2] = {false, false};
  bool warmed_up = false;
  int refused = 0, not_started = 0;
  cublasStatus_t refusal = CUBLAS_STATUS_SUCCESS;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    Candidate& cand = cands[i];
    const std::size_t li = cand.gemm->layout() == layouts[0] ? 0 : 1;
    if (ran_in_layout[li] && ms_since(selection_start) >= selection_budget_ms) {
      ++not_started;
      continue;
    }
    throw_if_cancelled();
    // Untimed GEMM 1 (loads the kernel; a candidate may refuse to run).
    const cublasStatus_t st = cand.gemm->try_run(cand.algo, buf.a[0].data(), buf.b[0].data(),
                                                 buf.d.data(), workspace.data(),
                                                 workspace.bytes(), s);
    if (st != CUBLAS_STATUS_SUCCESS) {
      refusal = st;
      ++refused;
      continue;
    }
    if (!warmed_up) {  // the GPU's clocks up to speed before the first candidate is judged
      warmed_up = true;
      start.record(s);
      run(cand);
      stop.record(s);
      stop.synchronize();
      const double once_ms = std::max<double>(gpu::Event::elapsed_ms(start, stop), 1e-3);
      const int more = std::min(static_cast<int>(budget.warmup_ms / once_ms), 1000);
      for (int r = 0; r < more; ++r) run(cand);
    }
    run(cand);  // untimed GEMM 2
    cand.first_ms = time_candidate(cand);
    cand.order = ran.size();
    ran.push_back(i);
    ran_in_layout[li] = true;
  }
  if (ran.empty())
    return no_figure(c, budget, Status::skipped,
                     "none of the " + std::to_string(cands.size()) +
                         " algorithms cuBLASLt offered would run (last status " +
                         gpu::cublas_status_name(refusal) + ")");

  std::string tried;
  for (const std::size_t i : ran)
    tried += (tried.empty() ? "" : ", ") + cands[i].name() + " " + fixed(cands[i].first_ms, 3);
  tried += " ms";

  // Full mode: the finalists again, last-run first, judged on the mean of both timings.
  std::vector<std::size_t> finalists;
  if (budget.retime_finalists && ran.size() >= 2) {
    finalists = ran;
    std::sort(finalists.begin(), finalists.end(), [&](std::size_t x, std::size_t y) {
      return cands[x].first_ms < cands[y].first_ms;
    });
    finalists.resize(std::min<std::size_t>(finalists.size(), kFinalists));
    std::sort(finalists.begin(), finalists.end(), [&](std::size_t x, std::size_t y) {
      return cands[x].order > cands[y].order;
    });
    std::string retimed;
    for (const std::size_t i : finalists) {
      throw_if_cancelled();
      run(cands[i]);  // untimed
      cands[i].second_ms = time_candidate(cands[i]);
      retimed += (retimed.empty() ? "" : ", ") + cands[i].name() + " " +
                 fixed(*cands[i].second_ms, 3);
    }
    tried += "; re-timed in reverse order: " + retimed + " ms";
  }
  if (refused > 0)
    tried += "; " + std::to_string(refused) + " refused to run (last status " +
             gpu::cublas_status_name(refusal) + ")";
  if (not_started > 0)
    tried += "; " + std::to_string(not_started) + " not started (selection time budget)";

  std::optional<std::size_t> best;
  for (const std::size_t i : (finalists.empty() ? ran : finalists))
    if (!best || cands[i].score() < cands[*best].score()) best = i;
  const Candidate& win = cands[*best];
  const gpu::GemmLt& gemm = *win.gemm;
  const gpu::GemmAlgo& algo = win.algo;
  const double best_ms = win.score();
  const std::string types = gpu::describe_types(gemm.types());
  const double selection_s = ms_since(selection_start) / 1e3;

  // Check before timing: D is set to all-ones bytes first (NaN for the float types, -1 for
  // int32), so an output the GEMM did not write cannot pass.
  GB_CHECK_CUDA(cudaMemsetAsync(buf.d.data(), 0xFF, d_bytes, s));
  gemm.run(algo, buf.a[0].data(), buf.b[0].data(), buf.d.data(), workspace.data(),
           workspace.bytes(), s);
  const std::vector<std::int64_t> rows = gpu::sample_indices(c.shape.m, kSampleRows, seed ^ 0x5A);
  const std::vector<std::int64_t> cols = gpu::sample_indices(c.shape.n, kSampleCols, seed ^ 0xA5);
  const gpu::GemmCheck check = gpu::check_gemm_on_device(gemm, buf.a[0].data(), buf.b[0].data(),
                                                         buf.d.data(), rows, cols, s);
  if (!check.ok()) {
    std::string reason = "wrong result: rel err " + gpu::format_sci(check.rel_err) + " > tol " +
                         gpu::format_sci(check.tolerance) + " (" + std::to_string(check.samples) +
                         " sampled outputs";
    if (check.nonfinite > 0) reason += ", " + std::to_string(check.nonfinite) + " NaN or inf";
    reason += "; " + types + "; " + std::string(gpu::layout_name(gemm.layout())) +
              "; algorithm " + algo.describe() + ")";
    std::vector<Result> out = no_figure(c, budget, Status::fail, reason);
    for (Result& r : out)
      r.param("types", types)
          .param("layout", gpu::describe_layout(gemm.layout()))
          .param("algorithm", algo.describe());
    return out;
  }

  const auto add_common = [&](Result& r) {
    r.param("m", static_cast<double>(c.shape.m), "", 0)
        .param("n", static_cast<double>(c.shape.n), "", 0)
        .param("k", static_cast<double>(c.shape.k), "", 0)
        .param("flop_per_gemm", c.shape.flop(), "FLOP", 0)
        .param("types", types)
        .param("layout", gpu::describe_layout(gemm.layout()))
        .param("algorithm", algo.describe())
        .param("heuristic_rank", static_cast<double>(algo.heuristic_rank), "", 0)
        .param("workspace_bytes", static_cast<double>(algo.workspace_bytes), "B", 0)
        .param("candidates", std::to_string(ran.size()) + " of " + std::to_string(cands.size()) +
                                 " (" + layouts_text + ") ran: " + tried)
        .param("selection",
               std::to_string(kSelectionWarmup) + " untimed + " + std::to_string(kSelectionTimed) +
                   " timed GEMMs per candidate" +
                   (finalists.empty() ? std::string()
                                      : "; the " + std::to_string(finalists.size()) +
                                            " fastest re-timed in reverse order, judged on "
                                            "the mean of both") +
                   "; " + fixed(selection_s, 2) + " s")
        .param("input_sets",
               std::to_string(sets) + " (A+B " + gib(static_cast<double>(ab_bytes)) + " each)")
        .param("inputs", p == GemmPrecision::int8 ? "uniform [-128, 127]"
                                                  : "uniform [-1, 1) rounded to the type")
        .param("validation", check.describe() + ", long-double CPU reference");
    if (p == GemmPrecision::fp8)
      r.param("fp8_fast_accum", "off (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0; scales 1)");
  };
  const std::function<void()> run_one = [&] { run(win); };
  std::vector<Result> out;

  // Burst figure.
  const double idle_ms = c.headline ? kIdleMsHeadline : kIdleMsOther;
  const Timed burst = time_burst(ctx, s, idle_ms, budget.burst_gemms, run_one);
  {
    Result r = Result::measured(case_key(c), case_label(c), unit,
                                to_tflops(c.shape, burst.ms_per_gemm), /*higher_is_better=*/true);
    r.telemetry = burst.telemetry;
    add_references(ctx, p, burst.telemetry, "the warm-up and timed GEMMs", r);
    r.param("protocol", "burst: " + fixed(idle_ms, 0) + " ms idle, " +
                            std::to_string(kBurstWarmup) + " warm-up, " +
                            std::to_string(budget.burst_gemms) +
                            " GEMMs each timed with CUDA events (as torch benchmarks do)")
        .param("time_ms_median", compute_stats(burst.ms_per_gemm).median, "ms", 4)
        .param("gemms_per_sample", 1.0, "", 0);
    add_common(r);
    check_tf32_override(p, r);
    out.push_back(std::move(r));
  }
  const double burst_tflops = out.back().value.value_or(0);

  // Sustained figure.
  if (has_sustained(c, budget)) {
    throw_if_cancelled();
    const int chunk_gemms = std::clamp(
        static_cast<int>(std::lround(kSustainedChunkMs / std::max(best_ms, 1e-3))), 1,
        kMaxGemmsPerChunk);
    const Timed sustained = time_sustained(ctx, s, chunk_gemms, run_one);
    if (sustained.ms_per_gemm.empty()) {
      out.push_back(Result::skipped(sustained_key(c), sustained_label(c), unit,
                                    "no chunk of GEMMs started after the first " +
                                        fixed(kSustainedDiscardMs / 1e3, 1) + " s"));
    } else {
      Result r = Result::measured(sustained_key(c), sustained_label(c), unit,
                                  to_tflops(c.shape, sustained.ms_per_gemm),
                                  /*higher_is_better=*/true);
      r.telemetry = sustained.telemetry;
      add_references(ctx, p, sustained.telemetry, "the kept window of the sustained load", r);
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
      add_common(r);
      check_tf32_override(p, r);
      out.push_back(std::move(r));
    }
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
  const gpu::CublasLtHandle handle = gpu::CublasLtHandle::create();
  const gpu::Stream stream = gpu::Stream::create();
  const gpu::DeviceBuffer workspace(kWorkspaceBytes);
  const Budget budget = budget_for(ctx.options.quick);

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
