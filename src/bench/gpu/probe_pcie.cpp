// bench/gpu/probe_pcie.cpp: the probe's "pcie" section: host-to-device, device-to-host and
// bidirectional copy bandwidth, pinned vs pageable host memory, over a size sweep; the PCIe
// link generation and width NVML reports *while* the copies run (links train down when idle),
// compared with the GPU's and the slot's maxima; and the PCIe replay counter across the run.
//
// Byte accounting: one copy of `size` bytes moves `size` bytes over the link; bidirectional
// counts both directions (2 x size per round). GB/s = 1e9 bytes/s. Pinned copies are timed with
// CUDA events on a non-blocking stream; pageable copies with the host clock around the copies
// and a stream synchronize (the driver stages pageable memory through its own pinned buffers,
// and that CPU work is part of what a pageable copy costs). A sample of a small size batches
// copies up to 32 MiB, enqueued back to back from one thread, as a real input pipeline does.
//
// Napkin math, full mode (Gen5 x16, ~55 GB/s pinned, ~20/16 GB/s pageable): pinning and
// filling 4 x 256 MiB of host memory ~0.4 s; checks ~0.3 s; pinned H2D and D2H headline
// loops >= 0.5 s each (~100 copies of 256 MiB, 4.9 ms each) plus a 50 ms pre-warm; bidirectional
// >= 0.3 s; pinned sweep 3 sizes x 2 directions x 12 samples of <= 32 MiB ~0.1 s; pageable
// sweep 4 sizes x 2 directions x 9 samples ~0.5 s. Total ~2.5 s. Quick (sizes 1 MiB and
// 256 MiB, loops >= 0.3 s / 0.2 s, fewer samples): ~1.5 s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "bench/probe.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/membw.hpp"
#include "gpu/timing.hpp"
#include "sys/telemetry.hpp"

