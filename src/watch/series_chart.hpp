// watch/series_chart.hpp: a watch run's recorded time series (series_io's JSON lines or CSV)
// read back as the panels a report draws (core/series.hpp): GPU activity (driver busy, SM
// active, tensor active), GPU power, CPU (busiest core, mean, I/O wait), the job's processes and
// CPU, disk utilisation, the data-wait share when the series has one, and per-core CPU busy as a
// heat strip. A column the run never measured (no GPM, no NVML) is left out, not drawn as 0.
#pragma once
#include <string>

#include "core/series.hpp"

namespace gb::watch {

// Throws gb::Error (usage) when the file cannot be read; a line that does not parse is skipped
// (a run killed mid-write leaves a partial last line).
RunSeries read_series_chart(const std::string& path);

}  // namespace gb::watch
