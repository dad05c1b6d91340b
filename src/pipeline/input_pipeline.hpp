// pipeline/input_pipeline.hpp: the input pipeline's one consumer-facing interface: batches of a
// JPEG dataset as device tensors, whatever decodes them (DecodeMode: CPU workers, nvJPEG, or the
// two splitting the samples). What a training loop, the benchmarks and bindings (a DLPack
// tensor per batch: pointer, shape, dtype and device are all here) build on.
//
//   std::string why_not;
//   auto in = make_input_pipeline(dataset, options, why_not);
//   if (!in) report skipped: why_not;                 // no CUDA, no GPU, no libnvjpeg
//   while (auto b = in->next(stream)) {               // ready in `stream` order
//     ... enqueue work reading b->images (b->size images), b->labels on `stream` ...
//   }
//   // or, for a captured CUDA graph that reads the same pointers every step:
//   in->into(stream, images, labels);                 // fixed device buffers, tensor_bytes()
//
// The pipeline owns the loader (worker threads filling a ring of pinned batch slots, looking
// ahead across epochs), its own copy/decode stream, two output tensors for next(), and on the
// nvJPEG paths a decode thread that runs nvJPEG's host stage for the batches ahead, so the
// consumer's thread (the one launching a training step) only launches a kernel per batch. A slot goes
// back to the workers as soon as the GPU has read it (an event polled without blocking before
// each batch), so the workers refill it while the GPU computes; at most prefetch - 1 batches are
// on the GPU at once. The consumer's stream waits for each batch by an event (no host wait); the
// stream-ordered writes into the output never overtake the consumer's reads of the batch before.
//
// Epochs run on without a break: next() starts the next epoch when one ends (epoch in the batch
// says which). Ctrl-C (gb::cancel_requested()) ends it: next() returns nothing.
//
// The header is plain C++: the stream is CUDA's cudaStream_t (CUstream_st*) without its headers,
// so code that only holds a pipeline builds without CUDA too.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "pipeline/options.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace gb::pipeline {

using StreamHandle = CUstream_st*;

// One batch on the device, ready in the consumer's stream order.
struct DeviceBatch {
  const void* images = nullptr;          // shape elements of options().dtype
  const std::int32_t* labels = nullptr;  // size labels
  std::size_t size = 0;                  // images: batch, or fewer for a partial last batch
  std::array<std::int64_t, 4> shape{};   // {n, 3, s, s} (NCHW) or {n, s, s, 3} (NHWC)
  std::uint32_t epoch = 0;
  std::size_t number = 0;  // within the epoch
};

// Totals since construction or reset_stats(). GPU times cover the batches whose GPU work has
// completed (gpu_batches of them); host times are the loader's.
struct PipelineStats {
  DecodeMode decode = DecodeMode::cpu;
  unsigned workers = 0;
  std::size_t batches = 0, images = 0;    // handed to the consumer
  std::size_t gpu_decoded = 0;            // samples nvJPEG decoded
  std::size_t cpu_decoded = 0;            // samples the workers decoded
  std::size_t decode_failures = 0;        // rejected by nvJPEG: left at the mean colour
  std::size_t single_decodes = 0;         // decoded one by one (not batchable, batch failed)
  std::size_t bad_examples_left_out = 0;  // decode failures beyond the five examples kept
  std::vector<std::string> decode_failure_examples;  // "<sample>: <reason>", at most five
  data::LoaderStats loader;  // read, process stages, bad samples, consumer_wait
  std::size_t gpu_batches = 0;
  double decode_gpu_ms = 0;     // nvJPEG + the split's pixel copies (events), summed
  double decode_host_ms = 0;    // the decode thread inside nvJPEG's host stage, summed
  double resize_ms = 0;         // the resize-crop-normalize kernel (events), summed
  std::size_t arena_grows = 0;  // decoded-image arena reallocations (a larger batch than before)
  // The consumer's side: wall time from the first next() after construction or reset_stats()
  // to the return of the last, and the part of it spent inside next()/into() (waiting for the
  // workers, for a free slot, for the nvJPEG paths' decode thread).
  double wall_s = 0;
  double in_pipeline_s = 0;
  double data_wait_share() const { return wall_s > 0 ? in_pipeline_s / wall_s : 0; }
};

