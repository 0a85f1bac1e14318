// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/estimate.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/formula_text.h"

namespace shardscope {

namespace {

struct Variant {
  std::string change, flags;
  EstimateSettings settings;
};

// The knobs a practitioner can turn without more GPUs, each on its own.
std::vector<Variant> lever_variants(const EstimateSettings& s) {
  std::vector<Variant> out;
  auto add = [&](std::string change, std::string flags, auto&& edit) {
    Variant v{std::move(change), std::move(flags), s};
    edit(v.settings);
    out.push_back(std::move(v));
  };
  if (s.recompute != Recompute::full)
    add("turn on activation checkpointing", "--checkpoint full",
        [](EstimateSettings& e) { e.recompute = Recompute::full; });
  if (s.recompute == Recompute::none && s.activations == ActivationMode::formula)
    add("selective activation recompute", "--checkpoint selective",
        [](EstimateSettings& e) { e.recompute = Recompute::selective; });
  if (s.layout.dp() > 1 && s.dp_mode == DataParallelMode::ddp)
    for (int stage = s.zero_stage + 1; stage <= 3; ++stage)
      add("ZeRO-" + std::to_string(stage), "--zero " + std::to_string(stage),
          [stage](EstimateSettings& e) { e.zero_stage = stage; });
  if (s.layout.dp() > 1 && s.dp_mode == DataParallelMode::naive)
    add("use DDP instead of naive DataParallel", "--dp-mode ddp",
        [](EstimateSettings& e) { e.dp_mode = DataParallelMode::ddp; });
  const ShardingRules rules(s.plan_layout());
  if (!s.offload_optimizer && (rules.shards_optimizer_states() || s.layout.dp() == 1) && !rules.naive())
    add("offload the optimizer states to the CPU (ZeRO-Offload)", "--offload-optimizer",
        [](EstimateSettings& e) { e.offload_optimizer = true; });
  if (s.micro_batch_size % 2 == 0)
    add("halve the micro-batch (same global batch)",
        "--micro-batch " + std::to_string(s.micro_batch_size / 2) + " --accum " + std::to_string(s.accum * 2),
        [](EstimateSettings& e) {
          e.micro_batch_size /= 2;
          e.accum *= 2;
        });
  if (s.precision == Precision::fp32)
    add("mixed precision", "--precision bf16", [](EstimateSettings& e) { e.precision = Precision::bf16; });
  return out;
}

FitReport check_fit(const Estimate& e, const EstimateRequest& request) {
  FitReport fit;
  if (request.gpu_memory_bytes) {
    fit.has_capacity = true;
    fit.capacity_bytes = *request.gpu_memory_bytes;
    fit.capacity_source = "--gpu-mem " + decimal_bytes(static_cast<double>(fit.capacity_bytes));
  } else if (e.gpu) {
    fit.has_capacity = true;
    fit.capacity_bytes = e.gpu->memory_bytes;
    fit.capacity_source = e.gpu->name + " (" + e.gpu->description + ")";
  }
  const std::int64_t fullest = e.memory.fullest_total();
  for (const Variant& v : lever_variants(e.settings)) {
    try {
      const std::int64_t total = estimate_memory(e.model, v.settings).fullest_total();
      if (total >= fullest) continue;
      fit.levers.push_back({v.change, v.flags, fullest - total, fit.has_capacity && total <= fit.capacity_bytes});
    } catch (const ConfigError&) {
      // a variant the model cannot express (e.g. selective recompute on ShardScope's kernels)
    }
  }
  std::stable_sort(fit.levers.begin(), fit.levers.end(),
                   [](const FitLever& a, const FitLever& b) { return a.saves_bytes > b.saves_bytes; });
  if (!fit.has_capacity) {
    fit.summary = "no GPU given (--gpu or --gpu-mem): fit not checked";
    return fit;
  }
  fit.margin_bytes = fit.capacity_bytes - fullest;
  fit.fits = fit.margin_bytes >= 0;
  const std::string rank = "rank " + std::to_string(e.memory.fullest_rank());
  if (fit.fits) {
    fit.summary =
        "fits: " + decimal_bytes(static_cast<double>(fit.margin_bytes)) + " free on the fullest rank (" + rank + ")";
    return fit;
  }
  fit.summary = "does not fit by " + decimal_bytes(static_cast<double>(-fit.margin_bytes)) + " on " + rank;
  for (std::size_t i = 0; i < fit.levers.size() && i < 2; ++i)
    fit.summary += std::string(i == 0 ? ": " : " or ") + fit.levers[i].change + " (−" +
                   decimal_bytes(static_cast<double>(fit.levers[i].saves_bytes)) + ")";
  if (fit.levers.empty()) fit.summary += ": no single setting saves memory; add GPUs (--dp, --pp)";
  return fit;
}

Estimate estimate_unchecked(const EstimateRequest& request);

}  // namespace

// Every size is checked (core/checked_math.h); one past 64 bits is the
// configuration's size, said with the settings that make it.
Estimate compute_estimate(const EstimateRequest& request) {
  try {
    return estimate_unchecked(request);
  } catch (const SizeOverflow& e) {
    const EstimateSettings& s = request.settings;
    throw ConfigError("the estimate for " + request.model.name + " does not fit in 64-bit counts (" + e.what() +
                      "; bytes over 9.2 EB): reduce the model or the batch (micro-batch " +
                      std::to_string(s.micro_batch_size) + ", accum " + std::to_string(s.accum) + ", micro-batches " +
                      std::to_string(s.micro_batches) + ", dp " + std::to_string(s.layout.dp()) + ")");
  }
}

namespace {
// Tensor parallelism as Megatron-LM runs it: a file's vocabulary padded to split
// evenly, and the tp group inside one node (its all-reduces on NVLink).
void add_tensor_parallel_warnings(Estimate& e) {
  const int tp = e.settings.layout.tp();
  if (tp == 1) return;
  if (e.model.split_vocab(tp) != e.model.vocab)
    e.warnings.push_back("--tp " + std::to_string(tp) + ": the vocabulary of " + std::to_string(e.model.vocab) +
                         " is padded to " + std::to_string(e.model.split_vocab(tp)) +
                         " (a multiple of 128 × tp, as Megatron-LM pads it) so that it splits over the tp ranks");
  if (tp > e.settings.gpus_per_node)
    e.warnings.push_back("--tp " + std::to_string(tp) + " is more than --gpus-per-node " +
                         std::to_string(e.settings.gpus_per_node) +
                         ": a tp group spans nodes, and its all-reduces run on the inter-node network");
}

Estimate estimate_unchecked(const EstimateRequest& request) {
  Estimate e;
  e.model = request.model;
  e.settings = request.settings;
  if (e.settings.seq == 0)
    e.settings.seq = static_cast<int>(std::min<std::int64_t>(request.model.max_positions, 1 << 30));
  e.gpu = request.gpu;
  e.warnings = request.warnings;
  e.memory = estimate_memory(e.model, e.settings);
  e.time = estimate_time(e.model, e.settings, e.gpu ? &*e.gpu : nullptr);
  e.fit = check_fit(e, request);
  if (e.settings.activations == ActivationMode::formula && e.model.architecture == "llama")
    e.warnings.push_back(
        "activations: sbh(34 + 5as/h) assumes GPT-style blocks (4h GELU MLP, dropout); for a "
        "Llama-style model (SwiGLU, no dropout) it is an approximation");
  add_tensor_parallel_warnings(e);
  if (e.settings.seq > e.model.max_positions)
    e.warnings.push_back("--seq " + std::to_string(e.settings.seq) + " exceeds max_position_embeddings " +
                         std::to_string(e.model.max_positions));
  if (request.deepspeed_conventions) {
    const int per_node = e.settings.gpus_per_node;
    const int nodes = request.nodes > 0 ? request.nodes : (e.settings.world_size() + per_node - 1) / per_node;
    const std::int64_t psi = e.model.parameters();
    const ShardingRules rules(e.settings.plan_layout());
    if (rules.shards_parameters())
      e.deepspeed = deepspeed_zero3_model_states(psi, e.model.largest_module_parameters, per_node, nodes,
                                                 e.settings.offload_optimizer, e.settings.offload_params);
    else if (rules.shards_gradients())
      e.deepspeed = deepspeed_zero2_model_states(psi, per_node, nodes, e.settings.offload_optimizer);
    else
      e.warnings.push_back("DeepSpeed's estimator covers ZeRO stages 2 and 3 only (this is stage " +
                           std::to_string(e.settings.zero_stage) + ")");
    if (e.deepspeed && static_cast<std::int64_t>(per_node) * nodes != e.settings.world_size())
      e.warnings.push_back("DeepSpeed's estimator assumes gpus_per_node × nodes = " + std::to_string(per_node) + " × " +
                           std::to_string(nodes) + " GPUs, not dp × pp = " + std::to_string(e.settings.world_size()) +
                           " (set --gpus-per-node)");
  }
  return e;
}
}  // namespace

}  // namespace shardscope
