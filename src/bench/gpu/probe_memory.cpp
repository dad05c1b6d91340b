// bench/gpu/probe_memory.cpp: the probe's "memory" section: device-memory (HBM) bandwidth of
// our own read, write, copy and triad kernels (gpu/membw.cu) and of cudaMemcpy device to
// device, each checked against a host-side reference before it is timed.
//
// Byte accounting, n bytes per buffer: read n, write n, copy 2n (read + write), triad 3n
// (2 reads + 1 write), memcpy D2D 2n (read + write). GB/s = 1e9 bytes/s. Buffers are 2 GiB
// (quick: 512 MiB), far past the 60 MB L2 of an H200, so every pass streams from HBM.
//
// Each kernel runs as a sweep over candidates: read and triad over 3 block sizes; write and
// copy over every gpu::KernelVariant (grid-stride or one-shot tiled, unroll 4 or 8, normal or
// streaming cache hints) x 4 block sizes (128..1024). Every candidate is checked, then timed
// briefly (1 warm-up + 4 samples; quick 1 + 2); the fastest by median is timed in full (2 + 20;
// quick 1 + 8) and reported, with its variant and shape in params and every candidate's median
// in launch_shapes_tried.
//
// Napkin math, full mode on an H200 (~4.4 TB/s): one launch takes 0.5 ms (read, write), 1 ms
// (copy, memcpy; 2 GiB copy = 4.29 GB, 1.01 ms at 4.25 TB/s) or 1.5 ms (triad). A sample is
// 4 launches. Sweep: read 3 x 5 x 2 ms = 0.03 s, write 32 x (5 x 2 ms + ~3 ms check) = 0.4 s,
// copy 32 x (5 x 4 ms + ~4 ms check) = 0.8 s, triad 3 x 5 x 6 ms = 0.1 s; full timing of the
// winners 22 samples each: 0.04 + 0.04 + 0.09 + 0.13 s; memcpy 0.1 s; plus fills and
// allocation: ~1.9 s. Quick mode: a quarter of the bytes, fewer samples: ~0.35 s.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <random>
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

using gpu::LaunchShape;
using gpu::MemKernel;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uint32_t kSeedSource = 0x2545F491u;
constexpr std::uint32_t kSeedWrite = 0x6A09E667u;
constexpr std::uint32_t kSeedTriadB = 0xBB67AE85u;
constexpr std::uint32_t kSeedTriadC = 0x3C6EF372u;
constexpr float kTriadScale = 3.0f;  // small integer: keeps the triad exact (membw.hpp)
constexpr int kLaunchesPerSample = 4;
constexpr std::size_t kCheckSamples = 4096;  // elements compared one by one per check
constexpr std::array<int, 3> kThreadVariants = {256, 512, 1024};       // read, triad
constexpr std::array<int, 4> kVariantThreads = {128, 256, 512, 1024};  // write, copy variants

std::string mib(std::size_t bytes) {
  return std::to_string(bytes / kMiB) + " MiB";
}

struct Measure {
  MemKernel kernel;
  const char* key;
  const char* label;
  std::size_t bytes_factor;  // bytes counted per launch = factor x buffer bytes
  const char* accounting;
};

constexpr std::array<Measure, 4> kKernels = {{
    {MemKernel::read, "probe.memory.read.gbps", "HBM read (own kernel)", 1,
     "bytes read (buffer size); one 4-byte partial sum per block written, not counted"},
    {MemKernel::write, "probe.memory.write.gbps", "HBM write (own kernel)", 1,
     "bytes written (buffer size)"},
    {MemKernel::copy, "probe.memory.copy.gbps", "HBM copy (own kernel, read + write counted)", 2,
     "read + write: 2 x buffer size"},
    {MemKernel::triad, "probe.memory.triad.gbps", "HBM triad a = b + s*c (own kernel)", 3,
     "2 reads + 1 write: 3 x buffer size"},
}};
constexpr const char* kMemcpyKey = "probe.memory.memcpy_d2d.gbps";
constexpr const char* kMemcpyLabel = "cudaMemcpy device to device (read + write counted)";

