// The report of a plan (plan_runner.h): one comparison table, best first, with each option's
// time per global batch (makespan + data-parallel synchronisation, option_costs.h) and tokens
// per second, its solved makespan and bound, peak memory against the limit, the bottleneck
// (bottleneck.h) and its split; a summary of what was screened out and why; the best option per
// placement against the best with one stage per device. As text (`optpipe plan`) and as JSON
// (optpipe-plan/1: every option, screened out or solved, with the same fields).
// Text rows: the solved options, the first `rows` of them; the others are counted.
// Cost: O(options x S).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/plan_runner.h"

namespace optpipe::plan {

inline constexpr const char* kPlanFormat = "optpipe-plan/1";

std::string plan_table_text(const PlanRequest& request, const PlanResult& result, int rows = 20);
nlohmann::ordered_json plan_json(const PlanRequest& request, const PlanResult& result);

// "llama2-13b on 8 x h100-sxm (79.6 GiB each), global batch 64 x 4096 tokens, ZeRO-1, offload levels 0, 1".
std::string request_line(const PlanRequest& request);
// The best option per placement and how it compares with the best one-stage-per-device option;
// "" when fewer than two placements were solved.
std::string placement_comparison(const PlanResult& result);

}  // namespace optpipe::plan
