// SPDX-License-Identifier: GPL-3.0-or-later
// Ledger = estimator: after a Trainer's step, every rank's ledger peak equals
// the estimator's prediction, category by category. Shared by the tests that
// check it for their layouts (test_estimate_ledger, test_context_parallel,
// test_tp_pipeline_schedules).
#pragma once

#include <QString>
#include <string>

#include "estimate/memory_model.h"
#include "train/trainer.h"

namespace shardscope {

// The first rank and category where they differ, named with both figures and
// the estimator's formula; empty when every one is equal.
inline QString ledger_mismatch(const MemoryEstimate& predicted, const Trainer& trainer) {
  if (static_cast<int>(predicted.ranks.size()) != trainer.world_size())
    return QString("the estimator has %1 ranks, the run %2").arg(predicted.ranks.size()).arg(trainer.world_size());
  for (const RankMemory& r : predicted.ranks) {
    const MemoryBytes measured = trainer.ledger(r.rank).peak();
    for (MemoryCategory c : kAllMemoryCategories) {
      if (measured[c] == r.bytes[c]) continue;
      return QString(
                 "rank %1 %2: estimator predicts %3 (%4), the engine's ledger measured %5 (%6). If the "
                 "engine's allocation changed on purpose, update engine/estimate; otherwise the engine "
                 "drifted from its documented layout.")
          .arg(r.rank)
          .arg(QString::fromStdString(std::string(memory_category_name(c))))
          .arg(r.bytes[c])
          .arg(QString::fromStdString(r.formula(c)))
          .arg(measured[c])
          .arg(measured[c] > r.bytes[c] ? "more" : "less");
    }
  }
  return {};
}

}  // namespace shardscope
