// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes each data-parallel rank sends per optimizer step to synchronize
// its model states: as the papers state them, with Ψ' the stage's Ψ_s as the
// plan pads it for the collectives (clock/schedule_summary.h measures them).
// N data-parallel ranks, p and g bytes per parameter and gradient, K = accum ×
// micro-batches micro-steps per step:
//   DDP, ring all-reduce of the gradients (once per step)   2(N−1)/N · gΨ_s
//     Ψ' = Ψ_s: buckets are not padded. A bucket of n elements is cut into N
//     ring chunks, the first n mod N one element longer; rank r sends all but
//     chunk r in the reduce-scatter and all but chunk r+1 in the all-gather,
//     so the mean over the ranks is exact and a rank differs from it by under
//     2 elements per bucket.
//   ZeRO-1, reduce-scatter + all-gather by the flat shards (once per step)
//     (N−1)/N · (g + p)Ψ',  Ψ' = N·ceil(Ψ_s/N)  = 2(N−1)/N · bΨ' when p = g = b
//   ZeRO-2, reduce-scatter every micro-step, all-gather once
//     (N−1)/N · (K·g + p)Ψ',  Ψ' = N·Σ_u ceil(n_u/N) (units: embeddings, layers, head)
//   ZeRO-3, all-gather for forward and for backward, reduce-scatter, every micro-step
//     K(N−1)/N · ((2p + g)Ψ' + e·pE')  = 1.5× DDP when e = 0; E' the embedding
//     unit padded, e the extra gathers of it (model_config.h: the tied head's)
//   naive DataParallel, rank 0: broadcast of the parameters, gather of the gradients
//     (N−1)(p + g)Ψ_s, what rank 0 sends plus what it receives (once per step)
// (Rajbhandari et al. 2020, ZeRO, section 7: ZeRO-1/2 move what DDP moves, ZeRO-3 1.5×.)
#pragma once

#include <cstdint>
#include <string>

#include "plan/sharding_plan.h"

namespace shardscope {

struct DataParallelTraffic {
  double bytes = 0;             // per rank per step (naive: rank 0's sent + received); 0 with one rank
  std::int64_t travelling = 0;  // Ψ' elements
  std::string formula;          // the symbols: "(N−1)/N · (g + p)Ψ'"
  std::string values;           // language-neutral: "N = 4, p = 4, g = 4, Ψ' = N·ceil(Ψ/N) = 1236"
  std::string what;             // in English: "reduce-scatter the gradients, all-gather the updated shards"
  std::string text() const;     // "formula: what; values"
};

// The formula for the data-parallel ranks of a stage with these units (no
// plan of every rank needed: the estimator asks for huge grids).
// extra_embedding_gathers: e above.
DataParallelTraffic data_parallel_traffic(const ShardingRules& rules, const StageUnits& stage, std::int64_t micro_steps,
                                          int extra_embedding_gathers);

}  // namespace shardscope
