// core/mapped_file.cpp: mmap RAII and pread/write helpers over POSIX file descriptors.
#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace gb {
namespace {

// Closes a descriptor on scope exit.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Regular files only. O_NONBLOCK: opening a FIFO (or a device) for reading would otherwise
// block until a writer appears, deaf to Ctrl-C; here it returns at once and is refused. It
// changes nothing for a regular file's reads.
int open_read_only(const std::filesystem::path& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw Error(ErrorKind::usage, errno_message(path, "cannot open", errno));
  FdGuard guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(ErrorKind::usage, errno_message(path, "stat", errno));
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::usage, path.string() + ": not a regular file");
  return guard.release();
}

}  // namespace

std::string errno_message(const std::filesystem::path& path, const std::string& what,
                          int errno_value) {
  return path.string() + ": " + what + ": " + std::strerror(errno_value);
}

MappedFile MappedFile::open(const std::filesystem::path& path, Load load) {
  FdGuard fd(open_read_only(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw Error(ErrorKind::usage, errno_message(path, "stat", errno));
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<std::size_t>(st.st_size);
  if (file.size_ == 0) return file;
  const int flags = MAP_PRIVATE | (load == Load::now ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, file.size_, PROT_READ, flags, fd.get(), 0);
  if (p == MAP_FAILED) {
    file.size_ = 0;
    throw Error(ErrorKind::usage, errno_message(path, "cannot mmap", errno));
  }
  file.data_ = static_cast<const std::uint8_t*>(p);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

void MappedFile::advise_sequential() const {
  if (data_ != nullptr) ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_SEQUENTIAL);
}

void MappedFile::advise_random() const {
  if (data_ != nullptr) ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_RANDOM);
}

void read_whole_file(const std::filesystem::path& path, std::vector<std::uint8_t>& out) {
  FdGuard fd(open_read_only(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw Error(ErrorKind::usage, errno_message(path, "stat", errno));
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorKind::usage, errno_message(path, "read", errno));
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
}

std::vector<std::uint8_t> read_file_prefix(const std::filesystem::path& path,
                                           std::size_t max_bytes) {
  FdGuard fd(open_read_only(path));
  std::vector<std::uint8_t> out(max_bytes);
  std::size_t done = 0;
  while (done < max_bytes) {
    const ssize_t n =
        ::pread(fd.get(), out.data() + done, max_bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorKind::usage, errno_message(path, "read", errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

void write_whole_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  int raw_fd;
  do {
    raw_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (raw_fd < 0 && errno == EINTR);
  if (raw_fd < 0) throw Error(ErrorKind::usage, errno_message(path, "cannot create", errno));
  FdGuard fd(raw_fd);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorKind::runtime, errno_message(path, "write", errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace gb
