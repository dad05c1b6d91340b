// tests/unit/test_diagnose_watch_cuda.cpp: the watch rules that read inside the job -- the
// CUDA-activity library's figures (watch.cuda.*) and the job's thread states (watch.job.io_wait,
// runnable processes) -- on hand-built runs of a 16-core H200 host. Two of them are the jobs
// the outside-only rules called "GPU waits, host idle": a process reading its samples
// synchronously from disk, and a DataLoader with three times more workers than cores.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "diagnose/diagnose.hpp"

namespace {

void set(gb::Run& run, const std::string& key, double value) {
  for (gb::Result& r : run.results)
    if (r.key == key) {
      auto params = std::move(r.params);
      r = gb::Result::measured(key, key, "", {value});
      r.params = std::move(params);
      return;
    }
  run.results.push_back(gb::Result::measured(key, key, "", {value}));
}

void param(gb::Run& run, const std::string& key, const std::string& name,
           const std::string& value) {
  for (gb::Result& r : run.results)
    if (r.key == key) r.param(name, value);
}

// GPU busy 30 % by NVML; nothing saturated on the host as the outside sees it.
gb::Run waiting_job() {
  gb::Run run;
  run.command = "watch";
  run.duration_s = 300;
  for (const auto& [k, v] : std::vector<std::pair<std::string, double>>{
           {"watch.gpu.util.pct", 30},
           {"watch.gpu.sm_active.pct", 25},
           {"watch.host.cores", 16},
           {"watch.cpu.mean_core.pct", 12},
           {"watch.cpu.busiest_core.pct", 45},
           {"watch.cpu.iowait.pct", 4},
           {"watch.cpu.steal.pct", 0},
           {"watch.cpu.run_queue", 3},
           {"watch.job.cpu.pct", 150},
           {"watch.job.processes", 5},
           {"watch.job.active_processes", 3},
           {"watch.job.saturated_processes", 0},
           {"watch.job.busiest_process.cpu.pct", 40},
           {"watch.job.involuntary_cs_per_process.per_s", 5},
           {"watch.mem.available.pct", 60},
           {"watch.disk.util.pct", 20},
           {"watch.samples", 300},
           {"watch.interval.s", 1},
       })
    set(run, k, v);
  param(run, "watch.disk.util.pct", "device", "nvme0n1");
  return run;
}

// The CUDA-activity figures of a job whose GPU idles 31 % of the time.
void add_cuda(gb::Run& run, double data_wait, double idle_host, double idle_sync) {
  set(run, "watch.cuda.busy.pct", 69);
  set(run, "watch.cuda.idle.pct", 31);
  set(run, "watch.cuda.data_wait.pct", data_wait);
  set(run, "watch.cuda.idle.host.pct", idle_host);
  set(run, "watch.cuda.idle.sync.pct", idle_sync);
  set(run, "watch.cuda.kernels.per_s", 9000);
  set(run, "watch.cuda.kernel.median.us", 40);
  set(run, "watch.cuda.tiny_kernels.pct", 20);
  set(run, "watch.cuda.tiny_kernel_time.pct", 2);
  set(run, "watch.cuda.syncs.per_s", 0.2);
}

const gb::Finding* find(const std::vector<gb::Finding>& fs, const std::string& id) {
  for (const gb::Finding& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(DiagnoseWatchCuda, SynchronousDiskReadsAreStorageBoundNotHostIdle) {
  gb::Run run = waiting_job();
  set(run, "watch.disk.util.pct", 80);
  set(run, "watch.job.io_wait.pct", 85);
  param(run, "watch.job.io_wait.pct", "pid", "4242");
  param(run, "watch.job.io_wait.pct", "comm", "python3");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "storage_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "GPU busy 30 % while job process (python3, pid 4242) is in disk wait 85 % of the "
            "time and nvme0n1 is 80 % busy (machine iowait only 4 %: one process waits, the "
            "other cores do not)");
  EXPECT_EQ(find(findings, "launch_bound"), nullptr) << "not 'host idle'";
}

TEST(DiagnoseWatchCuda, AProcessInDiskWaitOnAnIdleDiskIsNotStorageBound) {
  gb::Run run = waiting_job();
  set(run, "watch.disk.util.pct", 20);
  set(run, "watch.job.io_wait.pct", 85);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "storage_bound"), nullptr);
}

