// watch/series_io.cpp: CSV and JSON-lines writers for the watch time series.
#include "watch/series_io.hpp"

#include <cmath>
#include <cstdio>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gb::watch {

namespace {

using Getter = std::function<std::optional<double>(const WatchSample&)>;

template <typename T>
std::optional<double> d(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

struct Column {
  const char* name;
  Getter get;
};

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      {"t_s", [](const WatchSample& s) { return std::optional<double>(s.t_s); }},
      {"interval_s", [](const WatchSample& s) { return std::optional<double>(s.interval_s); }},
      {"gpu_util_pct", [](const WatchSample& s) { return s.gpu.util_pct; }},
      {"gpu_util_now_pct", [](const WatchSample& s) { return s.gpu.util_now_pct; }},
      {"gpu_mem_util_pct", [](const WatchSample& s) { return s.gpu.mem_util_pct; }},
      {"gpu_sm_active_pct", [](const WatchSample& s) { return s.gpu.sm_active_pct; }},
      {"gpu_sm_occupancy_pct", [](const WatchSample& s) { return s.gpu.sm_occupancy_pct; }},
      {"gpu_tensor_active_pct", [](const WatchSample& s) { return s.gpu.tensor_active_pct; }},
      {"gpu_dram_bw_pct", [](const WatchSample& s) { return s.gpu.dram_bw_pct; }},
      {"gpu_power_w", [](const WatchSample& s) { return s.gpu.power_w; }},
      {"gpu_sm_clock_mhz", [](const WatchSample& s) { return s.gpu.sm_clock_mhz; }},
      {"gpu_mem_clock_mhz", [](const WatchSample& s) { return s.gpu.mem_clock_mhz; }},
      {"gpu_temp_c", [](const WatchSample& s) { return s.gpu.temp_c; }},
      {"gpu_memory_temp_c", [](const WatchSample& s) { return s.gpu.memory_temp_c; }},
      {"gpu_memory_used_gib", [](const WatchSample& s) { return s.gpu.memory_used_gib; }},
      {"gpu_pcie_rx_gbps", [](const WatchSample& s) { return s.gpu.pcie_rx_gbps; }},
      {"gpu_pcie_tx_gbps", [](const WatchSample& s) { return s.gpu.pcie_tx_gbps; }},
      {"gpu_pcie_gen", [](const WatchSample& s) { return d(s.gpu.pcie_gen); }},
      {"gpu_pcie_width", [](const WatchSample& s) { return d(s.gpu.pcie_width); }},
      {"gpu_throttle_reasons", [](const WatchSample& s) { return d(s.gpu.throttle_reasons); }},
      {"gpu_job_sm_pct", [](const WatchSample& s) { return s.gpu.job_sm_pct; }},
      {"gpu_other_processes", [](const WatchSample& s) { return d(s.gpu.other_processes); }},
      {"cpu_mean_core_pct", [](const WatchSample& s) { return s.cpu.mean_core_pct; }},
      {"cpu_busiest_core_pct", [](const WatchSample& s) { return s.cpu.busiest_core_pct; }},
      {"cpu_busiest_core", [](const WatchSample& s) { return d(s.cpu.busiest_core); }},
      {"cpu_saturated_cores", [](const WatchSample& s) { return d(s.cpu.saturated_cores); }},
      {"cpu_user_pct", [](const WatchSample& s) { return s.cpu.user_pct; }},
      {"cpu_system_pct", [](const WatchSample& s) { return s.cpu.system_pct; }},
      {"cpu_iowait_pct", [](const WatchSample& s) { return s.cpu.iowait_pct; }},
      {"cpu_steal_pct", [](const WatchSample& s) { return s.cpu.steal_pct; }},
      {"cpu_ctx_switches_per_s", [](const WatchSample& s) { return s.cpu.ctx_switches_per_s; }},
      {"cpu_run_queue", [](const WatchSample& s) { return d(s.cpu.run_queue); }},
      {"cpu_blocked", [](const WatchSample& s) { return d(s.cpu.blocked); }},
      {"job_alive", [](const WatchSample& s) { return std::optional<double>(s.job.alive); }},
      {"job_cpu_pct", [](const WatchSample& s) { return s.job.cpu_pct; }},
      {"job_processes", [](const WatchSample& s) { return d(std::optional<int>(s.job.processes)); }},
      {"job_active_processes",
       [](const WatchSample& s) { return d(std::optional<int>(s.job.active_processes)); }},
      {"job_saturated_processes",
       [](const WatchSample& s) { return d(std::optional<int>(s.job.saturated_processes)); }},
      {"job_threads", [](const WatchSample& s) { return d(std::optional<int>(s.job.threads)); }},
      {"job_voluntary_cs_per_s", [](const WatchSample& s) { return s.job.voluntary_cs_per_s; }},
      {"job_involuntary_cs_per_s",
       [](const WatchSample& s) { return s.job.involuntary_cs_per_s; }},
      {"job_rss_gib", [](const WatchSample& s) { return s.job.rss_gib; }},
      {"mem_total_gib", [](const WatchSample& s) { return s.mem.total_gib; }},
      {"mem_available_gib", [](const WatchSample& s) { return s.mem.available_gib; }},
      {"mem_page_cache_gib", [](const WatchSample& s) { return s.mem.page_cache_gib; }},
      {"disk_busiest_util_pct", [](const WatchSample& s) { return s.disk.util_pct; }},
      {"disk_busiest_r_await_ms", [](const WatchSample& s) { return s.disk.r_await_ms; }},
      {"disk_busiest_queue", [](const WatchSample& s) { return s.disk.queue; }},
      {"disk_read_mbps", [](const WatchSample& s) { return s.disk.read_mbps; }},
      {"disk_write_mbps", [](const WatchSample& s) { return s.disk.write_mbps; }},
      {"disk_reads_per_s", [](const WatchSample& s) { return s.disk.reads_per_s; }},
      {"disk_writes_per_s", [](const WatchSample& s) { return s.disk.writes_per_s; }},
      {"perf_ipc", [](const WatchSample& s) { return s.perf.ipc; }},
      {"perf_task_clock_cores", [](const WatchSample& s) { return s.perf.task_clock_cores; }},
      {"perf_context_switches_per_s",
       [](const WatchSample& s) { return s.perf.context_switches_per_s; }},
      {"perf_migrations_per_s", [](const WatchSample& s) { return s.perf.migrations_per_s; }},
      {"perf_page_faults_per_s", [](const WatchSample& s) { return s.perf.page_faults_per_s; }},
      {"perf_cache_misses_per_s", [](const WatchSample& s) { return s.perf.cache_misses_per_s; }},
      {"perf_instructions_per_s",
       [](const WatchSample& s) { return s.perf.instructions_per_s; }},
      {"sampler_cpu_pct", [](const WatchSample& s) { return s.sampler_cpu_pct; }},
      {"sampler_host_ms", [](const WatchSample& s) { return s.sampler_host_ms; }},
      {"sampler_gpu_ms", [](const WatchSample& s) { return s.sampler_gpu_ms; }},
      {"sampler_perf_ms", [](const WatchSample& s) { return s.sampler_perf_ms; }},
      {"cuda_busy_pct", [](const WatchSample& s) { return s.cuda.busy_pct; }},
      {"cuda_kernels_per_s", [](const WatchSample& s) { return s.cuda.kernels_per_s; }},
      {"cuda_tiny_kernels_pct", [](const WatchSample& s) { return s.cuda.tiny_kernels_pct; }},
      {"cuda_gaps_per_s", [](const WatchSample& s) { return s.cuda.gaps_per_s; }},
      {"cuda_h2d_pageable_gbps", [](const WatchSample& s) { return s.cuda.h2d_pageable_gbps; }},
      {"cuda_h2d_pinned_gbps", [](const WatchSample& s) { return s.cuda.h2d_pinned_gbps; }},
      {"cuda_d2h_pageable_gbps", [](const WatchSample& s) { return s.cuda.d2h_pageable_gbps; }},
      {"cuda_d2h_pinned_gbps", [](const WatchSample& s) { return s.cuda.d2h_pinned_gbps; }},
      {"cuda_syncs_per_s", [](const WatchSample& s) { return s.cuda.syncs_per_s; }},
      {"cuda_sync_blocked_pct", [](const WatchSample& s) { return s.cuda.sync_blocked_pct; }},
      {"job_io_wait_pct", [](const WatchSample& s) { return s.threads.io_wait_pct; }},
      {"job_runnable_processes", [](const WatchSample& s) { return s.threads.runnable_processes; }},
      {"job_launcher_running_pct",
       [](const WatchSample& s) { return s.threads.launcher_running_pct; }},
      {"time_unix_s", [](const WatchSample& s) {
         return s.unix_time_s > 0 ? std::optional<double>(s.unix_time_s) : std::nullopt;
       }},
      // Last, so the columns before keep their places in CSV files read by position.
      {"job_busiest_thread_pct", [](const WatchSample& s) {
         return s.job.busiest_thread ? std::optional<double>(s.job.busiest_thread->cpu_pct)
                                     : std::nullopt;
       }},
  };
  return cols;
}

