// cli/fleet_cmd.cpp: `gpubase fleet merge [--threshold PCT] [--min-peers N] [--jobs N]
// [--limit N] [--json|--html] [-o FILE] DIR|FILES...` (fleet/merge.hpp, docs/fleet.md).
#include "cli/fleet_cmd.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cli/output.hpp"
#include "cli/run_args.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "fleet/merge.hpp"
#include "fleet/print.hpp"

namespace gb::cli {

struct FleetCli {
  CLI::App* merge = nullptr;
  std::vector<std::string> paths;
  double threshold_pct = 3.0;
  int min_peers = 3;
  int jobs = 0;
  std::size_t limit = 50;
  bool json = false;
  bool html = false;
  OutputOptions out;
};

std::shared_ptr<FleetCli> add_fleet_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<FleetCli>();
  cmd = app.add_subcommand("fleet", "merge the runs of many GPUs and nodes; flag the slow ones");
  cmd->require_subcommand(1);
  CLI::App* merge = cmd->add_subcommand(
      "merge",
      "group runs by GPU model, memory, power class, driver and CUDA; flag every GPU below its "
      "group's median, with a PCIe link below its maximum, or with throttled or invalid figures");
  cli->merge = merge;
  merge->add_option("paths", cli->paths, "run files, or folders searched for *.json")->required();
  merge->add_option("--threshold", cli->threshold_pct,
                    "percent below the group's median that flags a figure")
      ->capture_default_str();
  merge->add_option("--min-peers", cli->min_peers,
                    "smallest group whose GPUs are compared with its median")
      ->capture_default_str();
  merge->add_option("--jobs", cli->jobs, "threads reading run files (default: one per core)");
  merge->add_option("--limit", cli->limit, "flagged GPUs listed on the terminal; 0: all")
      ->capture_default_str();
  merge->add_flag("--json", cli->json, "print the merged report as JSON (docs/fleet.md)");
  merge->add_flag("--html", cli->html,
                  "print one self-contained HTML page with a strip chart per judged figure");
  merge->add_option("-o,--output", cli->out.output_file,
                    "write the report to FILE instead of stdout; %N host, %r rank, %j job id");
  merge->add_flag("-q,--quiet", cli->out.quiet, "no progress lines on stderr");
  merge->add_flag("--no-color", cli->out.no_color, "no ANSI colours (also: NO_COLOR=1)");
  merge->footer(
      "Exit codes: 0 no GPU flagged, 1 a GPU flagged or a run file unreadable, 2 usage.\n"
      "Collect the runs with e.g. `srun --ntasks-per-node=1 gpubase probe --quick --json -o "
      "runs/%N.json` (docs/fleet.md).");
  return cli;
}

int run_fleet_command(const FleetCli& cli) {
  if (cli.json && cli.html) throw Error(ErrorKind::usage, "fleet merge: --json or --html, not both");
  if (!(cli.threshold_pct > 0 && cli.threshold_pct < 100))
    throw Error(ErrorKind::usage, "fleet merge: --threshold must be between 0 and 100 (percent)");
  if (cli.min_peers < 1) throw Error(ErrorKind::usage, "fleet merge: --min-peers must be >= 1");
  if (cli.jobs < 0) throw Error(ErrorKind::usage, "fleet merge: --jobs must be >= 0");
  check_output_writable(cli.out);
  const auto files = fleet::collect_run_files(cli.paths);
  progress_line(cli.out, "fleet merge: reading " + grouped(static_cast<double>(files.size())) +
                             " run files");
  fleet::MergeOptions options;
  options.threshold = cli.threshold_pct / 100;
  options.min_peers = cli.min_peers;
  options.jobs = cli.jobs;
  const fleet::MergeReport report = fleet::merge_files(files, options);
  progress_line(cli.out, "fleet merge: scanned in " + fixed(report.scan_seconds, 2) +
                             " s, merged in " + fixed(report.total_seconds, 2) + " s");

  const std::string file = output_path(cli.out);
  std::string text;
  if (cli.json) {
    text = fleet::to_json(report).dump(2) + "\n";
  } else if (cli.html) {
    text = fleet::render_html(report);
  } else {
    fleet::PrintOptions print;
    print.limit = cli.limit;
    print.color = file.empty() && !cli.out.no_color && ::isatty(STDOUT_FILENO) &&
                  std::getenv("NO_COLOR") == nullptr;
    text = fleet::render_terminal(report, print);
  }
  if (file.empty()) {
    const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    if (std::fflush(stdout) != 0 || !written)
      throw Error(ErrorKind::runtime,
                  std::string("writing the report to standard output failed: ") +
                      std::strerror(errno));
  } else {
    std::ofstream out(file, std::ios::binary);
    out << text;
    if (!out.flush()) throw Error(ErrorKind::runtime, "writing " + file + " failed");
  }
  const bool bad = !report.flagged.empty() || !report.unreadable.empty();
  return static_cast<int>(bad ? ExitCode::check_failed : ExitCode::ok);
}

int run_fleet_args(const std::vector<std::string>& args) {
  return run_subcommand_args("fleet", args, add_fleet_command,
                             [](const auto& cli) { return run_fleet_command(*cli); });
}

}  // namespace gb::cli
