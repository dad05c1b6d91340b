// tests/gpu/test_nn_depthwise.cpp: the engine's own 3x3 depthwise kernels (nn/depthwise.hpp)
// against the CPU reference (nnref::conv2d_* with groups = C): forward, backward data (written
// and accumulated) and backward filter, stride 1 and 2, odd spatial sizes, C a multiple of the
// 16-byte vector and not, in f32 (1e-5 relative to the tensor's largest value), f16 (1e-2) and
// bf16 (4e-2). Then the Conv layer end to end: under GPUBASE_NN_DEPTHWISE=own it describes all
// three directions as "own" and matches the reference, under =cudnn none; a MobileNetV2 Trainer
// on the own kernels, and one on the timed per-direction choice (the default), give the cuDNN
// path's first loss on the same seed and batch (CUDA graph).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nn/depthwise.hpp"
#include "nn/models.hpp"
#include "nn/trainer.hpp"
#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

struct DwCase {
  int n, c, h, w, stride;
};

std::string name_of(const DwCase& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w) + " s" + std::to_string(d.stride);
}

// C = 12 and 10: not a multiple of 8 (f16/bf16 take the scalar path; f32 vectorises 12, not 10).
const DwCase kCases[] = {
    {2, 12, 7, 9, 1}, {3, 12, 7, 9, 2}, {2, 32, 7, 9, 1},
    {3, 32, 9, 7, 2}, {2, 10, 5, 6, 2}, {3, 32, 8, 8, 1},
};

double tolerance(ElementType t) {
  switch (t) {
    case ElementType::f32: return 1e-5;
    case ElementType::f16: return 1e-2;
    case ElementType::bf16: return 4e-2;
    default: unsupported_element_type(t, "tolerance");
  }
}

