// pipeline/gpu/nvjpeg_batch.hpp: the nvJPEG decode path's two halves (DecodeMode gpu and both).
//
//   reader threads (data::Loader workers)   decode thread (the pipeline's)        GPU
//   read file, header parse (CPU),          nvjpegDecodeBatched (host stage),     own stream:
//   crop + flip draw (data/augment.hpp,     the split's CPU pixels H2D into the   NVJPG engines /
//   same Philox stream as the CPU path),    same arena, items H2D             ->  CUDA decode
//   copy the JPEG into a pinned slot        consumer thread: the kernel       ->  consumer's
//                                                                                 stream
//
// A sample's place in a pinned batch slot holds a SlotRecord (pipeline/process.hpp) followed by
// its JPEG bytes (or, in the split, the pixels a worker decoded), so a slot is max_jpeg_bytes +
// 64 bytes per sample; a larger file is a bad sample (counted, with the reason). Decoded images
// are packed into a device arena per batch (each w x h x 3 bytes, 256-byte aligned), three arenas
// used in turn (kArenas) so the decode of the batches ahead overlaps the consumer's work on the
// one it took; an arena grows when a batch needs more (a wait for its last reader and a new
// allocation, counted). nvJPEG's host stage (~45 us an image, bench/NOTES.md b10) runs on the
// decode thread, never on the thread that launches the consumer's work: on that thread it added
// itself to every training step.
//
// Napkin math at 15,000 images/s, ImageNet-like 500x375 JPEGs of ~110 KB: H2D of the JPEG bytes
// 1.65 GB/s (3 % of PCIe Gen5 x16); decoded pixels 562 KB x 15,000/s = 8.4 GB/s written + read
// by the kernel (< 0.5 % of HBM); the kernel ~0.1 ms per batch of 256 (gpu/resize_crop.hpp);
// host work per image ~35 us (read from the page cache, header parse, copy), so ~30,000
// images/s per reader thread before the decode thread's nvJPEG host stage. The decode itself is
// the bound (bench/NOTES.md "d3").
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
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

// The device side, in two halves: decode() on the pipeline's decode thread puts a batch slot's
// JPEGs into an arena on the stage's own stream; finish() on the consumer's thread runs the
// resize kernel from that arena on the consumer's stream into the tensor. An arena is the
// decode thread's again once the consumer hands it back (give_back(): the batch after it was
// taken); decode() then waits for the kernel that read it before writing it.
class NvjpegBatchStage {
 public:
  static constexpr int kArenas = gpu::NvjpegDecoder::kBatchedStates;  // one nvJPEG state each

  NvjpegBatchStage(gpu::NvjpegDecoder& decoder, const PipelineOptions& options,
                   std::size_t sample_bytes);

  struct Decoded {
    data::Batch batch;
    int arena = 0;
    gpu::Event begin, decoded;    // on the stage's stream: the slot is read once `decoded`
    gpu::Event resize, done;      // on the consumer's stream, around the kernel (finish())
    double decode_host_s = 0;     // the decode thread inside nvJPEG
    std::size_t failures = 0;     // positions nvJPEG rejected (left at the mean colour)
    std::size_t gpu_decoded = 0;  // positions nvJPEG decoded (the rest: a worker, on the CPU)
    std::size_t single_decodes = 0;
    std::vector<std::uint8_t> ok;     // per position: nvJPEG's verdict (1 for CPU-decoded ones)
    std::vector<std::string> reason;  // per position, when !ok
  };

  // The decode thread: enqueues batch b's decode into `arena` (the decode thread's: never handed
  // out, or given back) on the stage's stream. Samples a worker already decoded (the split) are
  // copied into the arena as they are and go through the same kernel with the whole image as
  // the crop: at scale 1 its filter has one tap of weight 1, so their pixels reach the tensor
  // unchanged. The batch must stay lent until `decoded`.
  Decoded decode(const data::Batch& b, int arena);
  // The consumer's thread: on `compute` once d is decoded, the kernel into `dst` (d.batch.size
  // images of options.dtype) and the labels into `labels`.
  void finish(Decoded& d, cudaStream_t compute, void* dst, std::int32_t* labels);

  std::size_t arena_grows() const { return arena_grows_.load(); }
  cudaStream_t stream() const { return stream_.get(); }

  // check_last_batch() of InputPipeline for a finished batch whose slot is still lent and whose
  // arena is not given back.
  DecodeCheck check(const Decoded& d, std::size_t count, const data::Dataset& dataset);

 private:
  std::vector<float> as_f32(int arena, std::size_t count);
  void lay_out(const data::Batch& b, int a);
  void enqueue_decode(const data::Batch& b, int a, Decoded& d);
  void fill_items(const data::Batch& b, int a, Decoded& d);

  gpu::NvjpegDecoder& decoder_;
  PipelineOptions options_;
  std::size_t sample_bytes_;
  gpu::Stream stream_;  // high priority: the decode ahead is not queued behind a step's kernels
  gpu::NormalizeShape shape_;
  gpu::ElementType out_;
  float mean_[4] = {0, 0, 0, 0};
  float stddev_[4] = {1, 1, 1, 1};
  // Per arena; consumed_[a] is recorded on the consumer's stream once the kernel and the label
  // copy have read arena a, its items and labels.
  gpu::DeviceBuffer arena_[kArenas], items_device_[kArenas], labels_[kArenas];
  gpu::Event consumed_[kArenas];
  bool used_[kArenas] = {};
  std::atomic<std::size_t> arena_grows_{0};
  // The decode thread's scratch.
  std::vector<std::size_t> offsets_;
  std::vector<gpu::NvjpegDecoder::Image> images_;
  std::vector<gpu::ResizeCropItem> items_;
  std::vector<std::size_t> to_gpu_;              // batch position of each of images_
  gpu::NvjpegDecoder::DecodeStatus gpu_status_;  // per image of images_
};

}  // namespace gb::pipeline
