// SPDX-License-Identifier: GPL-3.0-or-later
// A mixture-of-experts run's figures step by step, for the tests that compare
// a layout with one rank (test_expert_parallel, test_moe_pipeline).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/mixture_of_experts.h"
#include "train/trainer.h"

namespace shardscope::testing {

struct MoeTrace {
  std::vector<double> losses, norms, aux;
  std::vector<std::int64_t> dropped;
  std::vector<std::vector<std::int64_t>> routing;  // per step: the choices each expert kept, per MoE layer
};

inline MoeTrace moe_trace_of(const RunConfig& config, EventSink* sink = nullptr) {
  Trainer trainer(config, sink);
  MoeTrace trace;
  trainer.run([&](const StepMetrics& m) {
    trace.losses.push_back(m.loss);
    trace.norms.push_back(m.grad_norm);
    trace.aux.push_back(m.moe->aux_loss());
    trace.dropped.push_back(m.moe->dropped);
    trace.routing.push_back(m.moe->tokens_per_expert);
  });
  return trace;
}

// Over the first `steps` steps.
inline double worst_relative_difference(const std::vector<double>& a, const std::vector<double>& b, std::size_t steps) {
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min({a.size(), b.size(), steps}); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
  return worst;
}

}  // namespace shardscope::testing
