// python/module.cpp: the extension module `gpubase._gpubase` (pybind11): BatchSource with its
// batches handed over as DLPack capsules (no copy: the tensor's memory is the batch's block,
// freed back to the pool when the consumer's tensor dies), gb::Error as Python exceptions, the
// GIL released while the loader works or waits. The friendly API is python/gpubase/__init__.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "python/batch_source.hpp"
#include "python/dlpack.hpp"

namespace py = pybind11;

namespace gb::python {
namespace {

// What a capsule's DLManagedTensor owns: the block and the shape/strides arrays it points at.
struct Holder {
  Block block;
  std::array<std::int64_t, 4> shape{};
  std::array<std::int64_t, 4> strides{};
  dlpack::ManagedTensor managed{};
};

void delete_holder(dlpack::ManagedTensor* self) { delete static_cast<Holder*>(self->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // Still named "dltensor": no consumer took it, so its memory is ours to give back.
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed && managed->deleter) managed->deleter(managed);
}

py::capsule to_capsule(Block block, int ndim, const std::array<std::int64_t, 4>& shape,
                       const std::array<std::int64_t, 4>& strides, dlpack::DataType dtype,
                       dlpack::Device device) {
  auto* h = new Holder{std::move(block), shape, strides, {}};
  h->managed.dl_tensor.data = h->block.data();
  h->managed.dl_tensor.device = device;
  h->managed.dl_tensor.ndim = ndim;
  h->managed.dl_tensor.dtype = dtype;
  h->managed.dl_tensor.shape = h->shape.data();
  h->managed.dl_tensor.strides = h->strides.data();
  h->managed.dl_tensor.byte_offset = 0;
  h->managed.manager_ctx = h;
  h->managed.deleter = delete_holder;
  PyObject* cap = PyCapsule_New(&h->managed, "dltensor", capsule_destructor);
  if (!cap) {
    delete h;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

dlpack::DataType dl_type(ElementType t) {
  switch (t) {
    case ElementType::f32:
      return {dlpack::kFloat, 32, 1};
    case ElementType::f16:
      return {dlpack::kFloat, 16, 1};
    case ElementType::bf16:
      return {dlpack::kBfloat, 16, 1};
    default:
      throw Error(ErrorKind::usage, "dtype: float32, float16 or bfloat16");
  }
}

ElementType dtype_from(const std::string& name) {
  if (name == "float32") return ElementType::f32;
  if (name == "float16") return ElementType::f16;
  if (name == "bfloat16") return ElementType::bf16;
  throw Error(ErrorKind::usage, "dtype '" + name + "': float32, float16 or bfloat16");
}

data::TensorLayout layout_from(const std::string& name) {
  if (name == "NCHW" || name == "nchw") return data::TensorLayout::nchw;
  if (name == "NHWC" || name == "nhwc") return data::TensorLayout::nhwc;
  throw Error(ErrorKind::usage, "layout '" + name + "': NCHW or NHWC");
}

data::Normalization normalization_from(const std::vector<double>& mean,
                                       const std::vector<double>& stddev) {
  if (mean.size() != 3 || stddev.size() != 3)
    throw Error(ErrorKind::usage, "mean and std: three values each (R, G, B)");
  data::Normalization n;
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = static_cast<float>(mean[c]);
    n.stddev[c] = static_cast<float>(stddev[c]);
  }
  return n;
}

template <typename T>
T checked_count(long long v, const char* name) {
  if (v < 0) throw Error(ErrorKind::usage, std::string(name) + " " + std::to_string(v) +
                                               ": not a count");
  return static_cast<T>(v);
}

SourceOptions source_options(const std::string& path, long long batch, int size, long long workers,
                             const std::string& decode, int device, const std::string& dtype,
                             const std::string& layout, const std::vector<double>& mean,
                             const std::vector<double>& stddev, unsigned long long seed,
                             bool shuffle, bool drop_last, long long rank, long long world_size,
                             long long prefetch, bool strict, std::optional<double> gpu_share) {
  SourceOptions o;
  o.path = path;
  pipeline::PipelineOptions& p = o.pipeline;
  p.batch = checked_count<std::size_t>(batch, "batch_size");
  p.image_size = size;
  p.workers = checked_count<unsigned>(workers, "workers");
  p.decode = pipeline::decode_mode_from(decode, "decode");
  o.on_gpu = device >= 0;
  p.device = std::max(device, 0);
  p.dtype = dtype_from(dtype);
  p.layout = layout_from(layout);
  p.norm = normalization_from(mean, stddev);
  p.seed = seed;
  p.shuffle = shuffle;
  p.drop_last = drop_last;
  p.rank = checked_count<std::uint32_t>(rank, "rank");
  p.world_size = checked_count<std::uint32_t>(world_size, "world_size");
  p.prefetch = checked_count<std::size_t>(prefetch, "prefetch");
  p.strict = strict;
  p.gpu_share = gpu_share;
  return o;
}

}  // namespace
}  // namespace gb::python

PYBIND11_MODULE(_gpubase, m) {
  using namespace gb::python;
  m.doc() = "gpubase's input pipeline as a data source (see the gpubase package)";

  static py::exception<gb::Error> error(m, "Error", PyExc_RuntimeError);
  // A usage error (bad option, bad path, a bad sample under strict) is also a ValueError.
  static PyObject* usage_error = [&] {
    PyObject* bases = PyTuple_Pack(2, error.ptr(), PyExc_ValueError);
    PyObject* type = PyErr_NewException("gpubase._gpubase.UsageError", bases, nullptr);
    Py_DECREF(bases);
    return type;
  }();
  static py::exception<gb::Error> no_gpu(m, "NoGpuError", error.ptr());
  m.attr("UsageError") = py::handle(usage_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gb::Error& e) {
      switch (e.kind()) {
        case gb::ErrorKind::usage:
          PyErr_SetString(usage_error, e.what());
          return;
        case gb::ErrorKind::no_gpu:
          no_gpu(e.what());
          return;
        case gb::ErrorKind::interrupted:
          PyErr_SetNone(PyExc_KeyboardInterrupt);
          return;
        case gb::ErrorKind::runtime:
          error(e.what());
          return;
      }
    }
  });

  py::class_<BatchSource>(m, "BatchSource")
      .def(py::init([](const std::string& path, long long batch, int size, long long workers,
                       const std::string& decode, int device, const std::string& dtype,
                       const std::string& layout, const std::vector<double>& mean,
                       const std::vector<double>& stddev, unsigned long long seed, bool shuffle,
                       bool drop_last, long long rank, long long world_size, long long prefetch,
                       bool strict, std::optional<double> gpu_share) {
             const SourceOptions o =
                 source_options(path, batch, size, workers, decode, device, dtype, layout, mean,
                                stddev, seed, shuffle, drop_last, rank, world_size, prefetch,
                                strict, gpu_share);
             py::gil_scoped_release release;
             return std::make_unique<BatchSource>(o);
           }),
           py::arg("path"), py::arg("batch"), py::arg("size"), py::arg("workers"),
           py::arg("decode"), py::arg("device"), py::arg("dtype"), py::arg("layout"),
           py::arg("mean"), py::arg("std"), py::arg("seed"), py::arg("shuffle"),
           py::arg("drop_last"), py::arg("rank"), py::arg("world_size"), py::arg("prefetch"),
           py::arg("strict"), py::arg("gpu_share"))
      .def("__len__", &BatchSource::num_batches)
      .def_property_readonly("dataset_size", &BatchSource::dataset_size)
      .def_property_readonly("workers", &BatchSource::workers)
      .def_property_readonly("epoch", &BatchSource::epoch)
      .def("set_epoch", &BatchSource::set_epoch, py::arg("epoch"))
      .def("begin_pass", &BatchSource::begin_pass, py::call_guard<py::gil_scoped_release>())
      .def(
          "next",
          [](BatchSource& self, std::uintptr_t stream) -> py::object {
            std::optional<OutBatch> b;
            {
              py::gil_scoped_release release;
              b = self.next(reinterpret_cast<gb::pipeline::StreamHandle>(stream));
            }
            if (!b) return py::none();
            const OutBatch& ref = *b;
            const std::array<std::int64_t, 4> shape = ref.shape, strides = ref.strides;
            const std::array<std::int64_t, 4> label_shape{static_cast<std::int64_t>(ref.size)};
            const std::array<std::int64_t, 4> label_strides{1};
            const bool gpu = self.on_gpu();
            const dlpack::Device where{gpu ? dlpack::kCUDA : dlpack::kCPU,
                                       gpu ? self.device() : 0};
            const std::uint32_t epoch = ref.epoch;
            const std::size_t number = ref.number;
            py::capsule images = to_capsule(std::move(b->images), 4, shape, strides,
                                            dl_type(self.dtype()), where);
            py::capsule labels = to_capsule(std::move(b->labels), 1, label_shape, label_strides,
                                            {dlpack::kInt, 32, 1}, where);
            return py::make_tuple(images, labels, epoch, number);
          },
          py::arg("stream") = 0)
      .def_property_readonly(
          "sweep",
          [](const BatchSource& self) -> py::object {
            const WorkerSweep& s = self.sweep();
            if (s.workers.empty()) return py::none();
            return py::make_tuple(s.workers, s.images_per_s, s.knee);
          })
      .def("describe", &BatchSource::describe)
      .def("stats",
           [](const BatchSource& self) {
             const SourceStats s = self.stats();
             py::dict d;
             for (const auto& [k, v] : s.numbers) d[py::str(k)] = v;
             d["bad_examples"] = s.bad_examples;
             return d;
           })
      .def("reset_stats", &BatchSource::reset_stats)
      .def("close", &BatchSource::close, py::call_guard<py::gil_scoped_release>());

  m.def(
      "reference_batch",
      [](const std::string& path, long long batch, int size, long long workers,
         unsigned long long seed, bool shuffle, bool drop_last, long long rank,
         long long world_size, unsigned epoch, std::size_t number) {
        const SourceOptions o = source_options(
            path, batch, size, workers, "cpu", -1, "float32", "NHWC", {0, 0, 0}, {1, 1, 1}, seed,
            shuffle, drop_last, rank, world_size, 4, false, std::nullopt);
        ReferenceBatch r;
        {
          py::gil_scoped_release release;
          r = reference_batch(o, epoch, number);
        }
        py::bytes pixels(reinterpret_cast<const char*>(r.pixels.data()), r.pixels.size());
        return py::make_tuple(pixels, r.labels, r.size);
      },
      "batch `number` of `epoch` from the C++ loader's CPU path (uint8 HWC pixels, labels)",
      py::arg("path"), py::arg("batch"), py::arg("size"), py::arg("workers"), py::arg("seed"),
      py::arg("shuffle"), py::arg("drop_last"), py::arg("rank"), py::arg("world_size"),
      py::arg("epoch"), py::arg("number"));
}
