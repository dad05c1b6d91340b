// data/idx.cpp: IDX header validation and the IDX dataset.
#include "data/idx.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/error.hpp"
#include "data/gzip.hpp"

namespace gb::data {
namespace {

std::uint32_t load_be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

std::string type_name(std::uint8_t code) {
  switch (code) {
    case 0x08:
      return "uint8";
    case 0x09:
      return "int8";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown type";
  }
}

std::string dims_text(const std::vector<std::uint32_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw Error(ErrorKind::usage, name + ": " + what);
}

std::filesystem::path find_variant(const std::filesystem::path& dir, const std::string& base) {
  for (const std::string& suffix : {std::string(), std::string(".gz")}) {
    const std::filesystem::path p = dir / (base + suffix);
    if (std::filesystem::exists(p)) return p;
  }
  throw Error(ErrorKind::usage, (dir / base).string() + "[.gz]: no such file");
}

}  // namespace

namespace {

// The header alone: magic, element type, dimensions and the data size they describe (checked
// for overflow: 32-bit dimensions multiplied in 64 bits can wrap to a small, plausible size).
struct IdxHeader {
  std::vector<std::uint32_t> dims;
  std::size_t bytes = 0;          // the header's own size
  std::uint64_t elements = 0;     // data bytes (uint8 elements)
};

IdxHeader parse_idx_header(std::span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.size() < 4) {
    fail(name, "truncated IDX header: " + std::to_string(bytes.size()) + " bytes");
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "%02X %02X %02X %02X", bytes[0], bytes[1], bytes[2],
                  bytes[3]);
    fail(name, std::string("not an IDX file (magic ") + magic + ", expected 00 00 08 <ndims>)");
  }
  if (bytes[2] != 0x08) {
    fail(name, "IDX element type " + type_name(bytes[2]) + " is not supported (only uint8)");
  }
  const std::size_t ndims = bytes[3];
  if (ndims == 0) fail(name, "IDX header has 0 dimensions");
  const std::size_t header = 4 + 4 * ndims;
  if (bytes.size() < header) {
    fail(name, "truncated IDX header: " + std::to_string(ndims) + " dimensions need " +
                   std::to_string(header) + " bytes, file has " + std::to_string(bytes.size()));
  }
  IdxHeader h;
  h.bytes = header;
  h.elements = 1;
  // The product of the non-zero dimensions too: a zero count must not let a sample shape that
  // wraps past 2^64 through (it becomes the dataset's raw shape).
  std::uint64_t nonzero = 1;
  for (std::size_t d = 0; d < ndims; ++d) {
    h.dims.push_back(load_be32(bytes.data() + 4 + 4 * d));
    const std::uint64_t dim = h.dims.back();
    if (dim != 0 && nonzero > std::numeric_limits<std::uint64_t>::max() / dim)
      fail(name, "the header's dimensions " + dims_text(h.dims) +
                     " describe more than 2^64 bytes");
    if (dim != 0) nonzero *= dim;
    h.elements *= dim;
  }
  return h;
}

}  // namespace

IdxArray parse_idx(std::span<const std::uint8_t> bytes, const std::string& name) {
  const IdxHeader h = parse_idx_header(bytes, name);
  const std::size_t header = h.bytes;
  const std::uint64_t elements = h.elements;
  IdxArray a;
  a.dims = h.dims;
  const std::uint64_t have = bytes.size() - header;
  if (have < elements) {
    fail(name, "truncated: header says " + dims_text(a.dims) + " = " + std::to_string(elements) +
                   " bytes of data, file has " + std::to_string(have));
  }
  if (have > elements) {
    fail(name, std::to_string(have - elements) + " bytes after the " + dims_text(a.dims) +
                   " array the header describes");
  }
  a.data = bytes.subspan(header);
  return a;
}

std::vector<std::string> fashion_mnist_class_names() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

std::span<const std::uint8_t> IdxDataset::Contents::bytes() const {
  return inflated.empty() ? mapped.bytes() : std::span<const std::uint8_t>(inflated);
}

