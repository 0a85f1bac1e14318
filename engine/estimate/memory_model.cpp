// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/memory_model.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/activation_model.h"
#include "estimate/formula_text.h"
#include "estimate/zero_units.h"
#include "model/parameter_layout.h"
#include "plan/grid.h"
#include "parallel/zero.h"

namespace shardscope {

namespace {
constexpr int kMaxRanks = 16384;  // one record per rank; beyond this the table says nothing new
// The sharding plan keeps every rank's share of every unit (embeddings, each
// layer, head): 1024 ranks × 65,538 units took 90 s and 3 GB, 16384 ranks were killed.
constexpr std::int64_t kMaxPlanEntries = 1 << 22;

struct Context {
  const EstimateSettings& s;
  const ShardingPlan& plan;  // who holds what: every byte count of the model states comes from it
  StateBytes k;
  std::string psi;  // "Ψ", or "Ψ_s" with pipeline stages
  bool naive;
};

void set(RankMemory& m, MemoryCategory c, std::int64_t bytes, std::string formula) {
  m.bytes[c] = bytes;
  m.formulas[static_cast<std::size_t>(c)] = std::move(formula);
}

std::string whole(int k, const std::string& psi_symbol, std::int64_t psi) {
  return std::to_string(k) + psi_symbol + " = " + std::to_string(k) + " × " + grouped(psi);
}

// k Ψ/Nd for this rank's shard [begin, end) of the flat partition (parallel/zero.h).
std::string sharded(int k, const std::string& psi_symbol, const ZeroPartition& part, int dp) {
  const std::string head = std::to_string(k) + psi_symbol + "/Nd = " + std::to_string(k) + " × ";
  if (part.shard_size * dp == part.total) return head + grouped(part.total) + " / " + std::to_string(dp);
  return head + grouped(part.end - part.begin) + " (this rank's shard: ceil(" + grouped(part.total) + " / " +
         std::to_string(dp) + ") = " + grouped(part.shard_size) + ", the last shard shorter)";
}

// k Ψ/Nd as unit chunks: k · Σ_u ceil(n_u / Nd) (zero_units.h).
std::string unit_sharded(int k, std::int64_t elements, int dp, const std::string& what) {
  return std::to_string(k) + "Ψ/Nd = " + std::to_string(k) + " × " + grouped(elements) + " (" + what +
         " of Σ ceil(n_u / " + std::to_string(dp) + ") over the units: embeddings, layers, head)";
}

std::string state_split(Precision precision) {
  return precision == Precision::fp32 ? " (4 m + 4 v)" : " (4 fp32 master + 4 m + 4 v)";
}

// ZeRO-Offload: the optimizer states (and parameters under stage 3) move to CPU memory.
void offload(RankMemory& m, MemoryCategory c, const std::string& what, const std::string& text) {
  if (m.bytes[c] == 0) return;
  m.host_bytes = checked_add(m.host_bytes, m.bytes[c]);
  m.host_formula += (m.host_formula.empty() ? "" : " + ") + m.formula(c) + " " + what;
  set(m, c, 0, text);
}

// Naive DataParallel's rank 0, the master that gathers every replica's gradients.
bool naive_master(const ShardingPlan& plan, const RankMemory& m) {
  return plan.naive() && plan.dp() > 1 && m.dp_rank == 0;
}

// DDP, naive DataParallel, ZeRO-0/1: the stage's Ψ_s in one flat buffer, ZeRO-1
// sharding the optimizer states by the flat partition.
void flat_model_states(RankMemory& m, const Context& c, std::int64_t P) {
  const EstimateSettings& s = c.s;
  const RankPlan& held = c.plan.rank(m.rank);
  const ZeroPartition& part = held.flat_shard;
  set(m, MemoryCategory::parameters, held.model_state_bytes[MemoryCategory::parameters],
      whole(c.k.parameters, c.psi, P));
  set(m, MemoryCategory::gradients, held.model_state_bytes[MemoryCategory::gradients],
      whole(c.k.gradients, c.psi, P));
  std::string text = whole(c.k.optimizer, c.psi, P) + state_split(s.precision);
  if (!c.plan.updates(m.rank))
    text = "0: naive DataParallel replicas hold no optimizer states (rank 0 updates)";
  else if (c.naive && s.dp > 1)
    text += ": rank 0, the master, updates the whole model";
  else if (c.plan.flat_optimizer_shards())
    text = sharded(c.k.optimizer, c.psi, part, s.dp) + state_split(s.precision);
  set(m, MemoryCategory::optimizer_states, held.model_state_bytes[MemoryCategory::optimizer_states], text);
  if (naive_master(c.plan, m)) {
    set(m, MemoryCategory::communication, (CheckedSize(s.dp) * c.k.gradients * P).value(),
        "Nd·" + std::to_string(c.k.gradients) + c.psi + " = " + std::to_string(s.dp) + " × " +
            std::to_string(c.k.gradients) + " × " + grouped(P) + ": rank 0 gathers every replica's gradients");
  } else if (c.plan.all_gathers_flat_shards() && part.shard_size * s.dp != P) {
    set(m, MemoryCategory::communication, (CheckedSize(c.k.parameters) * part.shard_size * (s.dp + 1)).value(),
        std::to_string(c.k.parameters) + " × (Nd + 1) × ceil(" + c.psi + "/Nd) = " + std::to_string(c.k.parameters) +
            " × " + std::to_string(s.dp + 1) + " × " + grouped(part.shard_size) +
            ": staging for the all-gather of padded shards");
  } else {
    set(m, MemoryCategory::communication, 0,
        s.dp > 1 && !c.naive ? "0: DDP buckets are views of the gradient buffer; shards gather in place"
                             : "0: no collective buffers");
  }
}

// ZeRO-2/3, unit by unit (zero_units.h, parallel/zero_storage.h).
void unit_model_states(RankMemory& m, const Context& c, const UnitSharding& u, std::int64_t P) {
  const EstimateSettings& s = c.s;
  const RankPlan& held = c.plan.rank(m.rank);
  const bool gathers = c.plan.shards_parameters();
  const int k_p = c.k.parameters, k_g = c.k.gradients;
  set(m, MemoryCategory::parameters, held.model_state_bytes[MemoryCategory::parameters],
      gathers ? unit_sharded(k_p, held.parameter_elements, s.dp, "chunks") : whole(k_p, c.psi, P));
  set(m, MemoryCategory::gradients, held.model_state_bytes[MemoryCategory::gradients],
      unit_sharded(k_g, held.gradient_elements, s.dp, "chunks"));
  set(m, MemoryCategory::optimizer_states, held.model_state_bytes[MemoryCategory::optimizer_states],
      unit_sharded(c.k.optimizer, held.optimizer_elements, s.dp, "this rank's real elements") +
          state_split(s.precision));
  const std::string d = std::to_string(k_g) + " × ";
  if (c.plan.mixed()) {
    const std::int64_t buffers = u.mixed_unit_buffer_peak(gathers);
    set(m, MemoryCategory::communication, (CheckedSize(k_g) * (CheckedSize(u.largest_chunk) + buffers)).value(),
        d + "(" + grouped(u.largest_chunk) + " + " + grouped(buffers) + "): the reduce-scatter's receive chunk, plus " +
            (gathers ? "the gathered parameters of the head and the tied embedding, or of a layer, "
                       "max(E + H, L)"
                     : "one unit's gradient rounded to 16 bits for its reduce-scatter, max(E, L, H)") +
            " (units padded to Nd chunks; the fp32 unit gradients are workspace)");
    return;
  }
  const std::int64_t buffers = u.unit_buffer_peak(gathers);
  set(m, MemoryCategory::communication, (CheckedSize(k_g) * (CheckedSize(u.largest_chunk) + buffers)).value(),
      d + "(" + grouped(u.largest_chunk) + " + " + grouped(buffers) + "): the reduce-scatter's receive chunk, plus " +
          (gathers ? "whole-unit gradients and gathered parameters at backward's peak, max(2E + 2H, E + 2L)"
                   : "whole-unit gradients at backward's peak, E + max(H, L)") +
          " (units padded to Nd chunks)");
}

// Mixed precision in ShardScope's engine (parallel/zero_storage.cpp): around
// each use of a unit its 16-bit parameters are widened into an fp32 working
// copy, and backward builds the unit's gradient in fp32 before rounding it;
// both are `workspace`. Backward is the peak: the embedding unit's gradient
// lives through all of it (the tied head adds to it); at the head the head's
// and the embedding's working copies and the head's gradient join it; at a
// layer, the layer's copy and gradient. Under ZeRO-2/3 the fp32 gradients are
// padded to Nd chunks. Returns fp32 elements; sets `text`.
std::int64_t mixed_working_peak(const ModelConfig& config, const StageLayers& stage, const ShardingPlan& plan,
                                std::string& text) {
  const ParameterLayout layout(config, stage);
  auto numel = [&](int unit) {
    const ParameterUnit* u = layout.find_unit(unit);
    return u != nullptr ? u->numel() : 0;
  };
  auto grad = [&](std::int64_t n) { return plan.unit_chunks() ? UnitSharding::chunk(n, plan.dp()) * plan.dp() : n; };
  const std::int64_t e = numel(0), l = stage.layer_count() > 0 ? numel(1 + stage.first_layer) : 0;
  const std::int64_t h = stage.head ? numel(config.layers + 1) : 0;
  const bool bert_embedding = config.kind == ModelKind::bert && stage.embedding;  // its LayerNorm's backward
  const std::int64_t at_head = stage.head ? grad(e) + grad(h) + e + h : 0;
  const std::int64_t at_layer = l > 0 ? grad(e) + grad(l) + l : 0;
  const std::int64_t at_embedding = grad(e) + (bert_embedding ? e : 0);
  const std::int64_t peak = std::max({at_head, at_layer, at_embedding});
  const std::string g = plan.unit_chunks() ? "p" : "";  // padded gradients
  text = "fp32 working copies and unit gradients at backward's peak: 4 × " + grouped(peak) + ", max(" + g + "E + " +
         g + "H + E + H, " + g + "E + " + g + "L + L) with E " + grouped(e) + ", L " + grouped(l) + ", H " +
         grouped(h) + (g.empty() ? "" : " (pX: padded to Nd chunks)");
  return peak;
}

// The settings on their own (validate_estimate_settings), then against the model.
void check_layout_fits_model(const ModelShape& model, const EstimateSettings& s) {
  validate_estimate_settings(s);
  if (static_cast<std::int64_t>(s.dp) * s.pp > kMaxRanks)
    throw ConfigError("--dp x --pp: at most " + std::to_string(kMaxRanks) + " ranks (got " +
                      std::to_string(static_cast<std::int64_t>(s.dp) * s.pp) + ")");
  if (const std::int64_t entries = std::int64_t{s.dp} * s.pp * (model.layers + 2); entries > kMaxPlanEntries)
    throw ConfigError("--dp x --pp ranks x (" + std::to_string(model.layers) + " layers + 2) units = " +
                      std::to_string(entries) + ": at most " + std::to_string(kMaxPlanEntries) +
                      " (the sharding plan holds every rank's share of every unit); use fewer ranks or layers");
  if (s.seq > model.max_positions && model.architecture != "llama")
    throw ConfigError("--seq " + std::to_string(s.seq) + " exceeds the maximum sequence length of " + model.name +
                      " (" + std::to_string(model.max_positions) + ")");
  if (s.pp > model.layers)
    throw ConfigError("--pp " + std::to_string(s.pp) + " is more pipeline stages than " + model.name + " has layers (" +
                      std::to_string(model.layers) + ")");
  if (s.activations == ActivationMode::shardscope && !model.engine_config)
    throw ConfigError("--activations shardscope: ShardScope's kernels do not implement " + model.architecture + " (" +
                      model.name + "); use --activations formula");
}
}  // namespace

int MemoryEstimate::fullest_rank() const {
  int best = 0;
  for (std::size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].total() > ranks[static_cast<std::size_t>(best)].total()) best = static_cast<int>(r);
  return best;
}

