// core/vocabulary.hpp: the names the training side of gpubase shares -- the models the engine
// builds and the precisions it trains in -- CUDA-free, so the CLI, the suites (src/bench) and
// the engine (src/nn) use one type and one spelling each. The spellings are API: they appear in
// result keys ("train.resnet50.bf16.b256.images_per_s") and CLI options (--model, --precision).
// The GEMM probe's list (fp64 .. int8, storage and compute types) is a different thing:
// core/gpu_specs.hpp GemmPrecision. ElementType, how one element is stored, is the one element
// type of every layer (the engine's tensors, the input pipeline's output, the GEMM buffers).
#pragma once
#include <cstddef>
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

// How one element is stored in memory. A layer that supports only some of these (the engine and
// the input pipeline: f32, f16, bf16) throws unsupported_element_type for the others.
enum class ElementType { f64, f32, f16, bf16, e4m3, i8, i32 };
// "fp64", "fp32", "fp16", "bf16", "fp8e4m3", "int8", "int32"
std::string_view to_string(ElementType t);
std::optional<ElementType> parse_element_type(std::string_view s);  // exact spelling
std::size_t element_bytes(ElementType t);
// Throws gb::Error (runtime): `where` does not handle elements of type t (an internal error:
// every caller checks the type it accepts at its boundary).
[[noreturn]] void unsupported_element_type(ElementType t, std::string_view where);

}  // namespace gb
