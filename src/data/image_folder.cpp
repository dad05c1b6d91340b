// data/image_folder.cpp: the ImageFolder scan (class directories, SOI check) and writer.
#include "data/image_folder.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <system_error>
#include <utility>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/mapped_file.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// A problem found by the scan: fail (strict) or count and remember it.
void problem(ScanReport& scan, std::size_t& counter, bool strict, const std::string& what) {
  if (strict) throw Error(ErrorKind::usage, what);
  ++counter;
  scan.note(what);
}

std::string safe_dir_name(const std::string& name, std::size_t label) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return std::to_string(label);
  }
  return name;
}

}  // namespace

std::unique_ptr<ImageFolderDataset> ImageFolderDataset::open(const fs::path& root,
                                                             const OpenOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw Error(ErrorKind::usage, root.string() + ": not a directory");
  }
  std::unique_ptr<ImageFolderDataset> ds(new ImageFolderDataset());
  ds->root_ = root;
  ScanReport& scan = ds->scan_;

  std::vector<std::string> classes;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (!hidden(e.path()) && e.is_directory(ec)) classes.push_back(e.path().filename().string());
  }
  if (ec) throw Error(ErrorKind::usage, root.string() + ": cannot list: " + ec.message());
  if (classes.empty()) {
    throw Error(ErrorKind::usage, root.string() +
                                      ": no class directories (expected "
                                      "root/<class>/<image>.jpg)");
  }
  std::sort(classes.begin(), classes.end());
  ds->class_names_ = classes;

  // Each directory is walked once, however many links reach it: a link back up the tree (a
  // loop) would otherwise be walked forever, and a second link to a class would read its images
  // again under another label. Identity is the directory's device and inode.
  // The root and every class directory are claimed first, so a link from inside one class to
  // the root or to another class is never walked from there.
  std::set<std::pair<dev_t, ino_t>> walked;
  const auto first_walk = [&](const fs::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return true;  // the walk reports what it cannot list
    return walked.emplace(st.st_dev, st.st_ino).second;
  };
  first_walk(root);
  std::vector<bool> duplicate_class(classes.size(), false);
  for (std::size_t label = 0; label < classes.size(); ++label)
    duplicate_class[label] = !first_walk(root / classes[label]);
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = root / classes[label];
    std::vector<fs::path> files;
    if (duplicate_class[label]) {
      ++scan.ignored;
      scan.note(class_dir.string() +
                ": the same directory as an earlier class (a link): its images count once");
      continue;
    }
    const auto walk_options = fs::directory_options::follow_directory_symlink |
                              fs::directory_options::skip_permission_denied;
    fs::recursive_directory_iterator it(class_dir, walk_options, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      throw_if_cancelled();  // a scan of a huge tree ends on Ctrl-C like every long loop
      if (hidden(it->path())) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      std::error_code type_ec;
      if (it->is_directory(type_ec)) {
        if (!first_walk(it->path())) {
          it.disable_recursion_pending();
          ++scan.ignored;
          scan.note(it->path().string() +
                    ": a directory already walked (a link loop or a "
                    "second link): walked once");
        }
        continue;
      }
      files.push_back(it->path());
    }
    if (ec) {
      problem(scan, scan.unreadable, options.strict,
              class_dir.string() + ": cannot list: " + ec.message());
      ec.clear();
    }
    std::sort(files.begin(), files.end());

    std::size_t jpegs = 0;
    for (const fs::path& file : files) {
      std::error_code st_ec;
      const fs::file_status st = fs::status(file, st_ec);
      if (st_ec || !fs::exists(st)) {
        problem(scan, scan.unreadable, options.strict,
                file.string() +
                    ": unreadable: " + (st_ec ? st_ec.message() : std::string("dangling link")));
        continue;
      }
      if (!fs::is_regular_file(st)) {
        ++scan.ignored;
        continue;
      }
      std::vector<std::uint8_t> head;
      try {
        head = read_file_prefix(file, 3);
      } catch (const Error& e) {
        problem(scan, scan.unreadable, options.strict, e.what());
        continue;
      }
      if (!is_jpeg(head)) {
        problem(scan, scan.not_jpeg, options.strict,
                file.string() + ": not a JPEG (no FF D8 FF start-of-image marker)");
        continue;
      }
      const std::string rel = file.lexically_relative(root).string();
      ds->entries_.push_back({ds->names_.size(), static_cast<std::uint32_t>(rel.size()),
                              static_cast<std::int32_t>(label), fs::file_size(file, st_ec)});
      ds->names_ += rel;
      ++jpegs;
    }
    if (jpegs == 0) {
      problem(scan, scan.empty_class_dirs, options.strict,
              class_dir.string() + ": empty class directory (no JPEG in it)");
    }
  }
  return ds;
}

fs::path ImageFolderDataset::path(std::size_t index) const {
  const Entry& e = entries_[index];
  return root_ / names_.substr(e.name_offset, e.name_length);
}

Sample ImageFolderDataset::read(std::size_t index, std::vector<std::uint8_t>& scratch) const {
  read_whole_file(path(index), scratch);
  return {scratch, entries_[index].label};
}

void write_image_folder(const Dataset& dataset, const fs::path& root, const Progress& progress) {
  if (dataset.format() != SampleFormat::jpeg) {
    throw Error(ErrorKind::usage, dataset.source() + ": " +
                                      std::string(to_string(dataset.format())) +
                                      " samples cannot be written as an ImageFolder of JPEGs");
  }
  std::vector<fs::path> dirs;
  for (std::size_t c = 0; c < dataset.num_classes(); ++c) {
    dirs.push_back(root / safe_dir_name(dataset.class_names()[c], c));
    std::error_code ec;
    fs::create_directories(dirs.back(), ec);
    if (ec) throw Error(ErrorKind::usage, dirs.back().string() + ": " + ec.message());
  }
  std::vector<std::uint8_t> scratch;
  char name[32];
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const Sample s = dataset.read(i, scratch);
    std::snprintf(name, sizeof name, "%08zu.jpg", i);
    write_whole_file(dirs.at(static_cast<std::size_t>(s.label)) / name, s.bytes);
    if (progress && (i % 256 == 255 || i + 1 == dataset.size())) progress(i + 1, dataset.size());
  }
}

}  // namespace gb::data
