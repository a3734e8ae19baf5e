// One-machine bound per device: the device's ops that have not started, each with a release
// (its head), a processing time and a tail, on one machine with preemption allowed. Jackson's
// preemptive schedule (always run the released op with the largest tail) minimises
// max(completion + tail) for that relaxation (Jackson 1956; Carlier, "The one-machine
// sequencing problem", EJOR 11(1), 1982, §2), so its value bounds the makespan from below.
// Usually the tightest cheap bound when one device is the bottleneck.
//
// Complexity: O(n log n) for the n ops of the device (the sort O(n^2) in the worst case up to
// 64 ops, about O(n · runs) on their usual order).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/bound_view.h"

namespace optpipe {

struct OneMachineJob {
  double release, processing, tail;
};

// ---- host and device cores (hd.h): plain arrays, caller's scratch ----------------------------

struct JacksonEntry {  // a released job in Jackson's rule: its tail and the processing it has left
  double tail, left;
};

OPTPIPE_HD inline bool jackson_before(const JacksonEntry& a, const JacksonEntry& b) {  // max-heap order
  return a.tail < b.tail || (a.tail == b.tail && a.left < b.left);
}

OPTPIPE_HD inline void jackson_push(JacksonEntry* heap, int& n, JacksonEntry e) {
  int i = n++;
  while (i > 0) {
    const int parent = (i - 1) / 2;
    if (!jackson_before(heap[parent], e)) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = e;
}

OPTPIPE_HD inline JacksonEntry jackson_pop(JacksonEntry* heap, int& n) {
  const JacksonEntry top = heap[0];
  const JacksonEntry last = heap[--n];
  int i = 0;
  while (true) {
    int c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && jackson_before(heap[c], heap[c + 1])) ++c;
    if (!jackson_before(last, heap[c])) break;
    heap[i] = heap[c];
    i = c;
  }
  if (n > 0) heap[i] = last;
  return top;
}

// Jobs by release, ascending (in place, no recursion): an insertion sort up to 64 jobs, a
// heapsort past it. A device's jobs come as a few runs sorted already (each stage and type's
// heads grow with the microbatch) and, in the device relaxation (device_relaxation.h), mostly
// released at one instant, its free time; there the insertion sort moves little, and it took
// Jackson's share of small-v-02's tree (bench/solvers/random_small.py, one thread) from 26% to
// 21% of the samples (`perf`), the heapsort's O(n log n) on n = 20-40 being most of it.
OPTPIPE_HD inline void sort_jobs_by_release(OneMachineJob* a, int n) {
  if (n <= 64) {
    for (int i = 1; i < n; ++i) {
      const OneMachineJob x = a[i];
      int k = i;
      while (k > 0 && x.release < a[k - 1].release) {
        a[k] = a[k - 1];
        --k;
      }
      a[k] = x;
    }
    return;
  }
  auto sift = [a](int i, int size) {
    const OneMachineJob x = a[i];
    while (true) {
      int c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size && a[c].release < a[c + 1].release) ++c;
      if (!(x.release < a[c].release)) break;
      a[i] = a[c];
      i = c;
    }
    a[i] = x;
  };
  for (int i = n / 2 - 1; i >= 0; --i) sift(i, n);
  for (int end = n - 1; end > 0; --end) {
    const OneMachineJob t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift(0, end);
  }
}

// Jackson's preemptive value of jobs[0..n) (reordered); `heap` holds n entries.
OPTPIPE_HD inline double jackson_core(OneMachineJob* jobs, int n, JacksonEntry* heap) {
  if (n == 0) return 0.0;
  sort_jobs_by_release(jobs, n);
  int ready = 0, next = 0;
  double t = jobs[0].release, bound = 0;
  while (next < n || ready > 0) {
    if (ready == 0 && t < jobs[next].release) t = jobs[next].release;
    while (next < n && jobs[next].release <= t) {
      jackson_push(heap, ready, {jobs[next].tail, jobs[next].processing});
      ++next;
    }
    JacksonEntry e = jackson_pop(heap, ready);
    // Run it until it finishes or the next release (which may preempt it).
    const double until = next < n ? jobs[next].release : t + e.left;
    const double run = hd::min(e.left, until - t);
    t += run;
    e.left -= run;
    if (e.left <= 1e-12) {
      bound = hd::max(bound, t + e.tail);
    } else {
      jackson_push(heap, ready, e);
    }
  }
  return bound;
}

