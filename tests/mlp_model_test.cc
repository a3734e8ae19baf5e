// The reference MLP stage model (runtime/mlp_model.h) and the single-process reference
// (runtime/mlp_reference.h): gradients against central finite differences, independence of the
// microbatch order, float against double, training with SGD and Adam, determinism, shapes, and
// the cuBLAS model against the CPU one (skipped with the reason when there is no GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_devices.h"
#include "runtime/mlp_model.h"
#include "runtime/mlp_model_cuda.h"
#include "runtime/mlp_reference.h"

namespace optpipe::runtime {
namespace {

MlpConfig small_config(DType dtype = DType::kFloat64) {
  MlpConfig c;
  c.stages = 3;
  c.layers_per_stage = 2;
  c.width = 4;
  c.rows = 3;
  c.microbatches = 4;
  c.dtype = dtype;
  c.seed = 7;
  return c;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// The largest |got - want| / max(|want|, floor * max|want|) over the elements: a relative error,
// measured against a floor for entries near zero (where only an absolute error makes sense).
double worst_relative_error(const std::vector<double>& got, const std::vector<double>& want, double floor) {
  EXPECT_EQ(got.size(), want.size());
  const double scale = floor * max_abs(want);
  double worst = 0;
  for (std::size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    const double denom = std::max(std::abs(want[k]), scale);
    const double err = std::abs(got[k] - want[k]);
    worst = std::max(worst, denom > 0 ? err / denom : err);
  }
  return worst;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// One iteration's ops in a given order, with host buffers: the executor's job in miniature.
struct Op {
  enum Kind { kF, kB, kW } kind;
  int stage, microbatch;
};

std::vector<std::vector<double>> run_order(std::vector<std::unique_ptr<StageModel>>& stages, int microbatches,
                                           const std::vector<Op>& order, double* loss = nullptr) {
  const std::size_t n = stages.size();
  const auto m = static_cast<std::size_t>(microbatches);
  std::vector<std::vector<std::shared_ptr<void>>> out(n), kb(n), kw(n), gin(n);
  for (std::size_t s = 0; s < n; ++s) {
    const StageShapes sh = stages[s]->shapes();
    for (std::size_t mb = 0; mb < m; ++mb) {
      out[s].push_back(host_buffer(sh.output_bytes));
      kb[s].push_back(host_buffer(sh.keep_for_b));
      kw[s].push_back(host_buffer(sh.keep_for_w));
      gin[s].push_back(host_buffer(sh.input_bytes));
    }
  }
  for (auto& s : stages) s->begin_iteration(0);
  for (const Op& op : order) {
    const auto s = static_cast<std::size_t>(op.stage);
    const auto mb = static_cast<std::size_t>(op.microbatch);
    switch (op.kind) {
      case Op::kF:
        stages[s]->forward(op.microbatch, s == 0 ? nullptr : out[s - 1][mb].get(), out[s][mb].get(), kb[s][mb].get());
        break;
      case Op::kB:
        stages[s]->backward_input(op.microbatch, kb[s][mb].get(), s + 1 == n ? nullptr : gin[s + 1][mb].get(),
                                  gin[s][mb].get(), kw[s][mb].get());
        break;
      case Op::kW:
        stages[s]->backward_weight(op.microbatch, kw[s][mb].get());
        break;
    }
  }
  if (loss != nullptr) {
    *loss = 0;
    for (std::size_t mb = 0; mb < m; ++mb) *loss += stages.back()->loss_of(out[n - 1][mb].get());
    *loss /= static_cast<double>(m);
  }
  std::vector<std::vector<double>> grads;
  for (auto& s : stages) grads.push_back(s->gradients());
  return grads;
}

TEST(MlpModel, GradientsEqualCentralFiniteDifferencesOfTheMeanLoss) {
  const MlpConfig c = small_config();
  auto stages = make_mlp_stages(c);
  const ReferenceIteration ref = reference_iteration(stages, 0, c.microbatches);
  ASSERT_EQ(ref.gradients.size(), 3u);
  const double h = 1e-5;
  double worst = 0;
  int checked = 0;
  for (int s = 0; s < c.stages; ++s) {
    const std::vector<double> p0 = stages[static_cast<std::size_t>(s)]->parameters();
    const std::vector<double>& g = ref.gradients[static_cast<std::size_t>(s)];
    ASSERT_EQ(g.size(), p0.size());
    std::vector<double> fd(p0.size());
    for (std::size_t k = 0; k < p0.size(); ++k) {
      std::vector<double> p = p0;
      p[k] = p0[k] + h;
      set_mlp_parameters(*stages[static_cast<std::size_t>(s)], p);
      const double up = reference_iteration(stages, 0, c.microbatches).loss;
      p[k] = p0[k] - h;
      set_mlp_parameters(*stages[static_cast<std::size_t>(s)], p);
      const double down = reference_iteration(stages, 0, c.microbatches).loss;
      fd[k] = (up - down) / (2 * h);
      ++checked;
    }
    set_mlp_parameters(*stages[static_cast<std::size_t>(s)], p0);
    // Relative 1e-6, against a floor of 1e-3 of the stage's largest gradient for entries near 0.
    const double err = worst_relative_error(g, fd, 1e-3);
    EXPECT_LT(err, 1e-6) << "stage " << s;
    worst = std::max(worst, err);
  }
  EXPECT_EQ(checked, 3 * 2 * (4 * 4 + 4));
  std::printf("[ mlp      ] %d parameters of 3 stages: worst relative error against central differences %.2e\n",
              checked, worst);
}

TEST(MlpModel, MicrobatchOrderDoesNotChangeTheGradients) {
  const MlpConfig c = small_config();
  auto ref_stages = make_mlp_stages(c);
  const ReferenceIteration ref = reference_iteration(ref_stages, 0, c.microbatches);
  const int n = c.stages, m = c.microbatches;

  std::vector<Op> reversed;  // every F, B, W in reverse microbatch order
  for (int mb = m - 1; mb >= 0; --mb)
    for (int s = 0; s < n; ++s) reversed.push_back({Op::kF, s, mb});
  for (int mb = m - 1; mb >= 0; --mb)
    for (int s = n - 1; s >= 0; --s) reversed.push_back({Op::kB, s, mb});
  for (int mb = m - 1; mb >= 0; --mb)
    for (int s = 0; s < n; ++s) reversed.push_back({Op::kW, s, mb});

  std::vector<Op> eager;  // one microbatch at a time; W of microbatch 1, 3, 0, 2 deferred to the end
  const int w_order[] = {1, 3, 0, 2};
  for (int mb = 0; mb < m; ++mb) {
    for (int s = 0; s < n; ++s) eager.push_back({Op::kF, s, mb});
    for (int s = n - 1; s >= 0; --s) eager.push_back({Op::kB, s, mb});
  }
  for (int mb : w_order)
    for (int s = n - 1; s >= 0; --s) eager.push_back({Op::kW, s, mb});

  for (const auto* order : {&reversed, &eager}) {
    auto stages = make_mlp_stages(c);
    double loss = 0;
    const auto grads = run_order(stages, m, *order, &loss);
    EXPECT_NEAR(loss, ref.loss, 1e-15 * ref.loss);
    for (int s = 0; s < n; ++s) {
      const double err = worst_relative_error(grads[static_cast<std::size_t>(s)], ref.gradients[static_cast<std::size_t>(s)], 1e-3);
      EXPECT_LT(err, 1e-12) << "stage " << s << (order == &reversed ? " reversed" : " eager");
    }
  }
}

TEST(MlpModel, FloatGradientsAgreeWithDouble) {
  MlpConfig c = small_config();
  c.width = 16;
  c.rows = 8;
  auto d_stages = make_mlp_stages(c);
  c.dtype = DType::kFloat32;
  auto f_stages = make_mlp_stages(c);
  EXPECT_EQ(f_stages[0]->dtype(), DType::kFloat32);
  EXPECT_EQ(d_stages[0]->dtype(), DType::kFloat64);
  const ReferenceIteration d = reference_iteration(d_stages, 3, c.microbatches);
  const ReferenceIteration f = reference_iteration(f_stages, 3, c.microbatches);
  EXPECT_NEAR(f.loss, d.loss, 1e-5 * d.loss);
  double worst = 0;
  for (std::size_t s = 0; s < d.gradients.size(); ++s) {
    const double err = worst_relative_error(f.gradients[s], d.gradients[s], 1e-2);
    EXPECT_LT(err, 1e-4) << "stage " << s;
    worst = std::max(worst, err);
  }
  std::printf("[ mlp      ] float against double gradients: worst relative error %.2e\n", worst);
}

TEST(MlpReference, TrainingLowersTheLossWithSgdAndAdamAndIsDeterministic) {
  for (const auto opt : {MlpConfig::kSgd, MlpConfig::kAdam}) {
    for (const auto dtype : {DType::kFloat64, DType::kFloat32}) {
      MlpConfig c;  // the defaults: width 32, rows 8, 2 layers per stage, 4 microbatches, SGD 0.5 / Adam 0.01
      c.stages = 3;
      c.optimizer = opt;
      c.dtype = dtype;
      const std::vector<double> a = reference_train(c, 20);
      const std::vector<double> b = reference_train(c, 20);
      const char* name = opt == MlpConfig::kSgd ? "SGD" : "Adam";
      const char* type = dtype == DType::kFloat64 ? "double" : "float";
      ASSERT_EQ(a.size(), 20u);
      EXPECT_TRUE(same_bits(a, b)) << name << " " << type << ": two runs differ";
      EXPECT_LT(a.back(), 0.7 * a.front()) << name << " " << type;
      std::printf("[ mlp      ] %s %s: loss %.4f -> %.4f over 20 iterations\n", name, type, a.front(), a.back());
    }
    // Deeper and shallower pipelines with the default step sizes.
    for (const int stages : {1, 4, 8}) {
      MlpConfig c;
      c.stages = stages;
      c.microbatches = 8;
      c.optimizer = opt;
      const std::vector<double> a = reference_train(c, 20);
      EXPECT_LT(a.back(), 0.7 * a.front()) << stages << " stages, " << (opt == MlpConfig::kSgd ? "SGD" : "Adam");
    }
  }
}

TEST(MlpModel, ParametersDependOnlyOnTheConfigAndTheStage) {
  const MlpConfig c = small_config();
  for (int s = 0; s < c.stages; ++s) {
    const auto a = make_mlp_stage(c, s)->parameters();
    const auto b = make_mlp_stage(c, s)->parameters();
    EXPECT_TRUE(same_bits(a, b)) << "stage " << s;
    EXPECT_TRUE(same_bits(a, mlp_initial_parameters(c, s)));
    EXPECT_EQ(a.size(), static_cast<std::size_t>(c.layers_per_stage * (c.width * c.width + c.width)));
  }
  EXPECT_NE(make_mlp_stage(c, 0)->parameters(), make_mlp_stage(c, 1)->parameters());
  EXPECT_NE(make_mlp_stage(c, 1)->parameters(), make_mlp_stage(c, 2)->parameters());
  MlpConfig other = c;
  other.seed = 8;
  EXPECT_NE(make_mlp_stage(c, 0)->parameters(), make_mlp_stage(other, 0)->parameters());
  // The data: the same for the same (iteration, microbatch), different otherwise.
  EXPECT_TRUE(same_bits(mlp_input(c, 2, 1), mlp_input(c, 2, 1)));
  EXPECT_NE(mlp_input(c, 2, 1), mlp_input(c, 2, 0));
  EXPECT_NE(mlp_input(c, 2, 1), mlp_input(c, 1, 1));
  EXPECT_TRUE(same_bits(mlp_target(c, mlp_input(c, 0, 0)),
                        mlp_target(c, mlp_teacher_projection(c), mlp_input(c, 0, 0))));
}

TEST(MlpModel, ShapesChainAndKeepForWFitsInKeepForB) {
  for (const auto dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int stages : {1, 2, 5}) {
      MlpConfig c;
      c.stages = stages;
      c.layers_per_stage = 3;
      c.width = 12;
      c.rows = 5;
      c.dtype = dtype;
      const std::size_t e = dtype_bytes(dtype), act = 12 * 5 * e;
      for (int s = 0; s < stages; ++s) {
        const StageShapes sh = mlp_shapes(c, s);
        EXPECT_EQ(sh.input_bytes, s == 0 ? 0 : act);
        EXPECT_EQ(sh.output_bytes, s + 1 == stages ? e : act);
        EXPECT_EQ(sh.keep_for_b, 2 * 3 * act);
        EXPECT_LE(sh.keep_for_w, sh.keep_for_b);
        const StageShapes model = make_mlp_stage(c, s)->shapes();
        EXPECT_EQ(model.keep_for_w, sh.keep_for_w);
        EXPECT_EQ(model.input_bytes, sh.input_bytes);
        if (s + 1 < stages) {
          EXPECT_EQ(sh.output_bytes, mlp_shapes(c, s + 1).input_bytes) << "stage " << s;
        }
      }
    }
  }
}

TEST(MlpModel, RejectsBadConfigsAndArguments) {
  MlpConfig c = small_config();
  EXPECT_THROW(make_mlp_stage(c, 3), std::invalid_argument);
  EXPECT_THROW(make_mlp_stage(c, -1), std::invalid_argument);
  MlpConfig bad = c;
  bad.width = 0;
  EXPECT_THROW(mlp_shapes(bad, 0), std::invalid_argument);
  bad = c;
  bad.learning_rate = -1;
  EXPECT_THROW(make_mlp_stage(bad, 0), std::invalid_argument);
  auto stage = make_mlp_stage(c, 1);
  std::vector<double> in(64), out(64), kb(256);
  EXPECT_THROW(stage->forward(c.microbatches, in.data(), out.data(), kb.data()), std::out_of_range);
  EXPECT_THROW(stage->forward(0, nullptr, out.data(), kb.data()), std::invalid_argument);
  EXPECT_THROW(stage->loss_of(out.data()), std::logic_error);
  EXPECT_THROW(set_mlp_parameters(*stage, {1.0}), std::invalid_argument);
}

TEST(MlpModelCuda, MatchesTheCpuModel) {
#ifndef OPTPIPE_HAVE_CUDA_PLUGIN
  EXPECT_THROW(make_mlp_stage_cuda(small_config(), 0, nullptr), std::runtime_error);
  std::printf("[ skipped  ] the CUDA MLP: this build has no CUDA plugin (nvcc was not found)\n");
  GTEST_SKIP() << "built without the CUDA plugin: make_mlp_stage_cuda throws";
#else
  const CudaDevices info = query_cuda_devices();
  if (info.devices.empty()) {
    std::printf("[ skipped  ] the CUDA MLP: %s\n", info.status.c_str());
    GTEST_SKIP() << info.status;
  }
  for (const auto dtype : {DType::kFloat64, DType::kFloat32}) {
    const double tol = dtype == DType::kFloat64 ? 1e-10 : 1e-4;
    for (const auto opt : {MlpConfig::kSgd, MlpConfig::kAdam}) {
      MlpConfig c = small_config(dtype);
      c.width = 16;
      c.rows = 8;
      c.optimizer = opt;
      auto cpu = make_mlp_stages(c);
      std::vector<std::unique_ptr<StageModel>> gpu;
      for (int s = 0; s < c.stages; ++s) gpu.push_back(make_mlp_stage_cuda(c, s, nullptr));
      for (int s = 0; s < c.stages; ++s) {
        EXPECT_TRUE(same_bits(gpu[static_cast<std::size_t>(s)]->parameters(), cpu[static_cast<std::size_t>(s)]->parameters()));
      }
      for (int it = 0; it < 3; ++it) {
        const ReferenceIteration want = reference_iteration(cpu, it, c.microbatches);
        const ReferenceIteration got = reference_iteration(gpu, it, c.microbatches, mlp_cuda_alloc);
        EXPECT_NEAR(got.loss, want.loss, tol * want.loss) << "iteration " << it;
        for (std::size_t s = 0; s < want.gradients.size(); ++s) {
          EXPECT_LT(worst_relative_error(got.gradients[s], want.gradients[s], 1e-2), tol)
              << "iteration " << it << " stage " << s;
        }
        reference_step(cpu);
        reference_step(gpu);
        for (std::size_t s = 0; s < cpu.size(); ++s) {
          EXPECT_LT(worst_relative_error(gpu[s]->parameters(), cpu[s]->parameters(), 1e-2), tol) << "stage " << s;
        }
      }
    }
  }
#endif
}

}  // namespace
}  // namespace optpipe::runtime
