// cuda_activity/ring.hpp: the bounded shared-memory ring one job process writes its
// IntervalRecords into and `gpubase watch` reads them from. One file per process, created by
// the producer in the folder the watcher names (a private folder under /dev/shm), so a process
// that starts late, a forked worker that touches CUDA, or a reader that opens the ring after
// the producer died all work the same way: the ring keeps the last `slots` records.
//
// Layout: a RingHeader, then `slots` Slots. The producer never waits for the reader: record n
// goes to slot n % slots under a per-slot sequence number (odd while being written, 2n+2 when
// record n is complete), then `head` becomes n+1. A reader that fell more than `slots` records
// behind counts the overwritten ones as lost; a slot whose sequence changed while it was copied
// is counted lost too, never returned torn.
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda_activity/record.hpp"

namespace gb::cuda_activity {

inline constexpr std::uint32_t kRingMagic = 0x52424347;  // "GCBR"
inline constexpr std::uint32_t kRingVersion = 1;
inline constexpr std::uint32_t kDefaultSlots = 64;

struct RingHeader {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint32_t slot_bytes;  // sizeof(Slot) of the producer's build
  std::uint32_t slots;
  std::uint32_t producer_pid;
  std::uint32_t launcher_tid;  // the thread that initialised CUDA (normally the main thread)
  std::uint64_t producer_start_ticks;  // /proc/<pid>/stat starttime: tells a reused pid apart
  std::atomic<std::uint64_t> head;     // records written so far
};

struct Slot {
  std::atomic<std::uint64_t> seq;
  IntervalRecord record;
};

// The producer's side (inside the job). Never throws: create() returns empty with a reason.
class RingWriter {
 public:
  // Creates dir/cuda-<pid>.ring (O_EXCL) sized for `slots` records and maps it.
  static std::optional<RingWriter> create(const std::string& dir, std::uint32_t pid,
                                          std::uint32_t launcher_tid,
                                          std::uint64_t start_ticks, std::uint32_t slots,
                                          std::string& why_not);
  RingWriter(RingWriter&& other) noexcept;
  RingWriter& operator=(RingWriter&& other) noexcept;
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;
  ~RingWriter();

  void write(const IntervalRecord& record);
  const std::string& path() const { return path_; }
  std::uint64_t written() const;

 private:
  RingWriter() = default;
  void* map_ = nullptr;
  std::size_t bytes_ = 0;
  std::string path_;
};

// What one read returned.
struct RingRead {
  std::vector<IntervalRecord> records;  // in order
  std::uint64_t lost = 0;               // overwritten before this reader got to them
};

// The watcher's side. Reads every record written since the last read (or, on the first read,
// the ones the ring still holds).
class RingReader {
 public:
  // Empty with a reason when the file is not a ring of this build's record layout.
  static std::optional<RingReader> open(const std::string& path, std::string& why_not);
  RingReader(RingReader&& other) noexcept;
  RingReader& operator=(RingReader&& other) noexcept;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  RingRead read_new();
  std::uint32_t producer_pid() const;
  std::uint32_t launcher_tid() const;
  std::uint64_t producer_start_ticks() const;
  const std::string& path() const { return path_; }
  std::uint64_t next() const { return next_; }

 private:
  RingReader() = default;
  const void* map_ = nullptr;
  std::size_t bytes_ = 0;
  std::string path_;
  std::uint64_t next_ = 0;  // the next record number this reader wants
};

// Whether a producer is still running: the pid exists and, when start_ticks is non-zero, it
// is the same process (its /proc/<pid>/stat starttime matches).
bool producer_alive(std::uint32_t pid, std::uint64_t start_ticks,
                    const std::string& proc_root = "/proc");
// starttime (field 22) of /proc/<pid>/stat; 0 when it cannot be read.
std::uint64_t process_start_ticks(std::uint32_t pid, const std::string& proc_root = "/proc");

// The ring file name a process writes.
std::string ring_file_name(std::uint32_t pid);

}  // namespace gb::cuda_activity
