// core/device_index.hpp: the one check of a -d/--device index, shared by the suites (CUDA
// devices, bench/suite.hpp) and `gpubase watch` (NVML devices), so every command rejects a bad
// index with the same usage error (exit 2).
#pragma once
#include <string_view>

namespace gb {

// Throws gb::Error (usage) when `device` is negative ("a device index is 0 or more"), or when
// it is not one of the `count` devices `source` lists ("device 3 does not exist: this machine
// has 1 CUDA device(s) (0..0)"). With count 0 only the sign is checked: a machine without GPUs
// is not a usage error, the command reports it (exit 3).
void require_device_index(int device, int count, std::string_view source = "CUDA");

}  // namespace gb