gpu::DeviceBuffer upload(const std::vector<float>& nchw, const Shape& s, bool nhwc, ElementType t) {
  const std::vector<unsigned char> bytes = pack_host(nchw, s, nhwc, t);
  gpu::DeviceBuffer buf(bytes.size());
  GB_CHECK_CUDA(cudaMemcpy(buf.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buf;
}

std::vector<float> download(const gpu::DeviceBuffer& buf, const Shape& s, bool nhwc,
                            ElementType t) {
  std::vector<unsigned char> bytes(buf.bytes());
  GB_CHECK_CUDA(cudaMemcpy(bytes.data(), buf.data(), bytes.size(), cudaMemcpyDeviceToHost));
  return unpack_host(bytes.data(), s, nhwc, t);
}

// One case's reference data, rounded to the device type, and its device copies.
struct Problem {
  Problem(const DwCase& d, ElementType t, std::mt19937& gen)
      : dc(d), type(t), xs(testing::random_tensor(d.n, d.c, d.h, d.w, gen)),
        ws(testing::random_tensor(d.c, 1, 3, 3, gen)), cp{d.stride, d.stride, 1, 1, 1, 1, d.c} {
    testing::round_all(xs.v, t);
    testing::round_all(ws.v, t);
    shape = DepthwiseShape{d.n, d.c, d.h, d.w, d.stride};
    y_shape = Shape{d.n, d.c, shape.p(), shape.q()};
    dy = testing::random_tensor(d.n, d.c, shape.p(), shape.q(), gen);
    testing::round_all(dy.v, t);
    x_dev = upload(xs.v, x_shape(), true, t);
    w_dev = upload(ws.v, w_shape(), false, t);  // [C][1][3][3] = [C][9]
    dy_dev = upload(dy.v, y_shape, true, t);
  }
  Shape x_shape() const { return Shape{dc.n, dc.c, dc.h, dc.w}; }
  Shape w_shape() const { return Shape{dc.c, 1, 3, 3}; }

  DwCase dc;
  ElementType type;
  nnref::Tensor xs, ws, dy;
  nnref::ConvParams cp;
  DepthwiseShape shape;
  Shape y_shape;
  gpu::DeviceBuffer x_dev, w_dev, dy_dev;
  gpu::Stream stream = gpu::Stream::create();
};

class NnDepthwise : public ::testing::TestWithParam<ElementType> {};

TEST_P(NnDepthwise, ForwardMatchesReference) {
  GB_NN_REQUIRE_GPU();
  const ElementType t = GetParam();
  std::mt19937 gen(21);
  for (const DwCase& d : kCases) {
    SCOPED_TRACE(name_of(d) + " " + dtype_name(t));
    Problem pb(d, t, gen);
    const nnref::Tensor want = nnref::conv2d_forward(pb.xs, pb.ws, pb.cp);
    ASSERT_EQ(want.h, pb.y_shape.h);
    ASSERT_EQ(want.w, pb.y_shape.w);
    gpu::DeviceBuffer y(pb.y_shape.elements() * element_bytes(t));
    depthwise_forward(pb.x_dev.data(), pb.w_dev.data(), y.data(), pb.shape, t, pb.stream.get());
    GB_CHECK_CUDA(cudaStreamSynchronize(pb.stream.get()));
    EXPECT_LE(testing::rel_error(download(y, pb.y_shape, true, t), want.v), tolerance(t));
  }
}

TEST_P(NnDepthwise, BackwardDataMatchesReference) {
  GB_NN_REQUIRE_GPU();
  const ElementType t = GetParam();
  std::mt19937 gen(22);
  for (const DwCase& d : kCases) {
    SCOPED_TRACE(name_of(d) + " " + dtype_name(t));
    Problem pb(d, t, gen);
    const nnref::Tensor want = nnref::conv2d_backward_data(pb.dy, pb.ws, pb.cp, d.h, d.w);
    // Garbage in dx first: beta = 0 must overwrite, not add.
    gpu::DeviceBuffer dx = upload(testing::random_vector(pb.x_shape().elements(), gen, 50.f, 60.f),
                                  pb.x_shape(), true, t);
    depthwise_backward_data(pb.dy_dev.data(), pb.w_dev.data(), dx.data(), false, pb.shape, t,
                            pb.stream.get());
    GB_CHECK_CUDA(cudaStreamSynchronize(pb.stream.get()));
    EXPECT_LE(testing::rel_error(download(dx, pb.x_shape(), true, t), want.v), tolerance(t));
  }
}

TEST_P(NnDepthwise, BackwardDataAddsIntoAnExistingGradient) {
  GB_NN_REQUIRE_GPU();
  const ElementType t = GetParam();
  std::mt19937 gen(23);
  for (const DwCase& d : kCases) {
    SCOPED_TRACE(name_of(d) + " " + dtype_name(t));
    Problem pb(d, t, gen);
    std::vector<float> before = testing::random_vector(pb.x_shape().elements(), gen);
    testing::round_all(before, t);
    nnref::Tensor want = nnref::conv2d_backward_data(pb.dy, pb.ws, pb.cp, d.h, d.w);
    for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] += before[i];
    gpu::DeviceBuffer dx = upload(before, pb.x_shape(), true, t);
    depthwise_backward_data(pb.dy_dev.data(), pb.w_dev.data(), dx.data(), true, pb.shape, t,
                            pb.stream.get());
    GB_CHECK_CUDA(cudaStreamSynchronize(pb.stream.get()));
    EXPECT_LE(testing::rel_error(download(dx, pb.x_shape(), true, t), want.v), tolerance(t));
  }
}

TEST_P(NnDepthwise, BackwardFilterMatchesReference) {
  GB_NN_REQUIRE_GPU();
  const ElementType t = GetParam();
  std::mt19937 gen(24);
  for (const DwCase& d : kCases) {
    SCOPED_TRACE(name_of(d) + " " + dtype_name(t));
    Problem pb(d, t, gen);
    const nnref::Tensor want = nnref::conv2d_backward_filter(pb.xs, pb.dy, pb.cp, 3, 3);
    gpu::DeviceBuffer dw = upload(testing::random_vector(static_cast<std::size_t>(d.c) * 9, gen,
                                                         50.f, 60.f),
                                  pb.w_shape(), false, t);
    gpu::DeviceBuffer ws(depthwise_backward_filter_workspace(pb.shape));
    depthwise_backward_filter(pb.x_dev.data(), pb.dy_dev.data(), dw.data(), ws.data(), ws.bytes(),
                              pb.shape, t, pb.stream.get());
    GB_CHECK_CUDA(cudaStreamSynchronize(pb.stream.get()));
    EXPECT_LE(testing::rel_error(download(dw, pb.w_shape(), false, t), want.v), tolerance(t));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, NnDepthwise,
                         ::testing::Values(ElementType::f32, ElementType::f16, ElementType::bf16),
                         [](const ::testing::TestParamInfo<ElementType>& i) {
                           return std::string(dtype_name(i.param));
                         });

// The Conv layer of an FP16/BF16 NHWC network, with the input's gradient accumulated (x feeds
// the depthwise convolution and a residual add), on the own kernels when asked for.
void check_layer(Precision p) {
  const ElementType t = testing::dtype_of(p);
  const double tol = testing::layer_tolerance(p);
  std::mt19937 gen(31);
  for (const DwCase& d : kCases) {
    SCOPED_TRACE(name_of(d) + " " + std::string(to_string(p)));
    if (d.stride != 1) continue;  // the residual add needs matching shapes
    testing::ScopedEnv own("GPUBASE_NN_DEPTHWISE", "own");
    testing::Engine e(p);
    Network net(t, true, d.n);
    Value* x = net.input(d.c, d.h, d.w, true);
    Value* c = net.conv(x, "dw", ConvSpec::square(d.c, 3, d.stride, 1, d.c));
    Value* y = net.add(c, x);
    e.build(net);
    bool described = false;
    for (const auto& layer : net.layers())
      described = described || layer->describe().find("fwd own bwd-data own bwd-filter own") !=
                                   std::string::npos;
    EXPECT_TRUE(described);

    Problem pb(d, t, gen);
    upload_nchw(x->ref(), pb.xs.v);
    net.params().set_master(0, pb.ws.v);
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), pb.dy.v);
    net.backward(e.ctx);
    e.sync();
    nnref::Tensor want_y = nnref::conv2d_forward(pb.xs, pb.ws, pb.cp);
    for (std::size_t i = 0; i < want_y.v.size(); ++i) want_y.v[i] += pb.xs.v[i];
    nnref::Tensor want_dx = nnref::conv2d_backward_data(pb.dy, pb.ws, pb.cp, d.h, d.w);
    for (std::size_t i = 0; i < want_dx.v.size(); ++i) want_dx.v[i] += pb.dy.v[i];
    const nnref::Tensor want_dw = nnref::conv2d_backward_filter(pb.xs, pb.dy, pb.cp, 3, 3);
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol) << "forward";
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol) << "dx";
    EXPECT_LE(testing::rel_error(net.params().get_grad(0), want_dw.v), tol) << "dw";
  }
}