namespace gb::bench {

namespace {

constexpr std::size_t kKiB = std::size_t{1} << 10;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kHeadlineBytes = 256 * kMiB;
constexpr std::size_t kBatchBytes = 32 * kMiB;  // bytes per sample for small sizes
constexpr std::uint32_t kSeedH2D = 0x510E527Fu;
constexpr std::uint32_t kSeedD2H = 0x9B05688Cu;

struct SizePoint {
  std::size_t bytes;
  const char* name;  // key part and label
};
constexpr SizePoint kSweepFull[] = {
    {64 * kKiB, "64KiB"}, {1 * kMiB, "1MiB"}, {16 * kMiB, "16MiB"}, {256 * kMiB, "256MiB"}};
constexpr SizePoint kSweepQuick[] = {{1 * kMiB, "1MiB"}, {256 * kMiB, "256MiB"}};

enum class Dir { h2d, d2h };
const char* dir_key(Dir d) {
  return d == Dir::h2d ? "h2d" : "d2h";
}
const char* dir_label(Dir d) {
  return d == Dir::h2d ? "Host to device" : "Device to host";
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int copies_per_sample(std::size_t bytes) {
  return static_cast<int>(std::max<std::size_t>(1, kBatchBytes / bytes));
}

std::vector<double> to_gbps(const std::vector<double>& seconds, double bytes_per_sample) {
  std::vector<double> gbps;
  gbps.reserve(seconds.size());
  for (const double t : seconds) gbps.push_back(bytes_per_sample / t / 1e9);
  return gbps;
}

struct Buffers {
  std::size_t bytes = 0;
  std::size_t n = 0;  // 4-byte elements
  gpu::PinnedBuffer pinned_src, pinned_dst;
  std::vector<std::uint32_t> pageable_src, pageable_dst;
  gpu::DeviceBuffer dev_dst;  // where host-to-device copies land
  gpu::DeviceBuffer dev_src;  // what device-to-host copies read

  const void* host_src(bool pinned) const {
    return pinned ? pinned_src.data() : static_cast<const void*>(pageable_src.data());
  }
  void* host_dst(bool pinned) {
    return pinned ? pinned_dst.data() : static_cast<void*>(pageable_dst.data());
  }
};

void fill_host_pattern(std::uint32_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = gpu::pattern_u32(i, seed);
}

// "" when host memory holds pattern_u32(i, seed): the sum of all elements (closed form) and
// every 4099th element plus the last 8 compared exactly.
std::string check_host_pattern(const std::uint32_t* p, std::size_t n, std::uint32_t seed) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += p[i];
  if (sum != gpu::expected_pattern_sum(n, seed))
    return "host checksum " + std::to_string(sum) + ", expected " +
           std::to_string(gpu::expected_pattern_sum(n, seed));
  auto check = [&](std::size_t i) -> std::string {
    if (p[i] == gpu::pattern_u32(i, seed)) return "";
    return "host element " + std::to_string(i) + " is " + std::to_string(p[i]) + ", expected " +
           std::to_string(gpu::pattern_u32(i, seed));
  };
  for (std::size_t i = 0; i < n; i += 4099)
    if (std::string e = check(i); !e.empty()) return e;
  for (std::size_t i = n > 8 ? n - 8 : 0; i < n; ++i)
    if (std::string e = check(i); !e.empty()) return e;
  return "";
}

std::string check_device_pattern(const Buffers& b, std::uint32_t seed, cudaStream_t s) {
  const std::uint32_t got = gpu::device_checksum_u32(b.dev_dst.as<std::uint32_t>(), b.n, s);
  const std::uint32_t want = gpu::expected_pattern_sum(b.n, seed);
  if (got != want)
    return "device checksum " + std::to_string(got) + ", expected " + std::to_string(want);
  return "";
}

// One copy of the whole buffer in direction d, from a cleared destination, checked in full.
std::string check_transfer(Buffers& b, Dir d, bool pinned, cudaStream_t s) {
  if (d == Dir::h2d) {
    GB_CHECK_CUDA(cudaMemsetAsync(b.dev_dst.data(), 0, b.bytes, s));
    GB_CHECK_CUDA(
        cudaMemcpyAsync(b.dev_dst.data(), b.host_src(pinned), b.bytes, cudaMemcpyHostToDevice, s));
    return check_device_pattern(b, kSeedH2D, s);
  }
  std::memset(b.host_dst(pinned), 0, b.bytes);
  GB_CHECK_CUDA(
      cudaMemcpyAsync(b.host_dst(pinned), b.dev_src.data(), b.bytes, cudaMemcpyDeviceToHost, s));
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  return check_host_pattern(static_cast<const std::uint32_t*>(b.host_dst(pinned)), b.n, kSeedD2H);
}

void copy_batch(Buffers& b, Dir d, bool pinned, std::size_t bytes, int count, cudaStream_t s) {
  if (d == Dir::h2d)
    gpu::memcpy_repeated(b.dev_dst.data(), b.host_src(pinned), bytes, count, cudaMemcpyHostToDevice,
                         s);
  else
    gpu::memcpy_repeated(b.host_dst(pinned), b.dev_src.data(), bytes, count, cudaMemcpyDeviceToHost,
                         s);
}

// Pinned copies timed with events: GB/s per sample.
std::vector<double> time_pinned(Buffers& b, Dir d, std::size_t bytes, const gpu::TimingPlan& plan,
                                cudaStream_t s) {
  const int count = copies_per_sample(bytes);
  const std::vector<double> ms = gpu::time_on_stream(
      s, plan, [&](cudaStream_t st) { copy_batch(b, d, true, bytes, count, st); });
  std::vector<double> seconds;
  for (const double t : ms) seconds.push_back(t * 1e-3);
  return to_gbps(seconds, static_cast<double>(bytes) * count);
}

// Pageable copies timed with the host clock (enqueue + staging + synchronize): GB/s per sample.
std::vector<double> time_pageable(Buffers& b, Dir d, std::size_t bytes, int warmup, int repetitions,
                                  cudaStream_t s) {
  const int count = copies_per_sample(bytes);
  for (int i = 0; i < warmup; ++i) {
    copy_batch(b, d, false, bytes, count, s);
    GB_CHECK_CUDA(cudaStreamSynchronize(s));
  }
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    const double t0 = now_s();
    copy_batch(b, d, false, bytes, count, s);
    GB_CHECK_CUDA(cudaStreamSynchronize(s));
    seconds.push_back(now_s() - t0);
  }
  return to_gbps(seconds, static_cast<double>(bytes) * count);
}

// The link's maxima (for the references and the link results).
struct LinkMax {
  std::optional<int> gen_slot, gen_gpu, width;
  std::optional<int> gen_reference() const { return gen_gpu ? gen_gpu : gen_slot; }
};

LinkMax link_max(const ProbeContext& ctx) {
  LinkMax m;
  if (ctx.nvml) {
    const sys::PcieLinkInfo pcie = ctx.nvml->info().pcie;
    m.gen_slot = pcie.gen_max_slot;
    m.gen_gpu = pcie.gen_max_gpu;
    m.width = pcie.width_max;
  }
  if (ctx.spec) {
    if (!m.gen_gpu && ctx.spec->pcie_gen > 0) m.gen_gpu = ctx.spec->pcie_gen;
    if (!m.width && ctx.spec->pcie_width > 0) m.width = ctx.spec->pcie_width;
  }
  return m;
}

// Theoretical per-direction bandwidth of the card's best link, for pinned results.
void add_link_reference(const LinkMax& link, Result& r, int directions) {
  const std::optional<int> gen = link.gen_reference();
  if (!gen || !link.width) return;
  const std::optional<double> gbps = pcie_link_gbps(*gen, *link.width);
  if (!gbps) return;
  const std::string link_name =
      "PCIe Gen" + std::to_string(*gen) + " x" + std::to_string(*link.width);
  r.reference("datasheet", *gbps * directions,
              directions == 1 ? link_name + " per direction" : link_name + " both directions");
}

std::string opt_int(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "N/A";
}

// Samples NVML while `body` runs. Before the sampler starts, `prewarm` runs for 50 ms so the
// link has left its idle power state; only samples taken while `body` ran are kept in `window`.
template <typename Body, typename Prewarm>
auto run_under_load(const ProbeContext& ctx, std::vector<sys::NvmlSample>& window,
                    Telemetry& telemetry, Prewarm prewarm, Body body) {
  const double prewarm_end = now_s() + 0.05;
  while (now_s() < prewarm_end) prewarm();
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  const double t0 = now_s();
  auto result = body();
  const double loaded_s = now_s() - t0;
  telemetry = sampler.stop();
  for (const sys::NvmlSample& smp : sampler.samples())
    if (smp.t_s <= loaded_s) window.push_back(smp);
  return result;
}

constexpr const char* kOneDirection = "transfer_bytes per copy (one direction)";

Result pcie_result(const std::string& key, const std::string& label, std::vector<double> gbps,
                   std::size_t bytes, int copies, const std::string& timing,
                   const char* bytes_counted = kOneDirection) {
  Result r = Result::measured(key, label, "GB/s", std::move(gbps));
  r.param("transfer_bytes", static_cast<double>(bytes), "B", 0)
      .param("copies_per_sample", static_cast<double>(copies), "", 0)
      .param("bytes_counted", bytes_counted)
      .param("timing", timing);
  return r;
}

void link_results(const ProbeContext& ctx, ResultSink& sink, const LinkMax& link,
                  const std::vector<sys::NvmlSample>& window,
                  const std::optional<sys::NvmlSample>& before,
                  const std::optional<sys::NvmlSample>& after) {
  const char* gen_key = "probe.pcie.link.gen_under_load";
  const char* gen_label = "PCIe link generation under load (minimum)";
  const char* width_key = "probe.pcie.link.width_under_load";
  const char* width_label = "PCIe link width under load (minimum)";
  const char* replay_key = "probe.pcie.replay_delta";
  const char* replay_label = "PCIe replays during the transfers";
  if (!ctx.nvml) {
    const std::pair<const char*, const char*> keys[] = {
        {gen_key, gen_label}, {width_key, width_label}, {replay_key, replay_label}};
    for (const auto& [key, label] : keys)
      sink.add(Result::skipped(key, label, "", ctx.nvml_missing_reason));
    return;
  }
  std::vector<double> gens, widths;
  for (const sys::NvmlSample& s : window) {
    if (s.pcie_gen) gens.push_back(*s.pcie_gen);
    if (s.pcie_width) widths.push_back(*s.pcie_width);
  }
  const std::string evidence =
      "minimum over NVML samples taken during the pinned H2D, D2H and "
      "bidirectional transfers";
  auto link_result = [&](const char* key, const char* label, std::vector<double> values) {
    if (values.empty()) {
      sink.add(Result::skipped(key, label, "", "NVML reported no value while the transfers ran"));
      return;
    }
    Result r = Result::measured(key, label, "", std::move(values));
    r.value = r.stats.min;  // one downtrained sample is the finding
    r.param("value", evidence);
    // The maxima the rules judge the link against; a maximum NVML does not report is absent.
    if (link.gen_slot) r.param("gen_max_slot", *link.gen_slot, "", 0);
    if (link.gen_gpu) r.param("gen_max_gpu", *link.gen_gpu, "", 0);
    if (link.width) r.param("width_max", *link.width, "", 0);
    sink.progress("pcie: " + std::string(label) + ": " + fixed(*r.value, 0) + " (max slot " +
                  opt_int(link.gen_slot) + ", GPU " + opt_int(link.gen_gpu) + ", width " +
                  opt_int(link.width) + ")");
    sink.add(std::move(r));
  };
  link_result(gen_key, gen_label, std::move(gens));
  link_result(width_key, width_label, std::move(widths));

  if (before && after && before->pcie_replay_counter && after->pcie_replay_counter &&
      *after->pcie_replay_counter >= *before->pcie_replay_counter) {
    const double delta =
        static_cast<double>(*after->pcie_replay_counter - *before->pcie_replay_counter);
    Result r = Result::measured(replay_key, replay_label, "", {delta}, false);
    r.param("counter_before", static_cast<double>(*before->pcie_replay_counter), "", 0)
        .param("counter_after", static_cast<double>(*after->pcie_replay_counter), "", 0)
        .param("interval", "pinned H2D, D2H and bidirectional headline transfers");
    sink.progress("pcie: replays during transfers: " + fixed(delta, 0));
    sink.add(std::move(r));
  } else {
    sink.add(Result::skipped(replay_key, replay_label, "",
                             "NVML does not report the PCIe replay counter for this device"));
  }
}

// Skipped results for the headline keys (all but `except`, which the caller reports).
void skip_all(ResultSink& sink, const std::string& reason, const std::string& except = "") {
  for (const Dir d : {Dir::h2d, Dir::d2h}) {
    for (const char* kind : {"pinned", "pageable"}) {
      const std::string key = std::string("probe.pcie.") + dir_key(d) + "." + kind + ".gbps";
      if (key != except)
        sink.add(Result::skipped(key, std::string(dir_label(d)) + ", " + kind, "GB/s", reason));
    }
  }
  sink.add(
      Result::skipped("probe.pcie.bidir.pinned.gbps", "Bidirectional, pinned", "GB/s", reason));
  sink.add(Result::skipped("probe.pcie.link.gen_under_load",
                           "PCIe link generation under load (minimum)", "", reason));
  sink.add(Result::skipped("probe.pcie.link.width_under_load",
                           "PCIe link width under load (minimum)", "", reason));
  sink.add(
      Result::skipped("probe.pcie.replay_delta", "PCIe replays during the transfers", "", reason));
  sink.progress("pcie: skipped: " + reason);
}

// The transfer buffers, allocated and filled; the reason when they cannot be.
std::optional<std::string> prepare_buffers(Buffers& b, cudaStream_t s) {
  b.bytes = kHeadlineBytes;
  b.n = b.bytes / 4;
  try {
    b.dev_dst = gpu::DeviceBuffer(b.bytes);
    b.dev_src = gpu::DeviceBuffer(b.bytes);
    b.pinned_src = gpu::PinnedBuffer(b.bytes);
    b.pinned_dst = gpu::PinnedBuffer(b.bytes);
    b.pageable_src.resize(b.n);  // value-initialised: every page touched before timing
    b.pageable_dst.resize(b.n);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime) throw;
    (void)cudaGetLastError();  // a failed allocation is not sticky; clear it for later checks
    return std::string("could not allocate transfer buffers: ") + e.what();
  } catch (const std::bad_alloc&) {
    return "could not allocate " + std::to_string(2 * b.bytes) + " bytes of pageable memory";
  }
  fill_host_pattern(b.pinned_src.as<std::uint32_t>(), b.n, kSeedH2D);
  fill_host_pattern(b.pageable_src.data(), b.n, kSeedH2D);
  gpu::fill_pattern_u32(b.dev_src.as<std::uint32_t>(), b.n, kSeedD2H, s);
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  return std::nullopt;
}