void add_memory_references(const ProbeContext& ctx, Result& r) {
  if (ctx.spec && ctx.spec->mem_bandwidth_gbps > 0)
    r.reference("datasheet", ctx.spec->mem_bandwidth_gbps,
                std::string(ctx.spec->name) + " datasheet: " + std::string(ctx.spec->source));
  const double computed =
      computed_mem_bandwidth_gbps(ctx.device.mem_bus_width_bits, ctx.device.mem_clock_max_mhz);
  if (computed > 0)
    r.reference("clock_adjusted", computed,
                std::to_string(ctx.device.mem_bus_width_bits) + "-bit bus x " +
                    fixed(ctx.device.mem_clock_max_mhz, 0) +
                    " MHz memory clock x 2 (double data rate) / 8 (CUDA device attributes)");
}

// A result for a kernel whose output was wrong: nothing is timed (a wrong fast result is a
// failure, not a figure).
Result wrong_result(const char* key, const char* label, const std::string& what) {
  Result r = Result::skipped(key, label, "GB/s", "");
  r.status = Status::fail;
  r.reason = "wrong result, not timed: " + what;
  return r;
}

// The device buffers of the section: three of `bytes` each, plus small helpers for checks.
struct Buffers {
  std::size_t bytes = 0;
  std::size_t n = 0;  // 4-byte elements per buffer
  gpu::DeviceBuffer x, y, z;
  gpu::DeviceBuffer partial_sums;  // one per block of the largest grid
  gpu::DeviceBuffer sample_indices, sample_values;
  std::vector<std::uint64_t> host_indices;
};

// Indices compared element by element: the first and last vectors (the tail of a size that is
// not a multiple of 4 is last) and random ones across the buffer.
std::vector<std::uint64_t> check_indices(std::size_t n) {
  std::vector<std::uint64_t> idx;
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 8); ++i) {
    idx.push_back(i);
    idx.push_back(n - 1 - i);
  }
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint64_t> dist(0, n - 1);
  while (idx.size() < kCheckSamples) idx.push_back(dist(rng));
  return idx;
}

// Values of the sampled elements of a device buffer.
std::vector<std::uint32_t> gather(Buffers& b, const void* src, cudaStream_t s) {
  gpu::gather_u32(static_cast<const std::uint32_t*>(src), b.sample_indices.as<std::uint64_t>(),
                  b.host_indices.size(), b.sample_values.as<std::uint32_t>(), s);
  std::vector<std::uint32_t> out(b.host_indices.size());
  GB_CHECK_CUDA(cudaMemcpyAsync(out.data(), b.sample_values.data(), out.size() * 4,
                                cudaMemcpyDeviceToHost, s));
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  return out;
}

// "" when `buffer` holds pattern_u32(i, seed) everywhere: full checksum plus sampled elements.
std::string check_u32_pattern(Buffers& b, const void* buffer, std::uint32_t seed, cudaStream_t s) {
  const std::uint32_t want = gpu::expected_pattern_sum(b.n, seed);
  const std::uint32_t got =
      gpu::device_checksum_u32(static_cast<const std::uint32_t*>(buffer), b.n, s);
  if (got != want)
    return "checksum over all " + std::to_string(b.n) + " elements is " + std::to_string(got) +
           ", expected " + std::to_string(want);
  const std::vector<std::uint32_t> values = gather(b, buffer, s);
  for (std::size_t k = 0; k < values.size(); ++k) {
    const std::uint64_t i = b.host_indices[k];
    if (values[k] != gpu::pattern_u32(i, seed))
      return "element " + std::to_string(i) + " is " + std::to_string(values[k]) + ", expected " +
             std::to_string(gpu::pattern_u32(i, seed));
  }
  return "";
}

// One launch configuration of a kernel: variant (write/copy only) and launch shape.
struct Candidate {
  gpu::KernelVariant variant;
  LaunchShape shape;
};

