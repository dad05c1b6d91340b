// cli/history_cmd.cpp: `gpubase history` and `gpubase compare`.
#include "cli/history_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "diagnose/compare.hpp"
#include "report/report.hpp"
#include "report/text.hpp"
#include "store/history.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

struct HistoryCli {
  store::RunFilter filter;
  std::string key;
  std::size_t limit = 20;
};

struct CompareCli {
  std::vector<std::string> files;
  bool last = false;
  store::RunFilter filter;
};

std::shared_ptr<HistoryCli> add_history_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<HistoryCli>();
  cmd = app.add_subcommand("history", "list saved runs, or one figure's trend over them");
  cmd->add_option("--gpu", cli->filter.gpu_uuid, "only runs of this GPU (UUID, gpu.uuid)");
  cmd->add_option("--host", cli->filter.host, "only runs of this host (run.host)");
  cmd->add_option("--command", cli->filter.command, "only runs of this command (probe, loader...)");
  cmd->add_option("--since", cli->filter.since, "only runs started on or after DATE (2026-12-01)");
  cmd->add_option("--key", cli->key, "show this result key's trend (probe.gemm.bf16.tflops)");
  cmd->add_option("-n,--limit", cli->limit, "newest N runs (0: all)")->capture_default_str();
  return cli;
}

std::shared_ptr<CompareCli> add_compare_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<CompareCli>();
  cmd = app.add_subcommand(
      "compare", "compare two runs key by key; exit 1 when a figure regressed beyond the noise");
  cmd->add_option("runs", cli->files, "BEFORE.json AFTER.json (paths, or names under runs/)")
      ->expected(0, 2);
  cmd->add_flag("--last", cli->last,
                "the newest saved run against the previous run of the same command on the same "
                "GPU and host");
  cmd->add_option("--gpu", cli->filter.gpu_uuid, "with --last: the newest run of this GPU");
  cmd->add_option("--command", cli->filter.command, "with --last: the newest run of this command");
  return cli;
}

namespace {

std::string gpu_text(const store::RunRow& r) {
  std::string t = r.gpu_name.empty() ? "-" : r.gpu_name;
  if (!r.gpu_uuid.empty()) t += " " + r.gpu_uuid.substr(0, std::min<std::size_t>(12, r.gpu_uuid.size()));
  return t;
}

}  // namespace

int run_history_command(const HistoryCli& cli) {
  store::History h = store::History::open(data_dir());
  if (h.imported() > 0)
    std::fprintf(stderr, "  history: indexed %zu saved run%s in %s\n", h.imported(),
                 h.imported() == 1 ? "" : "s", h.path().string().c_str());
  store::RunFilter filter = cli.filter;
  filter.limit = cli.limit;
  std::string out;
  using report::detail::format_number;
  using report::detail::pad_right;
  // Rows are formatted as the index hands them over, none kept: ten thousand of them are 1.5 MB
  // of text, not 10,000 row objects.
  std::string body;
  std::size_t rows = 0;
  if (cli.key.empty()) {
    h.for_each_run(filter, [&](const store::RunRow& r) {
      ++rows;
      fmt::format_to(std::back_inserter(body), "  {:<20}  {:<9}  {:<14}  {}  {:<12}  {:>7}  {:<7}  {}\n",
                     r.started_at, r.command, r.host.empty() ? "-" : r.host,
                     pad_right(gpu_text(r), 26), r.driver.empty() ? "-" : r.driver, r.results,
                     r.worst, r.file);
    });
    out += fmt::format("{} run{} (newest first; {})\n", rows, rows == 1 ? "" : "s",
                       h.path().string());
    out += fmt::format("  {:<20}  {:<9}  {:<14}  {:<26}  {:<12}  {:>7}  {:<7}  {}\n", "started",
                       "command", "host", "GPU", "driver", "results", "worst", "file");
    out += body;
  } else {
    std::vector<double> values;
    h.for_each_point(cli.key, filter, [&](const store::KeyPoint& p) {
      ++rows;
      if (p.value) values.push_back(*p.value);
      fmt::format_to(std::back_inserter(body), "  {:<20}  {:>16}  {:>7}  {:<8}  {}  {}\n",
                     p.run.started_at, p.value ? report::detail::number_text(*p.value, p.unit) : "-",
                     p.cv ? fmt::format("{:.1f} %", *p.cv * 100) : "", p.status,
                     pad_right(gpu_text(p.run), 26), p.run.file);
    });
    out += fmt::format("{}: {} run{} (oldest first)\n", cli.key, rows, rows == 1 ? "" : "s");
    out += fmt::format("  {:<20}  {:>16}  {:>7}  {:<8}  {:<26}  {}\n", "started", "value", "± CV",
                       "status", "GPU", "file");
    out += body;
    if (values.size() >= 2) {
      const SampleStats s = compute_stats(values);
      const double first = values.front(), last = values.back();
      out += fmt::format("  min {}, median {}, max {}; first to last {}\n", format_number(s.min),
                         format_number(s.median), format_number(s.max),
                         first != 0 ? fmt::format("{:+.1f} %", (last - first) / std::abs(first) * 100)
                                    : std::string("-"));
    }
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

int run_compare_command(const CompareCli& cli) {
  fs::path before, after;
  if (cli.last) {
    if (!cli.files.empty())
      throw Error(ErrorKind::usage, "compare: give two run files or --last, not both");
    store::History h = store::History::open(data_dir());
    const auto newest = h.newest(cli.filter);
    if (!newest) throw Error(ErrorKind::usage, "compare --last: no saved run in " + h.path().string());
    const auto prev = h.previous_of(*newest);
    if (!prev)
      throw Error(ErrorKind::usage,
                  "compare --last: " + newest->file + " is the only saved " + newest->command +
                      " run of this GPU" + (newest->host.empty() ? "" : " on " + newest->host));
    before = h.runs_dir() / prev->file;
    after = h.runs_dir() / newest->file;
  } else {
    if (cli.files.size() != 2)
      throw Error(ErrorKind::usage, "compare: give two run files (BEFORE AFTER) or --last");
    auto resolve = [](const std::string& name) {
      fs::path p(name);
      std::error_code ec;
      if (!fs::exists(p, ec) && fs::exists(data_dir() / "runs" / name, ec))
        p = data_dir() / "runs" / name;
      return p;
    };
    before = resolve(cli.files[0]);
    after = resolve(cli.files[1]);
  }
  const Run a = load_run(before);
  const Run b = load_run(after);
  if (a.command != b.command)
    std::fprintf(stderr, "  compare: the runs are of different commands (%s, %s): only the keys "
                         "they share are compared\n",
                 a.command.c_str(), b.command.c_str());
  const Comparison c = diagnose::compare_runs(a, b);
  const std::string text = report::render_comparison(
      c, before.string() + " (" + a.started_at + ")", after.string() + " (" + b.started_at + ")");
  std::fputs(text.c_str(), stdout);
  return c.regressions > 0 ? static_cast<int>(ExitCode::check_failed) : 0;
}

}  // namespace gb::cli
