// data/synth.cpp: the synthetic ImageNet-like generator: size/quality draws, procedural
// content, parallel JPEG encoding, ImageFolder / WebDataset output.
#include "data/synth.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <numbers>
#include <system_error>
#include <thread>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "data/tar.hpp"
#include "core/thread_name.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for pixels and draws.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  float centered() { return static_cast<float>(next() >> 40) * 0x1.0p-23f - 1.0f; }  // [-1, 1)
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
};

// Independent streams for (seed, index, purpose).
Rng stream(std::uint64_t seed, std::uint64_t index, std::uint64_t purpose) {
  Rng r{seed ^ 0x5851F42D4C957F2Dull};
  r.state ^= r.next() + index * 0xD1B54A32D192ED03ull;
  r.state ^= r.next() + purpose * 0xAEF17502108EF2D9ull;
  r.next();
  return r;
}

// ---- sizes -------------------------------------------------------------------------------
//
// A mixture fitted to the published shape of ILSVRC-2012 train (see synth.hpp and
// docs/datasets.md): 70 % Flickr-medium images with a 500 px long side -- 4:3 (500x375) half of
// them, 3:2 (500x333) 28 %, square 8 %, other ratios up to 2.2:1 14 % -- and 30 % other sizes,
// long side log-normal around 360 px (clamped to 64..2500) with aspect ratios around 1.3.
// Landscape 80 %, portrait 20 %. Result (200k draws): median 500x375, mean ~445x375,
// most common 500x375, 500x333, 375x500, 500x500, 333x500.
struct Size2 {
  int width, height;
};

Size2 draw_size(Rng& r) {
  double long_side, ratio;
  if (r.uniform() < 0.70) {
    long_side = 500;
    const double v = r.uniform();
    ratio = v < 0.50   ? 4.0 / 3.0
            : v < 0.78 ? 1.5
            : v < 0.86 ? 1.0
                       : std::exp(r.uniform(0, std::log(2.2)));
  } else {
    long_side = std::clamp(std::exp(std::log(360.0) + 0.45 * r.normal()), 64.0, 2500.0);
    ratio = std::min(3.0, std::exp(std::abs(0.25 + 0.15 * r.normal())));
  }
  const int l = static_cast<int>(long_side);
  const int s = std::max(32, static_cast<int>(std::lround(long_side / ratio)));
  return r.uniform() < 0.8 ? Size2{l, s} : Size2{s, l};
}

// ---- content -----------------------------------------------------------------------------

// A w x h field with structure at every scale: a grid with cells of `coarsest` pixels, doubled
// in resolution level by level down to 1-pixel cells (each new sample the mean of its parents,
// as in midpoint displacement), with fresh uniform noise of amplitude persistence^level added at
// each level. persistence ~0.6 gives the falling, 1/f-like spectrum of natural images.
std::vector<float> fractal_field(int w, int h, int coarsest, float persistence, Rng& rng) {
  int levels = 0;
  while ((1 << (levels + 1)) <= coarsest) ++levels;
  auto dims = [&](int level, int n) {
    return ((n + (1 << (levels - level)) - 1) >> (levels - level)) + 1;
  };
  int gw = dims(0, w), gh = dims(0, h);
  std::vector<float> grid(static_cast<std::size_t>(gw) * gh);
  for (float& v : grid) v = rng.centered();
  std::vector<float> next;
  float amplitude = 1.0f;
  for (int level = 1; level <= levels; ++level) {
    amplitude *= persistence;
    const int nw = dims(level, w), nh = dims(level, h);
    next.assign(static_cast<std::size_t>(nw) * nh, 0.0f);
    for (int y = 0; y < nh; ++y) {
      const float* r0 = grid.data() + static_cast<std::size_t>(y >> 1) * gw;
      const float* r1 = (y & 1) ? r0 + gw : r0;
      float* out = next.data() + static_cast<std::size_t>(y) * nw;
      for (int x = 0; x < nw; ++x) {
        const int x0 = x >> 1, x1 = x0 + (x & 1);
        out[x] = 0.25f * (r0[x0] + r0[x1] + r1[x0] + r1[x1]) + amplitude * rng.centered();
      }
    }
    grid.swap(next);
    gw = nw;
    gh = nh;
  }
  std::vector<float> field(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y) {
    std::copy_n(grid.data() + static_cast<std::size_t>(y) * gw, w,
                field.data() + static_cast<std::size_t>(y) * w);
  }
  return field;
}

struct Colour {
  float r, g, b;
};

