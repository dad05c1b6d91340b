// data/loader.cpp: the worker pool behind Loader (see loader.hpp for the contract).
//
// One mutex guards the schedule: the next sample position to hand out, each slot's batch and
// fill count, the statistics. Workers hold it only to take a position and to record a finished
// one -- about 1 us of a sample's ~1-5 ms of decode and augment, so 16 workers at 1,000
// samples/s each take it 32,000 times a second, far from contention. Reading and processing run
// unlocked, each worker writing only its own position of a slot.
//
// Runs: an epoch's schedule (its epoch, sample order, ring offset, next position, error) is a
// Run. `cur` is the epoch start_epoch() began; `ahead` is epoch cur + 1 begun early, so that the
// workers do not sit idle from cur's last position handed out until the consumer has taken cur's
// last batch and called start_epoch(cur + 1) -- with a 2-batch epoch that was a third of the time.
// Positions: a run's samples, numbered 0 .. samples_per_epoch-1 in this rank's order; position p
// belongs to batch p / batch_size, whose slot is (p / batch_size + the run's offset) % depth. A
// worker may take position p only when that slot is assigned to p's batch of p's run
// (Slot::generation names the run): slot (s + offset) % depth holds batch s at the start of the
// epoch (s < depth) and batch k + depth after the consumer releases batch k.
//
// The look-ahead, step by step:
//   - Once every position of cur has been handed out, a worker with nothing else to do computes
//     epoch cur + 1's order into the spare Sampler, unlocked (cur's jobs still read cur's order
//     for substitutes, so the two need separate buffers), and opens `ahead` with the offset
//     start_epoch(cur + 1) would give it: (cur's offset + batches per epoch) % depth.
//   - From then on a slot cur no longer needs -- idle, or released with no later batch of cur to
//     take -- takes its batch of cur + 1, and workers take cur + 1's positions whenever cur has
//     none left. Each slot can hold one batch of cur + 1 before adoption (its next one needs the
//     previous delivered and released), so the look-ahead is at most one ring of batches, and
//     never more than one epoch.
//   - start_epoch(cur + 1) after cur delivered every batch adopts it: ahead becomes cur (the
//     samplers swap roles), jobs in hand carry on, filled batches are delivered at once. Any
//     other start_epoch() (another epoch, or cur unfinished, cancelled or failed) discards it
//     exactly as it abandons cur: wait for the jobs in hand, then assign the slots afresh.
//   - The look-ahead's error is its own: cur's next() never sees it; adopted, it is cur's.
//     Its timing totals wait in `ahead_work` until start_epoch() adopts or discards it, so that
//     stats() counts the epochs begun; a bad sample is counted when found (its known-bad bit is
//     set then, and a later epoch would not count it again).
// Batch contents never depend on this: a position's output is a function of (seed, epoch, the
// epoch's order, position), whichever run, worker or slot computes it.
#include "data/loader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/thread_name.hpp"

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
    std::uint64_t generation = 0;  // the run (Run::generation) its batch belongs to
    std::size_t count = 0;         // positions in the batch
    std::size_t done = 0;          // positions finished
    std::size_t substituted = 0;
    Clock::time_point issued;
  };

  // One epoch's schedule: the current epoch's, or the next one's begun ahead of start_epoch().
  struct Run {
    std::uint32_t epoch = 0;
    std::uint64_t generation = 0;  // distinct for every run begun; 0: none
    // Batch b lives in slot (b + slot_offset) % slots: each epoch continues the ring where the
    // last one stopped, so its first batch takes the slot freed first.
    std::size_t slot_offset = 0;
    std::size_t next_position = 0;  // the next one to hand to a worker
    Sampler* sampler = nullptr;     // the epoch's order
    std::exception_ptr error;       // the first worker error, for next() to rethrow
  };

  enum class AheadState { none, preparing, running };

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
  // cur's order and the look-ahead's: two, because cur's jobs read cur's order (substitutes)
  // while the next epoch's is computed. They swap roles when start_epoch() adopts.
  std::array<Sampler, 2> samplers;

  mutable std::mutex mu;
  std::condition_variable work_cv;      // workers: a slot was freed, an epoch began, stop
  std::condition_variable consumer_cv;  // consumer: a batch completed, an error, jobs drained
  std::vector<std::thread> threads;
  std::vector<Slot> slots;
  std::vector<std::atomic<std::uint64_t>> known_bad;  // one bit per dataset sample

  // Schedule (under mu).
  bool stopping = false;
  bool open = false;           // cur hands out positions (start_epoch() to abandon, Ctrl-C, stop)
  bool epoch_running = false;  // cur's clock runs: start_epoch() to its last batch delivered
  bool cancelled = false;
  std::uint64_t generations = 0;  // runs begun so far
  // Per epoch, and the same for every epoch: they depend on the dataset size and options only.
  std::size_t total_positions = 0;
  std::size_t num_batches = 0;
  Run cur;
  Run ahead;  // epoch cur.epoch + 1 while ahead_state is running
  AheadState ahead_state = AheadState::none;
  std::size_t next_delivery = 0;  // cur's
  std::size_t active_jobs = 0;    // positions in hand, and a look-ahead order being computed
  Clock::time_point epoch_start;
  // When cur's clock last stopped (or stats were reset since): an adopted epoch's clock starts
  // here, not at start_epoch(), since its work began while the consumer finished the last epoch.
  // Back-to-back epochs so keep one unbroken clock, and the look-ahead's work stays inside it.
  Clock::time_point epoch_end;

  LoaderStats stats;
  LoaderStats ahead_work;  // the look-ahead's times and substitutes, until start_epoch() settles
  std::vector<std::size_t> scratch_capacity;  // per worker, reported under mu

  Impl(const Dataset& d, LoaderOptions o, ProcessFn p, SlotAllocator a)
      : dataset(d),
        options(std::move(o)),
        process(std::move(p)),
        allocator(std::move(a)),
        samplers{Sampler(d.size(), options.sampling), Sampler(d.size(), options.sampling)},
        known_bad((d.size() + 63) / 64) {
    cur.sampler = &samplers[0];
  }

  std::size_t batch_size() const { return options.sampling.batch_size; }
  std::size_t slot_of(const Run& run, std::size_t b) const {
    return (b + run.slot_offset) % slots.size();
  }
  // The batch of `run` that slot s holds first: the k < depth with slot_of(run, k) == s.
  std::size_t first_batch_in(const Run& run, std::size_t s) const {
    const std::size_t n = slots.size();
    return (s + n - run.slot_offset % n) % n;
  }
  Sampler& spare_sampler() { return cur.sampler == &samplers[0] ? samplers[1] : samplers[0]; }

  std::size_t batch_count(std::size_t b) const {
    return std::min(batch_size(), total_positions - b * batch_size());
  }

  void assign(Slot& slot, const Run& run, std::size_t b) {
    slot.state = SlotState::filling;
    slot.batch = b;
    slot.epoch = run.epoch;
    slot.generation = run.generation;
    slot.count = batch_count(b);
    slot.done = 0;
    slot.substituted = 0;
    slot.issued = Clock::now();
  }

  void make_idle(Slot& slot) {
    slot.state = SlotState::idle;
    slot.batch = kNoBatch;
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
    epoch_end = Clock::now();
    stats.wall_s += std::chrono::duration<double>(epoch_end - epoch_start).count();
  }

  bool cur_open() const { return open && !cur.error; }
  // The look-ahead works only while cur can still end normally: after an error or Ctrl-C in cur,
  // start_epoch() will discard it.
  bool ahead_open() const {
    return ahead_state == AheadState::running && cur_open() && !ahead.error;
  }

  bool can_take_job(const Run& run) const {
    if (run.next_position >= total_positions) return false;
    const std::size_t b = run.next_position / batch_size();
    const Slot& slot = slots[slot_of(run, b)];
    return slot.batch == b && slot.generation == run.generation && slot.state == SlotState::filling;
  }

  // cur's positions first: the consumer waits for them.
  Run* runnable() {
    if (cur_open() && can_take_job(cur)) return &cur;
    if (ahead_open() && can_take_job(ahead)) return &ahead;
    return nullptr;
  }

  // For wait_slot_s, which counts only while an epoch's clock runs (as wall_s does): not while
  // the look-ahead waits for slots the consumer holds between epochs.
  bool has_pending_work() const {
    if (!epoch_running) return false;
    return (cur_open() && cur.next_position < total_positions) ||
           (ahead_open() && ahead.next_position < total_positions);
  }

  // Every position of cur handed out: time to compute the next epoch's order (there is none
  // after the largest epoch number).
  bool should_prepare_ahead() const {
    return ahead_state == AheadState::none && cur_open() && num_batches > 0 &&
           cur.next_position >= total_positions &&
           cur.epoch != std::numeric_limits<std::uint32_t>::max();
  }

  // A slot cur no longer needs takes its batch of the look-ahead, when that epoch has one there
  // (an epoch of fewer batches than slots leaves some slots idle).
  void offer_to_ahead(std::size_t s) {
    Slot& slot = slots[s];
    if (!ahead_open() || slot.state != SlotState::idle) return;
    const std::size_t k = first_batch_in(ahead, s);
    if (k < num_batches) assign(slot, ahead, k);
  }

  // Computes epoch cur + 1's order into the spare sampler, unlocked (a shuffle of the whole
  // dataset, ~7 ms for ImageNet, that start_epoch() then no longer does), then opens the
  // look-ahead and gives it the slots that are free already.
  void prepare_ahead(std::unique_lock<std::mutex>& lock) {
    ahead_state = AheadState::preparing;
    ++active_jobs;  // start_epoch() waits for it as for a sample in hand
    Sampler& order = spare_sampler();
    const std::uint32_t epoch = cur.epoch + 1;
    lock.unlock();
    order.set_epoch(epoch);
    lock.lock();
    --active_jobs;
    ahead = Run{.epoch = epoch,
                .generation = ++generations,
                .slot_offset = (cur.slot_offset + num_batches) % slots.size(),
                .next_position = 0,
                .sampler = &order,
                .error = nullptr};
    ahead_state = AheadState::running;
    for (std::size_t s = 0; s < slots.size(); ++s) offer_to_ahead(s);
    work_cv.notify_all();
    consumer_cv.notify_all();  // start_epoch() may be waiting for the order or for active_jobs
  }

  // start_epoch(cur + 1) right after cur delivered its last batch: the look-ahead is that epoch.
  bool can_adopt(std::uint32_t epoch) const {
    return ahead_state != AheadState::none && cur_open() && next_delivery == num_batches &&
           std::uint64_t{epoch} == std::uint64_t{cur.epoch} + 1;
  }

  // Makes the look-ahead cur without waiting for its jobs in hand (they record into cur when
  // they finish, being of the same run).
  void adopt(std::unique_lock<std::mutex>& lock) {
    consumer_cv.wait(lock, [this] { return ahead_state != AheadState::preparing; });
    settle_ahead_work();
    cur = std::move(ahead);
    ahead = Run{};
    ahead_state = AheadState::none;
    next_delivery = 0;
    // Slots the look-ahead could not use (or did not get to, after its own error) take their
    // batch as begin() would give it; its batches stay, held slots join when released.
    for (std::size_t s = 0; s < slots.size(); ++s) {
      Slot& slot = slots[s];
      if (slot.state == SlotState::held) continue;
      if (slot.state == SlotState::filling && slot.generation == cur.generation) continue;
      const std::size_t k = first_batch_in(cur, s);
      if (k < num_batches) {
        assign(slot, cur, k);
      } else {
        make_idle(slot);
      }
    }
  }

  // Abandons what is left of cur and of any look-ahead, and begins `epoch` afresh.
  void begin(std::uint32_t epoch, std::unique_lock<std::mutex>& lock) {
    // No new positions; the ones in hand (and a look-ahead order being computed) finish first:
    // they write into slots and read the samplers, both about to change.
    open = false;
    consumer_cv.wait(lock, [this] { return active_jobs == 0; });
    settle_ahead_work();
    ahead = Run{};
    ahead_state = AheadState::none;

    cur.sampler->set_epoch(epoch);
    cur.epoch = epoch;
    cur.generation = ++generations;
    cur.error = nullptr;
    cancelled = false;
    cur.slot_offset = (cur.slot_offset + num_batches) % slots.size();  // after the last epoch's
    total_positions = cur.sampler->samples_per_epoch();
    num_batches = cur.sampler->num_batches();
    cur.next_position = 0;
    next_delivery = 0;
    // A batch of the last epoch still held (its H2D copy in flight) keeps its slot; the slot takes
    // its first batch of this epoch when it is released, so prefetch runs on across the boundary.
    for (std::size_t k = 0; k < slots.size(); ++k) {
      Slot& slot = slots[slot_of(cur, k)];
      if (slot.state == SlotState::held) continue;
      if (k < num_batches) {
        assign(slot, cur, k);
      } else {
        make_idle(slot);
      }
    }
    open = true;
  }

  // The work of one position, unlocked. Tries the position's sample, then (bad data, not
  // strict) the next ones in this rank's order until one is good.
  void run_job(unsigned worker, std::vector<std::uint8_t>& scratch, std::uint32_t epoch,
               const Sampler& sampler, std::size_t position, std::uint8_t* dst, std::int32_t* label,
               std::size_t* index_out, JobOutcome& out) {
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

  void record(unsigned worker, std::uint64_t generation, Slot& slot, JobOutcome& out) {
    // A job's run is cur or the look-ahead: start_epoch() discards neither while a job runs,
    // and a look-ahead adopted meanwhile is cur now.
    const bool ahead_job = generation != cur.generation;
    Run& run = ahead_job ? ahead : cur;
    LoaderStats& into = ahead_job ? ahead_work : stats;
    into.worker_busy_s[worker] += out.busy_s;
    add_total(into.read, out.read);
    add_total(into.process, out.process);
    for (std::size_t s = 0; s < into.stages.size(); ++s) {
      add_total(into.stages[s].time, out.stages[s]);
    }
    // Counted now whichever run found them: the known-bad bit is set now.
    for (auto& [index, reason] : out.newly_bad) {
      ++stats.bad_samples;
      if (stats.bad_examples.size() < ScanReport::kMaxExamples) {
        stats.bad_examples.push_back(dataset.sample_name(index) + ": " + reason);
      }
    }
    if (out.error) {
      if (!run.error) run.error = out.error;
      consumer_cv.notify_all();
      return;
    }
    if (out.substituted) {
      ++slot.substituted;
      ++into.substituted;
    }
    if (++slot.done == slot.count) {
      into.batch_latency.add(seconds_since(slot.issued));
      consumer_cv.notify_all();
    }
  }

  void worker_main(unsigned worker) {
    std::vector<std::uint8_t> scratch;
    std::unique_lock lock(mu);
    while (!stopping) {
      if (should_prepare_ahead()) {
        prepare_ahead(lock);
        continue;
      }
      Run* run = runnable();
      if (run == nullptr) {
        const bool blocked_on_slot = has_pending_work();
        const Clock::time_point t0 = Clock::now();
        work_cv.wait(lock);
        if (blocked_on_slot) stats.wait_slot_s += seconds_since(t0);
        continue;
      }
      const std::size_t position = run->next_position++;
      // cur's last position handed out: a waiting worker can compute the next epoch's order
      // while this one works.
      if (run == &cur && cur.next_position == total_positions) work_cv.notify_one();
      const std::size_t b = position / batch_size();
      Slot& slot = slots[slot_of(*run, b)];
      const std::size_t j = position - b * batch_size();
      // Copied: start_epoch() may adopt the look-ahead (move it into cur) while this job runs.
      const std::uint64_t generation = run->generation;
      const std::uint32_t epoch = run->epoch;
      const Sampler& sampler = *run->sampler;
      ++active_jobs;
      lock.unlock();

      JobOutcome out;
      const Clock::time_point t_job = Clock::now();
      try {
        run_job(worker, scratch, epoch, sampler, position, slot.data + j * options.sample_bytes,
                slot.labels + j, slot.indices.data() + j, out);
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
      record(worker, generation, slot, out);
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

  static void add_total(TimeTotal& into, const TimeTotal& from) {
    into.total_s += from.total_s;
    into.max_s = std::max(into.max_s, from.max_s);
    into.count += from.count;
  }

  LoaderStats empty_stats() const {
    LoaderStats s;
    s.workers = options.workers;
    s.worker_busy_s.assign(options.workers, 0.0);
    for (const std::string& name : options.process_stages) s.stages.push_back({name, {}});
    return s;
  }

  // Adds the look-ahead's totals to stats when start_epoch() adopts or discards it (discarded
  // work was done all the same, like an abandoned epoch's samples in hand).
  void settle_ahead_work() {
    for (std::size_t w = 0; w < stats.worker_busy_s.size(); ++w) {
      stats.worker_busy_s[w] += ahead_work.worker_busy_s[w];
    }
    add_total(stats.read, ahead_work.read);
    add_total(stats.process, ahead_work.process);
    for (std::size_t s = 0; s < stats.stages.size(); ++s) {
      add_total(stats.stages[s].time, ahead_work.stages[s].time);
    }
    stats.substituted += ahead_work.substituted;
    add_total(stats.batch_latency, ahead_work.batch_latency);
    ahead_work = empty_stats();
  }

  void reset_stats_locked() {
    stats = empty_stats();
    ahead_work = empty_stats();
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
      m.threads.emplace_back([&m, w] {
        name_this_thread("gb-load " + std::to_string(w));
        m.worker_main(w);
      });
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
    m.open = false;
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
  m.end_epoch();
  if (m.can_adopt(epoch)) {
    m.adopt(lock);
    m.epoch_start = m.epoch_end;
  } else {
    m.begin(epoch, lock);
    m.epoch_start = Clock::now();
  }
  m.epoch_running = true;
  lock.unlock();
  m.work_cv.notify_all();
}

std::optional<Batch> Loader::next() {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  if (m.cur.error) {
    m.end_epoch();
    std::rethrow_exception(m.cur.error);
  }
  if (m.stopping || !m.epoch_running || m.next_delivery >= m.num_batches) return std::nullopt;
  const std::size_t b = m.next_delivery;
  Impl::Slot& slot = m.slots[m.slot_of(m.cur, b)];
  if (slot.batch != b || slot.generation != m.cur.generation ||
      slot.state == Impl::SlotState::held) {
    throw Error(ErrorKind::runtime, "loader: next() while all " + std::to_string(m.slots.size()) +
                                        " slots are held: release a batch first");
  }
  const Clock::time_point t0 = Clock::now();
  while (true) {
    if (cancel_requested()) {
      // Ctrl-C: the epoch ends with what was delivered. Positions in hand finish on their own.
      m.cancelled = true;
      m.open = false;
      ++m.stats.epochs_cancelled;
      m.end_epoch();
      return std::nullopt;
    }
    if (m.cur.error) {
      m.end_epoch();
      std::rethrow_exception(m.cur.error);
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
  batch.epoch = m.cur.epoch;
  batch.number = b;
  batch.size = slot.count;
  batch.slot = m.slot_of(m.cur, b);
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
    // A batch of cur hands its slot to cur's batch one ring further; a batch of an earlier epoch
    // (held across start_epoch()) to the slot's first batch of cur, which waited for it. With no
    // such batch, the slot goes to the look-ahead's batch there, if one is running.
    const std::size_t following = slot.generation == m.cur.generation
                                      ? batch.number + m.slots.size()
                                      : m.first_batch_in(m.cur, batch.slot);
    if (m.cur_open() && following < m.num_batches) {
      m.assign(slot, m.cur, following);
    } else {
      m.make_idle(slot);
      m.offer_to_ahead(batch.slot);
    }
  }
  m.work_cv.notify_all();
}

bool Loader::epoch_cancelled() const {
  std::lock_guard lock(impl_->mu);
  return impl_->cancelled;
}

std::size_t Loader::num_batches() const {
  return impl_->samplers[0].num_batches();  // the same for every epoch, in either sampler
}

const Sampler& Loader::sampler() const {
  return *impl_->cur.sampler;
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
  // The clock counts from now on, also for an epoch adopted later.
  if (impl_->epoch_running) {
    impl_->epoch_start = Clock::now();
  } else {
    impl_->epoch_end = Clock::now();
  }
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
  for (const Sampler& s : m.samplers) mem.index_bytes += s.capacity_bytes();
  mem.index_bytes += m.known_bad.size() * sizeof(std::uint64_t);
  return mem;
}

}  // namespace gb::data
