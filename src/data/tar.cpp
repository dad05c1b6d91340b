// data/tar.cpp: tar header parsing (ustar/pax/GNU) and a deterministic tar writer.
#include "data/tar.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/mapped_file.hpp"

namespace gb::data {
namespace {

constexpr std::size_t kBlock = 512;

// Header field offsets and lengths (POSIX ustar).
constexpr std::size_t kName = 0, kNameLen = 100;
constexpr std::size_t kMode = 100, kUid = 108, kGid = 116;
constexpr std::size_t kSize = 124, kSizeLen = 12;
constexpr std::size_t kMtime = 136;
constexpr std::size_t kChksum = 148, kChksumLen = 8;
constexpr std::size_t kType = 156;
constexpr std::size_t kMagic = 257;
constexpr std::size_t kPrefix = 345, kPrefixLen = 155;

std::string field_string(const std::uint8_t* h, std::size_t offset, std::size_t length) {
  const char* p = reinterpret_cast<const char*>(h + offset);
  return std::string(p, strnlen(p, length));
}

// Octal, space/NUL padded; or GNU base-256 when the high bit of the first byte is set.
std::optional<std::uint64_t> parse_number(const std::uint8_t* f, std::size_t length) {
  if (f[0] & 0x80) {
    std::uint64_t v = f[0] & 0x7F;
    for (std::size_t i = 1; i < length; ++i) {
      if (v >> 56) return std::nullopt;
      v = v << 8 | f[i];
    }
    return v;
  }
  std::size_t i = 0;
  while (i < length && f[i] == ' ') ++i;
  std::uint64_t v = 0;
  bool any = false;
  for (; i < length && f[i] >= '0' && f[i] <= '7'; ++i) {
    v = v * 8 + (f[i] - '0');
    any = true;
  }
  if (i < length && f[i] != ' ' && f[i] != '\0') return std::nullopt;
  return any ? std::optional<std::uint64_t>(v) : std::optional<std::uint64_t>(0);
}

// The checksum is the sum of the header's bytes with the checksum field read as spaces. Old
// tars summed signed chars; both are accepted, as GNU tar does.
bool checksum_ok(const std::uint8_t* h) {
  const std::optional<std::uint64_t> stored = parse_number(h + kChksum, kChksumLen);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChksum && i < kChksum + kChksumLen;
    unsigned_sum += in_field ? ' ' : h[i];
    signed_sum += in_field ? ' ' : static_cast<signed char>(h[i]);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

bool all_zero(const std::uint8_t* h) {
  return std::all_of(h, h + kBlock, [](std::uint8_t b) { return b == 0; });
}

std::uint64_t round_up_block(std::uint64_t n) {
  return (n + kBlock - 1) / kBlock * kBlock;
}

// pax records: "<length> <key>=<value>\n", length counting the whole record.
void parse_pax(std::span<const std::uint8_t> data, std::optional<std::string>& path,
               std::optional<std::uint64_t>& size) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t len = 0, i = pos;
    while (i < data.size() && data[i] >= '0' && data[i] <= '9') len = len * 10 + (data[i++] - '0');
    if (len == 0 || i >= data.size() || data[i] != ' ' || pos + len > data.size()) return;
    const std::string record(reinterpret_cast<const char*>(data.data()) + i + 1, pos + len - i - 1);
    pos += len;
    const std::size_t eq = record.find('=');
    if (eq == std::string::npos || record.empty() || record.back() != '\n') continue;
    const std::string key = record.substr(0, eq);
    const std::string value = record.substr(eq + 1, record.size() - eq - 2);
    if (key == "path") {
      path = value;
    } else if (key == "size") {
      std::uint64_t v = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      size = v;
    }
  }
}

std::string clean_name(std::string name) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  return name;
}

void write_octal(char* field, std::size_t length, std::uint64_t value) {
  // length-1 digits and a NUL; the caller checks that the value fits.
  std::snprintf(field, length, "%0*llo", static_cast<int>(length - 1),
                static_cast<unsigned long long>(value));
}

}  // namespace

