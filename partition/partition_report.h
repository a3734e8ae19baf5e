// The report of a partition search (partition_search.h): a text table of the splits tried,
// their cheap bounds, memory floors, screened and solved makespans and bounds, against the
// default split; and the same as JSON (`optpipe partition --format json`). With --placement auto,
// one such report per placement and a comparison of their best splits.
// Text rows: the references, then every split that was solved; the others (screened only,
// cut by their bound, over the memory limit) are counted in one line and listed in the JSON.
// Cost: O(trials x S).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "partition/partition_model.h"
#include "partition/partition_search.h"
#include "partition/placement_search.h"

namespace optpipe::partition {

std::string partition_table_text(const PartitionModel& model, const PartitionResult& result);
nlohmann::ordered_json partition_json(const PartitionModel& model, const PartitionResult& result);

// "12.3% below the default split (2,3,3,2)", "the default split is the best", or "" without a
// default split.
std::string versus_default(const PartitionResult& result);

// The same for a search over the placements (placement_search.h): each placement's table, then
// one line per placement with its best split, marked "*" for the best, against the first
// placement's default split; the JSON has each placement's document under "placements".
std::string placements_table_text(const PlacementsResult& result);
nlohmann::ordered_json placements_json(const PlacementsResult& result);
// "30.1% below the default split with one stage per device (2,3,...: 2392.4 ms)", "the default
// split with one stage per device is the best", or "".
std::string versus_reference(const PlacementsResult& result);

}  // namespace optpipe::partition
