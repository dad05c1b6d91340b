// cli/dataset_cmd.cpp: `gpubase dataset synth|pack|verify|info|export`, the data library on the
// command line. Every long operation reports through its Progress callback; the callback prints
// a line on stderr every 5 % and checks Ctrl-C (core/cancel), so a stop happens between samples.
// Outputs are never overwritten without --force, and an interrupted pack or export leaves no
// half-written output behind (pack_dataset writes "<file>.tmp" and removes it on an exception).
#include "cli/dataset_cmd.hpp"
#include "cli/option_checks.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "cli/help.hpp"
#include "cli/run_args.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/mapped_file.hpp"
#include "data/image_folder.hpp"
#include "data/open.hpp"
#include "data/pack.hpp"
#include "data/synth.hpp"
#include "data/webdataset.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

struct DatasetCli {
  std::FILE* out = stdout;  // results
  std::FILE* err = stderr;  // progress and notes
  CLI::App* synth = nullptr;
  CLI::App* pack = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* info = nullptr;
  CLI::App* export_cmd = nullptr;

  // Shared by the subcommands that take them.
  bool json = false;
  bool quiet = false;
  bool force = false;
  bool strict = false;
  std::string data;  // --data PATH (pack, export) or PATH (info, verify)
  std::string split = "train";

  // synth
  std::string synth_out;
  std::size_t images = 1000;
  std::size_t classes = 1000;
  std::uint64_t seed = 0;
  std::string layout = "folder";
  std::size_t images_per_shard = 1000;
  unsigned threads = 0;
  double scale = 1.0;

  // pack
  std::string pack_out;

  // export
  std::string to_folder;
  std::string to_shards;
};

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Decimal units, as file sizes are quoted for ImageNet (~110 KB per JPEG).
std::string human_bytes(double bytes) {
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.1f} KB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

void note(const DatasetCli& cli, const std::string& line) {
  if (cli.quiet) return;
  fmt::print(cli.err, "  {}\n", line);
  std::fflush(cli.err);
}

void print_json(const DatasetCli& cli, const Json& j) {
  fmt::print(cli.out, "{}\n", j.dump(2));
  std::fflush(cli.out);
}

// "<what>: 25 % (250 of 1000 images, 61/s, 12 s left)" when another 5 % is done and a second
// has passed since the last line, and at the end: a few lines however long it runs.
class ProgressPrinter {
 public:
  ProgressPrinter(const DatasetCli& cli, std::string what, std::string unit)
      : cli_(cli),
        what_(std::move(what)),
        unit_(std::move(unit)),
        start_(Clock::now()),
        last_line_(start_) {}

  void operator()(std::size_t done, std::size_t total) {
    if (cli_.quiet || total == 0) return;
    const int step = static_cast<int>(done * 20 / total);  // 5 % steps
    if (step <= last_step_ || done == 0) return;
    if (done < total && seconds_since(last_line_) < 1.0) return;
    last_step_ = step;
    last_line_ = Clock::now();
    const double s = seconds_since(start_);
    const double rate = s > 0 ? static_cast<double>(done) / s : 0;
    std::string line = fmt::format("{}: {:3d} % ({} of {} {}, {:.0f}/s", what_, step * 5, done,
                                   total, unit_, rate);
    if (done < total && rate > 0) {
      line += fmt::format(", {:.0f} s left", static_cast<double>(total - done) / rate);
    }
    note(cli_, line + ")");
  }

 private:
  const DatasetCli& cli_;
  std::string what_, unit_;
  Clock::time_point start_, last_line_;
  int last_step_ = 0;
};

// The callback handed to the library: progress line, then a stop if Ctrl-C was pressed.
data::Progress cancellable(ProgressPrinter& printer) {
  return [&printer](std::size_t done, std::size_t total) {
    printer(done, total);
    throw_if_cancelled();
  };
}

// --- outputs: refuse to overwrite ---

// An output directory may be created or be empty; anything else needs --force. Returns whether
// it existed (an interrupted export removes only a directory it created).
bool check_output_dir(const fs::path& dir, bool force, const char* option) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return false;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::usage,
                dir.string() + " (" + option + "): exists and is not a directory");
  }
  if (!force && !fs::is_empty(dir, ec)) {
    throw Error(ErrorKind::usage, dir.string() + " (" + option +
                                      "): exists and is not empty; add --force to write into it "
                                      "(files of the same names are replaced)");
  }
  return true;
}

