// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/sharding_plan.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "core/error.h"
#include "model/parameter_layout.h"
#include "plan/placed_stage_units.h"
#include "plan/zb_v_schedule.h"

namespace shardscope {

int StateBytes::of(ModelState s) const {
  switch (s) {
    case ModelState::parameters: return parameters;
    case ModelState::gradients: return gradients;
    case ModelState::optimizer_states: break;
  }
  return optimizer;
}

StateBytes state_bytes(Precision precision) {
  if (precision == Precision::fp32) return {4, 4, 8};  // fp32 weights and gradients, Adam's m and v
  return {2, 2, 12};  // ZeRO paper: 16-bit parameters and gradients, K = 12 (fp32 master, m, v)
}

ParallelLayout parallel_layout(const RunConfig& config) {
  return ParallelLayout{config.layout, config.zero_stage, config.dp_mode, config.precision};
}

ZeroPartition make_zero_partition(std::int64_t total, int dp, int dp_rank) {
  ZeroPartition p;
  p.total = total;
  p.shard_size = (total + dp - 1) / dp;
  p.begin = std::min(total, dp_rank * p.shard_size);
  p.end = std::min(total, p.begin + p.shard_size);
  return p;
}

std::int64_t StageUnits::parameters() const {
  std::int64_t n = 0;
  for (const PlanUnit& u : units) n += u.numel;
  return n;
}

std::int64_t StageUnits::expert_parameters() const {
  std::int64_t n = 0;
  for (const PlanUnit& u : units) n += u.experts;
  return n;
}

ShardingRules::ShardingRules(const ParallelLayout& layout) : layout_(layout), grid_(layout.axes) {
  if (layout.zero_stage < 0 || layout.zero_stage > 3)
    throw ConfigError("ZeRO stage must be 0, 1, 2 or 3 (got " + std::to_string(layout.zero_stage) + ")");
  zero_ = naive() ? 0 : layout.zero_stage;
}

namespace {
std::atomic<std::int64_t> plans_built{0};
}  // namespace

std::int64_t sharding_plans_built() {
  return plans_built.load();
}

ShardingPlan::ShardingPlan(const ParallelLayout& layout, std::vector<StageUnits> stages)
    : ShardingRules(layout), stages_(std::move(stages)) {
  plans_built.fetch_add(1);
  if (static_cast<int>(stages_.size()) != layout.axes.pp())
    throw std::invalid_argument("sharding plan: " + std::to_string(stages_.size()) + " stages listed for pp " +
                                std::to_string(layout.axes.pp()));
  ranks_.reserve(static_cast<std::size_t>(grid().world_size()));
  for (int r = 0; r < grid().world_size(); ++r) ranks_.push_back(make_rank(r));
}

bool ShardingRules::shards(ModelState s) const {
  switch (s) {
    case ModelState::optimizer_states: return zero_ >= 1;
    case ModelState::gradients: return zero_ >= 2;
    case ModelState::parameters: break;
  }
  return zero_ >= 3;
}

bool ShardingRules::updates(int rank) const {
  return !naive() || grid().dp_rank_of(rank) == 0;
}

std::string ShardingRules::formula() const {
  const StateBytes k = bytes_per_parameter();
  std::string text;
  for (ModelState s : {ModelState::parameters, ModelState::gradients, ModelState::optimizer_states}) {
    if (!text.empty()) text += " + ";
    text += std::to_string(k.of(s)) + "Ψ" + (shards(s) ? "/Nd" : "");
  }
  return text;
}

std::string ShardingRules::formula_total() const {
  const StateBytes k = bytes_per_parameter();
  const int sum = k.parameters + k.gradients + k.optimizer;
  if (zero_ == 0) return formula() + " = " + std::to_string(sum) + "Ψ";
  if (zero_ == 3) return formula() + " = " + std::to_string(sum) + "Ψ/Nd";
  return formula();
}

bool ShardingPlan::stage_holds_unit(int stage, int unit) const {
  if (stage < 0 || stage >= static_cast<int>(stages_.size())) return false;
  const auto& units = stages_[static_cast<std::size_t>(stage)].units;
  return std::any_of(units.begin(), units.end(), [unit](const PlanUnit& u) { return u.id == unit; });
}

int ShardingPlan::unit_count() const {
  int last = -1;
  for (const StageUnits& s : stages_)
    for (const PlanUnit& u : s.units) last = std::max(last, u.id);
  return last + 1;
}

bool ShardingPlan::holds(int rank, int unit, int chunk, ModelState s) const {
  if (rank < 0 || rank >= grid().world_size() || chunk < 0 || chunk >= chunks_per_unit()) return false;
  if (!stage_holds_unit(grid().stage_of(rank), unit)) return false;
  if (s == ModelState::optimizer_states && !updates(rank)) return false;
  if (!shards(s)) return true;
  if (unit_chunks()) return chunk == grid().dp_rank_of(rank);
  // ZeRO-1: the rank's flat shard covers part of some units; a unit is held
  // where the shard overlaps it. Under expert parallelism the shards are of
  // the dense parameters and of the experts, each counted in its own order.
  const RankPlan& me = ranks_[static_cast<std::size_t>(rank)];
  const auto overlaps = [](const ZeroPartition& p, std::int64_t begin, std::int64_t n) {
    return n > 0 && p.begin < begin + n && begin < p.end;
  };
  const bool split = stages_[static_cast<std::size_t>(me.stage)].expert_parameters() > 0;
  std::int64_t dense = 0, experts = 0;
  for (const PlanUnit& u : stages_[static_cast<std::size_t>(me.stage)].units) {
    const std::int64_t d = split ? u.numel - u.experts : u.numel, e = split ? u.experts : 0;
    if (u.id == unit) return overlaps(me.flat_shard, dense, d) || overlaps(me.expert_shard, experts, e);
    dense += d;
    experts += e;
  }
  return false;
}

RankPlan ShardingPlan::make_rank(int rank) const {
  RankPlan p;
  p.rank = rank;
  p.dp_rank = grid().dp_rank_of(rank);
  p.stage = grid().stage_of(rank);
  p.tp_rank = grid().tp_rank_of(rank);
  const StageUnits& stage = stages_[static_cast<std::size_t>(p.stage)];
  const std::int64_t P = stage.parameters(), Nd = dp();
  p.stage_parameters = P;
  p.flat_shard = make_zero_partition(P, dp(), p.dp_rank);
  // Expert parallelism (ZeRO-1): the dense parameters over the Nd ranks, the
  // experts over the Nd/ep ranks that hold the same ones (DeepSpeed-MoE's and
  // Megatron's separate expert and non-expert shard groups).
  const std::int64_t X = stage.expert_parameters();
  const int ep = stage.layers.expert_ranks;
  if (X > 0) {
    p.flat_shard = make_zero_partition(P - X, dp(), p.dp_rank);
    p.expert_shard = make_zero_partition(X, dp() / ep, p.dp_rank / ep);
  }
  // ZeRO-2/3 (parallel/zero_storage.h): chunk r of every unit, packed in unit order.
  std::int64_t begin = 0, packed = 0, optimizer_end = 0;
  for (const PlanUnit& u : stage.units) {
    UnitChunk c;
    c.unit = u.id;
    c.begin = begin;
    c.numel = u.numel;
    c.chunk = (u.numel + Nd - 1) / Nd;
    c.packed = packed;
    c.mine = std::clamp<std::int64_t>(u.numel - p.dp_rank * c.chunk, 0, c.chunk);
    if (c.mine > 0) optimizer_end = packed + c.mine;  // a chunk that is all padding adds no range
    begin += u.numel;
    packed += c.chunk;
    p.chunks.push_back(c);
  }
  p.parameter_elements = shards_parameters() ? packed : P;
  p.gradient_elements = shards_gradients() ? packed : P;
  if (!updates(rank))
    p.optimizer_elements = 0;
  else if (unit_chunks())
    p.optimizer_elements = optimizer_end;
  else if (flat_optimizer_shards())
    p.optimizer_elements = p.flat_shard.end - p.flat_shard.begin + p.expert_shard.end - p.expert_shard.begin;
  else
    p.optimizer_elements = P;
  const StateBytes k = bytes_per_parameter();
  p.model_state_bytes[MemoryCategory::parameters] = k.parameters * p.parameter_elements;
  p.model_state_bytes[MemoryCategory::gradients] = k.gradients * p.gradient_elements;
  p.model_state_bytes[MemoryCategory::optimizer_states] = k.optimizer * p.optimizer_elements;
  return p;
}

std::vector<StageUnits> placed_stage_units(const ModelConfig& model, int pp, int tp, int ep,
                                           const std::function<StageLayers(int)>& layers_of) {
  std::vector<StageUnits> stages;
  for (int s = 0; s < pp; ++s) {
    StageUnits su;
    su.layers = layers_of(s);
    su.layers.tp_size = tp;  // tp rank 0's slices; the others hold as many
    su.layers.expert_ranks = ep;  // and ep rank 0's experts (E/ep on every ep rank)
    const ParameterLayout layout(model, su.layers);
    for (const ParameterUnit& u : layout.units()) {
      std::int64_t experts = 0;  // the unit's expert tensors, told apart only when ep splits them
      for (const ParameterEntry& e : layout.entries())
        if (ep > 1 && e.expert && e.offset >= u.begin && e.offset < u.end) experts += e.numel;
      su.units.push_back(PlanUnit{u.id, u.numel(), experts});
    }
    stages.push_back(std::move(su));
  }
  return stages;
}

std::vector<StageUnits> stage_units(const ModelConfig& model, int pp, int tp, int virtual_stages, int ep) {
  return placed_stage_units(model, pp, tp, ep,
                            [&](int s) { return pipeline_stage_layers(model, pp, s, virtual_stages); });
}

std::string stage_parameters_text(const ShardingPlan& plan) {
  std::string text;
  for (const StageUnits& stage : plan.stages()) {
    const StageLayers& l = stage.layers;
    std::string holds = l.embedding ? "embeddings + " : "";
    holds += l.layer_count() * l.chunks == 1 ? "layer " : "layers ";
    for (int c = 0; c < l.chunks; ++c) {  // one range per chunk (interleaved pipelines)
      const StageLayers k = l.chunk(c);
      holds += (c > 0 ? ", " : "") + std::to_string(k.first_layer) +
               (k.layer_count() == 1 ? "" : "-" + std::to_string(k.end_layer - 1));
    }
    if (l.head) holds += l.embedding ? " + head" : " + head (and a copy of the tied embeddings)";
    text += (text.empty() ? "stage " : "; stage ") + std::to_string(&stage - plan.stages().data()) + " " + holds +
            " = " + std::to_string(stage.parameters()) + (text.empty() ? " parameters" : "");
  }
  return text;
}

ShardingPlan make_sharding_plan(const ParallelLayout& layout, const ModelConfig& model) {
  if (layout.axes.pp() < 1) throw ConfigError("--pp must be at least 1 (got " + std::to_string(layout.axes.pp()) + ")");
  if (layout.axes.pp() > model.layers)
    throw ConfigError("--pp " + std::to_string(layout.axes.pp()) + " is more pipeline stages than " + model.name +
                      " has layers (" + std::to_string(model.layers) + ")");
  return ShardingPlan(layout, stage_units(model, layout.axes.pp(), layout.axes.tp()));
}

ShardingPlan make_sharding_plan(const RunConfig& config) {
  if (config.schedule == PipelineScheduleKind::zb_v) {  // two chunks in a V (a schedule file's too)
    const ParallelLayout layout = parallel_layout(config);
    const ModelConfig model = run_model_config(config);
    const int pp = layout.axes.pp();
    return ShardingPlan(layout, placed_stage_units(model, pp, layout.axes.tp(), config.expert_parallel,
                                                   [&](int s) { return zb_v_stage_layers(model, pp, s); }));
  }
  if (config.virtual_stages <= 1 && config.expert_parallel <= 1)
    return make_sharding_plan(parallel_layout(config), run_model_config(config));
  // Interleaved 1F1B: each stage holds v chunks (run_config.cpp refuses layers that do not split);
  // expert parallelism: each rank E/ep experts.
  const ParallelLayout layout = parallel_layout(config);
  return ShardingPlan(layout, stage_units(run_model_config(config), layout.axes.pp(), layout.axes.tp(),
                                          config.virtual_stages, config.expert_parallel));
}

}  // namespace shardscope
