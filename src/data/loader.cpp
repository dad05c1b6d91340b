// data/loader.cpp: the worker pool behind Loader (see loader.hpp for the contract).
//
// One mutex guards the schedule: the next sample position to hand out, each slot's batch and
// fill count, the statistics. Workers hold it only to take a position and to record a finished
// one -- about 1 us of a sample's ~1-5 ms of decode and augment, so 16 workers at 1,000
// samples/s each take it 32,000 times a second, far from contention. Reading and processing run
// unlocked, each worker writing only its own position of a slot.
//
// Positions: the epoch's samples, numbered 0 .. samples_per_epoch-1 in this rank's order;
// position p belongs to batch p / batch_size, whose slot is (p / batch_size) % depth. A worker
// may take position p only when that slot is assigned to p's batch: slot s holds batch s at the
// start of the epoch and batch k + depth after the consumer releases batch k.
#include "data/loader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "core/cancel.hpp"
#include "core/error.hpp"

namespace gb::data {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr std::size_t kNoBatch = ~std::size_t{0};
constexpr std::size_t kLabelAlign = 256;  // labels start on their own 256-byte boundary
// Odd 64-bit constant (2^64 / golden ratio): seed + t * kSubstituteStep keys a substitute found
// t places further, distinct from the run's seed for every t > 0.
constexpr std::uint64_t kSubstituteStep = 0x9E3779B97F4A7C15ull;

// How long next() sleeps between looks at the Ctrl-C flag (a signal handler cannot notify a
// condition variable).
constexpr auto kCancelPoll = std::chrono::milliseconds(20);

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// A gb::Error keeps its kind; anything else is a runtime error.
ErrorKind kind_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    return x.kind();
  } catch (...) {
    return ErrorKind::runtime;
  }
}

}  // namespace

struct Loader::Impl {
  enum class SlotState { idle, filling, held };

  struct Slot {
    std::uint8_t* memory = nullptr;
    std::size_t bytes = 0;
    std::uint8_t* data = nullptr;
    std::int32_t* labels = nullptr;
    std::vector<std::size_t> indices;
    SlotState state = SlotState::idle;
    std::size_t batch = kNoBatch;
    std::uint32_t epoch = 0;
    std::uint64_t generation = 0;  // the start_epoch() call its batch belongs to
    std::size_t count = 0;  // positions in the batch
    std::size_t done = 0;   // positions finished
    std::size_t substituted = 0;
    Clock::time_point issued;
  };

  // What one position's work produced, recorded under the lock.
  struct JobOutcome {
    double busy_s = 0;
    TimeTotal read;
    TimeTotal process;
    std::array<TimeTotal, kMaxProcessStages> stages{};
    bool substituted = false;
    std::vector<std::pair<std::size_t, std::string>> newly_bad;  // index, reason
    std::exception_ptr error;
  };

  const Dataset& dataset;
  LoaderOptions options;
  ProcessFn process;
  SlotAllocator allocator;
  Sampler sampler;

  mutable std::mutex mu;
  std::condition_variable work_cv;      // workers: a slot was freed, an epoch began, stop
  std::condition_variable consumer_cv;  // consumer: a batch completed, an error, jobs drained
  std::vector<std::thread> threads;
  std::vector<Slot> slots;
  std::vector<std::atomic<std::uint64_t>> known_bad;  // one bit per dataset sample

  // Schedule (under mu).
  bool stopping = false;
  bool epoch_running = false;
  bool cancelled = false;
  std::uint32_t epoch = 0;
  std::uint64_t generation = 0;  // start_epoch() calls so far
  // Batch b of the epoch lives in slot (b + slot_offset) % slots: each epoch continues the ring
  // where the last one stopped, so its first batch takes the slot freed first.
  std::size_t slot_offset = 0;
  std::size_t total_positions = 0;
  std::size_t num_batches = 0;
  std::size_t next_position = 0;
  std::size_t next_delivery = 0;
  std::size_t active_jobs = 0;
  std::exception_ptr error;
  Clock::time_point epoch_start;

