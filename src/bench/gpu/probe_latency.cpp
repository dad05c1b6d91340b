// bench/gpu/probe_latency.cpp: the probe's "latency" section: what it costs to get work onto
// the GPU. Kernel launch as the CPU sees it (enqueue only) and end to end (launch + wait), the
// cost per kernel inside a replayed CUDA graph, and an event record + synchronize round trip.
// All in microseconds, lower is better. The kernel is empty (<<<1, 1>>>), so every figure is
// pure overhead. For comparison only (not a target): PyTorch on an H200 takes 6.9 us for a
// tiny eager op and 0.83 us per kernel in a replayed graph (docs/pytorch-figures.md).
//
// Napkin math, full mode: launch_host 20 x 500 launches x ~2.5 us = 25 ms; launch_e2e
// 1000 x ~10 us = 10 ms; graph capture + instantiate of 1000 nodes ~20 ms, 3 + 20 replays of
// ~1 ms; event round trip 1000 x ~5 us. Total well under 0.2 s (quick: a fifth of that).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/latency.hpp"
#include "gpu/timing.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

// Few enough that the launch queue never fills (a full queue makes launches wait for the GPU,
// and the figure would measure execution, not enqueue).
constexpr int kLaunchesPerSample = 500;
constexpr int kGraphKernels = 1000;

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Runs `measure` (returning samples in us) under a telemetry sampler and reports it.
template <typename Measure>
void report(const ProbeContext& ctx, ResultSink& sink, const char* key, const char* label,
            Measure measure, std::initializer_list<std::pair<const char*, std::string>> params) {
  throw_if_cancelled();
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  std::vector<double> us = measure();
  const Telemetry telemetry = sampler.stop();
  Result r = Result::measured(key, label, "us", std::move(us), /*higher_is_better=*/false);
  for (const auto& [name, value] : params) r.param(name, value);
  r.telemetry = telemetry;
  sink.progress("latency: " + std::string(label) + ": " + fixed(*r.value, 2) + " us");
  sink.add(std::move(r));
}

}  // namespace

void probe_latency(const ProbeContext& ctx, ResultSink& sink) {
  const bool quick = ctx.options.quick;
  const gpu::Stream stream = gpu::Stream::create();
  const cudaStream_t s = stream.get();

  // Warm-up: module load and the first launches are much slower than steady state.
  gpu::launch_empty_kernels(100, s);
  stream.synchronize();

  const int host_samples = quick ? 5 : 20;
  report(ctx, sink, "probe.latency.launch_host.us", "Kernel launch, host side (enqueue only)",
         [&] {
           std::vector<double> us;
           for (int i = 0; i < host_samples; ++i) {
             const double t0 = now_us();
             gpu::launch_empty_kernels(kLaunchesPerSample, s);
             us.push_back((now_us() - t0) / kLaunchesPerSample);
             stream.synchronize();
           }
           return us;
         },
         {{"method",
           "host clock around back-to-back launches of an empty kernel, divided by "
           "their number"},
          {"launches_per_sample", std::to_string(kLaunchesPerSample)}});

  const int single_samples = quick ? 200 : 1000;
  report(ctx, sink, "probe.latency.launch_e2e.us", "Kernel launch, end to end (launch + wait)",
         [&] {
           for (int i = 0; i < 20; ++i) {
             gpu::launch_empty_kernel(s);
             stream.synchronize();
           }
           std::vector<double> us;
           for (int i = 0; i < single_samples; ++i) {
             const double t0 = now_us();
             gpu::launch_empty_kernel(s);
             stream.synchronize();
             us.push_back(now_us() - t0);
           }
           return us;
         },
         {{"method", "host clock around one empty-kernel launch and cudaStreamSynchronize"},
          {"pytorch_comparison_us",
           "6.9 (tiny eager op on an H200, docs/pytorch-figures.md; not a target)"}});

  // Graph: capture, check what was captured, then time replays with events.
  {
    throw_if_cancelled();
    const gpu::CudaGraph graph = gpu::capture_empty_kernels(kGraphKernels, s);
    const std::size_t nodes = gpu::graph_node_count(graph);
    const char* key = "probe.latency.graph_per_kernel.us";
    const char* label = "Per kernel inside a replayed CUDA graph";
    if (nodes != static_cast<std::size_t>(kGraphKernels)) {
      Result r = Result::skipped(key, label, "us", "");
      r.status = Status::fail;
      r.reason = "wrong result, not timed: the captured graph has " + std::to_string(nodes) +
                 " nodes, expected " + std::to_string(kGraphKernels);
      sink.add(std::move(r));
    } else {
      const gpu::CudaGraphExec exec = graph.instantiate();
      GB_CHECK_CUDA(cudaGraphUpload(exec.get(), s));
      gpu::TimingPlan plan;
      plan.warmup = 3;
      plan.repetitions = quick ? 5 : 20;
      report(ctx, sink, key, label,
             [&] {
               const std::vector<double> ms = gpu::time_on_stream(s, plan, [&](cudaStream_t st) {
                 GB_CHECK_CUDA(cudaGraphLaunch(exec.get(), st));
               });
               std::vector<double> us;
               for (const double t : ms) us.push_back(t * 1000.0 / kGraphKernels);
               return us;
             },
             {{"method",
               "CUDA events around one replay of a graph of empty kernels captured "
               "from a stream, divided by the kernel count"},
              {"kernels_per_graph", std::to_string(kGraphKernels)},
              {"pytorch_comparison_us",
               "0.83 (per kernel in a replayed graph on an H200, "
               "docs/pytorch-figures.md; not a target)"}});
    }
  }

  report(ctx, sink, "probe.latency.event_roundtrip.us", "Event record + synchronize round trip",
         [&] {
           const gpu::Event event = gpu::Event::create(cudaEventDisableTiming);
           for (int i = 0; i < 20; ++i) {
             event.record(s);
             event.synchronize();
           }
           std::vector<double> us;
           for (int i = 0; i < single_samples; ++i) {
             const double t0 = now_us();
             event.record(s);
             event.synchronize();
             us.push_back(now_us() - t0);
           }
           return us;
         },
         {{"method",
           "host clock around cudaEventRecord on an idle stream and "
           "cudaEventSynchronize (spin wait, timing disabled)"}});
}

}  // namespace gb::bench
