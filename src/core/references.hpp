// core/references.hpp: figures measured elsewhere and quoted next to ours -- PyTorch's training
// rates, torchvision's nvJPEG decode rate, PyTorch's launch latencies. Each names the exact
// device it was measured on (a spec-table entry: an H200 SXM is not an H200 NVL), the software
// and where the number comes from; it attaches to a result only on that device, and always
// says "quoted". Figures this run measured itself never come from here.
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "core/gpu_specs.hpp"

namespace gb {

struct QuotedFigure {
  std::string_view key;       // the result key it stands beside
  std::string_view kind;      // the reference kind: "pytorch", "torch_compile", "torchvision"
  std::string_view spec;      // GpuSpec::name of the device it was measured on
  double value = 0;           // in the result's unit
  std::string_view what;      // "PyTorch eager, torchvision ResNet-50, batch 256, AMP, NHWC"
  std::string_view software;  // "PyTorch 2.11, CUDA 13.0, cuDNN 9.19"
  std::string_view source;    // how it was measured and where it is recorded
  // A result carrying a param of this name measured something else (a loader-fed training run
  // against a synthetic-batch figure): the figure does not attach to it.
  std::string_view unless_param = {};
};

std::span<const QuotedFigure> quoted_figures();

// "quoted: PyTorch eager, torchvision ResNet-50, batch 256 on NVIDIA H200 SXM 141GB (PyTorch
// 2.11, CUDA 13.0, cuDNN 9.19; <source>)": the reference source a printer shows.
std::string quoted_source(const QuotedFigure& f);

}  // namespace gb
