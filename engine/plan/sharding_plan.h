// SPDX-License-Identifier: GPL-3.0-or-later
// The sharding plan: made once from a run's layout, it says who holds which
// model states of which unit, at which ZeRO stage and precision, for every
// (dp, pp) rank. The trainer builds its ranks from it, the estimator counts
// its bytes from it, and the views draw it; nobody else compares ZeRO stage
// numbers.
//
// ZeRO (Rajbhandari et al. 2020) per data-parallel rank, Ψ parameters, Nd ranks,
// K = 8 (fp32 Adam: m, v) or 12 (mixed: fp32 master, m, v):
//   stage 0  kpΨ + kgΨ + KΨ            (replicated)
//   stage 1  kpΨ + kgΨ + KΨ/Nd         (P_os: optimizer states sharded)
//   stage 2  kpΨ + kgΨ/Nd + KΨ/Nd      (P_os+g: gradients sharded too)
//   stage 3  kpΨ/Nd + kgΨ/Nd + KΨ/Nd   (P_os+g+p: parameters sharded too)
// with kp = kg = 4 in fp32 and 2 in fp16/bf16: fp32 ZeRO-0 is 16Ψ, mixed
// ZeRO-0 is 2Ψ + 2Ψ + 12Ψ.
//
// How ShardScope shards: ZeRO-1 splits each stage's flat parameter space into
// Nd contiguous shards (parallel/zero.h); ZeRO-2/3 split every unit (the
// embeddings, one layer, the head) into Nd chunks of ceil(n / Nd), and
// data-parallel rank r owns chunk r of every unit (parallel/zero_storage.h).
// Pipeline stages hold only their own layers (model/model_config.h's split).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "core/memory_ledger.h"
#include "layout/grid.h"
#include "model/model_config.h"

namespace shardscope {

// The three model states of the ZeRO paper.
enum class ModelState { parameters = 0, gradients = 1, optimizer_states = 2 };

// Bytes per parameter of each model state: 4/4/8 in fp32, 2/2/12 mixed.
struct StateBytes {
  int parameters, gradients, optimizer;
  int of(ModelState s) const;
};
StateBytes state_bytes(Precision precision);

// What the plan needs of a run: the grid, the ZeRO stage, the data-parallel
// mode and the precision. RunConfig and the estimator's settings both give it.
struct ParallelLayout {
  Layout axes;  // dp, pp (layout/parallel_axes.h)
  int zero_stage = 0;
  DataParallelMode dp_mode = DataParallelMode::ddp;
  Precision precision = Precision::fp32;
  bool operator==(const ParallelLayout&) const = default;
};
ParallelLayout parallel_layout(const RunConfig& config);

// A unit (model/parameter_layout.h): 0 embeddings, 1 + l layer l, L + 1 head.
struct PlanUnit {
  int id = 0;
  std::int64_t numel = 0;
  std::int64_t experts = 0;  // of numel, the rank's E/ep experts' (a MoE layer under expert parallelism)
};

// One data-parallel rank's chunk of a unit under ZeRO-2/3.
struct UnitChunk {
  int unit = 0;
  std::int64_t begin = 0;   // the unit's first element in the stage's flat layout
  std::int64_t numel = 0;   // n_u
  std::int64_t chunk = 0;   // ceil(n_u / Nd): every chunk padded to this
  std::int64_t packed = 0;  // offset of the rank's chunk in its packed shard
  std::int64_t mine = 0;    // real (unpadded) elements of the rank's chunk
};

// The units of one pipeline stage, in flat order.
struct StageUnits {
  StageLayers layers;
  std::vector<PlanUnit> units;
  std::int64_t parameters() const;  // Ψ_s
  std::int64_t expert_parameters() const;  // Ψ_e: the rank's experts (layers.expert_ranks > 1), else 0
};

// ZeRO-1's flat partition (parallel/zero.h): Nd contiguous shards of
// ceil(Ψ / Nd), the last one shorter (or empty) when Ψ does not divide.
struct ZeroPartition {
  std::int64_t total = 0;       // Ψ: parameters in the flat buffer
  std::int64_t shard_size = 0;  // ceil(Ψ / Nd): every shard padded to this
  std::int64_t begin = 0, end = 0;  // this rank's shard [begin, end) within [0, Ψ)
};
ZeroPartition make_zero_partition(std::int64_t total, int dp, int dp_rank);

// What one rank holds: its place on the grid and its model states in elements.
struct RankPlan {
  int rank = 0, dp_rank = 0, stage = 0, tp_rank = 0;
  std::int64_t stage_parameters = 0;     // Ψ_s
  std::int64_t parameter_elements = 0;   // Ψ_s, or its chunks (ZeRO-3)
  std::int64_t gradient_elements = 0;    // Ψ_s, or its chunks (ZeRO-2/3)
  std::int64_t optimizer_elements = 0;   // Ψ_s, its flat shard (ZeRO-1), up to its last real chunk (ZeRO-2/3), 0 (naive replica)
  ZeroPartition flat_shard;              // ZeRO-1: its shard of the stage's flat space
  // ZeRO-1 under expert parallelism (parallel/zero_expert_parallel.h): flat_shard
  // is then its shard of the dense parameters Ψ_d over the Nd ranks, and this
  // its shard of the experts Ψ_e over the Nd/ep ranks holding the same experts.
  ZeroPartition expert_shard;
  std::vector<UnitChunk> chunks;         // ZeRO-2/3: its chunk of every unit of its stage
  // Bytes of the model states (parameters, gradients, optimizer_states
  // categories; the others 0): what the rank's ledger holds for them.
  MemoryBytes model_state_bytes;
};

// The rules of a layout's ZeRO stage, asked instead of comparing stage numbers.
class ShardingRules {
 public:
  // Throws ConfigError for a grid the layout cannot form or a stage outside 0-3.
  explicit ShardingRules(const ParallelLayout& layout);

