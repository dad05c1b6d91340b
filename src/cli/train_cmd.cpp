// cli/train_cmd.cpp: `gpubase train [--model LIST] [--precision LIST] [--batch N] ...`.
// Parses the options into bench::TrainBenchOptions, runs the suite into a Run, lets diagnose
// mark throttled figures, prints or saves it, and maps the outcome to an exit code.
#include "cli/train_cmd.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "bench/train.hpp"
#include "cli/help.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "diagnose/diagnose.hpp"

namespace gb::cli {

struct TrainCli {
  bench::TrainBenchOptions bench;
  OutputOptions out;
  bool save = false;
};

std::shared_ptr<TrainCli> add_train_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<TrainCli>();
  cmd = app.add_subcommand("train",
                           "training throughput (images/s) of ResNet-50, MobileNetV2 and a small "
                           "ResNet on cuDNN + cuBLASLt, per precision");
  cmd->add_option("--model", cli->bench.models,
                  "resnet50, mobilenet_v2, small_resnet; repeat or comma-separate (default: "
                  "resnet50)")
      ->delimiter(',');
  cmd->add_option("--precision", cli->bench.precisions,
                  "fp32 (tensor cores off), tf32, fp16 (dynamic loss scaling), bf16; repeat or "
                  "comma-separate (default: all four)")
      ->delimiter(',');
  cmd->add_option("--batch", cli->bench.batch, "images per step")->capture_default_str();
  cmd->add_option("--steps", cli->bench.steps, "timed steps per configuration")
      ->capture_default_str();
  cmd->add_option("--warmup", cli->bench.warmup, "untimed steps first")->capture_default_str();
  cmd->add_flag("--graph", cli->bench.cuda_graph,
                "capture the whole step as a CUDA graph in the warm-up, then replay it");
  cmd->add_option("--seed", cli->bench.seed, "weight initialisation seed")->capture_default_str();
  cmd->add_option("-d,--device", cli->bench.device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--save", cli->save, "also save the run under the data folder");
  cmd->add_flag("--json", cli->out.json, "print the run as JSON (schema: docs/results.md)");
  cmd->add_flag("--md", cli->out.markdown, "print the run as Markdown");
  cmd->add_option("-o,--output", cli->out.output_file,
                  "write the output to FILE instead of stdout");
  cmd->add_flag("-q,--quiet", cli->out.quiet, "no progress lines on stderr");
  cmd->add_flag("--no-color", cli->out.no_color, "no ANSI colours (also: NO_COLOR=1)");
  cmd->footer(train_help());
  return cli;
}

int run_train_command(const TrainCli& cli) {
  Run run;
  run.tool_version = GPUBASE_VERSION;
  run.command = "train";
  run.started_at = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();

  bench::ResultSink sink([&](const std::string& line) { progress_line(cli.out, line); });
  const bench::TrainBenchOutcome outcome = bench::run_train_bench(cli.bench, sink);
  if (outcome.interrupted)
    progress_line(cli.out, "interrupted: reporting the configurations measured so far");

  run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.environment = std::move(sink.facts());
  run.results = std::move(sink.results());
  if (!outcome.gpu_found)
    run.environment.push_back({"gpu.available", "GPU", "none: " + outcome.no_gpu_reason});
  if (outcome.interrupted)
    run.environment.push_back({"run.interrupted", "run", "interrupted by the user (Ctrl-C)"});
  diagnose::apply_verdicts(run);

  emit_run(run, cli.out);
  if (cli.save) progress_line(cli.out, "saved " + save_run(run).string());
  if (outcome.interrupted) return static_cast<int>(ExitCode::interrupted);
  if (!outcome.gpu_found) {
    std::fprintf(stderr, "gpubase: %s\n", outcome.no_gpu_reason.c_str());
    return static_cast<int>(ExitCode::no_gpu);
  }
  return run.worst_status() == Status::fail ? static_cast<int>(ExitCode::check_failed)
                                            : static_cast<int>(ExitCode::ok);
}

int run_train_args(const std::vector<std::string>& args) {
  CLI::App app{"gpubase"};
  app.require_subcommand(1);
  CLI::App* cmd = nullptr;
  const auto cli = add_train_command(app, cmd);
  std::vector<std::string> argv_strings = {"gpubase", "train"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gpubase: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  try {
    return run_train_command(*cli);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpubase: %s\n", e.what());
    return static_cast<int>(exit_code_for(e.kind()));
  }
}

}  // namespace gb::cli