void check_output_file(const fs::path& file, bool force) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw Error(ErrorKind::usage, file.string() + " (--out): is a directory; give a file name");
  }
  if (fs::exists(file, ec) && !force) {
    throw Error(ErrorKind::usage, file.string() + " (--out): exists; add --force to replace it");
  }
  // --force replaces a file, never a device, a FIFO or a socket (/dev/full would become a pack).
  if (fs::exists(file, ec) && !fs::is_regular_file(file, ec)) {
    throw Error(ErrorKind::usage,
                file.string() + " (--out): exists and is not a regular file; not replaced");
  }
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw Error(ErrorKind::usage,
                file.string() + " (--out): directory " + parent.string() + " does not exist");
  }
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// --- describing a dataset ---

std::string kind_text(const data::Dataset& ds) {
  if (ds.kind() == "image_folder") return "image_folder (ImageFolder tree)";
  if (ds.kind() == "idx") return "idx (MNIST-style IDX files)";
  if (ds.kind() == "pack") return "pack (gpubase .gbpack)";
  if (const auto* wds = dynamic_cast<const data::WebDataset*>(&ds)) {
    return fmt::format("webdataset ({} tar shard{})", wds->shard_count(),
                       wds->shard_count() == 1 ? "" : "s");
  }
  return std::string(ds.kind());
}

std::string format_text(const data::Dataset& ds) {
  if (const auto shape = ds.raw_shape()) {
    return fmt::format("raw uint8 pixels, {} x {} x {} (height x width x channels)", shape->height,
                       shape->width, shape->channels);
  }
  return std::string(data::to_string(ds.format())) + " files";
}

// Bytes of every sample without reading them: file sizes from the scan (ImageFolder), spans
// into the mapping (tar shards, packs: no page is touched), the shape (raw).
std::uint64_t total_sample_bytes(const data::Dataset& ds) {
  std::uint64_t sum = 0;
  if (const auto* folder = dynamic_cast<const data::ImageFolderDataset*>(&ds)) {
    for (std::size_t i = 0; i < ds.size(); ++i) sum += folder->file_bytes(i);
    return sum;
  }
  if (const auto shape = ds.raw_shape()) return std::uint64_t{ds.size()} * shape->bytes();
  std::vector<std::uint8_t> scratch;
  for (std::size_t i = 0; i < ds.size(); ++i) sum += ds.read(i, scratch).bytes.size();
  return sum;
}

struct ClassCounts {
  std::size_t min = 0, max = 0;
};

ClassCounts class_counts(const data::Dataset& ds) {
  std::vector<std::size_t> counts(ds.num_classes(), 0);
  for (std::size_t i = 0; i < ds.size(); ++i) {
    const auto label = static_cast<std::size_t>(ds.label(i));
    if (label < counts.size()) ++counts[label];
  }
  if (counts.empty()) return {};
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  return {*lo, *hi};
}

std::string classes_text(const data::Dataset& ds) {
  constexpr std::size_t kShown = 5;
  const auto& names = ds.class_names();
  std::string text = std::to_string(names.size());
  for (std::size_t c = 0; c < names.size() && c < kShown; ++c) {
    text += (c == 0 ? ": " : ", ") + names[c];
  }
  if (names.size() > kShown) text += ", ...";
  const ClassCounts counts = class_counts(ds);
  if (counts.min == counts.max) {
    text += fmt::format(" ({} samples each)", counts.min);
  } else {
    text += fmt::format(" ({} to {} samples per class)", counts.min, counts.max);
  }
  return text;
}

