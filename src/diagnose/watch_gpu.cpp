// diagnose/watch_gpu.cpp: watch rules about the GPU itself: was it measured, does the job use
// it, is it shared or slowed, and when it is busy, is the work efficient (SMs filled, tensor
// cores used). NVML's "utilization" is the share of time any kernel runs; GPM's SM activity
// and tensor activity say how much of the chip that kernel keeps working.
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

std::optional<Finding> no_gpu_rule(const WatchInputs& in) {
  if (!in.gpu_none && !in.util_skipped) return std::nullopt;
  Finding f;
  f.id = "no_gpu";
  f.status = Status::warn;
  if (in.gpu_none) {
    f.title = "no GPU measured";
    f.evidence = "no GPU: " + *in.gpu_none + "; the CPU, memory and disk side was still measured";
    f.advice =
        "GPU utilization needs the NVIDIA driver's NVML (libnvidia-ml.so.1): run on the GPU "
        "host and check that nvidia-smi works there; the host findings still apply";
  } else {
    f.title = "GPU utilization not measured";
    f.evidence = "GPU utilization skipped: " + *in.util_skipped +
                 "; the CPU, memory and disk side was still measured";
    f.advice =
        "the GPU rules need NVML's utilization samples (MIG instances and some vGPUs do "
        "not report them): judge the GPU side with a profiler (nsys) instead";
  }
  return f;
}

std::optional<Finding> job_not_using_gpu_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.util_pct) return std::nullopt;
  // The CUDA-activity library saw the job's kernels run: it uses the GPU, however little (a
  // starved or stuck job is judged by the rules on why the GPU waits).
  if (in.cuda_kernels && *in.cuda_kernels > 0) return std::nullopt;
  Finding f;
  f.id = "job_not_using_gpu";
  f.status = Status::fail;
  f.title = "the job does not use the GPU";
  if (in.job_sm_pct) {
    if (*in.job_sm_pct > t.job_no_gpu_pct) return std::nullopt;
    f.evidence = "the job's processes used " + pct_text(*in.job_sm_pct) +
                 " of the GPU's SM time (GPU busy " + pct_text(*in.util_pct) + ")";
  } else {
    if (*in.util_pct > t.job_no_gpu_pct) return std::nullopt;
    f.evidence = "GPU busy " + pct_text(*in.util_pct) + " for the whole run";
  }
  if (in.watched_s) f.evidence += " over " + format_number(*in.watched_s) + " s";
  f.advice =
      "check that the job sees the GPU (CUDA_VISIBLE_DEVICES, torch.cuda.is_available()) "
      "and moves the model and batches to it (.to(\"cuda\")); a job that ended during "
      "start-up also shows this";
  return f;
}

std::optional<Finding> small_kernels_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.util_pct || !in.sm_active_pct) return std::nullopt;
  if (*in.util_pct < t.efficiency_min_util_pct || *in.sm_active_pct >= t.sm_active_low_pct)
    return std::nullopt;
  Finding f;
  f.id = "small_kernels";
  f.status = Status::warn;
  f.title = "small kernels: GPU busy, SMs mostly idle";
  f.evidence = "GPU util " + pct_text(*in.util_pct) + " but SMs active " +
               pct_text(*in.sm_active_pct) + ": the kernels that run fill a small part of the GPU";
  f.advice =
      "utilization counts time a kernel runs, not how much of the chip it uses: raise the "
      "batch size, fuse small ops (torch.compile), capture steps in CUDA graphs; ncu shows "
      "each kernel's occupancy";
  return f;
}

