// bench/gpu/probe_gemm.cpp: the probe's "gemm" section: cuBLASLt GEMM throughput per precision
// (FP64, FP32 without tensor cores, TF32, FP16, BF16, FP8 E4M3, INT8) against the datasheet and
// against the peak computed from the SM clock seen while it ran.
//
// Per precision and shape: random inputs (gpu/fill.hpp); up to 8 candidates from cuBLASLt's
// heuristic (64 MiB workspace), each timed briefly, the fastest kept; its answer checked on
// 16 x 16 sampled outputs against a long-double CPU reference (gpu/gemm_lt.hpp) before anything
// is timed; then timed properly with NVML telemetry around the timed loop. A wrong answer is a
// failed result with no figure. Layout TN for every precision (gpu/gemm_lt.hpp says why).
//
// Shapes: 8192^3 for every precision (the headline keys probe.gemm.<p>.tflops, quick mode too),
// and in full mode 4096^3 and the short-k 8192x8192x1024 (probe.gemm.<p>.<m>x<n>x<k>.tflops).
// A and B rotate over enough input sets that all sets together are at least 2x L2, so a GEMM
// never finds its inputs in L2 from its last run (8192^2 BF16 is 128 MiB per matrix: one set).
//
// Napkin math, full mode on an H200: 8192^3 = 1.1 TFLOP per GEMM: FP64 ~16 ms, FP32 ~22 ms,
// TF32 ~2.8 ms, FP16/BF16 ~1.4 ms, FP8/INT8 ~0.8 ms. Warm-up (30 ms) and selection (8 x 4
// GEMMs: FP64 0.55 s, FP32 0.7 s, the rest < 0.1 s) and the timed loop (>= 300 ms) make 8192^3
// ~4 s over the 7 precisions and each of the 14 smaller cases ~0.4 s: ~10 s plus allocation,
// fills and checks (~1 s), well under the 25 s budget. Quick mode (8192^3 only, 15 ms warm-up,
// 4 candidates x 2 GEMMs, 10 timed samples of >= 3 ms): FP64 ~0.35 s, FP32 ~0.45 s, the others
// ~0.1 s each: ~1.5 s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/fill.hpp"
#include "gpu/gemm_lt.hpp"
#include "gpu/host_numeric.hpp"
#include "gpu/timing.hpp"
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
constexpr int kMaxGemmsPerSample = 64;

constexpr gpu::GemmShape kHeadlineShape{8192, 8192, 8192};
constexpr gpu::GemmShape kExtraShapes[] = {{4096, 4096, 4096}, {8192, 8192, 1024}};

struct GemmCase {
  Precision precision;
  gpu::GemmShape shape;
  bool headline;  // 8192^3: the key without the shape
};

// How much time a case may spend.
struct Budget {
  int candidates = 8;       // heuristic candidates asked for and tried
  int selection_gemms = 3;  // timed GEMMs per candidate, after one untimed
  double sample_ms = 5;     // a timed sample runs back-to-back GEMMs for about this long
  double warmup_ms = 30;    // before selection: clocks up to speed before candidates compete
  gpu::TimingPlan timing;
};

Budget budget_for(bool quick) {
  Budget b;
  if (quick) {
    b.candidates = 4;
    b.selection_gemms = 1;
    b.sample_ms = 3;
    b.warmup_ms = 15;
    b.timing.warmup = 1;
    b.timing.repetitions = 10;
    b.timing.min_total_ms = 50;
  } else {
    b.candidates = 8;
    b.selection_gemms = 3;
    b.sample_ms = 5;
    b.warmup_ms = 30;
    b.timing.warmup = 2;
    b.timing.repetitions = 10;
    b.timing.min_total_ms = 300;
  }
  b.timing.max_repetitions = 200;
  return b;
}