std::string number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (std::fabs(v) >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f", v);  // wall-clock times keep their milliseconds
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

constexpr std::size_t kTopProcesses = 8;

// A name as one CSV cell: what would need quoting becomes '_' (a comm may hold any byte).
std::string csv_cell(std::string text) {
  for (char& ch : text)
    if (ch == ',' || ch == '"' || ch == '\n' || ch == '\r') ch = '_';
  return text;
}

// "pt_main_thread (tid 1234 of pid 1200)", or nothing.
std::optional<std::string> busiest_thread_name(const JobInterval& j) {
  if (!j.busiest_thread) return std::nullopt;
  const ThreadInterval& t = *j.busiest_thread;
  return t.comm + " (tid " + std::to_string(t.tid) + " of pid " + std::to_string(t.pid) + ")";
}

}  // namespace

SeriesFormat series_format_for(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot != std::string::npos && path.substr(dot) == ".csv") return SeriesFormat::csv;
  return SeriesFormat::jsonl;
}

std::vector<std::string> series_columns() {
  std::vector<std::string> names;
  for (const Column& c : columns()) names.emplace_back(c.name);
  return names;
}

std::string csv_header() {
  std::string line;
  for (const Column& c : columns()) line += (line.empty() ? "" : ",") + std::string(c.name);
  line += ",disk_busiest,job_top_comm,job_busiest_thread";
  return line;
}

