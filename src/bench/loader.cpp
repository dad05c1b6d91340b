// bench/loader.cpp: see loader.hpp.
#include "bench/loader.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "data/decode.hpp"
#include "pipeline/process.hpp"
#include "pipeline/split.hpp"
#include "sys/cpu_info.hpp"
#include "sys/host_membw.hpp"
#include "sys/procfs.hpp"

namespace gb::bench {

using pipeline::DecodeMode;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Busiest and mean busy share of the usable cores between two /proc/stat samples.
void add_cpu_usage(const sys::CpuTimes& before, const sys::CpuTimes& after, double interval_s,
                   LoaderPoint& p) {
  const sys::CpuUsage usage = sys::cpu_usage_between(before, after, interval_s);
  p.context_switches_per_s = usage.context_switches_per_s;
  double sum = 0;
  int n = 0;
  for (const int cpu : sys::allowed_cpus()) {
    const auto it = usage.per_cpu.find(cpu);
    if (it == usage.per_cpu.end()) continue;
    const double busy = it->second.busy_pct;
    p.cpu_busiest_core_pct = std::max(p.cpu_busiest_core_pct.value_or(0.0), busy);
    sum += busy;
    ++n;
  }
  if (n > 0) p.cpu_mean_pct = sum / n;
}

void add_bad(const data::LoaderStats& s, LoaderPoint& p) {
  p.bad_samples += s.bad_samples;
  for (const std::string& e : s.bad_examples)
    if (p.bad_examples.size() < 5) p.bad_examples.push_back(e);
}

// One sweep point; empty when Ctrl-C came before it was complete.
std::optional<LoaderPoint> measure_point(const data::Dataset& dataset, const LoaderBenchOptions& o,
                                         unsigned workers) {
  data::Loader loader(dataset, loader_options(o, workers),
                      pipeline::jpeg_train_process(workers, o.image_size));
  std::uint32_t epoch = 0;
  loader.start_epoch(epoch);
  auto take = [&] { return pipeline::next_batch(loader, epoch); };

  LoaderPoint p;
  p.workers = workers;
  {
    const auto warm = take();
    if (!warm) return std::nullopt;
    loader.release(*warm);
  }
  // A sample found bad in the warm-up is remembered, not found again: count it now.
  add_bad(loader.stats(), p);
  loader.reset_stats();
  const auto cpu_before = sys::read_proc_stat();
  const auto t0 = Clock::now();
  auto last = t0;
  while (seconds_since(t0) < o.seconds_per_point) {
    const auto b = take();
    if (!b) return std::nullopt;
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    if (dt > 0) p.batch_images_per_s.push_back(static_cast<double>(b->size) / dt);
    p.substituted += b->substituted;
    loader.release(*b);
  }
  const double interval_s = seconds_since(t0);
  const auto cpu_after = sys::read_proc_stat();
  const data::LoaderStats s = loader.stats();
  loader.stop();

  p.images_per_s = p.batch_images_per_s.empty() ? 0 : quantile(p.batch_images_per_s, 0.5);
  p.wall_images_per_s = s.images_per_s();
  p.images_per_busy_core_s = s.images_per_busy_core_s();
  p.images = s.samples;
  p.read_ms = s.read.mean_s() * 1e3;
  for (const data::StageTotal& st : s.stages) {
    if (st.name == "decode") p.decode_ms = st.time.mean_s() * 1e3;
    if (st.name == "augment") p.augment_ms = st.time.mean_s() * 1e3;
  }
  p.worker_idle_share = s.worker_idle_share();
  add_bad(s, p);
  if (cpu_before && cpu_after) add_cpu_usage(*cpu_before, *cpu_after, interval_s, p);
  return p;
}

std::string progress_text(const LoaderPoint& p) {
  return "workers " + std::to_string(p.workers) + ": " + grouped(p.images_per_s) + " images/s (" +
         grouped(p.images_per_busy_core_s) + " per core), decode " + fixed(p.decode_ms, 1) +
         " ms, augment " + fixed(p.augment_ms, 1) + " ms";
}

std::string sweep_text(const std::vector<LoaderPoint>& points) {
  std::string text;
  for (const LoaderPoint& p : points)
    text += (text.empty() ? "" : ", ") + std::to_string(p.workers) + ": " + grouped(p.images_per_s);
  return text + " images/s";
}

Result point_result(const LoaderPoint& p) {
  const std::string n = std::to_string(p.workers);
  Result r = Result::measured("loader.cpu.w" + n + ".images_per_s",
                              "loader CPU path, " + n + (p.workers == 1 ? " worker" : " workers"),
                              "images/s", p.batch_images_per_s);
  r.param("workers", static_cast<double>(p.workers), "", 0)
      .param("images_per_busy_core_s", p.images_per_busy_core_s, "images/s", 0)
      .param("wall_images_per_s", p.wall_images_per_s, "images/s", 0)
      .param("read_ms", p.read_ms, "ms", 3)
      .param("decode_ms", p.decode_ms, "ms", 3)
      .param("augment_ms", p.augment_ms, "ms", 3)
      .param("worker_idle_pct", 100 * p.worker_idle_share, "%", 1)
      .param("images_timed", static_cast<double>(p.images), "", 0)
      .param("bad_samples", static_cast<double>(p.bad_samples), "", 0)
      .param("substituted", static_cast<double>(p.substituted), "", 0);
  if (p.cpu_busiest_core_pct) r.param("cpu_busiest_core_pct", *p.cpu_busiest_core_pct, "%", 1);
  if (p.cpu_mean_pct) r.param("cpu_mean_pct", *p.cpu_mean_pct, "%", 1);
  if (p.context_switches_per_s)
    r.param("context_switches_per_s", *p.context_switches_per_s, "/s", 0);
  return r;
}

Result stage_result(const std::string& stage, double ms, const LoaderPoint& best) {
  Result r = Result::measured("loader.stage." + stage + ".ms", stage + " per image", "ms", {ms},
                              /*higher_is_better=*/false);
  r.param("workers", static_cast<double>(best.workers), "", 0);
  return r;
}

}  // namespace

