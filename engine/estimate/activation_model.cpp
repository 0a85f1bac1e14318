// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/activation_model.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/formula_text.h"
#include "model/activations.h"
#include "model/mixture_of_experts.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

namespace {
constexpr std::int64_t kSimulatedPipelineActions = 4096;  // stages × micro-batches

std::string shape_text(const StageLayers& stage, std::int64_t layers_total) {
  if (stage.first_layer == 0 && stage.end_layer == layers_total && stage.embedding && stage.head) return "";
  std::string text = " (layers " + std::to_string(stage.first_layer) + "-" + std::to_string(stage.end_layer - 1);
  for (int c = 1; c < stage.chunks; ++c)  // interleaved 1F1B: the stage's later chunks
    text += ", " + std::to_string(stage.chunk(c).first_layer) + "-" + std::to_string(stage.chunk(c).end_layer - 1);
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
  const std::int64_t scratch =
      BackwardScratch::total_floats(config, micro_batch_size, seq, stage.head, attention, stage.tp_size);
  // What attention keeps per layer: the probabilities b·a·s², or with the fused
  // kernel (a GPU in fp16/bf16) one log-sum-exp per query row, b·a·s.
  const bool fused = attention == AttentionKernel::fused;
  const std::string probs = fused ? "b·a·s (fused attention's row log-sum-exp)" : "b·a·s²";
  const std::string b = std::to_string(micro_batch_size), s = std::to_string(seq);
  const std::string d = std::to_string(value_bytes) + " × ";
  // A mixture of experts: each MoE layer also keeps its experts' packed rows, b·s·k of them:
  // input h, fc and GELU 4h each, output h (model/mixture_of_experts.cpp, bind_activations).
  // Expert parallelism: the rank's own rows keep input and output, and its experts' fc and
  // GELU (and input) are kept for the rows it receives, laid out for their bound E·c.
  std::int64_t moe_layers = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) moe_layers += config.moe_layer(l) ? 1 : 0;
  const std::int64_t expert_rows = std::int64_t{micro_batch_size} * seq * config.top_k;
  const bool ep = stage.expert_ranks > 1 && moe_layers > 0;
  const std::int64_t received = ep ? std::int64_t{config.experts} * moe_capacity(config, micro_batch_size * seq) : 0;
  const std::int64_t expert_floats =
      moe_layers * (ep ? (expert_rows * 2 + received * 9) * config.channels : expert_rows * 10 * config.channels);
  ActivationBytes out;
  out.activations = value_bytes * (acts + expert_floats);  // below kMaxSize / 4: check_kernel_floats
  out.workspace = value_bytes * scratch;
  // Under tensor parallelism a rank keeps its heads' QKV, attention output and
  // probabilities and its MLP columns (10h/t of the 16h), the rest whole.
  // Sequence parallelism also splits the residual stream and the LayerNorm
  // statistics (2h + 4 of the 4h + 4 whole floats) over the sequence.
  const std::string t_is = " (t = " + std::to_string(stage.tp_size) + ")";
  const std::string layer_set = stage.tp_size == 1        ? "b·s(16h + 4) + " + probs
                                : stage.sequence_parallel ? "b·s(2h + 12h/t) + b·s(2h + 4)/t + " + probs + "/t" + t_is
                                                          : "b·s(4h + 12h/t + 4) + " + probs + "/t" + t_is;
  std::string ends = stage.embedding ? ", plus the embeddings"
                     : stage.sequence_parallel && stage.tp_size > 1 && config.kind != ModelKind::bert
                         ? ", plus the received input b·s·h/t"
                         : ", plus the received input b·s·h";
  if (stage.head) ends += " and the head (logits b·s·v)";
  out.activations_formula =
      d + (moe_layers > 0 ? "(" : "") + grouped(acts) + " floats = Activations::total_floats(b=" + b + ", s=" + s +
      ")" + shape_text(stage, config.layers) +
      (checkpointing ? ": each layer keeps its output b·s·h, one shared layer set " + layer_set
                     : ": per layer " + layer_set) +
      ends +
      (moe_layers > 0 && !ep
           ? "; + " + grouped(expert_floats) + " floats: per MoE layer the experts' rows b·s·k·10h (" +
                 std::to_string(moe_layers) + " layers, k = " + std::to_string(config.top_k) + "))"
       : ep ? "; + " + grouped(expert_floats) +
                  " floats: per MoE layer the rank's rows' input and output b·s·k·2h and its experts' received rows "
                  "E·c·9h (" +
                  std::to_string(moe_layers) + " layers, k = " + std::to_string(config.top_k) +
                  ", at most c = " + std::to_string(received / config.experts) +
                  " rows per expert from each of ep = " + std::to_string(stage.expert_ranks) + " ranks))"
            : "");
  out.workspace_formula =
      d + grouped(scratch) + " floats = BackwardScratch::total_floats(b=" + b + ", s=" + s +
      "): activation gradients of one layer, " +
      (stage.tp_size > 1 ? "b·s(2h + max(3h/t, h) + 4h/t) + " + std::string(fused ? "b·a·s" : "b·a·s²") + "/t"
                         : "b·s·9h + " + std::string(fused ? "b·a·s" : "b·a·s²")) +
      (stage.head ? (stage.tp_size > 1 ? ", and the logits' b·s·v/t" : ", and the logits' b·s·v") : "");
  return out;
}

