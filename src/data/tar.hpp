// data/tar.hpp: a tar reader and writer, by hand, for WebDataset shards. The reader indexes an
// archive in place (over an mmap'ed shard: members are spans, no copy) and understands ustar
// (name + prefix), pax extended headers ('x': path and size records) and GNU long names ('L').
// It never throws and never loops: every step advances by at least one 512-byte block and every
// size is checked against the bytes left, so a truncated or corrupt shard ends the scan with a
// reason and the members indexed so far.
//
// Format reference: POSIX.1-2017 pax "ustar Interchange Format" and "pax Extended Header"; GNU
// tar manual, "Basic Tar Format" (type 'L', base-256 sizes).
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gb::data {

struct TarMember {
  std::string name;          // full path inside the archive, without a leading "./"
  std::uint64_t offset = 0;  // of the member's data, from the start of the archive
  std::uint64_t size = 0;
};

struct TarIndex {
  std::vector<TarMember> members;  // regular files, in archive order
  std::size_t ignored = 0;         // directories, links, devices, pax global headers
  // Set when the scan stopped before the end-of-archive marker or the end of the bytes.
  enum class Stop { none, truncated, corrupt } stop = Stop::none;
  std::string stop_reason;  // "truncated at byte 1536: member 'a.jpg' needs 9000 bytes, 100 left"
  std::string stop_member;  // the member cut short, when its header was readable
};

TarIndex index_tar(std::span<const std::uint8_t> archive);

// How the writer stores names longer than ustar's 100-byte name field.
enum class TarLongNames { pax, gnu };

// Writes a tar archive member by member: regular files, mode 0644, owner 0, mtime 0 (so the
// same members give the same bytes), ended by two zero blocks in finish(). Throws gb::Error
// naming the file on I/O failure. A writer destroyed without finish() leaves a truncated file.
class TarWriter {
 public:
  explicit TarWriter(const std::filesystem::path& path,
                     TarLongNames long_names = TarLongNames::pax);
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  ~TarWriter();

  void add(const std::string& name, std::span<const std::uint8_t> data);
  void finish();
  std::uint64_t bytes_written() const { return written_; }

 private:
  void put(const void* data, std::size_t size);
  void pad_to_block();
  void header(const std::string& name, std::uint64_t size, char type);

  std::filesystem::path path_;
  TarLongNames long_names_;
  std::FILE* file_ = nullptr;
  std::uint64_t written_ = 0;
};

}  // namespace gb::data
