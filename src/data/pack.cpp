// data/pack.cpp: the packed format's writer, reader and verifier.
#include "data/pack.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "data/crc32c.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'G', 'B', 'P', 'A', 'C', 'K', '\0', '\0'};
constexpr std::uint32_t kChecksumCrc32c = 1;
constexpr std::size_t kPage = 4096;

// Header field offsets (docs/datasets.md has the table).
enum HeaderField : std::size_t {
  kVersion = 8,
  kHeaderBytesField = 12,
  kSampleCount = 16,
  kClassCount = 24,
  kSampleFormat = 28,
  kRawHeight = 32,
  kRawWidth = 36,
  kRawChannels = 40,
  kChecksumKind = 44,
  kClassesOffset = 48,
  kClassesBytes = 56,
  kIndexOffset = 64,
  kIndexBytes = 72,
  kPayloadOffset = 80,
  kPayloadBytes = 88,
  kSampleAlignment = 96,
  kClassesCrc = 100,
  kIndexCrc = 104,
  kHeaderCrc = 108,  // CRC-32C of bytes [0, 108)
};

void store32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void store64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t load32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) {
  return (n + a - 1) / a * a;
}

// The temporary file of pack_dataset(): closed and removed unless committed.
class TempFile {
 public:
  explicit TempFile(const fs::path& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) {
      throw Error(ErrorKind::usage, errno_message(path, "cannot create", errno));
    }
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) {
      std::error_code ec;
      fs::remove(path_, ec);
    }
  }
  void write_at(std::uint64_t offset, const void* data, std::size_t size) {
    if (std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) fail("seek");
    write(data, size);
  }
  void write(const void* data, std::size_t size) {
    if (size != 0 && std::fwrite(data, 1, size, file_) != size) fail("write");
  }
  void zeros(std::size_t count) {
    static const std::uint8_t z[kPage] = {};
    while (count > 0) {
      const std::size_t n = std::min(count, kPage);
      write(z, n);
      count -= n;
    }
  }
  void commit_as(const fs::path& final_path) {
    if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0) fail("flush");
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) fail("close");
    std::error_code ec;
    fs::rename(path_, final_path, ec);
    if (ec) throw Error(ErrorKind::usage, final_path.string() + ": rename: " + ec.message());
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw Error(ErrorKind::runtime, errno_message(path_, what, errno));
  }
  fs::path path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

[[noreturn]] void bad_pack(const fs::path& path, const std::string& what) {
  throw Error(ErrorKind::usage, path.string() + ": " + what);
}

}  // namespace

