// bench/gpu/probe_p2p.cpp: the probe's "p2p" section: this GPU's row of the node's GPU-to-GPU
// copy matrix over the selected GPUs (--devices; alone, only the diagonal): for each GPU j,
// cudaMemcpyPeerAsync from this GPU to j -- bandwidth one way and both ways at once (256 MiB)
// and the time per copy of small sizes (4 B .. 64 KiB) -- with the link NVML names between them
// (bench/links.hpp) and its theoretical per-direction rate as the reference. The diagonal
// (j = this GPU) is a device-local copy: a measured entry, with no link to judge.
//
// Byte accounting: a copy of S bytes counts S (what crossed the link one way; a device-local
// copy also reads S and writes S, which probe.memory counts as 2S); both ways counts 2S.
// Timing: CUDA events on this GPU's non-blocking streams; peer access is enabled both ways where
// cudaDeviceCanAccessPeer allows (else the driver stages the copy through host memory, and the
// result says so). The first copy of each pair is checked element by element before timing.
// Napkin math (NVLink 4 x18, ~370 GB/s; PCIe Gen5 ~50 GB/s): 256 MiB takes 0.7-5 ms, 10
// samples per direction; latency 100 copies x 10 samples x 4 sizes of a few us: < 0.1 s a pair.
#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/links.hpp"
#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/format.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/membw.hpp"
#include "gpu/timing.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

constexpr std::size_t kBandwidthBytes = std::size_t{256} << 20;
constexpr std::uint32_t kSeed = 0x3C6EF372u;
constexpr int kCopiesPerLatencySample = 100;

struct LatencySize {
  std::size_t bytes;
  const char* name;
};
constexpr LatencySize kLatencyFull[] = {{4, "4B"}, {64, "64B"}, {1024, "1KiB"}, {65536, "64KiB"}};
constexpr LatencySize kLatencyQuick[] = {{4, "4B"}, {65536, "64KiB"}};

std::string gpu_name(int d) { return "GPU " + std::to_string(d); }

// Peer access from `from` to `to` (current device changes inside); false when CUDA says the
// pair cannot (copies then go through host memory).
bool enable_peer_access(int from, int to) {
  int can = 0;
  GB_CHECK_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) return false;
  DeviceScope scope(from);
  const cudaError_t rc = cudaDeviceEnablePeerAccess(to, 0);
  if (rc == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clear the sticky-free error state
  } else {
    GB_CHECK_CUDA(rc);
  }
  return true;
}

// "" when dst (on any device) holds pattern_u32(i, kSeed) for i < n: the closed-form sum and
// every 4099th element plus the last one, compared on the host.
std::string check_copy(const void* dst, std::size_t n) {
  std::vector<std::uint32_t> host(n);
  GB_CHECK_CUDA(cudaMemcpy(host.data(), dst, n * 4, cudaMemcpyDeviceToHost));
  std::uint32_t sum = 0;
  for (const std::uint32_t v : host) sum += v;
  if (sum != gpu::expected_pattern_sum(n, kSeed))
    return "the copied data's checksum is " + std::to_string(sum) + ", expected " +
           std::to_string(gpu::expected_pattern_sum(n, kSeed));
  auto bad = [&](std::size_t i) {
    return host[i] == gpu::pattern_u32(i, kSeed)
               ? std::string()
               : "element " + std::to_string(i) + " of the copy is " + std::to_string(host[i]) +
                     ", expected " + std::to_string(gpu::pattern_u32(i, kSeed));
  };
  for (std::size_t i = 0; i < n; i += 4099)
    if (std::string e = bad(i); !e.empty()) return e;
  return n > 0 ? bad(n - 1) : "";
}

std::vector<double> to_gbps(const std::vector<double>& ms, double bytes) {
  std::vector<double> out;
  for (const double t : ms) out.push_back(bytes / (t * 1e-3) / 1e9);
  return out;
}

struct Pair {
  int self = 0, peer = 0;
  bool peer_access = false;
  PeerLink link;
};

void add_pair_params(Result& r, const Pair& p) {
  r.param("from", p.self, "", 0).param("to", p.peer, "", 0).param("link", p.link.name);
  if (p.self != p.peer)
    r.param("peer_access", p.peer_access ? "enabled (direct copies)"
                                         : "not possible: staged through host memory");
}