std::string csv_row(const WatchSample& s) {
  std::string line;
  bool first = true;
  for (const Column& c : columns()) {
    if (!first) line += ',';
    first = false;
    if (const auto v = c.get(s)) line += number(*v);
  }
  line += ',' + s.disk.busiest.value_or("");
  line += ',';
  if (!s.job.processes_detail.empty()) line += csv_cell(s.job.processes_detail.front().comm);
  line += ',' + csv_cell(busiest_thread_name(s.job).value_or(""));
  return line;
}

std::string jsonl_line(const WatchSample& s) {
  nlohmann::ordered_json j;
  for (const Column& c : columns()) {
    const auto v = c.get(s);
    j[c.name] = v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  }
  j["disk_busiest"] = s.disk.busiest ? nlohmann::ordered_json(*s.disk.busiest)
                                     : nlohmann::ordered_json();
  auto cores = nlohmann::ordered_json::array();
  for (const auto& [core, busy] : s.cpu.core_busy_pct) cores.push_back({core, busy});
  j["cpu_cores_busy_pct"] = cores;
  auto top = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < s.job.processes_detail.size() && i < kTopProcesses; ++i) {
    const ProcessInterval& p = s.job.processes_detail[i];
    top.push_back({{"pid", p.pid},
                   {"comm", p.comm},
                   {"cpu_pct", p.cpu_pct},
                   {"threads", p.threads},
                   {"voluntary_cs_per_s", p.voluntary_cs_per_s},
                   {"involuntary_cs_per_s", p.involuntary_cs_per_s}});
  }
  j["job_top_processes"] = top;
  const auto thread = busiest_thread_name(s.job);
  j["job_busiest_thread"] = thread ? nlohmann::ordered_json(*thread) : nlohmann::ordered_json();
  if (!s.gpu.other_pids.empty()) j["gpu_other_pids"] = s.gpu.other_pids;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

SeriesWriter::SeriesWriter(const std::string& path)
    : path_(path), format_(series_format_for(path)), out_(path, std::ios::trunc) {
  if (!out_) throw Error(ErrorKind::usage, "cannot create the series file " + path);
  if (format_ == SeriesFormat::csv) out_ << csv_header() << '\n' << std::flush;
}

void SeriesWriter::write(const WatchSample& s) {
  out_ << (format_ == SeriesFormat::csv ? csv_row(s) : jsonl_line(s)) << '\n' << std::flush;
}

}  // namespace gb::watch
