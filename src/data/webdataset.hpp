// data/webdataset.hpp: WebDataset tar shards (github.com/webdataset/webdataset): each sample is
// a run of adjacent members sharing a key -- the member path up to the first '.' of its file
// name -- here "<key>.jpg" (or .jpeg) for the image and "<key>.cls" for the label, a decimal
// integer in ASCII. Other members of a sample (.json, .txt, ...) are ignored.
//
// Shards are mmap'ed and indexed at open (headers only: about 1 ms per 1,000 samples when the
// shard is in the page cache); a sample read is a span into the mapping. A shard that is
// truncated or has a corrupt header keeps the samples before the damage; the sample being read
// when it happened and everything after it are lost and counted (strict: a gb::Error naming the
// shard, the byte offset and the member).
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.hpp"
#include "data/dataset.hpp"

namespace gb::data {

struct WebDatasetOptions {
  bool strict = false;
  // Names for labels 0..n-1; empty: "0".."max label" (.cls members carry numbers only).
  std::vector<std::string> class_names;
};

class WebDataset final : public Dataset {
 public:
  static std::unique_ptr<WebDataset> open(const std::vector<std::filesystem::path>& shards,
                                          const WebDatasetOptions& options = {});
  // Every *.tar directly inside `dir`, in name order.
  static std::unique_ptr<WebDataset> open_dir(const std::filesystem::path& dir,
                                              const WebDatasetOptions& options = {});

  std::string_view kind() const override { return "webdataset"; }
  std::string source() const override;
  std::size_t size() const override { return entries_.size(); }
  SampleFormat format() const override { return SampleFormat::jpeg; }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  std::int32_t label(std::size_t index) const override { return entries_[index].label; }
  Sample read(std::size_t index, std::vector<std::uint8_t>& scratch) const override;
  std::string sample_name(std::size_t index) const override;

  std::size_t shard_count() const { return shards_.size(); }

 private:
  struct Entry {
    std::uint32_t shard;
    std::int32_t label;
    std::uint64_t offset, size;  // the image member's bytes in the shard
    std::uint64_t key_offset;    // into keys_
    std::uint32_t key_length;
  };
  void index_shard(std::uint32_t shard_index, bool strict);

  std::vector<MappedFile> shards_;
  std::vector<Entry> entries_;
  std::string keys_;
  std::vector<std::string> class_names_;
};

// Writes any JPEG dataset as WebDataset shards dir/shard-000000.tar, ... with
// `samples_per_shard` samples each: members "<index, 8 digits>.jpg" and ".cls". Returns the
// shard paths. Throws gb::Error for a raw_u8 dataset or an I/O failure.
std::vector<std::filesystem::path> write_webdataset(const Dataset& dataset,
                                                    const std::filesystem::path& dir,
                                                    std::size_t samples_per_shard = 1000,
                                                    const Progress& progress = {});

}  // namespace gb::data
