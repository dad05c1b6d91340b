// bench/gpu/amp_run.cpp: the amp study's GPU half. The dataset is normalised on the host (mean
// and standard deviation of the training pixels), converted to the input dtype each precision
// asks for and uploaded once; each epoch draws a permutation from (seed, epoch) -- the same for
// every precision -- and gathers the shuffled copy on the GPU, so a step reads one contiguous
// batch. The loss is read every kLossEvery steps (one sync), not every step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>

#include "bench/amp.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/float_bits.hpp"
#include "data/idx.hpp"

#if GPUBASE_WITH_NN
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/gather.hpp"
#include "nn/trainer.hpp"
#endif

namespace gb::bench {

#if GPUBASE_WITH_NN

namespace {

constexpr std::size_t kLossEvery = 25;
constexpr double kFp16MinSubnormal = 5.9604644775390625e-08;  // 2^-24

// A dataset split normalised to float, pixel after pixel, with int32 labels.
struct HostSplit {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::size_t n = 0, row = 0;  // samples, values per sample
};

HostSplit load_split(const data::IdxDataset& d, double mean, double stddev) {
  HostSplit s;
  const auto shape = d.raw_shape();
  s.n = d.size();
  s.row = shape->bytes();
  s.x.resize(s.n * s.row);
  const auto px = d.pixels();
  for (std::size_t i = 0; i < s.x.size(); ++i)
    s.x[i] = static_cast<float>((px[i] / 255.0 - mean) / stddev);
  s.y.resize(s.n);
  for (std::size_t i = 0; i < s.n; ++i) s.y[i] = d.label(i);
  return s;
}

// The split on the device in the dtype the model takes.
struct DeviceSplit {
  gpu::DeviceBuffer x, y;
  std::size_t row_bytes = 0;
};

// Rows are allocated up to a whole number of batches (zeros past the end): the engine's forward
// pass reads a full batch even when evaluate() counts fewer.
DeviceSplit upload(const HostSplit& s, ElementType dtype, std::size_t batch) {
  DeviceSplit d;
  const std::size_t elem = element_bytes(dtype);
  const std::size_t rows = (s.n + batch - 1) / batch * batch;
  d.row_bytes = s.row * elem;
  d.x = gpu::DeviceBuffer(rows * d.row_bytes);
  d.y = gpu::DeviceBuffer(rows * sizeof(std::int32_t));
  GB_CHECK_CUDA(cudaMemset(d.x.data(), 0, d.x.bytes()));
  GB_CHECK_CUDA(cudaMemset(d.y.data(), 0, d.y.bytes()));
  if (dtype == ElementType::f32) {
    GB_CHECK_CUDA(cudaMemcpy(d.x.data(), s.x.data(), s.x.size() * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<std::uint16_t> bits(s.x.size());
    for (std::size_t i = 0; i < bits.size(); ++i)
      bits[i] = dtype == ElementType::f16 ? float_to_half_bits(s.x[i])
                                          : float_to_bf16_bits(s.x[i]);
    GB_CHECK_CUDA(cudaMemcpy(d.x.data(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
  GB_CHECK_CUDA(cudaMemcpy(d.y.data(), s.y.data(), s.n * 4, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before the DMA lands, and the trainer's stream is
  // non-blocking: the gathers and steps on it must not start before the data is there.
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  return d;
}

// The permutation of epoch `epoch` for seed `seed`: the same whatever the precision.
std::vector<std::int32_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch) {
  std::vector<std::int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

const AmpRunRecord* find_record(const std::vector<AmpRunRecord>& records, const std::string& p,
                                std::uint64_t seed) {
  for (const AmpRunRecord& r : records)
    if (r.precision == p && r.seed == seed) return &r;
  return nullptr;
}

// The dataset of the study, on the host: both splits normalised with the training pixels'
// mean and standard deviation, and the model's input shape with the dataset's classes.
struct StudyData {
  std::string dir;
  Model model = Model::small_resnet;
  nn::InputShape input;
  HostSplit train, test;
};

StudyData load_study_data(const AmpOptions& options) {
  StudyData d;
  d.dir = options.data.empty() ? default_fashion_mnist_dir() : options.data;
  if (d.dir.empty())
    throw Error(ErrorKind::usage,
                "no dataset: Fashion-MNIST was not found in $GPUBASE_FASHION_MNIST, "
                "/usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist) or "
                ".deps/usr/share/datasets/fashion-mnist; pass --data DIR (an IDX folder with "
                "train-* and t10k-* files)");
  const auto train_set = data::open_idx_split(d.dir, "train");
  const auto test_set = data::open_idx_split(d.dir, "t10k");
  d.model = *parse_model(options.model);
  d.input = nn::default_input(d.model);
  const auto shape = train_set->raw_shape();
  const auto wxhxc = [](auto w, auto h, auto c) {
    return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c);
  };
  if (!shape || static_cast<int>(shape->height) != d.input.height ||
      static_cast<int>(shape->width) != d.input.width ||
      static_cast<int>(shape->channels) != d.input.channels)
    throw Error(ErrorKind::usage,
                "--data: " + d.dir + " holds " +
                    (shape ? wxhxc(shape->width, shape->height, shape->channels)
                           : std::string("non-raw")) +
                    " images; the model " + options.model + " takes " +
                    wxhxc(d.input.width, d.input.height, d.input.channels));
  int classes = 0;
  for (std::size_t i = 0; i < train_set->size(); ++i)
    classes = std::max(classes, train_set->label(i) + 1);
  d.input.classes = std::max(classes, 2);

  double sum = 0, sq = 0;
  for (std::uint8_t p : train_set->pixels()) {
    sum += p / 255.0;
    sq += (p / 255.0) * (p / 255.0);
  }
  const double count = static_cast<double>(train_set->pixels().size());
  const double mean = sum / count;
  const double stddev = std::sqrt(std::max(sq / count - mean * mean, 1e-12));
  d.train = load_split(*train_set, mean, stddev);
  d.test = load_split(*test_set, mean, stddev);
  return d;
}

// What one run (a precision and a seed) trains with: the study's data on the device, the
// schedule, and the runs finished before it (FP32 reads the FP16 run's scales).
struct RunPlan {
  const AmpOptions& options;
  const StudyData& data;
  const DeviceSplit& train_dev;
  const DeviceSplit& test_dev;
  std::size_t batch = 0, steps_per_epoch = 0, total_steps = 0;
  const std::vector<AmpRunRecord>& finished;
};

// Epoch `e`'s steps on the epoch's shuffled copy; false when the loss went non-finite.
bool train_epoch(const RunPlan& plan, nn::Trainer& trainer, int e, std::uint64_t seed,
                 std::size_t& step, AmpEpoch& ep) {
  const HostSplit& train = plan.data.train;
  const cudaStream_t stream = trainer.stream();
  gpu::DeviceBuffer index(train.n * sizeof(std::int32_t));
  gpu::DeviceBuffer shuffled_x(train.n * plan.train_dev.row_bytes);
  gpu::DeviceBuffer shuffled_y(train.n * sizeof(std::int32_t));
  const std::vector<std::int32_t> perm = epoch_order(train.n, seed, e);
  GB_CHECK_CUDA(cudaMemcpyAsync(index.data(), perm.data(), perm.size() * 4,
                                cudaMemcpyHostToDevice, stream));
  gpu::gather_rows(plan.train_dev.x.data(), index.as<std::int32_t>(), train.n,
                   plan.train_dev.row_bytes, shuffled_x.data(), stream);
  gpu::gather_rows(plan.train_dev.y.data(), index.as<std::int32_t>(), train.n, 4,
                   shuffled_y.data(), stream);
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));  // perm stays valid until the copy ran

  const gpu::Event start = gpu::Event::create(), stop = gpu::Event::create();
  double loss_sum = 0;
  std::size_t loss_n = 0;
  bool finite = true;
  start.record(stream);
  for (std::size_t i = 0; i < plan.steps_per_epoch; ++i, ++step) {
    trainer.set_learning_rate(static_cast<float>(amp_learning_rate(
        plan.options.learning_rate, step, plan.steps_per_epoch, plan.total_steps)));
    nn::DeviceBatch b;
    b.images = static_cast<const std::uint8_t*>(shuffled_x.data()) +
               i * plan.batch * plan.train_dev.row_bytes;
    b.labels = shuffled_y.as<std::int32_t>() + i * plan.batch;
    trainer.train_step(b);
    if ((i + 1) % kLossEvery != 0 && i + 1 != plan.steps_per_epoch) continue;
    const nn::StepResult r = trainer.last_step();
    if (!std::isfinite(r.loss) && !r.skipped) {
      finite = false;
      break;
    }
    if (std::isfinite(r.loss)) {
      loss_sum += r.loss;
      ++loss_n;
    }
    throw_if_cancelled();
  }
  stop.record(stream);
  stop.synchronize();
  ep.seconds = gpu::Event::elapsed_ms(start, stop) / 1000.0;
  ep.images_per_s = ep.seconds > 0
                        ? static_cast<double>(plan.steps_per_epoch * plan.batch) / ep.seconds
                        : 0;
  ep.train_loss = loss_n ? loss_sum / static_cast<double>(loss_n) : NAN;
  return finite;
}

// FP32 runs: the share of the epoch's last gradients FP16 cannot hold, as they are and at the
// FP16 run's scale of that epoch.
void measure_underflow(const RunPlan& plan, nn::Trainer& trainer, std::uint64_t seed, int e,
                       AmpEpoch& ep) {
  const std::vector<float> g = trainer.gradients();
  std::size_t nonzero = 0, under = 0, under_scaled = 0;
  const AmpRunRecord* f16 = find_record(plan.finished, "fp16", seed);
  const double scale = f16 && static_cast<std::size_t>(e) <= f16->epochs.size()
                           ? f16->epochs[static_cast<std::size_t>(e) - 1].loss_scale
                           : 65536.0;
  for (float v : g) {
    if (v == 0) continue;
    ++nonzero;
    const double a = std::fabs(static_cast<double>(v));
    if (a < kFp16MinSubnormal) ++under;
    if (a * scale < kFp16MinSubnormal) ++under_scaled;
  }
  if (!nonzero) return;
  ep.underflow_unscaled_pct = 100.0 * static_cast<double>(under) / static_cast<double>(nonzero);
  ep.underflow_scaled_pct =
      100.0 * static_cast<double>(under_scaled) / static_cast<double>(nonzero);
}

// Test accuracy in %, over the whole test split.
double test_accuracy(const RunPlan& plan, nn::Trainer& trainer) {
  const HostSplit& test = plan.data.test;
  std::size_t correct = 0;
  for (std::size_t off = 0; off < test.n; off += plan.batch) {
    const int n = static_cast<int>(std::min(plan.batch, test.n - off));
    nn::DeviceBatch b;
    b.images = static_cast<const std::uint8_t*>(plan.test_dev.x.data()) +
               off * plan.test_dev.row_bytes;
    b.labels = plan.test_dev.y.as<std::int32_t>() + off;
    correct += trainer.evaluate(b, n);
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(test.n);
}

std::string epoch_line(const AmpRunRecord& rec, const AmpEpoch& ep, int epochs) {
  std::string line = "amp: " + rec.precision + " seed " + std::to_string(rec.seed) + " epoch " +
                     std::to_string(ep.epoch) + "/" + std::to_string(epochs) + ": loss " +
                     fmt("%.4f", ep.train_loss) + ", test " + fmt("%.2f", ep.test_accuracy_pct) +
                     " %, " + fmt("%.0f", ep.images_per_s) + " images/s";
  if (rec.precision == "fp16")
    line += ", scale " + fmt("%.0f", ep.loss_scale) + ", skipped " +
            std::to_string(ep.skipped_steps);
  if (rec.diverged) line += " -- diverged (non-finite loss), run stopped";
  return line;
}

// One run: a trainer from the seed's weights, every epoch until the last or a non-finite loss.
AmpRunRecord train_run(const RunPlan& plan, nn::Trainer& trainer, const std::string& p,
                       std::uint64_t seed, ResultSink& sink) {
  AmpRunRecord rec;
  rec.precision = p;
  rec.seed = seed;
  std::size_t step = 0;
  for (int e = 1; e <= plan.options.epochs && !rec.diverged; ++e) {
    AmpEpoch ep;
    ep.epoch = e;
    rec.diverged = !train_epoch(plan, trainer, e, seed, step, ep);
    const auto stats = trainer.scaler_stats();
    ep.loss_scale = stats.scale;
    ep.skipped_steps = stats.skipped;
    if (p == "fp32") measure_underflow(plan, trainer, seed, e, ep);
    ep.test_accuracy_pct = test_accuracy(plan, trainer);
    rec.epochs.push_back(ep);
    sink.progress(epoch_line(rec, ep, plan.options.epochs));
  }
  rec.steps = step;
  return rec;
}

nn::TrainerOptions trainer_options(const AmpOptions& options, const StudyData& data,
                                   Precision precision, std::uint64_t seed) {
  nn::TrainerOptions to;
  to.model = data.model;
  to.precision = precision;
  to.batch = options.batch;
  to.input = data.input;
  to.seed = seed;
  to.learning_rate = options.learning_rate;
  to.momentum = options.momentum;
  to.weight_decay = options.weight_decay;
  return to;
}

}  // namespace

AmpOutcome run_amp(const AmpOptions& options, ResultSink& sink) {
  if (options.speed) return run_amp_speed(options, sink);
  validate_amp_options(options);
  sink.declare_sections(amp_section_rules());
  AmpOutcome out;
  const std::optional<DeviceContext> device = open_device(options.device, out.no_gpu_reason);
  if (!device) {
    add_amp_skipped(options, out.no_gpu_reason, sink);
    out.gpu_found = false;
    return out;
  }
  const StudyData data = load_study_data(options);
  sink.add_fact({"amp.data", "dataset", data.dir + " (" + std::to_string(data.train.n) +
                                            " train, " + std::to_string(data.test.n) + " test, " +
                                            std::to_string(data.input.classes) + " classes)"});
  const std::size_t batch = static_cast<std::size_t>(options.batch);
  if (data.train.n < batch)
    throw Error(ErrorKind::usage, "--batch " + std::to_string(batch) + " is larger than the " +
                                      std::to_string(data.train.n) + " training samples");
  const std::size_t steps_per_epoch = data.train.n / batch;  // drop last

  // The comparison across precisions is made when the suite ends, so Ctrl-C keeps the runs
  // finished before it.
  const auto records = std::make_shared<std::vector<AmpRunRecord>>();
  sink.at_end([records, options](ResultSink& s, bool) { add_amp_results(*records, options, s); });

  // FP16 first, so the FP32 runs can measure underflow at the FP16 run's scale of each epoch.
  std::vector<std::string> order = options.precisions;
  std::stable_partition(order.begin(), order.end(), [](const std::string& p) { return p == "fp16"; });
  for (const std::string& p : order) {
    const Precision precision = *parse_precision(p);
    std::optional<DeviceSplit> train_dev, test_dev;
    for (int s = 0; s < options.seeds; ++s) {
      const std::uint64_t seed = static_cast<std::uint64_t>(s) + 1;
      nn::Trainer trainer(trainer_options(options, data, precision, seed));
      if (!train_dev) {
        train_dev = upload(data.train, trainer.input_format().dtype, batch);
        test_dev = upload(data.test, trainer.input_format().dtype, batch);
      }
      const RunPlan plan{options,         data,           *train_dev,
                         *test_dev,       batch,          steps_per_epoch,
                         steps_per_epoch * static_cast<std::size_t>(options.epochs), *records};
      records->push_back(train_run(plan, trainer, p, seed, sink));
    }
  }
  return out;
}

#endif  // GPUBASE_WITH_NN

}  // namespace gb::bench