std::string scan_text(const data::ScanReport& s) {
  std::vector<std::string> parts;
  const auto add = [&](std::size_t n, const char* what) {
    if (n != 0) parts.push_back(fmt::format("{} {}", n, what));
  };
  add(s.not_jpeg, "not a JPEG");
  add(s.unreadable, "unreadable");
  add(s.truncated, "truncated");
  add(s.corrupt, "corrupt");
  add(s.unlabeled, "without a label");
  std::string text;
  if (s.skipped() != 0) {
    text = fmt::format("{} sample{} skipped (", s.skipped(), s.skipped() == 1 ? "" : "s");
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : ", ") + parts[i];
    text += ")";
  }
  if (s.empty_class_dirs != 0) {
    text += fmt::format("{}{} empty class director{}", text.empty() ? "" : "; ", s.empty_class_dirs,
                        s.empty_class_dirs == 1 ? "y" : "ies");
  }
  if (s.ignored != 0) {
    text += fmt::format("{}{} other entr{} ignored", text.empty() ? "" : "; ", s.ignored,
                        s.ignored == 1 ? "y" : "ies");
  }
  return text.empty() ? "nothing skipped" : text;
}

Json scan_json(const data::ScanReport& s) {
  Json j;
  j["skipped"] = s.skipped();
  j["not_jpeg"] = s.not_jpeg;
  j["unreadable"] = s.unreadable;
  j["truncated"] = s.truncated;
  j["corrupt"] = s.corrupt;
  j["unlabeled"] = s.unlabeled;
  j["empty_class_dirs"] = s.empty_class_dirs;
  j["ignored"] = s.ignored;
  j["examples"] = s.examples;
  return j;
}

// "scan      <summary>" and the first examples, in the two-column layout of info and pack.
void print_scan(const DatasetCli& cli, const data::ScanReport& s) {
  constexpr std::size_t kExamples = 5;
  fmt::print(cli.out, "scan      {}\n", scan_text(s));
  for (std::size_t i = 0; i < s.examples.size() && i < kExamples; ++i) {
    fmt::print(cli.out, "            {}\n", s.examples[i]);
  }
  if (s.examples.size() > kExamples) {
    fmt::print(cli.out, "            ... (first {} of the problems shown; --json lists {})\n",
               kExamples, s.examples.size());
  }
}

std::unique_ptr<data::Dataset> open_input(const DatasetCli& cli, const std::string& path) {
  note(cli, "opening " + path);
  return data::open_dataset({.path = path, .split = cli.split, .strict = cli.strict});
}

// --- subcommands ---

data::SynthLayout parse_layout(const std::string& layout) {
  if (layout == "shards") return data::SynthLayout::webdataset;
  if (layout == "both") return data::SynthLayout::both;
  return data::SynthLayout::image_folder;
}

int run_synth(const DatasetCli& cli) {
  const fs::path out = cli.synth_out;
  check_output_dir(out, cli.force, "--out");
  data::SynthOptions options;
  options.output = out;
  options.images = cli.images;
  options.classes = cli.classes;
  options.seed = cli.seed;
  options.layout = parse_layout(cli.layout);
  // Workers take images in units of one shard; without shards, small units keep every thread
  // busy (1,000 images in units of 1,000 would run on one thread).
  options.images_per_shard =
      options.layout == data::SynthLayout::image_folder ? 16 : cli.images_per_shard;
  options.threads = cli.threads;
  options.size_scale = cli.scale;

  ProgressPrinter printer(cli, "synth", "images");
  std::size_t written = 0;
  data::SynthSummary s;
  try {
    s = data::synth_dataset(options, [&](std::size_t done, std::size_t n) {
      printer(done, n);
      written = done;
      throw_if_cancelled();  // synth_dataset joins its workers, then passes this on
    });
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::interrupted) throw;
    throw Error(ErrorKind::interrupted,
                "interrupted by the user (Ctrl-C): " + out.string() + " holds a partial set (" +
                    std::to_string(written) + " of " + std::to_string(options.images) +
                    " images); delete it, or run again with --force (the same seed writes the "
                    "same bytes)");
  }
  const double rate = s.seconds > 0 ? static_cast<double>(s.images) / s.seconds : 0;

  if (cli.json) {
    Json j;
    j["command"] = "dataset synth";
    j["output"] = out.string();
    j["layout"] = cli.layout;
    j["images"] = s.images;
    j["classes"] = std::min(cli.classes, cli.images);
    j["seed"] = cli.seed;
    j["total_bytes"] = s.total_bytes;
    j["mean_bytes"] = s.mean_bytes;
    j["min_bytes"] = s.min_bytes;
    j["p10_bytes"] = s.p10_bytes;
    j["median_bytes"] = s.median_bytes;
    j["p90_bytes"] = s.p90_bytes;
    j["max_bytes"] = s.max_bytes;
    j["mean_width"] = s.mean_width;
    j["mean_height"] = s.mean_height;
    j["seconds"] = s.seconds;
    j["images_per_s"] = rate;
    print_json(cli, j);
    return 0;
  }
  std::string where = out.string();
  if (options.layout == data::SynthLayout::both) {
    where = (out / "image_folder").string() + " and " + (out / "webdataset").string();
  }
  fmt::print(cli.out, "wrote     {} images in {} classes ({} layout) to {}\n", s.images,
             std::min(cli.classes, cli.images), cli.layout, where);
  fmt::print(cli.out, "size      mean {}; p10 {}, median {}, p90 {} (min {}, max {})\n",
             human_bytes(s.mean_bytes), human_bytes(static_cast<double>(s.p10_bytes)),
             human_bytes(static_cast<double>(s.median_bytes)),
             human_bytes(static_cast<double>(s.p90_bytes)),
             human_bytes(static_cast<double>(s.min_bytes)),
             human_bytes(static_cast<double>(s.max_bytes)));
  fmt::print(cli.out, "pixels    mean {:.0f} x {:.0f} (width x height)\n", s.mean_width,
             s.mean_height);
  fmt::print(cli.out, "total     {} in {:.1f} s: {:.0f} images/s\n",
             human_bytes(static_cast<double>(s.total_bytes)), s.seconds, rate);
  std::fflush(cli.out);
  return 0;
}

