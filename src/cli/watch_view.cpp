// cli/watch_view.cpp: the terminal panel (DECSTBM scroll region, as apt's progress bar does)
// and the line view.
#include "cli/watch_view.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli/signals.hpp"
#include "core/error.hpp"
#include "watch/live_view.hpp"

namespace gb::cli {

namespace {

constexpr int kPanelLines = 4;
constexpr int kMinRowsForPanel = kPanelLines + 6;

bool terminal_size(int& rows, int& cols) {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return false;
  rows = ws.ws_row;
  cols = ws.ws_col;
  return true;
}

void write_all(const std::string& s) {
  // One write: the job writes to the same terminal, and a split panel update would interleave.
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

ViewMode parse_view_mode(const std::string& text) {
  if (text == "auto") return ViewMode::automatic;
  if (text == "panel") return ViewMode::panel;
  if (text == "line") return ViewMode::line;
  if (text == "none") return ViewMode::none;
  throw Error(ErrorKind::usage, "--view must be auto, panel, line or none (got '" + text + "')");
}

WatchView::WatchView(ViewMode mode, std::string title) : mode_(mode), title_(std::move(title)) {
  if (mode_ == ViewMode::automatic)
    mode_ = isatty(STDERR_FILENO) && std::getenv("TERM") &&
                    std::string(std::getenv("TERM")) != "dumb"
                ? ViewMode::panel
                : ViewMode::line;
  int rows = 0, cols = 0;
  if (mode_ == ViewMode::panel && (!terminal_size(rows, cols) || rows < kMinRowsForPanel))
    mode_ = ViewMode::line;
}

WatchView::~WatchView() { close(); }

void WatchView::setup_panel(int rows) {
  const int region_end = rows - kPanelLines;
  std::string s(kPanelLines, '\n');  // make room: scroll what is there up
  s += "\0337";                       // save cursor
  s += "\033[1;" + std::to_string(region_end) + "r";  // scroll region: all but the panel
  s += "\0338";
  s += "\033[" + std::to_string(kPanelLines) + "A";  // back up into the region
  write_all(s);
  panel_rows_ = rows;
}

void WatchView::teardown_panel() {
  if (panel_rows_ == 0) return;
  std::string s = "\0337\033[r\0338";  // full-height scrolling again
  s += "\033[" + std::to_string(panel_rows_ - kPanelLines + 1) + ";1H\033[J";  // clear panel
  write_all(s);
  panel_rows_ = 0;
}

void WatchView::show(const watch::WatchSample& s) {
  if (mode_ == ViewMode::none) return;
  if (mode_ == ViewMode::line) {
    write_all(watch::format_line(s) + "\n");
    return;
  }
  int rows = 0, cols = 0;
  if (!terminal_size(rows, cols) || rows < kMinRowsForPanel) {
    teardown_panel();
    write_all(watch::format_line(s) + "\n");
    return;
  }
  if (rows != panel_rows_) {
    teardown_panel();
    setup_panel(rows);
  }
  width_ = cols;
  watch::PanelContext ctx{title_, cols, s.t_s};
  const auto lines = watch::format_panel(s, ctx);
  std::string out = "\0337";
  for (int i = 0; i < kPanelLines; ++i) {
    out += "\033[" + std::to_string(rows - kPanelLines + 1 + i) + ";1H\033[2K";
    if (i < static_cast<int>(lines.size())) out += lines[static_cast<std::size_t>(i)];
  }
  out += "\0338";
  write_all(out);
}

void WatchView::note(const std::string& line) {
  if (mode_ == ViewMode::none) return;
  // Inside the scroll region the note scrolls like any output.
  write_all("gpubase: " + line + "\n");
}

void WatchView::close() {
  if (mode_ == ViewMode::panel) teardown_panel();
}

watch::WatchOutcome run_watch_with_view(
    const watch::WatchOptions& options, ViewMode mode, const std::string& title, bool quiet,
    const std::function<void(const watch::WatchSample&)>& on_sample) {
  WatchView view(mode, title);
  watch::WatchHooks hooks;
  hooks.on_started = [&](int pid) {
    if (!options.pid) set_signal_forward_pid(pid);  // an attached process is not ours to signal
  };
  hooks.on_sample = [&](const watch::WatchSample& s) {
    view.show(s);
    if (on_sample) on_sample(s);
  };
  hooks.on_progress = [&](const std::string& line) {
    if (!quiet) view.note(line);
  };
  watch::WatchOutcome outcome;
  try {
    outcome = watch::run_watch(options, hooks);
  } catch (...) {
    set_signal_forward_pid(0);
    view.close();
    throw;
  }
  set_signal_forward_pid(0);
  view.close();
  return outcome;
}

}  // namespace gb::cli
