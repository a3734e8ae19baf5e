// Fuzz target for the schedule reader, model/schedule_io.h parse_schedule().
//
// Feeds the bytes as the text of a schedule file (optpipe-schedule/1). When the reader accepts
// them, the schedule must survive both writers: schedule_to_text (the file form) and
// schedule_to_json, each read again, give the same lists and fields. Seeds: tests/data/
// (scripts/fuzz.sh) and tests/fuzz/corpus/schedule/ (heuristic and solver schedules of the
// shipped instances).
#include <string>

#include "fuzz/feed.h"
#include "model/schedule_io.h"

namespace optpipe::fuzz {
namespace {

bool same(const Schedule& a, const Schedule& b) {
  return a.instance == b.instance && a.devices == b.devices && a.makespan == b.makespan && a.bubble == b.bubble &&
         a.bound == b.bound && a.gap == b.gap && a.peak_memory == b.peak_memory && a.status == b.status &&
         a.solver == b.solver;
}

}  // namespace

void feed_schedule(std::string_view bytes) {
  const Schedule sch = parse_schedule(std::string(bytes));
  const std::string text = schedule_to_text(sch);
  if (!same(parse_schedule(text), sch)) throw FeedBug("schedule round trip through schedule_to_text changed it: " + text);
  if (!same(schedule_from_json(schedule_to_json(sch)), sch)) throw FeedBug("schedule round trip through schedule_to_json changed it");
}

}  // namespace optpipe::fuzz

OPTPIPE_FUZZ_ENTRY(optpipe::fuzz::feed_schedule)
