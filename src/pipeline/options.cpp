// pipeline/options.cpp: parsing and validation of the pipeline options; see options.hpp.
#include "pipeline/options.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "sys/host_membw.hpp"

namespace gb::pipeline {

std::optional<DecodeMode> parse_decode_mode(std::string_view text) {
  if (text == "cpu") return DecodeMode::cpu;
  if (text == "gpu") return DecodeMode::gpu;
  if (text == "both") return DecodeMode::both;
  return std::nullopt;
}

std::string_view to_string(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::cpu:
      return "cpu";
    case DecodeMode::gpu:
      return "gpu";
    case DecodeMode::both:
      return "both";
  }
  return "cpu";
}

DecodeMode decode_mode_from(std::string_view text, std::string_view option) {
  if (const auto mode = parse_decode_mode(text)) return *mode;
  throw Error(ErrorKind::usage,
              std::string(option) + ": '" + std::string(text) + "' is not cpu, gpu or both");
}

void validate(const PipelineOptions& o) {
  if (o.batch == 0) throw Error(ErrorKind::usage, "--batch: give 1 or more images per batch");
  if (o.image_size <= 0 || o.image_size > 8192)
    throw Error(ErrorKind::usage, "--size " + std::to_string(o.image_size) +
                                      ": give an image side of 1 .. 8192 pixels");
  if (o.prefetch == 0) throw Error(ErrorKind::usage, "--prefetch: give 1 or more batch slots");
  if (o.decode == DecodeMode::both) {
    if (!o.gpu_share)
      throw Error(ErrorKind::usage,
                  "--decode both: give --gpu-share, the share of the samples "
                  "nvJPEG decodes, in (0, 1]");
    if (!(*o.gpu_share > 0 && *o.gpu_share <= 1))
      throw Error(ErrorKind::usage,
                  "--gpu-share: give the share of samples nvJPEG decodes, in "
                  "(0, 1]");
  } else if (o.gpu_share) {
    throw Error(ErrorKind::usage, "--gpu-share sets the CPU/GPU split: it needs --decode both");
  }
  static constexpr std::string_view kBackends[] = {"auto", "hardware", "gpu_hybrid", "default"};
  if (std::find(std::begin(kBackends), std::end(kBackends), o.nvjpeg_backend) ==
      std::end(kBackends)) {
    throw Error(ErrorKind::usage, "--nvjpeg-backend: '" + o.nvjpeg_backend +
                                      "' is not one of auto, hardware, gpu_hybrid, default");
  }
  if (o.max_jpeg_bytes == 0) throw Error(ErrorKind::usage, "--gpu-max-jpeg-kb: give 1 KiB or more");
  if (o.device < 0)
    throw Error(ErrorKind::usage, "--device " + std::to_string(o.device) + ": not a device index");
  for (int c = 0; c < 3; ++c)
    if (!(o.norm.stddev[c] > 0) || !std::isfinite(o.norm.mean[c]))
      throw Error(ErrorKind::usage,
                  "normalization: every channel needs a finite mean and a "
                  "positive standard deviation");
}

unsigned default_workers(DecodeMode mode, unsigned usable_cores) {
  const unsigned cores = std::max(usable_cores, 1u);
  if (mode == DecodeMode::gpu) return std::min(4u, cores);
  return cores > 1 ? cores - 1 : 1;
}

unsigned resolved_workers(const PipelineOptions& o) {
  if (o.workers > 0) return o.workers;
  const std::size_t cores = sys::allowed_cpus().size();
  return default_workers(o.decode, static_cast<unsigned>(std::max<std::size_t>(cores, 1)));
}

data::LoaderOptions cpu_loader_options(const PipelineOptions& o, unsigned workers) {
  data::LoaderOptions lo;
  lo.sampling.batch_size = o.batch;
  lo.sampling.seed = o.seed;
  lo.sampling.drop_last = o.drop_last;
  lo.sampling.shuffle = o.shuffle;
  lo.sampling.rank = o.rank;
  lo.sampling.world_size = o.world_size;
  lo.sample_bytes = static_cast<std::size_t>(o.image_size) * o.image_size * 3;
  lo.workers = workers;
  lo.prefetch_depth = o.prefetch;
  lo.strict = o.strict;
  return lo;
}

std::size_t tensor_bytes(const PipelineOptions& o, std::size_t images) {
  return images * static_cast<std::size_t>(o.image_size) * o.image_size * 3 *
         element_bytes(o.dtype);
}

}  // namespace gb::pipeline