std::optional<Finding> tensor_cores_unused_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.util_pct || !in.tensor_active_pct) return std::nullopt;
  if (*in.util_pct < t.efficiency_min_util_pct || *in.tensor_active_pct >= t.tensor_unused_pct)
    return std::nullopt;
  Finding f;
  f.id = "tensor_cores_unused";
  f.status = Status::warn;
  f.title = "tensor cores unused";
  f.evidence = "GPU util " + pct_text(*in.util_pct) + " but tensor activity " +
               pct_text(*in.tensor_active_pct);
  if (in.sm_active_pct) f.evidence += " (SMs active " + pct_text(*in.sm_active_pct) + ")";
  f.evidence += ": the math runs on the CUDA cores";
  f.advice =
      "check precision: train with AMP (torch.autocast, bf16 or fp16) or allow TF32 "
      "(torch.set_float32_matmul_precision(\"high\")); plain FP32 leaves the tensor cores "
      "idle (H200: FP32 GEMM 51, TF32 388 TFLOP/s)";
  return f;
}

std::optional<Finding> gpu_shared_rule(const WatchInputs& in) {
  if (!in.other_processes || *in.other_processes < 1) return std::nullopt;
  Finding f;
  f.id = "gpu_shared";
  f.status = Status::warn;
  f.title = "GPU shared with other processes";
  const std::string n = count_text(*in.other_processes);
  f.evidence = n + (n == "1" ? " other process" : " other processes") + " used the GPU";
  if (!in.other_pids.empty()) f.evidence += " (pids " + in.other_pids + ")";
  if (in.job_sm_pct && in.util_pct)
    f.evidence += "; the job's own SM share was " + pct_text(*in.job_sm_pct) + " of the GPU's " +
                  pct_text(*in.util_pct);
  f.advice =
      "other work takes GPU time and memory and distorts every figure here: run on an "
      "idle GPU (nvidia-smi lists who is on it), or isolate with MIG or CUDA_VISIBLE_DEVICES";
  return f;
}

std::optional<Finding> throttled_rule(const WatchInputs& in) {
  if (!in.throttle_reasons) return std::nullopt;
  const std::uint64_t bits = *in.throttle_reasons & kSlowdownReasons;
  if (bits == 0) return std::nullopt;
  const SlowdownText text = describe_slowdowns(bits);
  Finding f;
  f.id = "throttled";
  f.status = Status::warn;
  f.title = "GPU clocks slowed down";
  f.evidence = text.names + " during the run";
  std::vector<std::string> details;
  if (in.sm_clock_mhz) {
    std::string clock = "SM clock " + format_number(*in.sm_clock_mhz) + " MHz mean";
    if (in.sm_clock_max_mhz) clock += " of " + format_number(*in.sm_clock_max_mhz) + " MHz max";
    details.push_back(clock);
  }
  if (in.temp_c) details.push_back(format_number(*in.temp_c) + " C max");
  if (!details.empty()) f.evidence += ": " + join(details, ", ");
  f.advice = text.advice;
  return f;
}

std::optional<Finding> gpu_bound_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.util_pct || *in.util_pct <= t.gpu_busy_pct) return std::nullopt;
  Finding f;
  f.id = "gpu_bound";
  f.status = Status::pass;
  f.title = "GPU-bound: the job keeps the GPU busy";
  f.evidence = "GPU busy " + pct_text(*in.util_pct);
  std::vector<std::string> details;
  if (in.util_p10_pct) details.push_back("10th percentile " + pct_text(*in.util_p10_pct));
  if (in.util_below_target_share_pct)
    details.push_back("below " + pct_text(t.gpu_busy_pct) + " for " +
                      pct_text(*in.util_below_target_share_pct) + " of the time");
  if (in.sm_active_pct) details.push_back("SMs active " + pct_text(*in.sm_active_pct));
  if (in.tensor_active_pct) details.push_back("tensor activity " + pct_text(*in.tensor_active_pct));
  if (!details.empty()) f.evidence += " (" + join(details, ", ") + ")";
  f.advice =
      "the input side keeps up; speed now comes from the GPU work itself: mixed precision, "
      "fused kernels (torch.compile), and `gpubase probe` to check the card reaches its "
      "rated speed";
  return f;
}

}  // namespace gb::diagnose
