// cuda_activity/ring.cpp: the shared-memory ring (see ring.hpp for the protocol).
#include "cuda_activity/ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace gb::cuda_activity {

static_assert(std::is_trivially_copyable_v<IntervalRecord>);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the ring's counters must be lock-free to live in shared memory");

namespace {

std::size_t ring_bytes(std::uint32_t slots) { return sizeof(RingHeader) + slots * sizeof(Slot); }

Slot* slot_at(void* map, std::uint64_t n, std::uint32_t slots) {
  auto* base = static_cast<char*>(map) + sizeof(RingHeader);
  return reinterpret_cast<Slot*>(base + (n % slots) * sizeof(Slot));
}

const Slot* slot_at(const void* map, std::uint64_t n, std::uint32_t slots) {
  auto* base = static_cast<const char*>(map) + sizeof(RingHeader);
  return reinterpret_cast<const Slot*>(base + (n % slots) * sizeof(Slot));
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::string ring_file_name(std::uint32_t pid) { return "cuda-" + std::to_string(pid) + ".ring"; }

// ---- RingWriter ----------------------------------------------------------------------------

std::optional<RingWriter> RingWriter::create(const std::string& dir, std::uint32_t pid,
                                             std::uint32_t launcher_tid,
                                             std::uint64_t start_ticks, std::uint32_t slots,
                                             std::string& why_not) {
  if (slots == 0) {
    why_not = "a ring needs at least one slot";
    return std::nullopt;
  }
  const std::string path = dir + "/" + ring_file_name(pid);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    why_not = errno_text(("cannot create " + path).c_str());
    return std::nullopt;
  }
  const std::size_t bytes = ring_bytes(slots);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    why_not = errno_text("cannot size the ring");
    ::close(fd);
    ::unlink(path.c_str());
    return std::nullopt;
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    why_not = errno_text("cannot map the ring");
    ::unlink(path.c_str());
    return std::nullopt;
  }
  // The file is zero-filled; construct the header and the slot counters in place. magic goes
  // last, so a reader never sees a half-made header as valid.
  auto* h = static_cast<RingHeader*>(map);
  new (&h->head) std::atomic<std::uint64_t>(0);
  for (std::uint32_t i = 0; i < slots; ++i) new (&slot_at(map, i, slots)->seq) std::atomic<std::uint64_t>(0);
  h->version = kRingVersion;
  h->slot_bytes = static_cast<std::uint32_t>(sizeof(Slot));
  h->slots = slots;
  h->producer_pid = pid;
  h->launcher_tid = launcher_tid;
  h->producer_start_ticks = start_ticks;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kRingMagic;
  RingWriter w;
  w.map_ = map;
  w.bytes_ = bytes;
  w.path_ = path;
  return w;
}

RingWriter::RingWriter(RingWriter&& o) noexcept
    : map_(o.map_), bytes_(o.bytes_), path_(std::move(o.path_)) {
  o.map_ = nullptr;
}

RingWriter& RingWriter::operator=(RingWriter&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, bytes_);
    map_ = o.map_;
    bytes_ = o.bytes_;
    path_ = std::move(o.path_);
    o.map_ = nullptr;
  }
  return *this;
}

RingWriter::~RingWriter() {
  if (map_) ::munmap(map_, bytes_);
}

void RingWriter::write(const IntervalRecord& record) {
  if (!map_) return;
  auto* h = static_cast<RingHeader*>(map_);
  const std::uint64_t n = h->head.load(std::memory_order_relaxed);
  Slot* s = slot_at(map_, n, h->slots);
  s->seq.store(2 * n + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(static_cast<void*>(&s->record), &record, sizeof record);
  s->seq.store(2 * n + 2, std::memory_order_release);
  h->head.store(n + 1, std::memory_order_release);
}

std::uint64_t RingWriter::written() const {
  if (!map_) return 0;
  return static_cast<const RingHeader*>(map_)->head.load(std::memory_order_acquire);
}

// ---- RingReader ----------------------------------------------------------------------------

std::optional<RingReader> RingReader::open(const std::string& path, std::string& why_not) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why_not = errno_text(("cannot open " + path).c_str());
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < sizeof(RingHeader)) {
    ::close(fd);
    why_not = path + ": too small to be a ring (still being made?)";
    return std::nullopt;
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    why_not = errno_text(("cannot map " + path).c_str());
    return std::nullopt;
  }
  const auto* h = static_cast<const RingHeader*>(map);
  std::string bad;
  if (h->magic != kRingMagic)
    bad = "not a gpubase CUDA-activity ring (or still being made)";
  else if (h->version != kRingVersion || h->slot_bytes != sizeof(Slot))
    bad = "written by another gpubase build (ring version " + std::to_string(h->version) +
          ", slot " + std::to_string(h->slot_bytes) + " bytes, expected " +
          std::to_string(sizeof(Slot)) + ")";
  else if (h->slots == 0 || ring_bytes(h->slots) > bytes)
    bad = "ring header and file size disagree";
  if (!bad.empty()) {
    ::munmap(map, bytes);
    why_not = path + ": " + bad;
    return std::nullopt;
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  RingReader r;
  r.map_ = map;
  r.bytes_ = bytes;
  r.path_ = path;
  return r;
}

