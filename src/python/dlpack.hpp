// python/dlpack.hpp: the DLPack structures (the unversioned ABI of dlpack.h, v0.8), declared here
// so the binding needs no SDK: a tensor's pointer, device, shape, strides and element type, and
// the managed wrapper whose deleter the consumer (torch.utils.dlpack.from_dlpack,
// numpy.from_dlpack) calls when it no longer needs the memory. Handed over in a PyCapsule named
// "dltensor"; a consumer renames it "used_dltensor".
#pragma once
#include <cstdint>

namespace gb::python::dlpack {

enum DeviceType : std::int32_t { kCPU = 1, kCUDA = 2 };
enum TypeCode : std::uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4 };

struct Device {
  std::int32_t device_type;
  std::int32_t device_id;
};

struct DataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; may be null (compact row-major)
  std::uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace gb::python::dlpack
