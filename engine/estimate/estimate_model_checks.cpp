// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/estimate_model_checks.h"

#include <string>

#include "config/run_schema.h"
#include "core/error.h"

namespace shardscope {

namespace {
constexpr int kMaxRanks = 16384;  // one record per rank; beyond this the table says nothing new
// The sharding plan keeps every rank's share of every unit (embeddings, each
// layer, head): 1024 ranks × 65,538 units took 90 s and 3 GB, 16384 ranks were killed.
constexpr std::int64_t kMaxPlanEntries = 1 << 22;

// Tensor parallelism splits heads (and, for a preset the engine trains, the
// vocabulary) over the tp ranks, as train refuses them (validate_tensor_parallel).
void validate_tensor_parallel_shape(const ModelShape& model, const EstimateSettings& s) {
  const int tp = s.layout.tp();
  if (tp == 1) return;
  if (model.heads % tp != 0)
    throw ConfigError("--tp " + std::to_string(tp) + ": " + model.name + " has " + std::to_string(model.heads) +
                      " attention heads, which do not divide by " + std::to_string(tp));
  if (!model.preset.empty() && model.vocab % tp != 0)
    throw ConfigError("--tp " + std::to_string(tp) + ": " + model.name + "'s vocabulary of " +
                      std::to_string(model.vocab) + " does not divide by " + std::to_string(tp) +
                      " (the engine splits it over the tp ranks unpadded)");
}

}  // namespace

void validate_estimate_against_model(const ModelShape& model, const EstimateSettings& s) {
  const std::int64_t ranks = std::int64_t{s.layout.dp()} * s.layout.pp() * s.layout.cp() * s.layout.tp();
  const std::string names =
      std::string("--dp x --pp") + (s.layout.cp() > 1 ? " x --cp" : "") + (s.layout.tp() > 1 ? " x --tp" : "");
  if (ranks > kMaxRanks)
    throw ConfigError(names + ": at most " + std::to_string(kMaxRanks) + " ranks (got " + std::to_string(ranks) + ")");
  if (const std::int64_t entries = ranks * (model.layers + 2); entries > kMaxPlanEntries)
    throw ConfigError(names + " ranks x (" + std::to_string(model.layers) + " layers + 2) units = " +
                      std::to_string(entries) + ": at most " + std::to_string(kMaxPlanEntries) +
                      " (the sharding plan holds every rank's share of every unit); use fewer ranks or layers");
  validate_tensor_parallel_shape(model, s);
  const int ep = s.expert_parallel;  // as a run refuses them (run_config.cpp, validate_mixture_of_experts)
  if (ep > 1 && model.experts % ep != 0)
    throw ConfigError("--ep " + std::to_string(ep) + ": " +
                      (model.experts == 0 ? model.name + " has no experts"
                                          : "the " + std::to_string(model.experts) + " experts of " + model.name +
                                                " do not split over " + std::to_string(ep) + " expert-parallel ranks"));
  // torchtitan converts nn.Linear to Float8Linear; its grouped experts stay 16-bit, and their weights gather
  // over dp/ep, not dp: the FP8 terms would price what no run does.
  if (s.float8_linears && model.experts > 0)
    throw FieldError("{float8} tensorwise: " + model.name + " has " + std::to_string(model.experts) +
                         " experts per MoE layer; FP8 linears are priced for dense models only (torchtitan's "
                         "grouped experts are not Float8Linear)",
                     "{float8} tensorwise：" + model.name + " 每个 MoE 层有 " + std::to_string(model.experts) +
                         " 个专家；FP8 线性层只对稠密模型计价（torchtitan 的分组专家不是 Float8Linear）");
  if (s.seq > model.max_positions && model.architecture != "llama")
    throw ConfigError("--seq " + std::to_string(s.seq) + " exceeds the maximum sequence length of " + model.name +
                      " (" + std::to_string(model.max_positions) + ")");
  if (s.layout.pp() > model.layers)
    throw ConfigError("--pp " + std::to_string(s.layout.pp()) + " is more pipeline stages than " + model.name +
                      " has layers (" + std::to_string(model.layers) + ")");
  if (s.activations == ActivationMode::shardscope && !model.engine_config)
    throw ConfigError("--activations shardscope: ShardScope's kernels do not implement " + model.architecture + " (" +
                      model.name + "); use --activations formula");
}

}  // namespace shardscope
