// bench/gpu/probe_latency.cpp: the probe's "latency" section: what it costs to get work onto
// the GPU. Kernel launch as the CPU sees it (enqueue only) and end to end (launch + wait), the
// cost per kernel inside a replayed CUDA graph, and an event record + synchronize round trip.
// All in microseconds, lower is better. The kernel is empty (<<<1, 1>>>), so every figure is
// pure overhead. PyTorch's figures for a tiny eager op and a replayed graph stand beside them
// as quoted references (core/references), for comparison only: they are not targets.
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

#include "core/format.hpp"
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

// Runs `measure` (returning samples in us) under a telemetry sampler and reports it.
template <typename Measure>
void report(const ProbeContext& ctx, ResultSink& sink, const char* key, const char* label,
            Measure measure, std::initializer_list<Param> params) {
  throw_if_cancelled();
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  std::vector<double> us = measure();
  const Telemetry telemetry = sampler.stop();
  Result r = Result::measured(key, label, "us", std::move(us), /*higher_is_better=*/false);
  r.params.insert(r.params.end(), params.begin(), params.end());
  r.telemetry = telemetry;
  sink.progress("latency: " + std::string(label) + ": " + fixed(*r.value, 2) + " us");
  sink.add(std::move(r));
}

// Kernel launch as the CPU sees it: back-to-back enqueues of an empty kernel.
void launch_host(const ProbeContext& ctx, ResultSink& sink, const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
  const int host_samples = ctx.options.quick ? 5 : 20;
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
          {.name = "launches_per_sample", .number = kLaunchesPerSample, .decimals = 0}});
}

// One launch and the wait for it, end to end (20 untimed first).
void launch_e2e(const ProbeContext& ctx, ResultSink& sink, const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
  const int single_samples = ctx.options.quick ? 200 : 1000;
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
         {{"method", "host clock around one empty-kernel launch and cudaStreamSynchronize"}});
}

// Graph: capture, check what was captured, then time replays with events.
void graph_per_kernel(const ProbeContext& ctx, ResultSink& sink, const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
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
    return;
  }
  const gpu::CudaGraphExec exec = graph.instantiate();
  GB_CHECK_CUDA(cudaGraphUpload(exec.get(), s));
  gpu::TimingPlan plan;
  plan.warmup = 3;
  plan.repetitions = ctx.options.quick ? 5 : 20;
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
          {.name = "kernels_per_graph", .number = kGraphKernels, .decimals = 0}});
}

// An event record and the wait for it on an idle stream (20 untimed first).
void event_roundtrip(const ProbeContext& ctx, ResultSink& sink, const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
  const int single_samples = ctx.options.quick ? 200 : 1000;
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

}  // namespace

void probe_latency(const ProbeContext& ctx, ResultSink& sink) {
  const gpu::Stream stream = gpu::Stream::create();

  // Warm-up: module load and the first launches are much slower than steady state.
  gpu::launch_empty_kernels(100, stream.get());
  stream.synchronize();

  launch_host(ctx, sink, stream);
  launch_e2e(ctx, sink, stream);
  graph_per_kernel(ctx, sink, stream);
  event_roundtrip(ctx, sink, stream);
}

}  // namespace gb::bench