  const ParallelLayout& layout() const { return layout_; }
  const Grid& grid() const { return grid_; }
  int dp() const { return grid_.dp(); }
  int zero_stage() const { return zero_; }  // 0 under naive DataParallel
  bool naive() const { return layout_.dp_mode == DataParallelMode::naive; }
  bool mixed() const { return layout_.precision != Precision::fp32; }
  StateBytes bytes_per_parameter() const { return state_bytes(layout_.precision); }

  bool shards(ModelState s) const;  // divided by Nd on every rank
  bool shards_optimizer_states() const { return shards(ModelState::optimizer_states); }
  bool shards_gradients() const { return shards(ModelState::gradients); }
  bool shards_parameters() const { return shards(ModelState::parameters); }
  // ZeRO-1: optimizer states over Nd contiguous shards of the flat space.
  bool flat_optimizer_shards() const { return zero_ == 1; }
  // ZeRO-2/3: every unit split into Nd chunks, gradients reduce-scattered unit by unit.
  bool unit_chunks() const { return zero_ >= 2; }
  // Chunks drawn per unit: Nd under ZeRO-2/3, else 1.
  int chunks_per_unit() const { return unit_chunks() ? dp() : 1; }
  // DDP (ZeRO-0) with several data-parallel ranks: bucketed all-reduce during backward.
  bool bucketed_all_reduce() const { return !naive() && zero_ == 0 && dp() > 1; }
  // ZeRO-1 reduce-scatters the gradients by its flat shards after backward,
  // and after the update all-gathers the flat shards; ZeRO-2 all-gathers the
  // unit chunks (ZeRO-3 keeps its chunks: it gathers before each use).
  bool reduce_scatters_flat_shards() const { return dp() > 1 && flat_optimizer_shards(); }
  bool all_gathers_flat_shards() const { return dp() > 1 && flat_optimizer_shards(); }
  bool all_gathers_unit_chunks() const { return unit_chunks() && !shards_parameters(); }
  // The unit storage (parallel/zero_storage.h) holds parameters and gradients:
  // ZeRO-2/3 shards, or the 16-bit copies of mixed precision.
  bool unit_storage() const { return unit_chunks() || mixed(); }
  // The model's own fp32 buffers, where the unit storage does not replace them.
  bool model_holds_parameters() const { return !mixed() && !shards_parameters(); }
  bool model_holds_gradients() const { return !mixed() && !shards_gradients(); }
  // Naive DataParallel: only data-parallel rank 0 (the master) updates.
  bool updates(int rank) const;

  // "2Ψ + 2Ψ + 12Ψ/Nd": the per-rank model-state formula of this stage and precision.
  std::string formula() const;
  // With its sum where it has one: "4Ψ + 4Ψ + 8Ψ = 16Ψ", "... = 16Ψ/Nd", or formula().
  std::string formula_total() const;

 private:
  ParallelLayout layout_;
  Grid grid_;
  int zero_ = 0;
};

// The rules and the model: what every rank holds.
class ShardingPlan : public ShardingRules {
 public:
  // `stages` lists every pipeline stage's units (layout.axes.pp() of them).
  ShardingPlan(const ParallelLayout& layout, std::vector<StageUnits> stages);

  const std::vector<StageUnits>& stages() const { return stages_; }
  const StageUnits& stage(int s) const { return stages_.at(static_cast<std::size_t>(s)); }
  bool stage_holds_unit(int stage, int unit) const;
  int unit_count() const;  // units of the whole model (L + 2)
  const std::vector<RankPlan>& ranks() const { return ranks_; }
  const RankPlan& rank(int r) const { return ranks_.at(static_cast<std::size_t>(r)); }
  // Does `rank` hold state `s` of chunk `chunk` (< chunks_per_unit()) of `unit`
  // in the steady state (outside a ZeRO-3 gather)?
  bool holds(int rank, int unit, int chunk, ModelState s) const;

 private:
  RankPlan make_rank(int rank) const;

  std::vector<StageUnits> stages_;
  std::vector<RankPlan> ranks_;
};

// What each pipeline stage holds, for a run's header: "stage 0 embeddings +
// layers 0-1 = 462592 parameters; stage 1 layer 2 = 198272; stage 2 layer 3 +
// head (and a copy of the tied embeddings) = 231808". A last stage that does not
// embed holds its own copy of the tied token embeddings (model/parameter_layout.h),
// so the stages add up to more than the model.
std::string stage_parameters_text(const ShardingPlan& plan);

// The stages of a ShardScope model, from the engine's own parameter layout;
// with tp > 1 what one tensor-parallel rank of each stage holds (its slices of
// the split parameters and the replicated ones whole: every tp rank alike).
// virtual_stages v > 1: each stage's v interleaved chunks (model_config.h, pipeline_stage_layers).
std::vector<StageUnits> stage_units(const ModelConfig& model, int pp, int tp = 1, int virtual_stages = 1, int ep = 1);
// The plan of a run the engine trains (throws ConfigError for an unknown preset).
ShardingPlan make_sharding_plan(const RunConfig& config);
ShardingPlan make_sharding_plan(const ParallelLayout& layout, const ModelConfig& model);
// How many ShardingPlans this process has built (copies not counted; plan/run_plan.h: one per run).
std::int64_t sharding_plans_built();

}  // namespace shardscope
