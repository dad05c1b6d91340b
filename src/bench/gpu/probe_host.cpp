// bench/gpu/probe_host.cpp: the probe's "host" section: CPU memory bandwidth (STREAM-like copy
// and triad over all hardware threads, sys/host_membw) and whether heavy CPU memory traffic
// slows pinned host-to-device copies (a data loader's workers and the H2D copies that feed the
// GPU share the host's memory controllers).
//
// Byte accounting: STREAM's (copy 16 B/element, triad 24 B/element; write-allocate not
// counted); H2D counts the bytes copied. GB/s = 1e9 bytes/s.
//
// Napkin math, full mode (16 cores, ~200 GB/s): first touch of 3 x 1 GiB ~0.4 s; one copy pass
// (2 GiB) ~11 ms and one triad pass (3 GiB) ~16 ms, 1 warm-up + 10 timed each plus 3 full
// checks ~0.4 s. Contention: 256 MiB H2D copies (~4.9 ms each) for >= 0.4 s alone and >= 0.4 s
// under load, the load's first touch (15 x 128 MiB) ~0.2 s. Total ~1.6 s. Quick (256 MiB
// arrays, 32 MiB load buffers, 0.2 s loops): ~0.7 s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/format.hpp"
#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/membw.hpp"
#include "gpu/timing.hpp"
#include "sys/host_membw.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kTransferBytes = 256 * kMiB;
constexpr std::uint32_t kSeed = 0x1F83D9ABu;

// MemAvailable of /proc/meminfo in bytes; empty when it cannot be read.
std::optional<std::size_t> memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::size_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

const char* kCopyKey = "probe.host.copy.gbps";
const char* kCopyLabel = "Host memory copy (STREAM-like, all hardware threads)";
const char* kTriadKey = "probe.host.triad.gbps";
const char* kTriadLabel = "Host memory triad a = b + s*c (STREAM-like, all hardware threads)";
const char* kLoadedKey = "probe.host.h2d_under_cpu_load.gbps";
const char* kLoadedLabel = "Pinned H2D while the other CPU threads stream memory";
const char* kSlowdownKey = "probe.host.h2d_slowdown.pct";
const char* kSlowdownLabel = "Pinned H2D slowdown under CPU memory load";

Result wrong(const char* key, const char* label, const char* unit, const std::string& what) {
  Result r = Result::skipped(key, label, unit, "");
  r.status = Status::fail;
  r.reason = "wrong result, not timed: " + what;
  return r;
}

void host_bandwidth(const ProbeContext& ctx, ResultSink& sink, int threads) {
  // 1 GiB per array (quick 256 MiB), far past any LLC; halved while the three arrays would take
  // more than half the available memory; skipped below 64 MiB.
  std::size_t array_bytes = (ctx.options.quick ? 256 : 1024) * kMiB;
  if (const auto available = memory_available_bytes())
    while (array_bytes >= 64 * kMiB && 3 * array_bytes > *available / 2) array_bytes /= 2;
  if (array_bytes < 64 * kMiB) {
    const std::string reason = "not enough available host memory for three 64 MiB arrays";
    sink.add(Result::skipped(kCopyKey, kCopyLabel, "GB/s", reason));
    sink.add(Result::skipped(kTriadKey, kTriadLabel, "GB/s", reason));
    return;
  }

  sys::HostMembwConfig config;
  config.elements = array_bytes / sizeof(double);
  config.threads = threads;
  config.repetitions = ctx.options.quick ? 5 : 10;
  sys::HostMembwResult m;
  try {
    m = sys::measure_host_membw(config);
  } catch (const std::bad_alloc&) {
    const std::string reason = "could not allocate 3 x " + std::to_string(array_bytes) + " bytes";
    sink.add(Result::skipped(kCopyKey, kCopyLabel, "GB/s", reason));
    sink.add(Result::skipped(kTriadKey, kTriadLabel, "GB/s", reason));
    return;
  }
  if (!m.valid) {
    sink.add(wrong(kCopyKey, kCopyLabel, "GB/s", m.error));
    sink.add(wrong(kTriadKey, kTriadLabel, "GB/s", m.error));
    sink.progress("host: WRONG RESULT: " + m.error);
    return;
  }
  const struct {
    const char* key;
    const char* label;
    std::vector<double>& gbps;
    std::uint64_t bytes;
    const char* accounting;
  } rows[] = {
      {kCopyKey, kCopyLabel, m.copy_gbps, m.copy_bytes_per_pass,
       "STREAM: 16 B per element (8 read + 8 written); write-allocate not counted"},
      {kTriadKey, kTriadLabel, m.triad_gbps, m.triad_bytes_per_pass,
       "STREAM: 24 B per element (16 read + 8 written); write-allocate not counted"},
  };
  for (const auto& row : rows) {
    Result r = Result::measured(row.key, row.label, "GB/s", std::move(row.gbps));
    r.param("threads", static_cast<double>(threads), "", 0)
        .param("array_bytes", static_cast<double>(array_bytes), "B", 0)
        .param("bytes_counted", static_cast<double>(row.bytes), "B", 0)
        .param("byte_accounting", row.accounting)
        .param("placement", "each thread pinned, first-touches and streams its own slice");
    sink.progress("host: " + std::string(row.label) + ": " + fixed(*r.value, 1) + " GB/s");
    sink.add(std::move(r));
  }
}