// Check before timing: each direction and memory kind once, in full. False (with the failed
// result and the rest skipped) when one delivered wrong data.
bool check_transfers(Buffers& b, cudaStream_t s, ResultSink& sink) {
  for (const bool pinned : {true, false}) {
    for (const Dir d : {Dir::h2d, Dir::d2h}) {
      const std::string err = check_transfer(b, d, pinned, s);
      if (err.empty()) continue;
      const std::string key =
          std::string("probe.pcie.") + dir_key(d) + (pinned ? ".pinned" : ".pageable") + ".gbps";
      Result r = Result::skipped(
          key, std::string(dir_label(d)) + (pinned ? ", pinned" : ", pageable"), "GB/s", "");
      r.status = Status::fail;
      r.reason = "wrong result, not timed: " + err;
      sink.progress("pcie: " + key + " WRONG RESULT: " + err);
      sink.add(std::move(r));
      skip_all(sink, "not measured: " + key + " delivered wrong data", key);
      return false;
    }
  }
  return true;
}

// Headline: pinned 256 MiB each way, long enough (>= 0.5 s) for NVML to see the link busy.
gpu::TimingPlan headline_plan(bool quick) {
  gpu::TimingPlan plan;
  plan.warmup = 2;
  plan.repetitions = 20;
  plan.min_total_ms = quick ? 300 : 500;
  plan.max_repetitions = 400;
  return plan;
}

