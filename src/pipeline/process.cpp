// pipeline/process.cpp: the CPU path's per-sample work, batches across epochs, slot records;
// see process.hpp.
#include "pipeline/process.hpp"

#include <memory>
#include <vector>

#include "core/cancel.hpp"
#include "data/decode.hpp"

namespace gb::pipeline {

namespace {
struct JpegWorker {
  data::JpegDecoder decoder;
  data::DecodeScratch scratch;
};
}  // namespace

data::ProcessFn jpeg_train_process(unsigned workers, int image_size) {
  auto states = std::make_shared<std::vector<JpegWorker>>(workers);
  data::AugmentOptions augment;
  augment.out_w = image_size;
  augment.out_h = image_size;
  augment.layout = data::PixelLayout::hwc;
  return [states, augment](const data::SampleView& sample, data::Philox& rng,
                           std::span<std::uint8_t> dst) {
    JpegWorker& w = (*states)[sample.worker];
    try {
      const data::DecodeAugmentResult r =
          w.decoder.decode_augment(sample.bytes, rng, augment, dst.data(), w.scratch);
      data::SampleResult out;
      out.stage_s[0] = static_cast<double>(r.decode_ns) * 1e-9;
      out.stage_s[1] = static_cast<double>(r.augment_ns) * 1e-9;
      return out;
    } catch (const data::DecodeError& e) {
      return data::SampleResult::bad(e.what());
    }
  };
}

std::optional<data::Batch> next_batch(data::Loader& loader, std::uint32_t& epoch) {
  for (;;) {
    if (auto b = loader.next()) return b;
    if (cancel_requested()) return std::nullopt;
    loader.start_epoch(++epoch);
  }
}

const SlotRecord& slot_record(const data::Batch& b, std::size_t j, std::size_t sample_bytes) {
  return *reinterpret_cast<const SlotRecord*>(b.data.data() + j * sample_bytes);
}

const std::uint8_t* slot_payload(const data::Batch& b, std::size_t j, std::size_t sample_bytes) {
  return b.data.data() + j * sample_bytes + kSlotRecordBytes;
}

}  // namespace gb::pipeline