TEST(DiagnoseWatchCuda, OneReaderOnAFastDiskIsStorageBoundForItsShareOfTheTime) {
  // A process reads its samples block by block from a disk that answers in 31 µs: it waits on
  // the disk a third of the time, which keeps the disk about as busy, and reads all its bytes.
  gb::Run run = waiting_job();
  set(run, "watch.disk.util.pct", 40);
  set(run, "watch.disk.read.mbps", 53);
  set(run, "watch.job.disk_read.mbps", 53);
  set(run, "watch.job.io_wait.pct", 34);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "storage_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->evidence, "is in disk wait 34 % of the time and nvme0n1 is 40 % busy"))
      << f->evidence;
  set(run, "watch.disk.util.pct", 20);  // far less busy than the process waits: not its disk
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "storage_bound"), nullptr);
}

TEST(DiagnoseWatchCuda, ManyMoreWorkersThanCoresAreInputBoundNotHostIdle) {
  gb::Run run = waiting_job();
  set(run, "watch.gpu.util.pct", 9);
  set(run, "watch.job.processes", 49);
  set(run, "watch.job.active_processes", 12);
  set(run, "watch.cpu.mean_core.pct", 30);
  set(run, "watch.cpu.busiest_core.pct", 44);
  set(run, "watch.job.runnable_processes", 6.5);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "workers_oversubscribed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->evidence,
            "48 loader processes on 16 cores while the GPU is busy 9 %; 6.5 job processes "
            "runnable on average, all cores 30 % busy (busiest 44 %)");
  EXPECT_TRUE(contains(f->advice, "about 8 workers")) << f->advice;
  EXPECT_EQ(find(findings, "launch_bound"), nullptr);
}

TEST(DiagnoseWatchCuda, ManyWorkersWithoutADataWaitAreNotBlamed) {
  gb::Run run = waiting_job();
  set(run, "watch.job.processes", 49);
  add_cuda(run, 2, 25, 4);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "workers_oversubscribed"), nullptr);
}

TEST(DiagnoseWatchCuda, TheGpuWaitingForBatchesIsInputWaitWithItsShare) {
  gb::Run run = waiting_job();
  add_cuda(run, 27, 3, 1);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "input_wait");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->evidence,
            "GPU idle 31 % of the time, 27 points of it waiting for the next batch (the "
            "training thread blocked while the loader workers worked)");
  EXPECT_EQ(find(findings, "launch_bound"), nullptr);
  EXPECT_EQ(find(findings, "host_sync"), nullptr) << "the data wait is the bigger cause";
}

TEST(DiagnoseWatchCuda, InputWaitWarnsFromTenPointsAndIsSilentBelow) {
  gb::Run run = waiting_job();
  add_cuda(run, 12, 3, 1);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "input_wait");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  set(run, "watch.cuda.data_wait.pct", 9.9);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "input_wait"), nullptr);
}

TEST(DiagnoseWatchCuda, PageableCopiesNameTheShareAndBothSpeeds) {
  gb::Run run = waiting_job();
  add_cuda(run, 12, 3, 1);
  set(run, "watch.cuda.h2d.pageable.share.pct", 38);
  set(run, "watch.cuda.h2d.pageable.gb", 12);
  set(run, "watch.cuda.h2d.pageable.gbps", 9);
  set(run, "watch.cuda.h2d.pinned.gbps", 52);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "pageable_copies");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "38 % of the host-to-GPU bytes (12 GB) came from pageable memory: those copies ran "
            "at 9 GB/s against 52 GB/s for pinned ones");
  EXPECT_TRUE(contains(f->advice, "pin_memory=True")) << f->advice;
}

