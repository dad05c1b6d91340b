// tests/unit/test_data_util.hpp: helpers for the dataset tests: a temporary directory removed at
// the end of the test, small real JPEGs (TurboJPEG), file writes, and where the Fashion-MNIST
// files are: $GPUBASE_FASHION_MNIST, else Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist, installed by scripts/install-deps.sh), else the copy
// scripts/make-deps.sh unpacks into the tree's .deps/.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/jpeg.hpp"

namespace gb::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gb_data_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& b) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::vector<std::uint8_t> bytes_of(const std::string& s) {
  return std::vector<std::uint8_t>(s.begin(), s.end());
}

// A real w x h JPEG whose pixels depend on `seed`, so different seeds give different bytes.
inline std::vector<std::uint8_t> small_jpeg(int w, int h, unsigned seed) {
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) {
    rgb[i] = static_cast<std::uint8_t>((i * 7 + seed * 31 + (i / 3 / w) * seed) & 0xFF);
  }
  std::vector<std::uint8_t> out;
  data::JpegEncoder().encode_rgb(rgb, w, h, 90, data::ChromaSubsampling::s420, out);
  return out;
}

inline std::filesystem::path fashion_mnist_dir() {
  if (const char* env = std::getenv("GPUBASE_FASHION_MNIST"); env && *env) return env;
  const std::filesystem::path system = "/usr/share/datasets/fashion-mnist";
  const std::filesystem::path deps = std::filesystem::path(GPUBASE_FIXTURES_DIR) / ".." / ".." /
                                     ".deps" / "usr" / "share" / "datasets" / "fashion-mnist";
  std::error_code ec;
  return !std::filesystem::exists(system, ec) && std::filesystem::exists(deps, ec) ? deps : system;
}

// Why a Fashion-MNIST test is skipped: the files are not there.
inline std::string no_fashion_mnist(const std::filesystem::path& dir) {
  return "no Fashion-MNIST at " + dir.string() +
         ": install Debian's dataset-fashion-mnist (scripts/install-deps.sh) or set "
         "GPUBASE_FASHION_MNIST";
}

// A small deterministic source for tests (SplitMix64); the loader uses its Philox generator.
class SplitMixSource {
 public:
  explicit SplitMixSource(std::uint64_t seed) : state_(seed) {}
  double uniform() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_;
};

}  // namespace gb::test
