// sys/host_membw.cpp: see host_membw.hpp.
//
// Napkin math (16-core DDR5 host, ~200 GB/s): one copy pass over 1 GiB arrays moves 2 GiB,
// ~11 ms; a triad pass 3 GiB, ~16 ms. First touch of 3 GiB (page faults, kernel zeroing) takes
// ~0.3 s on 16 threads and dominates the run time.
#include "sys/host_membw.hpp"

#include <pthread.h>
#include <sched.h>

#include <barrier>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>

namespace gb::sys {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best effort: a thread that cannot be pinned (restricted cpuset, container) still runs.
void pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// The value a[i] starts with (and c[i] holds after a copy): small integers keep the triad exact.
double initial_a(std::size_t i) {
  return static_cast<double>(i & 1023);
}
double initial_b(std::size_t i) {
  return static_cast<double>((i * 7) & 255);
}
constexpr double kTriadScale = 3.0;

void copy_slice(const double* __restrict a, double* __restrict c, std::size_t begin,
                std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) c[i] = a[i];
}

void triad_slice(double* __restrict a, const double* __restrict b, const double* __restrict c,
                 double s, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

// A fixed team of threads, each owning one contiguous slice [begin, end) of the arrays. run()
// hands every thread the same job and returns when all have finished it; the threads persist
// between jobs (so a timed pass does not include thread creation) and stay pinned.
class Team {
 public:
  using Job = std::function<void(int thread, std::size_t begin, std::size_t end)>;

  Team(std::size_t elements, int threads, bool pin)
      : sync_(threads + 1), errors_(static_cast<std::size_t>(threads)) {
    const std::vector<int> cpus = allowed_cpus();
    for (int k = 0; k < threads; ++k) {
      const std::size_t begin = elements * static_cast<std::size_t>(k) / threads;
      const std::size_t end = elements * static_cast<std::size_t>(k + 1) / threads;
      const int cpu = cpus[static_cast<std::size_t>(k) % cpus.size()];
      workers_.emplace_back([this, k, begin, end, cpu, pin] {
        if (pin) pin_current_thread(cpu);
        for (;;) {
          sync_.arrive_and_wait();  // start of a job (or quit)
          if (quit_) return;
          job_(k, begin, end);
          sync_.arrive_and_wait();  // end of the job
        }
      });
    }
  }
  ~Team() {
    quit_ = true;
    sync_.arrive_and_wait();
    for (auto& t : workers_) t.join();
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  // Runs job on every thread; returns the wall time in seconds from release to last finish.
  double run(Job job) {
    job_ = std::move(job);
    const double t0 = now_s();
    sync_.arrive_and_wait();
    sync_.arrive_and_wait();
    return now_s() - t0;
  }

  // Per-thread error slots for check jobs (each thread writes only its own).
  std::vector<std::string>& errors() { return errors_; }

 private:
  std::barrier<> sync_;
  std::vector<std::string> errors_;
  Job job_;
  bool quit_ = false;  // written before a barrier phase, read after it
  std::vector<std::thread> workers_;
};

// Checks every element on the team; returns the first error found (empty when all match).
std::string check_arrays(Team& team, const double* a, const double* c, bool check_triad) {
  for (auto& e : team.errors()) e.clear();
  team.run([&](int k, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const double want_c = initial_a(i);
      if (c[i] != want_c) {
        team.errors()[static_cast<std::size_t>(k)] = "copy: c[" + std::to_string(i) +
                                                     "] = " + std::to_string(c[i]) + ", expected " +
                                                     std::to_string(want_c);
        return;
      }
      if (check_triad) {
        const double want_a = initial_b(i) + kTriadScale * initial_a(i);
        if (a[i] != want_a) {
          team.errors()[static_cast<std::size_t>(k)] = "triad: a[" + std::to_string(i) +
                                                       "] = " + std::to_string(a[i]) +
                                                       ", expected " + std::to_string(want_a);
          return;
        }
      }
    }
  });
  for (const auto& e : team.errors())
    if (!e.empty()) return e;
  return {};
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.empty()) {
    const unsigned n = std::thread::hardware_concurrency();
    for (unsigned cpu = 0; cpu < (n > 0 ? n : 1); ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

HostMembwResult measure_host_membw(const HostMembwConfig& config) {
  HostMembwResult result;
  const std::size_t n = config.elements;
  const int threads = config.threads > 0 ? config.threads : 1;
  result.copy_bytes_per_pass = 2 * sizeof(double) * n;
  result.triad_bytes_per_pass = 3 * sizeof(double) * n;

  // new double[n] leaves the memory untouched: the pages are placed by the first write, below,
  // from the thread that will stream through them.
  const std::unique_ptr<double[]> a(new double[n]);
  const std::unique_ptr<double[]> b(new double[n]);
  const std::unique_ptr<double[]> c(new double[n]);
  Team team(n, threads, config.pin_threads);
  team.run([&](int, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      a[i] = initial_a(i);
      b[i] = initial_b(i);
      c[i] = -1.0;  // overwritten by the copy; a skipped element shows
    }
  });

  const auto copy_job = [&](int, std::size_t begin, std::size_t end) {
    copy_slice(a.get(), c.get(), begin, end);
  };
  const auto triad_job = [&](int, std::size_t begin, std::size_t end) {
    triad_slice(a.get(), b.get(), c.get(), kTriadScale, begin, end);
  };

  // Check before timing: one warm-up pass of each kernel, checked in full.
  team.run(copy_job);
  if (std::string e = check_arrays(team, a.get(), c.get(), false); !e.empty()) {
    result.error = e;
    return result;
  }
  std::vector<double> copy_gbps;
  for (int r = 0; r < config.repetitions; ++r)
    copy_gbps.push_back(static_cast<double>(result.copy_bytes_per_pass) / team.run(copy_job) / 1e9);

  team.run(triad_job);
  if (std::string e = check_arrays(team, a.get(), c.get(), true); !e.empty()) {
    result.error = e;
    return result;
  }
  std::vector<double> triad_gbps;
  for (int r = 0; r < config.repetitions; ++r)
    triad_gbps.push_back(static_cast<double>(result.triad_bytes_per_pass) / team.run(triad_job) /
                         1e9);

  // And after: every timed pass wrote the same values, so the arrays must still match.
  if (std::string e = check_arrays(team, a.get(), c.get(), true); !e.empty()) {
    result.error = e;
    return result;
  }
  result.copy_gbps = std::move(copy_gbps);
  result.triad_gbps = std::move(triad_gbps);
  result.valid = true;
  return result;
}

HostCopyLoad::HostCopyLoad(std::size_t bytes_per_thread, int threads, int first_cpu,
                           bool pin_threads)
    : errors_(static_cast<std::size_t>(threads > 0 ? threads : 0)) {
  const std::size_t elements = bytes_per_thread / sizeof(double);
  const std::vector<int> cpus = allowed_cpus();
  for (int k = 0; k < threads; ++k) {
    const int cpu = pin_threads ? cpus[static_cast<std::size_t>(first_cpu + k) % cpus.size()] : -1;
    threads_.emplace_back([this, k, elements, cpu] { worker(k, elements, cpu); });
  }
  while (ready_.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bytes_.store(0);
  started_s_ = now_s();
}

HostCopyLoad::~HostCopyLoad() {
  stop();
}

void HostCopyLoad::worker(int index, std::size_t elements, int cpu) {
  if (cpu >= 0) pin_current_thread(cpu);
  std::string& error = errors_[static_cast<std::size_t>(index)];
  std::unique_ptr<double[]> src;
  std::unique_ptr<double[]> dst;
  try {
    src.reset(new double[elements]);
    dst.reset(new double[elements]);
  } catch (const std::bad_alloc&) {
    error =
        "copy load: could not allocate " + std::to_string(2 * elements * sizeof(double)) + " bytes";
    allocation_failed_.store(true);
    ready_.fetch_add(1);
    return;
  }
  for (std::size_t i = 0; i < elements; ++i) {  // first touch from this thread
    src[i] = initial_a(i + static_cast<std::size_t>(index));
    dst[i] = -1.0;
  }
  copy_slice(src.get(), dst.get(), 0, elements);
  ready_.fetch_add(1);
  const std::uint64_t bytes_per_copy = 2 * sizeof(double) * elements;
  while (!stop_.load(std::memory_order_relaxed)) {
    copy_slice(src.get(), dst.get(), 0, elements);
    bytes_.fetch_add(bytes_per_copy, std::memory_order_relaxed);
  }
  if (std::memcmp(src.get(), dst.get(), elements * sizeof(double)) != 0)
    error =
        "copy load: thread " + std::to_string(index) + " found its copy differs from the source";
}

HostCopyLoad::Summary HostCopyLoad::stop() {
  if (stopped_) return summary_;
  stopped_ = true;
  stop_.store(true);
  for (auto& t : threads_) t.join();
  const double elapsed = now_s() - started_s_;
  summary_.bytes = bytes_.load();
  summary_.gbps = elapsed > 0 ? static_cast<double>(summary_.bytes) / elapsed / 1e9 : 0;
  summary_.allocated = !allocation_failed_.load();
  for (const auto& e : errors_) {
    if (!e.empty()) {
      summary_.valid = false;
      summary_.error = e;
      break;
    }
  }
  return summary_;
}

}  // namespace gb::sys
