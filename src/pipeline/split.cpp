// pipeline/split.cpp: the CPU/GPU split's rule, share and per-sample work; see split.hpp.
#include "pipeline/split.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "pipeline/process.hpp"

namespace gb::pipeline {

bool split_to_gpu(std::size_t index, double gpu_share) {
  if (gpu_share <= 0) return false;
  if (gpu_share >= 1) return true;
  // Fractional part of index * (golden ratio - 1), exactly: 2^64 / phi as a fixed-point step.
  constexpr std::uint64_t kStep = 0x9E3779B97F4A7C15ull;
  const std::uint64_t frac = static_cast<std::uint64_t>(index) * kStep;
  return static_cast<double>(frac >> 11) * 0x1.0p-53 < gpu_share;
}

double balanced_gpu_share(double gpu_images_per_s, double cpu_images_per_s) {
  if (!(gpu_images_per_s > 0)) return 0.05;
  if (!(cpu_images_per_s > 0)) return 1;
  return std::clamp(gpu_images_per_s / (gpu_images_per_s + cpu_images_per_s), 0.05, 1.0);
}

data::ProcessFn split_process(data::ProcessFn to_gpu, data::ProcessFn on_cpu, int image_size,
                              double gpu_share) {
  const std::size_t pixels = static_cast<std::size_t>(image_size) * image_size * 3;
  return [to_gpu = std::move(to_gpu), on_cpu = std::move(on_cpu), pixels, image_size, gpu_share](
             const data::SampleView& sample, data::Philox& rng, std::span<std::uint8_t> dst) {
    if (split_to_gpu(sample.index, gpu_share)) return to_gpu(sample, rng, dst);
    data::SampleResult r = on_cpu(sample, rng, dst.subspan(kSlotRecordBytes, pixels));
    if (!r.ok) return r;
    SlotRecord rec;
    rec.decoded = 1;
    rec.width = rec.height = image_size;
    std::memcpy(dst.data(), &rec, sizeof rec);
    r.stage_s[2] = r.stage_s[0];  // decode, augment after the reader's header, copy
    r.stage_s[3] = r.stage_s[1];
    r.stage_s[0] = r.stage_s[1] = 0;
    return r;
  };
}

}  // namespace gb::pipeline
