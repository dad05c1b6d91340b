// bench/gpu/loader_feed.cpp: the checklist's "data loading < 10 % of step time" on a GPU: the
// CPU-path input pipeline (pipeline/input_pipeline.hpp: pinned slots, H2D on its own stream,
// normalization kernel) feeds a GPU step of a known length (gpu/busy.hpp, a stand-in for a
// training step; `gpubase train --data` measures the real one).
//
// The host keeps at most two steps in flight, as a training loop that reads its loss every step
// or two does: it takes batch k+1 from the pipeline while the GPU runs step k. Over N steps the
// GPU is busy for the steps' own time (events around each step); the rest of the wall time is
// time the GPU waited for data:  share = 1 - sum(step) / wall.
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "bench/gpu/busy_steps.hpp"
#include "bench/loader.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "gpu/busy.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "pipeline/input_pipeline.hpp"

namespace gb::bench {

namespace {

// The stand-in steps in flight and the GPU time of those finished.
struct StepQueue {
  struct Step {
    gpu::Event begin, end;
  };
  std::deque<Step> in_flight;
  std::vector<double> ms;
  double busy_ms = 0;
  void finish_oldest() {
    Step& s = in_flight.front();
    s.end.synchronize();
    const double t = gpu::Event::elapsed_ms(s.begin, s.end);
    ms.push_back(t);
    busy_ms += t;
    in_flight.pop_front();
  }
  void finish_all() {
    while (!in_flight.empty()) finish_oldest();
  }
};

}  // namespace

DataWaitMeasurement feed_busy_steps(pipeline::InputPipeline& in, cudaStream_t compute,
                                    double step_ms, double seconds, int warmup) {
  const double cycles_per_us = gpu::calibrate_busy_cycles_per_us(compute);
  DataWaitMeasurement m;
  m.step_ms = step_ms;
  StepQueue steps;

  // Warm-up: a few steps, so the ring is full and the clocks are up, then the timed run.
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  for (int k = 0;; ++k) {
    if (k == warmup) {
      steps.finish_all();
      steps.ms.clear();
      steps.busy_ms = 0;
      in.reset_stats();
      t0 = std::chrono::steady_clock::now();
    }
    if (k > warmup &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= seconds)
      break;
    const auto b = in.next(compute);  // the stand-in step does not read it
    if (!b) break;
    StepQueue::Step s{gpu::Event::create(), gpu::Event::create()};
    s.begin.record(compute);
    gpu::busy_for(compute, step_ms * 1e3, cycles_per_us);
    s.end.record(compute);
    steps.in_flight.push_back(std::move(s));
    if (k >= warmup) m.images += b->size;
    if (steps.in_flight.size() >= 2) steps.finish_oldest();
  }
  steps.finish_all();
  m.wall_ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  in.drain();
  m.consumer_wait_ms = in.stats().loader.consumer_wait.total_s * 1e3;
  m.step_ms_measured = std::move(steps.ms);
  m.interrupted = cancel_requested();
  if (m.wall_ms > 0 && !m.step_ms_measured.empty()) {
    m.wait_share_pct = std::max(0.0, 100.0 * (1.0 - steps.busy_ms / m.wall_ms));
    m.images_per_s = 1e3 * static_cast<double>(m.images) / m.wall_ms;
  }
  return m;
}

std::optional<DataWaitMeasurement> measure_data_wait(const data::Dataset& dataset,
                                                     const LoaderBenchOptions& o,
                                                     unsigned workers) {
  std::string why_not;
  const auto in = pipeline::make_input_pipeline(
      dataset, pipeline_options(o, pipeline::DecodeMode::cpu, workers), why_not);
  if (!in) return std::nullopt;  // no GPU
  const gpu::Stream compute = gpu::Stream::create();
  const double step_ms = 1e3 * static_cast<double>(o.batch_size) / o.gpu_images_per_s;
  DataWaitMeasurement m = feed_busy_steps(*in, compute.get(), step_ms, o.seconds_per_point,
                                          /*warmup=*/3);
  m.workers = workers;
  if (m.wall_ms <= 0 || m.step_ms_measured.empty()) return std::nullopt;
  return m;
}

std::optional<BatchCopyMeasurement> measure_batch_copy(std::size_t bytes) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || bytes == 0) return std::nullopt;
  gpu::DeviceBuffer device(bytes);
  gpu::PinnedBuffer pinned(bytes);
  std::vector<std::uint8_t> pageable(bytes, 1);
  std::memset(pinned.data(), 1, bytes);
  const gpu::Stream s = gpu::Stream::create();
  auto gbps = [&](const void* src) {
    std::vector<double> rates;
    for (int rep = 0; rep < 6; ++rep) {
      const gpu::Event a = gpu::Event::create(), b = gpu::Event::create();
      a.record(s.get());
      GB_CHECK_CUDA(cudaMemcpyAsync(device.data(), src, bytes, cudaMemcpyHostToDevice, s.get()));
      b.record(s.get());
      b.synchronize();
      if (rep > 0) rates.push_back(static_cast<double>(bytes) / (gpu::Event::elapsed_ms(a, b) * 1e6));
    }
    return quantile(rates, 0.5);  // the first copy is a warm-up
  };
  BatchCopyMeasurement m;
  m.bytes = bytes;
  m.pinned_gbps = gbps(pinned.data());
  m.pageable_gbps = gbps(pageable.data());
  return m;
}

}  // namespace gb::bench