int run_pack(const DatasetCli& cli) {
  const fs::path out = cli.pack_out;
  check_output_file(out, cli.force);  // before a scan that may take minutes
  if (same_file(cli.data, out)) {
    throw Error(ErrorKind::usage, out.string() + " (--out): is the input itself");
  }
  const auto ds = open_input(cli, cli.data);
  if (!cli.json) {
    fmt::print(cli.out, "source    {}: {}, {} samples, {} classes, {}\n", cli.data, kind_text(*ds),
               ds->size(), ds->num_classes(), format_text(*ds));
    print_scan(cli, ds->scan_report());
    std::fflush(cli.out);
  }
  if (ds->size() == 0) {
    throw Error(ErrorKind::usage,
                cli.data + ": no samples to pack (" + scan_text(ds->scan_report()) + ")");
  }
  ProgressPrinter printer(cli, "pack", "samples");
  const auto start = Clock::now();
  const data::PackSummary s = data::pack_dataset(*ds, out, {}, cancellable(printer));
  const double seconds = seconds_since(start);
  const double mbps = seconds > 0 ? static_cast<double>(s.payload_bytes) / seconds / 1e6 : 0;

  if (cli.json) {
    Json j;
    j["command"] = "dataset pack";
    j["source"] = cli.data;
    j["kind"] = ds->kind();
    j["output"] = out.string();
    j["samples"] = s.samples;
    j["classes"] = ds->num_classes();
    j["format"] = data::to_string(ds->format());
    j["payload_bytes"] = s.payload_bytes;
    j["file_bytes"] = s.file_bytes;
    j["seconds"] = seconds;
    j["scan"] = scan_json(ds->scan_report());
    print_json(cli, j);
    return 0;
  }
  fmt::print(cli.out, "packed    {} samples, {} of samples, {} file: {}\n", s.samples,
             human_bytes(static_cast<double>(s.payload_bytes)),
             human_bytes(static_cast<double>(s.file_bytes)), out.string());
  fmt::print(cli.out, "time      {:.2f} s ({:.0f} MB/s)\n", seconds, mbps);
  std::fflush(cli.out);
  return 0;
}

