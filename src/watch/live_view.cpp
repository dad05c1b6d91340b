// watch/live_view.cpp: the live line and panel.
#include "watch/live_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace gb::watch {

namespace {

std::string printf_string(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// "%3.0f%%", or "   -" (as wide) when missing.
std::string pct(const std::optional<double>& v, int width = 3) {
  if (!v) return std::string(static_cast<std::size_t>(width), ' ') + "-";
  return printf_string("%*.0f%%", width, *v);
}

std::string num(const std::optional<double>& v, const char* format) {
  return v ? printf_string(format, *v) : std::string("-");
}

std::string rate(const std::optional<double>& per_s) {
  if (!per_s) return "-";
  if (*per_s >= 1e6) return printf_string("%.1fM", *per_s / 1e6);
  if (*per_s >= 1e3) return printf_string("%.1fk", *per_s / 1e3);
  return printf_string("%.0f", *per_s);
}

std::string top_process(const JobInterval& j) {
  if (j.processes_detail.empty()) return "";
  const ProcessInterval& p = j.processes_detail.front();
  return printf_string("top %s %.0f%%", p.comm.c_str(), p.cpu_pct);
}

std::string fit(std::string line, int width) {
  // Cut at a byte count, backing up to a UTF-8 boundary (bars are multi-byte).
  if (width <= 0 || static_cast<int>(line.size()) <= width) return line;
  std::size_t cut = static_cast<std::size_t>(width);
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  line.resize(cut);
  return line;
}

}  // namespace

std::string core_bars(const std::vector<std::pair<int, double>>& core_busy_pct,
                      std::size_t max_cores) {
  static const char* kGlyphs[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string out;
  std::size_t n = 0;
  for (const auto& [core, busy] : core_busy_pct) {
    if (n++ >= max_cores) break;
    const int level = std::clamp(static_cast<int>(std::lround(busy / 12.5)), 0, 8);
    out += kGlyphs[level];
  }
  return out;
}

std::string format_line(const WatchSample& s) {
  std::string line = printf_string("%7.1fs", s.t_s);
  line += " gpu " + pct(s.gpu.util_pct);
  if (s.gpu.sm_active_pct) line += " sm " + pct(s.gpu.sm_active_pct);
  if (s.gpu.tensor_active_pct) line += " tc " + pct(s.gpu.tensor_active_pct);
  line += " mem " + pct(s.gpu.mem_util_pct);
  if (s.gpu.power_w) line += " " + num(s.gpu.power_w, "%4.0fW");
  line += " | cpu avg " + pct(s.cpu.mean_core_pct) + " max " + pct(s.cpu.busiest_core_pct) +
          " iow " + pct(s.cpu.iowait_pct, 2);
  if (s.job.alive) {
    line += " | job " + num(s.job.cpu_pct ? std::optional<double>(*s.job.cpu_pct / 100.0)
                                           : std::nullopt,
                            "%.1fc") +
            printf_string(" %dp", s.job.processes);
    const std::string top = top_process(s.job);
    if (!top.empty()) line += " " + top;
  } else {
    line += " | job ended";
  }
  if (s.disk.busiest && s.disk.util_pct)
    line += " | " + *s.disk.busiest + " " + pct(s.disk.util_pct, 2);
  return line;
}

std::vector<std::string> format_panel(const WatchSample& s, const PanelContext& ctx) {
  std::vector<std::string> lines;
  lines.push_back(fit(printf_string("gpubase watch  %.0f s  %s", ctx.elapsed_s,
                                    ctx.title.c_str()) +
                          "   (Ctrl-C: stop and report)",
                      ctx.width));

  std::string gpu = "GPU  util " + pct(s.gpu.util_pct);
  if (s.gpu.sm_active_pct) gpu += "  SM active " + pct(s.gpu.sm_active_pct);
  if (s.gpu.tensor_active_pct) gpu += "  tensor " + pct(s.gpu.tensor_active_pct);
  gpu += "  mem " + pct(s.gpu.mem_util_pct);
  if (s.gpu.power_w) gpu += "  " + num(s.gpu.power_w, "%.0f W");
  if (s.gpu.temp_c) gpu += "  " + num(s.gpu.temp_c, "%.0f C");
  if (s.gpu.memory_used_gib) gpu += "  " + num(s.gpu.memory_used_gib, "%.1f GiB");
  if (s.gpu.pcie_rx_gbps || s.gpu.pcie_tx_gbps)
    gpu += "  PCIe rx " + num(s.gpu.pcie_rx_gbps, "%.1f") + " tx " +
           num(s.gpu.pcie_tx_gbps, "%.1f") + " GB/s";
  if (!s.gpu.util_pct && !s.gpu.power_w) gpu = "GPU  -";
  lines.push_back(fit(gpu, ctx.width));

  std::string cpu = "CPU  avg " + pct(s.cpu.mean_core_pct) + "  max " +
                    pct(s.cpu.busiest_core_pct);
  if (s.cpu.busiest_core) cpu += printf_string(" (cpu%d)", *s.cpu.busiest_core);
  cpu += "  iowait " + pct(s.cpu.iowait_pct, 2);
  if (s.cpu.steal_pct && *s.cpu.steal_pct >= 1) cpu += "  steal " + pct(s.cpu.steal_pct, 2);
  cpu += "  ctx " + rate(s.cpu.ctx_switches_per_s) + "/s";
  if (s.cpu.run_queue) cpu += printf_string("  runq %d", *s.cpu.run_queue);
  const int used = static_cast<int>(cpu.size()) + 3;
  if (!s.cpu.core_busy_pct.empty() && ctx.width - used >= 8)
    cpu += "  [" + core_bars(s.cpu.core_busy_pct, static_cast<std::size_t>(ctx.width - used)) +
           "]";
  lines.push_back(fit(cpu, ctx.width + 2 * static_cast<int>(s.cpu.core_busy_pct.size())));

  std::string job;
  if (s.job.alive) {
    job = "job  " + num(s.job.cpu_pct ? std::optional<double>(*s.job.cpu_pct / 100.0)
                                      : std::nullopt,
                        "%.2f cores") +
          printf_string("  %d procs (%d busy)  %d threads", s.job.processes,
                        s.job.active_processes, s.job.threads);
    if (s.job.involuntary_cs_per_s)
      job += "  invol ctx " + rate(s.job.involuntary_cs_per_s) + "/s";
    for (std::size_t i = 0; i < s.job.processes_detail.size() && i < 3; ++i) {
      const ProcessInterval& p = s.job.processes_detail[i];
      job += printf_string("%s %s %.0f%%", i == 0 ? "  top:" : ",", p.comm.c_str(), p.cpu_pct);
    }
    if (const auto& t = s.job.busiest_thread)
      job += printf_string("  thread %s %.0f%%", t->comm.c_str(), t->cpu_pct);
  } else {
    job = "job  ended";
  }
  if (s.disk.busiest && s.disk.util_pct)
    job += "  | disk " + *s.disk.busiest + " " + pct(s.disk.util_pct, 2) + " r " +
           num(s.disk.read_mbps, "%.0f") + " MB/s";
  if (s.mem.available_gib) job += "  | mem avail " + num(s.mem.available_gib, "%.1f GiB");
  lines.push_back(fit(job, ctx.width));
  return lines;
}

}  // namespace gb::watch
