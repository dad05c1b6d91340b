// bench/gpu/loader_nvjpeg.cpp: the loader's GPU decode path (`gpubase loader --decode gpu`) and
// the CPU/GPU split (`--decode both`), measured end to end: files on disk (or in the page
// cache) to the normalized bf16 NCHW batch tensor in device memory. The path itself is the
// input pipeline's (pipeline/gpu/nvjpeg_batch.hpp); this file measures it in six phases:
// check (options and whether it can run here), initialise (the pipeline and its facts), warm-up
// (three batches, the first checked against the CPU path), trials (batches for
// --seconds, per-batch rates, CPU use), summary (the pipeline's stage times per batch) and, for
// the GPU path alone, beside a busy GPU (does the decode overlap a step, or take turns with it).

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/gpu/busy_steps.hpp"
#include "bench/loader.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "gpu/cuda_raii.hpp"
#include "pipeline/input_pipeline.hpp"
#include "sys/cpu_time.hpp"
#include "sys/host_membw.hpp"
#include "sys/procfs.hpp"

namespace gb::bench {

namespace {

using Clock = std::chrono::steady_clock;
using pipeline::DecodeMode;

// The images of the first batch compared with the CPU path before timing.
constexpr std::size_t kCheckImages = 8;
// Batches before timing: nvJPEG's internal buffers, the arenas, clocks.
constexpr int kWarmupBatches = 3;
constexpr std::size_t kMaxBadExamples = 5;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void add_cpu_usage(const sys::CpuTimes& before, const sys::CpuTimes& after, double interval_s,
                   GpuDecodeMeasurement& m) {
  const sys::CpuUsage usage = sys::cpu_usage_between(before, after, interval_s);
  double sum = 0;
  int n = 0;
  for (const int cpu : sys::allowed_cpus()) {
    const auto it = usage.per_cpu.find(cpu);
    if (it == usage.per_cpu.end()) continue;
    m.cpu_busiest_core_pct = std::max(m.cpu_busiest_core_pct.value_or(0.0), it->second.busy_pct);
    sum += it->second.busy_pct;
    ++n;
  }
  if (n > 0) m.cpu_mean_pct = sum / n;
}

void add_examples(const std::vector<std::string>& from, GpuDecodeMeasurement& m) {
  for (const std::string& e : from)
    if (m.bad_examples.size() < kMaxBadExamples) m.bad_examples.push_back(e);
}

// Check: the pipeline this run measures (the GPU path alone, or the split with its share and
// workers); make_input_pipeline() validates it before anything runs.
pipeline::PipelineOptions checked_options(const LoaderBenchOptions& o,
                                          const std::optional<DecodeSplit>& split,
                                          GpuDecodeMeasurement& m) {
  const unsigned cores =
      static_cast<unsigned>(std::max<std::size_t>(sys::allowed_cpus().size(), 1));
  m.workers = split
                  ? split->workers
                  : (o.gpu_decode_workers > 0 ? o.gpu_decode_workers
                                              : pipeline::default_workers(DecodeMode::gpu, cores));
  m.gpu_share = split ? split->gpu_share : 1.0;
  pipeline::PipelineOptions po =
      pipeline_options(o, split ? DecodeMode::both : DecodeMode::gpu, m.workers);
  if (split) po.gpu_share = split->gpu_share;
  return po;
}

// The backend fact's words for the decoder's memory and flags.
std::string memory_note(const pipeline::DecoderInfo& d) {
  std::string note = d.memory == "pooled"
                         ? ", its buffers pooled"
                         : ", its buffers freed to the driver (GPUBASE_NVJPEG_MEMORY)";
  if (!d.flags.empty()) note += ", nvJPEG flags " + d.flags + " (GPUBASE_NVJPEG_FLAGS)";
  return note;
}

// Initialise: the pipeline (nullptr with why_not when it cannot run here) and, for the GPU path
// alone, the facts about its decoder and output.
std::unique_ptr<pipeline::InputPipeline> initialise(const data::Dataset& dataset,
                                                    const pipeline::PipelineOptions& po, bool split,
                                                    ResultSink& sink, GpuDecodeMeasurement& m,
                                                    std::string& why_not) {
  auto in = pipeline::make_input_pipeline(dataset, po, why_not);
  if (!in) return nullptr;
  const pipeline::DecoderInfo d = in->decoder();
  m.backend = d.backend;
  m.backend_note = d.backend_note;
  m.library = d.library;
  if (!split) {
    sink.add_fact({"loader.gpu_decode.library", "nvJPEG library", m.library});
    sink.add_fact(
        {"loader.gpu_decode.backend", "nvJPEG backend",
         m.backend + (m.backend_note.empty() ? " (NVJPG engines)" : " (" + m.backend_note + ")") +
             memory_note(d)});
    sink.add_fact({"loader.gpu_decode.output", "GPU path output",
                   std::to_string(po.image_size) + "x" + std::to_string(po.image_size) +
                       "x3 normalized, bf16 NCHW, in device memory"});
  }
  return in;
}

// Warm-up: kWarmupBatches batches, the first checked against the CPU path before anything is
// timed; what went bad in them is counted, then the stats start afresh. False after Ctrl-C.
bool warm_up(pipeline::InputPipeline& in, cudaStream_t compute, ResultSink& sink,
             GpuDecodeMeasurement& m) {
  for (int k = 0; k < kWarmupBatches; ++k) {
    if (!in.next(compute)) return false;
    if (k > 0) continue;
    if (const auto check = in.check_last_batch(kCheckImages)) {
      m.check_psnr_db = check->psnr_db;
      m.check_images = check->images;
    }
    sink.progress("  checked against the CPU path: PSNR " +
                  std::to_string(static_cast<int>(m.check_psnr_db)) + " dB on " +
                  std::to_string(m.check_images) + " images");
  }
  in.drain();
  const pipeline::PipelineStats warm = in.stats();
  m.bad_samples = warm.loader.bad_samples;
  m.decode_failures = warm.decode_failures;
  add_examples(warm.decode_failure_examples, m);
  add_examples(warm.loader.bad_examples, m);
  in.reset_stats();
  return true;
}

struct TrialClock {
  double wall_s = 0;
  double cpu_s = 0;
  std::optional<sys::CpuTimes> before, after;
};

// Trials: batches until `seconds` have passed, a rate per batch from the gaps between them; the
// GPU work of the last ones is waited for inside the timed wall time.
TrialClock run_trials(pipeline::InputPipeline& in, cudaStream_t compute, double seconds,
                      GpuDecodeMeasurement& m) {
  TrialClock c;
  c.before = sys::read_proc_stat();
  const double cpu_s0 = sys::process_cpu_seconds();
  const auto t0 = Clock::now();
  auto last = t0;
  while (seconds_since(t0) < seconds) {
    const auto b = in.next(compute);
    if (!b) {
      m.interrupted = true;
      break;
    }
    m.images += b->size;
    ++m.batches;
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    if (dt > 0) m.batch_images_per_s.push_back(static_cast<double>(b->size) / dt);
  }
  in.drain();
  c.wall_s = seconds_since(t0);
  c.cpu_s = sys::process_cpu_seconds() - cpu_s0;
  c.after = sys::read_proc_stat();
  return c;
}

// Summary: the pipeline's totals over the trials, per batch (GPU, host) and per CPU-decoded
// image (the split's CPU stages are zero for the samples sent to nvJPEG).
void summarise(const pipeline::PipelineStats& s, const TrialClock& c, GpuDecodeMeasurement& m) {
  m.single_decodes = s.single_decodes;
  m.gpu_decoded = s.gpu_decoded;
  m.cpu_decoded = s.cpu_decoded;
  m.wall_images_per_s = c.wall_s > 0 ? static_cast<double>(m.images) / c.wall_s : 0;
  if (c.wall_s > 0) m.cpu_cores_used = c.cpu_s / c.wall_s;
  if (c.before && c.after) add_cpu_usage(*c.before, *c.after, c.wall_s, m);
  const double batches = static_cast<double>(std::max<std::size_t>(m.batches, 1));
  m.host_read_ms = (s.loader.read.total_s + s.loader.process.total_s) * 1e3 / batches;
  m.consumer_wait_ms = s.loader.consumer_wait.total_s * 1e3 / batches;
  const double gpu_batches = static_cast<double>(s.gpu_batches);
  if (s.gpu_batches > 0) {
    m.decode_ms = s.decode_gpu_ms / gpu_batches;
    m.resize_ms = s.resize_ms / gpu_batches;
    m.decode_host_ms = s.decode_host_ms / gpu_batches;
  }
  const double cpu_fraction =
      m.images ? static_cast<double>(m.cpu_decoded) / static_cast<double>(m.images) : 0;
  for (const data::StageTotal& st : s.loader.stages) {
    const double cpu_samples = static_cast<double>(st.time.count) * cpu_fraction;
    const double ms = cpu_samples > 0 ? st.time.total_s * 1e3 / cpu_samples : 0;
    if (st.name == "decode") m.cpu_decode_ms = ms;
    if (st.name == "augment") m.cpu_augment_ms = ms;
  }
  m.bad_samples += s.loader.bad_samples;
  m.decode_failures += s.decode_failures;
  add_examples(s.decode_failure_examples, m);
  add_examples(s.loader.bad_examples, m);
}

// Beside a busy GPU: the pipeline feeds stand-in steps of kBesideStepFactor x its own time per
// batch for kBesideSeconds. Where nvJPEG's call overlaps a step the GPU hardly waits; where the
// call waits for the device, the decode and the step take turns (GpuDecodeMeasurement).
constexpr double kBesideSeconds = 1.0;

void beside_busy_step(pipeline::InputPipeline& in, cudaStream_t compute, GpuDecodeMeasurement& m) {
  if (m.interrupted || m.batch_images_per_s.empty() || m.batches == 0) return;
  const double per_batch = static_cast<double>(m.images) / static_cast<double>(m.batches);
  const double rate = quantile(m.batch_images_per_s, 0.5);
  if (!(rate > 0)) return;
  DataWaitMeasurement w = feed_busy_steps(in, compute, kBesideStepFactor * 1e3 * per_batch / rate,
                                          kBesideSeconds, /*warmup=*/2);
  if (w.interrupted) {
    m.interrupted = true;
    return;
  }
  if (w.step_ms_measured.empty() || !(w.wall_ms > 0)) return;
  const pipeline::PipelineStats s = in.stats();
  if (s.gpu_batches > 0) m.beside_decode_host_ms = s.decode_host_ms / static_cast<double>(s.gpu_batches);
  w.workers = m.workers;
  m.beside_step = std::move(w);
}

}  // namespace

std::optional<GpuDecodeMeasurement> measure_gpu_decode(const data::Dataset& dataset,
                                                       const LoaderBenchOptions& o,
                                                       ResultSink& sink, std::string& why_not,
                                                       std::optional<DecodeSplit> split) {
  GpuDecodeMeasurement m;
  const pipeline::PipelineOptions po = checked_options(o, split, m);
  const auto in = initialise(dataset, po, split.has_value(), sink, m, why_not);
  if (!in) return std::nullopt;
  const gpu::Stream compute = gpu::Stream::create();  // the consumer's: the kernel runs here
  if (!warm_up(*in, compute.get(), sink, m)) {
    m.interrupted = true;
    return m;
  }
  const TrialClock clock = run_trials(*in, compute.get(), o.seconds_per_point, m);
  const pipeline::PipelineStats stats = in->stats();
  summarise(stats, clock, m);
  if (stats.arena_grows > 2) {
    sink.progress("  decoded-image arena grew " + std::to_string(stats.arena_grows) +
                  " times (a larger image than any before)");
  }
  m.interrupted = m.interrupted || cancel_requested();
  if (!split) beside_busy_step(*in, compute.get(), m);
  return m;
}

}  // namespace gb::bench
