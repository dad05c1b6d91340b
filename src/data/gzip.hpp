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

// Decompresses a whole gzip stream (concatenated members included). Throws gb::Error (usage)
// naming `name` when the stream is corrupt or truncated, or when built without zlib.
std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& name);

}  // namespace gb::data
