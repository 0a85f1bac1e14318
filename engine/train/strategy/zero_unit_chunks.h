// SPDX-License-Identifier: GPL-3.0-or-later
// What ZeRO-2 and ZeRO-3 genuinely share (zero2_strategy.cpp,
// zero3_strategy.cpp): every unit of the model (the embeddings, one layer, the
// head) is split into Nd chunks and data-parallel rank r owns chunk r of each
// (parallel/zero_storage.h). The rank keeps only its gradient chunks: the unit
// storage reduce-scatters a unit's gradient as soon as backward has finished
// it (no hook of the step is needed for that), and AdamW updates the rank's
// chunks, the norm summed over the ranks. The two differ only in where the
// parameters live, hence in what happens after the update and what a
// checkpoint reads.
#pragma once

#include "train/strategy/strategy.h"

namespace shardscope {

class UnitChunkStrategy : public DataParallelStrategy {
 public:
  using DataParallelStrategy::DataParallelStrategy;

  void build(TrainerRank& rank, const AdamWOptions& options) override;
  // The rank's packed gradient chunks.
  GradientSpan gradients(TrainerRank& rank) override;
  void update(TrainerRank& rank, const CommTag& tag) override;

 protected:
  // ZeRO-3: the parameters are the rank's packed chunks too (else the stage's whole flat parameters).
  virtual bool packed_parameters() const = 0;
};

}  // namespace shardscope
