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
  bool verify_reads = false;  // packs only
};

// Throws gb::Error (usage) naming the path when it does not exist or matches no format.
std::unique_ptr<Dataset> open_dataset(const DatasetSpec& spec);

}  // namespace gb::data
