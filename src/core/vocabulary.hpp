// core/vocabulary.hpp: the names the training side of gpubase shares -- the models the engine
// builds and the precisions it trains in -- CUDA-free, so the CLI, the suites (src/bench) and
// the engine (src/nn) use one type and one spelling each. The spellings are API: they appear in
// result keys ("train.resnet50.bf16.b256.images_per_s") and CLI options (--model, --precision).
// The GEMM probe's list (fp64 .. int8, storage and compute types) is a different thing:
// core/gpu_specs.hpp GemmPrecision.
#pragma once
#include <optional>
#include <span>
#include <string_view>

namespace gb {

enum class Model { resnet50, mobilenet_v2, small_resnet };
// Every model, in report order.
std::span<const Model> all_models();
std::string_view to_string(Model m);                   // "resnet50", "mobilenet_v2", "small_resnet"
std::optional<Model> parse_model(std::string_view s);  // exact spelling, as to_string writes it

// How the engine trains: fp32 with tensor cores off (TF32 disabled in cuDNN and cuBLASLt); tf32:
// FP32 storage, TF32 math; fp16 (dynamic loss scaling) and bf16: reduced-precision activations
// and weight copies in NHWC, FP32 master weights.
enum class Precision { fp32, tf32, fp16, bf16 };
// Every training precision, in report order.
std::span<const Precision> all_precisions();
std::string_view to_string(Precision p);                       // "fp32", "tf32", "fp16", "bf16"
std::optional<Precision> parse_precision(std::string_view s);  // exact spelling
// fp16 and bf16: the mixed precisions (reduced-precision math beside FP32 master weights).
bool is_mixed(Precision p);

}  // namespace gb