pipeline::PipelineOptions pipeline_options(const LoaderBenchOptions& o, pipeline::DecodeMode decode,
                                           unsigned workers) {
  pipeline::PipelineOptions p;
  p.batch = o.batch_size;
  p.image_size = o.image_size;
  p.layout = data::TensorLayout::nchw;
  p.dtype = ElementType::bf16;
  p.decode = decode;
  p.workers = workers;
  p.prefetch = o.prefetch_depth;
  p.seed = o.seed;
  p.strict = o.strict;
  p.nvjpeg_backend = o.nvjpeg_backend;
  p.max_jpeg_bytes = o.gpu_max_jpeg_bytes;
  return p;
}

data::LoaderOptions loader_options(const LoaderBenchOptions& o, unsigned workers) {
  return pipeline::cpu_loader_options(pipeline_options(o, pipeline::DecodeMode::cpu, workers),
                                      workers);
}

std::vector<unsigned> default_worker_sweep(unsigned cores) {
  std::vector<unsigned> sweep;
  for (unsigned w = 1; w < cores; w *= 2) sweep.push_back(w);
  sweep.push_back(std::max(cores, 1u));
  return sweep;
}

std::vector<Result> loader_results(const std::vector<LoaderPoint>& points) {
  std::vector<Result> out;
  for (const LoaderPoint& p : points) out.push_back(point_result(p));
  if (!points.empty()) {
    const LoaderPoint& best = *std::max_element(
        points.begin(), points.end(),
        [](const LoaderPoint& a, const LoaderPoint& b) { return a.images_per_s < b.images_per_s; });

    Result b = Result::measured("loader.cpu.best.images_per_s", "loader CPU path, best sweep point",
                                "images/s", best.batch_images_per_s);
    b.param("workers", static_cast<double>(best.workers), "", 0);
    out.push_back(std::move(b));

    // Per core: the 1-worker point when swept; else the fewest workers' rate per busy core.
    const LoaderPoint& fewest = *std::min_element(
        points.begin(), points.end(),
        [](const LoaderPoint& a, const LoaderPoint& c) { return a.workers < c.workers; });
    Result pc =
        fewest.workers == 1
            ? Result::measured("loader.cpu.per_core.images_per_s", "loader CPU path per core",
                               "images/s", fewest.batch_images_per_s)
            : Result::measured("loader.cpu.per_core.images_per_s", "loader CPU path per core",
                               "images/s", {fewest.images_per_busy_core_s});
    pc.param("workers", static_cast<double>(fewest.workers), "", 0)
        .param("images_per_busy_core_s", fewest.images_per_busy_core_s, "images/s", 0)
        .param("target_images_per_s", kLoaderTargetPerCoreImagesPerS, "images/s", 0)
        .param("target_source",
               "CPU path target: >= 800 images/s per core on the synthetic ImageNet-like set, "
               "3-4x a torchvision DataLoader worker (205-270 images/s)");
    out.push_back(std::move(pc));

    const LoaderPoint* knee = &best;
    for (const LoaderPoint& p : points)
      if (p.images_per_s >= kLoaderKneeShare * best.images_per_s && p.workers < knee->workers)
        knee = &p;
    Result k = Result::measured("loader.cpu.knee.workers", "fewest workers within 3 % of the best",
                                "workers", {static_cast<double>(knee->workers)});
    k.param("sweep", sweep_text(points)).param("best_workers", static_cast<double>(best.workers), "", 0);
    out.push_back(std::move(k));

    // More workers than the best point, and slower by more than the knee's margin.
    const LoaderPoint* slowest_beyond = nullptr;
    for (const LoaderPoint& p : points)
      if (p.workers > best.workers &&
          (!slowest_beyond || p.images_per_s < slowest_beyond->images_per_s))
        slowest_beyond = &p;
    if (slowest_beyond && slowest_beyond->images_per_s < kLoaderKneeShare * best.images_per_s) {
      const double drop_pct = 100 * (1 - slowest_beyond->images_per_s / best.images_per_s);
      Result o = Result::measured("loader.cpu.oversubscribed",
                                  "slower with more workers than the best point", "%", {drop_pct},
                                  /*higher_is_better=*/false);
      o.reason = std::to_string(slowest_beyond->workers) +
                 " workers: " + grouped(slowest_beyond->images_per_s) + " images/s, " +
                 fixed(drop_pct, 1) + " % below " + std::to_string(best.workers) + " workers' " +
                 grouped(best.images_per_s);
      if (slowest_beyond->context_switches_per_s && best.context_switches_per_s)
        o.reason += "; context switches " + grouped(*slowest_beyond->context_switches_per_s) +
                    "/s against " + grouped(*best.context_switches_per_s) + "/s";
      o.param("sweep", sweep_text(points));
      out.push_back(std::move(o));
    }

    out.push_back(stage_result("read", best.read_ms, best));
    out.push_back(stage_result("decode", best.decode_ms, best));
    out.push_back(stage_result("augment", best.augment_ms, best));

    std::size_t bad = 0;
    const LoaderPoint* bad_point = nullptr;
    for (const LoaderPoint& p : points)
      if (!bad_point || p.bad_samples > bad) {
        bad = p.bad_samples;
        bad_point = &p;
      }
    Result bs = Result::measured("loader.bad_samples", "bad samples (substituted)", "samples",
                                 {static_cast<double>(bad)}, /*higher_is_better=*/false);
    for (const std::string& e : bad_point->bad_examples)
      bs.reason += (bs.reason.empty() ? "" : "; ") + e;
    out.push_back(std::move(bs));
  }
  return out;
}

