// pipeline/gpu/nvjpeg_batch.hpp: the nvJPEG decode path's two halves (DecodeMode gpu and both).
//
//   reader threads (data::Loader workers)    consumer thread                        GPU
//   read file, header parse (CPU),           nvjpegDecodeBatched (host stage),      own stream:
//   crop + flip draw (data/augment.hpp,      the split's CPU pixels H2D into the    NVJPG engines /
//   same Philox stream as the CPU path),     same arena, items H2D              ->  CUDA decode
//   copy the JPEG into a pinned slot         resize_crop_normalize kernel       ->  consumer's
//   stream
//
// A sample's place in a pinned batch slot holds a SlotRecord (pipeline/process.hpp) followed by
// its JPEG bytes (or, in the split, the pixels a worker decoded), so a slot is max_jpeg_bytes +
// 64 bytes per sample; a larger file is a bad sample (counted, with the reason). Decoded images
// are packed into a device arena per batch (each w x h x 3 bytes, 256-byte aligned), two arenas
// used in turn so the decode of batch k + 1 overlaps the consumer's work on batch k; an arena
// grows when a batch needs more (a wait for its last reader and a new allocation, counted).
//
// Napkin math at 15,000 images/s, ImageNet-like 500x375 JPEGs of ~110 KB: H2D of the JPEG bytes
// 1.65 GB/s (3 % of PCIe Gen5 x16); decoded pixels 562 KB x 15,000/s = 8.4 GB/s written + read
// by the kernel (< 0.5 % of HBM); the kernel ~0.1 ms per batch of 256 (gpu/resize_crop.hpp);
// host work per image ~35 us (read from the page cache, header parse, copy), so ~30,000
// images/s per reader thread before the consumer's nvJPEG host stage. The decode itself is the
// bound (bench/NOTES.md "d3").
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nvjpeg.hpp"
#include "gpu/resize_crop.hpp"
#include "pipeline/input_pipeline.hpp"
#include "pipeline/options.hpp"

namespace gb::pipeline {

// The reader threads' per-sample work: the header read on the CPU (pipeline/nvjpeg_header.hpp:
// the readers never call nvJPEG, so they never contend with the consumer's decode), the CPU
// path's crop and flip draws in its order, the JPEG copied into the slot behind its record.
// Stages "header" and "copy". Only the decoder's backend is read, when the function is made.
data::ProcessFn nvjpeg_reader_process(const gpu::NvjpegDecoder& decoder,
                                      std::size_t max_jpeg_bytes);

// Bytes per sample of a GPU-path slot: the record and the largest JPEG (and, for both, at least
// the CPU-decoded pixels), rounded up to 64.
std::size_t nvjpeg_sample_bytes(const PipelineOptions& options);

// The consumer's device side: decodes a batch slot's JPEGs into an arena on its own stream and
// runs the resize kernel on the consumer's stream into the tensor.
class NvjpegBatchStage {
 public:
  NvjpegBatchStage(gpu::NvjpegDecoder& decoder, const PipelineOptions& options,
                   std::size_t sample_bytes);

  struct Submitted {
    data::Batch batch;
    gpu::Event begin, decoded;    // on the stage's stream: the slot is read once `decoded`
    gpu::Event resize, done;      // on the consumer's stream, around the kernel
    double decode_host_s = 0;     // the calling thread inside nvJPEG
    std::size_t failures = 0;     // positions nvJPEG rejected (left at the mean colour)
    std::size_t gpu_decoded = 0;  // positions nvJPEG decoded (the rest: a worker, on the CPU)
    std::size_t single_decodes = 0;
  };

  // Enqueues batch b's decode and, on `compute` once it is done, the kernel into `dst` (b.size
  // images of options.dtype) and the labels into `labels`. Samples a worker already decoded
  // (the split) are copied into the arena as they are and go through the same kernel with the
  // whole image as the crop: at scale 1 its filter has one tap of weight 1, so their pixels
  // reach the tensor unchanged. The batch must stay lent until `decoded`.
  Submitted submit(const data::Batch& b, cudaStream_t compute, void* dst, std::int32_t* labels);

  // Per position of the last submitted batch: nvJPEG's verdict (ok for CPU-decoded samples).
  const gpu::NvjpegDecoder::DecodeStatus& status() const { return status_; }
  std::size_t arena_grows() const { return arena_grows_; }
  cudaStream_t stream() const { return stream_.get(); }

  // check_last_batch() of InputPipeline for the last submitted batch `b` (still lent).
  DecodeCheck check(const data::Batch& b, std::size_t count, const data::Dataset& dataset);

 private:
  std::vector<float> last_as_f32(std::size_t count);
  void lay_out(const data::Batch& b, int a);
  void enqueue_decode(const data::Batch& b, int a, Submitted& s);
  void fill_items(const data::Batch& b, int a, Submitted& s);

  gpu::NvjpegDecoder& decoder_;
  PipelineOptions options_;
  std::size_t sample_bytes_;
  gpu::Stream stream_;
  gpu::NormalizeShape shape_;
  gpu::ElementType out_;
  float mean_[4] = {0, 0, 0, 0};
  float stddev_[4] = {1, 1, 1, 1};
  // Two of each, used in turn; consumed_[a] is recorded on the consumer's stream once the kernel
  // and the label copy have read arena a, its items and labels.
  gpu::DeviceBuffer arena_[2], items_device_[2], labels_[2];
  gpu::Event consumed_[2];
  bool used_[2] = {false, false};
  int next_ = 0, last_ = 0;
  std::size_t arena_grows_ = 0;
  std::vector<std::size_t> offsets_;
  std::vector<gpu::NvjpegDecoder::Image> images_;
  std::vector<gpu::ResizeCropItem> items_;
  std::vector<std::size_t> to_gpu_;              // batch position of each of images_
  gpu::NvjpegDecoder::DecodeStatus gpu_status_;  // per image of images_
  gpu::NvjpegDecoder::DecodeStatus status_;      // per batch position
};

}  // namespace gb::pipeline