Colour random_colour(Rng& r) {
  // Muted, photo-like colours: a mid-grey base plus a random tint, rarely saturated.
  const float base = static_cast<float>(r.uniform(40, 210));
  return {base + static_cast<float>(r.normal() * 35), base + static_cast<float>(r.normal() * 30),
          base + static_cast<float>(r.normal() * 35)};
}

constexpr int kSineTable = 1024;
const std::array<float, kSineTable>& sine_table() {
  static const std::array<float, kSineTable> t = [] {
    std::array<float, kSineTable> a{};
    for (int i = 0; i < kSineTable; ++i) {
      a[i] = static_cast<float>(std::sin(2.0 * std::numbers::pi * i / kSineTable));
    }
    return a;
  }();
  return t;
}

// A soft-edged ellipse or rectangle, rotated, with its own colour and oriented stripes (a stand-in
// for fabric, fur, foliage, brickwork: the mid/high frequencies an object adds).
void paint_shape(std::vector<float>& rgb, const std::vector<float>& lum, int w, int h, float detail,
                 Rng& r) {
  const float cx = static_cast<float>(r.uniform(-0.1, 1.1) * w);
  const float cy = static_cast<float>(r.uniform(-0.1, 1.1) * h);
  const float scale =
      static_cast<float>(std::min(w, h) * std::exp(r.uniform(std::log(0.03), std::log(0.4))));
  const float ax = scale * static_cast<float>(r.uniform(0.5, 1.5));
  const float ay = scale * static_cast<float>(r.uniform(0.5, 1.5));
  const float angle = static_cast<float>(r.uniform(0, std::numbers::pi));
  const float ca = std::cos(angle), sa = std::sin(angle);
  const bool ellipse = r.uniform() < 0.6;
  const Colour c = random_colour(r);
  const float opacity = static_cast<float>(r.uniform(0.6, 1.0));
  const float edge_px = static_cast<float>(r.uniform(0.7, 4.0));
  // Stripes: period 2.5..40 px, amplitude up to ~30 levels.
  const float period = static_cast<float>(std::exp(r.uniform(std::log(2.5), std::log(40.0))));
  const float stripe_amp = detail * static_cast<float>(r.uniform(0, 45));
  const float sangle = static_cast<float>(r.uniform(0, std::numbers::pi));
  const float su = std::cos(sangle) * kSineTable / period,
              sv = std::sin(sangle) * kSineTable / period;
  const float lum_gain = static_cast<float>(r.uniform(0.3, 1.3));
  const std::array<float, kSineTable>& sine = sine_table();

  const float reach = std::max(ax, ay) + edge_px;
  const int x0 = std::max(0, static_cast<int>(cx - reach)),
            x1 = std::min(w, static_cast<int>(cx + reach) + 1);
  const int y0 = std::max(0, static_cast<int>(cy - reach)),
            y1 = std::min(h, static_cast<int>(cy + reach) + 1);
  const float min_axis = std::min(ax, ay);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      const float dx = static_cast<float>(x) - cx, dy = static_cast<float>(y) - cy;
      const float u = (dx * ca + dy * sa) / ax, v = (-dx * sa + dy * ca) / ay;
      // Signed distance to the edge, in pixels (approximate for ellipses), positive inside.
      const float inside = ellipse ? (1.0f - std::sqrt(u * u + v * v)) * min_axis
                                   : (1.0f - std::max(std::abs(u), std::abs(v))) * min_axis;
      if (inside <= -edge_px) continue;
      const float alpha = opacity * std::clamp(0.5f + inside / (2 * edge_px), 0.0f, 1.0f);
      const std::size_t p = static_cast<std::size_t>(y) * w + x;
      const int phase = static_cast<int>(static_cast<float>(x) * su + static_cast<float>(y) * sv);
      const float texture =
          stripe_amp * sine[static_cast<unsigned>(phase) & (kSineTable - 1)] + lum_gain * lum[p];
      float* px = rgb.data() + 3 * p;
      px[0] += alpha * (c.r + texture - px[0]);
      px[1] += alpha * (c.g + texture - px[1]);
      px[2] += alpha * (c.b + texture - px[2]);
    }
  }
}

}  // namespace

std::string synth_class_name(std::int32_t label) {
  char name[32];
  std::snprintf(name, sizeof name, "class_%04d", label);
  return name;
}