PackSummary pack_dataset(const Dataset& dataset, const fs::path& path, const PackOptions& options,
                         const Progress& progress) {
  const std::uint32_t align = options.sample_alignment;
  if (align == 0 || (align & (align - 1)) != 0) {
    throw Error(ErrorKind::usage,
                "pack: sample alignment " + std::to_string(align) + " is not a power of two");
  }
  std::string classes;
  for (const std::string& name : dataset.class_names()) {
    if (name.find('\n') != std::string::npos) {
      throw Error(ErrorKind::usage, dataset.source() + ": class name with a newline");
    }
    classes += name + '\n';
  }
  const std::size_t n = dataset.size();
  const std::uint64_t classes_offset = kPackHeaderBytes;
  const std::uint64_t index_offset = align_up(classes_offset + classes.size(), 8);
  const std::uint64_t index_bytes = std::uint64_t{n} * kPackIndexEntryBytes;
  const std::uint64_t payload_offset = align_up(index_offset + index_bytes, kPage);

  TempFile out(path.string() + ".tmp");
  out.zeros(payload_offset);

  std::vector<std::uint8_t> index(index_bytes);
  std::vector<std::uint8_t> scratch;
  std::uint64_t position = 0;  // within the payload
  PackSummary summary;
  for (std::size_t i = 0; i < n; ++i) {
    const Sample s = dataset.read(i, scratch);
    if (s.bytes.size() > 0xFFFFFFFFu) {
      throw Error(ErrorKind::usage, dataset.sample_name(i) + ": larger than 4 GiB");
    }
    const std::uint64_t padded = align_up(position, align);
    out.zeros(padded - position);
    out.write(s.bytes.data(), s.bytes.size());
    std::uint8_t* e = index.data() + i * kPackIndexEntryBytes;
    store64(e, padded);
    store32(e + 8, static_cast<std::uint32_t>(s.bytes.size()));
    store32(e + 12, static_cast<std::uint32_t>(s.label));
    store32(e + 16, crc32c(s.bytes));
    store32(e + 20, 0);
    position = padded + s.bytes.size();
    summary.payload_bytes += s.bytes.size();
    if (progress && (i % 1024 == 1023 || i + 1 == n)) progress(i + 1, n);
  }
  const std::uint64_t payload_bytes = align_up(position, align);
  out.zeros(payload_bytes - position);

  std::uint8_t header[kPackHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  store32(header + kVersion, kPackVersion);
  store32(header + kHeaderBytesField, kPackHeaderBytes);
  store64(header + kSampleCount, n);
  store32(header + kClassCount, static_cast<std::uint32_t>(dataset.num_classes()));
  store32(header + kSampleFormat, static_cast<std::uint32_t>(dataset.format()));
  const RawShape shape = dataset.raw_shape().value_or(RawShape{});
  store32(header + kRawHeight, shape.height);
  store32(header + kRawWidth, shape.width);
  store32(header + kRawChannels, shape.channels);
  store32(header + kChecksumKind, kChecksumCrc32c);
  store64(header + kClassesOffset, classes_offset);
  store64(header + kClassesBytes, classes.size());
  store64(header + kIndexOffset, index_offset);
  store64(header + kIndexBytes, index_bytes);
  store64(header + kPayloadOffset, payload_offset);
  store64(header + kPayloadBytes, payload_bytes);
  store32(header + kSampleAlignment, align);
  store32(header + kClassesCrc,
          crc32c({reinterpret_cast<const std::uint8_t*>(classes.data()), classes.size()}));
  store32(header + kIndexCrc, crc32c(index));
  store32(header + kHeaderCrc, crc32c({header, kHeaderCrc}));

  out.write_at(classes_offset, classes.data(), classes.size());
  out.write_at(index_offset, index.data(), index.size());
  out.write_at(0, header, sizeof header);
  out.commit_as(path);

  summary.samples = n;
  summary.file_bytes = payload_offset + payload_bytes;
  return summary;
}

std::unique_ptr<PackedDataset> PackedDataset::open(const fs::path& path,
                                                   const PackOpenOptions& options) {
  std::unique_ptr<PackedDataset> ds(new PackedDataset());
  ds->file_ = MappedFile::open(path);
  ds->verify_reads_ = options.verify_reads;
  const std::span<const std::uint8_t> bytes = ds->file_.bytes();
  const std::uint64_t file_size = bytes.size();
  if (file_size < kPackHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    if (file_size >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) {
      bad_pack(path, "truncated: " + std::to_string(file_size) + " bytes, the header alone is " +
                         std::to_string(kPackHeaderBytes));
    }
    bad_pack(path, "not a gpubase pack (no GBPACK magic)");
  }
  const std::uint8_t* h = bytes.data();
  const std::uint32_t version = load32(h + kVersion);
  if (version != kPackVersion) {
    bad_pack(path, "pack version " + std::to_string(version) + ", this gpubase reads version " +
                       std::to_string(kPackVersion));
  }
  if (load32(h + kHeaderCrc) != crc32c({h, kHeaderCrc})) bad_pack(path, "header checksum mismatch");
  if (load32(h + kChecksumKind) != kChecksumCrc32c) bad_pack(path, "unknown checksum kind");

  const std::uint64_t n = load64(h + kSampleCount);
  const std::uint64_t classes_offset = load64(h + kClassesOffset);
  const std::uint64_t classes_bytes = load64(h + kClassesBytes);
  const std::uint64_t index_offset = load64(h + kIndexOffset);
  const std::uint64_t index_bytes = load64(h + kIndexBytes);
  const std::uint64_t payload_offset = load64(h + kPayloadOffset);
  const std::uint64_t payload_bytes = load64(h + kPayloadBytes);
  if (index_bytes / kPackIndexEntryBytes != n || index_bytes % kPackIndexEntryBytes != 0) {
    bad_pack(path, "index size does not match the sample count");
  }
  const std::uint64_t payload_end = payload_offset + payload_bytes;
  if (payload_end < payload_offset || file_size < payload_end) {
    bad_pack(path, "truncated: the header says the payload ends at byte " +
                       std::to_string(payload_end) + ", the file has " + std::to_string(file_size) +
                       " bytes");
  }
  // offset + size <= limit without the sum wrapping: a checksum is not authentication, so every
  // field is range-checked as if hostile (an offset near 2^64 must not wrap to a small number).
  const auto within = [](std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
    return offset <= limit && size <= limit - offset;
  };
  if (!within(classes_offset, classes_bytes, payload_offset) ||
      !within(index_offset, index_bytes, payload_offset) || classes_offset < kPackHeaderBytes ||
      index_offset < kPackHeaderBytes) {
    bad_pack(path, "header sections overlap or lie outside the file");
  }
  const std::span<const std::uint8_t> classes = bytes.subspan(classes_offset, classes_bytes);
  if (load32(h + kClassesCrc) != crc32c(classes)) bad_pack(path, "class names checksum mismatch");
  const std::span<const std::uint8_t> index = bytes.subspan(index_offset, index_bytes);
  if (load32(h + kIndexCrc) != crc32c(index)) bad_pack(path, "index checksum mismatch");

  std::string name;
  for (const std::uint8_t c : classes) {
    if (c == '\n') {
      ds->class_names_.push_back(name);
      name.clear();
    } else {
      name += static_cast<char>(c);
    }
  }
  if (ds->class_names_.size() != load32(h + kClassCount)) {
    bad_pack(path, "class count does not match the class names");
  }
  const std::uint32_t format = load32(h + kSampleFormat);
  if (format > static_cast<std::uint32_t>(SampleFormat::raw_u8)) {
    bad_pack(path, "unknown sample format " + std::to_string(format));
  }
  ds->format_ = static_cast<SampleFormat>(format);
  ds->shape_ = {load32(h + kRawHeight), load32(h + kRawWidth), load32(h + kRawChannels)};
  // Three 32-bit sides multiplied in 64 bits can wrap (2^22 x 2^22 x 2^20 is 0): a wrapped
  // shape would match empty samples and then describe petabytes to whoever allocates for it.
  const std::uint64_t plane = std::uint64_t{ds->shape_.height} * ds->shape_.width;
  if (ds->format_ == SampleFormat::raw_u8 && ds->shape_.channels != 0 &&
      plane > ~std::uint64_t{0} / ds->shape_.channels) {
    bad_pack(path, "raw shape " + std::to_string(ds->shape_.height) + "x" +
                       std::to_string(ds->shape_.width) + "x" +
                       std::to_string(ds->shape_.channels) + " describes more than 2^64 bytes");
  }

  ds->payload_ = bytes.subspan(payload_offset, payload_bytes);
  ds->entries_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* e = index.data() + i * kPackIndexEntryBytes;
    Entry& entry = ds->entries_[i];
    entry = {load64(e), load32(e + 8), static_cast<std::int32_t>(load32(e + 12)), load32(e + 16)};
    if (entry.offset > payload_bytes || entry.size > payload_bytes - entry.offset) {
      bad_pack(path, "sample " + std::to_string(i) + " lies outside the payload");
    }
    if (entry.label < 0 || static_cast<std::size_t>(entry.label) >= ds->class_names_.size()) {
      bad_pack(path, "sample " + std::to_string(i) + " has label " + std::to_string(entry.label) +
                         " outside 0.." + std::to_string(ds->class_names_.size()) + "-1");
    }
    if (ds->format_ == SampleFormat::raw_u8 && entry.size != ds->shape_.bytes()) {
      bad_pack(path, "sample " + std::to_string(i) + " has " + std::to_string(entry.size) +
                         " bytes, the raw shape needs " + std::to_string(ds->shape_.bytes()));
    }
  }
  ds->file_.advise_random();
  return ds;
}