  LoaderStats stats;
  std::vector<std::size_t> scratch_capacity;  // per worker, reported under mu

  Impl(const Dataset& d, LoaderOptions o, ProcessFn p, SlotAllocator a)
      : dataset(d),
        options(std::move(o)),
        process(std::move(p)),
        allocator(std::move(a)),
        sampler(d.size(), options.sampling),
        known_bad((d.size() + 63) / 64) {}

  std::size_t batch_size() const { return options.sampling.batch_size; }
  std::size_t slot_of(std::size_t b) const { return (b + slot_offset) % slots.size(); }

  std::size_t batch_count(std::size_t b) const {
    return std::min(batch_size(), total_positions - b * batch_size());
  }

  void assign(Slot& slot, std::size_t b) {
    slot.state = SlotState::filling;
    slot.batch = b;
    slot.epoch = epoch;
    slot.generation = generation;
    slot.count = batch_count(b);
    slot.done = 0;
    slot.substituted = 0;
    slot.issued = Clock::now();
  }

  bool is_known_bad(std::size_t i) const {
    return (known_bad[i / 64].load(std::memory_order_relaxed) >> (i % 64)) & 1u;
  }
  // True when this call found it first (two workers may meet the same bad sample at once).
  bool mark_bad(std::size_t i) {
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    return (known_bad[i / 64].fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  }

  // Ends the epoch's clock (once per epoch).
  void end_epoch() {
    if (!epoch_running) return;
    epoch_running = false;
    stats.wall_s += seconds_since(epoch_start);
  }

  bool can_take_job() const {
    if (!epoch_running || error || next_position >= total_positions) return false;
    const std::size_t b = next_position / batch_size();
    const Slot& slot = slots[slot_of(b)];
    return slot.batch == b && slot.generation == generation && slot.state == SlotState::filling;
  }

  bool has_pending_work() const {
    return epoch_running && !error && next_position < total_positions;
  }

  // The work of one position, unlocked. Tries the position's sample, then (bad data, not
  // strict) the next ones in this rank's order until one is good.
  void run_job(unsigned worker, std::vector<std::uint8_t>& scratch, std::size_t position,
               std::uint8_t* dst, std::int32_t* label, std::size_t* index_out, JobOutcome& out) {
    const std::span<const std::size_t> order = sampler.indices();
    const std::size_t n = order.size();
    const std::span<std::uint8_t> out_bytes(dst, options.sample_bytes);
    for (std::size_t t = 0; t < n; ++t) {
      const std::size_t index = order[(position + t) % n];
      // Strict runs re-read a known-bad sample so the error gives its reason again.
      if (!options.strict && is_known_bad(index)) continue;
      std::string bad_reason;
      Sample sample;
      const Clock::time_point t_read = Clock::now();
      try {
        sample = dataset.read(index, scratch);
      } catch (const Error& e) {
        bad_reason = e.what();
      }
      out.read.add(seconds_since(t_read));
      if (bad_reason.empty()) {
        Philox rng(options.sampling.seed + t * kSubstituteStep, epoch, index);
        const SampleView view{sample.bytes, sample.label, index, worker};
        const Clock::time_point t_process = Clock::now();
        SampleResult r;
        try {
          r = process(view, rng, out_bytes);
        } catch (...) {
          throw Error(kind_of(std::current_exception()),
                      "loader: processing sample " + dataset.sample_name(index) +
                          " failed: " + describe(std::current_exception()));
        }
        out.process.add(seconds_since(t_process));
        for (std::size_t s = 0; s < out.stages.size(); ++s) out.stages[s].add(r.stage_s[s]);
        if (r.ok) {
          *label = sample.label;
          *index_out = index;
          out.substituted = t > 0;
          return;
        }
        bad_reason = r.reason.empty() ? "rejected by the decoder" : std::move(r.reason);
      }
      if (mark_bad(index)) out.newly_bad.emplace_back(index, bad_reason);
      if (options.strict) {
        throw Error(ErrorKind::usage,
                    "bad sample " + dataset.sample_name(index) + ": " + bad_reason);
      }
    }
    throw Error(ErrorKind::usage, "loader: every sample of the epoch is bad (" + std::to_string(n) +
                                      " tried from position " + std::to_string(position) + ")");
  }

  void record(unsigned worker, Slot& slot, JobOutcome& out) {
    stats.worker_busy_s[worker] += out.busy_s;
    auto merge = [](TimeTotal& into, const TimeTotal& from) {
      into.total_s += from.total_s;
      into.max_s = std::max(into.max_s, from.max_s);
      into.count += from.count;
    };
    merge(stats.read, out.read);
    merge(stats.process, out.process);
    for (std::size_t s = 0; s < stats.stages.size(); ++s) {
      merge(stats.stages[s].time, out.stages[s]);
    }
    for (auto& [index, reason] : out.newly_bad) {
      ++stats.bad_samples;
      if (stats.bad_examples.size() < ScanReport::kMaxExamples) {
        stats.bad_examples.push_back(dataset.sample_name(index) + ": " + reason);
      }
    }
    if (out.error) {
      if (!error) error = out.error;
      consumer_cv.notify_all();
      return;
    }
    if (out.substituted) {
      ++slot.substituted;
      ++stats.substituted;
    }
    if (++slot.done == slot.count) {
      stats.batch_latency.add(seconds_since(slot.issued));
      consumer_cv.notify_all();
    }
  }

  void worker_main(unsigned worker) {
    std::vector<std::uint8_t> scratch;
    std::unique_lock lock(mu);
    while (!stopping) {
      if (!can_take_job()) {
        const bool blocked_on_slot = has_pending_work();
        const Clock::time_point t0 = Clock::now();
        work_cv.wait(lock);
        if (blocked_on_slot) stats.wait_slot_s += seconds_since(t0);
        continue;
      }
      const std::size_t position = next_position++;
      const std::size_t b = position / batch_size();
      Slot& slot = slots[slot_of(b)];
      const std::size_t j = position - b * batch_size();
      ++active_jobs;
      lock.unlock();

      JobOutcome out;
      const Clock::time_point t_job = Clock::now();
      try {
        run_job(worker, scratch, position, slot.data + j * options.sample_bytes, slot.labels + j,
                slot.indices.data() + j, out);
      } catch (const Error&) {
        out.error = std::current_exception();
      } catch (...) {  // std::bad_alloc and the like, from reading
        out.error = std::make_exception_ptr(
            Error(ErrorKind::runtime, "loader: reading sample " +
                                          dataset.sample_name(sampler.indices()[position]) +
                                          " failed: " + describe(std::current_exception())));
      }

      out.busy_s = seconds_since(t_job);
      lock.lock();
      scratch_capacity[worker] = scratch.capacity();
      record(worker, slot, out);
      if (--active_jobs == 0) consumer_cv.notify_all();
    }
  }

  void allocate_slots() {
    const std::size_t data_bytes =
        (batch_size() * options.sample_bytes + kLabelAlign - 1) / kLabelAlign * kLabelAlign;
    const std::size_t bytes = data_bytes + batch_size() * sizeof(std::int32_t);
    slots.resize(options.prefetch_depth);
    for (Slot& slot : slots) {
      slot.memory = static_cast<std::uint8_t*>(allocator.allocate(bytes));
      if (slot.memory == nullptr) {
        throw Error(ErrorKind::runtime,
                    "loader: could not allocate a " + std::to_string(bytes) + "-byte batch slot");
      }
      slot.bytes = bytes;
      slot.data = slot.memory;
      slot.labels = reinterpret_cast<std::int32_t*>(slot.memory + data_bytes);
      slot.indices.assign(batch_size(), 0);
    }
  }

  void free_slots() {
    for (Slot& slot : slots) {
      if (slot.memory != nullptr) allocator.deallocate(slot.memory, slot.bytes);
      slot.memory = nullptr;
    }
  }

  void reset_stats_locked() {
    stats = LoaderStats{};
    stats.workers = options.workers;
    stats.worker_busy_s.assign(options.workers, 0.0);
    for (const std::string& name : options.process_stages) stats.stages.push_back({name, {}});
  }
};

Loader::Loader(const Dataset& dataset, LoaderOptions options, ProcessFn process,
               SlotAllocator allocator) {
  if (options.sample_bytes == 0) throw Error(ErrorKind::usage, "loader: sample_bytes is 0");
  if (options.workers == 0) throw Error(ErrorKind::usage, "loader: at least one worker needed");
  if (options.prefetch_depth == 0) throw Error(ErrorKind::usage, "loader: prefetch depth is 0");
  if (options.process_stages.size() > kMaxProcessStages) {
    throw Error(ErrorKind::usage, "loader: at most 4 process stages can be timed");
  }
  if (!process) throw Error(ErrorKind::usage, "loader: no process function");
  if (!allocator.allocate || !allocator.deallocate) {
    throw Error(ErrorKind::usage, "loader: the slot allocator needs allocate and deallocate");
  }
  impl_ =
      std::make_unique<Impl>(dataset, std::move(options), std::move(process), std::move(allocator));
  Impl& m = *impl_;
  m.reset_stats_locked();
  m.scratch_capacity.assign(m.options.workers, 0);
  try {
    m.allocate_slots();
    for (unsigned w = 0; w < m.options.workers; ++w) {
      m.threads.emplace_back([&m, w] { m.worker_main(w); });
    }
  } catch (...) {
    stop();
    m.free_slots();
    throw;
  }
}

Loader::~Loader() {
  stop();
  impl_->free_slots();
}

void Loader::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    m.stopping = true;
    m.end_epoch();
  }
  m.work_cv.notify_all();
  m.consumer_cv.notify_all();
  for (std::thread& t : m.threads) {
    if (t.joinable()) t.join();
  }
}