namespace {
// x / t for a byte count the formula splits over the tp ranks (rounded up).
CheckedSize over(CheckedSize x, std::int64_t t) {
  return (x.value() + t - 1) / t;
}

// One layer's activations under Korthikanti et al.'s three layouts, 16-bit (Table 2)
// or fp32 (the 2-byte terms doubled, the 1-byte dropout masks not):
//   no parallelism  sbh(34 + 5as/h)            fp32 sbh(66 + 9as/h)
//   TP              sbh(10 + 24/t + 5as/(ht))  fp32 sbh(18 + 48/t + 9as/(ht))
//   TP + SP         sbh/t·(34 + 5as/h)         fp32 sbh/t·(66 + 9as/h)
// Under TP the LayerNorm inputs, the QKV and MLP inputs and the dropout masks
// (10sbh) stay whole on every rank; SP splits them over the sequence too.
// `kept_text`: what selective recompute keeps (the terms without the attention core).
struct LayerFormula {
  CheckedSize full, kept, input;  // all of it; selective's; full recompute's (the layer input)
  std::string full_text, kept_text, input_text;
};
LayerFormula layer_formula(CheckedSize sbh, CheckedSize as2b, bool fp32, std::int64_t t, bool sp) {
  const std::int64_t d = fp32 ? 4 : 2;
  const CheckedSize whole_part = fp32 ? 66 : 34, core = fp32 ? 9 : 5;
  const std::string w = fp32 ? "66" : "34", c = fp32 ? "9" : "5";
  if (t == 1 && !sp)
    return {sbh * whole_part + core * as2b,   whole_part * sbh, CheckedSize(d) * sbh,
            "sbh(" + w + " + " + c + "as/h)", w + "sbh",        std::to_string(d) + "sbh"};
  const std::string ts = std::to_string(t);
  if (sp)
    return {over(sbh * whole_part + core * as2b, t),
            over(whole_part * sbh, t),
            over(CheckedSize(d) * sbh, t),
            "sbh/t·(" + w + " + " + c + "as/h), t=" + ts,
            w + "sbh/t",
            std::to_string(d) + "sbh/t"};
  const CheckedSize kept_whole = fp32 ? 18 : 10, kept_split = fp32 ? 48 : 24;
  const std::string kw = fp32 ? "18" : "10", ks = fp32 ? "48" : "24";
  const CheckedSize kept = kept_whole * sbh + over(kept_split * sbh, t);
  return {kept + over(core * as2b, t),
          kept,
          CheckedSize(d) * sbh,
          "sbh(" + kw + " + " + ks + "/t + " + c + "as/(ht)), t=" + ts,
          "sbh(" + kw + " + " + ks + "/t)",
          std::to_string(d) + "sbh"};
}

// The stage's MoE layers whose experts the formula counts (ShardScope's own MoE models).
std::int64_t formula_moe_layers(const ModelShape& model, const StageLayers& stage) {
  if (model.experts == 0 || !model.engine_config) return 0;
  std::int64_t n = 0;
  for (int c = 0; c < stage.chunks; ++c)
    n += std::max<std::int64_t>(
        0, stage.chunk(c).end_layer - std::max<std::int64_t>(stage.chunk(c).first_layer, model.dense_layers));
  return n;
}

// Korthikanti et al. Table 2 (16-bit), and the same terms in fp32, in checked arithmetic.
ActivationBytes formula_bytes(const ModelShape& model, const StageLayers& stage, int micro_batch_size, int seq,
                              Recompute recompute, Precision precision, bool sp) {
  const std::int64_t t = stage.tp_size;
  const CheckedSize s = seq, b = micro_batch_size, h = model.hidden, a = model.heads,
                    v = model.split_vocab(stage.tp_size);
  const CheckedSize L = stage.layer_count();
  const bool fp32 = precision == Precision::fp32;
  const CheckedSize d = fp32 ? 4 : 2;  // bytes per stored value
  const CheckedSize sbh = s * b * h, logits = over(4 * s * b * v, t);  // the vocabulary-parallel head's slice
  const LayerFormula f = layer_formula(sbh, a * s * s * b, fp32, t, sp);
  const CheckedSize full_layer = f.full;
  const std::string& full_text = f.full_text;
  CheckedSize per_layer = full_layer, transient = 0;
  std::string layer_text = full_text;
  if (recompute == Recompute::selective) {
    per_layer = f.kept;
    layer_text = f.kept_text;
  } else if (recompute == Recompute::full) {
    per_layer = f.input;  // the layer input only (2sbh in 16 bits)
    layer_text = f.input_text;
    transient = full_layer;
  }
  const CheckedSize ends = sp ? over(sbh, t) : sbh;  // SP keeps the embedding output and final norm input split too
  CheckedSize activations = L * per_layer + transient;
  std::string formula = "L·" + layer_text + " = " + std::to_string(L.value()) + " × " + grouped(per_layer.value());
  if (transient > 0) formula += " + one layer recomputed " + full_text + " = " + grouped(transient.value());
  // A mixture of experts (ShardScope's GPT-style experts, model.engine_config): each token's k
  // routed copies keep their own expert MLP activations, input h and fc and GELU outputs 4h each,
  // and the router its E probabilities, beside the dense terms above: d·(9k·sbh + sbE) per MoE
  // layer (only the layer recomputed under full checkpointing). Not split by tp or ep: a rank's
  // experts take about its own k·sb rows when the routing is balanced.
  if (const CheckedSize moe_layers = formula_moe_layers(model, stage); moe_layers > 0) {
    const CheckedSize moe = d * (9 * CheckedSize(model.top_k) * sbh + s * b * CheckedSize(model.experts));
    const CheckedSize kept = recompute == Recompute::full ? CheckedSize(1) : moe_layers;
    activations += kept * moe;
    formula += " + " + std::string(recompute == Recompute::full ? "one MoE layer recomputed" : "MoE layers") + " " +
               std::to_string(kept.value()) + " × " + std::to_string(d.value()) +
               "(9k·sbh + sbE) = " + grouped((kept * moe).value()) + " (k=" + std::to_string(model.top_k) +
               " E=" + std::to_string(model.experts) + ")";
  }
  const std::string per_t = sp ? "/t" : "", v_t = t > 1 ? "/t" : "";
  if (stage.embedding) {
    activations += ends * (d + 1);
    formula +=
        " + embeddings sbh" + per_t + "(" + std::to_string(d.value()) + " + 1) = " + grouped((ends * (d + 1)).value());
  }
  if (stage.head) {
    activations += d * ends + logits;
    formula += " + final norm " + std::to_string(d.value()) + "sbh" + per_t + " + fp32 logits 4sbv" + v_t + " = " +
               grouped((d * ends + logits).value());
  }
  ActivationBytes out;
  out.activations = activations.value();
  out.activations_formula = formula + " [Korthikanti et al. 2022; s=" + std::to_string(seq) +
                            " b=" + std::to_string(micro_batch_size) + " h=" + std::to_string(model.hidden) +
                            " a=" + std::to_string(model.heads) + "]";
  out.workspace = (full_layer + (stage.head ? logits : CheckedSize(0))).value();
  out.workspace_formula = "one layer's activation gradients ≈ " + full_text + " = " + grouped(full_layer.value()) +
                          (stage.head ? " + the logits' gradient 4sbv" + v_t + " = " + grouped(logits.value()) : "") +
                          " (a model)";
  return out;
}
}  // namespace

