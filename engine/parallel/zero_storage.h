// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO stages 2 and 3 (Rajbhandari et al. 2020), unit by unit: every unit
// (embeddings, one layer, the head) is split into Nd equal chunks, and
// data-parallel rank r owns chunk r of every unit.
//   Stage 2 (P_os+g): the rank keeps only its gradient chunks (4Ψ/Nd). When
//     backward has finished a unit, its gradient is reduce-scattered over the
//     ranks (each receives the average of its chunk) and the full unit
//     gradient is freed; after the update the parameter chunks are
//     all-gathered into every rank's full parameters.
//   Stage 3 (P_os+g+p): parameters are sharded too (4Ψ/Nd). Before a unit's
//     forward or backward its chunks are all-gathered into a temporary unit
//     buffer, and released right after use.
// Per-rank model states in fp32 Adam: 4Ψ + 4Ψ/Nd + 8Ψ/Nd (stage 2),
// 16Ψ/Nd (stage 3); the temporary unit buffers count as `communication`.
// Chunks are padded to ceil(n / Nd), so these hold exactly when every unit
// divides by Nd.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/buffer.h"
#include "events/event.h"
#include "model/model.h"
#include "parallel/communicator.h"
#include "train/adamw.h"

namespace shardscope {

class ZeroShardedStorage final : public UnitStorage {
 public:
  ZeroShardedStorage(int stage, Model& model, Communicator& dp, MemoryLedger& ledger);

  int zero_stage() const { return stage_; }
  // Stage 3: writes this rank's chunks of the model's initial values.
  void init_parameters(std::uint64_t seed);
  void zero_gradients();
  // Where this rank's chunks sit in the flat layout and in the packed shard.
  std::vector<AdamW::ShardRange> shard_ranges() const;
  float* gradient_shard() { return grad_shard_.floats(); }
  float* parameter_shard() { return param_shard_.floats(); }  // stage 3 only
  std::int64_t shard_size() const { return shard_size_; }
  // Stage 2: every rank's updated chunks into every rank's full parameters.
  void all_gather_parameters(const CommTag& tag);

  // Events (shard gathers and releases) and the tags of the collectives.
  void set_context(EventSink* sink, const RunClock* clock, const Event& base);

  void parameters_needed(Model& model, int unit) override;
  void parameters_done(Model& model, int unit) override;
  void gradients_needed(Model& model, int unit) override;
  void gradients_done(Model& model, int unit) override;

 private:
  struct UnitShard {
    ParameterUnit unit;
    std::int64_t chunk;   // ceil(n / Nd)
    std::int64_t packed;  // offset of this rank's chunk in the shard buffers
    std::int64_t mine;    // elements of this rank's chunk that are real (the rest is padding)
    Buffer gathered;      // stage 3: the whole unit while in use
    int users = 0;
    Buffer gradient;      // the whole unit's gradient while backward builds it
  };
  UnitShard& shard_of(int unit);
  void emit_shard(ShardAction action, int unit, std::int64_t bytes);

  int stage_;
  Model& model_;
  Communicator& dp_;
  MemoryLedger& ledger_;
  std::map<int, UnitShard> units_;
  std::int64_t shard_size_ = 0;
  Buffer grad_shard_;   // gradients: this rank's chunks, packed
  Buffer param_shard_;  // parameters (stage 3): this rank's chunks, packed
  Buffer received_;     // communication: one chunk, the reduce-scatter's result before accumulating
  EventSink* sink_ = nullptr;
  const RunClock* clock_ = nullptr;
  Event base_;
};

}  // namespace shardscope