int run_verify(const DatasetCli& cli) {
  const fs::path file = cli.data;
  std::error_code ec;
  if (!fs::exists(file, ec)) throw Error(ErrorKind::usage, file.string() + ": no such file");
  if (fs::is_directory(file, ec)) {
    throw Error(ErrorKind::usage, file.string() + ": is a directory, not a .gbpack file");
  }
  ProgressPrinter printer(cli, "verify", "samples");
  const auto start = Clock::now();
  data::VerifyReport r;
  try {
    r = data::verify_pack(file, cancellable(printer));
  } catch (const Error& e) {
    // A file with the pack magic whose header or index does not hold up is what verify is for:
    // a failed check (1), not bad input (2).
    const std::vector<std::uint8_t> head = read_file_prefix(file, 8);
    const bool is_pack = head.size() == 8 && std::memcmp(head.data(), "GBPACK\0\0", 8) == 0;
    if (e.kind() != ErrorKind::usage || !is_pack) throw;
    if (cli.json) {
      print_json(cli, {{"command", "dataset verify"},
                       {"file", file.string()},
                       {"ok", false},
                       {"error", e.what()}});
    } else {
      fmt::print(cli.out, "FAIL: {}\n", e.what());
      std::fflush(cli.out);
    }
    return static_cast<int>(ExitCode::check_failed);
  }
  const double seconds = seconds_since(start);

  if (cli.json) {
    Json j;
    j["command"] = "dataset verify";
    j["file"] = file.string();
    j["ok"] = r.ok();
    j["samples"] = r.samples;
    j["bytes"] = r.bytes;
    j["bad_samples"] = r.bad_samples;
    j["seconds"] = seconds;
    print_json(cli, j);
  } else if (r.ok()) {
    fmt::print(cli.out, "ok: {} samples ({}) match their checksums ({:.2f} s)\n", r.samples,
               human_bytes(static_cast<double>(r.bytes)), seconds);
  } else {
    constexpr std::size_t kListed = 20;
    std::string list;
    for (std::size_t i = 0; i < r.bad_samples.size() && i < kListed; ++i) {
      list += (i == 0 ? "" : ", ") + std::to_string(r.bad_samples[i]);
    }
    if (r.bad_samples.size() > kListed) {
      list += fmt::format(", ... ({} more; --json lists all)", r.bad_samples.size() - kListed);
    }
    fmt::print(cli.out, "FAIL: {} of {} samples do not match their checksum: {}\n",
               r.bad_samples.size(), r.samples, list);
  }
  std::fflush(cli.out);
  return r.ok() ? static_cast<int>(ExitCode::ok) : static_cast<int>(ExitCode::check_failed);
}

int run_info(const DatasetCli& cli) {
  const auto ds = open_input(cli, cli.data);
  const std::uint64_t bytes = total_sample_bytes(*ds);
  const double mean =
      ds->size() != 0 ? static_cast<double>(bytes) / static_cast<double>(ds->size()) : 0;
  if (cli.json) {
    Json j;
    j["command"] = "dataset info";
    j["path"] = cli.data;
    j["kind"] = ds->kind();
    j["samples"] = ds->size();
    j["classes"] = ds->num_classes();
    j["class_names"] = ds->class_names();
    const ClassCounts counts = class_counts(*ds);
    j["samples_per_class"] = {{"min", counts.min}, {"max", counts.max}};
    j["format"] = data::to_string(ds->format());
    if (const auto shape = ds->raw_shape()) {
      j["shape"] = {
          {"height", shape->height}, {"width", shape->width}, {"channels", shape->channels}};
    } else {
      j["shape"] = nullptr;
    }
    j["total_bytes"] = bytes;
    j["mean_bytes"] = mean;
    j["scan"] = scan_json(ds->scan_report());
    print_json(cli, j);
    return 0;
  }
  fmt::print(cli.out, "path      {}\n", cli.data);
  fmt::print(cli.out, "kind      {}\n", kind_text(*ds));
  fmt::print(cli.out, "samples   {}\n", ds->size());
  fmt::print(cli.out, "classes   {}\n", classes_text(*ds));
  fmt::print(cli.out, "format    {}\n", format_text(*ds));
  fmt::print(cli.out, "bytes     {} ({} bytes; mean {} per sample)\n",
             human_bytes(static_cast<double>(bytes)), bytes, human_bytes(mean));
  print_scan(cli, ds->scan_report());
  std::fflush(cli.out);
  return 0;
}

