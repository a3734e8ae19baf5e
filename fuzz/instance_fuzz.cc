// Fuzz target for the instance reader, model/instance_io.h parse_instance().
//
// Feeds the bytes as the text of an instance file (optpipe-instance/1). When the reader accepts
// them, the instance must survive a round trip (instance_to_json, dumped and read again, gives
// the same document) and answer what every consumer asks at once (placement, stages per device,
// busy times, the quick infeasibility check) without trouble. Seeds: instances/ and
// tests/data/ (scripts/fuzz.sh), tests/fuzz/corpus/instance/.
#include <cmath>
#include <string>
#include <vector>

#include "fuzz/feed.h"
#include "model/instance_io.h"
#include "model/validator.h"

namespace optpipe::fuzz {

void feed_instance(std::string_view bytes) {
  std::vector<std::string> warnings;
  const Instance inst = parse_instance(std::string(bytes), &warnings);
  const nlohmann::json doc = instance_to_json(inst);
  const Instance again = parse_instance(doc.dump());
  if (instance_to_json(again) != doc) throw FeedBug("instance round trip changed the document: " + doc.dump());
  if (inst.num_devices() < 1 || inst.num_stages() < 1 || inst.microbatches < 1) {
    throw FeedBug("accepted an instance without devices, stages or microbatches");
  }
  (void)inst.placement();
  std::size_t placed = 0;
  for (const auto& stages : inst.stages_by_device()) placed += stages.size();
  if (placed != inst.stages.size()) throw FeedBug("stages_by_device lost a stage");
  for (int d = 0; d < inst.num_devices(); ++d) {
    if (!std::isfinite(inst.busy_time(d))) throw FeedBug("device " + std::to_string(d) + " has a busy time that is not finite");
  }
  (void)obviously_infeasible(inst);
}

}  // namespace optpipe::fuzz

OPTPIPE_FUZZ_ENTRY(optpipe::fuzz::feed_instance)
