// pipeline/process.hpp: the host side of the input pipeline: the per-sample work of the CPU
// decode path (JPEG decode of the crop region + RandomResizedCrop + flip into the batch slot,
// HWC uint8), the record that leads a sample's place in a GPU-path slot, and taking batches
// across epochs. Plain C++ (no CUDA).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "data/augment.hpp"
#include "data/loader.hpp"

namespace gb::pipeline {

// The per-sample work of the CPU path: one JpegDecoder and scratch per worker
// (SampleView::worker), decode + RandomResizedCrop + flip into dst (image_size^2 x 3 bytes,
// HWC), stage times "decode" and "augment". A JPEG the decoder rejects is SampleResult::bad (the
// loader substitutes it).
data::ProcessFn jpeg_train_process(unsigned workers, int image_size);

// The next batch, starting the next epoch when one ends (epoch counts them); empty after Ctrl-C.
// Batches still held (on the GPU, until their copies finish) carry over into the new epoch, and
// the loader's look-ahead has the new epoch's first batches ready.
std::optional<data::Batch> next_batch(data::Loader& loader, std::uint32_t& epoch);

// Leading each sample's place in a GPU-path slot (kSlotRecordBytes); the JPEG bytes (or, for a
// sample a worker decoded in the CPU/GPU split, its image_size^2 x 3 HWC pixels) follow.
struct SlotRecord {
  std::uint32_t jpeg_bytes = 0;
  std::int32_t width = 0, height = 0;
  data::CropBox box;
  std::uint8_t flip = 0;
  std::uint8_t batched_supported = 1;
  // 1 when a worker already decoded, cropped, resized and flipped the sample on the CPU;
  // width = height = image_size, pixels instead of JPEG bytes.
  std::uint8_t decoded = 0;
};
inline constexpr std::size_t kSlotRecordBytes = 64;
static_assert(sizeof(SlotRecord) <= kSlotRecordBytes);

// The record of sample j of a slot whose samples are `sample_bytes` apart, and its payload.
const SlotRecord& slot_record(const data::Batch& b, std::size_t j, std::size_t sample_bytes);
const std::uint8_t* slot_payload(const data::Batch& b, std::size_t j, std::size_t sample_bytes);

}  // namespace gb::pipeline
