// cli/output.hpp: where and how a finished run is shown: format selection (--json, --md, --csv,
// --html; a watch run's HTML draws its time series, read back from the series file),
// -o FILE, colour only on a terminal, and the saved-runs folder used by `baseline`.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace gb::cli {

struct OutputOptions {
  bool json = false;
  bool markdown = false;
  bool csv = false;
  bool html = false;
  // The run file a report was read from: its time series is looked for next to it as well
  // (<name>.series.jsonl / .csv) when the path the run names is not there.
  std::string run_file;
  std::string output_file;  // empty: standard output
  bool quiet = false;       // no progress lines on stderr
  bool no_color = false;
  std::optional<int> gpu;  // what -o's %g becomes (commands that run on one GPU of several)
};

// -o FILE with its placeholders expanded (%N host, %r rank, %j job id, %g GPU, %% a '%':
// sys/identity.hpp); empty for standard output. Throws gb::Error (usage) for an unknown one.
std::string output_path(const OutputOptions& options);

// Renders the run in the chosen format and writes it to -o FILE or stdout.
void emit_run(const Run& run, const OutputOptions& options);
// Throws gb::Error (usage) when -o names a file that cannot be written, or when more than one
// format is asked for: checked before a suite or a watched job runs, not found out after hours
// of it.
void check_output_writable(const OutputOptions& options);

// Progress line on stderr (suppressed by --quiet).
void progress_line(const OutputOptions& options, const std::string& line);

// $GPUBASE_HOME, else $XDG_DATA_HOME/gpubase, else ~/.local/share/gpubase.
std::filesystem::path data_dir();
// Writes the run as JSON under data_dir()/runs/, indexes it in the history (a warning when the
// index cannot be written: the file is the run) and returns the path.
std::filesystem::path save_run(const Run& run);
Run load_run(const std::filesystem::path& path);

// Current UTC time, ISO 8601 ("2026-12-02T10:35:01Z").
std::string utc_now_iso8601();

}  // namespace gb::cli