void measure_headline(const ProbeContext& ctx, Buffers& b, const LinkMax& link, cudaStream_t s,
                      std::vector<sys::NvmlSample>& window, ResultSink& sink) {
  const gpu::TimingPlan plan = headline_plan(ctx.options.quick);
  for (const Dir d : {Dir::h2d, Dir::d2h}) {
    throw_if_cancelled();
    Telemetry telemetry;
    std::vector<double> gbps = run_under_load(
        ctx, window, telemetry,
        [&] {
          copy_batch(b, d, true, b.bytes, 1, s);
          GB_CHECK_CUDA(cudaStreamSynchronize(s));
        },
        [&] { return time_pinned(b, d, b.bytes, plan, s); });
    const std::string base = std::string("probe.pcie.") + dir_key(d) + ".pinned";
    Result r = pcie_result(base + ".gbps", std::string(dir_label(d)) + ", pinned, 256 MiB",
                           std::move(gbps), b.bytes, 1, "CUDA events, non-blocking stream");
    add_link_reference(link, r, 1);
    r.telemetry = telemetry;
    sink.progress("pcie: " + r.label + ": " + fixed(*r.value, 1) + " GB/s");
    sink.add(std::move(r));  // also the sweep's 256 MiB point: one key, not two
  }
}

// Bidirectional: H2D on one stream and D2H on another at the same time; both directions
// counted. Checked once, from cleared destinations, before it is timed.
void measure_bidirectional(const ProbeContext& ctx, Buffers& b, const LinkMax& link,
                           cudaStream_t s, cudaStream_t s2, std::vector<sys::NvmlSample>& window,
                           ResultSink& sink) {
  throw_if_cancelled();
  auto bidir_round = [&](cudaStream_t st) {
    gpu::memcpy_bidirectional(b.dev_dst.data(), b.pinned_src.data(), b.pinned_dst.data(),
                              b.dev_src.data(), b.bytes, 1, st, s2);
  };
  GB_CHECK_CUDA(cudaMemsetAsync(b.dev_dst.data(), 0, b.bytes, s));
  std::memset(b.pinned_dst.data(), 0, b.bytes);
  bidir_round(s);
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  std::string err = check_device_pattern(b, kSeedH2D, s);
  if (err.empty()) err = check_host_pattern(b.pinned_dst.as<std::uint32_t>(), b.n, kSeedD2H);
  const char* key = "probe.pcie.bidir.pinned.gbps";
  const std::string label = "Bidirectional (H2D + D2H at once), pinned, 256 MiB each way";
  if (!err.empty()) {
    Result r = Result::skipped(key, label, "GB/s", "");
    r.status = Status::fail;
    r.reason = "wrong result, not timed: " + err;
    sink.add(std::move(r));
    return;
  }
  gpu::TimingPlan plan = headline_plan(ctx.options.quick);
  plan.min_total_ms = ctx.options.quick ? 200 : 300;
  Telemetry telemetry;
  const std::vector<double> ms = run_under_load(
      ctx, window, telemetry,
      [&] {
        bidir_round(s);
        GB_CHECK_CUDA(cudaStreamSynchronize(s));
      },
      [&] { return gpu::time_on_stream(s, plan, bidir_round); });
  std::vector<double> seconds;
  for (const double t : ms) seconds.push_back(t * 1e-3);
  Result r = pcie_result(key, label, to_gbps(seconds, 2.0 * static_cast<double>(b.bytes)),
                         b.bytes, 1, "CUDA events; H2D and D2H on two non-blocking streams",
                         "both directions: 2 x transfer_bytes per round");
  add_link_reference(link, r, 2);
  r.telemetry = telemetry;
  sink.progress("pcie: " + label + ": " + fixed(*r.value, 1) + " GB/s");
  sink.add(std::move(r));
}

