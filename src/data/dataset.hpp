// data/dataset.hpp: the one interface every dataset reader implements (IDX, ImageFolder,
// WebDataset tar shards, the packed format), and what a scan found wrong with the data.
//
// Built for a multi-threaded loader: a Dataset is immutable once opened, so read() may be called
// from any number of threads at once. Readers over mmap'ed files (IDX, tar shards, packs) return
// a span into the mapping -- zero copy, valid as long as the Dataset lives. ImageFolder cannot
// keep a million files mapped (vm.max_map_count is 65530 by default), so it reads the file into
// the caller's scratch vector: give each worker thread its own and reuse it, and a read costs no
// allocation once the vector has grown to the largest file.
//
// Bad data (a file that is not a JPEG, an empty class directory, an unreadable file, a truncated
// tar shard) is found when the dataset is opened: by default it is skipped and counted in
// ScanReport; with OpenOptions::strict the open fails with a gb::Error naming the file. Bytes are
// checked only for the JPEG start-of-image marker here; a JPEG cut short after its header is
// found by the decoder (the loader), which skips and counts it the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gb::data {

// What a sample's bytes are.
enum class SampleFormat : std::uint32_t {
  jpeg = 0,    // one encoded JPEG file
  raw_u8 = 1,  // height x width x channels pixels, uint8, row-major, channels interleaved
};
std::string_view to_string(SampleFormat format);

// Shape of every sample of a raw_u8 dataset (IDX: 28 x 28 x 1 for Fashion-MNIST).
struct RawShape {
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;
  std::size_t bytes() const { return std::size_t{height} * width * channels; }
  bool operator==(const RawShape&) const = default;
};

struct Sample {
  std::span<const std::uint8_t> bytes;  // into the dataset's mapping or the caller's scratch
  std::int32_t label = 0;               // 0 .. num_classes()-1
};

// Problems a scan skipped (default) instead of failing (strict).
struct ScanReport {
  std::size_t empty_class_dirs = 0;  // ImageFolder: a class directory with no JPEG in it
  std::size_t not_jpeg = 0;          // a file or tar member without the JPEG SOI marker
  std::size_t unreadable = 0;        // could not be opened or read (permissions, dangling link)
  std::size_t truncated = 0;         // a tar shard that ends inside a header or a member
  std::size_t corrupt = 0;           // a tar shard with a bad header (checksum, size field)
  std::size_t unlabeled = 0;         // a tar image without a usable .cls member
  std::size_t ignored = 0;           // not data at all: directories, links, other tar members
  // The first few problems, "<file>: <what>", for a message the user can act on.
  std::vector<std::string> examples;

  // Everything that should have been a sample and was not (ignored entries are not counted).
  std::size_t skipped() const { return not_jpeg + unreadable + truncated + corrupt + unlabeled; }
  void note(const std::string& what);  // keeps the first kMaxExamples
  static constexpr std::size_t kMaxExamples = 10;
};

struct OpenOptions {
  bool strict = false;  // fail on the first bad file instead of skipping and counting it
};

// progress(done, total): called from the calling thread, now and then, by long operations.
using Progress = std::function<void(std::size_t done, std::size_t total)>;

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::string_view kind() const = 0;  // "idx", "image_folder", "webdataset", "pack"
  virtual std::string source() const = 0;     // the path(s) it was opened from, for messages
  virtual std::size_t size() const = 0;
  virtual SampleFormat format() const = 0;
  virtual std::optional<RawShape> raw_shape() const { return std::nullopt; }  // raw_u8 only
  virtual const std::vector<std::string>& class_names() const = 0;
  std::size_t num_classes() const { return class_names().size(); }

  // Label without touching the sample's bytes (for sharding, class balance, statistics).
  virtual std::int32_t label(std::size_t index) const = 0;
  // Thread-safe. `scratch` is used only by readers that must copy (ImageFolder). Throws
  // gb::Error naming the file when the bytes cannot be read (a file removed after the scan).
  virtual Sample read(std::size_t index, std::vector<std::uint8_t>& scratch) const = 0;
  // Where a sample comes from, for messages: a file path, "shard.tar:key", "pack#17".
  virtual std::string sample_name(std::size_t index) const = 0;

  const ScanReport& scan_report() const { return scan_; }

 protected:
  ScanReport scan_;
};

// True when bytes start with the JPEG start-of-image marker followed by another marker
// (FF D8 FF): how files are recognised as JPEGs, whatever their extension.
bool is_jpeg(std::span<const std::uint8_t> bytes);

// Class names "0", "1", ... for formats that store only numeric labels (IDX, WebDataset .cls).
std::vector<std::string> numeric_class_names(std::size_t count);

}  // namespace gb::data