ActivationBytes formula_activation_bytes(const ModelShape& model, const StageLayers& stage, int micro_batch_size,
                                         int seq, Recompute recompute, Precision precision, bool sequence_parallel) {
  try {
    return formula_bytes(model, stage, micro_batch_size, seq, recompute, precision, sequence_parallel);
  } catch (const SizeOverflow& e) {
    throw too_large(micro_batch_size, seq, model.name, e);
  }
}

int micro_batches_in_flight_closed_form(PipelineScheduleKind schedule, int stages, int stage, int micro_batches,
                                        int virtual_stages) {
  return peak_in_flight_closed_form(schedule, stages, stage, micro_batches, virtual_stages);
}

int micro_batches_in_flight(PipelineScheduleKind schedule, int stages, int stage, int micro_batches,
                            int virtual_stages) {
  // Building the schedule costs about p·m and runs once per stage: beyond a
  // few thousand actions the closed form (equal to it, tests/engine/test_estimate.cpp) answers.
  if (static_cast<std::int64_t>(stages) * micro_batches * virtual_stages > kSimulatedPipelineActions)
    return micro_batches_in_flight_closed_form(schedule, stages, stage, micro_batches, virtual_stages);
  // The same count the Trainer sizes its slots by (train/trainer_ranks.cpp, build_model).
  return std::max(1, peak_in_flight(make_pipeline_schedule(schedule, stages, micro_batches,
                                                           virtual_stages))[static_cast<std::size_t>(stage)]);
}

}  // namespace shardscope
