// sys/host_membw.hpp: CPU memory bandwidth, STREAM-like (copy c = a, triad a = b + s*c over
// arrays of doubles) on N threads, and a background copy load that keeps N threads streaming
// through memory (to see whether CPU memory traffic slows pinned host-to-device copies).
// Pure C++ (std::thread); Linux thread pinning through sched/pthread affinity when allowed.
//
// Byte accounting follows STREAM: copy moves 16 bytes per element (8 read + 8 written), triad
// 24 (16 read + 8 written). Write-allocate traffic (reading a line before overwriting it) is not
// counted, so a CPU that does it moves up to 1.5x (copy) / 1.33x (triad) the bytes reported.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace gb::sys {

struct HostMembwConfig {
  std::size_t elements = 0;  // doubles per array (three arrays are allocated)
  int threads = 1;           // each thread owns one contiguous slice of every array
  int repetitions = 5;       // timed passes per kernel, after one untimed warm-up pass
  bool pin_threads = true;   // pin thread k to the k-th CPU this process may use
};

struct HostMembwResult {
  std::vector<double> copy_gbps;  // one sample per timed pass
  std::vector<double> triad_gbps;
  std::uint64_t copy_bytes_per_pass = 0;
  std::uint64_t triad_bytes_per_pass = 0;
  bool valid = false;  // every element checked after warm-up and after the timed passes
  std::string error;   // the first mismatch when !valid
};

// Allocates three arrays, initialises each thread's slice from that thread (first touch places
// the pages on the thread's NUMA node), runs and checks one warm-up pass of copy, times
// `repetitions` copy passes, then the same for triad, and checks the arrays again. Throws
// std::bad_alloc when the arrays cannot be allocated; on a wrong result returns valid == false
// with no samples.
HostMembwResult measure_host_membw(const HostMembwConfig& config);

// Background memory traffic: `threads` threads, each copying its own buffer of
// bytes_per_thread (first-touched by that thread) over and over until stop(). The constructor
// returns once every thread has finished its first copy, so the load is at full strength when a
// measurement starts.
class HostCopyLoad {
 public:
  struct Summary {
    double gbps = 0;  // read + write bytes of all threads / wall time of the load
    std::uint64_t bytes = 0;
    bool allocated = true;  // false when a thread could not allocate its buffers
    bool valid = true;      // each thread checks its last copy in full
    std::string error;
  };

  // first_cpu: threads are pinned to allowed CPUs first_cpu, first_cpu+1, ... (wrapping), so a
  // caller can keep CPU 0 for the thread that drives the GPU.
  HostCopyLoad(std::size_t bytes_per_thread, int threads, int first_cpu = 1,
               bool pin_threads = true);
  ~HostCopyLoad();
  HostCopyLoad(const HostCopyLoad&) = delete;
  HostCopyLoad& operator=(const HostCopyLoad&) = delete;

  // Stops and joins the threads (idempotent); the summary of the whole run.
  Summary stop();

 private:
  void worker(int index, std::size_t elements, int cpu);

  std::atomic<bool> stop_{false};
  std::atomic<int> ready_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::vector<std::thread> threads_;
  std::vector<std::string> errors_;  // one slot per thread, written by that thread only
  std::atomic<bool> allocation_failed_{false};
  double started_s_ = 0;
  bool stopped_ = false;
  Summary summary_;
};

// CPUs this process may run on (sched_getaffinity), ascending; 0..hardware_concurrency-1 when
// the affinity mask cannot be read.
std::vector<int> allowed_cpus();

}  // namespace gb::sys
