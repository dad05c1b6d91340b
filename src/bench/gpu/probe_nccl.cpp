// bench/gpu/probe_nccl.cpp: the probe's "nccl" section: all-reduce, all-gather and
// reduce-scatter over the selected GPUs (--devices; alone, one rank on this GPU) through NCCL
// loaded at run time (gpu/nccl.hpp), one process driving every GPU as nccl-tests does with -g N.
// Float32 sum, out of place, sizes swept (bench/collectives.hpp). Before timing, every rank's
// output of every size is checked on its GPU against the exact expected values
// (gpu/collective_check.hpp); a wrong answer fails the point and is never timed.
//
// With several GPUs selected the section runs in the run of the first of them (rank 0); the
// other GPUs' runs carry a fact saying where. NVLink SHARP is off (NCCL_NVLS_ENABLE=0).
//
// Timing as nccl-tests: the host clock around `iters` back-to-back operations (each a group of
// one call per rank) and a synchronize of every rank's stream; time = elapsed / iters. `iters`
// is chosen per size so a sample lasts >= 2 ms (at most 200).
// Napkin math, one H200 (one rank: NCCL copies the buffer, ~2 TB/s): 1 GiB 3 x ~0.6 ms, small
// sizes ~10 us each; 10 sizes x 3 collectives x (check + 2 warm-up + 5 samples x 2 ms) ~0.5 s,
// plus ncclCommInitAll ~0.5-2 s and the 2 x 1 GiB buffers per GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/collectives.hpp"
#include "bench/links.hpp"
#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "gpu/check.hpp"
#include "gpu/collective_check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nccl.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

namespace api = gpu::nccl_api;
using Clock = std::chrono::steady_clock;

constexpr double kMinSampleS = 2e-3;
constexpr int kMaxIters = 200;

std::string device_list(const std::vector<int>& devices) {
  std::string s;
  for (const int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// Every rank's GPU: stream and buffers.
struct Rank {
  int device = 0;
  gpu::Stream stream;
  gpu::DeviceBuffer send, recv;
};

class Runner {
 public:
  Runner(std::shared_ptr<gpu::NcclLibrary> lib, const std::vector<int>& devices,
         std::uint64_t max_bytes)
      : lib_(lib), comms_(lib, devices) {
    for (const int d : devices) {
      DeviceScope on(d);
      Rank r;
      r.device = d;
      r.stream = gpu::Stream::create();
      r.send = gpu::DeviceBuffer(max_bytes);
      r.recv = gpu::DeviceBuffer(max_bytes);
      // Rank r's input: collective_input(r, i) for every element any size uses (a prefix).
      gpu::fill_collective_input(r.send.as<float>(), max_bytes / 4, static_cast<int>(ranks_.size()),
                                 r.stream.get());
      ranks_.push_back(std::move(r));
    }
    synchronize();
  }

  int size() const { return static_cast<int>(ranks_.size()); }

  void launch(Collective c, std::uint64_t count) {
    const auto& a = lib_->api();
    lib_->check(a.group_start(), "ncclGroupStart");
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      auto* s = reinterpret_cast<CUstream_st*>(r.stream.get());
      api::ncclResult_t rc = api::ncclSuccess;
      switch (c) {
        case Collective::all_reduce:
          rc = a.all_reduce(r.send.data(), r.recv.data(), count, api::ncclFloat32, api::ncclSum,
                            comms_[i], s);
          break;
        case Collective::all_gather:
          rc = a.all_gather(r.send.data(), r.recv.data(), count, api::ncclFloat32, comms_[i], s);
          break;
        case Collective::reduce_scatter:
          rc = a.reduce_scatter(r.send.data(), r.recv.data(), count, api::ncclFloat32,
                                api::ncclSum, comms_[i], s);
          break;
      }
      lib_->check(rc, collective_title(c).c_str(), comms_[i]);
    }
    lib_->check(a.group_end(), "ncclGroupEnd");
  }

  void synchronize() {
    for (Rank& r : ranks_) {
      DeviceScope on(r.device);
      r.stream.synchronize();
    }
  }

  // "" when every rank's output is exact.
  std::string check(Collective c, std::uint64_t count) {
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      DeviceScope on(r.device);
      const std::string bad = gpu::check_collective_on_gpu(
          r.recv.as<float>(), static_cast<gpu::CollectiveOp>(c), static_cast<int>(i), size(),
          count, r.stream.get());
      if (!bad.empty()) return "rank " + std::to_string(i) + " (GPU " + std::to_string(r.device) + "): " + bad;
    }
    return "";
  }

  double time_ops(Collective c, std::uint64_t count, int iters) {
    const auto t0 = Clock::now();
    for (int k = 0; k < iters; ++k) launch(c, count);
    synchronize();
    return std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  }

 private:
  std::shared_ptr<gpu::NcclLibrary> lib_;
  gpu::NcclComms comms_;
  std::vector<Rank> ranks_;
};

static_assert(static_cast<int>(Collective::all_reduce) == static_cast<int>(gpu::CollectiveOp::all_reduce));
static_assert(static_cast<int>(Collective::all_gather) == static_cast<int>(gpu::CollectiveOp::all_gather));
static_assert(static_cast<int>(Collective::reduce_scatter) ==
              static_cast<int>(gpu::CollectiveOp::reduce_scatter));

