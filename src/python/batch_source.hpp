// python/batch_source.hpp: what `gpubase.Loader` is in C++, without Python: batches of a JPEG
// dataset as tensors the consumer owns, one epoch per pass, on the CPU (device "cpu": the
// loader's workers decode, crop, flip and normalize each sample into its place in the batch) or
// on a GPU (the input pipeline of pipeline/input_pipeline.hpp, in any decode mode, written
// straight into memory handed to the consumer in its stream's order).
//
//   BatchSource src(options);                 // opens the dataset, starts the workers
//   src.begin_pass();                         // the epoch set_epoch() named, or the next one
//   while (auto b = src.next(stream)) { hand b->images, b->labels to the consumer }
//
// Every batch gets its own memory (a pool: a block comes back when the consumer frees the
// tensor), so a tensor stays valid as long as it is referenced, whatever the loader does next.
// GPU blocks are allocated and freed in the consumer's stream order (a private CUDA memory
// pool), as PyTorch's caching allocator does with its own. The CPU path copies each batch once
// out of the loader's ring into its block; the GPU path writes into the block directly.
//
// Determinism: a pass over epoch e yields the same bytes for any worker count (the loader's
// Philox streams per (seed, epoch, sample), data/loader.hpp); set_epoch(e) makes the next pass
// epoch e, otherwise each pass is the epoch after the last one begun.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/vocabulary.hpp"
#include "data/dataset.hpp"
#include "pipeline/input_pipeline.hpp"
#include "pipeline/options.hpp"

namespace gb::python {

struct SourceOptions {
  std::filesystem::path path;
  pipeline::PipelineOptions pipeline;  // workers 0: picked by sweep_workers()
  bool on_gpu = true;                  // tensors on pipeline.device, else in host memory
};

// Where batch memory comes from; blocks go back when the consumer frees a tensor (any thread).
class TensorMemory {
 public:
  virtual ~TensorMemory() = default;
  virtual void* allocate(std::size_t bytes, pipeline::StreamHandle stream) = 0;
  virtual void release(void* p, std::size_t bytes, pipeline::StreamHandle stream) noexcept = 0;
};

// One block of a batch, freed into its pool on destruction.
class Block {
 public:
  Block() = default;
  Block(std::shared_ptr<TensorMemory> memory, std::size_t bytes, pipeline::StreamHandle stream);
  ~Block();
  Block(Block&& other) noexcept;
  Block& operator=(Block&& other) noexcept;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<TensorMemory> memory_;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  pipeline::StreamHandle stream_ = nullptr;
};

struct OutBatch {
  Block images, labels;  // labels: size int32
  std::size_t size = 0;
  // Logical shape (n, 3, s, s) always; strides in elements say the layout: NCHW contiguous, or
  // NHWC memory as (n, 3, s, s) with channels-last strides (PyTorch's channels_last).
  std::array<std::int64_t, 4> shape{};
  std::array<std::int64_t, 4> strides{};
  std::uint32_t epoch = 0;
  std::size_t number = 0;
};

// Statistics since construction or reset_stats(), as numbers; per-stage figures in ms per image.
struct SourceStats {
  std::map<std::string, double> numbers;
  std::vector<std::string> bad_examples;  // "<sample>: <reason>", the first few
};

struct WorkerSweep {
  std::vector<unsigned> workers;
  std::vector<double> images_per_s;
  unsigned knee = 0;  // the fewest workers within kKneeShare of the best rate
};
// The share of the best rate the knee must reach (as `gpubase loader`'s sweep).
inline constexpr double kKneeShare = 0.97;

class BatchSource {
 public:
  // Throws gb::Error: usage for bad options or a dataset that cannot be opened or has no JPEG
  // samples; no_gpu when a GPU is asked for and cannot be used (the reason).
  explicit BatchSource(const SourceOptions& options);
  ~BatchSource();
  BatchSource(const BatchSource&) = delete;
  BatchSource& operator=(const BatchSource&) = delete;

  void set_epoch(std::uint32_t epoch) { next_epoch_ = epoch; }
  std::uint32_t epoch() const { return pass_epoch_; }
  void begin_pass();
  // The pass's next batch, in `stream` order on the GPU (ignored on the CPU); nothing at the end
  // of the pass. Throws gb::Error (usage) for a bad sample under strict, naming it.
  std::optional<OutBatch> next(pipeline::StreamHandle stream);
  std::size_t num_batches() const { return num_batches_; }
  std::size_t dataset_size() const;
  unsigned workers() const { return workers_; }
  bool on_gpu() const { return options_.on_gpu; }
  int device() const { return options_.pipeline.device; }
  ElementType dtype() const { return options_.pipeline.dtype; }
  const WorkerSweep& sweep() const { return sweep_; }
  std::string describe() const;
  SourceStats stats() const;
  void reset_stats();
  // Joins the workers and frees the pipeline; next() afterwards is an error. Idempotent.
  void close();

 private:
  struct Host;
  void open_pipeline(std::uint32_t first_epoch);
  void choose_workers();  // options_.pipeline.workers, or the knee of sweep_workers()
  WorkerSweep sweep_workers();

  SourceOptions options_;
  std::unique_ptr<data::Dataset> dataset_;
  std::shared_ptr<TensorMemory> memory_;
  std::unique_ptr<Host> host_;                           // device "cpu"
  std::unique_ptr<pipeline::InputPipeline> pipeline_;    // a GPU
  unsigned workers_ = 0;
  WorkerSweep sweep_;
  std::size_t num_batches_ = 0;
  std::uint32_t next_epoch_ = 0, pass_epoch_ = 0;
  std::size_t delivered_ = 0;  // batches of the pass
  bool pass_open_ = false;
  bool pipeline_at_boundary_ = false;  // the GPU pipeline's next batch opens epoch pipeline_next_
  std::uint32_t pipeline_next_ = 0;
  bool closed_ = false;
  // The consumer's clock: from the first next() after construction/reset to the last return.
  bool clock_started_ = false;
  double clock_origin_s_ = 0, wall_s_ = 0, wait_s_ = 0;
  std::size_t batches_ = 0, images_ = 0;
};

// A batch of the C++ loader's CPU path exactly as `gpubase loader` makes it (jpeg_train_process
// into uint8 HWC pixels) for tests comparing the binding with it: batch `number` of `epoch`.
struct ReferenceBatch {
  std::vector<std::uint8_t> pixels;  // size x s x s x 3
  std::vector<std::int32_t> labels;
  std::size_t size = 0;
};
ReferenceBatch reference_batch(const SourceOptions& options, std::uint32_t epoch,
                               std::size_t number);

}  // namespace gb::python