std::optional<RawShape> PackedDataset::raw_shape() const {
  if (format_ != SampleFormat::raw_u8) return std::nullopt;
  return shape_;
}

Sample PackedDataset::read(std::size_t index, std::vector<std::uint8_t>&) const {
  const Entry& e = entries_[index];
  const std::span<const std::uint8_t> bytes = payload_.subspan(e.offset, e.size);
  if (verify_reads_ && crc32c(bytes) != e.crc) {
    throw Error(ErrorKind::usage, sample_name(index) +
                                      ": checksum mismatch (the pack is damaged;"
                                      " run verify)");
  }
  return {bytes, e.label};
}

std::string PackedDataset::sample_name(std::size_t index) const {
  return file_.path().string() + "#" + std::to_string(index);
}

bool PackedDataset::verify_sample(std::size_t index) const {
  const Entry& e = entries_[index];
  return crc32c(payload_.subspan(e.offset, e.size)) == e.crc;
}

VerifyReport verify_pack(const fs::path& path, const Progress& progress) {
  const std::unique_ptr<PackedDataset> pack = PackedDataset::open(path);
  VerifyReport report;
  std::vector<std::uint8_t> scratch;
  for (std::size_t i = 0; i < pack->size(); ++i) {
    if (!pack->verify_sample(i)) report.bad_samples.push_back(i);
    report.bytes += pack->read(i, scratch).bytes.size();
    ++report.samples;
    if (progress && (i % 4096 == 4095 || i + 1 == pack->size())) progress(i + 1, pack->size());
  }
  return report;
}

}  // namespace gb::data
