// bench/infer.hpp: inference throughput of the engine in src/nn -- "how fast is a simple model,
// really": ResNet-50 forward only, batch norm in inference mode, the pass captured as a CUDA
// graph and replayed, on a synthetic batch that lives on the GPU, per precision.
//
// Per precision: build the Trainer (cuDNN algorithm search), make the synthetic batch, run
// `warmup` passes (the first eager, the second captured), then timed passes with one CUDA event
// between consecutive passes and no host synchronisation until the end, for `iters` passes or
// `max_timed_s`, whichever comes first. images/s = batch / median pass time.
//
// Napkin math (H200, batch 64): ResNet-50 forward is ~4.1 GFLOP per 224x224 image, 262 GFLOP a
// batch; at a third of the dense BF16 rate (~330 TFLOP/s) that is ~0.8 ms a pass, ~80,000
// images/s; FP32 without tensor cores (~50 TFLOP/s) ~5 ms, ~12,000 images/s.
//
// This file is the CPU half (options, keys, results); the GPU half is bench/gpu/infer_run.cpp.
// Keys: docs/results.md "infer.*". bench/infer_vs_torch.py runs PyTorch's classic script.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/suite.hpp"
#include "core/result.hpp"

namespace gb::bench {

struct InferBenchOptions {
  std::string model = "resnet50";
  std::vector<std::string> precisions{"fp32", "fp16", "bf16"};
  int batch = 64;
  int warmup = 10;  // the first eager, the second captured: never timed
  int iters = 200;
  double max_timed_s = 3;
  int device = 0;
};

// "infer.resnet50.bf16.b64.images_per_s"
std::string infer_key(const std::string& model, const std::string& precision, int batch);

struct InferMeasurement {
  std::string model, precision;
  int batch = 0;
  std::vector<double> pass_ms;  // one per timed pass
  std::string error;            // the engine's message: a failed configuration
  bool interrupted = false;
};

// images/s over the passes (value: batch / median pass), params model, precision, batch,
// passes, pass_ms_median, graph; fail with the message when the engine failed or nothing was
// timed.
Result infer_result(const InferMeasurement& m);

struct InferBenchOutcome {
  bool gpu_found = false;
  std::string no_gpu_reason;
};

// Where inference results print (ResultSink::declare_sections).
std::span<const SectionRule> infer_section_rules();

// Every precision in turn; skipped results with the reason without a GPU or the engine.
// Ctrl-C: the pass in progress ends the precision, Cancelled is thrown after its result.
InferBenchOutcome run_infer_bench(const InferBenchOptions& options, ResultSink& sink);

#if defined(GPUBASE_WITH_CUDA) && defined(GPUBASE_WITH_NN)
InferMeasurement measure_infer(const std::string& precision, const InferBenchOptions& options);
#endif

}  // namespace gb::bench