namespace {
// Prefetch depths the data-wait share is also measured at (batches in the pinned ring).
constexpr std::size_t kPrefetchSweep[] = {1, 2, 4, 8};
}  // namespace

#ifndef GPUBASE_WITH_CUDA
std::optional<DataWaitMeasurement> measure_data_wait(const data::Dataset&,
                                                     const LoaderBenchOptions&, unsigned) {
  return std::nullopt;  // a build without CUDA has no GPU half
}
std::optional<BatchCopyMeasurement> measure_batch_copy(std::size_t) { return std::nullopt; }
std::optional<GpuDecodeMeasurement> measure_gpu_decode(const data::Dataset&,
                                                       const LoaderBenchOptions&, ResultSink&,
                                                       std::string& why_not,
                                                       std::optional<DecodeSplit>) {
  why_not = "built without CUDA: the GPU decode path needs nvJPEG and a GPU";
  return std::nullopt;
}
#endif

namespace {
// What a GPU-path run and a split run report alike: the nvJPEG stage times per batch, the
// consumer's wait and the host CPU use.
void add_gpu_run_params(Result& r, const GpuDecodeMeasurement& m) {
  r.param("decode_ms_per_batch", m.decode_ms, "ms", 2)
      .param("decode_host_ms_per_batch", m.decode_host_ms, "ms", 2)
      .param("consumer_wait_ms_per_batch", m.consumer_wait_ms, "ms", 2);
  if (m.images > 0 && m.batches > 0)
    r.param("decode_host_us_per_image",
            1000 * m.decode_host_ms * static_cast<double>(m.batches) / static_cast<double>(m.images),
            "us", 1);
  if (m.cpu_cores_used) r.param("cpu_cores_used", *m.cpu_cores_used, "", 2);
  if (m.cpu_busiest_core_pct) r.param("cpu_busiest_core_pct", *m.cpu_busiest_core_pct, "%", 1);
  if (m.cpu_mean_pct) r.param("cpu_mean_pct", *m.cpu_mean_pct, "%", 1);
}

// The GPU path beside a busy GPU (GpuDecodeMeasurement::beside_step).
Result beside_step_result(const GpuDecodeMeasurement& m) {
  const DataWaitMeasurement& w = *m.beside_step;
  Result r = Result::measured("loader.gpu_decode.beside_step.data_wait.pct",
                              "GPU path beside a busy GPU: share of the time the GPU waited",
                              "%", {w.wait_share_pct}, /*higher_is_better=*/false);
  r.param("step_ms", w.step_ms, "ms", 1)
      .param("step", "one block spinning per batch (the SMs left free), " +
                         fixed(kBesideStepFactor, 0) + "x the path's own time per batch")
      .param("decode_host_ms_per_batch", m.beside_decode_host_ms, "ms", 2)
      .param("decode_host_ms_per_batch_alone", m.decode_host_ms, "ms", 2)
      .param("fed_images_per_s", w.images_per_s, "images/s", 0)
      .param("decode", nvjpeg_overlaps_step(w.wait_share_pct)
                           ? "overlaps the step"
                           : "takes turns with the step (nvJPEG's call waits for the device)");
  return r;
}

Result gpu_bad_samples_result(const std::string& key, const std::string& label,
                              const GpuDecodeMeasurement& m) {
  Result bad = Result::measured(key, label, "samples",
                                {static_cast<double>(m.bad_samples + m.decode_failures)},
                                /*higher_is_better=*/false);
  bad.param("before_decode", static_cast<double>(m.bad_samples), "", 0)
      .param("decode_failures", static_cast<double>(m.decode_failures), "", 0);
  for (const std::string& e : m.bad_examples) bad.reason += (bad.reason.empty() ? "" : "; ") + e;
  return bad;
}
}  // namespace

