#include "tests/test_util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

#include "model/action.h"
#include "model/instance_io.h"
#include "tests/test_paths.h"

namespace optpipe::test_support {

Instance uniform_instance(int p, int m, double f, double b, double w, double comm, double activation,
                          double weight_activation, double limit) {
  Instance inst;
  inst.name = "uniform-" + std::to_string(p) + "x" + std::to_string(m);
  inst.microbatches = m;
  inst.comm.assign(static_cast<std::size_t>(p - 1), comm);
  for (int d = 0; d < p; ++d) inst.devices.push_back({limit, 0.0, d});
  for (int s = 0; s < p; ++s) {
    Stage st;
    st.device = s;
    st.forward = f;
    st.backward = b;
    st.weight = w;
    st.activation = activation;
    st.weight_activation = weight_activation;
    inst.stages.push_back(st);
  }
  return inst;
}

Schedule lists(const Instance& inst, const std::vector<std::vector<std::string>>& devices) {
  Schedule s;
  s.instance = inst.name;
  for (const auto& list : devices) {
    std::vector<Action> actions;
    for (const auto& text : list) {
      std::string why;
      auto a = parse_action(text, &why);
      EXPECT_TRUE(a.has_value()) << why;
      if (a) actions.push_back(*a);
    }
    s.devices.push_back(std::move(actions));
  }
  return s;
}

Schedule lists(const Instance& inst, std::initializer_list<std::initializer_list<const char*>> devices) {
  std::vector<std::vector<std::string>> v;
  for (const auto& list : devices) v.emplace_back(list.begin(), list.end());
  return lists(inst, v);
}

Instance relaxation_data(const std::string& name) {
  return load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/" + name + ".json");
}

Schedule offload_slow_witness(const Instance& inst) {
  static const char* const kLines[] = {
      "F0.0 F0.1@1 R0.1 F0.2@1 R0.2 B0.0 W0.0 F0.3@1 R0.3 B0.1 W0.1 F0.4 B0.2 W0.2 B0.3 W0.3 F0.5 B0.4 W0.4 "
      "F0.6@1 R0.6 F0.7 B0.5 W0.5 B0.6 W0.6 B0.7 W0.7",
      "F1.0 F1.1 B1.0 W1.0 F1.2 B1.1 W1.1 F1.3@1 R1.3 B1.2 W1.2 F1.4 B1.3 B1.4 F1.5 W1.3 W1.4 F1.6 B1.5 W1.5 "
      "F1.7 B1.6 W1.6 B1.7 W1.7",
      "F2.0 F2.1 B2.0 W2.0 B2.1 W2.1 F2.2 F2.3 B2.2 W2.2 B2.3 W2.3 F2.4 B2.4 F2.5 W2.4 B2.5 F2.6 W2.5 F2.7 "
      "B2.6 W2.6 B2.7 W2.7",
      "F3.0 B3.0 W3.0 F3.1 B3.1 W3.1 F3.2 B3.2 F3.3 W3.2 B3.3 W3.3 F3.4 B3.4 W3.4 F3.5 B3.5 W3.5 F3.6 B3.6 "
      "F3.7 B3.7 W3.6 W3.7",
  };
  std::vector<std::vector<std::string>> devices;
  for (const char* line : kLines) {
    std::istringstream in(line);
    devices.emplace_back(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>());
  }
  return lists(inst, devices);
}

Instance random_instance(std::mt19937& rng, const RandomInstanceOptions& o) {
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto coin = [&](double p) { return uni(0, 1) < p; };
  Instance inst;
  inst.name = "random";
  const int D = pick(o.min_devices, o.max_devices);
  inst.microbatches = pick(o.min_microbatches, o.max_microbatches);
  inst.split_backward = coin(o.split_probability);
  int S = D;
  std::vector<int> device_of(D);
  for (int s = 0; s < D; ++s) device_of[s] = s;
  if (o.allow_multi_stage && D >= 1 && coin(0.4)) {
    S = 2 * D;
    device_of.resize(S);
    const int kind = pick(0, 2);
    for (int s = 0; s < S; ++s) {
      if (kind == 0) device_of[s] = s < D ? s : 2 * D - 1 - s;  // V
      else if (kind == 1) device_of[s] = s % D;                 // loop
      else device_of[s] = s < D ? s : pick(0, D - 1);          // random, every device used
    }
  }
  if (coin(0.3)) inst.offload_levels = {0.0, 0.5, 1.0};
  const double comm = coin(0.5) ? 0.0 : uni(0, 0.3);
  inst.comm.assign(static_cast<std::size_t>(S - 1), comm);
  double max_act = 0;
  for (int s = 0; s < S; ++s) {
    Stage st;
    st.device = device_of[s];
    st.forward = uni(0.5, 2.0);
    st.backward = uni(0.5, 2.5);
    st.weight = uni(0.2, 1.5);
    if (coin(0.1)) st.weight = 0;
    st.activation = std::round(uni(0.5, 2.0) * GiB);
    st.weight_activation = inst.split_backward ? std::round(st.activation * uni(0, 0.6)) : 0;
    if (coin(o.offloadable_probability)) {
      st.offload = uni(0.1, 1.5);
      st.reload = uni(0.1, 1.5);
    }
    max_act = std::max(max_act, st.activation);
    inst.stages.push_back(st);
  }
  for (int d = 0; d < D; ++d) {
    Device dev;
    dev.static_memory = 10 * GiB;
    dev.memory_limit = o.tight_memory ? dev.static_memory + max_act * uni(1.0, 3.0) : 1e15;
    dev.pcie_group = coin(0.3) ? 0 : d;
    inst.devices.push_back(dev);
  }
  return inst;
}

Instance random_multi_stage(std::mt19937& rng, int max_microbatches) {
  RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = 3;
  o.min_microbatches = 2;
  o.max_microbatches = max_microbatches;
  o.offloadable_probability = 0.0;
  o.allow_multi_stage = true;
  o.tight_memory = true;
  while (true) {
    Instance inst = random_instance(rng, o);
    if (inst.num_stages() > inst.num_devices()) return inst;
  }
}

Schedule random_valid_schedule(const Instance& inst, std::mt19937& rng, double offload_probability) {
  const int S = inst.num_stages(), m = inst.microbatches;
  const int T = inst.num_compute_types();
  // next[t][s]: next microbatch of type t on stage s (FIFO).
  std::vector<std::vector<int>> next(3, std::vector<int>(S, 0));
  std::vector<std::vector<int>> done(3, std::vector<int>(S, 0));  // count finished in the global order
  Schedule sch;
  sch.instance = inst.name;
  sch.devices.assign(inst.num_devices(), {});
  std::vector<double> level(static_cast<std::size_t>(S) * m, 0.0);
  // Pending reloads per device: (s, j) whose F is placed and R not yet.
  std::vector<std::vector<std::pair<int, int>>> pending(inst.num_devices());
  std::uniform_real_distribution<double> u(0, 1);
  auto is_ready = [&](int t, int s) {
    const int j = next[t][s];
    if (j >= m) return false;
    if (t == 0) return s == 0 || next[0][s - 1] > j;
    if (t == 1) return next[0][s] > j && (s + 1 == S || next[1][s + 1] > j);
    return next[1][s] > j;
  };
  int remaining = T * S * m;
  while (remaining > 0) {
    std::vector<std::pair<int, int>> ready;
    for (int t = 0; t < T; ++t)
      for (int s = 0; s < S; ++s)
        if (is_ready(t, s)) ready.emplace_back(t, s);
    const auto [t, s] = ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng)];
    const int j = next[t][s]++;
    const int d = inst.stages[s].device;
    auto& list = sch.devices[d];
    // Possibly issue pending reloads of this device first (random positions).
    auto& pend = pending[d];
    for (std::size_t i = 0; i < pend.size();) {
      const bool forced = (t == 1 && pend[i] == std::make_pair(s, j));
      if (forced || u(rng) < 0.3) {
        list.push_back(make_r(pend[i].first, pend[i].second));
        pend.erase(pend.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (t == 0) {
      double r = 0;
      if (inst.stages[s].offloadable() && inst.offload_levels.size() > 1 && u(rng) < offload_probability) {
        r = inst.offload_levels[std::uniform_int_distribution<std::size_t>(1, inst.offload_levels.size() - 1)(rng)];
      }
      level[static_cast<std::size_t>(s) * m + j] = r;
      list.push_back(make_f(s, j, r));
      if (r > 0) pend.emplace_back(s, j);
    } else if (t == 1) {
      list.push_back(make_b(s, j));
    } else {
      list.push_back(make_w(s, j));
    }
    --remaining;
  }
  // Reloads of one stage may have been issued out of microbatch order. Sorting the microbatches
  // over that stage's R positions restores FIFO and keeps every R between its F and its B,
  // because F and B of a stage are FIFO too.
  for (auto& list : sch.devices) {
    for (int s = 0; s < S; ++s) {
      std::vector<std::size_t> pos;
      std::vector<int> mbs;
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (list[k].type == OpType::R && list[k].stage == s) {
          pos.push_back(k);
          mbs.push_back(list[k].mb);
        }
      }
      std::sort(mbs.begin(), mbs.end());
      for (std::size_t i = 0; i < pos.size(); ++i) list[pos[i]].mb = mbs[i];
    }
  }
  return sch;
}

void randomise_costs(Instance& inst, std::mt19937& rng) {
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const double comm = uni(0, 1) < 0.5 ? 0.0 : uni(0, 0.5);
  std::fill(inst.comm.begin(), inst.comm.end(), comm);
  for (Stage& st : inst.stages) {
    st.forward = uni(0.3, 2.5);
    st.backward = uni(0.3, 3.0);
    st.weight = uni(0, 1) < 0.1 ? 0.0 : uni(0.1, 2.0);
    st.activation = std::round(uni(0.2, 2.0) * GiB);
    st.weight_activation = inst.split_backward ? std::round(st.activation * uni(0, 1)) : 0.0;
  }
}

void quantize_times(Instance& inst, double q) {
  auto to_q = [&](double t) { return std::round(t / q) * q; };
  for (Stage& st : inst.stages) {
    st.forward = to_q(st.forward);
    st.backward = to_q(st.backward);
    st.weight = to_q(st.weight);
    if (st.offloadable()) {
      st.offload = to_q(*st.offload);
      st.reload = to_q(*st.reload);
    }
  }
  for (double& c : inst.comm) c = to_q(c);
}

void squeeze_memory(Instance& inst, double factor) {
  for (int d = 0; d < inst.num_devices(); ++d) {
    double act = 0;
    for (const Stage& st : inst.stages) {
      if (st.device == d) act = std::max(act, st.activation);
    }
    inst.devices[d].memory_limit = inst.devices[d].static_memory + factor * act;
  }
}

double span_bubble(const Schedule& sch, const SimResult& sim) {
  double worst = 0;
  for (int d = 0; d < sch.num_devices(); ++d) {
    double first = std::numeric_limits<double>::infinity(), last = -first;
    for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
      if (!sch.devices[d][k].is_compute() || !sim.timeline[d][k].done()) continue;
      first = std::min(first, sim.timeline[d][k].start);
      last = std::max(last, sim.timeline[d][k].end);
    }
    if (first <= last) worst = std::max(worst, last - first - sim.busy[d]);
  }
  return worst;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// The folder behind temp_dir(). Only the process that made it removes it: a forked child that
// exits normally must not take its parent's files away.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = testing::TempDir() + "optpipe-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "cannot make a temporary folder %s: %s\n", pattern.c_str(), std::strerror(errno));
      std::abort();
    }
    path_ = pattern + "/";
    owner_ = ::getpid();
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    if (::getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  pid_t owner_ = 0;
};

}  // namespace

const std::string& temp_dir() {
  static const TempFolder folder;
  return folder.path();
}

std::string temp_file(const std::string& tag, const std::string& name) {
  static std::atomic<int> counter{0};
  return temp_dir() + tag + "-" + std::to_string(counter++) + "-" + name;
}

ShellRun run_shell(const std::string& command) {
  const std::string out = temp_file("shell", "output.txt");
  const int rc = std::system((command + " > " + shell_quote(out) + " 2>&1 < /dev/null").c_str());
  ShellRun r;
  r.status = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.output = read_text(out);
  std::filesystem::remove(out);
  return r;
}

MeasuredRun run_measured(const std::vector<std::string>& argv) {
  MeasuredRun r;
  if (argv.empty()) return r;
  const std::string out = temp_file("measured", "output.txt");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // the child: output to the file, then the program
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (fd < 0 || in < 0) _exit(127);
    dup2(in, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid < 0) return r;
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.max_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux: kilobytes
  r.output = read_text(out);
  std::filesystem::remove(out);
  return r;
}

}  // namespace optpipe::test_support