// What the nvJPEG paths decode with; empty strings on the CPU path.
struct DecoderInfo {
  std::string backend;       // "hardware", "gpu_hybrid", "default"; empty: the CPU path
  std::string backend_note;  // why not the hardware engines, when not
  std::string library;       // "libnvjpeg.so.13 (13.0.1)"
  std::string memory;        // nvJPEG's own buffers: "driver" or "pooled" (GPUBASE_NVJPEG_MEMORY)
  std::string flags;         // nvjpegCreateEx's: "no_pipeline", "none", ... (GPUBASE_NVJPEG_FLAGS)
};

// The check of a GPU-decoded batch against the CPU path (check_last_batch).
struct DecodeCheck {
  double psnr_db = 0;           // over the nvJPEG-decoded images compared
  std::size_t images = 0;       // nvJPEG-decoded images compared
  std::size_t cpu_decoded = 0;  // split: CPU-decoded images found unchanged in the tensor
};

class InputPipeline {
 public:
  virtual ~InputPipeline() = default;
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next batch in `stream` order, in one of two tensors the pipeline owns: valid for work
  // enqueued on `stream` until two more batches have been taken. Empty after Ctrl-C. Throws
  // gb::Error (usage) for a bad sample under strict, naming it.
  virtual std::optional<DeviceBatch> next(StreamHandle stream) = 0;
  // The same into the caller's fixed buffers (device, tensor_bytes() and batch int32 labels),
  // written in `stream` order: a captured CUDA graph reads the same pointers every step.
  virtual std::optional<DeviceBatch> into(StreamHandle stream, void* images,
                                          std::int32_t* labels) = 0;
  // Waits for the GPU work of every batch taken and gives all slots back.
  virtual void drain() = 0;
  virtual PipelineStats stats() const = 0;
  virtual void reset_stats() = 0;
  // The GPU paths: the first `count` images of the batch just taken, rendered again as fp32 and
  // compared with the CPU path for the same crop and flip (libjpeg decode of the crop region +
  // data::resize_crop_flip), as PSNR over uint8 levels; CPU-decoded split samples must arrive
  // unchanged. Throws gb::Error (runtime) naming the sample when one disagrees (PSNR < 30 dB, or
  // a CPU sample changed by more than 0.01 levels). Empty on the CPU path (it is the reference).
  virtual std::optional<DecodeCheck> check_last_batch(std::size_t count) = 0;
  virtual DecoderInfo decoder() const = 0;

  const PipelineOptions& options() const { return options_; }
  unsigned workers() const { return workers_; }
  std::size_t tensor_bytes() const { return pipeline::tensor_bytes(options_, options_.batch); }
  // "cpu decode, 15 workers, prefetch 4" / "nvJPEG (hardware backend), 4 reader threads, ..."
  std::string describe() const;

 protected:
  InputPipeline(const PipelineOptions& options, unsigned workers)
      : options_(options), workers_(workers) {}
  DeviceBatch device_batch(const data::Batch& b, const void* images,
                           const std::int32_t* labels) const;

 private:
  PipelineOptions options_;
  unsigned workers_;
};

// The pipeline options.decode asks for on `dataset` (which must outlive it), on
// options.device. nullptr with why_not set when it cannot run here: built without CUDA, no GPU,
// no libnvjpeg (gpu, both). Throws gb::Error (usage) for bad options (validate()) and for a
// dataset without JPEG samples or without samples; gb::Error (runtime) when nvJPEG refuses a
// backend asked for explicitly.
std::unique_ptr<InputPipeline> make_input_pipeline(const data::Dataset& dataset,
                                                   const PipelineOptions& options,
                                                   std::string& why_not);

// The dataset checks make_input_pipeline() makes: JPEG samples, at least one (gb::Error usage).
void check_jpeg_dataset(const data::Dataset& dataset);

}  // namespace gb::pipeline
