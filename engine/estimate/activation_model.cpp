// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/activation_model.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/formula_text.h"
#include "model/activations.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

namespace {
constexpr std::int64_t kSimulatedPipelineActions = 4096;  // stages × micro-batches

std::string shape_text(const StageLayers& stage, std::int64_t layers_total) {
  if (stage.first_layer == 0 && stage.end_layer == layers_total && stage.embedding && stage.head) return "";
  std::string text = " (layers " + std::to_string(stage.first_layer) + "-" + std::to_string(stage.end_layer - 1);
  if (stage.embedding) text += ", embeddings";
  if (stage.head) text += ", head";
  return text + ")";
}

ConfigError too_large(int micro_batch_size, int seq, const std::string& model, const SizeOverflow& e) {
  return ConfigError("activations of micro-batch " + std::to_string(micro_batch_size) + " × seq " +
                     std::to_string(seq) + " on " + model + " do not fit in 64-bit byte counts (" + e.what() +
                     "); reduce --micro-batch or --seq");
}

// Activations::total_floats and BackwardScratch::total_floats (model/activations.cpp)
// add their buffers in plain 64-bit arithmetic. Their sum is below this bound,
// (L + 4)·(b·s·(16h + 4 + v) + b·a·s²) floats, computed checked: when the bound
// (in bytes) fits, so do they.
void check_kernel_floats(const ModelConfig& config, const StageLayers& stage, int micro_batch_size, int seq) {
  try {
    const CheckedSize b = micro_batch_size, s = seq, h = config.channels, a = config.heads, v = config.vocab;
    const CheckedSize per_layer = b * s * (16 * h + 4 + v) + b * a * s * s;
    (void)(4 * (CheckedSize(stage.layer_count()) + 4) * per_layer);
  } catch (const SizeOverflow& e) {
    throw too_large(micro_batch_size, seq, config.name, e);
  }
}
}  // namespace

ActivationBytes shardscope_activation_bytes(const ModelConfig& config, const StageLayers& stage, int micro_batch_size,
                                            int seq, Recompute recompute, AttentionKernel attention) {
  if (recompute == Recompute::selective)
    throw ConfigError(
        "--checkpoint selective: ShardScope's kernels recompute whole layers only; use --checkpoint "
        "full, or --activations formula for other implementations");
  const bool checkpointing = recompute == Recompute::full;
  check_kernel_floats(config, stage, micro_batch_size, seq);
  // The engine keeps activations and their gradients in fp32 in every run, on
  // the CPU and the GPU: mixed precision rounds only the matmul operands (and
  // stores parameters and gradients) in 16 bits. Precision matters only through
  // `attention` (the CUDA backend fuses attention in 16-bit math).
  const std::int64_t value_bytes = 4;
  const std::int64_t acts = Activations::total_floats(config, micro_batch_size, seq, checkpointing, stage, attention);
  const std::int64_t scratch = BackwardScratch::total_floats(config, micro_batch_size, seq, stage.head, attention);
  // What attention keeps per layer: the probabilities b·a·s², or with the fused
  // kernel (a GPU in fp16/bf16) one log-sum-exp per query row, b·a·s.
  const bool fused = attention == AttentionKernel::fused;
  const std::string probs = fused ? "b·a·s (fused attention's row log-sum-exp)" : "b·a·s²";
  const std::string b = std::to_string(micro_batch_size), s = std::to_string(seq);
  const std::string d = std::to_string(value_bytes) + " × ";
  ActivationBytes out;
  out.activations = value_bytes * acts;  // below kMaxSize / 4: check_kernel_floats
  out.workspace = value_bytes * scratch;
  std::string ends = stage.embedding ? ", plus the embeddings" : ", plus the received input b·s·h";
  if (stage.head) ends += " and the head (logits b·s·v)";
  out.activations_formula = d + grouped(acts) + " floats = Activations::total_floats(b=" + b + ", s=" + s + ")" +
                            shape_text(stage, config.layers) +
                            (checkpointing ? ": each layer keeps its output b·s·h, one shared layer set "
                                             "b·s(16h + 4) + " + probs
                                           : ": per layer b·s(16h + 4) + " + probs) +
                            ends;
  out.workspace_formula = d + grouped(scratch) + " floats = BackwardScratch::total_floats(b=" + b + ", s=" + s +
                          "): activation gradients of one layer, b·s·9h + " + (fused ? "b·a·s" : "b·a·s²") +
                          (stage.head ? ", and the logits' b·s·v" : "");
  return out;
}

