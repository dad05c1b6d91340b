// data/gzip.cpp: zlib inflate in gzip mode, sized from the stream's ISIZE trailer.
#include "data/gzip.hpp"

#include <algorithm>
#include <limits>

#include "core/cancel.hpp"
#include "core/error.hpp"

#if defined(GPUBASE_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace gb::data {

bool is_gzip(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B;
}

#if defined(GPUBASE_HAVE_ZLIB)

bool gzip_supported() {
  return true;
}

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& name,
                                 std::uint64_t max_bytes, GunzipLimit at_limit) {
  std::vector<std::uint8_t> out;
  // ISIZE (the last 4 bytes, little-endian) is the uncompressed size mod 2^32: a good first
  // guess that saves regrowing a 47 MB buffer, never more than the limit, nor more than the
  // stream can hold (deflate expands at most 1032:1): a 100-byte file claiming 4 GiB in its
  // trailer reserves no more than 100 KiB.
  constexpr std::uint64_t kMaxDeflateRatio = 1032;
  if (compressed.size() >= 18) {
    const std::uint8_t* t = compressed.data() + compressed.size() - 4;
    const std::uint64_t isize = std::uint32_t{t[0]} | std::uint32_t{t[1]} << 8 |
                                std::uint32_t{t[2]} << 16 | std::uint32_t{t[3]} << 24;
    out.reserve(static_cast<std::size_t>(
        std::min({isize, max_bytes, std::uint64_t{compressed.size()} * kMaxDeflateRatio})));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    throw Error(ErrorKind::runtime, name + ": zlib inflateInit2 failed");
  }
  std::size_t in_pos = 0;
  int rc = Z_OK;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    if (cancel_requested()) {  // a large stream inflates for seconds: Ctrl-C ends it
      inflateEnd(&zs);
      throw_if_cancelled();
    }
    if (zs.avail_in == 0 && in_pos < compressed.size()) {
      const std::size_t n =
          std::min<std::size_t>(compressed.size() - in_pos, std::numeric_limits<uInt>::max());
      zs.next_in = const_cast<Bytef*>(compressed.data() + in_pos);
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    zs.next_out = chunk;
    zs.avail_out = sizeof(chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t produced = sizeof(chunk) - zs.avail_out;
    if (out.size() + produced > max_bytes) {
      inflateEnd(&zs);
      if (at_limit == GunzipLimit::fail)
        throw Error(ErrorKind::usage, name + ": the gzip stream holds more than the " +
                                          std::to_string(max_bytes) +
                                          " bytes its header describes");
      out.insert(out.end(), chunk, chunk + (max_bytes - out.size()));
      return out;
    }
    out.insert(out.end(), chunk, chunk + produced);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (what `cat a.gz b.gz` makes); gunzip reads them all.
      if (zs.avail_in == 0 && in_pos == compressed.size()) break;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == compressed.size()) break;
    std::string why = zs.msg != nullptr ? zs.msg : "zlib error " + std::to_string(rc);
    inflateEnd(&zs);
    throw Error(ErrorKind::usage, name + ": corrupt gzip data: " + why);
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    throw Error(ErrorKind::usage, name + ": truncated gzip data (the stream ends early)");
  }
  return out;
}

#else

bool gzip_supported() {
  return false;
}

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t>, const std::string& name,
                                 std::uint64_t, GunzipLimit) {
  throw Error(ErrorKind::usage, name +
                                    ": gzip-compressed, and this build has no zlib "
                                    "(install zlib1g-dev and rebuild, or gunzip the file)");
}

#endif

}  // namespace gb::data
