// SPDX-License-Identifier: GPL-3.0-or-later
// The closed-form per-rank memory model, in the ledger's six categories. Model
// states follow the ZeRO paper (Rajbhandari et al. 2020, sec. 3 and 5), with
// Ψ parameters, Nd data-parallel ranks and K bytes of optimizer state per
// parameter:
//   fp32 Adam:  4Ψ parameters + 4Ψ gradients + 8Ψ optimizer states (m, v)
//   mixed:      2Ψ + 2Ψ + 12Ψ (fp32 master weights, m, v): the paper's 16Ψ
//   ZeRO-1 shards the optimizer states (K Ψ/Nd), ZeRO-2 also the gradients,
//   ZeRO-3 also the parameters. Shards are the engine's: ceil(Ψ/Nd) each,
//   the last one shorter (parallel/zero.h).
// With a pipeline, Ψ is the stage's Ψ_s. Every number carries its formula.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_ledger.h"
#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"
#include "config/run_config.h"

namespace shardscope {

struct RankMemory {
  int rank = 0, dp_rank = 0, stage = 0;  // grid order: rank = stage * dp + dp_rank (parallel/grid.h)
  StageLayers layers;
  std::int64_t stage_parameters = 0;  // Ψ_s: parameters this rank's stage holds
  int micro_batches_in_flight = 1;
  MemoryBytes bytes;  // on the GPU, by ledger category
  std::array<std::string, kMemoryCategoryCount> formulas;
  std::int64_t host_bytes = 0;  // moved to CPU memory by offload
  std::string host_formula;

  std::int64_t total() const { return bytes.total(); }
  // The ZeRO paper's model states: parameters + gradients + optimizer states (16Ψ before sharding).
  std::int64_t model_states() const {
    return bytes[MemoryCategory::parameters] + bytes[MemoryCategory::gradients] +
           bytes[MemoryCategory::optimizer_states];
  }
  const std::string& formula(MemoryCategory category) const { return formulas[static_cast<std::size_t>(category)]; }
};

struct MemoryEstimate {
  std::vector<RankMemory> ranks;  // by global rank
  // True when the engine runs this exact layout: its ledger must then equal the
  // prediction byte for byte (tests/engine/test_estimate.cpp). Otherwise a model.
  bool engine_exact = false;
  std::string basis;  // why it is exact, or what keeps it a model

  int fullest_rank() const;  // the rank with the largest total (the one that must fit)
  std::int64_t fullest_total() const {
    return ranks.empty() ? 0 : ranks[static_cast<std::size_t>(fullest_rank())].total();
  }
  std::int64_t cluster_total() const;  // sum over all ranks
};

// Throws ConfigError for settings the model cannot express (e.g. ShardScope
// activations for a model the kernels do not implement, --seq beyond the positions).
MemoryEstimate estimate_memory(const ModelShape& model, const EstimateSettings& settings);
// The same with the run's own plan (plan/run_plan.h), not a second one: `plan`
// must be of settings.plan_layout() (std::invalid_argument if its grid differs).
MemoryEstimate estimate_memory(const ModelShape& model, const EstimateSettings& settings, const ShardingPlan& plan);

// The run the engine would train for these settings (model = the preset).
RunConfig to_run_config(const ModelShape& model, const EstimateSettings& settings);
// Why the engine cannot run (and measure) this layout today; empty if it can.
std::string engine_gap(const ModelShape& model, const EstimateSettings& settings);

// The estimator's bytes for each rank of a run the engine trains (its preset
// model and settings_for_run): what the trainer checks against the machine
// and reports on out-of-memory, and what the GUI draws beside the ledger.
// Empty for a run the estimator cannot model (the run's own validation says why).
std::vector<MemoryBytes> predict_run_memory(const RunConfig& config);
// With the run's plan, built once (the trainer's, a view's).
std::vector<MemoryBytes> predict_run_memory(const RunConfig& config, const ShardingPlan& plan);

// Bytes per parameter of each model state (the ZeRO paper's 2 + 2 + 12 or 4 + 4 + 8).

}  // namespace shardscope
