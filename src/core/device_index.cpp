// core/device_index.cpp: see device_index.hpp.
#include "core/device_index.hpp"

#include <string>

#include "core/error.hpp"

namespace gb {

void require_device_index(int device, int count, std::string_view source) {
  if (device < 0)
    throw Error(ErrorKind::usage,
                "--device " + std::to_string(device) + ": a device index is 0 or more");
  if (count > 0 && device >= count)
    throw Error(ErrorKind::usage, "device " + std::to_string(device) +
                                      " does not exist: this machine has " +
                                      std::to_string(count) + " " + std::string(source) +
                                      " device(s) (0.." + std::to_string(count - 1) + ")");
}

}  // namespace gb