// Both H2D results failed with the same wrong result.
void wrong_h2d(ResultSink& sink, const std::string& err) {
  sink.add(wrong(kLoadedKey, kLoadedLabel, "GB/s", err));
  sink.add(wrong(kSlowdownKey, kSlowdownLabel, "%", err));
}

// Check: fills the pinned buffer with the pattern and copies it once; the error when the
// device's checksum is wrong, empty when it is right.
std::string check_h2d_copy(const gpu::PinnedBuffer& host, const gpu::DeviceBuffer& dev,
                           cudaStream_t s) {
  const std::size_t n = kTransferBytes / 4;
  std::uint32_t* h = host.as<std::uint32_t>();
  for (std::size_t i = 0; i < n; ++i) h[i] = gpu::pattern_u32(i, kSeed);
  GB_CHECK_CUDA(cudaMemsetAsync(dev.data(), 0, kTransferBytes, s));
  GB_CHECK_CUDA(
      cudaMemcpyAsync(dev.data(), host.data(), kTransferBytes, cudaMemcpyHostToDevice, s));
  const std::uint32_t got = gpu::device_checksum_u32(dev.as<std::uint32_t>(), n, s);
  if (got == gpu::expected_pattern_sum(n, kSeed)) return {};
  return "H2D copy checksum " + std::to_string(got) + ", expected " +
         std::to_string(gpu::expected_pattern_sum(n, kSeed));
}

// Trials: timed pinned H2D copies of kTransferBytes (2 warm-up, at least 10 and the minimum
// time), in GB/s per repetition.
std::vector<double> h2d_gbps(const ProbeContext& ctx, const gpu::PinnedBuffer& host,
                             const gpu::DeviceBuffer& dev, cudaStream_t s) {
  gpu::TimingPlan plan;
  plan.warmup = 2;
  plan.repetitions = 10;
  plan.min_total_ms = ctx.options.quick ? 200 : 400;
  plan.max_repetitions = 400;
  const std::vector<double> ms = gpu::time_on_stream(s, plan, [&](cudaStream_t st) {
    gpu::memcpy_repeated(dev.data(), host.data(), kTransferBytes, 1, cudaMemcpyHostToDevice, st);
  });
  std::vector<double> gbps;
  for (const double t : ms) gbps.push_back(static_cast<double>(kTransferBytes) / (t * 1e-3) / 1e9);
  return gbps;
}

// Per thread, two buffers of the returned size: past any LLC share, and halved (not below
// 8 MiB) while all threads together would take more than a quarter of the available memory.
std::size_t load_buffer_bytes(const ProbeContext& ctx, int load_threads) {
  std::size_t load_bytes = (ctx.options.quick ? 32 : 64) * kMiB;
  if (const auto available = memory_available_bytes())
    while (load_bytes > 8 * kMiB &&
           2 * load_bytes * static_cast<std::size_t>(load_threads) > *available / 4)
      load_bytes /= 2;
  return load_bytes;
}