TEST(DiagnoseWatchCuda, FewPageableBytesAreNotAFinding) {
  gb::Run run = waiting_job();
  set(run, "watch.cuda.h2d.pageable.share.pct", 90);
  set(run, "watch.cuda.h2d.pageable.gb", 0.001);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "pageable_copies"), nullptr);
}

TEST(DiagnoseWatchCuda, AHostSyncEveryStepIsNamedWithItsCost) {
  gb::Run run = waiting_job();
  add_cuda(run, 0, 25, 5);
  set(run, "watch.cuda.syncs.per_s", 20);
  set(run, "watch.cuda.idle_gap.step.ms", 2.1);
  param(run, "watch.cuda.idle_gap.step.ms", "long gaps per second", "20.3");
  set(run, "watch.cuda.d2h.copies.per_s", 20);
  param(run, "watch.cuda.d2h.copies.per_s", "mean size", "4 bytes");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "host_sync");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "20 host syncs per second (about one per step), 20 GPU-to-host copies/s of 4 bytes "
            "on average; after each the GPU idles about 2.1 ms; GPU idle 30 % of the time "
            "while the host synced or relaunched work");
  EXPECT_TRUE(contains(f->advice, ".item()")) << f->advice;
  EXPECT_EQ(find(findings, "launch_bound"), nullptr);
}

TEST(DiagnoseWatchCuda, SyncsThatNeitherReadBackNorWaitAreNotAFinding) {
  // A host-bound job with a pinned-memory allocator's event syncs: 68 a second, 0.18 ms each,
  // no GPU-to-host copy (a DataLoader job measured under watch).
  gb::Run run = waiting_job();
  add_cuda(run, 0, 42, 0);
  set(run, "watch.cuda.syncs.per_s", 68);
  set(run, "watch.cuda.sync.blocked.pct", 1.2);
  set(run, "watch.cuda.d2h.copies.per_s", 0);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "host_sync"), nullptr);
  set(run, "watch.cuda.sync.blocked.pct", 6.2);  // a tenth of the time or more counts
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "host_sync"), nullptr);
  // The same syncs holding the host 30 % of the time: worth naming without a read-back, with
  // advice that does not blame a .item() the job does not have.
  set(run, "watch.cuda.sync.blocked.pct", 30);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "host_sync");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->advice, "waits in synchronizations 30 % of the time")) << f->advice;
  EXPECT_FALSE(contains(f->advice, ".item()")) << f->advice;
}

TEST(DiagnoseWatchCuda, TinyKernelsAreLaunchBoundWithTheirShareOfGpuTime) {
  gb::Run run = waiting_job();
  add_cuda(run, 0, 28, 0);
  set(run, "watch.cuda.tiny_kernels.pct", 85);
  set(run, "watch.cuda.tiny_kernel_time.pct", 62);
  set(run, "watch.cuda.kernels.per_s", 90000);
  set(run, "watch.cuda.kernel.median.us", 4.2);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "tiny_kernels");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "62 % of GPU kernel time in kernels under 10 µs (85 % of the kernels, 90k kernels/s, "
            "median 4.2 µs); GPU idle 28 % of the time while the launching thread ran");
  EXPECT_TRUE(contains(f->advice, "CUDA graph")) << f->advice;
}

TEST(DiagnoseWatchCuda, WithoutTheLibraryTheOutsideRulesStillSpeak) {
  gb::Run run = waiting_job();
  run.results.push_back(gb::Result::skipped("watch.cuda.busy.pct", "GPU busy", "%",
                                            "turned off (--no-cuda-activity)"));
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_NE(find(findings, "launch_bound"), nullptr);
  for (const char* id : {"input_wait", "host_sync", "tiny_kernels", "pageable_copies"})
    EXPECT_EQ(find(findings, id), nullptr) << id;
}

