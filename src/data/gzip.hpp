// data/gzip.hpp: gzip decompression for IDX files shipped as .gz (Fashion-MNIST, MNIST), through
// zlib when the build found it (GPUBASE_HAVE_ZLIB). A file is recognised as gzip by its magic
// bytes (1F 8B), not by its name.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gb::data {

bool is_gzip(std::span<const std::uint8_t> bytes);
bool gzip_supported();  // false when built without zlib

// What gunzip does at max_bytes of output: stop there and return them (reading a header), or
// fail naming the file (the stream holds more than its header describes).
enum class GunzipLimit { stop, fail };

// Decompresses a gzip stream (concatenated members included), producing at most max_bytes.
// Throws gb::Error (usage) naming `name` when the stream is corrupt or truncated (short of
// max_bytes with GunzipLimit::stop, anywhere otherwise), larger than max_bytes with
// GunzipLimit::fail, or when built without zlib.
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& name,
                                 std::uint64_t max_bytes, GunzipLimit at_limit);

}  // namespace gb::data