void measure_pair(const ProbeContext& ctx, const Pair& p, ResultSink& sink) {
  const std::string base = "probe.p2p.gpu" + std::to_string(p.peer) + ".";
  const std::string pair = gpu_name(p.self) + " -> " + gpu_name(p.peer);
  const std::size_t n = kBandwidthBytes / 4;
  const gpu::Stream s1 = gpu::Stream::create();
  const gpu::Stream s2 = gpu::Stream::create();
  gpu::DeviceBuffer src(kBandwidthBytes), back;  // back: on self, what the peer sends back
  gpu::DeviceBuffer dst, peer_src;               // on the peer
  {
    DeviceScope on_peer(p.peer);
    dst = gpu::DeviceBuffer(kBandwidthBytes);
    peer_src = gpu::DeviceBuffer(kBandwidthBytes);
    gpu::fill_pattern_u32(peer_src.as<std::uint32_t>(), n, kSeed, nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
  }
  back = gpu::DeviceBuffer(kBandwidthBytes);
  gpu::fill_pattern_u32(src.as<std::uint32_t>(), n, kSeed, s1.get());
  GB_CHECK_CUDA(cudaMemcpyPeerAsync(dst.data(), p.peer, src.data(), p.self, kBandwidthBytes,
                                    s1.get()));
  s1.synchronize();
  if (const std::string bad = check_copy(dst.data(), n); !bad.empty()) {
    Result r = Result::skipped(base + "unidir_gbps", pair + " copy, 256 MiB", "GB/s", "");
    r.status = Status::fail;
    r.reason = "wrong copy: " + bad;
    r.advice = "a copy that changes data is a broken link or GPU: rerun, then test the pair alone";
    add_pair_params(r, p);
    sink.add(std::move(r));
    return;
  }

  gpu::TimingPlan plan;
  plan.warmup = 2;
  plan.repetitions = ctx.options.quick ? 5 : 10;
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  const std::vector<double> ms = gpu::time_on_stream(s1.get(), plan, [&](cudaStream_t s) {
    GB_CHECK_CUDA(
        cudaMemcpyPeerAsync(dst.data(), p.peer, src.data(), p.self, kBandwidthBytes, s));
  });
  Result uni = Result::measured(base + "unidir_gbps", pair + " copy, 256 MiB (" + p.link.name + ")",
                                "GB/s", to_gbps(ms, kBandwidthBytes));
  uni.telemetry = sampler.stop();
  add_pair_params(uni, p);
  uni.param("bytes", static_cast<double>(kBandwidthBytes), "B", 0)
      .param("bytes_counted", "the bytes copied, once")
      .param("timing", "CUDA events, cudaMemcpyPeerAsync on a non-blocking stream");
  if (p.link.gbps) uni.reference("datasheet", *p.link.gbps, p.link.name + " per direction");
  sink.progress("p2p: " + pair + ": " + fixed(*uni.value, 1) + " GB/s");
  sink.add(std::move(uni));
  throw_if_cancelled();

  if (p.self != p.peer) {
    // Both ways at once: this GPU's two streams, one copy each way, joined by events.
    const gpu::Event start = gpu::Event::create(), mid = gpu::Event::create(),
                     stop = gpu::Event::create();
    std::vector<double> both;
    sys::TelemetrySampler bsampler(ctx.nvml, std::chrono::milliseconds(10));
    bsampler.start();
    for (int rep = -plan.warmup; rep < plan.repetitions; ++rep) {
      start.record(s1.get());
      GB_CHECK_CUDA(cudaStreamWaitEvent(s2.get(), start.get(), 0));
      GB_CHECK_CUDA(cudaMemcpyPeerAsync(dst.data(), p.peer, src.data(), p.self,
                                        kBandwidthBytes, s1.get()));
      GB_CHECK_CUDA(cudaMemcpyPeerAsync(back.data(), p.self, peer_src.data(), p.peer,
                                        kBandwidthBytes, s2.get()));
      mid.record(s2.get());
      GB_CHECK_CUDA(cudaStreamWaitEvent(s1.get(), mid.get(), 0));
      stop.record(s1.get());
      stop.synchronize();
      if (rep >= 0) both.push_back(gpu::Event::elapsed_ms(start, stop));
      throw_if_cancelled();
    }
    if (const std::string bad = check_copy(back.data(), n); !bad.empty()) {
      Result r = Result::skipped(base + "bidir_gbps", pair + " both ways, 256 MiB each", "GB/s", "");
      r.status = Status::fail;
      r.reason = "wrong copy (" + gpu_name(p.peer) + " -> " + gpu_name(p.self) + "): " + bad;
      add_pair_params(r, p);
      sink.add(std::move(r));
    } else {
      Result bi = Result::measured(base + "bidir_gbps",
                                   pair + " both ways at once, 256 MiB each (" + p.link.name + ")",
                                   "GB/s", to_gbps(both, 2.0 * kBandwidthBytes));
      bi.telemetry = bsampler.stop();
      add_pair_params(bi, p);
      bi.param("bytes", static_cast<double>(kBandwidthBytes), "B", 0)
          .param("bytes_counted", "2 x bytes (one copy each way)")
          .param("timing", "CUDA events around a copy each way on two streams");
      if (p.link.gbps) bi.reference("datasheet", 2 * *p.link.gbps, p.link.name + " both directions");
      sink.progress("p2p: " + pair + " both ways: " + fixed(*bi.value, 1) + " GB/s");
      sink.add(std::move(bi));
    }
  }

  // Time per copy of small sizes: 100 copies back to back on one stream per sample.
  gpu::TimingPlan lplan;
  lplan.warmup = 1;
  lplan.repetitions = ctx.options.quick ? 5 : 10;
  const auto sizes = ctx.options.quick
                         ? std::vector<LatencySize>(std::begin(kLatencyQuick), std::end(kLatencyQuick))
                         : std::vector<LatencySize>(std::begin(kLatencyFull), std::end(kLatencyFull));
  for (const LatencySize& size : sizes) {
    throw_if_cancelled();
    const std::vector<double> per = gpu::time_on_stream(s1.get(), lplan, [&](cudaStream_t s) {
      for (int k = 0; k < kCopiesPerLatencySample; ++k)
        GB_CHECK_CUDA(cudaMemcpyPeerAsync(dst.data(), p.peer, src.data(), p.self, size.bytes, s));
    });
    std::vector<double> us;
    for (const double t : per) us.push_back(t * 1e3 / kCopiesPerLatencySample);
    const bool headline = size.bytes == 4;
    Result r = Result::measured(headline ? base + "latency_us"
                                         : base + "latency." + size.name + ".us",
                                pair + " time per copy, " + size.name, "us", us,
                                /*higher_is_better=*/false);
    add_pair_params(r, p);
    r.param("bytes", static_cast<double>(size.bytes), "B", 0)
        .param("timing", "CUDA events around 100 back-to-back cudaMemcpyPeerAsync");
    sink.add(std::move(r));
  }
}

}  // namespace

