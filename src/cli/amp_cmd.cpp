// cli/amp_cmd.cpp: `gpubase amp [--data DIR] [--precision LIST] [--seeds N] [--epochs N] ...`.
#include "cli/amp_cmd.hpp"

#include <CLI/CLI.hpp>
#include "bench/amp.hpp"
#include "cli/help.hpp"
#include "cli/suite_run.hpp"

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
                  "$GPUBASE_FASHION_MNIST, else /usr/share/datasets/fashion-mnist)");
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
  cmd->add_flag("--speed", cli->bench.speed,
                "speed only: ResNet-50 and MobileNetV2 per precision at batch 64 and 256 "
                "(synthetic data), the speedup over FP32 and where it pays");
  cmd->add_option("--speed-batch", cli->bench.speed_batches, "with --speed: batch sizes")
      ->delimiter(',');
  add_device_option(*cmd, cli->bench.device);
  add_output_options(*cmd, cli->out, &cli->save);
  cmd->footer(amp_help());
  return cli;
}

int run_amp_command(const AmpCli& cli) {
  SuiteRun suite("amp");
  bench::ResultSink sink([&](const std::string& line) { progress_line(cli.out, line); });
  suite.run_suite(sink, cli.out, [&] {
    const bench::AmpOutcome outcome = bench::run_amp(cli.bench, sink);
    return SuiteEnd{outcome.gpu_found, outcome.no_gpu_reason};
  });
  return suite.finish(cli.out, cli.save);
}

}  // namespace gb::cli