namespace {
// Korthikanti et al. Table 2 (16-bit), and the same terms in fp32, in checked arithmetic.
ActivationBytes formula_bytes(const ModelShape& model, const StageLayers& stage, int micro_batch_size, int seq,
                              Recompute recompute, Precision precision) {
  const CheckedSize s = seq, b = micro_batch_size, h = model.hidden, a = model.heads, v = model.vocab;
  const CheckedSize L = stage.layer_count();
  const bool fp32 = precision == Precision::fp32;
  const CheckedSize d = fp32 ? 4 : 2;  // bytes per stored value
  const CheckedSize sbh = s * b * h, logits = 4 * s * b * v;
  const CheckedSize full_layer = fp32 ? sbh * 66 + 9 * a * s * s * b : sbh * 34 + 5 * a * s * s * b;
  const std::string full_text = fp32 ? "sbh(66 + 9as/h)" : "sbh(34 + 5as/h)";
  CheckedSize per_layer = full_layer, transient = 0;
  std::string layer_text = full_text;
  if (recompute == Recompute::selective) {
    per_layer = (fp32 ? 66 : 34) * sbh;
    layer_text = fp32 ? "66sbh" : "34sbh";
  } else if (recompute == Recompute::full) {
    per_layer = d * sbh;  // the layer input only (2sbh in 16 bits)
    layer_text = std::to_string(d.value()) + "sbh";
    transient = full_layer;
  }
  CheckedSize activations = L * per_layer + transient;
  std::string formula = "L·" + layer_text + " = " + std::to_string(L.value()) + " × " + grouped(per_layer.value());
  if (transient > 0) formula += " + one layer recomputed " + full_text + " = " + grouped(transient.value());
  if (stage.embedding) {
    activations += sbh * (d + 1);
    formula += " + embeddings sbh(" + std::to_string(d.value()) + " + 1) = " + grouped((sbh * (d + 1)).value());
  }
  if (stage.head) {
    activations += d * sbh + logits;
    formula += " + final norm " + std::to_string(d.value()) +
               "sbh + fp32 logits 4sbv = " + grouped((d * sbh + logits).value());
  }
  ActivationBytes out;
  out.activations = activations.value();
  out.activations_formula = formula + " [Korthikanti et al. 2022; s=" + std::to_string(seq) +
                            " b=" + std::to_string(micro_batch_size) + " h=" + std::to_string(model.hidden) +
                            " a=" + std::to_string(model.heads) + "]";
  out.workspace = (full_layer + (stage.head ? logits : CheckedSize(0))).value();
  out.workspace_formula = "one layer's activation gradients ≈ " + full_text + " = " + grouped(full_layer.value()) +
                          (stage.head ? " + the logits' gradient 4sbv = " + grouped(logits.value()) : "") +
                          " (a model)";
  return out;
}
}  // namespace

ActivationBytes formula_activation_bytes(const ModelShape& model, const StageLayers& stage, int micro_batch_size,
                                         int seq, Recompute recompute, Precision precision) {
  try {
    return formula_bytes(model, stage, micro_batch_size, seq, recompute, precision);
  } catch (const SizeOverflow& e) {
    throw too_large(micro_batch_size, seq, model.name, e);
  }
}

int micro_batches_in_flight_closed_form(PipelineScheduleKind schedule, int stages, int stage, int micro_batches) {
  return peak_in_flight_closed_form(schedule, stages, stage, micro_batches);
}

int micro_batches_in_flight(PipelineScheduleKind schedule, int stages, int stage, int micro_batches) {
  // Building the schedule costs about p·m and runs once per stage: beyond a
  // few thousand actions the closed form (equal to it, tests/engine/test_estimate.cpp) answers.
  if (static_cast<std::int64_t>(stages) * micro_batches > kSimulatedPipelineActions)
    return micro_batches_in_flight_closed_form(schedule, stages, stage, micro_batches);
  // The same count the Trainer sizes its slots by (train/trainer_ranks.cpp, build_model).
  return std::max(
      1, peak_in_flight(make_pipeline_schedule(schedule, stages, micro_batches))[static_cast<std::size_t>(stage)]);
}

}  // namespace shardscope
