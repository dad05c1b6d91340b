// pipeline/gpu/device_feeder.hpp: the CPU decode path's device half. The Loader's batch slots
// live in pinned host memory (pinned_slot_allocator); each filled batch is copied to the device
// on a copy stream of its own, and the normalization kernel (gpu/normalize.hpp) turns it into
// the model's input tensor on the compute stream once the copy is done (an event, no host
// wait). A slot goes back to the Loader as soon as its copy has completed, polled without
// blocking before the next batch is taken, so the CPU workers refill it while the GPU computes.
//
//   DeviceFeeder feeder(shape, ElementType::bf16, mean, std);
//   Loader loader(dataset, options, process, DeviceFeeder::pinned_slot_allocator());
//   while (auto b = loader.next()) {
//     const void* x = feeder.submit(*b, compute);  // input tensor, ready in stream order
//     ... enqueue the step on `compute` ...
//     feeder.release_done(loader);                 // slots whose copies are done
//   }
//   feeder.release_all(loader);
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>

#include "data/loader.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/normalize.hpp"

namespace gb::pipeline {

class DeviceFeeder {
 public:
  // shape.n is the batch size; the tensors are shape.n x c x h x w (or NHWC) of type out.
  DeviceFeeder(const gpu::NormalizeShape& shape, gpu::ElementType out, const float mean[4],
               const float stddev[4]);

  // cudaHostAlloc'ed slots for the Loader (page-locked: full-speed, asynchronous DMA).
  static data::SlotAllocator pinned_slot_allocator();

  // Enqueues the H2D copy of b (its slot must come from pinned_slot_allocator) and the
  // normalization into one of two device tensors; returns that tensor. It stays valid until two
  // more batches have been submitted. The batch stays lent until release_done/release_all.
  const void* submit(const data::Batch& b, cudaStream_t compute);
  // The same, normalizing into `dst` (shape.n images of type out) and copying the labels to
  // `labels` (device, shape.n int32), both in `compute` stream order: a consumer that needs
  // fixed input pointers (a captured CUDA graph) gives the same two every step.
  void submit_into(const data::Batch& b, cudaStream_t compute, void* dst, std::int32_t* labels);
  // Gives back to the loader every submitted batch whose copy has completed (non-blocking).
  void release_done(data::Loader& loader);
  // Waits for the oldest copies until at most `held` submitted batches are still lent (a ring of
  // depth d must keep at most d - 1 before the loader can hand out the next batch).
  void release_until(data::Loader& loader, std::size_t held);
  // Waits for every copy and gives all submitted batches back.
  void release_all(data::Loader& loader) { release_until(loader, 0); }

  std::size_t tensor_bytes() const { return tensor_bytes_; }

 private:
  struct Pending {
    data::Batch batch;
    gpu::Event copied;
  };
  gpu::NormalizeShape shape_;
  gpu::ElementType out_;
  float mean_[4];
  float stddev_[4];
  std::size_t input_bytes_ = 0;
  std::size_t tensor_bytes_ = 0;
  gpu::Stream copy_stream_;
  gpu::DeviceBuffer staging_[2];
  gpu::DeviceBuffer label_staging_[2];
  gpu::DeviceBuffer tensors_[2];  // submit()'s, made on first use
  gpu::Event consumed_[2];        // normalization of the buffer's last batch finished reading it
  bool used_[2] = {false, false};
  int next_ = 0;
  // Copies b's pixels (and labels) into the next staging pair on the copy stream and makes
  // `compute` wait for them; returns the pair's index.
  int stage(const data::Batch& b, cudaStream_t compute, bool with_labels);
  std::deque<Pending> pending_;
};

}  // namespace gb::pipeline
