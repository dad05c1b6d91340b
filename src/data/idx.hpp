// data/idx.hpp: IDX files (the MNIST / Fashion-MNIST format): one images file and one labels
// file, big-endian headers (magic 00 00 <type> <ndims>, then ndims uint32 dimensions), raw bytes
// after. Plain files are mapped (zero copy); gzip-compressed ones (as Fashion-MNIST ships) are
// inflated into memory once at open (47 MB for the 60,000 training images) when the build has
// zlib. Every inconsistency -- wrong magic, wrong dimension count, element type other than
// uint8, image and label counts that differ, a file shorter or longer than its header says --
// is a gb::Error (usage) naming the file and the numbers.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.hpp"
#include "data/dataset.hpp"

namespace gb::data {

// One parsed IDX array: its dimensions and its element bytes (uint8 only).
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::span<const std::uint8_t> data;
};

// Parses an IDX file's bytes (already inflated). `name` is used in error messages.
IdxArray parse_idx(std::span<const std::uint8_t> bytes, const std::string& name);

struct IdxOptions {
  // Names for labels 0..n-1; empty: "0".."max label" (IDX files carry no names).
  std::vector<std::string> class_names;
};

// The ten Fashion-MNIST classes, in label order.
std::vector<std::string> fashion_mnist_class_names();

class IdxDataset final : public Dataset {
 public:
  static std::unique_ptr<IdxDataset> open(const std::filesystem::path& images,
                                          const std::filesystem::path& labels,
                                          const IdxOptions& options = {});

  std::string_view kind() const override { return "idx"; }
  std::string source() const override;
  std::size_t size() const override { return labels_.size(); }
  SampleFormat format() const override { return SampleFormat::raw_u8; }
  std::optional<RawShape> raw_shape() const override { return shape_; }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  std::int32_t label(std::size_t index) const override { return labels_[index]; }
  Sample read(std::size_t index, std::vector<std::uint8_t>& scratch) const override;
  std::string sample_name(std::size_t index) const override;

  // All pixels, sample after sample (size() * raw_shape()->bytes() bytes).
  std::span<const std::uint8_t> pixels() const { return pixels_; }

 private:
  // The bytes of one file: mapped when plain, inflated when gzip.
  struct Contents {
    MappedFile mapped;
    std::vector<std::uint8_t> inflated;
    std::span<const std::uint8_t> bytes() const;
  };
  static Contents load(const std::filesystem::path& path);

  std::filesystem::path images_path_, labels_path_;
  Contents images_, labels_file_;
  std::span<const std::uint8_t> pixels_;
  std::span<const std::uint8_t> labels_;
  RawShape shape_;
  std::vector<std::string> class_names_;
};

// Opens "<split>-images-idx3-ubyte[.gz]" and "<split>-labels-idx1-ubyte[.gz]" in `dir`
// (split is "train" or "t10k" for MNIST and Fashion-MNIST).
std::unique_ptr<IdxDataset> open_idx_split(const std::filesystem::path& dir,
                                           const std::string& split,
                                           const IdxOptions& options = {});

}  // namespace gb::data
