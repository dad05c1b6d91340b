// cli/prometheus_export.cpp: see prometheus_export.hpp.
#include "cli/prometheus_export.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "report/prometheus.hpp"
#include "sys/atomic_file.hpp"

namespace gb::cli {

void add_prometheus_options(CLI::App& cmd, PrometheusOptions& options) {
  cmd.add_option("--prometheus", options.address,
                 "serve the live figures at http://ADDR:PORT/metrics (Prometheus text format) "
                 "while sampling; port 0 picks a free port, printed on stderr")
      ->option_text("ADDR:PORT");
  cmd.add_option("--prometheus-textfile", options.textfile,
                 "write the live figures to FILE at every sample, atomically, for "
                 "node_exporter's textfile collector (FILE ending in .prom)")
      ->option_text("FILE");
}

void check_prometheus_options(const PrometheusOptions& options) {
  if (!options.address.empty()) (void)sys::parse_listen_address(options.address);
  if (!options.textfile.empty()) sys::check_file_writable(options.textfile, "--prometheus-textfile");
}

PrometheusExport::PrometheusExport(const PrometheusOptions& options, int device)
    : options_(options),
      metrics_(watch::gpu_metric_labels(device)),
      loader_{"gpubase_loader_images_per_second",
              "Images per second the input pipeline delivered (median of its batches), by decode "
              "path and CPU worker count, as each is measured.",
              MetricType::gauge,
              {}} {
  {
    std::lock_guard lock(mutex_);
    publish();
  }
  if (!options_.address.empty()) {
    server_ = std::make_unique<sys::HttpServer>(
        sys::parse_listen_address(options_.address), [this](const sys::HttpRequest& r) {
          if (r.path != "/metrics") return sys::not_found(r);
          return sys::HttpResponse{200, std::string(report::kPrometheusContentType), text()};
        });
    std::fprintf(stderr, "gpubase: Prometheus metrics at http://%s/metrics\n",
                 server_->address().c_str());
    std::fflush(stderr);
  }
}

PrometheusExport::~PrometheusExport() {
  if (server_) server_->stop();
}

void PrometheusExport::add(const watch::WatchSample& sample) {
  std::lock_guard lock(mutex_);
  metrics_.add(sample);
  sampled_ = true;
  publish();
}

void PrometheusExport::add_result(const Result& r) {
  // loader.cpu.w<N>.images_per_s, loader.gpu_decode.images_per_s, loader.split.images_per_s
  if (!r.value || r.key.size() <= 20 || !r.key.starts_with("loader.") ||
      !r.key.ends_with(".images_per_s"))
    return;
  const std::string middle = r.key.substr(7, r.key.size() - 7 - 13);
  MetricSample m;
  if (middle.starts_with("cpu.w") && middle.size() > 5 &&
      middle.find_first_not_of("0123456789", 5) == std::string::npos)
    m.labels = {{"path", "cpu"}, {"workers", middle.substr(5)}};
  else if (middle == "gpu_decode")
    m.labels = {{"path", "gpu"}};
  else if (middle == "split")
    m.labels = {{"path", "split"}};
  else
    return;
  m.value = *r.value;
  std::lock_guard lock(mutex_);
  std::erase_if(loader_.samples, [&](const MetricSample& s) { return s.labels == m.labels; });
  loader_.samples.push_back(std::move(m));
  publish();
}

std::string PrometheusExport::text() const {
  std::lock_guard lock(mutex_);
  return text_;
}

const std::string& PrometheusExport::address() const {
  static const std::string none;
  return server_ ? server_->address() : none;
}

void PrometheusExport::publish() {
  std::vector<MetricFamily> families;
  if (sampled_) families = metrics_.families();
  families.push_back(loader_);
  text_ = report::format_prometheus(families);
  if (options_.textfile.empty() || textfile_failed_) return;
  try {
    sys::write_file_atomically(options_.textfile, text_);
  } catch (const Error& e) {
    // The watch goes on; the file is reported once, not at every sample.
    textfile_failed_ = true;
    std::fprintf(stderr, "gpubase: --prometheus-textfile: %s; not written again\n", e.what());
  }
}

}  // namespace gb::cli
