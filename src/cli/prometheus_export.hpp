// cli/prometheus_export.hpp: `--prometheus ADDR:PORT` and `--prometheus-textfile FILE` on the
// commands that run the watch sampler (watch, baseline): every sample becomes metric families
// (watch/metrics), written in the text exposition format (report/prometheus), served at
// /metrics by a small HTTP server (sys/http_server) and, with a textfile, written atomically
// for node_exporter's textfile collector (sys/atomic_file). In `baseline` the loader stage's
// measured rates are exported too, when the stage ends. docs/watch.md "Prometheus".
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.hpp"
#include "sys/http_server.hpp"
#include "watch/metrics.hpp"
#include "watch/sample.hpp"

namespace gb::cli {

struct PrometheusOptions {
  std::string address;   // "127.0.0.1:9400"; "" = no server
  std::string textfile;  // "" = none
  bool enabled() const { return !address.empty() || !textfile.empty(); }
};

void add_prometheus_options(CLI::App& cmd, PrometheusOptions& options);

// Before anything runs: the address parses, the textfile's folder is writable. Throws
// gb::Error (usage).
void check_prometheus_options(const PrometheusOptions& options);

class PrometheusExport {
 public:
  // Starts the server (its address on stderr: port 0 picks one) and writes the textfile's
  // first state. Throws gb::Error (usage) when the address cannot be bound.
  PrometheusExport(const PrometheusOptions& options, int device);
  ~PrometheusExport();  // stops the server; the textfile keeps the last state
  PrometheusExport(const PrometheusExport&) = delete;
  PrometheusExport& operator=(const PrometheusExport&) = delete;

  // One interval (from the sampler's thread or watch's loop; safe from any thread).
  void add(const watch::WatchSample& sample);
  // A result as a suite reports it: the loader's images/s per path and worker count become
  // gpubase_loader_images_per_second; other results are not exported.
  void add_result(const Result& result);
  std::string text() const;
  const std::string& address() const;

 private:
  void publish();  // under mutex_

  PrometheusOptions options_;
  mutable std::mutex mutex_;
  watch::WatchMetrics metrics_;
  bool sampled_ = false;           // the watch families appear with the first sample
  MetricFamily loader_;
  std::string text_;
  bool textfile_failed_ = false;
  std::unique_ptr<sys::HttpServer> server_;
};

}  // namespace gb::cli
