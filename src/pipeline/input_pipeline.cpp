// pipeline/input_pipeline.cpp: the interface's plain-C++ parts (description, the batch's shape,
// the dataset checks) and, in a build without CUDA, the factory that says why nothing can run.
// The implementations are pipeline/gpu/*.cpp.
#include "pipeline/input_pipeline.hpp"

#include "core/error.hpp"

namespace gb::pipeline {

std::string InputPipeline::describe() const {
  const std::string slots = ", prefetch " + std::to_string(options_.prefetch);
  const std::string threads = std::to_string(workers_);
  if (options_.decode == DecodeMode::cpu)
    return "CPU decode, " + threads + (workers_ == 1 ? " worker" : " workers") + slots;
  const DecoderInfo d = decoder();
  const std::string nvjpeg = "nvJPEG (" + d.backend + " backend)";
  if (options_.decode == DecodeMode::gpu)
    return nvjpeg + ", " + threads + (workers_ == 1 ? " reader thread" : " reader threads") + slots;
  const double share = options_.gpu_share.value_or(1);
  return "CPU/GPU split, " + std::to_string(static_cast<int>(100 * share + 0.5)) + " % to " +
         nvjpeg + ", " + threads + (workers_ == 1 ? " worker" : " workers") + slots;
}

DeviceBatch InputPipeline::device_batch(const data::Batch& b, const void* images,
                                        const std::int32_t* labels) const {
  DeviceBatch out;
  out.images = images;
  out.labels = labels;
  out.size = b.size;
  out.epoch = b.epoch;
  out.number = b.number;
  const std::int64_t n = static_cast<std::int64_t>(b.size), s = options_.image_size;
  out.shape = options_.layout == data::TensorLayout::nchw ? std::array<std::int64_t, 4>{n, 3, s, s}
                                                          : std::array<std::int64_t, 4>{n, s, s, 3};
  return out;
}

void check_jpeg_dataset(const data::Dataset& dataset) {
  if (dataset.format() != data::SampleFormat::jpeg) {
    throw Error(ErrorKind::usage, "the input pipeline needs JPEG samples: " + dataset.source() +
                                      " (" + std::string(dataset.kind()) + ") holds " +
                                      std::string(data::to_string(dataset.format())) + " samples");
  }
  if (dataset.size() == 0) throw Error(ErrorKind::usage, dataset.source() + ": no samples to load");
}

#ifndef GPUBASE_WITH_CUDA
std::unique_ptr<InputPipeline> make_input_pipeline(const data::Dataset& dataset,
                                                   const PipelineOptions& options,
                                                   std::string& why_not) {
  validate(options);
  check_jpeg_dataset(dataset);
  why_not = "built without CUDA: the input pipeline feeds a GPU";
  return nullptr;
}
#endif

}  // namespace gb::pipeline