// Jackson's preemptive value from its closed form, for jobs given by tail, descending, all
// released at `t` or later: the value is the largest r(I) + p(I) + q(I) over job sets I (least
// release, total processing, least tail; Carlier 1982, §2), and for a threshold pair (rho, theta)
// the best set is every job with release >= rho and tail >= theta. Scanning the jobs by tail
// gives rho = t in one pass (every job qualifies); the other rhos are the "late" jobs' releases
// (release > t), each a pass over the late ones. O(n + late^2), no sort, no heap: the device
// relaxation's search (device_relaxation.h) asks this at every node, where the ops left are
// mostly released at its free time. It declines (add() false, or -infinity from
// jackson_by_tail) when more than `max_late` jobs are late; the caller then runs jackson_core.
// `late` holds max_late entries. Equal to jackson_core up to rounding
// (tests/bounds_test.cc, against a unit-step simulation of the rule).
struct JacksonByTail {
  double t = 0;
  OneMachineJob* late = nullptr;
  int max_late = 0;
  int n = 0, nl = 0;
  double sum = 0, best = -hd::inf();

  // The next job by tail (no larger than every tail added before); false: too many late.
  OPTPIPE_HD bool add(double release, double processing, double tail) {
    ++n;
    sum += processing;
    best = hd::max(best, sum + tail);
    if (release > t) {
      if (nl == max_late) return false;
      late[nl++] = {release, processing, tail};
    }
    return true;
  }
  // With `enough`: returns as soon as the value is known to be at least that (a caller that only
  // compares it with a threshold needs no more), with a lower bound on it of at least `enough`
  // then (the largest set seen so far); below `enough`, the value itself.
  OPTPIPE_HD double value(double enough = hd::inf()) const {
    if (n == 0) return 0.0;
    double bound = t + best;
    if (bound >= enough) return bound;
    for (int a = 0; a < nl; ++a) {
      const double rho = late[a].release;
      double s = 0, v = -hd::inf();
      for (int x = 0; x < nl; ++x) {
        if (late[x].release < rho) continue;
        s += late[x].processing;
        v = hd::max(v, s + late[x].tail);
      }
      bound = hd::max(bound, rho + v);
      if (bound >= enough) return bound;
    }
    return bound;
  }
};

OPTPIPE_HD inline double jackson_by_tail(const OneMachineJob* jobs, int n, double t, OneMachineJob* late,
                                         int max_late, double enough = hd::inf()) {
  JacksonByTail j{t, late, max_late};
  for (int x = 0; x < n; ++x) {
    if (!j.add(jobs[x].release, jobs[x].processing, jobs[x].tail)) return -hd::inf();
  }
  return j.value(enough);
}

// Device d's one-machine bound from the node's heads [op] (NaN: started): Jackson's preemptive
// schedule of its ops not started. Scratch: `jobs` and `heap` with room for the device's ops.
OPTPIPE_HD inline double one_machine_device_core(const BoundProblemView& p, const double* head, int d,
                                                 OneMachineJob* jobs, JacksonEntry* heap) {
  int n = 0;
  for (int s = 0; s < p.S; ++s) {
    if (p.device_of[s] != d) continue;
    for (int type = 0; type < p.types; ++type) {
      for (int j = 0; j < p.m; ++j) {
        const int o = p.op(type, s, j);
        const double h = head[o];
        if (hd::known(h)) jobs[n++] = {h, p.dur[type * p.S + s], p.op_tails[o]};
      }
    }
  }
  return jackson_core(jobs, n, heap);
}

// The largest one-machine bound over the devices from the node's heads [op] (NaN: started).
// Scratch: `jobs` and `heap` with room for the most ops of one device (num_ops() is enough).
OPTPIPE_HD inline double one_machine_core(const BoundProblemView& p, const double* head, OneMachineJob* jobs,
                                          JacksonEntry* heap) {
  double best = 0;
  for (int d = 0; d < p.D; ++d) best = hd::max(best, one_machine_device_core(p, head, d, jobs, heap));
  return best;
}

// ---- std::vector wrappers (the scalar search path) -------------------------------------------

// max over jobs of (preemptive completion + tail) under Jackson's rule; 0 for no jobs.
// `jobs` is reordered.
double jackson_preemptive_bound(std::vector<OneMachineJob>& jobs);

// The largest one-machine bound over the devices, at a node whose heads are `head`.
double one_machine_bound(const BoundProblem& problem, const std::vector<double>& head,
                         std::vector<OneMachineJob>& scratch);

}  // namespace optpipe
