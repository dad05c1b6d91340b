// data/open.hpp: opens a dataset from one path, recognising its format, for commands that take
// `--data PATH`:
//   a file starting with the GBPACK magic         -> PackedDataset
//   a .tar file, or a directory of .tar files     -> WebDataset
//   a directory with <split>-images-idx3-ubyte[.gz] -> IdxDataset (split "train" unless given)
//   any other directory                           -> ImageFolderDataset
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "data/dataset.hpp"

namespace gb::data {

struct DatasetSpec {
  std::filesystem::path path;
  std::string split = "train";  // IDX only: "train" or "t10k"
  bool strict = false;
  // Packs only: every sample read is checked against its CRC-32C, so a damaged sample is an
  // error (a bad sample for the loader, counted and substituted) instead of bytes passed on:
  // a damaged pack cannot be re-packed or exported into a clean-looking copy. About 15 us per
  // 110 KB JPEG with SSE4.2, 1 % of its decode.
  bool verify_reads = true;
};

// Throws gb::Error (usage) naming the path when it does not exist or matches no format.
std::unique_ptr<Dataset> open_dataset(const DatasetSpec& spec);

}  // namespace gb::data