std::int64_t MemoryEstimate::cluster_total() const {
  CheckedSize sum = 0;
  for (const auto& r : ranks) sum += r.total();
  return sum.value();
}

RunConfig to_run_config(const ModelShape& model, const EstimateSettings& s) {
  RunConfig c;
  c.model = model.preset;
  c.steps = 1;
  c.batch = s.global_batch() > INT_MAX ? INT_MAX : static_cast<int>(s.global_batch());
  c.seq = s.seq > 0 ? s.seq : static_cast<int>(model.max_positions);
  c.dp = s.dp;
  c.pp = s.pp;
  c.dp_mode = s.dp_mode;
  c.zero_stage = s.zero_stage;
  c.accum = s.accum;
  c.micro_batches = s.micro_batches;
  c.schedule = s.schedule;
  c.checkpoint = s.recompute == Recompute::full;
  c.precision = s.precision;
  return c;
}

std::string engine_gap(const ModelShape& model, const EstimateSettings& s) {
  if (model.preset.empty()) return "the engine trains ShardScope presets only, and this model comes from a file";
  if (s.activations != ActivationMode::shardscope) return "activations come from the generic formula";
  if (s.offload_optimizer || s.offload_params) return "CPU offload is not in the engine";
  if (s.recompute == Recompute::selective) return "the engine has no selective recompute";
  try {
    validate_run_config(to_run_config(model, s));
  } catch (const ConfigError& e) {
    return std::string("the engine refuses this run: ") + e.what();
  }
  return "";
}

