// data/webdataset.cpp: grouping tar members into samples; the shard writer.
#include "data/webdataset.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <optional>
#include <system_error>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/tar.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

struct KeyExt {
  std::string key, ext;  // ext lower-cased, without the dot; empty when the name has none
};

KeyExt split_key(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string::npos) return {name, ""};
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return {name.substr(0, dot), ext};
}

// The class table has one name per label up to the largest: a .cls of 2,000,000,000 in a 10 KB
// shard must not allocate gigabytes. 2^20 classes is far above any classification set in use
// (ImageNet-21k has 21,841); a larger label is a bad sample, counted with the reason.
constexpr std::int32_t kMaxLabel = (1 << 20) - 1;

std::optional<std::int32_t> parse_cls(std::span<const std::uint8_t> bytes) {
  const char* b = reinterpret_cast<const char*>(bytes.data());
  const char* e = b + bytes.size();
  while (b < e && std::isspace(static_cast<unsigned char>(*b))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(e[-1]))) --e;
  std::int32_t v = 0;
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e || b == e || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::unique_ptr<WebDataset> WebDataset::open(const std::vector<fs::path>& shards,
                                             const WebDatasetOptions& options) {
  if (shards.empty()) throw Error(ErrorKind::usage, "WebDataset: no shards given");
  std::unique_ptr<WebDataset> ds(new WebDataset());
  for (const fs::path& p : shards) {
    throw_if_cancelled();  // thousands of shards: each one's headers are read
    try {
      ds->shards_.push_back(MappedFile::open(p));
    } catch (const Error& e) {
      if (options.strict) throw;
      ++ds->scan_.unreadable;
      ds->scan_.note(e.what());
      continue;
    }
    ds->index_shard(static_cast<std::uint32_t>(ds->shards_.size() - 1), options.strict);
    ds->shards_.back().advise_random();
  }
  std::int32_t max_label = -1;
  for (const Entry& e : ds->entries_) max_label = std::max(max_label, e.label);
  if (options.class_names.empty()) {
    ds->class_names_ = numeric_class_names(static_cast<std::size_t>(max_label + 1));
  } else {
    if (max_label >= static_cast<std::int32_t>(options.class_names.size())) {
      throw Error(ErrorKind::usage,
                  ds->source() + ": label " + std::to_string(max_label) + " is out of range for " +
                      std::to_string(options.class_names.size()) + " class names");
    }
    ds->class_names_ = options.class_names;
  }
  return ds;
}

std::unique_ptr<WebDataset> WebDataset::open_dir(const fs::path& dir,
                                                 const WebDatasetOptions& options) {
  std::vector<fs::path> shards;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".tar") shards.push_back(e.path());
  }
  if (ec) throw Error(ErrorKind::usage, dir.string() + ": cannot list: " + ec.message());
  if (shards.empty()) throw Error(ErrorKind::usage, dir.string() + ": no .tar shards");
  std::sort(shards.begin(), shards.end());
  return open(shards, options);
}

