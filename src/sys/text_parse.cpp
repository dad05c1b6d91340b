// sys/text_parse.cpp: see text_parse.hpp.
#include "sys/text_parse.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace gb::sys::text {

std::optional<std::string> read_text_file(const std::string& path) {
  // open/read rather than a stream: the watch sampler reads a few hundred small /proc files a
  // second, and /proc files report size 0, so read until end of file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return content;
}

}  // namespace gb::sys::text
