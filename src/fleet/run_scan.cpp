// fleet/run_scan.cpp: see run_scan.hpp. A small pull parser over the document's bytes: read the
// members the merge needs, skip the rest. Skipping is the hot path (a quick probe's file is mostly
// raw samples): arrays named "samples" and the flat "stats" object are skipped with memchr, any
// other array or object 64 bytes at a time (skip_container).
#include "fleet/run_scan.hpp"

#include <charconv>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gb::fleet {

namespace {

std::uint64_t hash_key(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

std::uint32_t KeyTable::intern(std::string_view key) {
  if (slots_.empty() || (names_.size() + 1) * 2 > slots_.size()) {
    std::vector<std::uint32_t> grown(slots_.empty() ? 256 : slots_.size() * 2, 0);
    for (std::uint32_t id = 0; id < names_.size(); ++id) {
      std::size_t i = hash_key(names_[id]) & (grown.size() - 1);
      while (grown[i] != 0) i = (i + 1) & (grown.size() - 1);
      grown[i] = id + 1;
    }
    slots_ = std::move(grown);
  }
  std::size_t i = hash_key(key) & (slots_.size() - 1);
  while (slots_[i] != 0) {
    if (names_[slots_[i] - 1] == key) return slots_[i] - 1;
    i = (i + 1) & (slots_.size() - 1);
  }
  names_.emplace_back(key);
  slots_[i] = static_cast<std::uint32_t>(names_.size());
  return slots_[i] - 1;
}

namespace {

#if defined(__SSE2__)
// Bit i set where byte i of the 64 bytes at v equals c.
std::uint64_t eq_mask(const __m128i (&v)[4], char c) {
  const __m128i k = _mm_set1_epi8(c);
  std::uint64_t m = 0;
  for (int i = 0; i < 4; ++i)
    m |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(
             _mm_movemask_epi8(_mm_cmpeq_epi8(v[i], k))))
         << (16 * i);
  return m;
}

// Bit i = XOR of bits 0..i: set from an opening quote up to (not including) its closing one.
std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#endif

// The first byte at or after p that is not JSON whitespace.
const char* skip_whitespace(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n');
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int blank =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)));
    if (blank != 0xFFFF) {
      p += __builtin_ctz(static_cast<unsigned>(~blank));
      break;  // a tab or CR falls to the loop below
    }
    p += 16;
  }
#endif
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  return p;
}