std::vector<Result> split_results(const std::optional<GpuDecodeMeasurement>& m,
                                  const std::string& why_not) {
  const char* key = "loader.split.images_per_s";
  const char* label = "loader CPU/GPU split, end to end";
  if (!m) return {Result::skipped(key, label, "images/s", why_not)};
  std::vector<Result> out;
  Result r = Result::measured(key, label, "images/s", m->batch_images_per_s);
  const double decoded = static_cast<double>(m->gpu_decoded + m->cpu_decoded);
  r.param("gpu_share_asked_pct", 100 * m->gpu_share, "%", 1)
      .param("gpu_share_pct",
             decoded > 0 ? 100 * static_cast<double>(m->gpu_decoded) / decoded : 0, "%", 1)
      .param("gpu_decoded", static_cast<double>(m->gpu_decoded), "", 0)
      .param("cpu_decoded", static_cast<double>(m->cpu_decoded), "", 0)
      .param("workers", static_cast<double>(m->workers), "", 0)
      .param("backend", m->backend)
      .param("wall_images_per_s", m->wall_images_per_s, "images/s", 0)
      .param("cpu_decode_ms", m->cpu_decode_ms, "ms", 3)
      .param("cpu_augment_ms", m->cpu_augment_ms, "ms", 3)
      .param("check", "PSNR " + fixed(m->check_psnr_db, 1) + " dB against the CPU path on " +
                          std::to_string(m->check_images) + " GPU-decoded images before timing")
      .param("target_images_per_s", kLoaderHostTargetImagesPerS, "images/s", 0)
      .param("target_source",
             "host target: >= 10,000 images/s end to end on the 16-core H200 host, more than "
             "ResNet-50 trains at in mixed precision there");
  add_gpu_run_params(r, *m);
  out.push_back(std::move(r));
  Result share = Result::measured("loader.split.gpu_share.pct", "split: samples decoded by nvJPEG",
                                  "%", {decoded > 0 ? 100 * static_cast<double>(m->gpu_decoded) /
                                                          decoded
                                                    : 0});
  share.param("asked_pct", 100 * m->gpu_share, "%", 1);
  out.push_back(std::move(share));
  if (m->cpu_cores_used) {
    Result c = Result::measured("loader.split.cpu_cores", "split: CPU cores busy", "cores",
                                {*m->cpu_cores_used}, /*higher_is_better=*/false);
    c.param("workers", static_cast<double>(m->workers), "", 0);
    out.push_back(std::move(c));
  }
  out.push_back(gpu_bad_samples_result(
      "loader.split.bad_samples", "split: bad samples (substituted or left at the mean)", *m));
  return out;
}