std::vector<SizePoint> sweep_points(bool quick) {
  return quick ? std::vector<SizePoint>(std::begin(kSweepQuick), std::end(kSweepQuick))
               : std::vector<SizePoint>(std::begin(kSweepFull), std::end(kSweepFull));
}

// Pinned size sweep (the headline covered 256 MiB).
void measure_pinned_sweep(const ProbeContext& ctx, Buffers& b, const LinkMax& link,
                          cudaStream_t s, ResultSink& sink) {
  gpu::TimingPlan plan;
  plan.warmup = 2;
  plan.repetitions = ctx.options.quick ? 5 : 10;
  for (const Dir d : {Dir::h2d, Dir::d2h}) {
    for (const SizePoint& p : sweep_points(ctx.options.quick)) {
      if (p.bytes == kHeadlineBytes) continue;
      throw_if_cancelled();
      sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
      sampler.start();
      std::vector<double> gbps = time_pinned(b, d, p.bytes, plan, s);
      const Telemetry telemetry = sampler.stop();
      Result r =
          pcie_result(std::string("probe.pcie.") + dir_key(d) + ".pinned." + p.name + ".gbps",
                      std::string(dir_label(d)) + ", pinned, " + p.name, std::move(gbps), p.bytes,
                      copies_per_sample(p.bytes), "CUDA events, non-blocking stream");
      add_link_reference(link, r, 1);
      r.telemetry = telemetry;
      sink.progress("pcie: " + r.label + ": " + fixed(*r.value, 1) + " GB/s");
      sink.add(std::move(r));
    }
  }
}