void WebDataset::index_shard(std::uint32_t shard_index, bool strict) {
  const MappedFile& shard = shards_[shard_index];
  const std::string shard_name = shard.path().string();
  const TarIndex tar = index_tar(shard.bytes());
  scan_.ignored += tar.ignored;

  auto problem = [&](std::size_t& counter, const std::string& what) {
    if (strict) throw Error(ErrorKind::usage, what);
    ++counter;
    scan_.note(what);
  };

  // A sample's members are adjacent: when the member cut short belongs to the last sample
  // indexed, that sample is incomplete and is dropped with the rest of the shard.
  std::size_t end = tar.members.size();
  if (tar.stop != TarIndex::Stop::none) {
    problem(tar.stop == TarIndex::Stop::truncated ? scan_.truncated : scan_.corrupt,
            shard_name + ": " + tar.stop_reason);
    if (end > 0 && !tar.stop_member.empty()) {
      const std::string cut_key = split_key(tar.stop_member).key;
      while (end > 0 && split_key(tar.members[end - 1].name).key == cut_key) --end;
    }
  }

  std::size_t i = 0;
  while (i < end) {
    const std::string key = split_key(tar.members[i].name).key;
    const TarMember* image = nullptr;
    const TarMember* cls = nullptr;
    std::string twice;  // a member kind the sample has more than once
    for (; i < end; ++i) {
      const KeyExt ke = split_key(tar.members[i].name);
      if (ke.key != key) break;
      if (ke.ext == "jpg" || ke.ext == "jpeg") {
        if (image && twice.empty()) twice = "image";
        image = &tar.members[i];
      } else if (ke.ext == "cls") {
        if (cls && twice.empty()) twice = ".cls";
        cls = &tar.members[i];
      } else {
        ++scan_.ignored;
      }
    }
    const std::string where = shard_name + ":" + key;
    // Two images (or labels) under one key: which one is the sample is not for gpubase to guess.
    if (!twice.empty()) {
      problem(scan_.corrupt, where + ": more than one " + twice + " member under one key");
      continue;
    }
    if (image == nullptr) {
      ++scan_.ignored;
      continue;
    }
    const std::span<const std::uint8_t> bytes = shard.bytes().subspan(image->offset, image->size);
    if (!is_jpeg(bytes)) {
      problem(scan_.not_jpeg, where + ": not a JPEG (no FF D8 FF start-of-image marker)");
      continue;
    }
    const std::optional<std::int32_t> label =
        cls ? parse_cls(shard.bytes().subspan(cls->offset, cls->size)) : std::nullopt;
    if (!label) {
      problem(scan_.unlabeled,
              where + (cls ? ": .cls is not a non-negative integer" : ": no .cls member"));
      continue;
    }
    if (*label > kMaxLabel) {
      problem(scan_.unlabeled, where + ": .cls " + std::to_string(*label) +
                                   " is above the largest label gpubase accepts (" +
                                   std::to_string(kMaxLabel) + ")");
      continue;
    }
    entries_.push_back({shard_index, *label, image->offset, image->size, keys_.size(),
                        static_cast<std::uint32_t>(key.size())});
    keys_ += key;
  }
}

std::string WebDataset::source() const {
  if (shards_.empty()) return "(no readable shard)";
  std::string s = shards_.front().path().string();
  if (shards_.size() > 1) s += " (+" + std::to_string(shards_.size() - 1) + " shards)";
  return s;
}

Sample WebDataset::read(std::size_t index, std::vector<std::uint8_t>&) const {
  const Entry& e = entries_[index];
  return {shards_[e.shard].bytes().subspan(e.offset, e.size), e.label};
}

std::string WebDataset::sample_name(std::size_t index) const {
  const Entry& e = entries_[index];
  return shards_[e.shard].path().string() + ":" + keys_.substr(e.key_offset, e.key_length);
}

std::vector<fs::path> write_webdataset(const Dataset& dataset, const fs::path& dir,
                                       std::size_t samples_per_shard, const Progress& progress) {
  if (dataset.format() != SampleFormat::jpeg) {
    throw Error(ErrorKind::usage, dataset.source() + ": " +
                                      std::string(to_string(dataset.format())) +
                                      " samples cannot be written as WebDataset .jpg members");
  }
  samples_per_shard = std::max<std::size_t>(samples_per_shard, 1);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::usage, dir.string() + ": " + ec.message());
  std::vector<fs::path> shards;
  std::vector<std::uint8_t> scratch;
  char name[32];
  for (std::size_t first = 0; first < dataset.size(); first += samples_per_shard) {
    std::snprintf(name, sizeof name, "shard-%06zu.tar", shards.size());
    shards.push_back(dir / name);
    TarWriter tar(shards.back());
    const std::size_t last = std::min(dataset.size(), first + samples_per_shard);
    for (std::size_t i = first; i < last; ++i) {
      const Sample s = dataset.read(i, scratch);
      std::snprintf(name, sizeof name, "%08zu", i);
      const std::string cls = std::to_string(s.label);
      tar.add(std::string(name) + ".jpg", s.bytes);
      tar.add(std::string(name) + ".cls",
              {reinterpret_cast<const std::uint8_t*>(cls.data()), cls.size()});
    }
    tar.finish();
    if (progress) progress(last, dataset.size());
  }
  return shards;
}

}  // namespace gb::data