std::vector<Result> gpu_decode_results(const std::optional<GpuDecodeMeasurement>& m,
                                       const std::string& why_not) {
  const char* key = "loader.gpu_decode.images_per_s";
  const char* label = "loader GPU decode path (nvJPEG), end to end";
  if (!m) return {Result::skipped(key, label, "images/s", why_not)};
  std::vector<Result> out;
  Result r = Result::measured(key, label, "images/s", m->batch_images_per_s);
  r.param("backend", m->backend + (m->backend_note.empty() ? "" : " (" + m->backend_note + ")"))
      .param("library", m->library)
      .param("reader_threads", static_cast<double>(m->workers), "", 0)
      .param("wall_images_per_s", m->wall_images_per_s, "images/s", 0)
      .param("images_timed", static_cast<double>(m->images), "", 0)
      .param("batches_timed", static_cast<double>(m->batches), "", 0)
      .param("host_read_ms_per_batch", m->host_read_ms, "ms", 2)
      .param("resize_ms_per_batch", m->resize_ms, "ms", 3)
      .param("single_decodes", static_cast<double>(m->single_decodes), "", 0)
      .param("check", "PSNR " + fixed(m->check_psnr_db, 1) + " dB against the CPU path on " +
                          std::to_string(m->check_images) + " images before timing")
      .param("target_images_per_s", kLoaderGpuDecodeTargetImagesPerS, "images/s", 0)
      .param("target_source",
             "GPU decode target: the nvJPEG path >= 15,000 images/s end to end, files to the "
             "normalized batch tensor: ~70 % of torchvision's batched decode alone (21,000)");
  add_gpu_run_params(r, *m);
  out.push_back(std::move(r));

  const double per_batch =
      m->batches ? static_cast<double>(m->images) / static_cast<double>(m->batches) : 0;
  auto stage = [&](const std::string& name, const std::string& what, double ms) {
    Result s = Result::measured("loader.gpu_decode.stage." + name + ".ms", what, "ms", {ms},
                                /*higher_is_better=*/false);
    s.param("per", "batch of " + fixed(per_batch, 0) + " images");
    out.push_back(std::move(s));
  };
  stage("read", "GPU path: host read + header + copy per batch (CPU ms, all threads)",
        m->host_read_ms);
  stage("decode", "GPU path: nvJPEG decode per batch (GPU)", m->decode_ms);
  stage("resize", "GPU path: resize-crop-flip-normalize kernel per batch (GPU)", m->resize_ms);
  if (m->cpu_cores_used) {
    Result c = Result::measured("loader.gpu_decode.cpu_cores", "GPU path: CPU cores busy",
                                "cores", {*m->cpu_cores_used}, /*higher_is_better=*/false);
    c.param("reader_threads", static_cast<double>(m->workers), "", 0);
    out.push_back(std::move(c));
  }
  out.push_back(gpu_bad_samples_result(
      "loader.gpu_decode.bad_samples", "GPU path: bad samples (substituted or left at the mean)",
      *m));
  if (m->beside_step) out.push_back(beside_step_result(*m));
  return out;
}

