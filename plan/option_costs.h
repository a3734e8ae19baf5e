// What an option costs beyond its pipeline schedule, from the generator's tensor- and
// data-parallel cost model (instances/generator/parallelism.h): each pipeline device's
// data-parallel gradient synchronisation, and from them and a schedule the time per global batch
// and the tokens per second.
//
// Time per global batch = max over devices d of (end of d's last op + sync_d): each device's
// synchronisation starts when its own last op (its last W) ends and runs beside the other
// devices' drain, never beside its own backward; the iteration ends with the last one. With one
// replica (d = 1) it is the makespan. A lower bound for any schedule of the instance: the
// makespan's lower bound + the least sync_d (the device that ends last waits at least that).
// Options with different microbatch counts are comparable only this way (a makespan covers
// b·m sequences per replica, the time per batch all B of them).
// Cost: O(S) for the syncs, O(D) for the times.
#pragma once

#include <vector>

#include "instances/generator/generate.h"
#include "model/instance.h"
#include "model/simulator.h"
#include "plan/option_space.h"

namespace optpipe::plan {

// sync_d in ms for every device of `generated` (its stages' parameters per GPU).
std::vector<double> dp_sync_per_device(const gen::GenerateOptions& options, const gen::Generated& generated);

// The end of each device's last compute op in a simulation with its timeline (an R's entry
// starts and ends when it is requested, at the end of the compute op before it, so it never
// raises the maximum).
std::vector<double> device_ends(const SimResult& sim);

double time_per_batch(const std::vector<double>& device_ends, const std::vector<double>& sync);
double time_lower_bound(double makespan_bound, const std::vector<double>& sync);
// Sequences x tokens per sequence per second of `time_ms`.
double tokens_per_second(int global_batch, int seq, double time_ms);

}  // namespace optpipe::plan
