// SPDX-License-Identifier: GPL-3.0-or-later
// Activation memory of one micro-batch on one pipeline stage, two ways:
//  - ShardScope's kernels, exactly: the floats engine/model/activations.h
//    carves (what forward keeps: `activations`; backward's scratch: `workspace`);
//  - other implementations, by the standard per-layer formula of Korthikanti
//    et al. 2022 ("Reducing Activation Recomputation in Large Transformer
//    Models", Table 2), with 16-bit activations and t = 1:
//      none       sbh(34 + 5as/h)
//      selective  34 sbh             (the attention core is recomputed)
//      full       2 sbh              (only the layer input is kept)
//    In fp32 the 2-byte terms double and the 1-byte dropout masks do not:
//    sbh(66 + 9as/h), 66 sbh and 4 sbh.
// And how many micro-batches a stage holds at once under a pipeline schedule.
#pragma once

#include <cstdint>
#include <string>

#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"
#include "ops/backend.h"

namespace shardscope {

struct ActivationBytes {
  std::int64_t activations = 0;  // kept by forward for backward (one micro-batch)
  std::int64_t workspace = 0;    // backward's scratch
  std::string activations_formula;
  std::string workspace_formula;
};

// Exact for ShardScope's kernels, which keep fp32 activations at every
// precision (a mixed-precision run rounds matmul operands, not what it stores
// for backward). Throws ConfigError for selective recompute, which the kernels
// do not have (they recompute whole layers).
// `attention`: how the backend runs attention (ops/backend.h), which decides
// whether each layer keeps its (b, a, s, s) probabilities or only (b, a, s) rows.
ActivationBytes shardscope_activation_bytes(const ModelConfig& config, const StageLayers& stage, int micro_batch_size,
                                            int seq, Recompute recompute,
                                            AttentionKernel attention = AttentionKernel::materialized);

// Korthikanti et al. per layer, plus the stage's ends: the first stage keeps the
// embedding output and its dropout mask (sbh(d + 1), d = bytes per value); the
// last keeps the final norm's input (d·sbh) and the fp32 logits for the loss
// (4sbv). Under full recompute one layer's whole set is live again during its
// backward. Workspace: the logits' gradient (4sbv) and one layer's activation
// gradients (about one layer's activations). A model, for any implementation.
// With tensor parallelism (stage.tp_size = t > 1) the paper's sbh(10 + 24/t + 5as/(ht))
// per layer and the vocabulary-parallel logits 4sbv/t; with sequence parallelism
// sbh/t·(34 + 5as/h), the embedding output and final norm input split as well.
ActivationBytes formula_activation_bytes(const ModelShape& model, const StageLayers& stage, int micro_batch_size,
                                         int seq, Recompute recompute, Precision precision,
                                         bool sequence_parallel = false);

// Micro-batches whose activations stage `stage` holds at its peak, as the
// engine sizes its activation slots: peak_in_flight of its own schedule
// (plan/pipeline_schedule.h). Its closed form there, GPipe m and 1F1B
// min(m, p - s), answers for schedules too large to build quickly (p·m > 4096).
int micro_batches_in_flight(PipelineScheduleKind schedule, int stages, int stage, int micro_batches,
                            int virtual_stages = 1);
int micro_batches_in_flight_closed_form(PipelineScheduleKind schedule, int stages, int stage, int micro_batches,
                                        int virtual_stages = 1);

}  // namespace shardscope
