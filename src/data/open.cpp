// data/open.cpp: format recognition for open_dataset().
#include "data/open.hpp"

#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "data/idx.hpp"
#include "data/image_folder.hpp"
#include "data/pack.hpp"
#include "data/webdataset.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

bool has_file(const fs::path& dir, const std::string& base) {
  std::error_code ec;
  return fs::exists(dir / base, ec) || fs::exists(dir / (base + ".gz"), ec);
}

bool has_tar(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".tar") return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Dataset> open_dataset(const DatasetSpec& spec) {
  const fs::path& p = spec.path;
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) {
    const std::vector<std::uint8_t> head = read_file_prefix(p, 8);
    if (head.size() == 8 && std::memcmp(head.data(), "GBPACK\0\0", 8) == 0) {
      return PackedDataset::open(p, {.verify_reads = spec.verify_reads});
    }
    if (p.extension() == ".tar") return WebDataset::open({p}, {.strict = spec.strict});
    throw Error(ErrorKind::usage, p.string() + ": neither a gpubase pack nor a .tar shard");
  }
  if (!fs::is_directory(p, ec)) {
    if (fs::exists(p, ec))  // a device, a FIFO, a socket: there, but not a dataset
      throw Error(ErrorKind::usage, p.string() + ": not a regular file or a folder: not a dataset");
    throw Error(ErrorKind::usage, p.string() + ": no such file or directory");
  }
  if (has_file(p, spec.split + "-images-idx3-ubyte")) return open_idx_split(p, spec.split);
  if (has_tar(p)) return WebDataset::open_dir(p, {.strict = spec.strict});
  return ImageFolderDataset::open(p, {.strict = spec.strict});
}

}  // namespace gb::data
