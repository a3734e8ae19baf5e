// Fuzz target for the PyTorch CSV reader, model/torch_csv.h from_torch_csv().
//
// The reader needs an instance; the first three bytes pick one (torch_csv_instance below), the
// rest is the CSV text:
//   byte 0: devices D = 1 + b0 % 4
//   byte 1: placement, b1 % 3: 0 one stage per device, 1 V (2D stages), 2 loop (2D stages)
//   byte 2: microbatches m = 1 + b2 % 8; the backward is split when (b2 / 8) % 2 == 0
// (missing bytes count as 0). When the reader accepts the CSV, its schedule has one list per
// device, and when that schedule is structurally valid it must validate or deadlock cleanly and
// survive a round trip (to_torch_csv, read again, gives the same lists). Seeds:
// tests/fuzz/corpus/torch_csv/ (the heuristics' schedules of such instances, exported).
#include <string>

#include "fuzz/feed.h"
#include "model/torch_csv.h"
#include "model/validator.h"

namespace optpipe::fuzz {
namespace {

Instance torch_csv_instance(std::string_view header) {
  const auto byte = [&](std::size_t i) { return i < header.size() ? static_cast<unsigned char>(header[i]) : 0; };
  const int devices = 1 + byte(0) % 4;
  const int placement = byte(1) % 3;
  Instance inst;
  inst.name = "torch-csv-fuzz";
  inst.microbatches = 1 + byte(2) % 8;
  inst.split_backward = (byte(2) / 8) % 2 == 0;
  inst.devices.assign(devices, Device{1e12, 0, 0});
  for (int d = 0; d < devices; ++d) inst.devices[d].pcie_group = d;
  const int stages = placement == 0 ? devices : 2 * devices;
  for (int s = 0; s < stages; ++s) {
    Stage st;
    st.device = placement == 0 ? s : placement == 1 ? (s < devices ? s : 2 * devices - 1 - s) : s % devices;
    st.forward = 1.0 + 0.25 * (s % 3);
    st.backward = 2.0;
    st.weight = inst.split_backward ? 1.0 : 0.0;
    st.activation = 1e9;
    st.weight_activation = inst.split_backward ? 5e8 : 0.0;
    inst.stages.push_back(st);
  }
  inst.comm.assign(stages - 1, 0.1);
  return inst;
}

}  // namespace

void feed_torch_csv(std::string_view bytes) {
  const std::size_t header = bytes.size() < 3 ? bytes.size() : 3;
  const Instance inst = torch_csv_instance(bytes.substr(0, header));
  const Schedule sch = from_torch_csv(inst, std::string(bytes.substr(header)));
  if (sch.num_devices() != inst.num_devices()) throw FeedBug("from_torch_csv returned a list count other than the devices'");
  if (!check_structure(inst, sch, 1).empty()) return;  // the validator's business, not the reader's
  const Validation v = validate(inst, sch, SimOptions::quiet());
  if (!v.sim) throw FeedBug("a structurally valid schedule was not simulated");
  const std::string csv = to_torch_csv(inst, sch);
  if (from_torch_csv(inst, csv).devices != sch.devices) throw FeedBug("torch CSV round trip changed the lists: " + csv);
}

}  // namespace optpipe::fuzz

OPTPIPE_FUZZ_ENTRY(optpipe::fuzz::feed_torch_csv)
