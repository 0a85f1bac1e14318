// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/memory_model.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

#include "config/run_schema.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/activation_model.h"
#include "estimate/estimate_model_checks.h"
#include "estimate/formula_text.h"
#include "estimate/split_backward_schedules.h"
#include "estimate/stage_placement.h"
#include "estimate/zero_units.h"
#include "layout/grid.h"
#include "model/mixture_of_experts.h"
#include "model/model_config.h"
#include "model/parameter_layout.h"
#include "parallel/communicator.h"
#include "parallel/zero.h"

namespace shardscope {

namespace {
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

// The ring reduce-scatter's staging (kept between calls, sized by the largest
// chunk): two chunks of partial sums, and in 16 bits a pre-divided copy of the
// Nd chunks (an average divides each rank's values by Nd first, as NCCL's
// ncclAvg). Chunks over kRingSliceBytes (parallel/communicator.h) are staged a
// slice at a time. Elements of k_g bytes, and the formula's text.
struct RingStaging {
  CheckedSize elements{0};
  std::string text;
};
RingStaging ring_staging(const Context& c, std::int64_t largest_chunk, int k_g, int group = 0) {
  const int n = group > 0 ? group : c.s.layout.dp();  // the ranks of the reduce-scatter: Nd unless told
  const std::int64_t staging = n > 1 ? (c.plan.mixed() ? 2 + n : 2) : 0;
  if (staging == 0) return {};
  const std::int64_t slice = std::min(largest_chunk, kRingSliceBytes / k_g);
  return {CheckedSize(slice) * staging,
          " + " + std::to_string(staging) + " × " + grouped(slice) +
              (c.plan.mixed() ? " staged: the ring's two partial-sum slices and the slice of every chunk divided by Nd"
                              : " staged: the ring's two partial-sum slices") +
              " (at most " + std::to_string(kRingSliceBytes >> 20) + " MiB a slice)"};
}

// Sequence parallelism's reduce-scatters over the tp group (of fp32
// activations, in every precision) keep their own ring staging: two partial-sum
// slices of the largest chunk, a rank's b·s·h/t tokens (at most a 4 MiB slice).
void sequence_parallel_staging(RankMemory& m, const EstimateSettings& s, std::int64_t hidden) {
  const int t = s.layout.tp();
  if (!s.sequence_parallel || t < 2 || s.activations != ActivationMode::shardscope) return;
  const std::int64_t chunk = (CheckedSize(s.micro_batch_size) * (s.seq / s.layout.cp()) * hidden).value() / t;
  const std::int64_t slice = std::min(chunk, kRingSliceBytes / 4);
  const std::int64_t before = m.bytes[MemoryCategory::communication];
  const std::string text = "4 × 2 × " + grouped(slice) +
                           " staged by sequence parallelism's reduce-scatters: two slices of b·s·h/t (at most " +
                           std::to_string(kRingSliceBytes >> 20) + " MiB a slice)";
  set(m, MemoryCategory::communication, (CheckedSize(before) + CheckedSize(8) * slice).value(),
      before == 0 ? text : m.formula(MemoryCategory::communication) + " + " + text);
}

// ZeRO-1 under expert parallelism: kΨ_d/Nd + kΨ_e/(Nd/ep), each a flat shard.
std::string expert_sharded(int k, const RankPlan& held, const EstimateSettings& s) {
  std::string experts = sharded(k, "Ψ_e", held.expert_shard, s.layout.dp() / s.expert_parallel);
  experts.replace(0, experts.find(" = "), std::to_string(k) + "Ψ_e/(Nd/ep)");
  return sharded(k, "Ψ_d", held.flat_shard, s.layout.dp()) + " + " + experts;
}

// ZeRO-1 under expert parallelism (parallel/zero_expert_parallel.h): the dense
// parameters packed (N·ceil(Ψ_d/N)) and the experts packed (N'·ceil(Ψ_e/N'),
// N' = Nd/ep) share one staging buffer, the larger; each group's communicator
// keeps its own ring staging.
void zero1_expert_communication(RankMemory& m, const Context& c, const RankPlan& held) {
  const int k = c.k.gradients, N = c.s.layout.dp(), Ne = N / c.s.expert_parallel;
  const ZeroPartition &dense = held.flat_shard, &experts = held.expert_shard;
  const CheckedSize packed_dense = CheckedSize(dense.shard_size) * N;
  const CheckedSize packed_experts = Ne > 1 ? CheckedSize(experts.shard_size) * Ne : CheckedSize(0);
  const CheckedSize packed(std::max(packed_dense.value(), packed_experts.value()));
  const RingStaging ring_dense = ring_staging(c, dense.shard_size, k);
  const RingStaging ring_experts = ring_staging(c, experts.shard_size, k, Ne);
  set(m, MemoryCategory::communication,
      (CheckedSize(k) * (packed + ring_dense.elements + ring_experts.elements)).value(),
      std::to_string(k) + " × (max(N·ceil(Ψ_d/N), N'·ceil(Ψ_e/N')) = max(" + grouped(packed_dense.value()) + ", " +
          grouped(packed_experts.value()) + ") packed staging, N' = Nd/ep = " + std::to_string(Ne) + ring_dense.text +
          (Ne > 1 ? " (dense)" + ring_experts.text + " (experts)" : std::string()) + ")");
}

// ZeRO-1's communication buffers: the padded staging its reduce-scatter and
// all-gather share (none when Ψ_s divides by Nd), and the ring's staging.
void zero1_communication(RankMemory& m, const Context& c, const ZeroPartition& part) {
  const int k = c.k.gradients;  // = c.k.parameters: 4, or 2 in mixed precision
  const bool padded = part.shard_size * c.s.layout.dp() != part.total;
  const CheckedSize padding = padded ? CheckedSize(part.shard_size) * (c.s.layout.dp() + 1) : CheckedSize(0);
  const RingStaging ring = ring_staging(c, part.shard_size, k);
  set(m, MemoryCategory::communication, (CheckedSize(k) * (padding + ring.elements)).value(),
      std::to_string(k) + " × (" +
          (padded ? "(Nd + 1) × ceil(" + c.psi + "/Nd) = " + std::to_string(c.s.layout.dp() + 1) + " × " +
                        grouped(part.shard_size) + " padded staging"
                  : std::string("0 padding: shards reduce-scatter and gather in place")) +
          ring.text + ")");
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
  else if (c.naive && s.layout.dp() > 1)
    text += ": rank 0, the master, updates the whole model";
  else if (c.plan.flat_optimizer_shards() && held.expert_shard.total > 0)  // expert parallelism
    text = expert_sharded(c.k.optimizer, held, s) + state_split(s.precision);
  else if (c.plan.flat_optimizer_shards())
    text = sharded(c.k.optimizer, c.psi, part, s.layout.dp()) + state_split(s.precision);
  set(m, MemoryCategory::optimizer_states, held.model_state_bytes[MemoryCategory::optimizer_states], text);
  if (naive_master(c.plan, m)) {
    set(m, MemoryCategory::communication, (CheckedSize(s.layout.dp()) * c.k.gradients * P).value(),
        "Nd·" + std::to_string(c.k.gradients) + c.psi + " = " + std::to_string(s.layout.dp()) + " × " +
            std::to_string(c.k.gradients) + " × " + grouped(P) + ": rank 0 gathers every replica's gradients");
  } else if (c.plan.reduce_scatters_flat_shards() && held.expert_shard.total > 0) {
    zero1_expert_communication(m, c, held);
  } else if (c.plan.reduce_scatters_flat_shards()) {
    zero1_communication(m, c, part);
  } else {
    set(m, MemoryCategory::communication, 0,
        s.layout.dp() > 1 && !c.naive ? "0: DDP buckets are views of the gradient buffer" : "0: no collective buffers");
  }
}

// ZeRO-2/3, unit by unit (zero_units.h, parallel/zero_storage.h).
void unit_model_states(RankMemory& m, const Context& c, const UnitSharding& u, std::int64_t P) {
  const EstimateSettings& s = c.s;
  const RankPlan& held = c.plan.rank(m.rank);
  const bool gathers = c.plan.shards_parameters();
  const int k_p = c.k.parameters, k_g = c.k.gradients;
  set(m, MemoryCategory::parameters, held.model_state_bytes[MemoryCategory::parameters],
      gathers ? unit_sharded(k_p, held.parameter_elements, s.layout.dp(), "chunks") : whole(k_p, c.psi, P));
  set(m, MemoryCategory::gradients, held.model_state_bytes[MemoryCategory::gradients],
      unit_sharded(k_g, held.gradient_elements, s.layout.dp(), "chunks"));
  set(m, MemoryCategory::optimizer_states, held.model_state_bytes[MemoryCategory::optimizer_states],
      unit_sharded(c.k.optimizer, held.optimizer_elements, s.layout.dp(), "this rank's real elements") +
          state_split(s.precision));
  const std::string d = std::to_string(k_g) + " × ";
  const RingStaging ring = ring_staging(c, u.largest_chunk, k_g);
  const std::string& staged = ring.text;
  const CheckedSize chunks = ring.elements;
  if (c.plan.mixed()) {
    const std::int64_t buffers = u.mixed_unit_buffer_peak(gathers);
    set(m, MemoryCategory::communication, (CheckedSize(k_g) * (chunks + buffers)).value(),
        d + "(" + grouped(buffers) + staged + "): " +
            (gathers ? "the gathered parameters of the head and the tied embedding, or of a layer, "
                       "max(E + H, L)"
                     : "one unit's gradient rounded to 16 bits for its reduce-scatter, max(E, L, H)") +
            " (units padded to Nd chunks; the fp32 unit gradients are workspace)");
    return;
  }
  const std::int64_t buffers = u.unit_buffer_peak(gathers);
  set(m, MemoryCategory::communication, (CheckedSize(k_g) * (chunks + buffers)).value(),
      d + "(" + grouped(buffers) + staged + "): " +
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
// padded to Nd chunks. A split backward (ZB-H1, ZB-H2, ZB-V) keeps each layer's
// gradient from B to W: `bound` layers' at each point. Returns fp32 elements; sets `text`.
std::int64_t mixed_working_peak(const ModelConfig& config, const StageLayers& stage, const ShardingPlan& plan,
                                const BoundGradientLayers& bound, std::string& text) {
  const ParameterLayout layout(config, stage);
  auto numel = [&](int unit) {
    const ParameterUnit* u = layout.find_unit(unit);
    return u != nullptr ? u->numel() : 0;
  };
  auto grad = [&](std::int64_t n) { return plan.unit_chunks() ? UnitSharding::chunk(n, plan.dp()) * plan.dp() : n; };
  const std::int64_t e = numel(0), l = stage.layer_count() > 0 ? numel(1 + stage.first_layer) : 0;
  const std::int64_t h = stage.head ? numel(config.layers + 1) : 0;
  const bool bert_embedding = config.kind == ModelKind::bert && stage.embedding;  // its LayerNorm's backward
  const std::int64_t at_head = stage.head ? grad(e) + grad(h) + e + h + bound.at_head * grad(l) : 0;
  const std::int64_t at_layer = l > 0 ? grad(e) + bound.at_layer * grad(l) + l : 0;
  const std::int64_t at_embedding = grad(e) + (bert_embedding ? e : 0) + bound.at_embedding * grad(l);
  const std::int64_t peak = std::max({at_head, at_layer, at_embedding});
  const std::string g = plan.unit_chunks() ? "p" : "";  // padded gradients
  const bool split = bound.at_head > 0 || bound.at_layer > 1 || bound.at_embedding > 0;
  const auto layers = [&](int n) { return " + " + std::to_string(n) + "·" + g + "L"; };  // bound from B to W
  text = "fp32 working copies and unit gradients at backward's peak: 4 × " + grouped(peak) + ", max(" + g + "E + " + g +
         "H + E + H" + (split ? layers(bound.at_head) : "") + ", " + g + "E + " +
         (split ? std::to_string(bound.at_layer) + "·" : "") + g + "L + L" +
         (split ? ", " + g + "E" + layers(bound.at_embedding) : "") + ") with E " + grouped(e) + ", L " + grouped(l) +
         ", H " + grouped(h) + (g.empty() ? "" : " (pX: padded to Nd chunks)") +
         (split ? " (split backward: n·L, the layers' gradients bound from B to W at the head, the last layer and "
                  "the embeddings)"
                : "");
  return peak;
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
  c.layout[Axis::dp] = s.layout.dp();
  c.layout[Axis::pp] = s.layout.pp();
  c.layout[Axis::tp] = s.layout.tp();
  c.layout[Axis::cp] = s.layout.cp();
  c.dp_mode = s.dp_mode;
  c.zero_stage = s.zero_stage;
  c.accum = s.accum;
  c.micro_batches = s.micro_batches;
  c.schedule = s.schedule;
  c.virtual_stages = s.virtual_stages;
  c.checkpoint = s.recompute == Recompute::full;
  c.precision = s.precision;
  c.sequence_parallel = s.sequence_parallel;
  c.expert_parallel = s.expert_parallel;
  return c;
}

std::string engine_gap(const ModelShape& model, const EstimateSettings& s) {
  if (model.preset.empty()) return "the engine trains ShardScope presets only, and this model comes from a file";
  if (s.activations != ActivationMode::shardscope) return "activations come from the generic formula";
  if (s.offload_optimizer || s.offload_params) return "CPU offload is not in the engine";
  if (s.recompute == Recompute::selective) return "the engine has no selective recompute";
  if (s.layout.cp() > 1 && s.cuda) return "the estimator does not count context parallelism's GPU workspace yet";
  if (s.schedule == PipelineScheduleKind::zb_v && s.cuda) return "the engine trains ZB-V on the CPU only";
  // The planner's rules are the run's (check_layout_rules); the engine's own
  // limits are the run-config schema's ranges.
  const std::pair<const char*, std::int64_t> limits[] = {{"dp", s.layout.dp()},     {"pp", s.layout.pp()},
                                                         {"tp", s.layout.tp()},     {"cp", s.layout.cp()},
                                                         {"ep", s.expert_parallel}, {"micro_batches", s.micro_batches},
                                                         {"accum", s.accum},        {"batch", s.global_batch()}};
  try {
    for (const auto& [key, value] : limits) check_field_value(run_field(key), value);
    if (s.seq > model.max_positions) return "the engine trains at most " + std::to_string(model.max_positions) + " tokens";
  } catch (const FieldError& e) {
    return std::string("the engine refuses this run: ") + e.what();
  }
  return "";
}

namespace {
std::vector<MemoryBytes> predict_run_memory(const RunConfig& config, const ShardingPlan* plan) {
  std::vector<MemoryBytes> per_rank;
  try {
    const ModelShape shape = model_shape_from_config(run_model_config(config), config.model);
    const EstimateSettings settings = settings_for_run(config);
    const MemoryEstimate estimate =
        plan != nullptr ? estimate_memory(shape, settings, *plan) : estimate_memory(shape, settings);
    for (const RankMemory& rank : estimate.ranks) per_rank.push_back(rank.bytes);
  } catch (const std::exception&) {
    per_rank.clear();
  }
  return per_rank;
}
}  // namespace

std::vector<MemoryBytes> predict_run_memory(const RunConfig& config) {
  return predict_run_memory(config, nullptr);
}

std::vector<MemoryBytes> predict_run_memory(const RunConfig& config, const ShardingPlan& plan) {
  return predict_run_memory(config, &plan);
}

namespace {

// Exact when the engine trains this layout (its ledger then equals the estimate), else what keeps it a model.
void describe_basis(MemoryEstimate& out, const ModelShape& model, const EstimateSettings& s) {
  const std::string gap = engine_gap(model, s);
  out.engine_exact = gap.empty();
  out.basis = out.engine_exact ? "engine-exact: the engine trains this layout, and its ledger equals these bytes"
                               : "model only: " + gap;
}

// One micro-batch's activations and backward's workspace on a stage's layers:
// ShardScope's kernels (with the attention kernel CUDA would pick) or the generic formula.
ActivationBytes stage_activation_bytes(const ModelShape& model, const EstimateSettings& s, const StageLayers& layers) {
  const int seq = s.seq / s.layout.cp();  // context parallelism: each rank holds seq / cp tokens of a sequence
  if (s.activations != ActivationMode::shardscope)
    return formula_activation_bytes(model, layers, s.micro_batch_size, seq, s.recompute, s.precision,
                                    s.sequence_parallel);
  const ModelConfig config = model.tp_config(s.layout.tp());  // a file's vocabulary padded to split
  const AttentionKernel attention =
      s.cuda ? cuda_attention_kernel(s.precision != Precision::fp32, config.channels / config.heads)
             : AttentionKernel::materialized;
  StageLayers stage = layers;
  stage.sequence_parallel = s.sequence_parallel && s.layout.tp() > 1;  // the LayerNorm regions at s/t tokens
  return shardscope_activation_bytes(config, stage, s.micro_batch_size, seq, s.recompute, attention);
}

// Context parallelism: ring attention's blocks in flight (model/context_parallel.cpp), 4 of
// 2·b·(s/cp)·h/tp floats: the block held and the one arriving, and in backward their dK, dV.
void context_parallel_memory(RankMemory& m, const EstimateSettings& s, const ModelShape& model) {
  const int cp = s.layout.cp();
  if (cp == 1) return;
  const std::int64_t block =
      (CheckedSize(2) * s.micro_batch_size * (s.seq / cp) * (model.hidden / s.layout.tp()) * 4).value();
  const std::int64_t before = m.bytes[MemoryCategory::communication];
  const std::string blocks = "ring attention's 4 key/value blocks, 4 × 2·b·(s/cp)·h/tp · 4 = 4 × " + grouped(block);
  set(m, MemoryCategory::communication, checked_add(before, 4 * block),
      before == 0 ? blocks : m.formula(MemoryCategory::communication) + " + " + blocks);
}

// Expert parallelism: the all-to-all's staging (model/expert_parallel.cpp), three blocks of
// E·c rows of h floats (c = ceil(f·b·s·k/E), the capacity): the most a rank receives.
void expert_parallel_memory(RankMemory& m, const EstimateSettings& s, const ModelShape& model) {
  if (s.expert_parallel == 1 || s.activations != ActivationMode::shardscope || !model.engine_config) return;
  const ModelConfig& config = *model.engine_config;
  const std::int64_t capacity = moe_capacity(config, s.micro_batch_size * s.seq);
  const std::int64_t rows = (CheckedSize(config.experts) * capacity).value();
  const std::int64_t bytes = (CheckedSize(3) * rows * model.hidden * 4).value();
  const std::int64_t before = m.bytes[MemoryCategory::communication];
  const std::string text = "the all-to-all's staging, 3 × E·c·h · 4 = 3 × " + grouped(rows) + " × " +
                           grouped(model.hidden) + " × 4 (c = " + std::to_string(capacity) + ")";
  set(m, MemoryCategory::communication, checked_add(before, bytes),
      before == 0 ? text : m.formula(MemoryCategory::communication) + " + " + text);
}

// What every rank of a pipeline stage shares, computed at the stage's first rank.
struct StageMemory {
  std::int64_t parameters = 0;  // Ψ_s
  ActivationBytes activations;  // one micro-batch's
};

struct PerStage {
  std::map<int, StageMemory> memory;
  std::map<int, int> in_flight;  // stage -> activation slots
};

const StageMemory& stage_memory(PerStage& per_stage, const ModelShape& model, const EstimateSettings& s,
                                const RankMemory& m) {
  auto it = per_stage.memory.find(m.stage);
  if (it == per_stage.memory.end()) {
    ActivationBytes acts = stage_activation_bytes(model, s, m.layers);
    it = per_stage.memory.emplace(m.stage, StageMemory{placed_stage_parameters(model, s, m.stage), std::move(acts)})
             .first;
  }
  return it->second;
}

// Micro-batches whose activations the stage holds at its peak, under the schedule.
int stage_in_flight(PerStage& per_stage, const EstimateSettings& s, int stage) {
  auto slots = per_stage.in_flight.find(stage);
  if (slots == per_stage.in_flight.end())
    slots = per_stage.in_flight
                .emplace(stage,
                         micro_batches_in_flight(s.schedule, s.layout.pp(), stage, s.micro_batches, s.virtual_stages))
                .first;
  return slots->second;
}

// Mixed precision: AdamW widens the 16-bit gradients into an fp32 block (train/adamw.cpp),
// sized by the optimizer states on the GPU (so before any offload moves them).
std::int64_t adamw_widen_block(const RankMemory& m, Precision precision) {
  return precision != Precision::fp32 ? std::min<std::int64_t>(m.bytes[MemoryCategory::optimizer_states] / 12, 16384)
                                      : 0;
}

// The offload switches: parameters (ZeRO-3) and optimizer states to CPU memory.
void offload_model_states(RankMemory& m, const EstimateSettings& s) {
  if (s.offload_params)
    offload(m, MemoryCategory::parameters, "parameters",
            "0 on the GPU: ZeRO-3 parameter offload keeps the shard in CPU memory");
  if (s.offload_optimizer)
    offload(m, MemoryCategory::optimizer_states, "optimizer states",
            "0 on the GPU: ZeRO-Offload keeps the optimizer states (and runs the step) on the CPU");
}

// Activations: one micro-batch's, times the micro-batches in flight.
void activation_memory(RankMemory& m, const EstimateSettings& s, const ActivationBytes& acts) {
  std::string acts_text = acts.activations_formula;
  if (m.micro_batches_in_flight > 1)
    acts_text = std::to_string(m.micro_batches_in_flight) + " micro-batches in flight (" +
                pipeline_schedule_name(s.schedule) + ") × " + acts_text;
  set(m, MemoryCategory::activations, checked_mul(m.micro_batches_in_flight, acts.activations), acts_text);
}

// A zero-bubble schedule (estimate/split_backward_schedules.h): the stage's activation
// slots plus, for each micro-batch between its B and its W, the output gradients B keeps
// for W (and under checkpointing the linears' inputs), at the peak of their sum along the
// stage's simulated action list. ZB-V's slots and B's are one chunk's, half the stage.
void split_backward_activation_memory(RankMemory& m, const EstimateSettings& s, const ModelShape& model,
                                      const ActivationBytes& acts) {
  const int value_bytes = s.activations == ActivationMode::shardscope || s.precision == Precision::fp32 ? 4 : 2;
  const bool checkpointing = s.recompute == Recompute::full;
  const std::int64_t kept = kept_from_b_to_w_bytes(m.layers, s.micro_batch_size, s.seq / s.layout.cp(), model.hidden,
                                                   value_bytes, checkpointing);
  const StageActivationPeak peak =
      split_backward_activation_peak(s.schedule, s.layout.pp(), m.stage, s.micro_batches, acts.activations, kept);
  const std::string per_b = m.layers.chunks > 1 ? " (chunk, micro-batch) pairs between B and W × one chunk's kept "
                                                : " micro-batches between B and W × their kept ";
  set(m, MemoryCategory::activations, peak.bytes,
      std::string(peak.bound ? "at most " : "") + std::to_string(peak.slots) + " activation slots (" +
          pipeline_schedule_name(s.schedule) + ") × " + acts.activations_formula + " + " + std::to_string(peak.kept) +
          per_b + (checkpointing ? "output gradients and linear inputs " : "output gradients ") +
          (m.layers.chunks > 1 ? "(L_s/2)" : "L_s") +
          (m.layers.tp_size > 1 ? (checkpointing ? "·b·s·(4h+12h/t)·" : "·b·s·(2h+7h/t)·")
                                : (checkpointing ? "·b·s·16h·" : "·b·s·9h·")) +
          std::to_string(value_bytes) + " = " + grouped(kept));
}

// Backward's workspace; under mixed precision with ShardScope's kernels also the
// fp32 working copies (or naive rank 0's gradient reduction, if larger) and AdamW's block.
void workspace_memory(RankMemory& m, const Context& c, const ModelShape& model, const ActivationBytes& acts,
                      std::int64_t widen_block) {
  if (c.s.precision == Precision::fp32 || c.s.activations != ActivationMode::shardscope) {
    set(m, MemoryCategory::workspace, acts.workspace, acts.workspace_formula);
    return;
  }
  std::string text;
  const BoundGradientLayers bound =
      split_backward_schedule(c.s.schedule) != nullptr
          ? split_backward_bound_layers(c.s.schedule, c.s.layout.pp(), m.stage, c.s.micro_batches, m.layers)
          : BoundGradientLayers{};
  std::int64_t working = mixed_working_peak(model.tp_config(c.s.layout.tp()), m.layers, c.plan, bound, text);
  if (naive_master(c.plan, m)) {
    // After backward, rank 0 widens and sums the replicas' 16-bit gradients a block at a time
    // (parallel/data_parallel.cpp): a sum and a part of min(Ψ, 2^20) floats.
    const std::int64_t reduce = 2 * std::min<std::int64_t>(m.stage_parameters, std::int64_t{1} << 20);
    if (reduce > working) {
      working = reduce;
      text =
          "rank 0's 16-bit gradient reduction, a sum and a part block of min(Ψ, 2^20): 4 × 2 × " + grouped(reduce / 2);
    }
  }
  set(m, MemoryCategory::workspace, (acts.workspace + 4 * (CheckedSize(working) + widen_block)).value(),
      acts.workspace_formula + " + " + text + " + AdamW's fp32 block of widened gradients: 4 × " +
          grouped(widen_block));
}

// One rank of the grid, in the ledger's six categories: model states, then
// offload, activations and workspace.
RankMemory rank_memory(int rank, const Context& c, const ModelShape& model, const std::optional<UnitSharding>& units,
                       PerStage& per_stage) {
  RankMemory m;
  m.rank = rank;
  m.stage = c.plan.grid().stage_of(rank);
  m.dp_rank = c.plan.grid().dp_rank_of(rank);
  m.layers = placed_stage_layers(model, c.s, m.stage);  // ZB-V: two chunks in a V
  m.layers.expert_ranks = c.s.expert_parallel;  // E/ep experts of each MoE layer
  const StageMemory& stage = stage_memory(per_stage, model, c.s, m);
  m.stage_parameters = stage.parameters;
  if (c.plan.unit_chunks())
    unit_model_states(m, c, *units, stage.parameters);
  else
    flat_model_states(m, c, stage.parameters);
  const std::int64_t widen_block = adamw_widen_block(m, c.s.precision);
  offload_model_states(m, c.s);
  sequence_parallel_staging(m, c.s, model.hidden);
  m.micro_batches_in_flight = stage_in_flight(per_stage, c.s, m.stage);
  if (split_backward_schedule(c.s.schedule) != nullptr)
    split_backward_activation_memory(m, c.s, model, stage.activations);
  else
    activation_memory(m, c.s, stage.activations);
  workspace_memory(m, c, model, stage.activations, widen_block);
  context_parallel_memory(m, c.s, model);
  expert_parallel_memory(m, c.s, model);
  return m;
}

}  // namespace

namespace {
EstimateSettings checked_settings(const ModelShape& model, const EstimateSettings& in) {
  EstimateSettings s = in;
  if (s.seq == 0) s.seq = static_cast<int>(model.max_positions);
  validate_estimate_settings(s);
  validate_estimate_against_model(model, s);
  return s;
}

MemoryEstimate estimate_with_plan(const ModelShape& model, const EstimateSettings& s, const ShardingPlan& plan) {
  // With tp > 1 every Ψ is one tensor-parallel rank's slice: Ψ/t.
  const std::string psi = std::string(s.layout.pp() > 1 ? "Ψ_s" : "Ψ") + (s.layout.tp() > 1 ? "/t" : "");
  const Context context{s, plan, plan.bytes_per_parameter(), psi, plan.naive()};
  std::optional<UnitSharding> units;
  if (plan.unit_chunks()) units = shard_units(model, s.layout.dp(), s.layout.tp());
  MemoryEstimate out;
  describe_basis(out, model, s);
  PerStage per_stage;
  for (int r = 0; r < plan.grid().world_size(); ++r)
    out.ranks.push_back(rank_memory(r, context, model, units, per_stage));
  (void)out.cluster_total();  // a sum past 64 bits is a SizeOverflow here, not a negative total later
  return out;
}
}  // namespace

MemoryEstimate estimate_memory(const ModelShape& model, const EstimateSettings& settings) {
  const EstimateSettings s = checked_settings(model, settings);
  return estimate_with_plan(model, s, placed_sharding_plan(model, s));
}

MemoryEstimate estimate_memory(const ModelShape& model, const EstimateSettings& settings, const ShardingPlan& plan) {
  const EstimateSettings s = checked_settings(model, settings);
  if (!(plan.layout() == s.plan_layout()))
    throw std::invalid_argument("estimate_memory: the plan given is not of these settings' layout");
  return estimate_with_plan(model, s, plan);
}

}  // namespace shardscope