std::string describe(const Candidate& c) {
  return gpu::variant_name(c.variant) + " " + std::to_string(c.shape.blocks) + "x" +
         std::to_string(c.shape.threads);
}

std::string access_description(MemKernel k, const gpu::KernelVariant& v) {
  std::string a = "16-byte vectors, ";
  a += v.access == gpu::MemAccess::tiled
           ? "one-shot tiles (grid sized to the work), " + std::to_string(v.unroll) +
                 " warp-contiguous vectors per thread"
           : "persistent grid-stride, " + std::to_string(v.unroll) + " per thread per iteration";
  if (k == MemKernel::copy || k == MemKernel::triad) a += ", all loads before stores";
  a += v.hint == gpu::CacheHint::streaming ? ", streaming hints (ld/st.global.cs)"
                                           : ", default cache policy";
  return a;
}

// Candidates of kernel k: grid-stride variants get a persistent grid (every block resident at
// once), tiled ones one block per tile of the buffer. Shapes that do not fit (occupancy 0) are
// left out.
std::vector<Candidate> candidates(const ProbeContext& ctx, MemKernel k, std::size_t n) {
  std::vector<Candidate> out;
  const bool sweep_variants = k == MemKernel::write || k == MemKernel::copy;
  const std::vector<int> threads_list =
      sweep_variants ? std::vector<int>(kVariantThreads.begin(), kVariantThreads.end())
                     : std::vector<int>(kThreadVariants.begin(), kThreadVariants.end());
  for (const gpu::KernelVariant& v : gpu::kernel_variants(k)) {
    for (const int threads : threads_list) {
      const int per_sm = gpu::blocks_per_sm(k, threads, v);
      if (per_sm < 1) continue;
      const int blocks = v.access == gpu::MemAccess::tiled
                             ? gpu::tiled_grid_blocks(n, threads, v.unroll)
                             : ctx.device.sm_count * per_sm;
      out.push_back({v, {blocks, threads}});
    }
  }
  return out;
}

void run_kernel(MemKernel k, Buffers& b, const Candidate& c, cudaStream_t s) {
  const LaunchShape shape = c.shape;
  switch (k) {
    case MemKernel::read:
      gpu::launch_read(b.x.as<std::uint32_t>(), b.n, b.partial_sums.as<std::uint32_t>(), shape, s);
      break;
    case MemKernel::write:
      gpu::launch_write(b.y.as<std::uint32_t>(), b.n, kSeedWrite, shape, s, c.variant);
      break;
    case MemKernel::copy:
      gpu::launch_copy(b.x.as<std::uint32_t>(), b.y.as<std::uint32_t>(), b.n, shape, s, c.variant);
      break;
    case MemKernel::triad:
      gpu::launch_triad(b.z.as<float>(), b.y.as<float>(), b.x.as<float>(), kTriadScale, b.n, shape,
                        s);
      break;
  }
}

