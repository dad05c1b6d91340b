// sys/atomic_file.cpp: see atomic_file.hpp.
#include "sys/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace gb::sys {

namespace fs = std::filesystem;

namespace {

// ".<name>.<pid>.tmp" beside the target: hidden, and not matching the collector's *.prom.
fs::path temporary_beside(const fs::path& target) {
  return target.parent_path() /
         ("." + target.filename().string() + "." + std::to_string(::getpid()) + ".tmp");
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  const fs::path target(path);
  const fs::path tmp = temporary_beside(target);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::runtime, "cannot write " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ErrorKind::runtime, "cannot write " + tmp.string() + ": " + why);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::runtime, "cannot replace " + path + ": " + why);
  }
}

void check_file_writable(const std::string& path, std::string_view option) {
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::usage,
                std::string(option) + " " + path + ": the folder " + dir.string() + " does not exist");
  if (fs::is_directory(target, ec))
    throw Error(ErrorKind::usage, std::string(option) + " " + path + " is a folder");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(ErrorKind::usage, std::string(option) + " " + path + ": cannot write in " +
                                      dir.string() + ": " + std::strerror(errno));
}

}  // namespace gb::sys