PeerLink peer_link(const ProbeContext& ctx, int peer) {
  const bool same = peer == ctx.device.index;
  if (same) return describe_peer_link({.same_device = true});
  char bus[32] = {};
  GB_CHECK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof(bus), peer));
  const sys::Nvml nvml = sys::Nvml::load();
  const std::optional<sys::NvmlDevice> other =
      nvml.available() ? nvml.device_by_pci_bus_id(bus) : std::nullopt;
  if (!ctx.nvml || !other) return describe_peer_link({});
  return describe_peer_link(read_peer_link_facts(*ctx.nvml, *other, false, ctx.device.cc_major));
}

void probe_p2p(const ProbeContext& ctx, ResultSink& sink) {
  const int self = ctx.device.index;
  const std::vector<int> gpus =
      ctx.options.devices.empty() ? std::vector<int>{self} : ctx.options.devices;
  std::string list;
  for (const int d : gpus) list += (list.empty() ? "" : ",") + std::to_string(d);
  sink.add_fact(Fact::text("probe.p2p.gpus", "GPU-to-GPU copies to GPUs", list));
  for (const int peer : gpus) {
    throw_if_cancelled();
    Pair p{self, peer, false, peer_link(ctx, peer)};
    if (peer != self) {
      p.peer_access = enable_peer_access(self, peer);
      if (p.peer_access) enable_peer_access(peer, self);
    }
    measure_pair(ctx, p, sink);
  }
}

}  // namespace gb::bench