class Cursor {
 public:
  explicit Cursor(std::string_view text) : p_(text.data()), begin_(text.data()), end_(text.data() + text.size()) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ScanError(what + " at byte " + std::to_string(p_ - begin_));
  }

  void ws() { p_ = skip_whitespace(p_, end_); }
  char peek() {
    ws();
    if (p_ >= end_) fail("unexpected end of the document");
    return *p_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  // After a member or element: true when another follows (a ',' was eaten), false at `close`.
  bool next(char close) {
    const char c = peek();
    ++p_;
    if (c == ',') return true;
    if (c == close) return false;
    fail(std::string("expected ',' or '") + close + "'");
  }
  // Starts an object or array; false when it is empty (the closing bracket was eaten).
  bool open(char open_c, char close_c) {
    expect(open_c);
    if (peek() == close_c) {
      ++p_;
      return false;
    }
    return true;
  }

  // A string without escapes is returned as a view into the text; one with escapes is decoded
  // into `scratch`.
  std::string_view string(std::string& scratch) {
    expect('"');
    const char* start = p_;
    const char* q = static_cast<const char*>(std::memchr(p_, '"', end_ - p_));
    if (!q) fail("unterminated string");
    if (!std::memchr(start, '\\', q - start)) {
      p_ = q + 1;
      return {start, static_cast<std::size_t>(q - start)};
    }
    scratch.clear();
    while (true) {
      if (p_ >= end_) fail("unterminated string");
      const char c = *p_++;
      if (c == '"') break;
      if (c != '\\') {
        scratch += c;
        continue;
      }
      if (p_ >= end_) fail("unterminated string");
      const char e = *p_++;
      switch (e) {
        case '"': scratch += '"'; break;
        case '\\': scratch += '\\'; break;
        case '/': scratch += '/'; break;
        case 'b': scratch += '\b'; break;
        case 'f': scratch += '\f'; break;
        case 'n': scratch += '\n'; break;
        case 'r': scratch += '\r'; break;
        case 't': scratch += '\t'; break;
        case 'u': {
          if (end_ - p_ < 4) fail("short \\u escape");
          unsigned cp = 0;
          const auto [ptr, ec] = std::from_chars(p_, p_ + 4, cp, 16);
          if (ec != std::errc() || ptr != p_ + 4) fail("bad \\u escape");
          p_ += 4;
          // Surrogate pairs are rare in run files (names, reasons); a lone one is kept as is.
          if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            unsigned lo = 0;
            const auto [p2, ec2] = std::from_chars(p_ + 2, p_ + 6, lo, 16);
            if (ec2 == std::errc() && p2 == p_ + 6 && lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              p_ += 6;
            }
          }
          if (cp < 0x80) {
            scratch += static_cast<char>(cp);
          } else if (cp < 0x800) {
            scratch += static_cast<char>(0xC0 | (cp >> 6));
            scratch += static_cast<char>(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            scratch += static_cast<char>(0xE0 | (cp >> 12));
            scratch += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            scratch += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            scratch += static_cast<char>(0xF0 | (cp >> 18));
            scratch += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            scratch += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            scratch += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: fail("bad escape");
      }
    }
    return scratch;
  }

  bool is_null() {
    if (peek() == 'n') {
      if (end_ - p_ < 4 || std::memcmp(p_, "null", 4) != 0) fail("bad literal");
      p_ += 4;
      return true;
    }
    return false;
  }

  double number() {
    ws();
    double v = 0;
    const auto [ptr, ec] = std::from_chars(p_, end_, v);
    if (ec != std::errc()) fail("expected a number");
    p_ = ptr;
    return v;
  }
  std::optional<double> number_or_null() {
    if (is_null()) return std::nullopt;
    return number();
  }

  bool boolean() {
    const char c = peek();
    if (c == 't' && end_ - p_ >= 4 && std::memcmp(p_, "true", 4) == 0) {
      p_ += 4;
      return true;
    }
    if (c == 'f' && end_ - p_ >= 5 && std::memcmp(p_, "false", 5) == 0) {
      p_ += 5;
      return false;
    }
    fail("expected true or false");
  }

  // A flat array or object (no strings or nested brackets inside: raw samples, stats): skipped
  // to its closing bracket with memchr.
  void skip_flat(char close) {
    ++p_;
    const char* q = static_cast<const char*>(std::memchr(p_, close, end_ - p_));
    if (!q) fail("unterminated array or object");
    p_ = q + 1;
  }

  void skip_value() {
    const char c = peek();
    if (c == '"') {
      skip_string();
      return;
    }
    if (c != '{' && c != '[') {
      // number, true, false, null: up to the next delimiter
      while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\n' &&
             *p_ != '\r' && *p_ != '\t')
        ++p_;
      return;
    }
    skip_container();
  }

 private:
  // At '[' or '{': to just past the matching bracket. 64 bytes at a time (simdjson's idea): the
  // quotes' prefix XOR marks the bytes inside strings, the brackets outside them are walked in
  // order. A block with a backslash (an escape inside a string) and the last bytes go byte by
  // byte with the same state.
  void skip_container() {
    const char* p = p_;
    int depth = 0;
    bool in_string = false;
#if defined(__SSE2__)
    std::uint64_t string_carry = 0;  // all ones while a string continues into the next block
    while (end_ - p >= 64) {
      __m128i v[4];
      for (int i = 0; i < 4; ++i)
        v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      if (eq_mask(v, '\\') != 0) break;
      const std::uint64_t in_str = prefix_xor(eq_mask(v, '"')) ^ string_carry;
      string_carry = (in_str >> 63) != 0 ? ~std::uint64_t{0} : 0;
      const std::uint64_t opens = (eq_mask(v, '[') | eq_mask(v, '{')) & ~in_str;
      const std::uint64_t closes = (eq_mask(v, ']') | eq_mask(v, '}')) & ~in_str;
      for (std::uint64_t b = opens | closes; b != 0; b &= b - 1) {
        const int i = __builtin_ctzll(b);
        if ((opens >> i) & 1) {
          ++depth;
        } else if (--depth == 0) {
          p_ = p + i + 1;
          return;
        }
      }
      p += 64;
    }
    in_string = string_carry != 0;
#endif
    for (; p < end_; ++p) {
      const char c = *p;
      if (in_string) {
        if (c == '\\')
          ++p;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        if (--depth == 0) {
          p_ = p + 1;
          return;
        }
      }
    }
    fail("unterminated array or object");
  }

  void skip_string() {
    ++p_;  // the opening quote
    while (true) {
      const char* q = static_cast<const char*>(std::memchr(p_, '"', end_ - p_));
      if (!q) fail("unterminated string");
      // The quote is escaped when an odd number of backslashes precede it.
      const char* b = q;
      while (b > p_ && b[-1] == '\\') --b;
      p_ = q + 1;
      if (((q - b) & 1) == 0) return;
    }
  }

  const char* p_;
  const char* begin_;
  const char* end_;
};

std::optional<int> as_int(std::string_view s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// A v1 file writes numeric facts as text ("139.8 GiB"): the leading number.
std::optional<double> leading_number(std::string_view s) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return v;
}

void scan_fact(Cursor& c, ScannedRun& run, std::string& scratch) {
  std::string key;
  std::string text;
  std::optional<double> number;
  if (c.open('{', '}')) {
    do {
      const std::string_view name = c.string(scratch);
      c.expect(':');
      if (name == "key") {
        key = c.string(scratch);
      } else if (name == "value") {
        if (c.peek() == '"')
          text = c.string(scratch);
        else
          number = c.number_or_null();
      } else {
        c.skip_value();
      }
    } while (c.next('}'));
  }
  auto num = [&]() { return number ? number : leading_number(text); };
  if (key == "run.host") run.host = text;
  else if (key == "run.rank") run.rank = number ? std::optional<int>(static_cast<int>(*number)) : as_int(text);
  else if (key == "run.job_id") run.job_id = text;
  else if (key == "gpu.index") run.gpu_index = number ? std::to_string(static_cast<int>(*number)) : text;
  else if (key == "gpu.uuid") run.uuid = text;
  else if (key == "gpu.name") run.gpu_name = text;
  else if (key == "gpu.memory") run.memory_gib = num();
  else if (key == "gpu.power_limit") run.power_limit_w = num();
  else if (key == "driver.version") run.driver = text;
  else if (key == "cuda.driver") run.cuda = text;
  else if (key == "gpu.available" && text.starts_with("none: ") && !run.gpu_unavailable)
    run.gpu_unavailable = text.substr(6);
}

ScannedLink scan_link(Cursor& c, std::string& scratch) {
  ScannedLink link;
  if (c.is_null()) return link;
  if (c.open('{', '}')) {
    do {
      const std::string_view name = c.string(scratch);
      c.expect(':');
      if (name == "gen") {
        if (auto v = c.number_or_null()) link.gen = static_cast<int>(*v);
      } else if (name == "width") {
        if (auto v = c.number_or_null()) link.width = static_cast<int>(*v);
      } else {
        c.skip_value();
      }
    } while (c.next('}'));
  }
  return link;
}

void scan_gpu(Cursor& c, ScannedRun& run, std::string& scratch) {
  if (c.is_null()) return;
  if (!c.open('{', '}')) return;
  do {
    const std::string_view name = c.string(scratch);
    c.expect(':');
    if (name == "unavailable") {
      if (!c.is_null()) run.gpu_unavailable = std::string(c.string(scratch));
    } else if (name == "link_max_slot") {
      run.link_max_slot = scan_link(c, scratch);
    } else if (name == "link_max_gpu") {
      run.link_max_gpu = scan_link(c, scratch);
    } else {
      c.skip_value();
    }
  } while (c.next('}'));
}

std::uint64_t scan_throttle(Cursor& c, std::string& scratch) {
  std::uint64_t bits = 0;
  if (c.is_null()) return 0;
  if (!c.open('{', '}')) return 0;
  do {
    const std::string_view name = c.string(scratch);
    c.expect(':');
    if (name == "throttle_reasons") {
      if (auto v = c.number_or_null()) bits = static_cast<std::uint64_t>(*v);
    } else {
      c.skip_value();
    }
  } while (c.next('}'));
  return bits;
}

void scan_result(Cursor& c, ScannedRun& run, KeyTable& keys, std::string& scratch) {
  ScannedFigure f;
  std::string key;
  std::string status;
  std::string reason;
  if (c.open('{', '}')) {
    do {
      const std::string_view name = c.string(scratch);
      c.expect(':');
      if (name == "samples" && c.peek() == '[') {
        c.skip_flat(']');
      } else if (name == "stats" && c.peek() == '{') {
        c.skip_flat('}');
      } else if (name == "key") {
        key = c.string(scratch);
      } else if (name == "value") {
        if (auto v = c.number_or_null()) {
          f.value = *v;
          f.has_value = true;
        }
      } else if (name == "higher_is_better") {
        f.higher_is_better = c.boolean();
      } else if (name == "status") {
        status = c.string(scratch);
      } else if (name == "reason") {
        reason = c.string(scratch);
      } else if (name == "telemetry") {
        f.throttle_reasons = scan_throttle(c, scratch);
      } else {
        c.skip_value();
      }
    } while (c.next('}'));
  }
  if (key == "probe.pcie.link.gen_under_load") {
    if (f.has_value) run.link_gen_under_load = f.value;
    return;
  }
  if (key == "probe.pcie.link.width_under_load") {
    if (f.has_value) run.link_width_under_load = f.value;
    return;
  }
  f.judged = status == "pass" || status == "warn" || status == "fail";
  f.invalid = status == "invalid";
  // Only what the merge judges is kept: figures with a verdict, and invalid ones.
  if (!f.judged && !f.invalid) return;
  if (f.invalid) f.reason = std::move(reason);
  f.key = keys.intern(key);
  run.figures.push_back(std::move(f));
}

}  // namespace

ScannedRun scan_run(std::string_view text, KeyTable& keys) {
  Cursor c(text);
  ScannedRun run;
  std::string scratch;
  bool is_run = false;
  if (!c.open('{', '}')) throw ScanError("an empty JSON object, not a gpubase run");
  do {
    const std::string_view name = c.string(scratch);
    c.expect(':');
    if (name == "schema") {
      is_run = c.peek() == '"' && c.string(scratch) == "gpubase.run";
      if (!is_run) throw ScanError("not a gpubase run (\"schema\" is not \"gpubase.run\")");
    } else if (name == "command") {
      run.command = c.string(scratch);
    } else if (name == "environment") {
      if (c.open('[', ']')) do
          scan_fact(c, run, scratch);
        while (c.next(']'));
    } else if (name == "gpu") {
      scan_gpu(c, run, scratch);
    } else if (name == "results") {
      if (c.open('[', ']')) do
          scan_result(c, run, keys, scratch);
        while (c.next(']'));
    } else {
      c.skip_value();
    }
  } while (c.next('}'));
  if (!is_run) throw ScanError("not a gpubase run (no \"schema\": \"gpubase.run\")");
  return run;
}

}  // namespace gb::fleet
