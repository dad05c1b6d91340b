// tests/gpu/test_nn_optim.cpp: the step's own kernels against the CPU reference: softmax
// cross-entropy (mean loss, dlogits, loss scale) and top-1 counting; the fused SGD kernel over a
// parameter store holding FP16/BF16-copied and FP32-only parameters (nnref::sgd_step, several
// steps, with a loss scale to undo and a skipped step); the loss scaler's update kernel against
// nnref::update_scale over a sequence with inf/NaN steps and growth; the inf/NaN detector.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "nn/loss.hpp"
#include "nn/scaler.hpp"
#include "nn/sgd.hpp"
#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

template <typename T>
T read_back(const T* device) {
  T v;
  GB_CHECK_CUDA(cudaMemcpy(&v, device, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

template <typename T>
void write(T* device, const T& v) {
  GB_CHECK_CUDA(cudaMemcpy(device, &v, sizeof v, cudaMemcpyHostToDevice));
}

TEST(NnLoss, SoftmaxCrossEntropyMatchesReference) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(31);
  struct Case {
    int rows, classes;
    Precision p;
    float scale;
  };
  const Case cases[] = {{7, 13, Precision::fp32, 1.f},     {64, 1000, Precision::fp32, 1.f},
                        {45, 10, Precision::fp32, 1.f},    {32, 1000, Precision::fp16, 1024.f},
                        {16, 100, Precision::bf16, 1.f}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.classes) + " " +
                 std::string(to_string(c.p)));
    const ElementType t = testing::dtype_of(c.p);
    nnref::Tensor logits = testing::random_tensor(c.rows, c.classes, 1, 1, gen, -4.f, 4.f);
    testing::round_all(logits.v, t);
    std::vector<int> labels(static_cast<std::size_t>(c.rows));
    std::vector<std::int32_t> labels32(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i)
      labels32[i] = labels[i] = static_cast<int>(gen() % static_cast<unsigned>(c.classes));
    nnref::Tensor want_d;
    const float want_loss = nnref::softmax_cross_entropy(logits, labels, &want_d);
    const std::size_t want_correct = nnref::count_correct(logits, labels);

    const Shape s{c.rows, c.classes, 1, 1};
    gpu::DeviceBuffer d_logits(s.elements() * element_bytes(t)), d_grad(d_logits.bytes());
    gpu::DeviceBuffer d_labels(labels32.size() * 4), d_scale(4), d_record(sizeof(StepRecord)),
        d_correct(4);
    upload_nchw(TensorRef{d_logits.data(), s, t, false}, logits.v);
    GB_CHECK_CUDA(cudaMemcpy(d_labels.data(), labels32.data(), d_labels.bytes(),
                             cudaMemcpyHostToDevice));
    write(d_scale.as<float>(), c.scale);
    softmax_cross_entropy(d_logits.data(), d_labels.as<std::int32_t>(), d_grad.data(), c.rows,
                          c.classes, t, c.scale != 1.f ? d_scale.as<float>() : nullptr,
                          d_record.as<StepRecord>(), nullptr);
    count_correct(d_logits.data(), d_labels.as<std::int32_t>(), c.rows, c.classes, t,
                  d_correct.as<std::uint32_t>(), nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
    const StepRecord r = read_back(d_record.as<StepRecord>());
    EXPECT_NEAR(r.loss, want_loss, 1e-5 * std::fabs(want_loss) + 1e-6);
    EXPECT_EQ(r.scale, c.scale);
    std::vector<float> got = download_nchw(TensorRef{d_grad.data(), s, t, false});
    for (float& v : got) v /= c.scale;
    const double tol = c.p == Precision::fp32 ? 1e-5 : testing::layer_tolerance(c.p);
    EXPECT_LE(testing::rel_error(got, want_d.v), tol) << "dlogits";
    EXPECT_EQ(read_back(d_correct.as<std::uint32_t>()), want_correct);
  }
}

// A store with one reduced-precision parameter and one FP32-only parameter, both with sizes
// that are not multiples of the 64-element alignment.
struct SgdFixture {
  explicit SgdFixture(ElementType lp) : store(lp) {
    a = store.add("a.weight", Shape{5, 3, 3, 3}, true, false, Init::constant(0.f));
    b = store.add("b.weight", Shape{37, 1, 1, 1}, false, false, Init::constant(0.f));
    store.plan();
    store.allocate();
  }
  ParamStore store;
  int a = 0, b = 0;
};

void check_sgd(ElementType lp, float scale) {
  SCOPED_TRACE(std::string(dtype_name(lp)) + " scale " + std::to_string(scale));
  std::mt19937 gen(41);
  SgdFixture f(lp);
  const float lr = 0.1f, momentum = 0.9f, wd = 1e-4f;
  gpu::DeviceBuffer hyper(sizeof(SgdHyper)), scaler(sizeof(ScalerState));
  write(hyper.as<SgdHyper>(), SgdHyper{lr, momentum, wd});
  ScalerState st;
  st.scale = scale;
  write(scaler.as<ScalerState>(), st);

  std::vector<float> wa = testing::random_vector(f.store.info(f.a).shape.elements(), gen);
  std::vector<float> wb = testing::random_vector(f.store.info(f.b).shape.elements(), gen);
  f.store.set_master(f.a, wa);
  f.store.set_master(f.b, wb);
  std::vector<float> ma, mb;  // reference momentum (created by nnref on the first step)
  const bool reduced = lp != ElementType::f32;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> ga = testing::random_vector(wa.size(), gen);
    std::vector<float> gb = testing::random_vector(wb.size(), gen);
    // The device sees scale * g in its gradient type; the reference gets what the kernel will
    // recover after unscaling.
    std::vector<float> sa(ga.size()), sb(gb.size());
    for (std::size_t i = 0; i < ga.size(); ++i) {
      sa[i] = round_to(f.store.compute_dtype(f.a), ga[i] * scale);
      ga[i] = sa[i] * (1.f / scale);
    }
    for (std::size_t i = 0; i < gb.size(); ++i) {
      sb[i] = gb[i] * scale;
      gb[i] = sb[i] * (1.f / scale);
    }
    f.store.set_grad(f.a, sa);
    f.store.set_grad(f.b, sb);
    sgd_step(f.store.sgd_buffers(), hyper.as<SgdHyper>(), scale != 1.f ? scaler.as<ScalerState>() : nullptr,
             nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
    nnref::sgd_step(wa, ga, ma, lr, momentum, wd);
    nnref::sgd_step(wb, gb, mb, lr, momentum, wd);
    EXPECT_LE(testing::rel_error(f.store.get_master(f.a), wa), 1e-6) << "step " << step;
    EXPECT_LE(testing::rel_error(f.store.get_master(f.b), wb), 1e-6) << "step " << step;
    if (reduced) {  // the compute copy is the master rounded to the reduced type
      std::vector<unsigned char> bytes(wa.size() * 2);
      GB_CHECK_CUDA(cudaMemcpy(bytes.data(), f.store.weight(f.a), bytes.size(),
                               cudaMemcpyDeviceToHost));
      const std::vector<float> copy =
          unpack_host(bytes.data(), Shape{1, static_cast<int>(wa.size()), 1, 1}, false, lp);
      std::vector<float> want = f.store.get_master(f.a);
      testing::round_all(want, lp);
      EXPECT_EQ(copy, want) << "reduced copy, step " << step;
    }
  }
  if (scale != 1.f) {  // a step with found_inf set changes nothing
    st.found_inf = 1;
    write(scaler.as<ScalerState>(), st);
    f.store.set_grad(f.a, std::vector<float>(wa.size(), std::numeric_limits<float>::infinity()));
    sgd_step(f.store.sgd_buffers(), hyper.as<SgdHyper>(), scaler.as<ScalerState>(), nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_LE(testing::rel_error(f.store.get_master(f.a), wa), 1e-6) << "skipped step";
    EXPECT_LE(testing::rel_error(f.store.get_master(f.b), wb), 1e-6) << "skipped step";
  }
}

TEST(NnSgd, FusedKernelMatchesReferenceFp32) {
  GB_NN_REQUIRE_GPU();
  check_sgd(ElementType::f32, 1.f);
}

TEST(NnSgd, FusedKernelUnscalesSkipsAndWritesReducedCopies) {
  GB_NN_REQUIRE_GPU();
  check_sgd(ElementType::f16, 1024.f);
  check_sgd(ElementType::bf16, 1.f);
}

TEST(NnScaler, UpdateKernelMatchesReferenceOverASequence) {
  GB_NN_REQUIRE_GPU();
  ScalerConfig cfg;
  cfg.interval = 3;  // short, so growth happens within the sequence
  gpu::DeviceBuffer state(sizeof(ScalerState)), record(sizeof(StepRecord));
  ScalerState st;
  st.scale = cfg.init_scale;
  write(state.as<ScalerState>(), st);
  float want_scale = cfg.init_scale;
  int want_tracker = 0;
  const bool found[] = {false, false, false, true, false, true, true, false, false, false,
                        false, false, false, false};
  int steps = 0, skipped = 0;
  for (bool inf : found) {
    ScalerState cur = read_back(state.as<ScalerState>());
    cur.found_inf = inf ? 1 : 0;
    write(state.as<ScalerState>(), cur);
    scaler_update(state.as<ScalerState>(), cfg, record.as<StepRecord>(), nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
    std::tie(want_scale, want_tracker) = nnref::update_scale(
        want_scale, want_tracker, inf, cfg.growth, cfg.backoff, cfg.interval);
    ++steps;
    skipped += inf ? 1 : 0;
    const ScalerState got = read_back(state.as<ScalerState>());
    EXPECT_EQ(got.scale, want_scale) << "step " << steps;
    EXPECT_EQ(got.growth_tracker, want_tracker) << "step " << steps;
    EXPECT_EQ(got.found_inf, 0);
    EXPECT_EQ(got.steps, steps);
    EXPECT_EQ(got.skipped, skipped);
    EXPECT_EQ(read_back(record.as<StepRecord>()).skipped, inf ? 1 : 0);
  }
}

TEST(NnScaler, GrowthStopsBeforeInfinity) {
  GB_NN_REQUIRE_GPU();
  ScalerConfig cfg;
  cfg.interval = 1;
  gpu::DeviceBuffer state(sizeof(ScalerState));
  ScalerState st;
  st.scale = std::numeric_limits<float>::max() / 1.5f;
  write(state.as<ScalerState>(), st);
  scaler_update(state.as<ScalerState>(), cfg, nullptr, nullptr);
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  const auto [want_scale, want_tracker] =
      nnref::update_scale(st.scale, 0, false, cfg.growth, cfg.backoff, cfg.interval);
  const ScalerState got = read_back(state.as<ScalerState>());
  EXPECT_EQ(got.scale, want_scale);
  EXPECT_EQ(got.growth_tracker, want_tracker);
}

TEST(NnScaler, NonfiniteCheckFindsInfAndNanInEitherGradientSection) {
  GB_NN_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int which = 0; which < 5; ++which) {
    SCOPED_TRACE("case " + std::to_string(which));
    SgdFixture f(ElementType::f16);
    std::vector<float> ga(f.store.info(f.a).shape.elements(), 0.5f);
    std::vector<float> gb(f.store.info(f.b).shape.elements(), -0.25f);
    if (which == 1) ga[7] = inf;
    if (which == 2) ga[ga.size() - 1] = nan;
    if (which == 3) gb[0] = -inf;
    if (which == 4) gb[gb.size() - 1] = nan;
    f.store.set_grad(f.a, ga);
    f.store.set_grad(f.b, gb);
    gpu::DeviceBuffer state(sizeof(ScalerState));
    write(state.as<ScalerState>(), ScalerState{});
    check_nonfinite(f.store.grad_lp(), f.store.n_lp(), f.store.lp_dtype(), f.store.grad32(),
                    f.store.n32(), state.as<ScalerState>(), nullptr);
    GB_CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(read_back(state.as<ScalerState>()).found_inf, which == 0 ? 0 : 1);
  }
}

TEST(NnScaler, OverflowInTheReducedTypeIsFound) {
  GB_NN_REQUIRE_GPU();
  // 70000 does not fit FP16 (max 65504): the gradient becomes inf in storage.
  SgdFixture f(ElementType::f16);
  std::vector<float> ga(f.store.info(f.a).shape.elements(), 1.f);
  ga[3] = 70000.f;
  f.store.set_grad(f.a, ga);
  f.store.set_grad(f.b, std::vector<float>(f.store.info(f.b).shape.elements(), 1.f));
  gpu::DeviceBuffer state(sizeof(ScalerState));
  write(state.as<ScalerState>(), ScalerState{});
  check_nonfinite(f.store.grad_lp(), f.store.n_lp(), f.store.lp_dtype(), f.store.grad32(),
                  f.store.n32(), state.as<ScalerState>(), nullptr);
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(read_back(state.as<ScalerState>()).found_inf, 1);
}

}  // namespace
}  // namespace gb::nn
