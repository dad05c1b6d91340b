// cli/app.cpp: subcommands probe, baseline and report here; watch, dataset, loader and train in
// their own files (cli/watch_cmd.cpp, cli/dataset_cmd.cpp, cli/loader_cmd.cpp,
// cli/train_cmd.cpp). Each command builds a Run through the suites, lets diagnose set verdicts
// and checklist rows, then hands it to the printers.
// Library code throws gb::Error; this file alone turns errors into exit codes.
#include "cli/app.hpp"

#include <cstdio>

#include <CLI/CLI.hpp>
#include <sstream>

#include "bench/probe.hpp"
#include "bench/train.hpp"
#include "cli/dataset_cmd.hpp"
#include "cli/fleet_cmd.hpp"
#include "cli/help.hpp"
#include "cli/loader_cmd.hpp"
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

// baseline's training figure: ResNet-50 BF16 at batch 256, a few seconds once the model is
// built (`gpubase train` measures every model and precision). Without a GPU or the engine it
// is a skipped result with the reason, like the probe's sections.
bench::TrainBenchOptions baseline_train_options(const ProbeCli& opts) {
  bench::TrainBenchOptions t;
  t.models = {"resnet50"};
  t.precisions = {"bf16"};
  t.batch = 256;
  t.warmup = opts.probe.quick ? 5 : 10;
  t.steps = opts.probe.quick ? 10 : 30;
  t.device = opts.probe.device;
  t.report_environment = false;  // the probe reported them
  return t;
}

// Runs the probe (and baseline's training figure) and prints the run.
int run_probe_command(const std::string& command, const ProbeCli& opts, bool with_train = false) {
  SuiteRun suite(command);
  bench::ResultSink sink([&](const std::string& line) { progress_line(opts.out, line); });
  suite.run_suite(sink, opts.out, [&] {
    const bench::ProbeOutcome outcome = bench::run_probe(opts.probe, sink);
    if (with_train) {
      sink.progress("baseline: training throughput, ResNet-50 BF16 batch 256");
      bench::run_train_bench(baseline_train_options(opts), sink);
    }
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
  auto* probe = app.add_subcommand("probe", "device facts, GEMM, HBM, PCIe, latency, host memory");
  probe->add_flag("--quick", probe_opts.probe.quick, "fewer sizes and repetitions (about 15 s)");
  add_device_option(*probe, probe_opts.probe.device);
  probe->add_option("--devices", probe_opts.devices,
                    "all, or device indices separated by commas: one run per GPU (with several, "
                    "-o needs %g, e.g. runs/%N-gpu%g.json)")
      ->excludes("--device");
  probe->add_flag("--concurrent", probe_opts.concurrent,
                  "with --devices: after each GPU alone, run them all at once and compare "
                  "(probe.concurrent.*: which GPUs slow down together)");
  probe->add_option("--only", only, "comma-separated sections: env,gemm,memory,pcie,latency,host");
  probe->add_flag("--save", probe_opts.save, "also save the run under the data folder");
  add_output_options(*probe, probe_opts.out);
  probe->footer(probe_help());

  ProbeCli baseline_opts;
  baseline_opts.save = true;
  bool no_save = false;
  auto* baseline = app.add_subcommand(
      "baseline", "run every suite with built-in defaults, print the checklist, save the run");
  baseline->add_flag("--quick", baseline_opts.probe.quick, "quick probe (about 15 s)");
  add_device_option(*baseline, baseline_opts.probe.device);
  baseline->add_flag("--no-save", no_save, "do not save the run");
  add_output_options(*baseline, baseline_opts.out);
  baseline->footer(baseline_help());

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

  OutputOptions report_out;
  std::string report_file;
  auto* report = app.add_subcommand("report", "render a saved run (terminal, Markdown or JSON)");
  report->add_option("file", report_file, "run file (JSON written by --json or --save)")
      ->required();
  add_output_options(*report, report_out);

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
  if (*baseline) {
    baseline_opts.save = !no_save;
    baseline_opts.out.gpu = baseline_opts.probe.device;
    progress_line(baseline_opts.out,
                  "baseline: probe, then a short training run (ResNet-50 BF16; `gpubase train` "
                  "for every model and precision); watch, loader and amp fill their checklist "
                  "rows once they run");
    return run_probe_command("baseline", baseline_opts, /*with_train=*/true);
  }
  if (*watch) return run_watch_command(*watch_opts);
  if (*dataset) return run_dataset_command(*dataset_opts);
  if (*loader) return run_loader_command(*loader_opts);
  if (*train) return run_train_command(*train_opts);
  if (*amp) return run_amp_command(*amp_opts);
  if (*fleet) return run_fleet_command(*fleet_opts);
  if (*report) {
    Run run = load_run(report_file);
    emit_run(run, report_out);
    return 0;
  }
  return static_cast<int>(ExitCode::usage);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpubase: %s\n", e.what());
    return static_cast<int>(exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubase: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::runtime_error);
  }
}

}  // namespace gb::cli
