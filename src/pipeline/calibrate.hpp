// pipeline/calibrate.hpp: a pipeline's own rate, measured with nothing else on the GPU, and the
// CPU/GPU split's share from the rates of its two paths (what `--decode both` uses when no
// share is given): R_gpu / (R_gpu + R_cpu), so both paths are busy and neither waits.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "data/dataset.hpp"
#include "pipeline/options.hpp"

namespace gb::pipeline {

// Images/s the pipeline of `options` delivers alone: `warmup` batches, then `batches` timed
// (the GPU work of the last included). Empty with why_not when it cannot run here (see
// make_input_pipeline) or when Ctrl-C came first.
std::optional<double> measure_images_per_s(const data::Dataset& dataset,
                                           const PipelineOptions& options, std::size_t warmup,
                                           std::size_t batches, std::string& why_not);

struct BalancedShare {
  double gpu_share = 0;  // balanced_gpu_share(gpu, cpu)
  double gpu_images_per_s = 0, cpu_images_per_s = 0;
};
// The CPU path and the nvJPEG path of `options` (its workers, batch, size, ...), each measured
// alone, and the share that balances them. Empty with why_not when either cannot run here.
std::optional<BalancedShare> balanced_share(const data::Dataset& dataset,
                                            const PipelineOptions& options, std::size_t batches,
                                            std::string& why_not);

}  // namespace gb::pipeline