// Sets up the inputs of kernel k (x holds the u32 pattern for read/write/copy; x and y hold
// float patterns for the triad), runs it once as candidate c and checks its output.
std::string check_kernel(MemKernel k, Buffers& b, const Candidate& c, cudaStream_t s) {
  const LaunchShape shape = c.shape;
  switch (k) {
    case MemKernel::read: {
      run_kernel(k, b, c, s);
      std::vector<std::uint32_t> partials(static_cast<std::size_t>(shape.blocks));
      GB_CHECK_CUDA(cudaMemcpyAsync(partials.data(), b.partial_sums.data(), partials.size() * 4,
                                    cudaMemcpyDeviceToHost, s));
      GB_CHECK_CUDA(cudaStreamSynchronize(s));
      std::uint32_t got = 0;
      for (const std::uint32_t v : partials) got += v;
      const std::uint32_t want = gpu::expected_pattern_sum(b.n, kSeedSource);
      if (got != want)
        return "sum of " + std::to_string(b.n) + " elements is " + std::to_string(got) +
               ", expected " + std::to_string(want) + " (closed form)";
      return "";
    }
    case MemKernel::write:
      GB_CHECK_CUDA(cudaMemsetAsync(b.y.data(), 0, b.bytes, s));
      run_kernel(k, b, c, s);
      return check_u32_pattern(b, b.y.data(), kSeedWrite, s);
    case MemKernel::copy:
      GB_CHECK_CUDA(cudaMemsetAsync(b.y.data(), 0, b.bytes, s));
      run_kernel(k, b, c, s);
      return check_u32_pattern(b, b.y.data(), kSeedSource, s);
    case MemKernel::triad: {
      GB_CHECK_CUDA(cudaMemsetAsync(b.z.data(), 0, b.bytes, s));
      run_kernel(k, b, c, s);
      const std::vector<std::uint32_t> values = gather(b, b.z.data(), s);
      for (std::size_t j = 0; j < values.size(); ++j) {
        const std::uint64_t i = b.host_indices[j];
        const float want =
            gpu::pattern_f32(i, kSeedTriadB) + kTriadScale * gpu::pattern_f32(i, kSeedTriadC);
        const float got = std::bit_cast<float>(values[j]);
        if (got != want)
          return "a[" + std::to_string(i) + "] = " + fixed(got, 1) + ", expected " + fixed(want, 1);
      }
      return "";
    }
  }
  return "unknown kernel";
}

void prepare_inputs(MemKernel k, Buffers& b, cudaStream_t s) {
  if (k == MemKernel::triad) {
    gpu::fill_pattern_f32(b.x.as<float>(), b.n, kSeedTriadC, s);
    gpu::fill_pattern_f32(b.y.as<float>(), b.n, kSeedTriadB, s);
  } else {
    gpu::fill_pattern_u32(b.x.as<std::uint32_t>(), b.n, kSeedSource, s);
  }
}

std::vector<double> to_gbps(const std::vector<double>& ms, double bytes_per_sample) {
  std::vector<double> gbps;
  gbps.reserve(ms.size());
  for (const double t : ms) gbps.push_back(bytes_per_sample / (t * 1e-3) / 1e9);
  return gbps;
}

gpu::TimingPlan timing_plan(bool quick) {
  gpu::TimingPlan plan;
  plan.warmup = quick ? 1 : 2;
  plan.repetitions = quick ? 8 : 20;
  return plan;
}

// The short timing of each candidate in a sweep; only the winner gets timing_plan.
gpu::TimingPlan sweep_plan(bool quick) {
  gpu::TimingPlan plan;
  plan.warmup = 1;
  plan.repetitions = quick ? 2 : 4;
  return plan;
}