// Pageable sweep; its 256 MiB point is the pageable headline.
void measure_pageable_sweep(const ProbeContext& ctx, Buffers& b, cudaStream_t s,
                            ResultSink& sink) {
  const int reps = ctx.options.quick ? 4 : 8;
  for (const Dir d : {Dir::h2d, Dir::d2h}) {
    for (const SizePoint& p : sweep_points(ctx.options.quick)) {
      throw_if_cancelled();
      sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
      sampler.start();
      std::vector<double> gbps = time_pageable(b, d, p.bytes, 1, reps, s);
      const Telemetry telemetry = sampler.stop();
      const std::string base = std::string("probe.pcie.") + dir_key(d) + ".pageable";
      Result r = pcie_result(base + "." + p.name + ".gbps",
                             std::string(dir_label(d)) + ", pageable, " + p.name, std::move(gbps),
                             p.bytes, copies_per_sample(p.bytes),
                             "host clock around the copies and a stream synchronize");
      r.telemetry = telemetry;
      sink.progress("pcie: " + r.label + ": " + fixed(*r.value, 1) + " GB/s");
      if (p.bytes == kHeadlineBytes) {  // the sweep's 256 MiB point is the headline key
        r.key = base + ".gbps";
        r.label = std::string(dir_label(d)) + ", pageable, 256 MiB";
      }
      sink.add(std::move(r));
    }
  }
}

}  // namespace

// The section in its phases: buffers, check, headline and bidirectional copies (with NVML
// watching the link), link state, then the pinned and pageable sweeps.
void probe_pcie(const ProbeContext& ctx, ResultSink& sink) {
  const gpu::Stream stream = gpu::Stream::create();
  const gpu::Stream stream2 = gpu::Stream::create();  // the D2H half of bidirectional copies
  const cudaStream_t s = stream.get();
  Buffers b;
  if (const auto why = prepare_buffers(b, s)) {
    skip_all(sink, *why);
    return;
  }
  if (!check_transfers(b, s, sink)) return;
  throw_if_cancelled();

  const LinkMax link = link_max(ctx);
  std::vector<sys::NvmlSample> window;
  std::optional<sys::NvmlSample> replays_before, replays_after;
  if (ctx.nvml) replays_before = ctx.nvml->sample();
  measure_headline(ctx, b, link, s, window, sink);
  measure_bidirectional(ctx, b, link, s, stream2.get(), window, sink);
  if (ctx.nvml) replays_after = ctx.nvml->sample();
  link_results(ctx, sink, link, window, replays_before, replays_after);

  measure_pinned_sweep(ctx, b, link, s, sink);
  measure_pageable_sweep(ctx, b, s, sink);
}

}  // namespace gb::bench
