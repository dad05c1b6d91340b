// pipeline/gpu/device_feeder.cpp: pinned slots, H2D on a copy stream, normalization on the compute
// stream, slot release on copy completion.
#include "pipeline/gpu/device_feeder.hpp"

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace gb::pipeline {

DeviceFeeder::DeviceFeeder(const gpu::NormalizeShape& shape, gpu::ElementType out,
                           const float mean[4], const float stddev[4])
    : shape_(shape), out_(out), copy_stream_(gpu::Stream::create()) {
  if (out != gpu::ElementType::f32 && out != gpu::ElementType::f16 && out != gpu::ElementType::bf16)
    throw Error(ErrorKind::usage, "the input tensor must be fp32, fp16 or bf16");
  for (int c = 0; c < 4; ++c) {
    mean_[c] = mean[c];
    stddev_[c] = stddev[c];
  }
  const std::size_t elements =
      std::size_t(shape.n) * std::size_t(shape.h) * std::size_t(shape.w) * std::size_t(shape.c);
  input_bytes_ = elements;
  tensor_bytes_ = elements * gpu::element_bytes(out);
  for (int i = 0; i < 2; ++i) {
    staging_[i] = gpu::DeviceBuffer(input_bytes_);
    label_staging_[i] = gpu::DeviceBuffer(std::size_t(shape.n) * sizeof(std::int32_t));
    consumed_[i] = gpu::Event::create(cudaEventDisableTiming);
  }
}

data::SlotAllocator DeviceFeeder::pinned_slot_allocator() {
  data::SlotAllocator a;
  a.allocate = [](std::size_t bytes) {
    void* p = nullptr;
    GB_CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    return p;
  };
  a.deallocate = [](void* p, std::size_t) { GB_CHECK_CUDA_NOTHROW(cudaFreeHost(p)); };
  return a;
}

int DeviceFeeder::stage(const data::Batch& b, cudaStream_t compute, bool with_labels) {
  const int i = next_;
  next_ = 1 - next_;
  // The copy into staging_[i] must not overwrite what the previous normalization from it has
  // not read yet.
  if (used_[i]) GB_CHECK_CUDA(cudaStreamWaitEvent(copy_stream_.get(), consumed_[i].get(), 0));
  used_[i] = true;
  const std::size_t bytes = std::min(b.data.size(), input_bytes_);
  GB_CHECK_CUDA(cudaMemcpyAsync(staging_[i].data(), b.data.data(), bytes, cudaMemcpyHostToDevice,
                                copy_stream_.get()));
  if (with_labels) {
    // The labels follow the pixels in the pinned slot, which stays lent until `copied`.
    GB_CHECK_CUDA(cudaMemcpyAsync(label_staging_[i].data(), b.labels.data(),
                                  b.labels.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                  copy_stream_.get()));
  }
  // A blocking-sync event: the host's wait for it (release_until) sleeps instead of spinning.
  // When training is GPU-bound that wait takes most of each step, and a spinning wait kept the
  // thread that launches the steps busy on a core the loader workers need.
  Pending p{b, gpu::Event::create(cudaEventDisableTiming | cudaEventBlockingSync)};
  p.copied.record(copy_stream_.get());
  // The compute stream goes on once the copy is done (a partial last batch: fewer images).
  GB_CHECK_CUDA(cudaStreamWaitEvent(compute, p.copied.get(), 0));
  pending_.push_back(std::move(p));
  return i;
}

const void* DeviceFeeder::submit(const data::Batch& b, cudaStream_t compute) {
  // The two tensors of submit() are made on its first use (submit_into needs none).
  if (!tensors_[0].data())
    for (auto& t : tensors_) t = gpu::DeviceBuffer(tensor_bytes_);
  const int i = stage(b, compute, false);
  gpu::NormalizeShape s = shape_;
  s.n = static_cast<int>(b.size);
  gpu::normalize_batch(staging_[i].as<std::uint8_t>(), s, out_, mean_, stddev_, tensors_[i].data(),
                       compute);
  consumed_[i].record(compute);
  return tensors_[i].data();
}

void DeviceFeeder::submit_into(const data::Batch& b, cudaStream_t compute, void* dst,
                               std::int32_t* labels) {
  const int i = stage(b, compute, true);
  gpu::NormalizeShape s = shape_;
  s.n = static_cast<int>(b.size);
  gpu::normalize_batch(staging_[i].as<std::uint8_t>(), s, out_, mean_, stddev_, dst, compute);
  GB_CHECK_CUDA(cudaMemcpyAsync(labels, label_staging_[i].data(),
                                b.labels.size() * sizeof(std::int32_t), cudaMemcpyDeviceToDevice,
                                compute));
  consumed_[i].record(compute);
}

void DeviceFeeder::release_done(data::Loader& loader) {
  while (!pending_.empty()) {
    const cudaError_t rc = cudaEventQuery(pending_.front().copied.get());
    if (rc == cudaErrorNotReady) return;
    GB_CHECK_CUDA(rc);
    loader.release(pending_.front().batch);
    pending_.pop_front();
  }
}

void DeviceFeeder::release_until(data::Loader& loader, std::size_t held) {
  while (pending_.size() > held) {
    pending_.front().copied.synchronize();
    loader.release(pending_.front().batch);
    pending_.pop_front();
  }
}

}  // namespace gb::pipeline