SynthImageSpec synth_image_spec(const SynthOptions& options, std::size_t index) {
  Rng r = stream(options.seed, index, 1);
  const Size2 size = draw_size(r);
  SynthImageSpec spec;
  spec.index = index;
  spec.width = std::max(8, static_cast<int>(std::lround(size.width * options.size_scale)));
  spec.height = std::max(8, static_cast<int>(std::lround(size.height * options.size_scale)));
  spec.quality = std::clamp(
      static_cast<int>(std::lround(options.quality_mean + options.quality_stddev * r.normal())),
      options.quality_min, options.quality_max);
  spec.label = static_cast<std::int32_t>(index % std::max<std::size_t>(options.classes, 1));
  spec.seed = stream(options.seed, index, 2).next();
  return spec;
}

std::vector<std::uint8_t> synth_pixels(const SynthImageSpec& spec) {
  const int w = spec.width, h = spec.height;
  const std::size_t n = static_cast<std::size_t>(w) * h;
  Rng r{spec.seed};
  // How busy this picture is: a log-normal factor that spreads file sizes like real photos
  // (a plain sky compresses 10x better than a forest).
  const float detail = static_cast<float>(std::exp(0.35 * r.normal()));

  // Luminance structure at every scale; chroma only at coarse scales (as in photographs).
  const int coarsest = std::max(8, std::max(w, h) / 4);
  const std::vector<float> lum = fractal_field(w, h, coarsest, 0.80f, r);
  const std::vector<float> chroma_a = fractal_field(w, h, coarsest, 0.45f, r);
  const std::vector<float> chroma_b = fractal_field(w, h, coarsest, 0.45f, r);
  // Fine texture (foliage, fur, gravel) only where a coarse mask says so, as in a photo where a
  // textured foreground sits against a smooth sky.
  const std::vector<float> texture = fractal_field(w, h, 16, 0.9f, r);
  const std::vector<float> texture_mask = fractal_field(w, h, coarsest, 0.5f, r);
  const float lum_amp = 40.0f * detail, chroma_amp = 22.0f, texture_amp = 95.0f * detail;

  // Background: a linear gradient between two colours along a random direction.
  const Colour c0 = random_colour(r), c1 = random_colour(r);
  const double angle = r.uniform(0, 2 * std::numbers::pi);
  const float gx = static_cast<float>(std::cos(angle) / w),
              gy = static_cast<float>(std::sin(angle) / h);
  std::vector<float> lum_scaled(n);
  std::vector<float> rgb(3 * n);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * w + x;
      const float t =
          std::clamp(0.5f + gx * static_cast<float>(x - w / 2) + gy * static_cast<float>(y - h / 2),
                     0.0f, 1.0f);
      const float l = lum_amp * lum[p] +
                      texture_amp * std::clamp(0.7f + texture_mask[p], 0.0f, 1.0f) * texture[p];
      lum_scaled[p] = l;
      const float ca = chroma_amp * chroma_a[p], cb = chroma_amp * chroma_b[p];
      rgb[3 * p + 0] = c0.r + t * (c1.r - c0.r) + l + ca;
      rgb[3 * p + 1] = c0.g + t * (c1.g - c0.g) + l - 0.5f * (ca + cb);
      rgb[3 * p + 2] = c0.b + t * (c1.b - c0.b) + l + cb;
    }
  }
  const int shapes = 10 + static_cast<int>(r.next() % 31);
  for (int s = 0; s < shapes; ++s) paint_shape(rgb, lum_scaled, w, h, detail, r);

  // Sensor grain (triangular noise, sigma ~ 0.8 * grain), then quantise.
  const float grain = 10.0f * detail;
  std::vector<std::uint8_t> out(3 * n);
  for (std::size_t i = 0; i < 3 * n; ++i) {
    const float v = rgb[i] + grain * (r.centered() + r.centered());
    out[i] = static_cast<std::uint8_t>(static_cast<int>(std::clamp(v, 0.0f, 255.0f) + 0.5f));
  }
  return out;
}

void synth_jpeg(const SynthImageSpec& spec, JpegEncoder& encoder, std::vector<std::uint8_t>& out) {
  const std::vector<std::uint8_t> rgb = synth_pixels(spec);
  encoder.encode_rgb(rgb, spec.width, spec.height, spec.quality, ChromaSubsampling::s420, out);
}

