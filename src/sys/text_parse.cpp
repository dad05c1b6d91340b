// sys/text_parse.cpp: see text_parse.hpp.
#include "sys/text_parse.hpp"

#include <fstream>
#include <iterator>

namespace gb::sys::text {

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return content;
}

}  // namespace gb::sys::text