void Loader::start_epoch(std::uint32_t epoch) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  if (m.stopping) throw Error(ErrorKind::runtime, "loader: start_epoch after stop()");
  // Abandon what is left of the current epoch: no new positions, and the ones in hand finish
  // (they write into slots and read the sampler's order, both about to change).
  m.end_epoch();
  m.consumer_cv.wait(lock, [&m] { return m.active_jobs == 0; });

  m.sampler.set_epoch(epoch);
  m.epoch = epoch;
  ++m.generation;
  m.error = nullptr;
  m.cancelled = false;
  m.slot_offset = (m.slot_offset + m.num_batches) % m.slots.size();  // after the last epoch's
  m.total_positions = m.sampler.samples_per_epoch();
  m.num_batches = m.sampler.num_batches();
  m.next_position = 0;
  m.next_delivery = 0;
  // A batch of the last epoch still held (its H2D copy in flight) keeps its slot; the slot takes
  // its first batch of this epoch when it is released, so prefetch runs on across the boundary.
  for (std::size_t k = 0; k < m.slots.size(); ++k) {
    Impl::Slot& slot = m.slots[m.slot_of(k)];
    if (slot.state == Impl::SlotState::held) continue;
    if (k < m.num_batches) {
      m.assign(slot, k);
    } else {
      slot.state = Impl::SlotState::idle;
      slot.batch = kNoBatch;
    }
  }
  m.epoch_running = true;
  m.epoch_start = Clock::now();
  lock.unlock();
  m.work_cv.notify_all();
}