int run_export(const DatasetCli& cli) {
  const bool to_folder = !cli.to_folder.empty();
  const fs::path dir = to_folder ? cli.to_folder : cli.to_shards;
  const char* option = to_folder ? "--to-folder" : "--to-shards";
  const bool existed = check_output_dir(dir, cli.force, option);
  if (same_file(cli.data, dir)) {
    throw Error(ErrorKind::usage, dir.string() + " (" + option + "): is the input itself");
  }
  // A folder inside the input folder would become part of the input it is written from (and
  // of every later scan of it).
  std::error_code path_ec;
  const fs::path input = fs::weakly_canonical(cli.data, path_ec);
  const fs::path output = fs::weakly_canonical(dir, path_ec);
  if (fs::is_directory(input, path_ec)) {
    const auto in_end =
        std::mismatch(input.begin(), input.end(), output.begin(), output.end()).first;
    if (in_end == input.end())
      throw Error(ErrorKind::usage,
                  dir.string() + " (" + option + "): is inside the input " + cli.data);
  }
  const auto ds = open_input(cli, cli.data);
  if (ds->format() != data::SampleFormat::jpeg) {
    throw Error(ErrorKind::usage,
                cli.data + ": samples are " + format_text(*ds) +
                    "; export writes JPEG files only (a pack keeps raw pixels: gpubase dataset "
                    "pack)");
  }
  ProgressPrinter printer(cli, "export", "samples");
  const auto start = Clock::now();
  std::size_t shards = 0;
  try {
    if (to_folder) {
      data::write_image_folder(*ds, dir, cancellable(printer));
    } else {
      shards = data::write_webdataset(*ds, dir, cli.images_per_shard, cancellable(printer)).size();
    }
  } catch (const Error&) {
    // Stopped or failed half way: a directory this run created goes, so that no partial set
    // is left looking like a whole one.
    if (!existed) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!ec) note(cli, "removed the partial output " + dir.string());
    } else {
      note(cli, dir.string() + " holds a partial export");
    }
    throw;
  }
  const double seconds = seconds_since(start);
  const std::uint64_t bytes = total_sample_bytes(*ds);

  if (cli.json) {
    Json j;
    j["command"] = "dataset export";
    j["source"] = cli.data;
    j["kind"] = ds->kind();
    j["output"] = dir.string();
    j["layout"] = to_folder ? "folder" : "shards";
    j["samples"] = ds->size();
    j["classes"] = ds->num_classes();
    j["shards"] = shards;
    j["bytes"] = bytes;
    j["seconds"] = seconds;
    j["scan"] = scan_json(ds->scan_report());
    print_json(cli, j);
    return 0;
  }
  const std::string layout =
      to_folder ? fmt::format("an ImageFolder tree ({} class directories)", ds->num_classes())
                : fmt::format("{} WebDataset shard{}", shards, shards == 1 ? "" : "s");
  fmt::print(cli.out, "exported  {} samples ({}) from {} as {} in {}\n", ds->size(),
             human_bytes(static_cast<double>(bytes)), kind_text(*ds), layout, dir.string());
  fmt::print(cli.out, "time      {:.2f} s\n", seconds);
  print_scan(cli, ds->scan_report());
  std::fflush(cli.out);
  return 0;
}

void add_common(CLI::App& cmd, DatasetCli& cli) {
  cmd.add_flag("--json", cli.json, "print the result as one JSON object (docs/datasets.md)");
  cmd.add_flag("-q,--quiet", cli.quiet, "no progress lines on stderr");
}

}  // namespace