void measure_kernel(const ProbeContext& ctx, ResultSink& sink, const Measure& m, Buffers& b,
                    const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
  const double bytes_per_launch = static_cast<double>(m.bytes_factor * b.bytes);
  const double bytes_per_sample = bytes_per_launch * kLaunchesPerSample;
  prepare_inputs(m.kernel, b, s);

  const std::vector<Candidate> cands = candidates(ctx, m.kernel, b.n);
  if (cands.empty()) {
    sink.add(Result::skipped(m.key, m.label, "GB/s",
                             "no launch shape fits on this device (occupancy 0)"));
    return;
  }
  auto time_candidate = [&](const Candidate& c, const gpu::TimingPlan& plan) {
    const std::vector<double> ms = gpu::time_on_stream(s, plan, [&](cudaStream_t st) {
      for (int i = 0; i < kLaunchesPerSample; ++i) run_kernel(m.kernel, b, c, st);
    });
    return to_gbps(ms, bytes_per_sample);
  };

  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  // Sweep: check every candidate, time it briefly, keep the fastest by median.
  std::size_t best_index = 0;
  double best_median = -1;
  std::string tried;
  for (std::size_t ci = 0; ci < cands.size(); ++ci) {
    throw_if_cancelled();
    const Candidate& c = cands[ci];
    if (const std::string err = check_kernel(m.kernel, b, c, s); !err.empty()) {
      sampler.stop();
      sink.add(wrong_result(m.key, m.label, err + " (" + describe(c) + ")"));
      sink.progress(std::string("memory: ") + m.key + " WRONG RESULT: " + err + " (" + describe(c) +
                    ")");
      return;
    }
    const double median = compute_stats(time_candidate(c, sweep_plan(ctx.options.quick))).median;
    if (!tried.empty()) tried += ", ";
    tried += describe(c) + ": " + fixed(median, 0) + " GB/s";
    if (median > best_median) {
      best_median = median;
      best_index = ci;
    }
  }
  // The winner, timed in full: these samples are the result (the sweep's few samples only
  // choose; re-timing avoids reporting the luckiest of many short runs).
  throw_if_cancelled();
  const Candidate& best = cands[best_index];
  std::vector<double> gbps = time_candidate(best, timing_plan(ctx.options.quick));
  const Telemetry telemetry = sampler.stop();

  Result r = Result::measured(m.key, m.label, "GB/s", std::move(gbps));
  r.param("buffer_bytes", static_cast<double>(b.bytes), "B", 0)
      .param("bytes_counted", bytes_per_launch, "B", 0)
      .param("byte_accounting", m.accounting)
      .param("variant", gpu::variant_name(best.variant))
      .param("threads_per_block", static_cast<double>(best.shape.threads), "", 0)
      .param("blocks", static_cast<double>(best.shape.blocks), "", 0)
      .param("candidates_tried", static_cast<double>(cands.size()), "", 0)
      .param("launch_shapes_tried", tried)
      .param("sweep_samples_per_candidate",
             std::to_string(sweep_plan(ctx.options.quick).repetitions))
      .param("launches_per_sample", static_cast<double>(kLaunchesPerSample), "", 0)
      .param("access", access_description(m.kernel, best.variant));
  add_memory_references(ctx, r);
  r.telemetry = telemetry;
  sink.progress("memory: " + std::string(m.label) + ": " + fixed(*r.value, 0) + " GB/s (" +
                gpu::variant_name(best.variant) + ", " + std::to_string(best.shape.blocks) +
                " blocks x " + std::to_string(best.shape.threads) + " threads; sweep best " +
                fixed(best_median, 0) + " GB/s of " + std::to_string(cands.size()) +
                " candidates)");
  sink.add(std::move(r));
}

void measure_memcpy(const ProbeContext& ctx, ResultSink& sink, Buffers& b,
                    const gpu::Stream& stream) {
  const cudaStream_t s = stream.get();
  gpu::fill_pattern_u32(b.x.as<std::uint32_t>(), b.n, kSeedSource, s);
  GB_CHECK_CUDA(cudaMemsetAsync(b.y.data(), 0, b.bytes, s));
  GB_CHECK_CUDA(cudaMemcpyAsync(b.y.data(), b.x.data(), b.bytes, cudaMemcpyDeviceToDevice, s));
  if (const std::string err = check_u32_pattern(b, b.y.data(), kSeedSource, s); !err.empty()) {
    sink.add(wrong_result(kMemcpyKey, kMemcpyLabel, err));
    sink.progress(std::string("memory: ") + kMemcpyKey + " WRONG RESULT: " + err);
    return;
  }
  throw_if_cancelled();
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(10));
  sampler.start();
  const std::vector<double> ms =
      gpu::time_on_stream(s, timing_plan(ctx.options.quick), [&](cudaStream_t st) {
        for (int i = 0; i < kLaunchesPerSample; ++i)
          GB_CHECK_CUDA(
              cudaMemcpyAsync(b.y.data(), b.x.data(), b.bytes, cudaMemcpyDeviceToDevice, st));
      });
  const Telemetry telemetry = sampler.stop();
  const double bytes_per_copy = 2.0 * static_cast<double>(b.bytes);
  Result r = Result::measured(kMemcpyKey, kMemcpyLabel, "GB/s",
                              to_gbps(ms, bytes_per_copy * kLaunchesPerSample));
  r.param("buffer_bytes", static_cast<double>(b.bytes), "B", 0)
      .param("bytes_counted", bytes_per_copy, "B", 0)
      .param("byte_accounting", "read + write: 2 x buffer size")
      .param("copies_per_sample", static_cast<double>(kLaunchesPerSample), "", 0)
      .param("api", "cudaMemcpyAsync(cudaMemcpyDeviceToDevice)");
  add_memory_references(ctx, r);
  r.telemetry = telemetry;
  sink.progress("memory: " + std::string(kMemcpyLabel) + ": " + fixed(*r.value, 0) + " GB/s");
  sink.add(std::move(r));
}

