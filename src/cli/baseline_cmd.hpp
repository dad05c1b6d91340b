// cli/baseline_cmd.hpp: `gpubase baseline`, the four questions in one run: the card (probe),
// the input pipeline (loader worker sweep on a cached synthetic ImageNet-like set or --data),
// ResNet-50 training fed by the loader under the in-process watch sampler, and the mixed-
// precision study on Fashion-MNIST; the stages run through bench/baseline's runner. The run
// prints the checklist first, then the details, and is saved (--no-save to skip).
// Without a GPU the CPU stages run, the GPU rows are skipped with the reason, exit code 3.
// `gpubase baseline -- CMD...`: the quick card check (refused while another process uses the
// GPU), then the user's command under watch: the checklist rows for their job.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace CLI {
class App;
}

namespace gb::cli {

struct BaselineCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<BaselineCli> add_baseline_command(CLI::App& app, CLI::App*& subcommand);
int run_baseline_command(const BaselineCli& cli);

// `gpubase baseline ARGS...` as main() runs it, for tests (no signal handlers).
int run_baseline_args(const std::vector<std::string>& args);

// `baseline -- CMD`: the rows a watched job cannot fill like the baseline's own training run.
// AMP: says to run `gpubase amp` on the job's data. Data loading: judged from the job's
// CUDA-activity figure watch.cuda.data_wait.pct with the checklist's limits when the run has
// it and diagnose left the row empty; else "not measurable from outside: why".
void explain_job_rows(Run& run);

// The synthetic ImageNet-like set the baseline trains on without --data: made once under
// `dir` and reused while every file it holds is the one made (name and size, listed in
// <dir>.manifest); anything else -- a file changed, added or removed, an interrupted
// generation -- makes it again. `images` JPEGs in `classes` classes, `size_scale` as in
// data::SynthOptions (1: ImageNet-like; tests use less).
std::filesystem::path cached_synthetic_set(const std::filesystem::path& dir, std::size_t images,
                                           std::size_t classes, double size_scale,
                                           const std::function<void(const std::string&)>& note);

}  // namespace gb::cli
