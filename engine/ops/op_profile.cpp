// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace shardscope {

void OpProfile::add(const char* op, double seconds, double flops, double bytes) {
  std::lock_guard lock(mutex_);
  OpStats& s = ops_[op];
  ++s.calls;
  s.seconds += seconds;
  s.flops += flops;
  s.bytes += bytes;
}

std::map<std::string, OpStats> OpProfile::snapshot() const {
  std::lock_guard lock(mutex_);
  return ops_;
}

void OpProfile::reset() {
  std::lock_guard lock(mutex_);
  ops_.clear();
}

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Times every op between two device waits.
class ProfilingObserver final : public OpObserver {
 public:
  explicit ProfilingObserver(OpProfile& profile) : profile_(profile) {}
  void observe(Backend& inner, const OpCall& call) override {
    using clock = std::chrono::steady_clock;
    inner.synchronize();  // the op's time starts when the device is idle
    const auto start = clock::now();
    call.run();
    inner.synchronize();
    profile_.add(call.op, std::chrono::duration<double>(clock::now() - start).count(), call.flops, call.bytes);
  }

 private:
  OpProfile& profile_;
};

}  // namespace

std::unique_ptr<Backend> make_profiling_backend(std::unique_ptr<Backend> inner, OpProfile& profile) {
  return make_observed_backend(std::move(inner), std::make_unique<ProfilingObserver>(profile));
}

std::string format_op_profile(const std::map<std::string, OpStats>& ops, int steps, double step_seconds) {
  std::vector<std::pair<std::string, OpStats>> rows(ops.begin(), ops.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.seconds != b.second.seconds ? a.second.seconds > b.second.seconds : a.first < b.first;
  });
  double total = 0.0;
  for (const auto& [op, s] : rows) total += s.seconds;
  const double per = steps > 0 ? 1.0 / steps : 1.0;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %10s %10s %7s %9s %9s\n", "op", "calls/step", "ms/step", "share", "TFLOP/s",
                "GB/s");
  out += line;
  for (const auto& [op, s] : rows) {
    char tflops[32] = "", gbps[32] = "";
    if (s.seconds > 0 && s.flops > 0) std::snprintf(tflops, sizeof tflops, "%.2f", s.flops / s.seconds / 1e12);
    if (s.seconds > 0 && s.bytes > 0) std::snprintf(gbps, sizeof gbps, "%.1f", s.bytes / s.seconds / 1e9);
    std::snprintf(line, sizeof line, "%-24s %10.1f %10.3f %6.1f%% %9s %9s\n", op.c_str(), d(s.calls) * per,
                  s.seconds * per * 1e3, total > 0 ? 100.0 * s.seconds / total : 0.0, tflops, gbps);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-24s %10s %10.3f\n", "all timed ops", "", total * per * 1e3);
  out += line;
  if (step_seconds > 0) {
    std::snprintf(line, sizeof line, "%-24s %10s %10.3f   (communication, host work and waits)\n", "rest of the step",
                  "", std::max(0.0, step_seconds - total * per) * 1e3);
    out += line;
  }
  return out;
}

}  // namespace shardscope