SynthSummary synth_dataset(const SynthOptions& options, const Progress& progress) {
  if (options.images == 0) throw Error(ErrorKind::usage, "synth: the image count is 0");
  if (options.classes == 0) throw Error(ErrorKind::usage, "synth: the class count is 0");
  if (!(options.size_scale > 0 && options.size_scale <= 1)) {
    throw Error(ErrorKind::usage, "synth: size scale must be in (0, 1]");
  }
  if (options.quality_min < 1 || options.quality_max > 100 ||
      options.quality_min > options.quality_max) {
    throw Error(ErrorKind::usage, "synth: JPEG quality range must lie within 1..100");
  }
  const bool folder = options.layout != SynthLayout::webdataset;
  const bool shards = options.layout != SynthLayout::image_folder;
  const fs::path folder_dir =
      options.layout == SynthLayout::both ? options.output / "image_folder" : options.output;
  const fs::path shard_dir =
      options.layout == SynthLayout::both ? options.output / "webdataset" : options.output;
  std::error_code ec;
  fs::create_directories(options.output, ec);
  if (ec) throw Error(ErrorKind::usage, options.output.string() + ": " + ec.message());
  if (folder) {
    const std::size_t used = std::min(options.classes, options.images);
    for (std::size_t c = 0; c < used; ++c) {
      fs::create_directories(folder_dir / synth_class_name(static_cast<std::int32_t>(c)), ec);
      if (ec) throw Error(ErrorKind::usage, folder_dir.string() + ": " + ec.message());
    }
  }
  if (shards) {
    fs::create_directories(shard_dir, ec);
    if (ec) throw Error(ErrorKind::usage, shard_dir.string() + ": " + ec.message());
  }

  // Work is split in units of one shard's images (the unit the tar writer needs); a worker
  // takes the next unit until none is left.
  const std::size_t unit = std::max<std::size_t>(options.images_per_shard, 1);
  const std::size_t units = (options.images + unit - 1) / unit;
  std::vector<std::uint32_t> bytes(options.images);
  std::vector<SynthImageSpec> specs(options.images);
  std::atomic<std::size_t> next_unit{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  auto worker = [&] {
    try {
      JpegEncoder encoder;
      std::vector<std::uint8_t> jpeg;
      char name[48];
      for (std::size_t u = next_unit++; u < units && !failed; u = next_unit++) {
        const std::size_t first = u * unit, last = std::min(options.images, first + unit);
        std::unique_ptr<TarWriter> tar;
        if (shards) {
          std::snprintf(name, sizeof name, "shard-%06zu.tar", u);
          tar = std::make_unique<TarWriter>(shard_dir / name);
        }
        for (std::size_t i = first; i < last && !failed; ++i) {
          const SynthImageSpec spec = synth_image_spec(options, i);
          synth_jpeg(spec, encoder, jpeg);
          specs[i] = spec;
          bytes[i] = static_cast<std::uint32_t>(jpeg.size());
          if (folder) {
            std::snprintf(name, sizeof name, "synth_%08zu.jpg", i);
            write_whole_file(folder_dir / synth_class_name(spec.label) / name, jpeg);
          }
          if (tar) {
            std::snprintf(name, sizeof name, "%08zu", i);
            const std::string cls = std::to_string(spec.label);
            tar->add(std::string(name) + ".jpg", jpeg);
            tar->add(std::string(name) + ".cls",
                     {reinterpret_cast<const std::uint8_t*>(cls.data()), cls.size()});
          }
          ++done;
        }
        if (tar) tar->finish();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };

  const auto start = std::chrono::steady_clock::now();
  unsigned threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = static_cast<unsigned>(std::clamp<std::size_t>(threads, 1, units));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&worker, t] {
      name_this_thread("gb-synth " + std::to_string(t));
      worker();
    });
  // The calling thread only reports progress. A progress callback that throws (Ctrl-C) stops the
  // workers after their current image; they are joined before the exception goes on.
  try {
    while (done < options.images && !failed) {
      if (progress) progress(done, options.images);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } catch (...) {
    failed = true;
    for (std::thread& t : pool) t.join();
    throw;
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  if (progress) progress(options.images, options.images);

  SynthSummary s;
  s.images = options.images;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double width_sum = 0, height_sum = 0;
  for (std::size_t i = 0; i < options.images; ++i) {
    s.total_bytes += bytes[i];
    width_sum += specs[i].width;
    height_sum += specs[i].height;
  }
  s.mean_bytes = static_cast<double>(s.total_bytes) / static_cast<double>(s.images);
  s.mean_width = width_sum / static_cast<double>(s.images);
  s.mean_height = height_sum / static_cast<double>(s.images);
  std::vector<std::uint32_t> sorted = bytes;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5)];
  };
  s.min_bytes = sorted.front();
  s.p10_bytes = at(0.10);
  s.median_bytes = at(0.50);
  s.p90_bytes = at(0.90);
  s.max_bytes = sorted.back();
  return s;
}

}  // namespace gb::data
