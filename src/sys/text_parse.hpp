// sys/text_parse.hpp: the small text helpers every /proc, /sys and /etc parser of sys/ uses
// (lines, whitespace fields, numbers, whole-file reads). One copy, so the parsers agree on
// what a field and a number are.
#pragma once
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace gb::sys::text {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Calls fn(line) for each line of text, without the newline.
template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    fn(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// Whitespace-separated fields.
inline std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) fields.push_back(s.substr(start, i - start));
  }
  return fields;
}

// The whole (trimmed) text as a number, or nothing.
template <typename T>
std::optional<T> parse_number(std::string_view s, int base = 10) {
  s = trim(s);
  T value{};
  std::from_chars_result r{};
  if constexpr (std::is_floating_point_v<T>)
    r = std::from_chars(s.data(), s.data() + s.size(), value);  // base does not apply
  else
    r = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// The file's bytes, or nothing when it cannot be read.
std::optional<std::string> read_text_file(const std::string& path);

}  // namespace gb::sys::text
