// SPDX-License-Identifier: GPL-3.0-or-later
// What the tests that hold a parallel layout against one rank share: a short run's
// configuration, the trace of its losses and gradient norms, and the worst relative
// difference between two traces.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "train/trainer.h"

namespace shardscope::testing {

// 20 steps of a tiny model on short sequences (batch 8 × 32): seconds on 2 cores. Batch 4
// wobbles more (a step whose gradient norm jumps magnifies float noise), and lr 3e-3 spikes
// at step 11 of this batch, which magnifies it 100-fold.
inline RunConfig short_run(const char* model = "gpt-tiny") {
  RunConfig c;
  c.model = model;
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 1e-3f;
  c.threads = 2;
  return c;
}

// The pipeline schedules' run (interleaved, ZB-V, the split backward): gpt-tiny or a BERT at
// pp 2 × m 4, lr 3e-3, otherwise short_run's.
inline RunConfig short_pipeline_run(const std::string& model) {
  RunConfig c = short_run(model.c_str());
  c.lr = 3e-3f;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  return c;
}

// The fp32 losses of a run, step by step.
inline std::vector<float> losses_of(const RunConfig& config) {
  Trainer trainer(config);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}

struct Trace {
  std::vector<double> losses, norms, evals;
};

inline Trace trace_of(const RunConfig& config) {
  Trainer trainer(config);
  Trace trace;
  trainer.run([&](const StepMetrics& m) {
    trace.losses.push_back(m.loss);
    trace.norms.push_back(m.grad_norm);
    if (m.eval_loss) trace.evals.push_back(*m.eval_loss);
  });
  return trace;
}

// max |a − b| / |b| over the steps; b is the reference.
inline double worst_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
  return worst;
}

}  // namespace shardscope::testing