Result data_wait_result(const std::optional<DataWaitMeasurement>& m, const std::string& why_not) {
  const char* key = "loader.data_wait_share.pct";
  const char* label = "data loading share of step time (GPU waiting for data)";
  if (!m) return Result::skipped(key, label, "%", why_not);
  Result r = Result::measured(key, label, "%", {m->wait_share_pct}, /*higher_is_better=*/false);
  r.param("workers", static_cast<double>(m->workers), "", 0);
  r.param("step_ms_asked", m->step_ms, "ms", 1)
      .param("step_ms_measured",
             m->step_ms_measured.empty() ? 0 : quantile(m->step_ms_measured, 0.5), "ms", 1)
      .param("step", "a calibrated busy kernel per batch (median of the measured steps)")
      .param("fed_images_per_s", m->images_per_s, "images/s", 0)
      .param("fed", "through pinned slots, H2D and the normalization kernel (bf16, NCHW)")
      .param("host_blocked_ms", m->consumer_wait_ms, "ms", 1)
      .param("wall_ms", m->wall_ms, "ms", 1);
  return r;
}

namespace {
// The CPU sweep, its summary results, the data-wait share and the batch copy (--decode cpu|both).
void run_cpu_sweep(const data::Dataset& dataset, const LoaderBenchOptions& options,
                   const std::vector<unsigned>& sweep, ResultSink& sink,
                   LoaderBenchOutcome& outcome) {
  for (const unsigned workers : sweep) {
    if (cancel_requested()) break;
    auto point = measure_point(dataset, options, workers);
    if (!point) break;
    sink.progress(progress_text(*point));
    outcome.points.push_back(std::move(*point));
  }
  outcome.interrupted = cancel_requested();

  std::size_t images = 0;
  for (const LoaderPoint& p : outcome.points) images += p.images;
  sink.add_fact({"loader.images_timed", "images timed (all points)", std::to_string(images)});
  for (Result& r : loader_results(outcome.points)) sink.add(std::move(r));
  if (!options.data_wait) return;

  // The data-wait share: the best worker count feeding a GPU step of known length.
#ifdef GPUBASE_WITH_CUDA
  std::string why_not = "no GPU found: the data-wait share needs a GPU step to feed";
#else
  std::string why_not = "built without CUDA: the data-wait share needs a GPU step to feed";
#endif
  std::optional<DataWaitMeasurement> wait;
  if (!outcome.interrupted && !outcome.points.empty()) {
    const auto best = std::max_element(
        outcome.points.begin(), outcome.points.end(),
        [](const LoaderPoint& a, const LoaderPoint& b) { return a.images_per_s < b.images_per_s; });
    sink.progress("data-wait share: " + std::to_string(best->workers) +
                  " workers feeding a GPU step of " +
                  fixed(1e3 * static_cast<double>(options.batch_size) / options.gpu_images_per_s,
                        1) +
                  " ms");
    // The configured prefetch depth first (the checklist's figure), then the depth sweep.
    std::vector<std::size_t> depths = {options.prefetch_depth};
    for (const std::size_t d : kPrefetchSweep)
      if (d != options.prefetch_depth) depths.push_back(d);
    for (const std::size_t depth : depths) {
      LoaderBenchOptions o = options;
      o.prefetch_depth = depth;
      auto m = measure_data_wait(dataset, o, best->workers);
      if (!m) break;  // no GPU
      if (m->interrupted) {
        outcome.interrupted = true;
        why_not = "interrupted";
        break;
      }
      sink.progress("  prefetch " + std::to_string(depth) + ": GPU waited " +
                    fixed(m->wait_share_pct, 1) + " % of the time");
      Result r = data_wait_result(m, "");
      r.key = "loader.gpu.prefetch.d" + std::to_string(depth) + ".data_wait_share.pct";
      r.label = "GPU waiting for data, prefetch depth " + std::to_string(depth);
      if (depth == options.prefetch_depth) wait = m;
      sink.add(std::move(r));
    }
  } else if (outcome.interrupted) {
    why_not = "interrupted";
  }
  sink.add(data_wait_result(wait, why_not));
  if (wait) {
    const std::size_t bytes =
        options.batch_size * static_cast<std::size_t>(options.image_size) * options.image_size * 3;
    if (const auto copy = measure_batch_copy(bytes)) {
      for (const auto& [kind, gbps] : {std::pair<const char*, double>{"pinned", copy->pinned_gbps},
                                       {"pageable", copy->pageable_gbps}}) {
        Result r = Result::measured(std::string("loader.gpu.h2d.") + kind + ".gbps",
                                    std::string("one batch host to GPU, ") + kind + " memory",
                                    "GB/s", {gbps});
        r.param("bytes", static_cast<double>(bytes), "B", 0);
        sink.add(std::move(r));
      }
    }
  }
}
// The CPU/GPU split after both paths were measured alone: the share from their rates (or the
// one asked for), every usable core but the consumer's as a worker.
void run_split(const data::Dataset& dataset, const LoaderBenchOptions& o, unsigned cores,
               LoaderBenchOutcome& outcome, const std::optional<GpuDecodeMeasurement>& gpu,
               ResultSink& sink) {
  std::string why_not;
  std::optional<GpuDecodeMeasurement> m;
  if (!gpu) {
    why_not = "the GPU decode path did not run";
  } else if (outcome.points.empty()) {
    why_not = "the CPU sweep measured nothing";
  } else {
    const LoaderPoint& best = *std::max_element(
        outcome.points.begin(), outcome.points.end(),
        [](const LoaderPoint& a, const LoaderPoint& b) { return a.images_per_s < b.images_per_s; });
    const double gpu_rate =
        gpu->batch_images_per_s.empty() ? 0 : quantile(gpu->batch_images_per_s, 0.5);
    DecodeSplit split;
    split.gpu_share =
        o.gpu_share > 0 ? o.gpu_share : pipeline::balanced_gpu_share(gpu_rate, best.images_per_s);
    split.workers = std::max(1u, cores > 1 ? cores - 1 : 1u);
    sink.progress("CPU/GPU split: " + fixed(100 * split.gpu_share, 0) + " % of the samples to " +
                  "nvJPEG (" + (o.gpu_share > 0 ? std::string("asked") :
                                "GPU " + grouped(gpu_rate) + " vs CPU " +
                                grouped(best.images_per_s) + " images/s") +
                  "), " + std::to_string(split.workers) + " workers");
    m = measure_gpu_decode(dataset, o, sink, why_not, split);
    if (m) {
      const double median =
          m->batch_images_per_s.empty() ? 0 : quantile(m->batch_images_per_s, 0.5);
      sink.progress("  " + grouped(median) + " images/s, " +
                    fixed(m->cpu_cores_used.value_or(0), 1) + " CPU cores busy");
      if (m->interrupted) outcome.interrupted = true;
    } else {
      sink.progress("  skipped: " + why_not);
    }
  }
  for (Result& r : split_results(m, why_not)) sink.add(std::move(r));
}

}  // namespace

