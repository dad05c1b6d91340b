// cli/watch_cmd.cpp: `gpubase watch [options] -- CMD...` and `gpubase watch --pid PID`.
#include "cli/watch_cmd.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/help.hpp"
#include "cli/output.hpp"
#include "cli/prometheus_export.hpp"
#include "cli/signals.hpp"
#include "cli/watch_view.hpp"
#include "core/error.hpp"
#include "cli/suite_run.hpp"
#include "watch/watch.hpp"

namespace gb::cli {

struct WatchCli {
  watch::WatchOptions watch;
  OutputOptions out;
  PrometheusOptions prometheus;
  std::string view = "auto";
  double duration_s = 0;
  int pid = 0;
  bool no_series = false;
  bool no_save = false;
  bool no_perf = false;
  bool no_cuda_activity = false;
};

std::shared_ptr<WatchCli> add_watch_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<WatchCli>();
  cmd = app.add_subcommand(
      "watch", "run a command (or attach to a pid) and monitor it like nvidia-smi dmon + htop + "
               "iostat -x + perf stat; diagnose it when it ends or on Ctrl-C");
  cmd->add_option("command", cli->watch.command,
                  "the command to run, after --: gpubase watch -- python train.py");
  cmd->add_option("-p,--pid", cli->pid, "attach to a running process (and its children)");
  cmd->add_option("-i,--interval", cli->watch.interval_s, "seconds between samples (0.1 .. 60)")
      ->capture_default_str();
  cmd->add_option("-t,--duration", cli->duration_s,
                  "stop after this many seconds (a started command gets SIGINT, then SIGTERM)");
  cmd->add_option("-d,--device", cli->watch.device, "GPU index (NVML)")->capture_default_str();
  cmd->add_option("--series", cli->watch.series_path,
                  "write the time series to FILE (.csv, else JSON lines); default: next to the "
                  "saved run");
  cmd->add_flag("--no-series", cli->no_series, "do not write the time series");
  cmd->add_option("--capture", cli->watch.capture_dir,
                  "copy the /proc files read at every interval into DIR (for bug reports)");
  cmd->add_option("--view", cli->view, "live view: auto, panel, line or none")
      ->capture_default_str();
  cmd->add_option("--grace", cli->watch.stop_grace_s,
                  "seconds the job gets to exit after Ctrl-C or --duration before SIGTERM")
      ->capture_default_str();
  cmd->add_flag("--no-perf", cli->no_perf, "do not open perf_event counters");
  cmd->add_flag("--no-cuda-activity", cli->no_cuda_activity,
                "do not load the CUDA-activity library (CUPTI) into the job; use it when the "
                "job runs its own profiler");
  cmd->add_flag("--no-save", cli->no_save, "do not save the run (and its series)");
  add_prometheus_options(*cmd, cli->prometheus);
  add_output_options(*cmd, cli->out);
  cmd->footer(watch_help());
  return cli;
}

int run_watch_command(const WatchCli& cli) {
  watch::WatchOptions options = cli.watch;
  if (cli.pid != 0) options.pid = cli.pid;
  if (cli.duration_s != 0) options.duration_s = cli.duration_s;
  options.perf_counters = !cli.no_perf;
  options.cuda_activity = !cli.no_cuda_activity;
  // A JSON or Markdown report on stdout stays one document: the job prints to stderr.
  options.job_stdout_to_stderr = (cli.out.json || cli.out.markdown) && cli.out.output_file.empty();
  watch::validate(options);
  check_output_writable(cli.out);
  check_prometheus_options(cli.prometheus);
  const ViewMode mode = cli.out.quiet ? ViewMode::none : parse_view_mode(cli.view);

  SuiteRun suite("watch");
  if (!cli.no_save) {
    // The run and its series share a name: <data dir>/runs/watch-<time>.json / .jsonl
    std::string stamp = suite.run().started_at;
    for (char& c : stamp)
      if (c == ':') c = '-';
    const auto dir = data_dir() / "runs";
    std::filesystem::create_directories(dir);
    if (options.series_path.empty() && !cli.no_series)
      options.series_path = (dir / ("watch-" + stamp + ".series.jsonl")).string();
  }
  if (cli.no_series) options.series_path.clear();

  const std::string title = options.pid ? "pid " + std::to_string(*options.pid)
                                        : [&] {
                                            std::string t;
                                            for (const auto& a : options.command)
                                              t += (t.empty() ? "" : " ") + a;
                                            return t;
                                          }();
  std::unique_ptr<PrometheusExport> prometheus;
  if (cli.prometheus.enabled())
    prometheus = std::make_unique<PrometheusExport>(cli.prometheus, options.device);
  watch::WatchOutcome outcome = run_watch_with_view(
      options, mode, title, cli.out.quiet, [&](const watch::WatchSample& s) {
        if (prometheus) prometheus->add(s);
      });
  prometheus.reset();  // the server stops with the monitoring; the textfile keeps the last state

  // The watch goes through the same sink, diagnosis, printing and saving as every suite. A
  // watch without a GPU is still a run (a CPU job is watched all the same): not exit code 3.
  bench::ResultSink sink;
  sink.declare_sections(watch::watch_section_rules());
  for (Fact& f : outcome.facts) sink.add_fact(std::move(f));
  for (Result& r : outcome.results) sink.add(std::move(r));
  if (!outcome.gpu_available) sink.gpu().unavailable = outcome.gpu_unavailable;
  SuiteEnd end;
  // The job's exit code is gpubase's (like `time CMD`); a job gpubase stopped for --duration
  // counts as success, an attached process stopped with Ctrl-C too.
  end.exit_code = outcome.exit && !outcome.stopped_by_duration ? outcome.exit->shell_code() : 0;
  // A second Ctrl-C ends gpubase at once, as every command: 130, the report made all the same.
  if (outcome.stopped_at_once) end.exit_code = static_cast<int>(ExitCode::interrupted);
  suite.complete(sink, end);
  suite.run().duration_s = outcome.duration_s;  // the monitored span, not gpubase's own
  const int code = suite.finish(cli.out, !cli.no_save);
  if (!options.series_path.empty()) progress_line(cli.out, "time series: " + options.series_path);
  return code;
}

}  // namespace gb::cli
