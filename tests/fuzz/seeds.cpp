// tests/fuzz/seeds.cpp: `fuzz_seeds OUTDIR` writes the fuzz targets' seed corpora,
// OUTDIR/<target>/<name>: valid files made by gpubase's own writers (a synthetic JPEG set, its
// pack, its WebDataset shard, an IDX pair plain and gzipped, a saved run) and, from each,
// structure-aware variants: every size, offset and count field set to edge values (0, 1, the
// file size, 2^31, 2^32 - 1, 2^63, 2^64 - 1, ...) with the checksums recomputed, so the fuzzer
// starts past the checksum and exercises the range checks behind it.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/result.hpp"
#include "data/crc32c.hpp"
#include "data/idx.hpp"
#include "data/image_folder.hpp"
#include "data/jpeg.hpp"
#include "data/pack.hpp"
#include "data/synth.hpp"
#include "data/tar.hpp"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

const std::uint64_t kEdge64[] = {0,
                                 1,
                                 4095,
                                 4096,
                                 0x7FFFFFFFull,
                                 0xFFFFFFFFull,
                                 0x100000000ull,
                                 0x7FFFFFFFFFFFFFFFull,
                                 0x8000000000000000ull,
                                 0xFFFFFFFFFFFFF000ull,
                                 0xFFFFFFFFFFFFFFFFull,
                                 0xFFFFFFFFFFFFFFFFull / 24,
                                 0xFFFFFFFFFFFFFFFFull / 24 + 1};
const std::uint32_t kEdge32[] = {0, 1, 3, 255, 4096, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_seed(const fs::path& dir, const std::string& name, const Bytes& b) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put64(Bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t get64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}
void put_be32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}