TEST(DiagnoseWatchCuda, TheGpuRowOfTheChecklistNamesTheDataWait) {
  gb::Run run = waiting_job();
  add_cuda(run, 27, 3, 1);
  run.findings = gb::diagnose::diagnose_watch(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* gpu = nullptr;
  for (const auto& r : rows)
    if (r.id == "gpu_util") gpu = &r;
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(contains(gpu->evidence, "cause: input-bound: the GPU waits for the next batch"))
      << gpu->evidence;
}

TEST(DiagnoseWatchCuda, TheDataLoadingRowIsTheWatchedJobsDataWait) {
  gb::Run run = waiting_job();
  add_cuda(run, 27, 3, 1);
  run.findings = gb::diagnose::diagnose_watch(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* data = nullptr;
  for (const auto& r : rows)
    if (r.id == "data_loading") data = &r;
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->status, gb::Status::fail);
  EXPECT_TRUE(contains(data->evidence, "watch.cuda.data_wait.pct")) << data->evidence;
}

TEST(DiagnoseWatchCuda, AJobWhoseKernelsRanIsNeverCalledNotUsingTheGpu) {
  // The 12-s H200 run: NVML saw the GPU 0.04 % busy, but the library saw its kernels.
  gb::Run run = waiting_job();
  set(run, "watch.gpu.util.pct", 0.04);
  set(run, "watch.gpu.job.sm.pct", 0.08);
  add_cuda(run, 5, 5, 0);
  set(run, "watch.cuda.busy.pct", 0.15);
  set(run, "watch.cuda.kernels.count", 76);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "job_not_using_gpu"), nullptr);
}

TEST(DiagnoseWatchCuda, NoKernelsAndAnIdleGpuIsStillNotUsingTheGpu) {
  gb::Run run = waiting_job();
  set(run, "watch.gpu.util.pct", 0.04);
  set(run, "watch.gpu.job.sm.pct", 0.08);
  set(run, "watch.cuda.kernels.count", 0);
  const auto findings = gb::diagnose::diagnose_watch(run);
  ASSERT_NE(find(findings, "job_not_using_gpu"), nullptr);
}

TEST(DiagnoseWatchCuda, MoreRunnableWorkersThanCoresAreOversubscribedBelowTwicePerCore) {
  // 24 workers on 16 cores (under 2 per core), but 19 of the job's processes runnable at once.
  gb::Run run = waiting_job();
  set(run, "watch.gpu.util.pct", 16);
  set(run, "watch.job.processes", 25);
  set(run, "watch.job.runnable_processes", 19);
  set(run, "watch.cpu.mean_core.pct", 88);
  set(run, "watch.cpu.busiest_core.pct", 90);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "workers_oversubscribed");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->evidence,
                       "19 job processes runnable on average (more than the 16 "
                       "cores)"))
      << f->evidence;
}

TEST(DiagnoseWatchCuda, MoreWorkersThanCoresThatAreNotRunnableAreNotOversubscribed) {
  gb::Run run = waiting_job();
  set(run, "watch.gpu.util.pct", 16);
  set(run, "watch.job.processes", 25);
  set(run, "watch.job.runnable_processes", 4);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "workers_oversubscribed"), nullptr);
}

TEST(DiagnoseWatchCuda, StorageBoundNamesTheJobsShareOfTheDisksBusyTime) {
  gb::Run run = waiting_job();
  set(run, "watch.disk.util.pct", 80);
  set(run, "watch.disk.read.mbps", 560);
  set(run, "watch.job.disk_read.mbps", 532);
  set(run, "watch.job.io_wait.pct", 70);
  param(run, "watch.job.io_wait.pct", "comm", "python3");
  const std::vector<gb::Finding> findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "storage_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->evidence,
                       "nvme0n1 is 80 % busy, about 76 % of it for the job's own "
                       "reads (532 MB/s, 95 % of the bytes read)"))
      << f->evidence;
}

TEST(DiagnoseWatchCuda, ADiskBusyForSomeoneElseDoesNotMakeTheJobStorageBound) {
  // The job's process waits on disk, but a neighbour reads 90 % of the bytes.
  gb::Run run = waiting_job();
  set(run, "watch.disk.util.pct", 80);
  set(run, "watch.disk.read.mbps", 500);
  set(run, "watch.job.disk_read.mbps", 50);
  set(run, "watch.job.io_wait.pct", 70);
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "storage_bound"), nullptr);
}
