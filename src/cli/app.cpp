// cli/app.cpp: subcommands probe and report here; baseline, watch, dataset, loader and train in
// their own files (cli/baseline_cmd.cpp, cli/watch_cmd.cpp, cli/dataset_cmd.cpp,
// cli/loader_cmd.cpp, cli/train_cmd.cpp). Each command builds a Run through the suites, lets
// diagnose set verdicts and checklist rows, then hands it to the printers.
// Library code throws gb::Error; this file alone turns errors into exit codes.
#include "cli/app.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>
#include <sstream>

#include "bench/probe.hpp"
#include "cli/baseline_cmd.hpp"
#include "cli/dataset_cmd.hpp"
#include "cli/fleet_cmd.hpp"
#include "cli/help.hpp"
#include "cli/history_cmd.hpp"
#include "cli/loader_cmd.hpp"
#include "cli/option_checks.hpp"
#include "cli/output.hpp"
#include "cli/probe_devices.hpp"
#include "cli/suite_run.hpp"
#include "cli/signals.hpp"
#include "cli/train_cmd.hpp"
#include "cli/amp_cmd.hpp"
#include "cli/watch_cmd.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"

namespace gb::cli {

namespace {

struct ProbeCli {
  bench::ProbeOptions probe;
  OutputOptions out;
  bool save = false;
  std::string devices;      // --devices all|0,2,5 (probe): one run per GPU
  bool concurrent = false;  // --concurrent: also all of them at once
};

// Runs the probe and prints the run.
int run_probe_command(const std::string& command, const ProbeCli& opts) {
  SuiteRun suite(command);
  bench::ResultSink sink([&](const std::string& line) { progress_line(opts.out, line); });
  suite.run_suite(sink, opts.out, [&] {
    const bench::ProbeOutcome outcome = bench::run_probe(opts.probe, sink);
    return SuiteEnd{outcome.gpu_found, outcome.no_gpu_reason};
  });
  return suite.finish(opts.out, opts.save);
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream ss(csv);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int dispatch(int argc, char** argv) {
  CLI::App app{"gpubase: is this GPU as fast as it should be, and what holds training back?"};
  app.set_version_flag("--version", std::string("gpubase ") + GPUBASE_VERSION);
  app.require_subcommand(1);
  app.footer(exit_codes_help());

  ProbeCli probe_opts;
  std::string only;
  auto* probe = app.add_subcommand(
      "probe", "device facts, GEMM, HBM, PCIe, latency, host memory, GPU-to-GPU copies, NCCL");
  probe->add_flag("--quick", probe_opts.probe.quick, "fewer sizes and repetitions (about 15 s)");
  add_device_option(*probe, probe_opts.probe.device);
  probe->add_option("--devices", probe_opts.devices,
                    "all, or device indices separated by commas: one run per GPU (with several, "
                    "-o needs %g, e.g. runs/%N-gpu%g.json)")
      ->excludes("--device");
  probe->add_flag("--concurrent", probe_opts.concurrent,
                  "with --devices: after each GPU alone, run them all at once and compare "
                  "(probe.concurrent.*: which GPUs slow down together)");
  probe->add_option("--only", only,
                    "comma-separated sections: env,gemm,memory,pcie,latency,host,p2p,nccl");
  probe->add_flag("--save", probe_opts.save, "also save the run under the data folder");
  add_output_options(*probe, probe_opts.out);
  probe->footer(probe_help());

  CLI::App* baseline = nullptr;
  const auto baseline_opts = add_baseline_command(app, baseline);

  CLI::App* watch = nullptr;
  const auto watch_opts = add_watch_command(app, watch);

  CLI::App* dataset = nullptr;
  const auto dataset_opts = add_dataset_command(app, dataset);

  CLI::App* loader = nullptr;
  const auto loader_opts = add_loader_command(app, loader);

  CLI::App* train = nullptr;
  const auto train_opts = add_train_command(app, train);

  CLI::App* amp = nullptr;
  const auto amp_opts = add_amp_command(app, amp);

  CLI::App* fleet = nullptr;
  const auto fleet_opts = add_fleet_command(app, fleet);
  CLI::App* history = nullptr;
  const auto history_opts = add_history_command(app, history);
  CLI::App* compare = nullptr;
  const auto compare_opts = add_compare_command(app, compare);

  OutputOptions report_out;
  std::string report_file;
  auto* report =
      app.add_subcommand("report", "render a saved run (terminal, Markdown, JSON, CSV or HTML)");
  report->add_option("file", report_file, "run file (JSON written by --json or --save)")
      ->required();
  add_output_options(*report, report_out);
  refuse_negative_unsigned(app);

  // A first word that names no command gets a message that says so (CLI11 would only say a
  // subcommand is required).
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == word;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "gpubase: unknown command '%s'; the commands are %s (gpubase --help)\n",
                   word.c_str(), names.c_str());
      return static_cast<int>(ExitCode::usage);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  install_signal_handlers();
  if (*probe) {
    probe_opts.probe.sections = split_list(only);
    if (probe_opts.concurrent && probe_opts.devices.empty())
      throw Error(ErrorKind::usage, "--concurrent runs the GPUs of --devices at once: give "
                                    "--devices all (or a list)");
    if (!probe_opts.devices.empty())
      return run_probe_devices("probe", probe_opts.probe, probe_opts.out, probe_opts.save,
                               probe_opts.devices, probe_opts.concurrent);
    probe_opts.out.gpu = probe_opts.probe.device;
    return run_probe_command("probe", probe_opts);
  }
  if (*baseline) return run_baseline_command(*baseline_opts);
  if (*watch) return run_watch_command(*watch_opts);
  if (*dataset) return run_dataset_command(*dataset_opts);
  if (*loader) return run_loader_command(*loader_opts);
  if (*train) return run_train_command(*train_opts);
  if (*amp) return run_amp_command(*amp_opts);
  if (*fleet) return run_fleet_command(*fleet_opts);
  if (*history) return run_history_command(*history_opts);
  if (*compare) return run_compare_command(*compare_opts);
  if (*report) {
    check_output_writable(report_out);
    Run run = load_run(report_file);
    report_out.run_file = report_file;
    emit_run(run, report_out);
    return 0;
  }
  return static_cast<int>(ExitCode::usage);
}

}  // namespace

namespace {

// What a command printed must have reached stdout: a write that failed (a full disk, a closed
// pipe such as `gpubase dataset info SET | head -1`; SIGPIPE is ignored) makes a command that
// otherwise ended normally exit 4, whichever command printed.
int checked_stdout(int code) {
  errno = 0;
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  const int err = errno;
  if (!failed) return code;
  std::clearerr(stdout);
  const bool ended_normally = code == 0 || code == static_cast<int>(ExitCode::check_failed) ||
                              code == static_cast<int>(ExitCode::no_gpu);
  if (!ended_normally) return code;
  std::fprintf(stderr, "gpubase: writing to standard output failed: %s\n",
               err != 0 ? std::strerror(err) : "a write did not complete");
  return static_cast<int>(ExitCode::runtime_error);
}

}  // namespace

int main(int argc, char** argv) {
  const RunningCommand running;
  try {
    return checked_stdout(dispatch(argc, argv));
  } catch (const Error& e) {
    std::fprintf(stderr, "gpubase: %s\n", e.what());
    return static_cast<int>(exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubase: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::runtime_error);
  }
}

}  // namespace gb::cli