// Summaries: H2D under load and its slowdown against the median alone, with the load's facts.
void add_contention_results(ResultSink& sink, double alone, std::vector<double> loaded,
                            const Telemetry& telemetry, const sys::HostCopyLoad::Summary& summary,
                            int load_threads, std::size_t load_bytes) {
  std::vector<double> slowdown;
  for (const double g : loaded) slowdown.push_back(100.0 * (1.0 - g / alone));
  const auto add_params = [&](Result& r) {
    r.param("h2d_alone_gbps", alone, "GB/s", 2)
        .param("transfer_bytes", static_cast<double>(kTransferBytes), "B", 0)
        .param("load_threads", static_cast<double>(load_threads), "", 0)
        .param("load_bytes_per_thread", static_cast<double>(2 * load_bytes), "B", 0)
        .param("load_gbps", summary.gbps, "GB/s", 1)
        .param("load", "CPU copy loop (read + write counted) on every other hardware thread");
  };
  Result r = Result::measured(kLoadedKey, kLoadedLabel, "GB/s", std::move(loaded));
  add_params(r);
  r.telemetry = telemetry;
  Result d = Result::measured(kSlowdownKey, kSlowdownLabel, "%", std::move(slowdown),
                              /*higher_is_better=*/false);
  add_params(d);
  d.param("formula", "100 x (1 - loaded / alone), per loaded sample against the median alone");
  d.telemetry = telemetry;
  sink.progress("host: pinned H2D alone " + fixed(alone, 1) + " GB/s, under CPU load " +
                fixed(*r.value, 1) + " GB/s (" + fixed(*d.value, 1) + " % slower; load " +
                fixed(summary.gbps, 0) + " GB/s on " + std::to_string(load_threads) + " threads)");
  sink.add(std::move(r));
  sink.add(std::move(d));
}

void h2d_contention(const ProbeContext& ctx, ResultSink& sink, int threads) {
  auto skip = [&](const std::string& reason) {
    sink.add(Result::skipped(kLoadedKey, kLoadedLabel, "GB/s", reason));
    sink.add(Result::skipped(kSlowdownKey, kSlowdownLabel, "%", reason));
    sink.progress("host: H2D under CPU load skipped: " + reason);
  };
  const int load_threads = threads - 1;  // one hardware thread left for the thread driving the GPU
  if (load_threads < 1) {
    skip("needs at least 2 hardware threads (one drives the GPU, the others load memory)");
    return;
  }

  // Initialise: the stream and the transfer buffers, then one checked copy.
  const gpu::Stream stream = gpu::Stream::create();
  const cudaStream_t s = stream.get();
  gpu::PinnedBuffer host;
  gpu::DeviceBuffer dev;
  try {
    host = gpu::PinnedBuffer(kTransferBytes);
    dev = gpu::DeviceBuffer(kTransferBytes);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime) throw;
    (void)cudaGetLastError();  // a failed allocation is not sticky; clear it for later checks
    skip(std::string("could not allocate transfer buffers: ") + e.what());
    return;
  }
  if (const std::string err = check_h2d_copy(host, dev, s); !err.empty()) {
    wrong_h2d(sink, err);
    return;
  }

  // Trials alone, then under the CPU copy load on the other hardware threads.
  throw_if_cancelled();
  const double alone = compute_stats(h2d_gbps(ctx, host, dev, s)).median;
  throw_if_cancelled();
  const std::size_t load_bytes = load_buffer_bytes(ctx, load_threads);
  std::optional<sys::HostCopyLoad> load;
  try {
    load.emplace(load_bytes, load_threads, /*first_cpu=*/1);
  } catch (const std::bad_alloc&) {
    skip("could not allocate the CPU copy load's buffers");
    return;
  }
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  std::vector<double> loaded = h2d_gbps(ctx, host, dev, s);
  const Telemetry telemetry = sampler.stop();
  const sys::HostCopyLoad::Summary summary = load->stop();
  if (!summary.allocated) {
    skip(summary.error);
    return;
  }
  if (!summary.valid) {
    wrong_h2d(sink, summary.error);
    return;
  }
  add_contention_results(sink, alone, std::move(loaded), telemetry, summary, load_threads,
                         load_bytes);
}

}  // namespace

void probe_host(const ProbeContext& ctx, ResultSink& sink) {
  // All hardware threads, unless a cpuset/affinity mask allows this process fewer.
  const unsigned hc = std::thread::hardware_concurrency();
  const int allowed = static_cast<int>(sys::allowed_cpus().size());
  const int threads = std::max(1, hc > 0 ? std::min(static_cast<int>(hc), allowed) : allowed);
  host_bandwidth(ctx, sink, threads);
  throw_if_cancelled();
  h2d_contention(ctx, sink, threads);
}

}  // namespace gb::bench
