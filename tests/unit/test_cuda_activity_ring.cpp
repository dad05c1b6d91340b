// The shared-memory ring between a job process and the watcher: bounded, wraps around, keeps
// what it holds for a reader that starts late, and survives its producer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cuda_activity/ring.hpp"

namespace ca = gb::cuda_activity;
namespace fs = std::filesystem;

namespace {

class RingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gb_ring_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ca::RingWriter writer(std::uint32_t pid, std::uint32_t slots) {
    std::string why;
    auto w = ca::RingWriter::create(dir_.string(), pid, pid, 0, slots, why);
    EXPECT_TRUE(w) << why;
    return std::move(*w);
  }
  ca::RingReader reader(std::uint32_t pid) {
    std::string why;
    auto r = ca::RingReader::open((dir_ / ca::ring_file_name(pid)).string(), why);
    EXPECT_TRUE(r) << why;
    return std::move(*r);
  }
  static ca::IntervalRecord record(std::uint64_t i) {
    ca::IntervalRecord r;
    r.pid = 42;
    r.t0_ns = i * 1000;
    r.t1_ns = (i + 1) * 1000;
    r.syncs = static_cast<std::uint32_t>(i);
    return r;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(RingTest, ReaderGetsEveryRecordInOrder) {
  auto w = writer(42, 8);
  auto r = reader(42);
  for (std::uint64_t i = 0; i < 5; ++i) w.write(record(i));
  const ca::RingRead got = r.read_new();
  ASSERT_EQ(got.records.size(), 5u);
  EXPECT_EQ(got.lost, 0u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(got.records[i].syncs, i);
  EXPECT_TRUE(r.read_new().records.empty()) << "a second read returns only new records";
  EXPECT_EQ(r.producer_pid(), 42u);
}

TEST_F(RingTest, WrapAroundCountsTheOverwrittenRecordsAsLost) {
  auto w = writer(42, 4);
  auto r = reader(42);
  for (std::uint64_t i = 0; i < 3; ++i) w.write(record(i));
  ASSERT_EQ(r.read_new().records.size(), 3u);
  for (std::uint64_t i = 3; i < 13; ++i) w.write(record(i));  // 10 more into 4 slots
  const ca::RingRead got = r.read_new();
  EXPECT_EQ(got.lost, 6u);
  ASSERT_EQ(got.records.size(), 4u);
  EXPECT_EQ(got.records.front().syncs, 9u);
  EXPECT_EQ(got.records.back().syncs, 12u);
}

TEST_F(RingTest, ALateReaderGetsWhatTheRingStillHolds) {
  auto w = writer(42, 4);
  for (std::uint64_t i = 0; i < 6; ++i) w.write(record(i));
  auto r = reader(42);  // opened after the writes
  const ca::RingRead got = r.read_new();
  EXPECT_EQ(got.lost, 2u);
  ASSERT_EQ(got.records.size(), 4u);
  EXPECT_EQ(got.records.front().syncs, 2u);
}

TEST_F(RingTest, TheFileSizeDoesNotGrowWithTheRecordsWritten) {
  auto w = writer(42, 4);
  const auto size = fs::file_size(dir_ / ca::ring_file_name(42));
  for (std::uint64_t i = 0; i < 1000; ++i) w.write(record(i));
  EXPECT_EQ(fs::file_size(dir_ / ca::ring_file_name(42)), size);
}

TEST_F(RingTest, RecordsOfADeadProducerAreStillRead) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string why;
    auto w = ca::RingWriter::create(dir_.string(), static_cast<std::uint32_t>(::getpid()),
                                    static_cast<std::uint32_t>(::getpid()),
                                    ca::process_start_ticks(static_cast<std::uint32_t>(::getpid())),
                                    8, why);
    if (!w) ::_exit(2);
    for (std::uint64_t i = 0; i < 3; ++i) w->write(record(i));
    ::_exit(0);  // dies without any goodbye
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto r = reader(static_cast<std::uint32_t>(child));
  EXPECT_FALSE(ca::producer_alive(r.producer_pid(), r.producer_start_ticks()));
  EXPECT_EQ(r.read_new().records.size(), 3u);
}

TEST_F(RingTest, AProducerIsAliveWhileItRuns) {
  const auto me = static_cast<std::uint32_t>(::getpid());
  EXPECT_TRUE(ca::producer_alive(me, ca::process_start_ticks(me)));
  EXPECT_FALSE(ca::producer_alive(me, ca::process_start_ticks(me) + 1))
      << "a reused pid (another start time) is not the producer";
}

TEST_F(RingTest, ASecondRingForTheSamePidIsRefused) {
  auto w = writer(42, 4);
  std::string why;
  EXPECT_FALSE(ca::RingWriter::create(dir_.string(), 42, 42, 0, 4, why));
  EXPECT_NE(why.find("cannot create"), std::string::npos) << why;
}

TEST_F(RingTest, AFileThatIsNotARingIsRefusedWithTheReason) {
  const fs::path p = dir_ / "cuda-7.ring";
  std::ofstream(p) << std::string(4096, 'x');
  std::string why;
  EXPECT_FALSE(ca::RingReader::open(p.string(), why));
  EXPECT_NE(why.find("not a gpubase CUDA-activity ring"), std::string::npos) << why;
  EXPECT_FALSE(ca::RingReader::open((dir_ / "missing.ring").string(), why));
}