TarIndex index_tar(std::span<const std::uint8_t> archive) {
  TarIndex index;
  std::uint64_t pos = 0;
  const std::uint64_t end = archive.size();
  std::optional<std::string> next_path;    // from a pax 'x' or GNU 'L' header
  std::optional<std::uint64_t> next_size;  // from a pax 'x' header

  auto stop = [&](TarIndex::Stop why, const std::string& reason) {
    index.stop = why;
    index.stop_reason = reason;
  };

  while (pos < end) {
    throw_if_cancelled();  // a shard of millions of members ends on Ctrl-C like every long loop
    if (end - pos < kBlock) {
      stop(TarIndex::Stop::truncated, "truncated at byte " + std::to_string(pos) +
                                          ": a header needs 512 bytes, " +
                                          std::to_string(end - pos) + " left");
      break;
    }
    const std::uint8_t* h = archive.data() + pos;
    if (all_zero(h)) break;  // end-of-archive marker (the second zero block is not required)
    if (!checksum_ok(h)) {
      stop(TarIndex::Stop::corrupt,
           "corrupt header at byte " + std::to_string(pos) + " (checksum mismatch)");
      break;
    }
    const std::optional<std::uint64_t> header_size = parse_number(h + kSize, kSizeLen);
    if (!header_size) {
      stop(TarIndex::Stop::corrupt,
           "corrupt header at byte " + std::to_string(pos) + " (bad size field)");
      break;
    }
    const char type = static_cast<char>(h[kType]);
    const std::uint64_t size =
        (type == '0' || type == '\0' || type == '7') && next_size ? *next_size : *header_size;
    std::string name = field_string(h, kName, kNameLen);
    if (std::memcmp(h + kMagic, "ustar", 5) == 0 && h[kPrefix] != 0) {
      name = field_string(h, kPrefix, kPrefixLen) + "/" + name;
    }
    const std::uint64_t data_pos = pos + kBlock;
    if (size > end - data_pos) {
      index.stop_member = clean_name(next_path.value_or(name));
      stop(TarIndex::Stop::truncated, "truncated at byte " + std::to_string(data_pos) +
                                          ": member '" + clean_name(next_path.value_or(name)) +
                                          "' needs " + std::to_string(size) + " bytes, " +
                                          std::to_string(end - data_pos) + " left");
      break;
    }
    const std::span<const std::uint8_t> data = archive.subspan(data_pos, size);
    switch (type) {
      case '0':
      case '\0':
      case '7':
        index.members.push_back({clean_name(next_path.value_or(name)), data_pos, size});
        next_path.reset();
        next_size.reset();
        break;
      case 'x':
        parse_pax(data, next_path, next_size);
        break;
      case 'L':
        next_path = std::string(reinterpret_cast<const char*>(data.data()),
                                strnlen(reinterpret_cast<const char*>(data.data()), size));
        break;
      default:  // directories, links, devices, FIFOs, pax globals ('g'), GNU 'K' link names
        ++index.ignored;
        if (type != 'K' && type != 'g') {
          next_path.reset();
          next_size.reset();
        }
        break;
    }
    pos = data_pos + round_up_block(size);
  }
  return index;
}

TarWriter::TarWriter(const std::filesystem::path& path, TarLongNames long_names)
    : path_(path), long_names_(long_names) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw Error(ErrorKind::usage, errno_message(path, "cannot create", errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

TarWriter::~TarWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TarWriter::put(const void* data, std::size_t size) {
  if (size != 0 && std::fwrite(data, 1, size, file_) != size) {
    throw Error(ErrorKind::runtime, errno_message(path_, "write", errno));
  }
  written_ += size;
}

void TarWriter::pad_to_block() {
  static const std::uint8_t zeros[kBlock] = {};
  put(zeros, round_up_block(written_) - written_);
}

void TarWriter::header(const std::string& name, std::uint64_t size, char type) {
  std::uint8_t h[kBlock] = {};
  char* c = reinterpret_cast<char*>(h);
  std::memcpy(c + kName, name.data(), std::min(name.size(), kNameLen));
  write_octal(c + kMode, 8, 0644);
  write_octal(c + kUid, 8, 0);
  write_octal(c + kGid, 8, 0);
  if (size < (std::uint64_t{1} << 33)) {  // 11 octal digits
    write_octal(c + kSize, kSizeLen, size);
  } else {
    h[kSize] = 0x80;
    for (std::size_t i = 0; i < 8; ++i) h[kSize + kSizeLen - 1 - i] = (size >> (8 * i)) & 0xFF;
  }
  write_octal(c + kMtime, 12, 0);
  c[kType] = type;
  std::memcpy(c + kMagic,
              "ustar\0"
              "00",
              8);
  std::memset(c + kChksum, ' ', kChksumLen);
  std::uint32_t sum = 0;
  for (std::uint8_t b : h) sum += b;
  std::snprintf(c + kChksum, 7, "%06o", sum);  // six digits, NUL, and the space already there
  put(h, kBlock);
}

void TarWriter::add(const std::string& name, std::span<const std::uint8_t> data) {
  if (name.size() > kNameLen) {
    if (long_names_ == TarLongNames::gnu) {
      header("././@LongLink", name.size() + 1, 'L');
      put(name.c_str(), name.size() + 1);
    } else {
      // "<len> path=<name>\n" where <len> counts its own digits.
      const std::string body = " path=" + name + "\n";
      std::size_t len = body.size() + 1;
      while (std::to_string(len).size() + body.size() != len) ++len;
      const std::string record = std::to_string(len) + body;
      header("PaxHeaders/" + name.substr(name.size() - 80), record.size(), 'x');
      put(record.data(), record.size());
    }
    pad_to_block();
  }
  header(name, data.size(), '0');
  put(data.data(), data.size());
  pad_to_block();
}

void TarWriter::finish() {
  static const std::uint8_t zeros[2 * kBlock] = {};
  put(zeros, sizeof zeros);
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) throw Error(ErrorKind::runtime, errno_message(path_, "close", errno));
}

}  // namespace gb::data