std::shared_ptr<DatasetCli> add_dataset_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<DatasetCli>();
  cmd = app.add_subcommand("dataset",
                           "make, inspect, pack, verify and export datasets "
                           "(ImageFolder, WebDataset tar shards, IDX, .gbpack)");
  cmd->require_subcommand(1);
  cmd->footer(dataset_help());

  auto* synth = cmd->add_subcommand("synth", "write a synthetic ImageNet-like JPEG dataset");
  synth->add_option("--out", cli->synth_out, "output directory (created; must be empty)")
      ->required();
  synth->add_option("--images", cli->images, "number of images")
      ->check(positive_count())
      ->capture_default_str();
  synth->add_option("--classes", cli->classes, "number of classes (label = index % classes)")
      ->check(positive_count())
      ->capture_default_str();
  synth->add_option("--seed", cli->seed, "seed: the same seed gives the same bytes")
      ->capture_default_str();
  synth
      ->add_option("--layout", cli->layout,
                   "folder (DIR/class_NNNN/*.jpg), shards (DIR/shard-NNNNNN.tar) or both "
                   "(DIR/image_folder and DIR/webdataset)")
      ->check(CLI::IsMember({"folder", "shards", "both"}))
      ->capture_default_str();
  synth->add_option("--images-per-shard", cli->images_per_shard, "images per tar shard")
      ->check(positive_count())
      ->capture_default_str();
  synth->add_option("--threads", cli->threads, "worker threads (0: every hardware thread)")
      ->capture_default_str();
  synth
      ->add_option("--scale", cli->scale,
                   "multiply both sides of every image (0 < F <= 1; 1 is ImageNet-like; less "
                   "for quick tests)")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  synth->add_flag("--force", cli->force, "write into a non-empty directory");
  add_common(*synth, *cli);

  auto* pack = cmd->add_subcommand("pack", "pack any dataset into one checksummed .gbpack file");
  pack->add_option("--data", cli->data,
                   "dataset: ImageFolder dir, .tar or dir of them, IDX dir, "
                   ".gbpack")
      ->required();
  pack->add_option("--out", cli->pack_out, "the pack file to write (FILE.gbpack)")->required();
  pack->add_option("--split", cli->split, "IDX only: train or t10k")->capture_default_str();
  pack->add_flag("--strict", cli->strict, "fail on the first bad file instead of skipping it");
  pack->add_flag("--force", cli->force, "replace an existing --out file");
  add_common(*pack, *cli);

  auto* verify = cmd->add_subcommand("verify", "check every sample checksum of a .gbpack file");
  verify->add_option("file", cli->data, "the pack file")->required();
  add_common(*verify, *cli);

  auto* info = cmd->add_subcommand("info", "what a dataset holds: kind, samples, classes, format");
  info->add_option("path", cli->data,
                   "dataset: ImageFolder dir, .tar or dir of them, IDX dir, "
                   ".gbpack")
      ->required();
  info->add_option("--split", cli->split, "IDX only: train or t10k")->capture_default_str();
  info->add_flag("--strict", cli->strict, "fail on the first bad file instead of skipping it");
  add_common(*info, *cli);

  auto* exp = cmd->add_subcommand("export",
                                  "write a JPEG dataset as an ImageFolder tree or as "
                                  "WebDataset shards");
  exp->add_option("--data", cli->data, "dataset: ImageFolder dir, .tar or dir of them, .gbpack")
      ->required();
  auto* target = exp->add_option_group("target", "where to write (one of)");
  target->add_option("--to-folder", cli->to_folder,
                     "write DIR/<class>/<index>.jpg (DIR created; must be empty)");
  target->add_option("--to-shards", cli->to_shards,
                     "write DIR/shard-NNNNNN.tar (DIR created; must be empty)");
  target->require_option(1);
  exp->add_option("--images-per-shard", cli->images_per_shard, "samples per tar shard")
      ->check(positive_count())
      ->capture_default_str();
  exp->add_option("--split", cli->split, "IDX only: train or t10k")->capture_default_str();
  exp->add_flag("--strict", cli->strict, "fail on the first bad file instead of skipping it");
  exp->add_flag("--force", cli->force, "write into a non-empty directory");
  add_common(*exp, *cli);

  cli->synth = synth;
  cli->pack = pack;
  cli->verify = verify;
  cli->info = info;
  cli->export_cmd = exp;
  return cli;
}

int run_dataset_command(const DatasetCli& cli) {
  if (*cli.synth) return run_synth(cli);
  if (*cli.pack) return run_pack(cli);
  if (*cli.verify) return run_verify(cli);
  if (*cli.info) return run_info(cli);
  if (*cli.export_cmd) return run_export(cli);
  throw Error(ErrorKind::usage, "dataset: give a subcommand: synth, pack, verify, info, export");
}

int run_dataset_args(const std::vector<std::string>& args, std::FILE* out, std::FILE* err) {
  return run_subcommand_args(
      "dataset", args,
      [&](CLI::App& app, CLI::App*& cmd) {
        auto cli = add_dataset_command(app, cmd);
        cli->out = out;
        cli->err = err;
        return cli;
      },
      [](const auto& cli) { return run_dataset_command(*cli); }, err);
}

}  // namespace gb::cli