std::span<const SectionRule> loader_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"loader.cpu", "loader.cpu", "Loader, CPU path (read, JPEG decode, crop + flip)",
       Layout::benchmark},
      {"loader.bad_samples", "loader.cpu", "Loader, CPU path (read, JPEG decode, crop + flip)",
       Layout::benchmark},
      {"loader.stage", "loader.stage", "Loader, time per image by stage (best point)",
       Layout::benchmark},
      {"loader.data_wait_share", "loader.data_wait_share", "Loader feeding a GPU step",
       Layout::benchmark},
      {"loader.gpu", "loader.gpu", "Loader feeding a GPU step, by prefetch depth",
       Layout::benchmark},
      {"loader.gpu_decode", "loader.gpu_decode", "Loader, GPU decode path (nvJPEG, resize kernel)",
       Layout::benchmark},
      {"loader.split", "loader.split", "Loader, CPU/GPU split (CPU decode + nvJPEG, one tensor)",
       Layout::benchmark},
  };
  return kRules;
}

LoaderBenchOutcome run_loader_bench(const data::Dataset& dataset, const LoaderBenchOptions& options,
                                    ResultSink& sink) {
  sink.declare_sections(loader_section_rules());
  if (dataset.format() != data::SampleFormat::jpeg) {
    throw Error(ErrorKind::usage, "loader benchmark needs JPEG samples: " + dataset.source() +
                                      " (" + std::string(dataset.kind()) + ") holds " +
                                      std::string(data::to_string(dataset.format())) + " samples");
  }
  if (dataset.size() == 0) throw Error(ErrorKind::usage, dataset.source() + ": no samples to load");
  if (options.batch_size == 0 || options.image_size <= 0 || options.prefetch_depth == 0 ||
      !(options.seconds_per_point > 0) || !(options.gpu_images_per_s > 0)) {
    throw Error(ErrorKind::usage,
                "loader benchmark: batch, size, prefetch, seconds and GPU rate must be positive");
  }
  // The ring holds prefetch x batch x size^2 x 3 bytes of pinned slots: refuse a ring that
  // cannot fit (--batch 100000000 asked for petabytes) before allocating any of it.
  constexpr double kMaxRingBytes = 64.0 * (1ull << 30);
  const double ring_bytes = static_cast<double>(options.prefetch_depth) *
                            static_cast<double>(options.batch_size) * options.image_size *
                            options.image_size * 3;
  if (ring_bytes > kMaxRingBytes) {
    throw Error(ErrorKind::usage,
                "loader benchmark: --prefetch " + std::to_string(options.prefetch_depth) +
                    " x --batch " + std::to_string(options.batch_size) + " x --size " +
                    std::to_string(options.image_size) + "^2 x 3 bytes is " +
                    fixed(ring_bytes / (1ull << 30), 0) + " GiB of batch slots; at most 64 GiB");
  }
  const std::vector<int> cpus = sys::allowed_cpus();
  const unsigned cores = static_cast<unsigned>(std::max<std::size_t>(cpus.size(), 1));
  std::vector<unsigned> sweep =
      options.workers.empty() ? default_worker_sweep(cores) : options.workers;
  std::sort(sweep.begin(), sweep.end());
  sweep.erase(std::unique(sweep.begin(), sweep.end()), sweep.end());
  if (sweep.front() == 0) throw Error(ErrorKind::usage, "loader benchmark: workers must be >= 1");
  if (!(options.gpu_share >= 0 && options.gpu_share <= 1)) {
    throw Error(ErrorKind::usage, "--gpu-share: give the share of samples nvJPEG decodes, in "
                                  "(0, 1], or 0 for the one that keeps both paths busy");
  }

  std::string no_gpu;  // the GPU parts say why they did not run
  const std::optional<DeviceContext> gpu = open_device(options.device, no_gpu);

  for (Fact& f : sys::host_facts(sys::read_host_info())) sink.add_fact(std::move(f));
  sink.add_fact(Fact::numeric("host.usable_cores", "usable cores", cores, "", 0));
  sink.add_fact({"loader.dataset.path", "dataset", dataset.source()});
  sink.add_fact({"loader.dataset.kind", "dataset kind", std::string(dataset.kind())});
  sink.add_fact({"loader.dataset.samples", "dataset samples", std::to_string(dataset.size())});
  sink.add_fact({"loader.batch", "batch size", std::to_string(options.batch_size)});
  const std::string side = std::to_string(options.image_size);
  sink.add_fact({"loader.size", "output image", side + "x" + side + "x3 uint8 HWC"});
  sink.add_fact(
      {"loader.prefetch", "prefetch depth (batches)", std::to_string(options.prefetch_depth)});
  sink.add_fact(
      {"loader.seconds_per_point", "seconds per sweep point", fixed(options.seconds_per_point, 1)});

  LoaderBenchOutcome outcome;
  if (options.decode != DecodeMode::gpu) run_cpu_sweep(dataset, options, sweep, sink, outcome);
  if (options.decode != DecodeMode::cpu && !outcome.interrupted) {
    sink.progress("GPU decode path: nvJPEG batches + resize-crop-normalize kernel");
    std::string why_not;
    const auto m = measure_gpu_decode(dataset, options, sink, why_not);
    if (m) {
      const double median =
          m->batch_images_per_s.empty() ? 0 : quantile(m->batch_images_per_s, 0.5);
      sink.progress("  " + grouped(median) + " images/s (" + m->backend + " backend), " +
                    fixed(m->cpu_cores_used.value_or(0), 1) + " CPU cores busy");
      if (m->beside_step)
        sink.progress("  beside a busy GPU (a " + fixed(m->beside_step->step_ms, 1) +
                      "-ms step): the GPU waited " + fixed(m->beside_step->wait_share_pct, 1) +
                      " %, nvJPEG's call " + fixed(m->beside_decode_host_ms, 1) + " ms a batch (" +
                      fixed(m->decode_host_ms, 1) + " alone): the decode " +
                      (nvjpeg_overlaps_step(m->beside_step->wait_share_pct)
                           ? "overlaps the step"
                           : "and the step take turns"));
      if (m->interrupted) outcome.interrupted = true;
    } else {
      sink.progress("  skipped: " + why_not);
    }
    for (Result& r : gpu_decode_results(m, why_not)) sink.add(std::move(r));
    if (options.decode == DecodeMode::both && !outcome.interrupted)
      run_split(dataset, options, cores, outcome, m, sink);
  }
  return outcome;
}

}  // namespace gb::bench