std::optional<Batch> Loader::next() {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  if (m.error) {
    m.end_epoch();
    std::rethrow_exception(m.error);
  }
  if (m.stopping || !m.epoch_running || m.next_delivery >= m.num_batches) return std::nullopt;
  const std::size_t b = m.next_delivery;
  Impl::Slot& slot = m.slots[m.slot_of(b)];
  if (slot.batch != b || slot.generation != m.generation ||
      slot.state == Impl::SlotState::held) {
    throw Error(ErrorKind::runtime, "loader: next() while all " + std::to_string(m.slots.size()) +
                                        " slots are held: release a batch first");
  }
  const Clock::time_point t0 = Clock::now();
  while (true) {
    if (cancel_requested()) {
      // Ctrl-C: the epoch ends with what was delivered. Positions in hand finish on their own.
      m.cancelled = true;
      ++m.stats.epochs_cancelled;
      m.end_epoch();
      return std::nullopt;
    }
    if (m.error) {
      m.end_epoch();
      std::rethrow_exception(m.error);
    }
    if (m.stopping) return std::nullopt;
    if (slot.done == slot.count) break;
    m.consumer_cv.wait_for(lock, kCancelPoll);
  }
  m.stats.consumer_wait.add(seconds_since(t0));

  slot.state = Impl::SlotState::held;
  ++m.next_delivery;
  ++m.stats.batches;
  m.stats.samples += slot.count;
  if (m.next_delivery == m.num_batches) m.end_epoch();

  const std::size_t sample_bytes = m.options.sample_bytes;
  Batch batch;
  batch.epoch = m.epoch;
  batch.number = b;
  batch.size = slot.count;
  batch.slot = m.slot_of(b);
  batch.data = std::span<std::uint8_t>(slot.data, slot.count * sample_bytes);
  batch.labels = std::span<std::int32_t>(slot.labels, slot.count);
  batch.indices = std::span<const std::size_t>(slot.indices.data(), slot.count);
  batch.substituted = slot.substituted;
  return batch;
}

