// SPDX-License-Identifier: GPL-3.0-or-later
// Where a step's time goes, op by op. A profiling backend forwards every call
// to the rank's real backend and times it on the host, waiting for the device
// before and after the op (Backend::synchronize), so a GPU op's time is its run
// time plus one launch and one wait (some microseconds). The waits also stop
// ops from overlapping, so a profiled run is slower than a plain one: use it to
// see the shares, and the plain run for throughput.
//
// Each op also gets its nominal work (ops/op_work.h: FLOPs of its matmuls, the
// bytes it must move), so the table can say how close an op runs to the
// device's peak FLOP/s or bandwidth.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ops/backend.h"
#include "ops/op_work.h"

namespace shardscope {

struct OpStats {
  std::int64_t calls = 0;
  double seconds = 0.0;
  double flops = 0.0;  // nominal, summed over calls (0 for ops that are not matmuls)
  double bytes = 0.0;  // nominal minimum traffic, summed over calls
};

// Thread-safe accumulator shared by the profiling backend and the reader.
class OpProfile {
 public:
  void add(const char* op, double seconds, double flops, double bytes);
  std::map<std::string, OpStats> snapshot() const;
  void reset();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, OpStats> ops_;
};

// Wraps `inner` (owned); every op is timed into `profile`, which must outlive it.
std::unique_ptr<Backend> make_profiling_backend(std::unique_ptr<Backend> inner, OpProfile& profile);

// A table, most expensive op first: op, calls per step, ms per step, share of
// the timed ops, achieved TFLOP/s and GB/s, then the step time the ops do not
// cover (communication, host work, waits). `steps` is how many steps the
// profile spans and `step_seconds` their mean wall time (0: not shown).
std::string format_op_profile(const std::map<std::string, OpStats>& ops, int steps, double step_seconds);

}  // namespace shardscope