// The slowest link of the ring devices[0] -> devices[1] -> ... -> devices[0], per direction.
void ring_link(const ProbeContext& ctx, const std::vector<int>& devices,
               std::optional<double>& gbps, std::string& name) {
  if (devices.size() < 2) return;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int a = devices[i], b = devices[(i + 1) % devices.size()];
    PeerLink l;
    if (a == ctx.device.index) {
      l = peer_link(ctx, b);
    } else if (b == ctx.device.index) {
      l = peer_link(ctx, a);
    } else {
      // Neither end is this GPU: ask NVML about the pair from a's side.
      ProbeContext other_ctx;
      other_ctx.device.index = a;
      other_ctx.device.cc_major = ctx.device.cc_major;
      char bus[32] = {};
      GB_CHECK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof(bus), a));
      const sys::Nvml nvml = sys::Nvml::load();
      if (nvml.available()) other_ctx.nvml = nvml.device_by_pci_bus_id(bus);
      l = peer_link(other_ctx, b);
    }
    if (!l.gbps) {
      gbps.reset();
      name = "GPU " + std::to_string(a) + " - GPU " + std::to_string(b) + ": " + l.name;
      return;
    }
    if (!gbps || *l.gbps < *gbps) {
      gbps = l.gbps;
      name = l.name;
    }
  }
}

}  // namespace

namespace {

void measure_collectives(const ProbeContext& ctx, const std::vector<int>& devices,
                         std::shared_ptr<gpu::NcclLibrary> lib, ResultSink& sink);

}  // namespace

void probe_nccl(const ProbeContext& ctx, ResultSink& sink) {
  const int self = ctx.device.index;
  const std::vector<int> devices =
      ctx.options.devices.empty() ? std::vector<int>{self} : ctx.options.devices;
  if (devices.front() != self) {
    sink.add_fact(Fact::text("probe.nccl.measured_in", "NCCL collectives measured in",
                             "the run of GPU " + std::to_string(devices.front()) + " (over GPUs " +
                                 device_list(devices) + ")"));
    return;
  }
  std::string why;
  const auto lib = gpu::NcclLibrary::load(gpu::default_nccl_library_names(), why);
  if (!lib) {
    for (Result& r : skipped_collective_results(why)) sink.add(std::move(r));
    return;
  }
  sink.add_fact(Fact::text("probe.nccl.version", "NCCL", lib->version() + " (" + lib->path() + ")"));
  sink.add_fact(Fact::text("probe.nccl.devices", "NCCL ranks on GPUs", device_list(devices)));
  sink.add_fact(Fact::text("probe.nccl.nvls", "NVLink SHARP",
                           "off (NCCL_NVLS_ENABLE=0 set by gpubase)"));
  try {
    measure_collectives(ctx, devices, lib, sink);
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    // NCCL or CUDA refused (communicator setup, a collective): a failure of this node's GPU
    // communication, reported on the headlines not yet measured; the probe's other figures stand.
    for (const Collective c : kCollectives) {
      const std::string key = "probe.nccl." + collective_key(c) + ".busbw_gbps";
      if (find_result(sink.results(), key)) continue;
      Result r = Result::skipped(key, collective_title(c) + " bus bandwidth (NCCL)", "GB/s", "");
      r.status = Status::fail;
      r.reason = std::string("NCCL failed: ") + e.what();
      r.advice = "run with NCCL_DEBUG=INFO to see where NCCL stops (shared memory, peer access, "
                 "driver)";
      sink.add(std::move(r));
    }
  }
}

namespace {

void measure_collectives(const ProbeContext& ctx, const std::vector<int>& devices,
                         std::shared_ptr<gpu::NcclLibrary> lib, ResultSink& sink) {
  const int n = static_cast<int>(devices.size());
  std::optional<double> link_gbps;
  std::string link_name;
  ring_link(ctx, devices, link_gbps, link_name);

  const std::vector<std::uint64_t> sweep = nccl_sweep_bytes(ctx.options.quick);
  std::uint64_t max_bytes = 0;
  for (const Collective c : kCollectives)
    max_bytes = std::max(max_bytes, collective_size(c, n, sweep.back()).bytes);
  sink.progress("nccl: " + std::to_string(n) + (n == 1 ? " rank" : " ranks") + " on GPUs " +
                device_list(devices) + ", NCCL " + lib->version());
  Runner runner(lib, devices, max_bytes);
  const int samples = ctx.options.quick ? 3 : 5;

  for (const Collective c : kCollectives) {
    sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
    sampler.start();
    std::optional<CollectiveMeasurement> last;
    for (const std::uint64_t wanted : sweep) {
      throw_if_cancelled();
      CollectiveMeasurement m;
      m.collective = c;
      m.ranks = n;
      m.size = collective_size(c, n, wanted);
      m.link_gbps = link_gbps;
      m.link_name = link_name;
      runner.launch(c, m.size.count);
      runner.synchronize();
      m.check_error = runner.check(c, m.size.count);
      if (m.check_error.empty()) {
        const double one = runner.time_ops(c, m.size.count, 2);  // warm-up, and the op's time
        const int iters = std::clamp(static_cast<int>(std::ceil(kMinSampleS / std::max(one, 1e-7))), 1,
                                     kMaxIters);
        for (int k = 0; k < samples; ++k) m.seconds.push_back(runner.time_ops(c, m.size.count, iters));
      }
      Result r = collective_result(m, false);
      if (r.value)
        sink.progress("nccl: " + collective_key(c) + " " + size_name(m.size.bytes) + ": algbw " +
                      fixed(*r.number_param("algbw_gbps"), 2) + " GB/s, busbw " +
                      fixed(*r.value, 2) + " GB/s, " + fixed(*r.number_param("time_us"), 1) + " us");
      sink.add(std::move(r));
      last = std::move(m);
    }
    const Telemetry telemetry = sampler.stop();
    Result head = collective_result(*last, true);
    head.telemetry = telemetry;
    sink.add(std::move(head));
    if (last->check_error.empty()) {
      Result alg = collective_algbw_result(*last);
      alg.telemetry = telemetry;
      sink.add(std::move(alg));
    }
  }
}

}  // namespace

}  // namespace gb::bench
