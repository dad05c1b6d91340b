// data/pack.hpp: gpubase's packed dataset format (.gbpack): one file, mmap-able, every sample
// checksummed. Made from any Dataset by pack_dataset() (the converter from IDX, ImageFolder and
// WebDataset), read by PackedDataset (zero copy: a sample is a span into the mapping).
//
// Layout (little-endian; byte by byte in docs/datasets.md):
//   [0, 4096)            header: magic "GBPACK\0\0", version, counts, section offsets, CRCs
//   classes              class names, each followed by '\n'
//   index                sample_count entries of 24 bytes: offset, size, label, crc32c
//   padding              to the next 4096-byte boundary
//   payload              the samples, each starting at a multiple of sample_alignment
// The header is written last (to a temporary file renamed into place), so a pack cut short by a
// crash is never mistaken for a whole one. Opening checks the header, the index CRC and every
// entry's bounds (cheap: 24 bytes per sample); sample CRCs are checked on demand, on every read
// (PackOpenOptions::verify_reads), or all at once by verify_pack().
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.hpp"
#include "data/dataset.hpp"

namespace gb::data {

inline constexpr std::uint32_t kPackVersion = 1;
inline constexpr std::size_t kPackHeaderBytes = 4096;
inline constexpr std::size_t kPackIndexEntryBytes = 24;

struct PackOptions {
  // Every sample starts at a multiple of this (a power of two, at least 1). 64 keeps samples on
  // their own cache lines at ~0.03 % padding for 110 KB JPEGs; 4096 would allow O_DIRECT reads.
  std::uint32_t sample_alignment = 64;
};

struct PackSummary {
  std::size_t samples = 0;
  std::uint64_t payload_bytes = 0;  // sample bytes, without alignment padding
  std::uint64_t file_bytes = 0;
};

// Packs every sample of `dataset`, in order, with its label and the dataset's class names.
// Writes "<path>.tmp" and renames it to `path`. Throws gb::Error on a read or I/O failure
// (the temporary file is removed).
PackSummary pack_dataset(const Dataset& dataset, const std::filesystem::path& path,
                         const PackOptions& options = {}, const Progress& progress = {});

struct PackOpenOptions {
  bool verify_reads = false;  // check the CRC of every sample read (throws on a mismatch)
};

class PackedDataset final : public Dataset {
 public:
  // Throws gb::Error (usage) naming the file and what is wrong: not a pack, a newer version,
  // truncated, header or index checksum mismatch, an entry outside the payload, a bad label.
  static std::unique_ptr<PackedDataset> open(const std::filesystem::path& path,
                                             const PackOpenOptions& options = {});

  std::string_view kind() const override { return "pack"; }
  std::string source() const override { return file_.path().string(); }
  std::size_t size() const override { return entries_.size(); }
  SampleFormat format() const override { return format_; }
  std::optional<RawShape> raw_shape() const override;
  const std::vector<std::string>& class_names() const override { return class_names_; }
  std::int32_t label(std::size_t index) const override { return entries_[index].label; }
  Sample read(std::size_t index, std::vector<std::uint8_t>& scratch) const override;
  std::string sample_name(std::size_t index) const override;

  // True when the sample's bytes match the CRC-32C stored in the index.
  bool verify_sample(std::size_t index) const;
  std::uint32_t stored_crc(std::size_t index) const { return entries_[index].crc; }

 private:
  struct Entry {
    std::uint64_t offset;  // from the start of the payload
    std::uint32_t size;
    std::int32_t label;
    std::uint32_t crc;
  };
  MappedFile file_;
  std::span<const std::uint8_t> payload_;
  std::vector<Entry> entries_;
  std::vector<std::string> class_names_;
  SampleFormat format_ = SampleFormat::jpeg;
  RawShape shape_;
  bool verify_reads_ = false;
};

struct VerifyReport {
  std::size_t samples = 0;
  std::uint64_t bytes = 0;
  std::vector<std::size_t> bad_samples;  // indices whose CRC does not match
  bool ok() const { return bad_samples.empty(); }
};

// Opens the pack (header and index checks, which throw) and checks every sample's CRC.
VerifyReport verify_pack(const std::filesystem::path& path, const Progress& progress = {});

}  // namespace gb::data
