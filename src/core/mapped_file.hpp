// core/mapped_file.hpp: a read-only file mapped into memory (RAII, move-only), and the small
// POSIX file helpers the readers share. Readers hand out spans into these mappings, so a sample
// costs no copy and any number of threads may read one mapping at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace gb {

class MappedFile {
 public:
  // Whether the pages are read in when the file is mapped (MAP_POPULATE: one pass over a file
  // about to be read whole, with no page fault per 4 KiB) or on first touch (a large pack read
  // sample by sample).
  enum class Load { on_touch, now };

  // Throws gb::Error (usage) naming the file when it cannot be opened or mapped. An empty file
  // maps to an empty span (mmap of length 0 is not allowed, so nothing is mapped).
  static MappedFile open(const std::filesystem::path& path, Load load = Load::on_touch);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

  // Hints for the kernel's readahead: whole-file sequential scans (pack, verify) or random
  // sample reads (a shuffled loader). Advisory only; failures are ignored.
  void advise_sequential() const;
  void advise_random() const;

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::filesystem::path path_;
};

// Reads a whole file (pread loop; EINTR-safe) into `out`, resized to the file's size. Throws
// gb::Error naming the file on failure.
void read_whole_file(const std::filesystem::path& path, std::vector<std::uint8_t>& out);

// Reads up to `max_bytes` from the start of a file; returns fewer at end of file. Throws
// gb::Error naming the file when it cannot be opened or read.
std::vector<std::uint8_t> read_file_prefix(const std::filesystem::path& path,
                                           std::size_t max_bytes);

// Writes bytes to a file, replacing it. Throws gb::Error naming the file.
void write_whole_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

// "<path>: <what>: <strerror(errno_value)>"
std::string errno_message(const std::filesystem::path& path, const std::string& what,
                          int errno_value);

}  // namespace gb
