// pipeline/options.hpp: what an input pipeline is asked to produce and how: the batch (size,
// image side, layout and element type of the device tensor, normalization), the decode mode
// (CPU workers, nvJPEG on the GPU, or the two splitting the samples), the host side (worker
// threads, batch slots in the ring, seed, strict) and the nvJPEG knobs. Plain C++: parsing and
// validation are usable (and tested) in a build without CUDA.
//
//   PipelineOptions o;
//   o.decode = decode_mode_from("both", "--decode");   // gb::Error (usage) for anything else
//   o.gpu_share = 0.7;
//   validate(o);                                        // gb::Error (usage) naming the option
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/loader.hpp"
#include "data/normalize.hpp"

namespace gb::pipeline {

// cpu: the loader's workers decode (libjpeg-turbo), crop, resize and flip into uint8 pixels;
// the GPU copies and normalizes them. gpu: the workers read files and parse headers, nvJPEG
// decodes whole batches, one kernel crops, resizes, flips and normalizes. both: per sample
// (split_to_gpu), a share of the samples goes the GPU way and the rest the CPU way, in the same
// batches.
enum class DecodeMode { cpu, gpu, both };
std::optional<DecodeMode> parse_decode_mode(std::string_view text);  // "cpu", "gpu", "both"
std::string_view to_string(DecodeMode mode);
// parse_decode_mode, or gb::Error (usage): "<option>: 'x' is not cpu, gpu or both".
DecodeMode decode_mode_from(std::string_view text, std::string_view option);

struct PipelineOptions {
  std::size_t batch = 256;
  int image_size = 224;  // the tensor's images are image_size x image_size x 3
  data::TensorLayout layout = data::TensorLayout::nchw;
  ElementType dtype = ElementType::bf16;
  data::Normalization norm = data::imagenet_normalization();  // per channel, pixel units
  DecodeMode decode = DecodeMode::cpu;
  // both: the share of samples nvJPEG decodes, in (0, 1]. Required for both (the caller picks
  // it: given, or balanced_gpu_share() of two measured rates); not allowed for cpu and gpu.
  std::optional<double> gpu_share;
  unsigned workers = 0;      // loader threads; 0: default_workers(decode, usable cores)
  std::size_t prefetch = 4;  // batch slots in the pinned ring (the GPU paths use at least 4)
  std::uint64_t seed = 0;    // shuffle, crop and flip draws
  bool strict = false;       // a bad sample is an error naming it, not a substitute
  bool drop_last = false;    // every batch full (fixed shapes for a captured CUDA graph)
  bool shuffle = true;       // a new order each epoch (data/sampler.hpp)
  std::uint32_t rank = 0, world_size = 1;  // this process's shard of each epoch
  std::uint32_t first_epoch = 0;           // the epoch the pipeline starts at (resuming a run)
  int device = 0;            // CUDA device index
  // nvJPEG (gpu, both): "auto", "hardware", "gpu_hybrid", "default"; the largest JPEG a
  // sample slot holds (larger files are bad samples, counted with the reason).
  std::string nvjpeg_backend = "auto";
  std::size_t max_jpeg_bytes = std::size_t{1} << 20;
};

// Throws gb::Error (usage) naming what is wrong: batch or image size not positive, prefetch 0,
// gpu_share missing for both, outside (0, 1] or given for another mode, an unknown nvJPEG
// backend, max_jpeg_bytes 0, a negative device.
void validate(const PipelineOptions& options);

// Worker threads when none are asked for: cpu and both, the usable cores but one (the
// consumer's: H2D copies, nvJPEG's host stage); gpu, min(4, cores) reader threads. At least 1.
unsigned default_workers(DecodeMode mode, unsigned usable_cores);
// options.workers, or default_workers() for the cores this process may run on.
unsigned resolved_workers(const PipelineOptions& options);

// The data::Loader options of a CPU-path pipeline with `workers` threads: batch, seed,
// shuffle, sharding, drop_last, prefetch, strict, and image_size^2 x 3 bytes of HWC pixels per sample.
data::LoaderOptions cpu_loader_options(const PipelineOptions& options, unsigned workers);

// Bytes of one batch tensor of `images` images (n x 3 x size x size elements of dtype).
std::size_t tensor_bytes(const PipelineOptions& options, std::size_t images);

}  // namespace gb::pipeline