MemoryEstimate estimate_memory(const ModelShape& model, const EstimateSettings& in) {
  EstimateSettings s = in;
  if (s.seq == 0) s.seq = static_cast<int>(model.max_positions);
  check_layout_fits_model(model, s);

  const ShardingPlan plan = make_sharding_plan(s.layout(), model);
  const Context context{s, plan, plan.bytes_per_parameter(), s.pp > 1 ? "Ψ_s" : "Ψ", plan.naive()};
  std::optional<UnitSharding> units;
  if (plan.unit_chunks()) units = shard_units(model, s.dp);
  MemoryEstimate out;
  const std::string gap = engine_gap(model, s);
  out.engine_exact = gap.empty();
  out.basis = out.engine_exact ? "engine-exact: the engine trains this layout, and its ledger equals these bytes"
                               : "model only: " + gap;

  std::map<int, std::pair<std::int64_t, ActivationBytes>> per_stage;  // stage -> (Ψ_s, one micro-batch)
  std::map<int, int> in_flight;                                       // stage -> activation slots
  for (int r = 0; r < plan.grid().world_size(); ++r) {
    RankMemory m;
    m.rank = r;
    m.stage = plan.grid().stage_of(r);
    m.dp_rank = plan.grid().dp_rank_of(r);
    m.layers = model.stage_layers(s.pp, m.stage);
    auto it = per_stage.find(m.stage);
    if (it == per_stage.end()) {
      const ActivationBytes acts =
          s.activations == ActivationMode::shardscope
              ? shardscope_activation_bytes(
                    *model.engine_config, m.layers, s.micro_batch, s.seq, s.recompute,
                    s.cuda ? cuda_attention_kernel(s.precision != Precision::fp32,
                                                   model.engine_config->channels / model.engine_config->heads)
                           : AttentionKernel::materialized)
              : formula_activation_bytes(model, m.layers, s.micro_batch, s.seq, s.recompute, s.precision);
      it = per_stage.emplace(m.stage, std::make_pair(model.stage_parameters(s.pp, m.stage), acts)).first;
    }
    const std::int64_t P = it->second.first;
    const ActivationBytes& acts = it->second.second;
    m.stage_parameters = P;
    if (plan.unit_chunks())
      unit_model_states(m, context, *units, P);
    else
      flat_model_states(m, context, P);
    // Mixed precision: AdamW widens the 16-bit gradients into an fp32 block (train/adamw.cpp).
    const std::int64_t widen_block =
        s.precision != Precision::fp32 ? std::min<std::int64_t>(m.bytes[MemoryCategory::optimizer_states] / 12, 16384)
                                       : 0;
    if (s.offload_params)
      offload(m, MemoryCategory::parameters, "parameters",
              "0 on the GPU: ZeRO-3 parameter offload keeps the shard in CPU memory");
    if (s.offload_optimizer)
      offload(m, MemoryCategory::optimizer_states, "optimizer states",
              "0 on the GPU: ZeRO-Offload keeps the optimizer states (and runs the step) on the CPU");

    // Activations (per micro-batch in flight) and backward's workspace.
    auto slots = in_flight.find(m.stage);
    if (slots == in_flight.end())
      slots = in_flight.emplace(m.stage, micro_batches_in_flight(s.schedule, s.pp, m.stage, s.micro_batches)).first;
    m.micro_batches_in_flight = slots->second;
    std::string acts_text = acts.activations_formula;
    if (m.micro_batches_in_flight > 1)
      acts_text = std::to_string(m.micro_batches_in_flight) + " micro-batches in flight (" +
                  pipeline_schedule_name(s.schedule) + ") × " + acts_text;
    set(m, MemoryCategory::activations, checked_mul(m.micro_batches_in_flight, acts.activations), acts_text);
    if (s.precision != Precision::fp32 && s.activations == ActivationMode::shardscope) {
      std::string text;
      std::int64_t working = mixed_working_peak(*model.engine_config, m.layers, plan, text);
      if (naive_master(plan, m)) {
        // After backward, rank 0 widens and sums the replicas' 16-bit gradients a block at a time
        // (parallel/data_parallel.cpp): a sum and a part of min(Ψ, 2^20) floats.
        const std::int64_t reduce = 2 * std::min<std::int64_t>(P, std::int64_t{1} << 20);
        if (reduce > working) {
          working = reduce;
          text = "rank 0's 16-bit gradient reduction, a sum and a part block of min(Ψ, 2^20): 4 × 2 × " +
                 grouped(reduce / 2);
        }
      }
      set(m, MemoryCategory::workspace, (acts.workspace + 4 * (CheckedSize(working) + widen_block)).value(),
          acts.workspace_formula + " + " + text + " + AdamW's fp32 block of widened gradients: 4 × " +
              grouped(widen_block));
    } else {
      set(m, MemoryCategory::workspace, acts.workspace, acts.workspace_formula);
    }
    out.ranks.push_back(std::move(m));
  }
  (void)out.cluster_total();  // a sum past 64 bits is a SizeOverflow here, not a negative total later
  return out;
}

}  // namespace shardscope