RingReader::RingReader(RingReader&& o) noexcept
    : map_(o.map_), bytes_(o.bytes_), path_(std::move(o.path_)), next_(o.next_) {
  o.map_ = nullptr;
}

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<void*>(map_), bytes_);
    map_ = o.map_;
    bytes_ = o.bytes_;
    path_ = std::move(o.path_);
    next_ = o.next_;
    o.map_ = nullptr;
  }
  return *this;
}

RingReader::~RingReader() {
  if (map_) ::munmap(const_cast<void*>(map_), bytes_);
}

std::uint32_t RingReader::producer_pid() const {
  return static_cast<const RingHeader*>(map_)->producer_pid;
}
std::uint32_t RingReader::launcher_tid() const {
  return static_cast<const RingHeader*>(map_)->launcher_tid;
}
std::uint64_t RingReader::producer_start_ticks() const {
  return static_cast<const RingHeader*>(map_)->producer_start_ticks;
}

RingRead RingReader::read_new() {
  RingRead out;
  const auto* h = static_cast<const RingHeader*>(map_);
  const std::uint64_t head = h->head.load(std::memory_order_acquire);
  const std::uint32_t slots = h->slots;
  std::uint64_t start = next_;
  if (head > slots && start < head - slots) {
    out.lost += head - slots - start;
    start = head - slots;
  }
  for (std::uint64_t n = start; n < head; ++n) {
    const Slot* s = slot_at(map_, n, slots);
    const std::uint64_t before = s->seq.load(std::memory_order_acquire);
    if (before != 2 * n + 2) {  // overwritten by a later record already (or being written)
      ++out.lost;
      continue;
    }
    IntervalRecord r;
    std::memcpy(&r, &s->record, sizeof r);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s->seq.load(std::memory_order_relaxed) != before || r.magic != kRecordMagic ||
        r.version != kRecordVersion) {
      ++out.lost;
      continue;
    }
    out.records.push_back(r);
  }
  next_ = head;
  return out;
}

// ---- producers -----------------------------------------------------------------------------

namespace {

// State (field 3) and starttime (field 22) of /proc/<pid>/stat; false when unreadable.
bool read_state_and_start(std::uint32_t pid, const std::string& proc_root, char& state,
                          std::uint64_t& start_ticks) {
  const std::string path = proc_root + "/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the comm may hold spaces and parentheses
  if (!p || p[1] != ' ' || !p[2]) return false;
  state = p[2];
  int field = 2;
  for (++p; *p && field < 22; ++p)
    if (*p == ' ') ++field;
  if (field != 22) return false;
  start_ticks = std::strtoull(p, nullptr, 10);
  return true;
}

}  // namespace

std::uint64_t process_start_ticks(std::uint32_t pid, const std::string& proc_root) {
  char state = '?';
  std::uint64_t start = 0;
  return read_state_and_start(pid, proc_root, state, start) ? start : 0;
}

bool producer_alive(std::uint32_t pid, std::uint64_t start_ticks, const std::string& proc_root) {
  if (pid == 0) return false;
  char state = '?';
  std::uint64_t now = 0;
  if (!read_state_and_start(pid, proc_root, state, now)) return false;
  if (state == 'Z' || state == 'X') return false;  // exited, not yet reaped
  return start_ticks == 0 || now == start_ticks;
}

}  // namespace gb::cuda_activity
