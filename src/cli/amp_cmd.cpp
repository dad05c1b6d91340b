// cli/amp_cmd.cpp: `gpubase amp [--data DIR] [--precision LIST] [--seeds N] [--epochs N] ...`.
#include "cli/amp_cmd.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "bench/amp.hpp"
#include "cli/help.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "diagnose/diagnose.hpp"

namespace gb::cli {

struct AmpCli {
  bench::AmpOptions bench;
  OutputOptions out;
  bool save = false;
};

std::shared_ptr<AmpCli> add_amp_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<AmpCli>();
  cmd = app.add_subcommand("amp",
                           "mixed precision: FP32 vs TF32 vs FP16 (loss scaling) vs BF16, speed "
                           "and test accuracy over seeds on a real dataset");
  cmd->add_option("--data", cli->bench.data,
                  "IDX folder with train-* and t10k-* files (default: Fashion-MNIST from "
                  "$GPUBASE_FASHION_MNIST or ../shared/data/fashion-mnist)");
  cmd->add_option("--model", cli->bench.model, "small_resnet (28x28 inputs)")
      ->capture_default_str();
  cmd->add_option("--precision", cli->bench.precisions,
                  "fp32, tf32, fp16, bf16; repeat or comma-separate (default: all four)")
      ->delimiter(',');
  cmd->add_option("--seeds", cli->bench.seeds, "runs per precision (seed = weights + data order)")
      ->capture_default_str();
  cmd->add_option("--epochs", cli->bench.epochs, "epochs per run")->capture_default_str();
  cmd->add_option("--batch", cli->bench.batch, "images per step")->capture_default_str();
  cmd->add_option("--lr", cli->bench.learning_rate,
                  "peak learning rate (linear warm-up over the first epoch, cosine to 0)")
      ->capture_default_str();
  cmd->add_option("-d,--device", cli->bench.device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--save", cli->save, "also save the run under the data folder");
  cmd->add_flag("--json", cli->out.json, "print the run as JSON (schema: docs/results.md)");
  cmd->add_flag("--md", cli->out.markdown, "print the run as Markdown");
  cmd->add_option("-o,--output", cli->out.output_file,
                  "write the output to FILE instead of stdout");
  cmd->add_flag("-q,--quiet", cli->out.quiet, "no progress lines on stderr");
  cmd->add_flag("--no-color", cli->out.no_color, "no ANSI colours (also: NO_COLOR=1)");
  cmd->footer(amp_help());
  return cli;
}

int run_amp_command(const AmpCli& cli) {
  Run run;
  run.tool_version = GPUBASE_VERSION;
  run.command = "amp";
  run.started_at = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();

  bench::ResultSink sink([&](const std::string& line) { progress_line(cli.out, line); });
  const bench::AmpOutcome outcome = bench::run_amp(cli.bench, sink);
  if (outcome.interrupted)
    progress_line(cli.out, "interrupted: reporting the runs finished so far");

  run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.environment = std::move(sink.facts());
  run.results = std::move(sink.results());
  if (!outcome.gpu_found)
    run.environment.push_back({"gpu.available", "GPU", "none: " + outcome.no_gpu_reason});
  if (outcome.interrupted)
    run.environment.push_back({"run.interrupted", "run", "interrupted by the user (Ctrl-C)"});
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);

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

}  // namespace gb::cli
