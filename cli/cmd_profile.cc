#include "cli/cmd_profile.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/validators.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "runtime/profiler.h"

namespace optpipe::cli {
namespace {

struct ProfileArgs {
  std::string layout, output, dtype = "double";
  int width = 32, rows = 8, layers = 2, warmup = 3, repeats = 9;
};

void run_profile(const ProfileArgs& a) {
  const Instance layout = load_instance(a.layout);
  runtime::MlpConfig m;
  m.width = a.width;
  m.rows = a.rows;
  m.layers_per_stage = a.layers;
  m.dtype = a.dtype == "float" ? runtime::DType::kFloat32 : runtime::DType::kFloat64;
  runtime::ProfileOptions o;
  o.warmup = a.warmup;
  o.repeats = a.repeats;
  const Instance out = runtime::profile_mlp(layout, m, o);
  std::fprintf(stderr, "profile: %s, MLP %dx%d per stage (%s), %d warm-up and %d timed runs per op\n",
               layout.name.c_str(), a.layers, a.width, a.dtype.c_str(), a.warmup, a.repeats);
  std::fprintf(stderr, "%6s %10s %10s %10s %12s %12s %10s\n", "stage", "F ms", "B ms", "W ms", "activation", "M_W",
               "copy ms");
  for (int s = 0; s < out.num_stages(); ++s) {
    const Stage& st = out.stages[static_cast<std::size_t>(s)];
    std::fprintf(stderr, "%6d %10.4f %10.4f %10.4f %10.0f B %10.0f B %10.5f\n", s, st.forward, st.backward, st.weight,
                 st.activation, st.weight_activation, st.offload.value_or(0));
  }
  if (a.output.empty() || a.output == "-") {
    std::cout << instance_to_json(out).dump(1) << "\n";
  } else {
    save_instance(out, a.output);
    std::fprintf(stderr, "wrote %s (solve it: optpipe solve %s)\n", a.output.c_str(), a.output.c_str());
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand(
      "profile", "Measure the reference model's op, copy and message times and write them as an instance");
  cmd->add_option("LAYOUT", args->layout,
                  "instance whose devices, placement, microbatches, memory limits and offload levels are kept")
      ->required();
  cmd->add_option("-o,--output", args->output, "instance file to write (default: stdout)");
  cmd->add_option("--dtype", args->dtype, "double (default) or float")->check(CLI::IsMember({"double", "float"}));
  cmd->add_option("--width", args->width, "MLP width (default 32)")->check(more_than(0));
  cmd->add_option("--rows", args->rows, "samples per microbatch (default 8)")->check(more_than(0));
  cmd->add_option("--layers", args->layers, "layers per stage (default 2)")->check(more_than(0));
  cmd->add_option("--warmup", args->warmup, "untimed runs of each op first (default 3)")->check(at_least(0));
  cmd->add_option("--repeats", args->repeats, "timed runs of each op; the median is kept (default 9)")
      ->check(more_than(0));
  cmd->footer("Example: optpipe profile instances/uniform-4x8.json -o measured.json && optpipe solve measured.json");
  cmd->callback([args] {
    run_profile(*args);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