TEST(NnDepthwiseLayer, Fp16ConvLayerRunsOnOwnKernelsWhenAskedFor) {
  GB_NN_REQUIRE_GPU();
  check_layer(Precision::fp16);
}

TEST(NnDepthwiseLayer, Bf16ConvLayerRunsOnOwnKernelsWhenAskedFor) {
  GB_NN_REQUIRE_GPU();
  check_layer(Precision::bf16);
}

TEST(NnDepthwiseLayer, CudnnOnlyWhenAskedFor) {
  GB_NN_REQUIRE_GPU();
  testing::ScopedEnv only_cudnn("GPUBASE_NN_DEPTHWISE", "cudnn");
  testing::Engine e(Precision::fp16);
  Network net(ElementType::f16, true, 2);
  Value* x = net.input(32, 8, 8, true);
  net.conv(x, "dw", ConvSpec::square(32, 3, 1, 1, 32));
  e.build(net);
  for (const auto& layer : net.layers())
    EXPECT_EQ(layer->describe().find("own"), std::string::npos) << layer->describe();
}

// mode: GPUBASE_NN_DEPTHWISE ("own", "cudnn", or nullptr for the timed choice).
float mobilenet_first_loss(Precision p, const char* mode) {
  testing::ScopedEnv env("GPUBASE_NN_DEPTHWISE", mode);
  TrainerOptions o;
  o.model = Model::mobilenet_v2;
  o.precision = p;
  o.input = default_input(o.model);
  o.batch = 8;
  o.seed = 7;
  o.cuda_graph = true;  // the own kernels must capture
  Trainer t(o);
  t.make_synthetic_batch(1);
  t.train_step_synthetic();
  return t.last_step().loss;
}

class NnDepthwiseTrainer : public ::testing::TestWithParam<Precision> {};

TEST_P(NnDepthwiseTrainer, MobileNetV2FirstLossMatchesTheCudnnPath) {
  GB_NN_REQUIRE_GPU();
  const Precision p = GetParam();
  const float cudnn = mobilenet_first_loss(p, "cudnn");
  const float own = mobilenet_first_loss(p, "own");
  const float timed = mobilenet_first_loss(p, nullptr);
  ASSERT_TRUE(std::isfinite(own)) << own;
  ASSERT_TRUE(std::isfinite(timed)) << timed;
  // Same weights, same batch: only the depthwise arithmetic (FP32 accumulation either way) and
  // the rounding of its outputs differ; ~ln(1000) = 6.9 at initialisation.
  const float tol = p == Precision::bf16 ? 0.1f : 0.05f;
  EXPECT_NEAR(own, cudnn, tol) << "cuDNN " << cudnn;
  EXPECT_NEAR(timed, cudnn, tol) << "cuDNN " << cudnn;
}

INSTANTIATE_TEST_SUITE_P(Reduced, NnDepthwiseTrainer,
                         ::testing::Values(Precision::fp16, Precision::bf16),
                         [](const ::testing::TestParamInfo<Precision>& i) {
                           return std::string(to_string(i.param));
                         });

}  // namespace
}  // namespace gb::nn
