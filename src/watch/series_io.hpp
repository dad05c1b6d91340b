// watch/series_io.hpp: the full-resolution time series of a watch run, written as the samples
// arrive (nothing is kept in memory): CSV (one row per interval, the scalar columns) or JSON
// lines (the same columns plus per-core busy shares and the job's busiest processes). The
// format follows the file's extension: .csv, else JSON lines. Missing figures are empty cells /
// null, never 0. Column names are API: docs/watch.md.
#pragma once
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "watch/sample.hpp"

namespace gb::watch {

enum class SeriesFormat { jsonl, csv };

SeriesFormat series_format_for(const std::string& path);

// The scalar columns, in file order.
std::vector<std::string> series_columns();

// One sample as a CSV row / a JSON object text (no trailing newline).
std::string csv_header();
std::string csv_row(const WatchSample& s);
std::string jsonl_line(const WatchSample& s);

class SeriesWriter {
 public:
  // Throws gb::Error (usage) when the file cannot be created.
  explicit SeriesWriter(const std::string& path);
  void write(const WatchSample& s);  // flushed per line: a killed run keeps what it wrote
  const std::string& path() const { return path_; }
  SeriesFormat format() const { return format_; }

 private:
  std::string path_;
  SeriesFormat format_;
  std::ofstream out_;
};

}  // namespace gb::watch