void Loader::release(const Batch& batch) {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    if (batch.slot >= m.slots.size()) throw Error(ErrorKind::runtime, "loader: no such slot");
    Impl::Slot& slot = m.slots[batch.slot];
    if (slot.state != Impl::SlotState::held || slot.batch != batch.number ||
        slot.epoch != batch.epoch) {
      throw Error(ErrorKind::runtime,
                  "loader: release of batch " + std::to_string(batch.number) + " that is not held");
    }
    // A batch of an earlier epoch hands its slot to that slot's first batch of this one.
    const std::size_t n = m.slots.size();
    const std::size_t following = slot.generation == m.generation
                                      ? batch.number + n
                                      : (batch.slot + n - m.slot_offset % n) % n;
    if (m.epoch_running && !m.error && following < m.num_batches) {
      m.assign(slot, following);
    } else {
      slot.state = Impl::SlotState::idle;
      slot.batch = kNoBatch;
    }
  }
  m.work_cv.notify_all();
}

bool Loader::epoch_cancelled() const {
  std::lock_guard lock(impl_->mu);
  return impl_->cancelled;
}

std::size_t Loader::num_batches() const {
  return impl_->sampler.num_batches();
}

const Sampler& Loader::sampler() const {
  return impl_->sampler;
}

const LoaderOptions& Loader::options() const {
  return impl_->options;
}

LoaderStats Loader::stats() const {
  std::lock_guard lock(impl_->mu);
  LoaderStats s = impl_->stats;
  if (impl_->epoch_running) s.wall_s += seconds_since(impl_->epoch_start);
  return s;
}

void Loader::reset_stats() {
  std::lock_guard lock(impl_->mu);
  impl_->reset_stats_locked();
  if (impl_->epoch_running) impl_->epoch_start = Clock::now();
}

LoaderMemory Loader::memory() const {
  const Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  LoaderMemory mem;
  for (const Impl::Slot& slot : m.slots) {
    mem.slot_bytes += slot.bytes;
    mem.index_bytes += slot.indices.capacity() * sizeof(std::size_t);
  }
  for (std::size_t c : m.scratch_capacity) mem.scratch_bytes += c;
  mem.index_bytes += m.sampler.capacity_bytes() + m.known_bad.size() * sizeof(std::uint64_t);
  return mem;
}

}  // namespace gb::data
