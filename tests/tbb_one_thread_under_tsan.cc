// Compiled into every test program of a TSan build only (scripts/test.sh --sanitize=thread,
// tests/CMakeLists.txt): TBB runs every parallel algorithm and task group on one thread there.
//
// Why: Debian's libtbb is not built with -fsanitize=thread, so TSan cannot see the
// happens-before edges of TBB's scheduler (a task spawned, stolen, joined): the scheduler code
// that TBB's headers inline into our programs (partitioner nodes, start_for, task_group's wait
// context) and every task body reading what was written before it was spawned show as races
// (44 such reports in the first TSan run of the threaded areas, every one with TBB's scheduler
// between the two accesses). With one TBB thread those false reports are gone, and TSan checks
// the threads that are ours: the executor's device threads and copy streams, the transports, the
// solver's monitor thread, online re-scheduling's solver thread and the stop flags. The
// TBB-parallel parts (the solver's workers, the parallel heuristics, the batched bounds) are
// covered instead by the tests that give the same results with 1 and 2 threads.
#include <oneapi/tbb/global_control.h>

namespace {

const oneapi::tbb::global_control kOneTbbThread(oneapi::tbb::global_control::max_allowed_parallelism, 1);

}  // namespace
