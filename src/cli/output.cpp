// cli/output.cpp: see output.hpp.
#include "cli/output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "bench/amp.hpp"
#include "bench/loader.hpp"
#include "bench/probe.hpp"
#include "bench/train.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/mapped_file.hpp"
#include "diagnose/timeline.hpp"
#include "report/report.hpp"
#include "store/history.hpp"
#include "sys/identity.hpp"
#include "watch/series_chart.hpp"
#include "watch/watch.hpp"

namespace gb::cli {

namespace {

// Writes `text` to `path` whole or not at all: into a temporary file beside it, renamed over
// `path` once flushed, so a full disk, a failed write or a kill mid-write never leaves a
// half-written report or run (a reader sees the old file or the new one). A path that exists
// and is not a regular file (/dev/stdout, a FIFO), or is a link, is written in place.
void write_whole_file(const std::filesystem::path& path, const std::string& text,
                      ErrorKind cannot_open) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  const bool in_place = std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec)) ||
                        (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st));
  if (in_place) {
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error(cannot_open, "cannot write " + path.string());
    out << text;
    if (!out.flush()) throw Error(ErrorKind::runtime, "writing " + path.string() + " failed");
    return;
  }
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cannot_open, "cannot write " + path.string());
    out << text;
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      throw Error(ErrorKind::runtime, "writing " + path.string() + " failed");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    std::filesystem::remove(tmp, ignore);
    throw Error(ErrorKind::runtime, "writing " + path.string() + " failed: " + ec.message());
  }
}

int terminal_width() {
  if (const char* cols = std::getenv("COLUMNS")) {
    const int w = std::atoi(cols);
    if (w >= 60) return w;
  }
  return 100;
}

// The series a watch run recorded: the path its watch.series fact names, else a file next to the
// run file with the run's name. Missing or unreadable: no series, and the note says why.
RunSeries run_series(const Run& run, const OutputOptions& options, std::string& note) {
  const auto named = run.fact("watch.series");
  std::vector<std::filesystem::path> candidates;
  if (named) candidates.emplace_back(*named);
  if (!options.run_file.empty()) {
    std::filesystem::path base(options.run_file);
    for (const char* ext : {".series.jsonl", ".series.csv"})
      candidates.push_back(base.parent_path() / (base.stem().string() + ext));
    if (named) candidates.push_back(base.parent_path() / std::filesystem::path(*named).filename());
  }
  std::error_code ec;
  for (const auto& path : candidates) {
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    try {
      return watch::read_series_chart(path.string());
    } catch (const Error& e) {
      note = e.what();
      return {};
    }
  }
  if (named)
    note = "the time series " + *named + " is not here (copy it next to the run file to draw it)";
  else if (run.command == "watch")
    note = "no time series was recorded (--no-series)";
  return {};
}

}  // namespace

std::string output_path(const OutputOptions& options) {
  if (options.output_file.empty()) return {};
  return sys::expand_output_pattern(options.output_file, sys::current_identity(), options.gpu);
}

void emit_run(const Run& run, const OutputOptions& options) {
  report::Format format = report::Format::terminal;
  if (options.json) format = report::Format::json;
  if (options.markdown) format = report::Format::markdown;
  if (options.csv) format = report::Format::csv;
  if (options.html) format = report::Format::html;
  const std::string file = output_path(options);
  const bool to_file = !file.empty();
  report::TerminalOptions term;
  term.color = !to_file && !options.no_color && format == report::Format::terminal &&
               ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  term.width = terminal_width();
  term.verbose = false;
  std::string text;
  if (format == report::Format::html) {
    report::HtmlOptions html;
    RunSeries series = run_series(run, options, html.series_note);
    series.findings = diagnose::finding_timelines(run, series);
    html.series = &series;
    text = report::render_html(run, html);
  } else {
    text = report::render(run, format, term);
  }
  if (!to_file) {
    // A full disk or a closed pipe must not look like success: the run was not delivered.
    const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    if (std::fflush(stdout) != 0 || !written) {
      const int err = errno;
      std::clearerr(stdout);  // reported here, not again when the command ends (cli::main)
      throw Error(
          ErrorKind::runtime,
          std::string("writing the report to standard output failed: ") + std::strerror(err));
    }
    return;
  }
  write_whole_file(file, text, ErrorKind::usage);
}

void check_output_writable(const OutputOptions& options) {
  if (int{options.json} + int{options.markdown} + int{options.csv} + int{options.html} > 1)
    throw Error(ErrorKind::usage, "choose one output format: --json, --md, --csv or --html");
  const std::string name = output_path(options);
  if (name.empty()) return;
  const std::filesystem::path file(name);
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw Error(ErrorKind::usage, "-o " + name + ": is a folder; give a file name");
  const bool exists = std::filesystem::exists(file, ec);
  if (exists ? ::access(file.c_str(), W_OK) != 0 : ::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(ErrorKind::usage, "-o " + name + ": cannot be written (" +
                                      (exists ? file.string() : dir.string()) + ": " +
                                      std::strerror(errno) + ")");
}

void progress_line(const OutputOptions& options, const std::string& line) {
  if (options.quiet) return;
  std::fprintf(stderr, "  %s\n", line.c_str());
  std::fflush(stderr);
}

std::filesystem::path data_dir() {
  if (const char* home = std::getenv("GPUBASE_HOME"); home && *home) return home;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "gpubase";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "share" / "gpubase";
  return std::filesystem::current_path() / ".gpubase";
}

std::filesystem::path save_run(const Run& run) {
  const auto dir = data_dir() / "runs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::runtime, "cannot create " + dir.string() + ": " + ec.message());
  std::string stamp = run.started_at;
  for (char& c : stamp)
    if (c == ':') c = '-';
  auto path = dir / (run.command + "-" + stamp + ".json");
  write_whole_file(path, to_json(run).dump(2) + "\n", ErrorKind::runtime);
  // Indexed for `gpubase history` / `compare --last` (opening the history indexes every run file
  // it does not have yet, this one included). The file is the run: an index that cannot be
  // written costs a warning, never the run.
  try {
    store::History::open(data_dir());
  } catch (const Error& e) {
    std::fprintf(stderr, "gpubase: the run is saved (%s) but not indexed: %s\n",
                 path.string().c_str(), e.what());
  }
  return path;
}

Run load_run(const std::filesystem::path& path) {
  // Read as any user's file is (core/mapped_file): a FIFO or a device is refused at once, not
  // waited on forever.
  std::vector<std::uint8_t> bytes;
  try {
    read_whole_file(path, bytes);
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, std::string("cannot read run file: ") + e.what());
  }
  Json j;
  try {
    j = Json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::usage, path.string() + " is not valid JSON: " + e.what());
  }
  Run run = run_from_json(j);
  // A run saved before suites declared their sections: place its results as the suites now do.
  if (run.sections.empty()) {
    const bool fed = std::any_of(run.results.begin(), run.results.end(), [](const Result& r) {
      return r.key.starts_with("train.") && r.find_param("data");
    });
    for (const auto rules : {bench::probe_section_rules(), bench::loader_section_rules(),
                             bench::train_section_rules(fed), bench::amp_section_rules(),
                             watch::watch_section_rules()})
      run.place_in_sections(rules);
  }
  return run;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gb::cli
