// tests/gpu/test_nccl_p2p.cpp: the NCCL collectives' fill and check kernels against the CPU
// reference (gpu/collective_data.hpp), and the probe's p2p and nccl sections on this machine's
// first GPU alone: the one-GPU P2P diagonal (a device-local copy, measured and checked) and the
// one-rank all-reduce, all-gather and reduce-scatter (checked, busbw 0 by definition).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/probe.hpp"
#include "gpu/check.hpp"
#include "gpu/collective_check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nccl.hpp"

namespace gb {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

TEST(CollectiveKernels, FillMatchesTheCpuReference) {
  REQUIRE_GPU();
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{(1u << 21) + 7}}) {
    gpu::DeviceBuffer d(n * sizeof(float));
    gpu::fill_collective_input(d.as<float>(), n, 5, nullptr);
    std::vector<float> h(n);
    GB_CHECK_CUDA(cudaMemcpy(h.data(), d.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(h[i], gpu::collective_input(5, i)) << "n " << n << " element " << i;
  }
}

gpu::DeviceBuffer upload(const std::vector<float>& h) {
  gpu::DeviceBuffer d(h.size() * sizeof(float));
  GB_CHECK_CUDA(cudaMemcpy(d.data(), h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

// Rank `rank`'s right output, from the CPU reference.
std::vector<float> expected(gpu::CollectiveOp op, int rank, int ranks, std::uint64_t count) {
  std::vector<float> out(gpu::collective_output_elements(op, ranks, count));
  for (std::uint64_t j = 0; j < out.size(); ++j)
    out[j] = gpu::collective_expected(op, rank, ranks, count, j);
  return out;
}

TEST(CollectiveKernels, CheckAgreesWithTheCpuReference) {
  REQUIRE_GPU();
  const gpu::Stream s = gpu::Stream::create();
  for (const auto op : {gpu::CollectiveOp::all_reduce, gpu::CollectiveOp::all_gather,
                        gpu::CollectiveOp::reduce_scatter}) {
    std::vector<float> out = expected(op, 2, 4, 100003);
    ASSERT_EQ(gpu::check_collective_output(out, op, 2, 4, 100003), "");
    {
      const gpu::DeviceBuffer d = upload(out);
      EXPECT_EQ(gpu::check_collective_on_gpu(d.as<float>(), op, 2, 4, 100003, s.get()), "");
    }
    out[31337] += 2;
    out[99999] = -1000;
    const gpu::DeviceBuffer d = upload(out);
    const std::string gpu_says =
        gpu::check_collective_on_gpu(d.as<float>(), op, 2, 4, 100003, s.get());
    EXPECT_EQ(gpu_says, gpu::check_collective_output(out, op, 2, 4, 100003));
    EXPECT_NE(gpu_says.find("2 of "), std::string::npos) << gpu_says;
    EXPECT_NE(gpu_says.find("element 31337 is"), std::string::npos) << gpu_says;
  }
}

bench::ResultSink run_section(const std::string& section) {
  bench::ProbeOptions o;
  o.device = 0;
  o.quick = true;
  o.sections = {section};
  bench::ResultSink sink;
  bench::run_probe(o, sink);
  return sink;
}

TEST(ProbeP2p, OneGpuMeasuresTheDiagonalOnly) {
  REQUIRE_GPU();
  bench::ResultSink sink = run_section("p2p");
  const Result* uni = find_result(sink.results(), "probe.p2p.gpu0.unidir_gbps");
  ASSERT_NE(uni, nullptr);
  ASSERT_TRUE(uni->value) << uni->reason;
  EXPECT_GT(*uni->value, 50.0);  // a device-local copy, far above any PCIe link
  EXPECT_EQ(uni->text_param("link"), "device-local copy (no link)");
  EXPECT_EQ(uni->find_reference("datasheet"), nullptr);
  EXPECT_EQ(find_result(sink.results(), "probe.p2p.gpu0.bidir_gbps"), nullptr);
  const Result* lat = find_result(sink.results(), "probe.p2p.gpu0.latency_us");
  ASSERT_NE(lat, nullptr);
  ASSERT_TRUE(lat->value);
  EXPECT_GT(*lat->value, 0.0);
  EXPECT_LT(*lat->value, 1000.0);
}

TEST(ProbeNccl, OneRankCollectivesAreCheckedAndHaveBusbwZero) {
  REQUIRE_GPU();
  std::string why;
  if (!gpu::NcclLibrary::load(gpu::default_nccl_library_names(), why))
    GTEST_SKIP() << "no NCCL here: " << why;
  bench::ResultSink sink = run_section("nccl");
  for (const char* c : {"allreduce", "allgather", "reducescatter"}) {
    const std::string base = std::string("probe.nccl.") + c;
    const Result* bus = find_result(sink.results(), base + ".busbw_gbps");
    ASSERT_NE(bus, nullptr) << base;
    ASSERT_TRUE(bus->value) << bus->reason;
    EXPECT_EQ(*bus->value, 0.0);
    EXPECT_EQ(bus->text_param("check"), "every element of every rank's output exact");
    const Result* alg = find_result(sink.results(), base + ".algbw_gbps");
    ASSERT_NE(alg, nullptr);
    ASSERT_TRUE(alg->value);
    EXPECT_GT(*alg->value, 10.0) << base;  // 128 MiB through HBM
    for (const Result& r : sink.results()) EXPECT_NE(r.status, Status::fail) << r.key << r.reason;
  }
  EXPECT_NE(find_result(sink.results(), "probe.nccl.allreduce.8B.busbw_gbps"), nullptr);
}

}  // namespace
}  // namespace gb
