// cli/watch_view.hpp: shows `gpubase watch` while it runs, on stderr. On a terminal: a panel
// pinned to the bottom rows (a scroll region keeps the job's own output scrolling above it);
// into a pipe or file: one line per interval; or nothing.
#pragma once
#include <functional>
#include <string>

#include "watch/sample.hpp"
#include "watch/watch.hpp"

namespace gb::cli {

enum class ViewMode { automatic, panel, line, none };

// "auto", "panel", "line", "none"; throws gb::Error(usage) for anything else.
ViewMode parse_view_mode(const std::string& text);

class WatchView {
 public:
  WatchView(ViewMode mode, std::string title);
  ~WatchView();  // gives the terminal its full height back
  WatchView(const WatchView&) = delete;
  WatchView& operator=(const WatchView&) = delete;

  void show(const watch::WatchSample& s);
  void note(const std::string& line);  // a progress note that must not break the panel
  void close();

 private:
  void setup_panel(int rows);
  void teardown_panel();

  ViewMode mode_;
  std::string title_;
  int panel_rows_ = 0;  // terminal height the scroll region was set for; 0 = none
  int width_ = 100;
};

// Runs the watch of `options` with this view on stderr (progress notes inside it unless `quiet`);
// a job started here gets our Ctrl-C forwarded, an attached process does not. The view is
// closed and the forwarding ended however the watch ends. `on_sample`, when given, sees every
// sample after the view (the Prometheus export).
watch::WatchOutcome run_watch_with_view(
    const watch::WatchOptions& options, ViewMode mode, const std::string& title, bool quiet,
    const std::function<void(const watch::WatchSample&)>& on_sample = {});

}  // namespace gb::cli