Bytes gzip(const Bytes& in) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  Bytes out(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// --- gbpack: the header's fields (docs/datasets.md) with the header CRC recomputed -----------
constexpr std::size_t kHeaderCrc = 108, kIndexCrc = 104, kIndexOffset = 64;

void reseal_header(Bytes& b) { put32(b, kHeaderCrc, gb::data::crc32c({b.data(), kHeaderCrc})); }

void pack_seeds(const fs::path& pack, const std::string& stem, const fs::path& out) {
  const Bytes valid = read_file(pack);
  write_seed(out, stem, valid);
  struct Field {
    const char* name;
    std::size_t at;
    bool wide;
  };
  const Field fields[] = {{"version", 8, false},         {"header_bytes", 12, false},
                          {"samples", 16, true},         {"classes", 24, false},
                          {"format", 28, false},         {"height", 32, false},
                          {"width", 36, false},          {"channels", 40, false},
                          {"checksum_kind", 44, false},  {"classes_offset", 48, true},
                          {"classes_bytes", 56, true},   {"index_offset", 64, true},
                          {"index_bytes", 72, true},     {"payload_offset", 80, true},
                          {"payload_bytes", 88, true},   {"alignment", 96, false}};
  for (const Field& f : fields) {
    int k = 0;
    if (f.wide) {
      for (const std::uint64_t v : kEdge64) {
        Bytes b = valid;
        put64(b, f.at, v);
        reseal_header(b);
        write_seed(out, stem + "-" + f.name + "-" + std::to_string(k++), b);
      }
      for (const std::uint64_t v : {std::uint64_t{valid.size()}, std::uint64_t{valid.size() + 1}}) {
        Bytes b = valid;
        put64(b, f.at, v);
        reseal_header(b);
        write_seed(out, stem + "-" + f.name + "-" + std::to_string(k++), b);
      }
    } else {
      for (const std::uint32_t v : kEdge32) {
        Bytes b = valid;
        put32(b, f.at, v);
        reseal_header(b);
        write_seed(out, stem + "-" + f.name + "-" + std::to_string(k++), b);
      }
    }
  }
  // The first index entry (offset u64, size u32, label u32) with both CRCs recomputed.
  const std::uint64_t index = get64(valid, kIndexOffset);
  const std::uint64_t index_bytes = get64(valid, 72);
  if (index_bytes >= 24 && index + index_bytes <= valid.size()) {
    int k = 0;
    for (const std::size_t field : {std::size_t{0}, std::size_t{8}, std::size_t{12}}) {
      for (const std::uint64_t v : kEdge64) {
        Bytes b = valid;
        if (field == 0) {
          put64(b, index, v);
        } else {
          put32(b, index + field, static_cast<std::uint32_t>(v));
        }
        put32(b, kIndexCrc, gb::data::crc32c({b.data() + index, index_bytes}));
        reseal_header(b);
        write_seed(out, stem + "-entry-" + std::to_string(k++), b);
      }
    }
  }
}

// --- tar: a member's size field and a .cls at edge values, the checksum recomputed ------------
void reseal_tar_header(Bytes& b, std::size_t at) {
  std::memset(b.data() + at + 148, ' ', 8);
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += b[at + i];
  std::snprintf(reinterpret_cast<char*>(b.data() + at + 148), 8, "%06o", sum);
  b[at + 155] = ' ';
}

void tar_seeds(const fs::path& dir, const fs::path& out) {
  const Bytes valid = read_file(dir / "shard.tar");
  write_seed(out, "valid", valid);
  int k = 0;
  for (const char* size : {"77777777777", "00000000000", "00000001000", "10000000000"}) {
    Bytes b = valid;
    std::memcpy(b.data() + 124, size, 11);
    b[135] = 0;
    reseal_tar_header(b, 0);
    write_seed(out, "size-octal-" + std::to_string(k++), b);
  }
  for (const std::uint8_t fill : {std::uint8_t{0x00}, std::uint8_t{0x7F}, std::uint8_t{0xFF}}) {
    Bytes b = valid;
    b[124] = 0x80;  // GNU base-256
    std::memset(b.data() + 125, fill, 11);
    reseal_tar_header(b, 0);
    write_seed(out, "size-base256-" + std::to_string(k++), b);
  }
  // Hand-written shards: labels at the edges, duplicate keys, long names.
  const Bytes jpeg = read_file(dir / "one.jpg");
  const std::string labels[] = {"0",          "1",          "1048575",     "1048576",
                                "100000000",  "2147483647", "2147483648",  "4294967296",
                                "-1",         "",           "12abc",       "99999999999999999999"};
  k = 0;
  for (const std::string& label : labels) {
    const fs::path p = dir / ("cls-" + std::to_string(k) + ".tar");
    {
      gb::data::TarWriter w(p);
      w.add("a.jpg", jpeg);
      w.add("a.cls", {reinterpret_cast<const std::uint8_t*>(label.data()), label.size()});
      w.finish();
    }
    write_seed(out, "cls-" + std::to_string(k++), read_file(p));
  }
  const std::string zero = "0";
  const std::span<const std::uint8_t> zero_bytes(reinterpret_cast<const std::uint8_t*>(zero.data()),
                                                 1);
  {
    gb::data::TarWriter w(dir / "dup.tar");
    w.add("a.jpg", jpeg);
    w.add("a.cls", zero_bytes);
    w.add("a.jpg", jpeg);
    w.add("a.cls", zero_bytes);
    w.finish();
  }
  write_seed(out, "duplicate-key", read_file(dir / "dup.tar"));
  for (const auto style : {gb::data::TarLongNames::pax, gb::data::TarLongNames::gnu}) {
    const fs::path p = dir / "long.tar";
    {
      gb::data::TarWriter w(p, style);
      const std::string key(300, 'k');
      w.add("dir/" + key + ".jpg", jpeg);
      w.add("dir/" + key + ".cls", zero_bytes);
      w.finish();
    }
    write_seed(out, style == gb::data::TarLongNames::pax ? "long-pax" : "long-gnu", read_file(p));
  }
}

// --- IDX: the images and labels files behind a 4-byte split, plain and gzipped ---------------
Bytes idx_file(std::uint8_t ndims, const std::vector<std::uint32_t>& dims, std::size_t data) {
  Bytes b(4 + 4 * std::size_t{ndims}, 0);
  b[2] = 0x08;
  b[3] = ndims;
  for (std::size_t i = 0; i < dims.size() && i < ndims; ++i) put_be32(b, 4 + 4 * i, dims[i]);
  for (std::size_t i = 0; i < data; ++i) b.push_back(static_cast<std::uint8_t>(i * 37 % 10));
  return b;
}

Bytes idx_pair(const Bytes& images, const Bytes& labels) {
  Bytes b(4);
  put32(b, 0, static_cast<std::uint32_t>(images.size()));
  b.insert(b.end(), images.begin(), images.end());
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

void idx_seeds(const fs::path& out) {
  const Bytes images = idx_file(3, {4, 5, 6}, 4 * 5 * 6);
  const Bytes images4 = idx_file(4, {2, 3, 3, 3}, 2 * 3 * 3 * 3);
  const Bytes labels = idx_file(1, {4}, 4);
  const Bytes labels2 = idx_file(1, {2}, 2);
  write_seed(out, "valid", idx_pair(images, labels));
  write_seed(out, "valid-channels", idx_pair(images4, labels2));
  write_seed(out, "valid-gzip", idx_pair(gzip(images), gzip(labels)));
  int k = 0;
  for (const std::uint32_t v : kEdge32) {
    for (std::size_t d = 0; d < 3; ++d) {
      std::vector<std::uint32_t> dims = {4, 5, 6};
      dims[d] = v;
      const Bytes bad = idx_file(3, dims, 4 * 5 * 6);
      write_seed(out, "dim-" + std::to_string(k), idx_pair(bad, labels));
      write_seed(out, "dim-gzip-" + std::to_string(k++), idx_pair(gzip(bad), gzip(labels)));
    }
  }
  // Dimensions whose product wraps past 2^64, and a small gzip claiming a huge array.
  write_seed(out, "dims-wrap",
             idx_pair(idx_file(4, {0xFFFFFFFFu, 0xFFFFFFFFu, 0x10000u, 0x10000u}, 16), labels));
  write_seed(out, "gzip-bomb", idx_pair(gzip(idx_file(3, {1, 1, 1}, 1 << 20)), gzip(labels)));
  for (const std::uint8_t nd : {std::uint8_t{0}, std::uint8_t{2}, std::uint8_t{5},
                                std::uint8_t{255}})
    write_seed(out, "ndims-" + std::to_string(nd), idx_pair(idx_file(nd, {4, 5, 6}, 8), labels));
}

// --- JPEG: small images in each subsampling, and their frame size at the edges ----------------
void jpeg_seeds(const fs::path& out) {
  using gb::data::ChromaSubsampling;
  gb::data::JpegEncoder enc;
  int k = 0;
  for (const auto s : {ChromaSubsampling::s420, ChromaSubsampling::s422, ChromaSubsampling::s444,
                       ChromaSubsampling::gray}) {
    for (const auto& [w, h] : {std::pair{17, 9}, std::pair{64, 48}}) {
      Bytes rgb(static_cast<std::size_t>(w) * h * 3);
      for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(i * 13);
      Bytes j;
      enc.encode_rgb(rgb, w, h, 80, s, j);
      write_seed(out, "valid-" + std::to_string(k++), j);
      // SOF0 (FF C0): length(2) precision(1) height(2) width(2)
      for (std::size_t i = 2; i + 9 < j.size(); ++i) {
        if (j[i] != 0xFF || j[i + 1] != 0xC0) continue;
        for (const std::uint16_t v : {std::uint16_t{0}, std::uint16_t{1}, std::uint16_t{65535}}) {
          Bytes b = j;
          b[i + 5] = b[i + 7] = static_cast<std::uint8_t>(v >> 8);
          b[i + 6] = b[i + 8] = static_cast<std::uint8_t>(v & 0xFF);
          write_seed(out, "sof-" + std::to_string(k++), b);
        }
        break;
      }
      Bytes cut(j.begin(), j.begin() + static_cast<std::ptrdiff_t>(j.size() / 2));
      write_seed(out, "truncated-" + std::to_string(k++), cut);
    }
  }
}

// --- run files: a run with every part, and its fields with the wrong types ---------------------
void run_seeds(const fs::path& out) {
  gb::Run run;
  run.command = "probe";
  run.started_at = "2026-01-01T00:00:00Z";
  gb::Result r = gb::Result::measured("probe.gemm.bf16.tflops", "GEMM bf16", "TFLOP/s", {1, 2, 3});
  r.param("n", 8192, "", 0);
  run.results.push_back(r);
  run.environment.push_back({"gpu.name", "GPU", "H200"});
  const gb::Json valid = gb::to_json(run);
  const auto seed = [&](const std::string& name, const gb::Json& j) {
    const std::string s = j.dump();
    write_seed(out, name, Bytes(s.begin(), s.end()));
  };
  seed("valid", valid);
  int k = 0;
  const gb::Json odd[] = {nullptr, "text", -1, 1e308, gb::Json::array(), gb::Json::object(),
                          18446744073709551615ull};
  for (const auto& [key, _] : valid.items()) {
    for (const gb::Json& v : odd) {
      gb::Json j = valid;
      j[key] = v;
      seed("field-" + std::to_string(k++), j);
    }
  }
  for (const auto& [key, _] : valid["results"][0].items()) {
    for (const gb::Json& v : odd) {
      gb::Json j = valid;
      j["results"][0][key] = v;
      seed("result-" + std::to_string(k++), j);
    }
  }
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  write_seed(out, "deep", Bytes(deep.begin(), deep.end()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUTDIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path work = out / "work";
  fs::remove_all(work);
  fs::create_directories(work);

  gb::data::SynthOptions so;
  so.output = work / "synth";
  so.images = 6;
  so.classes = 3;
  so.size_scale = 0.08;
  so.threads = 1;
  so.layout = gb::data::SynthLayout::both;
  gb::data::synth_dataset(so);
  const auto folder = gb::data::ImageFolderDataset::open(so.output / "image_folder");
  gb::data::pack_dataset(*folder, work / "jpeg.gbpack");
  pack_seeds(work / "jpeg.gbpack", "jpeg", out / "gbpack");

  fs::copy_file(so.output / "webdataset" / "shard-000000.tar", work / "shard.tar");
  std::vector<std::uint8_t> scratch;
  const gb::data::Sample one = folder->read(0, scratch);
  write_seed(work, "one.jpg", Bytes(one.bytes.begin(), one.bytes.end()));
  tar_seeds(work, out / "tar");

  write_seed(work, "images", idx_file(3, {4, 5, 6}, 4 * 5 * 6));
  write_seed(work, "labels", idx_file(1, {4}, 4));
  const auto idx = gb::data::IdxDataset::open(work / "images", work / "labels");
  gb::data::pack_dataset(*idx, work / "raw.gbpack");
  pack_seeds(work / "raw.gbpack", "raw", out / "gbpack");
  idx_seeds(out / "idx");
  jpeg_seeds(out / "jpeg");
  run_seeds(out / "run_json");
  fs::remove_all(work);
  for (const char* t : {"gbpack", "tar", "idx", "jpeg", "run_json"}) {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(out / t)) n += e.is_regular_file() ? 1 : 0;
    std::printf("%-9s %zu seeds\n", t, n);
  }
  return 0;
}
