// tests/unit/test_diagnose_corpus.cpp: the watch rules on runs measured on GPU hosts. Each file
// under bench/results/*-corpus-* is `gpubase watch` of one job of bench/cuda_jobs.py (the
// corpus of bench/cupti_check.sh, as recorded there); its findings are derived again here from
// its results, so a change to a rule shows at once what it does to real jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "diagnose/diagnose.hpp"

namespace {

struct Case {
  const char* file;
  std::vector<std::string> any_of;  // the finding the job must get (one of these)
  std::vector<std::string> never;   // findings that would be wrong for it
};

std::vector<std::string> ids_of(const std::vector<gb::Finding>& fs) {
  std::vector<std::string> ids;
  for (const gb::Finding& f : fs) ids.push_back(f.id);
  return ids;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// What each measured job must get. Syncs the framework makes without reading a value back (a
// pinned-memory allocator's event waits) are not host_sync; a training loop that holds the GPU
// to half its time is main_process_bound, not gpu_bound.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"h100-corpus-v2-starved_worker.json", {"input_wait"}, {"host_sync"}},
      {"h100-corpus-v2-small_batch.json",
       {"tiny_kernels", "main_process_bound", "launch_bound", "host_sync"},
       {}},
      {"h100-corpus-v2-many_workers.json",
       {"workers_oversubscribed", "input_wait"},
       {"host_sync", "gpu_bound"}},
      {"h100-corpus-v2-pageable.json", {"pageable_copies"}, {"host_sync"}},
      {"h100-corpus-v2-host_sync.json", {"host_sync"}, {}},
      {"h100-corpus-v2-tiny_kernels.json", {"tiny_kernels"}, {"host_sync"}},
      {"h100-corpus-v2-well_fed.json", {"main_process_bound"}, {"host_sync", "gpu_bound"}},
      {"h100-corpus-v3-sync_disk.json", {"storage_bound"}, {"host_sync"}},
      {"h100-corpus-v3-gpu_shared.json", {"gpu_shared"}, {}},
      {"h200-corpus-v3-sync_disk.json", {"storage_bound"}, {"host_sync"}},
      {"h200-corpus-v3-well_fed.json", {"main_process_bound"}, {"host_sync", "gpu_bound"}},
      // All nine in one run (H100): well_fed GPU-bound on this host.
      {"h100-corpus-v4-well_fed.json", {"gpu_bound"}, {"host_sync", "main_process_bound"}},
      {"h100-corpus-v4-starved_worker.json", {"input_wait"}, {"host_sync"}},
      {"h100-corpus-v4-small_batch.json",
       {"tiny_kernels", "main_process_bound", "launch_bound", "host_sync"},
       {}},
      {"h100-corpus-v4-sync_disk.json", {"storage_bound"}, {"host_sync"}},
      {"h100-corpus-v4-many_workers.json", {"workers_oversubscribed", "input_wait"}, {"host_sync"}},
      {"h100-corpus-v4-pageable.json", {"pageable_copies"}, {"host_sync"}},
      {"h100-corpus-v4-host_sync.json", {"host_sync"}, {}},
      {"h100-corpus-v4-tiny_kernels.json", {"tiny_kernels"}, {"host_sync"}},
      {"h100-corpus-v4-gpu_shared.json", {"gpu_shared"}, {}},
  };
  return c;
}

const std::filesystem::path kResults =
    std::filesystem::path(GPUBASE_FIXTURES_DIR) / ".." / ".." / "bench" / "results";

TEST(DiagnoseCorpus, EachMeasuredJobGetsItsFinding) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    const gb::Run run = gb::cli::load_run(kResults / c.file);
    const auto ids = ids_of(gb::diagnose::diagnose_watch(run));
    const bool hit = std::any_of(c.any_of.begin(), c.any_of.end(),
                                 [&](const std::string& id) { return has(ids, id); });
    EXPECT_TRUE(hit) << "wanted one of: " << joined(c.any_of) << "; got: " << joined(ids);
    for (const std::string& wrong : c.never)
      EXPECT_FALSE(has(ids, wrong)) << wrong << " in: " << joined(ids);
  }
}

TEST(DiagnoseCorpus, EveryCorpusRunInResultsHasItsCase) {
  std::vector<std::string> listed;
  for (const Case& c : cases()) listed.push_back(c.file);
  for (const auto& e : std::filesystem::directory_iterator(kResults)) {
    const std::string name = e.path().filename().string();
    if (name.find("-corpus-") == std::string::npos || e.path().extension() != ".json") continue;
    EXPECT_TRUE(has(listed, name)) << name << " has no expected finding here";
  }
}

}  // namespace
