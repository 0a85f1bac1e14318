// SPDX-License-Identifier: GPL-3.0-or-later
// Where a rank keeps its parameters and gradients when the model does not hold
// them as its own fp32 buffers: ZeRO-2/3 shards (Rajbhandari et al. 2020), and
// 16-bit storage for mixed precision, at any ZeRO stage. Unit by unit: every
// unit (embeddings, one layer, the head) is split into Nd equal chunks, and
// data-parallel rank r owns chunk r of every unit.
//   Stage 2 (P_os+g): the rank keeps only its gradient chunks. When backward
//     has finished a unit, its gradient is reduce-scattered over the ranks
//     (each receives the average of its chunk) and the full unit gradient is
//     freed; after the update the parameter chunks are all-gathered into every
//     rank's full parameters.
//   Stage 3 (P_os+g+p): parameters are sharded too. Before a unit's forward or
//     backward its chunks are all-gathered into a temporary unit buffer, and
//     released right after use.
//   Stages 0 and 1 (mixed precision only; in fp32 the model's own buffers
//     serve): whole 16-bit parameters and gradients.
// Mixed precision (dtype f16 or bf16): parameters and gradients are stored in
// 16 bits (2 bytes each, in the `parameters` and `gradients` categories). While
// a unit computes, an fp32 working copy of its parameters is bound (widened
// exactly from 16 bits: the values the model uses are the 16-bit ones), and its
// gradient builds up in fp32; when the unit's backward is done the gradient is
// rounded to 16 bits (overflow to inf, underflow to subnormals and 0, as on a
// GPU) and added to the stored gradient (stages 0/1) or reduce-scattered in 16
// bits (stages 2/3). The working copies count as `workspace`; the fp32 master
// weights live in the optimizer (adamw.h).
// Per-rank model states, fp32 Adam: 4Ψ + 4Ψ/Nd + 8Ψ/Nd (stage 2), 16Ψ/Nd
// (stage 3). Mixed: 2Ψ + 2Ψ + 12Ψ (0), 2Ψ + 2Ψ + 12Ψ/Nd (1), 2Ψ + 14Ψ/Nd (2),
// 16Ψ/Nd (3). Chunks are padded to ceil(n / Nd), so these hold exactly when
// every unit divides by Nd. Gathered units and 16-bit transfer buffers count
// as `communication`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "events/event.h"
#include "model/model.h"
#include "parallel/communicator.h"
#include "plan/sharding_plan.h"

namespace shardscope {

class ZeroShardedStorage final : public UnitStorage {
 public:
  // The plan's rules (ZeRO-2/3, or mixed precision at any stage: `rules.unit_storage()`)
  // and this rank's chunks of its stage's units; dtype f16/bf16 (mixed) or f32.
  ZeroShardedStorage(const ShardingRules& rules, const RankPlan& rank, DType dtype, Model& model, Communicator& dp,
                     MemoryLedger& ledger);

  DType dtype() const { return dtype_; }
  bool mixed() const { return dtype_ != DType::f32; }
  bool shards_gradients() const { return rules_.shards_gradients(); }
  bool shards_parameters() const { return rules_.shards_parameters(); }

  // Writes the model's initial values into the storage: this rank's chunks
  // (stage 3) or the whole 16-bit parameters (mixed, stages 0-2).
  void init_parameters(std::uint64_t seed);
  void zero_gradients();
  // The gradients this rank updates from, in dtype(): its packed chunks
  // (stages 2/3) or the whole stage's flat gradients (mixed stages 0/1).
  void* gradients() { return grads_.data(); }
  std::int64_t gradient_count() const { return shards_gradients() ? shard_size_ : model_.parameter_count(); }
  // The parameters in dtype(): packed chunks (stage 3), the whole flat 16-bit
  // parameters (mixed stages 0-2); null for fp32 stage 2 (the model's own).
  void* parameters() { return params_.data(); }
  const void* parameters() const { return params_.data(); }
  std::int64_t shard_size() const { return shard_size_; }
  // Stage 2: every rank's updated chunks into every rank's full parameters.
  void all_gather_parameters(const CommTag& tag);

  // Mixed precision: the tensor where a gradient first became inf or NaN when
  // rounded to 16 bits on this rank since zero_gradients() (empty: none).
  const std::string& first_overflow() const { return first_overflow_; }
  // The parameter name at flat offset `offset` of the layout.
  std::string tensor_at(std::int64_t offset) const;
  // The flat offset of element i of gradients() (packed shard or flat).
  std::int64_t flat_offset_of_gradient(std::int64_t i) const;

  // Events (parameter gathers and releases) and the tags of the collectives;
  // `gathers`: the purpose of ZeRO-3's gathers (evaluation for an evaluation's).
  void set_context(EventSink* sink, DeviceClock* clock, const Event& base,
                   CommPurpose gathers = CommPurpose::parameters);

  void gather_parameters(Model& model, int unit) override;
  void release_parameters(Model& model, int unit) override;
  void gradients_needed(Model& model, int unit) override;
  void gradients_done(Model& model, int unit) override;
  float* hold_gradients(Model& model, int unit) override;
  void held_gradients_done(Model& model, int unit, float* held) override;

 private:
  struct UnitShard {
    ParameterUnit unit;
    std::int64_t chunk = 0;   // ceil(n / Nd)
    std::int64_t packed = 0;  // offset of this rank's chunk in the shard buffers
    std::int64_t mine = 0;    // elements of this rank's chunk that are real (the rest is padding)
    Buffer gathered;      // stage 3: the whole unit (dtype) while in use
    Buffer working;       // mixed: the unit's parameters widened to fp32 while in use
    int users = 0;
    Buffer gradient;  // the whole unit's fp32 gradient while backward builds it
    std::vector<Buffer> held;  // split backward: gradients B set aside, one per micro-batch owing its W
  };
  UnitShard& shard_of(int unit);
  std::int64_t element_bytes() const { return static_cast<std::int64_t>(dtype_size(dtype_)); }
  std::byte* bytes_at(Buffer& buffer, std::int64_t element) const {
    return static_cast<std::byte*>(buffer.data()) + element * element_bytes();
  }
  // Rounds `gradient` (the unit's fp32 gradient) to 16 bits and adds it to the
  // stored one, or reduce-scatters it (ZeRO-2/3): the end of one micro-batch's backward.
  void hand_over(Model& model, UnitShard& s, int unit, Buffer& gradient);
  void note_overflow(const std::uint16_t* values, std::int64_t n, std::int64_t flat_begin);
  void emit_shard(ShardAction action, int unit, std::int64_t bytes);

  const ShardingRules& rules_;
  DType dtype_;
  Model& model_;
  Communicator& dp_;
  MemoryLedger& ledger_;
  std::map<int, UnitShard> units_;
  std::int64_t shard_size_ = 0;
  Buffer grads_;     // gradients: this rank's chunks, packed (stages 2/3), or the whole (mixed 0/1)
  Buffer params_;    // parameters: this rank's chunks (stage 3), or the whole (mixed 0-2)
  std::string first_overflow_;
  EventSink* sink_ = nullptr;
  DeviceClock* clock_ = nullptr;  // the rank's (clock/device_clock.h)
  Event base_;
  CommPurpose gathers_ = CommPurpose::parameters;
};

}  // namespace shardscope
