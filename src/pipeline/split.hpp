// pipeline/split.hpp: the CPU/GPU split (DecodeMode::both). One loader whose workers decode a
// share of the samples on the CPU (into image_size^2 x 3 pixels) and only read + parse the rest
// for nvJPEG, in the same batches. Which path a sample takes depends on its dataset index only,
// so a batch's content is the same for any worker count; the share that keeps both paths busy
// comes from their two measured rates.
#pragma once
#include <cstddef>

#include "data/loader.hpp"

namespace gb::pipeline {

// Whether the sample at dataset `index` goes to nvJPEG when a share `gpu_share` of all samples
// does (a golden-ratio sequence: over any run of consecutive indices the fraction sent is within
// a few samples of the share; a larger share sends a superset). share <= 0: never; >= 1: always.
bool split_to_gpu(std::size_t index, double gpu_share);

// The share that keeps both paths busy: gpu / (gpu + cpu) images/s, clamped to [0.05, 1].
double balanced_gpu_share(double gpu_images_per_s, double cpu_images_per_s);

// The split's per-sample work, given the two paths' own: split_to_gpu() sends the sample to
// `to_gpu` (a reader's work: header, draws, the JPEG copied into the slot behind its
// SlotRecord, stages 0 and 1) or decodes it with `on_cpu` (jpeg_train_process: stages "decode"
// and "augment", reported as stages 2 and 3) into the pixels behind a record that says so
// (SlotRecord::decoded, width = height = image_size). Both draw the crop and flip from the same
// Philox stream in the same order. dst must hold kSlotRecordBytes + image_size^2 x 3 bytes.
data::ProcessFn split_process(data::ProcessFn to_gpu, data::ProcessFn on_cpu, int image_size,
                              double gpu_share);

}  // namespace gb::pipeline
