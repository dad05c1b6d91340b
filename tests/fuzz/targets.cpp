// tests/fuzz/targets.cpp: see targets.hpp. The readers that take a path get the bytes through a
// file in a private temporary folder (rewritten for every input), exactly as a user's file
// reaches them; parse_idx and index_tar also get the bytes directly.
#include "targets.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "data/decode.hpp"
#include "data/idx.hpp"
#include "data/jpeg.hpp"
#include "data/pack.hpp"
#include "data/rng.hpp"
#include "data/tar.hpp"
#include "data/webdataset.hpp"

namespace gb::fuzz {

namespace {

namespace fs = std::filesystem;

// Samples read per input: enough to reach every reader path, bounded so one input stays fast.
constexpr std::size_t kMaxReads = 64;

// The private folder, made once per process and removed at exit.
const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "gb_fuzz_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch_dir(), ec);
    });
    return fs::path(tmpl);
  }();
  return dir;
}

fs::path write_scratch(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const fs::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) std::abort();
  return path;
}

// Every sample the dataset says it has (up to kMaxReads) is read, named and labelled.
void read_some(const data::Dataset& d) {
  std::vector<std::uint8_t> scratch;
  const std::size_t n = std::min(d.size(), kMaxReads);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      const data::Sample s = d.read(i, scratch);
      (void)s.bytes.size();
    } catch (const Error&) {
      // a damaged sample (a CRC mismatch) is reported, which is the point
    }
    (void)d.label(i);
    (void)d.sample_name(i);
  }
  (void)d.class_names().size();
}

}  // namespace

int gbpack(const std::uint8_t* data, std::size_t size) {
  const fs::path path = write_scratch("input.gbpack", data, size);
  try {
    data::PackOpenOptions o;
    o.verify_reads = true;
    const auto pack = data::PackedDataset::open(path, o);
    read_some(*pack);
    for (std::size_t i = 0; i < std::min(pack->size(), kMaxReads); ++i) (void)pack->verify_sample(i);
  } catch (const Error&) {
  }
  try {
    (void)data::verify_pack(path);
  } catch (const Error&) {
  }
  return 0;
}

int tar(const std::uint8_t* data, std::size_t size) {
  const data::TarIndex index = data::index_tar({data, size});
  for (const data::TarMember& m : index.members) {
    if (m.offset > size || m.size > size - m.offset) std::abort();  // a member outside the bytes
  }
  const fs::path path = write_scratch("shard-000000.tar", data, size);
  for (const bool strict : {false, true}) {
    try {
      data::WebDatasetOptions o;
      o.strict = strict;
      const auto ds = data::WebDataset::open({path}, o);
      read_some(*ds);
    } catch (const Error&) {
    }
  }
  return 0;
}

int idx(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::size_t split = std::min<std::size_t>(
      std::uint32_t{data[0]} | std::uint32_t{data[1]} << 8 | std::uint32_t{data[2]} << 16 |
          std::uint32_t{data[3]} << 24,
      size - 4);
  const std::uint8_t* images = data + 4;
  const std::uint8_t* labels = images + split;
  const std::size_t labels_size = size - 4 - split;
  for (const auto& [p, n] : {std::pair{images, split}, std::pair{labels, labels_size}}) {
    try {
      const data::IdxArray a = data::parse_idx({p, n}, "input");
      std::uint64_t elements = 1;
      for (const std::uint32_t d : a.dims) elements *= d;
      if (elements != a.data.size()) std::abort();  // the array must hold what its header says
    } catch (const Error&) {
    }
  }
  const fs::path images_path = write_scratch("images-idx3-ubyte", images, split);
  const fs::path labels_path = write_scratch("labels-idx1-ubyte", labels, labels_size);
  try {
    const auto ds = data::IdxDataset::open(images_path, labels_path);
    read_some(*ds);
  } catch (const Error&) {
  }
  return 0;
}

int jpeg(const std::uint8_t* data, std::size_t size) {
  static data::JpegDecoder decoder;
  static data::DecodeScratch scratch;
  const std::span<const std::uint8_t> bytes(data, size);
  (void)data::is_jpeg(bytes);
  if (const auto info = data::read_jpeg_header(bytes)) (void)info->width;
  (void)data::decode_jpeg_rgb(bytes, nullptr);
  try {
    (void)decoder.read_info(bytes);
  } catch (const Error&) {
  }
  std::vector<std::uint8_t> out(32 * 32 * 3);
  for (const bool train : {true, false}) {
    data::AugmentOptions o;
    o.out_w = o.out_h = 32;
    o.resize_shorter = 36;
    o.train = train;
    data::Philox rng(1, 0, size);
    try {
      (void)decoder.decode_augment(bytes, rng, o, out.data(), scratch);
    } catch (const Error&) {
    }
  }
  return 0;
}

int run_json(const std::uint8_t* data, std::size_t size) {
  const Json j = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const Run run = run_from_json(j);
    // What the reader accepts, the writer writes back and the reader reads again.
    (void)run_from_json(Json::parse(to_json(run).dump()));
  } catch (const Error&) {
  }
  return 0;
}

std::span<const Target> targets() {
  static constexpr Target kTargets[] = {
      {"gbpack", gbpack}, {"tar", tar}, {"idx", idx}, {"jpeg", jpeg}, {"run_json", run_json},
  };
  return kTargets;
}

}  // namespace gb::fuzz