// Headline shape for every precision first (what Ctrl-C keeps), then the other shapes.
std::vector<GemmCase> gemm_cases(bool quick) {
  std::vector<GemmCase> cases;
  for (const Precision p : kAllPrecisions) cases.push_back({p, kHeadlineShape, true});
  if (quick) return cases;
  for (const gpu::GemmShape& s : kExtraShapes)
    for (const Precision p : kAllPrecisions) cases.push_back({p, s, false});
  return cases;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
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

std::string case_label(const GemmCase& c) {
  return "GEMM " + std::string(precision_label(c.precision)) + " " + c.shape.to_string();
}

std::string case_name(const GemmCase& c) {  // for progress lines: "bf16 8192x8192x8192"
  return std::string(precision_key(c.precision)) + " " + c.shape.to_string();
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

// A case whose answer was wrong: no figure (a wrong fast result is a failure, not a number).
Result wrong_result(const GemmCase& c, const std::string& reason) {
  Result r =
      Result::skipped(case_key(c), case_label(c), std::string(precision_unit(c.precision)), "");
  r.status = Status::fail;
  r.reason = reason;
  return r;
}

void add_references(const ProbeContext& ctx, const GemmCase& c, const Telemetry& telemetry,
                    Result& r) {
  const Precision p = c.precision;
  if (ctx.spec && ctx.spec->peak(p) > 0)
    r.reference("datasheet", ctx.spec->peak(p),
                std::string(ctx.spec->name) + " datasheet: " + std::string(ctx.spec->source));

  const DeviceFacts& dev = ctx.device;
  double clock_mhz = 0;
  std::string clock_source;
  if (telemetry.sm_clock_mhz_mean && *telemetry.sm_clock_mhz_mean > 0) {
    clock_mhz = *telemetry.sm_clock_mhz_mean;
    clock_source = "mean SM clock during the timed loop (NVML)";
  } else {
    clock_mhz = dev.sm_clock_max_mhz;
    clock_source =
        "maximum SM clock (CUDA device attribute); no NVML clock samples" +
        (ctx.nvml_missing_reason.empty() ? std::string() : " (" + ctx.nvml_missing_reason + ")");
  }
  const auto rate = flops_per_sm_per_clock(dev.cc_major, dev.cc_minor, p);
  const auto peak = computed_peak_tflops(dev.cc_major, dev.cc_minor, dev.sm_count, clock_mhz, p);
  if (rate && peak) {
    const char* op = p == Precision::int8 ? " OP" : " FLOP";
    r.reference("clock_adjusted", *peak,
                std::to_string(dev.sm_count) + " SMs x " + fixed(*rate, 0) + op + "/clk/SM x " +
                    fixed(clock_mhz, 0) + " MHz, " + clock_source);
  }
}

Result measure_case(const ProbeContext& ctx, const GemmCase& c, const Budget& budget,
                    cublasLtHandle_t handle, const gpu::DeviceBuffer& workspace, cudaStream_t s) {
  const std::string key = case_key(c);
  const std::string label = case_label(c);
  const std::string unit(precision_unit(c.precision));
  const DeviceFacts& dev = ctx.device;

  if (const auto why = gpu::gemm_unsupported_reason(c.precision, dev.cc_major, dev.cc_minor))
    return Result::skipped(key, label, unit, *why);

  // FP32 is asked for with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no emulation through tensor
  // cores). Should a cuBLASLt refuse it or offer no algorithm, plain CUBLAS_COMPUTE_32F is the
  // same arithmetic for FP32 inputs (it only down-converts when asked to by a _FAST_ compute
  // type); the "types" parameter says which one ran.
  std::optional<gpu::GemmLt> gemm;
  std::vector<gpu::GemmAlgo> algos;
  try {
    gemm.emplace(handle, c.precision, c.shape);
    algos = gemm->algorithms(kWorkspaceBytes, budget.candidates);
  } catch (const Error& e) {
    if (c.precision != Precision::fp32 || e.kind() != ErrorKind::runtime) throw;
  }
  if (algos.empty() && c.precision == Precision::fp32) {
    gemm.emplace(handle, c.precision, c.shape, gpu::GemmOptions{CUBLAS_COMPUTE_32F, false});
    algos = gemm->algorithms(kWorkspaceBytes, budget.candidates);
  }
  const std::string types = gpu::describe_types(gemm->types());
  if (algos.empty())
    return Result::skipped(key, label, unit,
                           "cuBLASLt's heuristic returned no algorithm for " + types + ", TN, " +
                               c.shape.to_string() + " on compute capability " +
                               std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
                               " (workspace limit 64 MiB)");

  // Memory: one set of A, B and D must fit with headroom; more input sets only if they fit too.
  const std::size_t ab_bytes = gemm->a_bytes() + gemm->b_bytes();
  const std::size_t d_bytes = gemm->d_bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (ab_bytes + d_bytes + kHeadroomBytes > free_bytes)
    return Result::skipped(key, label, unit,
                           "out of device memory: A, B and D need " +
                               gib(static_cast<double>(ab_bytes + d_bytes)) + ", " +
                               gib(static_cast<double>(free_bytes)) + " free");
  int sets = input_sets(ab_bytes, dev.l2_bytes);
  while (sets > 1 && sets * ab_bytes + d_bytes + kHeadroomBytes > free_bytes) --sets;

  GemmBuffers buf;
  try {
    for (int i = 0; i < sets; ++i) {
      buf.a.emplace_back(gemm->a_bytes());
      buf.b.emplace_back(gemm->b_bytes());
    }
    buf.d = gpu::DeviceBuffer(d_bytes);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime || cudaGetLastError() != cudaErrorMemoryAllocation) throw;
    return Result::skipped(key, label, unit, std::string("out of device memory: ") + e.what());
  }
  const std::uint64_t seed = case_seed(c);
  for (int i = 0; i < sets; ++i) {
    const auto set_seed = seed + 2 * static_cast<std::uint64_t>(i);
    gpu::fill_uniform(buf.a[i].data(), gemm->types().ab, gemm->a_elements(), set_seed, s);
    gpu::fill_uniform(buf.b[i].data(), gemm->types().ab, gemm->b_elements(), set_seed + 1, s);
  }

  std::size_t next_set = 0;
  auto run = [&](const gpu::GemmAlgo& algo, cudaStream_t stream) {
    gemm->run(algo, buf.a[next_set].data(), buf.b[next_set].data(), buf.d.data(), workspace.data(),
              workspace.bytes(), stream);
    next_set = (next_set + 1) % static_cast<std::size_t>(sets);
  };

  // Selection: one untimed run per candidate (loads its kernel; a candidate may refuse to run),
  // then a few back to back between two events. The first candidate that runs also warms the
  // GPU up (~warmup_ms) so that it is not judged at idle clocks.
  const gpu::Event start = gpu::Event::create();
  const gpu::Event stop = gpu::Event::create();
  std::optional<std::size_t> best;
  double best_ms = 0;
  int candidates_ran = 0;
  cublasStatus_t refusal = CUBLAS_STATUS_SUCCESS;
  std::string tried;
  for (std::size_t i = 0; i < algos.size(); ++i) {
    const cublasStatus_t st = gemm->try_run(algos[i], buf.a[0].data(), buf.b[0].data(),
                                            buf.d.data(), workspace.data(), workspace.bytes(), s);
    if (st != CUBLAS_STATUS_SUCCESS) {
      refusal = st;
      continue;
    }
    if (candidates_ran == 0) {
      start.record(s);
      run(algos[i], s);
      stop.record(s);
      stop.synchronize();
      const double once_ms = std::max<double>(gpu::Event::elapsed_ms(start, stop), 1e-3);
      const int more = std::min(static_cast<int>(budget.warmup_ms / once_ms), 1000);
      for (int r = 0; r < more; ++r) run(algos[i], s);
    }
    start.record(s);
    for (int r = 0; r < budget.selection_gemms; ++r) run(algos[i], s);
    stop.record(s);
    stop.synchronize();
    const double ms = gpu::Event::elapsed_ms(start, stop) / budget.selection_gemms;
    ++candidates_ran;
    if (!tried.empty()) tried += ", ";
    tried += "#" + std::to_string(algos[i].heuristic_rank) + " " + fixed(ms, 3) + " ms";
    if (!best || ms < best_ms) {
      best = i;
      best_ms = ms;
    }
  }
  if (!best)
    return Result::skipped(key, label, unit,
                           "none of the " + std::to_string(algos.size()) +
                               " algorithms cuBLASLt offered would run (last status " +
                               gpu::cublas_status_name(refusal) + ")");
  const gpu::GemmAlgo& algo = algos[*best];

  // Check before timing: D is set to all-ones bytes first (NaN for the float types, -1 for
  // int32), so an output the GEMM did not write cannot pass.
  GB_CHECK_CUDA(cudaMemsetAsync(buf.d.data(), 0xFF, d_bytes, s));
  gemm->run(algo, buf.a[0].data(), buf.b[0].data(), buf.d.data(), workspace.data(),
            workspace.bytes(), s);
  const std::vector<std::int64_t> rows = gpu::sample_indices(c.shape.m, kSampleRows, seed ^ 0x5A);
  const std::vector<std::int64_t> cols = gpu::sample_indices(c.shape.n, kSampleCols, seed ^ 0xA5);
  const gpu::GemmCheck check = gpu::check_gemm_on_device(*gemm, buf.a[0].data(), buf.b[0].data(),
                                                         buf.d.data(), rows, cols, s);
  if (!check.ok()) {
    std::string reason = "wrong result: rel err " + gpu::format_sci(check.rel_err) + " > tol " +
                         gpu::format_sci(check.tolerance) + " (" + std::to_string(check.samples) +
                         " sampled outputs";
    if (check.nonfinite > 0) reason += ", " + std::to_string(check.nonfinite) + " NaN or inf";
    reason += "; " + types + "; algorithm " + algo.describe() + ")";
    Result r = wrong_result(c, reason);
    r.param("types", types).param("algorithm", algo.describe());
    return r;
  }

  // The timed loop: each sample runs enough GEMMs back to back (~sample_ms) that the gap
  // between the start event and the first kernel is noise.
  const int per_sample =
      std::clamp(static_cast<int>(std::ceil(budget.sample_ms / std::max(best_ms, 1e-3))), 1,
                 kMaxGemmsPerSample);
  sys::TelemetrySampler sampler(ctx.nvml);
  sampler.start();
  const std::vector<double> ms = gpu::time_on_stream(s, budget.timing, [&](cudaStream_t st) {
    for (int i = 0; i < per_sample; ++i) run(algo, st);
  });
  const Telemetry telemetry = sampler.stop();

  const double flop = c.shape.flop();
  std::vector<double> tflops;
  std::vector<double> ms_per_gemm;
  for (const double t : ms) {
    ms_per_gemm.push_back(t / per_sample);
    tflops.push_back(flop / (ms_per_gemm.back() * 1e-3) / 1e12);
  }
  Result r = Result::measured(key, label, unit, std::move(tflops), /*higher_is_better=*/true);
  r.telemetry = telemetry;
  add_references(ctx, c, telemetry, r);

  r.param("m", std::to_string(c.shape.m))
      .param("n", std::to_string(c.shape.n))
      .param("k", std::to_string(c.shape.k))
      .param("flop_per_gemm", fixed(flop, 0))
      .param("time_ms_median", fixed(compute_stats(ms_per_gemm).median, 4))
      .param("types", types)
      .param("layout",
             "TN column-major: A stored k x m (transposed), B k x n, D m x n; "
             "alpha 1, beta 0")
      .param("algorithm", algo.describe())
      .param("heuristic_rank", std::to_string(algo.heuristic_rank))
      .param("workspace_bytes", std::to_string(algo.workspace_bytes))
      .param("candidates", std::to_string(candidates_ran) + " of " + std::to_string(algos.size()) +
                               " ran: " + tried)
      .param("gemms_per_sample", std::to_string(per_sample))
      .param("input_sets",
             std::to_string(sets) + " (A+B " + gib(static_cast<double>(ab_bytes)) + " each)")
      .param("inputs", c.precision == Precision::int8 ? "uniform [-128, 127]"
                                                      : "uniform [-1, 1) rounded to the type")
      .param("validation", check.describe() + ", long-double CPU reference");
  if (c.precision == Precision::fp8)
    r.param("fp8_fast_accum", "off (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0; scales 1)");

  // NVIDIA_TF32_OVERRIDE=0 makes cuBLAS ignore the TF32 request: the figure would be FP32.
  if (const char* v = std::getenv("NVIDIA_TF32_OVERRIDE");
      c.precision == Precision::tf32 && v && std::string(v) == "0") {
    r.status = Status::invalid;
    r.reason = "NVIDIA_TF32_OVERRIDE=0 is set: cuBLAS runs this TF32 request as plain FP32";
  }
  return r;
}

std::string progress_line(const GemmCase& c, const Result& r) {
  std::string line = "gemm " + case_name(c) + ": ";
  switch (r.status) {
    case Status::skipped: return line + "skipped: " + r.reason;
    case Status::fail: return line + "FAILED: " + r.reason;
    default: break;
  }
  line += r.value ? fixed(*r.value, 1) + " " + r.unit : "no value";
  if (const Reference* ref = r.find_reference("datasheet"))
    line += " (" + fixed(ref->ratio * 100, 0) + " % of datasheet)";
  if (r.status == Status::invalid) line += " INVALID: " + r.reason;
  return line;
}

}  // namespace

void probe_gemm(const ProbeContext& ctx, ResultSink& sink) {
  GB_CHECK_CUDA(cudaSetDevice(ctx.device.index));
  const gpu::CublasLtHandle handle = gpu::CublasLtHandle::create();
  const gpu::Stream stream = gpu::Stream::create();
  const gpu::DeviceBuffer workspace(kWorkspaceBytes);
  const Budget budget = budget_for(ctx.options.quick);

  for (const GemmCase& c : gemm_cases(ctx.options.quick)) {
    throw_if_cancelled();
    Result r;
    try {
      r = measure_case(ctx, c, budget, handle.get(), workspace, stream.get());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::runtime) throw;
      // A failed call that left the device usable (a cuBLASLt refusal, a failed allocation)
      // skips this case; a sticky error (a faulting kernel) ends the section.
      (void)cudaGetLastError();
      if (cudaStreamSynchronize(stream.get()) != cudaSuccess ||
          cudaDeviceSynchronize() != cudaSuccess)
        throw;
      r = Result::skipped(case_key(c), case_label(c), std::string(precision_unit(c.precision)),
                          std::string("could not run: ") + e.what());
    }
    sink.progress(progress_line(c, r));
    sink.add(std::move(r));
  }
}

}  // namespace gb::bench