IdxDataset::Contents IdxDataset::load(const std::filesystem::path& path) {
  Contents c;
  c.mapped = MappedFile::open(path);
  if (is_gzip(c.mapped.bytes())) {
    // Inflated no further than the header says: a small .gz must not grow to gigabytes before
    // its size is checked. The header itself is at most 4 + 4 x 255 bytes.
    c.mapped.advise_sequential();
    const std::vector<std::uint8_t> head = gunzip(c.mapped.bytes(), path.string(), 4 + 4 * 255,
                                                  GunzipLimit::stop);
    const IdxHeader h = parse_idx_header(head, path.string());
    if (h.elements > std::numeric_limits<std::uint64_t>::max() - h.bytes)
      fail(path.string(), "the header's dimensions " + dims_text(h.dims) +
                              " describe more than 2^64 bytes");
    c.inflated = gunzip(c.mapped.bytes(), path.string(), h.bytes + h.elements, GunzipLimit::fail);
    c.mapped = MappedFile();
  }
  return c;
}

std::unique_ptr<IdxDataset> IdxDataset::open(const std::filesystem::path& images,
                                             const std::filesystem::path& labels,
                                             const IdxOptions& options) {
  std::unique_ptr<IdxDataset> ds(new IdxDataset());
  ds->images_path_ = images;
  ds->labels_path_ = labels;
  ds->images_ = load(images);
  ds->labels_file_ = load(labels);

  const IdxArray img = parse_idx(ds->images_.bytes(), images.string());
  const IdxArray lab = parse_idx(ds->labels_file_.bytes(), labels.string());
  if (img.dims.size() != 3 && img.dims.size() != 4) {
    fail(images.string(),
         "images need 3 dimensions (count x height x width) or 4 (x channels),"
         " header has " +
             std::to_string(img.dims.size()));
  }
  if (lab.dims.size() != 1) {
    fail(labels.string(),
         "labels need 1 dimension (count), header has " + std::to_string(lab.dims.size()));
  }
  if (img.dims[0] != lab.dims[0]) {
    throw Error(ErrorKind::usage, images.string() + " has " + std::to_string(img.dims[0]) +
                                      " images but " + labels.string() + " has " +
                                      std::to_string(lab.dims[0]) + " labels");
  }
  ds->shape_ = {img.dims[1], img.dims[2], img.dims.size() == 4 ? img.dims[3] : 1u};
  ds->pixels_ = img.data;
  ds->labels_ = lab.data;

  const std::uint8_t max_label =
      lab.data.empty() ? 0 : *std::max_element(lab.data.begin(), lab.data.end());
  if (options.class_names.empty()) {
    ds->class_names_ = numeric_class_names(lab.data.empty() ? 0 : std::size_t{max_label} + 1);
  } else {
    if (max_label >= options.class_names.size()) {
      fail(labels.string(), "label " + std::to_string(max_label) + " is out of range for " +
                                std::to_string(options.class_names.size()) + " class names");
    }
    ds->class_names_ = options.class_names;
  }
  return ds;
}

std::string IdxDataset::source() const {
  return images_path_.string() + " + " + labels_path_.string();
}

Sample IdxDataset::read(std::size_t index, std::vector<std::uint8_t>&) const {
  const std::size_t n = shape_.bytes();
  return {pixels_.subspan(index * n, n), labels_[index]};
}

std::string IdxDataset::sample_name(std::size_t index) const {
  return images_path_.string() + "#" + std::to_string(index);
}

std::unique_ptr<IdxDataset> open_idx_split(const std::filesystem::path& dir,
                                           const std::string& split, const IdxOptions& options) {
  const std::filesystem::path images = find_variant(dir, split + "-images-idx3-ubyte");
  const std::filesystem::path labels = find_variant(dir, split + "-labels-idx1-ubyte");
  return IdxDataset::open(images, labels, options);
}

}  // namespace gb::data