void skip_all(ResultSink& sink, const std::string& reason) {
  for (const Measure& m : kKernels) sink.add(Result::skipped(m.key, m.label, "GB/s", reason));
  sink.add(Result::skipped(kMemcpyKey, kMemcpyLabel, "GB/s", reason));
  sink.progress("memory: skipped: " + reason);
}

// Buffer size: 2 GiB (quick 512 MiB) each, halved while three do not fit in free memory with
// 512 MiB to spare; never below 4 x L2 nor 256 MiB, so a streaming pass finds nothing of itself
// left in L2 and the figure stays an HBM figure. 0 when even that does not fit.
std::size_t choose_buffer_bytes(const ProbeContext& ctx, std::size_t free_bytes) {
  std::size_t bytes = (ctx.options.quick ? 512 : 2048) * kMiB;
  const std::size_t floor_bytes =
      std::max<std::size_t>(256 * kMiB, static_cast<std::size_t>(4 * ctx.device.l2_bytes));
  const std::size_t spare = 512 * kMiB;
  while (bytes >= floor_bytes) {
    if (3 * bytes + spare <= free_bytes) return bytes;
    bytes /= 2;
  }
  return 0;
}

}  // namespace

void probe_memory(const ProbeContext& ctx, ResultSink& sink) {
  std::size_t free_bytes = 0, total_bytes = 0;
  GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t bytes = choose_buffer_bytes(ctx, free_bytes);
  if (bytes == 0) {
    skip_all(sink, "not enough free device memory for three buffers well past L2 (" +
                       mib(free_bytes) + " free)");
    return;
  }

  const gpu::Stream stream = gpu::Stream::create();
  Buffers b;
  b.bytes = bytes;
  b.n = bytes / 4;
  b.host_indices = check_indices(b.n);
  int max_blocks = 1;
  for (const Measure& m : kKernels)
    for (const int threads : kThreadVariants)
      max_blocks =
          std::max(max_blocks, ctx.device.sm_count * gpu::blocks_per_sm(m.kernel, threads));
  try {
    b.x = gpu::DeviceBuffer(bytes);
    b.y = gpu::DeviceBuffer(bytes);
    b.z = gpu::DeviceBuffer(bytes);
    b.partial_sums = gpu::DeviceBuffer(static_cast<std::size_t>(max_blocks) * 4);
    b.sample_indices = gpu::DeviceBuffer(b.host_indices.size() * sizeof(std::uint64_t));
    b.sample_values = gpu::DeviceBuffer(b.host_indices.size() * sizeof(std::uint32_t));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime) throw;
    (void)cudaGetLastError();  // a failed cudaMalloc is not sticky; clear it for later checks
    skip_all(sink, std::string("could not allocate device buffers: ") + e.what());
    return;
  }
  GB_CHECK_CUDA(cudaMemcpyAsync(b.sample_indices.data(), b.host_indices.data(),
                                b.sample_indices.bytes(), cudaMemcpyHostToDevice, stream.get()));
  GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));

  // Order matters only for the inputs: read/write/copy use x's integer pattern, the triad
  // overwrites x and y with float patterns, memcpy refills x.
  for (const Measure& m : kKernels) {
    throw_if_cancelled();
    measure_kernel(ctx, sink, m, b, stream);
  }
  throw_if_cancelled();
  measure_memcpy(ctx, sink, b, stream);
}

}  // namespace gb::bench
