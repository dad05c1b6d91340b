// data/synth.hpp: `gpubase dataset synth` -- an ImageNet-like JPEG dataset for machines without
// data, deterministic from a seed.
//
// What "ImageNet-like" means here, and where the numbers come from (docs/datasets.md has more):
// - Sizes: ILSVRC-2012 images are mostly Flickr "medium" downloads, 500 px on the long side, so
//   the most common sizes are 500x375 (4:3) and 500x333 (3:2), landscape about four times in
//   five; the rest spread from under 100 px to a few thousand. Commonly quoted means for the
//   train set are ~400x350 and ~470x390 (the figures vary with how they were counted); the
//   mixture below has a median of 500x375 and a mean of about 445x375 (synth_image_spec()).
// - Bytes: the ILSVRC-2012 train archive is ~138 GiB for 1,281,167 images (Russakovsky et al.,
//   IJCV 2015, table 2, for the count), about 110 KB per JPEG. Content is tuned to land there.
// - Encoding: baseline JPEG, 4:2:0 chroma subsampling (what cameras and Flickr write), quality
//   drawn from a normal distribution around 90.
// - Content: smooth colour gradients, a 1/f-like fractal luminance field (texture at every scale
//   from 1/4 of the image down to single pixels), a few soft-edged shapes with oriented stripes,
//   and sensor-like grain -- not flat colour (compresses to a few KB) and not white noise
//   (incompressible, and nothing like a photograph to a DCT).
//
// Every image is a function of (seed, index) only: the same options give the same bytes
// whatever the number of threads.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "data/dataset.hpp"
#include "data/jpeg.hpp"

namespace gb::data {

enum class SynthLayout {
  image_folder,  // output/<class>/<index>.jpg
  webdataset,    // output/shard-000000.tar, ... (<index>.jpg + <index>.cls)
  both,          // output/image_folder/... and output/webdataset/...
};

struct SynthOptions {
  std::filesystem::path output;  // created if missing; existing files of the same names replaced
  std::size_t images = 1000;
  std::size_t classes = 1000;  // labels are index % classes: balanced, like ImageNet's 1,000
  std::uint64_t seed = 0;
  SynthLayout layout = SynthLayout::image_folder;
  std::size_t images_per_shard = 1000;  // ~110 MB shards
  double quality_mean = 90;
  double quality_stddev = 3;
  int quality_min = 75;
  int quality_max = 97;
  // Multiplies both sides of every image (0 < scale <= 1); 1 is ImageNet-like. Tests use less.
  double size_scale = 1.0;
  unsigned threads = 0;  // 0: every hardware thread
};

// One image's parameters, a pure function of (options, index).
struct SynthImageSpec {
  std::size_t index = 0;
  int width = 0;
  int height = 0;
  int quality = 90;
  std::int32_t label = 0;
  std::uint64_t seed = 0;  // of the pixel content
};
SynthImageSpec synth_image_spec(const SynthOptions& options, std::size_t index);

// The image's pixels, RGB, height rows of width*3 bytes.
std::vector<std::uint8_t> synth_pixels(const SynthImageSpec& spec);

// The image as a JPEG file (4:2:0, spec.quality).
void synth_jpeg(const SynthImageSpec& spec, JpegEncoder& encoder, std::vector<std::uint8_t>& out);

struct SynthSummary {
  std::size_t images = 0;
  std::uint64_t total_bytes = 0;
  double mean_bytes = 0;
  std::uint64_t min_bytes = 0, p10_bytes = 0, median_bytes = 0, p90_bytes = 0, max_bytes = 0;
  double mean_width = 0, mean_height = 0;
  double seconds = 0;
};

// Generates options.images JPEGs on options.threads threads and writes them in the layout asked.
// progress(done, total) is called from the calling thread about every 0.1 s. Throws gb::Error
// (usage) for bad options or an output directory that cannot be written.
SynthSummary synth_dataset(const SynthOptions& options, const Progress& progress = {});

// Class directory / name of label `label`: "class_0000", ...
std::string synth_class_name(std::int32_t label);

}  // namespace gb::data
