#include "runtime/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "runtime/in_process_transport.h"
#include "runtime/train.h"

namespace optpipe::runtime {
namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double median_ms(const ProfileOptions& o, F&& f) {
  for (int k = 0; k < o.warmup; ++k) f();
  std::vector<double> t;
  for (int k = 0; k < std::max(1, o.repeats); ++k) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// One activation from rank 0 to rank 1 of the threads transport and back, halved.
double comm_ms(std::size_t bytes, const ProfileOptions& o) {
  InProcessHub hub(2);
  auto a = hub.transport(0), b = hub.transport(1);
  std::vector<char> x(std::max<std::size_t>(bytes, 1)), y(x.size());
  int tag = 0;
  return median_ms(o, [&] {
           const auto back = a->irecv(1, tag, x.data(), x.size());
           const auto there = b->irecv(0, tag, y.data(), y.size());
           a->isend(1, tag, x.data(), x.size());
           b->wait(there, 10, "the profile's ping");
           b->isend(0, tag, y.data(), y.size());
           a->wait(back, 10, "the profile's pong");
           ++tag;
         }) /
         2.0;
}

}  // namespace

Instance profile_mlp(const Instance& layout, const MlpConfig& base, const ProfileOptions& o) {
  const MlpConfig cfg = model_config_for(layout, base);
  validate_mlp_config(cfg);
  Instance out = layout;
  out.name = layout.name + "-measured";
  const int S = layout.num_stages();
  std::vector<double> comm(static_cast<std::size_t>(std::max(0, S - 1)), 0.0);
  for (int s = 0; s < S; ++s) {
    auto model = make_mlp_stage(cfg, s);
    const StageShapes sh = model->shapes();
    std::vector<char> in(sh.input_bytes), outb(sh.output_bytes), kb(sh.keep_for_b), kw(sh.keep_for_w),
        gin(sh.input_bytes), gout(sh.output_bytes), host(sh.keep_for_b);
    model->begin_iteration(0);
    // Stage s > 0 reads an input: the previous stage's output of the same data, for realistic values.
    if (s > 0) {
      auto prev = make_mlp_stage(cfg, s - 1);
      std::vector<char> pin(prev->shapes().input_bytes), pkb(prev->shapes().keep_for_b);
      prev->begin_iteration(0);
      if (s - 1 == 0) {
        prev->forward(0, nullptr, in.data(), pkb.data());
      } else {
        std::fill(in.begin(), in.end(), 0);
      }
    }
    const void* input = s == 0 ? nullptr : in.data();
    const void* grad_output = s == S - 1 ? nullptr : gout.data();
    Stage& st = out.stages[static_cast<std::size_t>(s)];
    st.forward = median_ms(o, [&] { model->forward(0, input, outb.data(), kb.data()); });
    st.backward = median_ms(o, [&] { model->backward_input(0, kb.data(), grad_output, gin.data(), kw.data()); });
    st.weight = median_ms(o, [&] { model->backward_weight(0, kw.data()); });
    st.activation = static_cast<double>(sh.keep_for_b);
    st.weight_activation = layout.split_backward ? static_cast<double>(sh.keep_for_w) : 0.0;
    const double copy = median_ms(o, [&] { std::memcpy(host.data(), kb.data(), kb.size()); });
    st.offload = copy;
    st.reload = copy;
    if (s + 1 < S) comm[static_cast<std::size_t>(s)] = comm_ms(sh.output_bytes, o);
  }
  out.comm = comm;
  if (std::find_if(out.offload_levels.begin(), out.offload_levels.end(), [](double r) { return r > 0; }) ==
      out.offload_levels.end()) {
    out.offload_levels = {0.0, 1.0};
  }
  return out;
}

}  // namespace optpipe::runtime
