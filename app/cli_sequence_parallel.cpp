// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_sequence_parallel.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "estimate/formula_text.h"
#include "estimate/memory_model.h"
#include "train/trainer.h"

namespace shardscope::cli {

namespace {

// Rank 0's activation bytes for `run` as the estimator counts this engine's
// storage (equal to the ledger: tests/engine/test_estimate_ledger.cpp).
std::int64_t estimated_activations(const RunConfig& run) {
  const ModelShape shape = model_shape_from_config(run_model_config(run), run.model);
  return estimate_memory(shape, settings_for_run(run)).ranks.front().bytes[MemoryCategory::activations];
}

}  // namespace

void print_sequence_parallel_activations(const Trainer& trainer, const RunConfig& config) {
  if (!config.sequence_parallel || config.layout.tp() < 2) return;
  const std::vector<int> local = trainer.local_ranks();
  if (std::find(local.begin(), local.end(), 0) == local.end()) return;
  // This run's rank 0 measured; the same run without sequence parallelism from the estimator.
  const std::int64_t sp = trainer.ledger(0).peak()[MemoryCategory::activations];
  RunConfig tp_only = config;
  tp_only.sequence_parallel = false;
  std::int64_t tp = 0;
  try {
    tp = estimated_activations(tp_only);
  } catch (const std::exception&) {
    return;  // a run the estimator does not model (a model file's shape)
  }
  if (tp <= 0) return;
  // Korthikanti et al. 2022, Table 2, one layer in 16 bits: TP keeps sbh(10 + 24/t + 5as/(ht)),
  // TP + SP sbh/t·(34 + 5as/h): they also split the LayerNorm outputs and the dropout masks.
  const ModelConfig model = run_model_config(config);
  const double t = config.layout.tp(), core = 5.0 * model.heads * config.seq / model.channels;
  const double paper_tp = 10.0 + 24.0 / t + core / t, paper_sp = (34.0 + core) / t;
  std::printf(
      "sequence-parallel activations, rank 0: %s bytes (ledger peak) against %s with tensor parallelism alone "
      "(the estimator's count of this engine's storage): %.3f of it, %s bytes less; the paper's per layer "
      "(16-bit, LayerNorm outputs and dropout masks split too) sbh/t·(34 + 5as/h) against sbh(10 + 24/t + "
      "5as/(ht)) = %.1f/%.1f sbh = %.3f with t = %d, a = %d, s = %d, h = %d\n",
      grouped(sp).c_str(), grouped(tp).c_str(), static_cast<double>(sp) / static_cast<double>(tp),
      grouped(tp - sp).c_str(), paper_sp, paper_tp, paper_sp / paper_tp, config.layout.tp(), model.heads, config.seq,
      model.channels);
}

}  // namespace shardscope::cli
