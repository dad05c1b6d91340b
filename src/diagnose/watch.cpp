// diagnose/watch.cpp: diagnose_watch(), which rules run together and in what order. The
// findings never contradict each other:
//  - no GPU figure: only the host rules (and storage-bound: the job still waits on the disk);
//  - the job does not use the GPU: nothing about starvation or kernel efficiency;
//  - GPU above the 95 % target: gpu_bound, and none of the starvation rules (they need < 95 %);
//    gpu_bound also needs the SMs filled (else small_kernels) and the GPU to itself (else
//    gpu_shared); too many workers is then only a note (info);
//  - GPU below the target: every cause that holds is listed (input-bound on CPU and
//    storage-bound can both be true); "launch-bound" only when none of them does.
// Most important first: by severity, then by the order of kRank.
#include <algorithm>
#include <string_view>

#include "diagnose/diagnose.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

constexpr std::string_view kRank[] = {"no_gpu",
                                      "job_not_using_gpu",
                                      "input_wait",
                                      "input_bound_cpu",
                                      "storage_bound",
                                      "workers_oversubscribed",
                                      "main_process_bound",
                                      "one_process_bound",
                                      "too_many_workers",
                                      "too_many_threads",
                                      "host_sync",
                                      "tiny_kernels",
                                      "pageable_copies",
                                      "launch_bound",
                                      "small_kernels",
                                      "tensor_cores_unused",
                                      "memory_pressure",
                                      "cpu_steal",
                                      "gpu_shared",
                                      "throttled",
                                      "gpu_bound",
                                      "short_run"};

// What else can hold a GPU below its target back; launch_bound is the verdict when none did.
constexpr std::string_view kStarvationCauses[] = {
    "input_bound_cpu",  "storage_bound",    "main_process_bound", "one_process_bound",
    "too_many_workers", "too_many_threads", "memory_pressure",    "cpu_steal",
    "input_wait",       "workers_oversubscribed", "host_sync",    "tiny_kernels"};

std::size_t rank_of(const std::string& id) {
  const auto it = std::find(std::begin(kRank), std::end(kRank), id);
  return static_cast<std::size_t>(it - std::begin(kRank));
}

}  // namespace

std::vector<Finding> diagnose_watch(const Run& run) {
  if (!is_watch_run(run)) return {};
  const WatchInputs in = read_watch_inputs(run);
  const WatchThresholds& t = watch_thresholds();
  std::vector<Finding> out;
  auto add = [&out](std::optional<Finding> f) {
    if (f) out.push_back(std::move(*f));
  };
  auto fired = [&out](std::string_view id) {
    return std::any_of(out.begin(), out.end(), [&](const Finding& f) { return f.id == id; });
  };

  add(no_gpu_rule(in));
  add(job_not_using_gpu_rule(in, t));
  const bool gpu_used = !fired("job_not_using_gpu");
  if (gpu_used) {
    add(input_bound_cpu_rule(in, t));
    add(one_process_rule(in, t));
    add(storage_bound_rule(in, t));
    add(small_kernels_rule(in, t));
    // What the CUDA-activity library saw inside the job.
    add(input_wait_rule(in, t));
    add(workers_oversubscribed_rule(in, t));
    add(host_sync_rule(in, t));
    add(tiny_kernels_rule(in, t));
    add(pageable_copies_rule(in));
    add(tensor_cores_unused_rule(in, t));
  }
  add(gpu_shared_rule(in));
  add(throttled_rule(in));
  if (gpu_used && !fired("small_kernels") && !fired("gpu_shared")) add(gpu_bound_rule(in, t));

  if (std::optional<Finding> workers = too_many_workers_rule(in, t)) {
    if (fired("gpu_bound")) {
      workers->status = Status::info;
      workers->evidence += "; not holding the GPU back now";
    }
    add(std::move(workers));
  }
  add(too_many_threads_rule(in, t));
  add(memory_pressure_rule(in, t));
  add(cpu_steal_rule(in, t));
  // The GPU waits and nothing above explains it.
  if (gpu_used && std::none_of(std::begin(kStarvationCauses), std::end(kStarvationCauses), fired))
    add(launch_bound_rule(in, t));
  add(short_run_rule(in, t));

  adapt_to_own_loader(run, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if (severity(a.status) != severity(b.status)) return severity(a.status) > severity(b.status);
    return rank_of(a.id) < rank_of(b.id);
  });
  return out;
}

}  // namespace gb::diagnose
