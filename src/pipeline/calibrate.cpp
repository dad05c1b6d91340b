// pipeline/calibrate.cpp: a pipeline's rate alone and the split's balanced share; see
// calibrate.hpp.
#include "pipeline/calibrate.hpp"

#include <chrono>

#include "pipeline/input_pipeline.hpp"
#include "pipeline/split.hpp"

namespace gb::pipeline {

std::optional<double> measure_images_per_s(const data::Dataset& dataset,
                                           const PipelineOptions& options, std::size_t warmup,
                                           std::size_t batches, std::string& why_not) {
  const auto in = make_input_pipeline(dataset, options, why_not);
  if (!in) return std::nullopt;
  // The legacy default stream as the consumer's: nothing else runs on it here.
  const StreamHandle stream = nullptr;
  for (std::size_t k = 0; k < warmup; ++k)
    if (!in->next(stream)) return std::nullopt;
  in->drain();
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t images = 0;
  for (std::size_t k = 0; k < batches; ++k) {
    const auto b = in->next(stream);
    if (!b) return std::nullopt;
    images += b->size;
  }
  in->drain();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!(s > 0) || images == 0) {
    why_not = "no batch was timed";
    return std::nullopt;
  }
  return static_cast<double>(images) / s;
}

std::optional<BalancedShare> balanced_share(const data::Dataset& dataset,
                                            const PipelineOptions& options, std::size_t batches,
                                            std::string& why_not) {
  PipelineOptions o = options;
  o.gpu_share.reset();
  o.decode = DecodeMode::cpu;
  const auto cpu = measure_images_per_s(dataset, o, 1, batches, why_not);
  if (!cpu) return std::nullopt;
  o.decode = DecodeMode::gpu;
  const auto gpu = measure_images_per_s(dataset, o, 2, batches, why_not);
  if (!gpu) return std::nullopt;
  return BalancedShare{balanced_gpu_share(*gpu, *cpu), *gpu, *cpu};
}

}  // namespace gb::pipeline
