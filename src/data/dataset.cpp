// data/dataset.cpp: helpers shared by the readers.
#include "data/dataset.hpp"

namespace gb::data {

std::string_view to_string(SampleFormat format) {
  switch (format) {
    case SampleFormat::jpeg:
      return "jpeg";
    case SampleFormat::raw_u8:
      return "raw_u8";
  }
  return "unknown";
}

void ScanReport::note(const std::string& what) {
  if (examples.size() < kMaxExamples) examples.push_back(what);
}

bool is_jpeg(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

std::vector<std::string> numeric_class_names(std::size_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (std::size_t i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

}  // namespace gb::data
