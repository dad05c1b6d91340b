// data/crc32c.hpp: CRC-32C (Castagnoli, the iSCSI/ext4/Btrfs checksum) of the packed format's
// samples, index and header. SSE4.2 has an instruction for it (about 20 GB/s on one core, so
// verifying a 140 GB ImageNet pack is disk-bound); elsewhere a slicing-by-8 table (~1-2 GB/s).
#pragma once
#include <cstdint>
#include <span>

namespace gb::data {

// CRC-32C of `bytes`, continuing from `crc` (pass a previous result to checksum in pieces;
// 0 to start). crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);

}  // namespace gb::data
